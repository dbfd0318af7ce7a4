#!/usr/bin/env bash
# tests/run.sh — runs every unit-test binary (build/tests/test_*) and every script test
# (tests/t_*.sh), counts "ok - " / "not ok - " / "skip - " lines, and ends with the line
# "N passed, N failed, N skipped". A binary that exits non-zero without a "not ok" line counts
# as one failure (a crash). TESTS_ONLY=unit runs the binaries only; TESTS_ONLY=threads runs the
# binaries and scripts whose name contains "thread" (for make tsan). Unit binaries run one after
# another; script tests run JOBS at a time (see below).
set -u
BUILD=${BUILD:-build}
export PDL=${PDL:-bin/pdl}
logs=$BUILD/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.result
# JOBS: how many script tests run side by side (default: the core count, at most 4). They time
# nothing (throughput is judged by the CI gate, which runs alone after them) and their waits have
# wide margins, so sharing the cores costs only wall time. A script whose header has the line
# "# pdl-test: long" starts first (the longest ones bound the wall time); one with
# "# pdl-test: serial" runs alone, after the others (the CUDA emulator: a host thread per CUDA
# thread, which would starve whatever shares the cores with it).
JOBS=${JOBS:-$(n=$(nproc 2>/dev/null || echo 2); [ "$n" -gt 4 ] && n=4; echo "$n")}
case $JOBS in ''|*[!0-9]*|0) echo "tests/run.sh: JOBS must be a positive integer, got '$JOBS'" >&2; exit 2 ;; esac
t_start=$SECONDS
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
for bin in "$BUILD"/tests/test_*; do
  [ -x "$bin" ] || continue
  case $bin in *.d) continue ;; esac
  name=$(basename "$bin")
  case "${TESTS_ONLY:-}" in threads) [[ $name == *thread* ]] || continue ;; esac
  run_one "$name" "$bin"
done
if [ "${TESTS_ONLY:-}" != unit ]; then
  serial=()
  mapfile -t scripts < <(grep -l '^# pdl-test: long' tests/t_*.sh; grep -L '^# pdl-test: long' tests/t_*.sh)
  for sh in "${scripts[@]}"; do
    [ -f "$sh" ] || continue
    name=$(basename "$sh" .sh)
    case "${TESTS_ONLY:-}" in threads) [[ $name == *thread* ]] || continue ;; esac
    if grep -q '^# pdl-test: serial' "$sh" || [ "$JOBS" -eq 1 ]; then serial+=("$sh"); continue; fi
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    run_one "$name" bash "$sh" &
  done
  wait
  for sh in "${serial[@]}"; do run_one "$(basename "$sh" .sh)" bash "$sh"; done
fi
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
