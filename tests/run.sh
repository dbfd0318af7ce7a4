#!/usr/bin/env bash
# tests/run.sh — runs every unit-test binary (build/tests/test_*) and every script test
# (tests/t_*.sh), counts "ok - " / "not ok - " / "skip - " lines, and ends with the line
# "N passed, N failed, N skipped". A binary that exits non-zero without a "not ok" line counts
# as one failure (a crash). TESTS_ONLY=unit runs the binaries only; TESTS_ONLY=threads runs the
# binaries and scripts whose name contains "thread" (for make tsan).
set -u
BUILD=${BUILD:-build}
export PDL=${PDL:-bin/pdl}
logs=$BUILD/test-logs
mkdir -p "$logs"
pass=0; fail=0; skip=0; failed_names=()
run_one() {
  local name=$1; shift
  local log=$logs/$name.log t0=$SECONDS rc
  timeout --kill-after=10 ${TEST_TIMEOUT:-600} "$@" >"$log" 2>&1; rc=$?
  local p f s
  p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $name exited with status $rc" >>"$log"; fi
  if [ "$rc" -eq 0 ] && [ "$f" -gt 0 ]; then echo "not ok - $name reported failures but exited 0" >>"$log"; fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  printf '%-32s %3d ok %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" $((SECONDS - t0))
  if [ "$f" -gt 0 ]; then failed_names+=("$name"); grep -E '^(not ok|  FAIL)|error' "$log" | head -20 | sed 's/^/    /'; fi
  grep '^skip - ' "$log" | sed 's/^/    /'
}
for bin in "$BUILD"/tests/test_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  case "${TESTS_ONLY:-}" in threads) [[ $name == *thread* ]] || continue ;; esac
  run_one "$name" "$bin"
done
if [ "${TESTS_ONLY:-}" != unit ]; then
  for sh in tests/t_*.sh; do
    [ -f "$sh" ] || continue
    name=$(basename "$sh" .sh)
    case "${TESTS_ONLY:-}" in threads) [[ $name == *thread* ]] || continue ;; esac
    run_one "$name" bash "$sh"
  done
fi
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]} (logs in $logs/)"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
