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
rm -f "$logs"/*.result
# JOBS: how many tests run side by side (default: the core count, at most 4). They time
# nothing (throughput is judged by the CI gate, which runs alone after them) and their waits have
# wide margins, so sharing the cores costs only wall time. A script whose header has the line
# "# pdl-test: long" starts first (the longest ones bound the wall time); one with
# "# pdl-test: serial" runs alone, after the others (none today: the CUDA emulator was one while it
# ran a host thread per CUDA thread; its launches are fibers on one thread now).
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
# The job list: the "long" scripts first (they bound the wall time), then the other scripts, then
# the unit binaries (the shortest jobs, at most ~12 CPU-s each: they fill the pool's tail, so the
# last job to end is a short one -- longest first, as in LPT scheduling); all share the JOBS pool
# (the binaries are single-threaded and time nothing tight: test_comm_util's watchdog margins are
# 100x), and the "serial" scripts run alone at the end. Mark a script "long" when it costs more
# than ~20 CPU-s (make test's budget and where it goes: docs/DESIGN.md, "Tests").
units=()
for bin in "$BUILD"/tests/test_*; do
  [ -x "$bin" ] || continue
  case $bin in *.d) continue ;; esac
  case "${TESTS_ONLY:-}" in threads) [[ $(basename "$bin") == *thread* ]] || continue ;; esac
  units+=("$bin")
done
long=() rest=() serial=()
if [ "${TESTS_ONLY:-}" != unit ]; then
  for sh in tests/t_*.sh; do
    [ -f "$sh" ] || continue
    case "${TESTS_ONLY:-}" in threads) [[ $(basename "$sh" .sh) == *thread* ]] || continue ;; esac
    if grep -q '^# pdl-test: serial' "$sh"; then serial+=("$sh")
    elif grep -q '^# pdl-test: long' "$sh"; then long+=("$sh")
    else rest+=("$sh"); fi
  done
fi
for job in "${long[@]}" "${rest[@]}" "${units[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  case $job in
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
