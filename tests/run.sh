#!/usr/bin/env bash
# tests/run.sh — runs every unit-test binary (build/tests/test_*) and every script test
# (tests/t_*.sh), counts "ok - " / "not ok - " / "skip - " lines, and ends with the line
# "N passed, N failed, N skipped". A binary that exits non-zero without a "not ok" line counts
# as one failure (a crash). TESTS_ONLY=unit runs the binaries only; TESTS_ONLY=threads runs the
# binaries and scripts whose name contains "thread" (for make tsan). Binaries and scripts run JOBS
# at a time (see below).
set -u
BUILD=${BUILD:-build}
export PDL=${PDL:-bin/pdl}
logs=$BUILD/test-logs
mkdir -p "$logs"
source tests/pypath.sh   # python3 without a version manager's shim (~0.06 CPU-s a call)
rm -f "$logs"/*.result
# JOBS: how many tests run side by side (default: the core count, at most 4). They time
# nothing (throughput is judged by the CI gate, which runs alone after them) and their waits have
# wide margins, so sharing the cores costs only wall time. A script's header may tag it with
# "# pdl-test: TAG..." lines, a unit binary's source (tests/test_*.c) with a "pdl-test: cpu=N"
# comment: "cpu=N" (it costs about N CPU-s: the costliest start first, the longest ones bound the
# wall time; "long" is cpu=20, no tag cpu=5 for a script, 1 for a binary), "mpi" (most of its time
# is in mpirun's ranks: the MPI tests run side by side, before the others, see below), "idle" (it
# mostly waits -- for a daemon's timer, a sleep of its own -- and costs a few CPU-s: it runs beside
# the JOBS, from the start, so that its waits do not hold a core's place in the pool) and
# "serial" (it runs alone, after the others; none today: the CUDA emulator was one while it ran a
# host thread per CUDA thread; its launches are fibers on one thread now).
JOBS=${JOBS:-$(n=$(nproc 2>/dev/null || echo 2); [ "$n" -gt 4 ] && n=4; echo "$n")}
case $JOBS in ''|*[!0-9]*|0) echo "tests/run.sh: JOBS must be a positive integer, got '$JOBS'" >&2; exit 2 ;; esac
t_start=$SECONDS
# Idle threads sleep rather than spin (see tests/lib.sh): OpenMP teams wait passively and Open MPI
# ranks yield when idle. Wait policies only; no test times anything that they would change.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
# run_one NAME CMD...: runs one test into its log, then writes NAME.result (pass fail skip) and
# prints its line (plus its failures and skips).
run_one() {
  local name=$1; shift
  local log=$logs/$name.log t0=$SECONDS rc
  timeout --kill-after=10 ${TEST_TIMEOUT:-600} "$@" >"$log" 2>&1; rc=$?
  local p f s
  p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $name exited with status $rc" >>"$log"; fi
  if [ "$rc" -eq 0 ] && [ "$f" -gt 0 ]; then echo "not ok - $name reported failures but exited 0" >>"$log"; fi
  echo "$p $f $s" > "$logs/$name.result"
  { printf '%-32s %3d ok %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" $((SECONDS - t0))
    if [ "$f" -gt 0 ]; then grep -E '^(not ok|  FAIL)|error' "$log" | head -20 | sed 's/^/    /'; fi
    grep '^skip - ' "$log" | sed 's/^/    /'; } | flock "$logs" cat   # one test's lines together
}
# The job list: the "mpi" scripts, then the other scripts and the unit binaries together, each
# group costliest first (cpu=N: longest first, as in LPT scheduling, so that the last jobs to end
# are short ones: the binaries are mostly a few CPU-s, test_inv ~20, which used to run last of
# all); all share the JOBS pool (the binaries are single-threaded and time nothing tight:
# test_comm_util's watchdog margins are 100x), the "idle" scripts run beside it and the "serial"
# ones alone at the end. The MPI scripts go together
# because oversubscribed ranks yield the core while they wait (OMPI_MCA_mpi_yield_when_idle):
# beside another MPI job the waiting ranks hand the cores to ranks that have work, but beside a
# CPU-bound job a rank loses its core for whole time slices while its peers spin (measured on 2
# loaded cores: an mpirun -np 3 ssgd run took 4.2 CPU-s and 6 s beside another one, 8.6 CPU-s and
# 13.7 s beside a single-threaded training run, which itself was not slowed). Mark a script
# "cpu=N" when it costs more than ~10 CPU-s, "mpi" when most of it runs under mpirun (make test's
# budget and where it goes: docs/DESIGN.md, "Tests"; the figures need only be roughly right).
scripts=() serial=() idle=()   # scripts: "GROUP COST PATH" lines, GROUP 0 = mpi, 1 = the others and the binaries
for bin in "$BUILD"/tests/test_*; do
  [ -x "$bin" ] || continue
  case $bin in *.d) continue ;; esac
  case "${TESTS_ONLY:-}" in threads) [[ $(basename "$bin") == *thread* ]] || continue ;; esac
  cost=$(sed -n 's/.*pdl-test: *cpu=\([0-9][0-9]*\).*/\1/p' "tests/$(basename "$bin").c" 2>/dev/null | head -n 1)
  scripts+=("1 ${cost:-1} $bin")
done
if [ "${TESTS_ONLY:-}" != unit ]; then
  for sh in tests/t_*.sh; do
    [ -f "$sh" ] || continue
    case "${TESTS_ONLY:-}" in threads) [[ $(basename "$sh" .sh) == *thread* ]] || continue ;; esac
    tags=" $(sed -n 's/^# pdl-test: *//p' "$sh" | tr '\n' ' ') "
    if [[ $tags == *" serial "* ]]; then serial+=("$sh"); continue; fi
    if [[ $tags == *" idle "* ]]; then idle+=("$sh"); continue; fi
    cost=5; [[ $tags == *" long "* ]] && cost=20
    [[ $tags =~ \ cpu=([0-9]+)\  ]] && cost=${BASH_REMATCH[1]}
    scripts+=("$([[ $tags == *" mpi "* ]] && echo 0 || echo 1) $cost $sh")
  done
fi
# run_gate NAME ARGS...: a part of the CI gate (ci/regress.sh --untimed-to ...) as a job of the pool
run_gate() {
  local name=$1 t0=$SECONDS rc; shift
  PDL=$PDL BUILD=$BUILD timeout --kill-after=10 ${TEST_TIMEOUT:-600} bash ci/regress.sh "$@" >"$logs/$name.log" 2>&1; rc=$?
  local n; n=$(grep -o '[0-9]* untimed probes' "$logs/$name.log" | tail -n 1)
  { printf '%-32s %s of the CI gate, judged after the tests (%ds)\n' "$name" "${n:-no untimed probes}" $((SECONDS - t0))
    [ $rc -ne 0 ] && grep -E 'FAILED|^regress: [^p]' "$logs/$name.log" | grep -v 'untimed probes' | head -5 | sed 's/^/    /'; } | flock "$logs" cat
}
if [ -n "${GATE_UNTIMED:-}" ] && [ -z "${TESTS_ONLY:-}" ]; then   # their CPU-s, roughly
  mkdir -p "$GATE_UNTIMED" && rm -f "$GATE_UNTIMED"/*.jsonl
  scripts+=("0 13 gate:mpi" "1 35 gate:other")
fi
ordered=()
[ ${#scripts[@]} -gt 0 ] && mapfile -t ordered < <(printf '%s\n' "${scripts[@]}" | sort -k1,1n -k2,2nr -k3,3 | cut -d' ' -f3-)
# the "idle" scripts: one background group beside the pool (the pool then holds JOBS + 1 jobs
# while it runs: its own and the group)
idle_pid=""
if [ ${#idle[@]} -gt 0 ]; then
  ( for sh in "${idle[@]}"; do run_one "$(basename "$sh" .sh)" bash "$sh" & done; wait ) &
  idle_pid=$!
fi
for job in "${ordered[@]}"; do
  while :; do
    extra=0; [ -n "$idle_pid" ] && kill -0 "$idle_pid" 2>/dev/null && extra=1
    [ "$(jobs -rp | wc -l)" -ge $((JOBS + extra)) ] || break
    wait -n
  done
  case $job in
    gate:mpi)   run_gate gate_untimed_mpi --untimed-to "$GATE_UNTIMED/mpi.jsonl" --mpi only & ;;
    gate:other) run_gate gate_untimed_other --untimed-to "$GATE_UNTIMED/other.jsonl" --mpi skip & ;;
    *.sh) run_one "$(basename "$job" .sh)" bash "$job" & ;;
    *)    run_one "$(basename "$job")" "$job" & ;;
  esac
done
wait
for sh in "${serial[@]}"; do run_one "$(basename "$sh" .sh)" bash "$sh"; done
pass=0; fail=0; skip=0; failed_names=()
for r in "$logs"/*.result; do
  [ -f "$r" ] || continue
  read -r p f s < "$r"
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  [ "$f" -gt 0 ] && failed_names+=("$(basename "$r" .result)")
done
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]} (logs in $logs/)"
echo "tests took $((SECONDS - t_start)) s (JOBS=$JOBS)"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
