#!/usr/bin/env bash
# tests/t_require_gpu.sh — PDL_REQUIRE_GPU (issue 18): with it, a GPU test that cannot use the
# device fails instead of skipping. PDL_REQUIRE_GPU=1 asks for that on machines with a
# /dev/nvidia* node; PDL_REQUIRE_GPU=force on any machine, which is how this test sees the failure
# path on a machine without a GPU. On a machine whose GPU tests run, there is no skip to turn into
# a failure, and that half is skipped.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
BUILD=${BUILD:-build}
for t in test_cuda_layers test_cuda_inv; do
  bin=$BUILD/tests/$t
  [ -x "$bin" ] || { notok "$t exists" "$bin missing: run make build"; continue; }
  plain=$(PDL_REQUIRE_GPU= "$bin" 2>&1); rc=$?
  if ! grep -q '^skip - .*no CUDA device' <<<"$plain"; then
    echo "skip - $t: its GPU tests run here (rc $rc): no skip to turn into a failure"
    continue
  fi
  [ $rc -eq 0 ] && ok "$t without PDL_REQUIRE_GPU: skips, exit 0" || notok "$t skips with exit 0" "exit $rc"
  forced=$(PDL_REQUIRE_GPU=force "$bin" 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -q '^not ok - ' <<<"$forced" && ! grep -q '^skip - ' <<<"$forced" \
     && grep -q 'PDL_REQUIRE_GPU is set' <<<"$forced"; then
    ok "$t with PDL_REQUIRE_GPU=force: every GPU test fails, naming the variable (exit $rc)"
  else notok "$t with PDL_REQUIRE_GPU=force fails" "exit $rc: $(grep -m2 -E '^(skip|not ok|ok) ' <<<"$forced")"; fi
  if compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
    echo "skip - $t with PDL_REQUIRE_GPU=1: this machine has /dev/nvidia*, so it is the forced case"
  else
    one=$(PDL_REQUIRE_GPU=1 "$bin" 2>&1); rc=$?
    [ $rc -eq 0 ] && grep -q '^skip - ' <<<"$one" && ! grep -q '^not ok' <<<"$one" \
      && ok "$t with PDL_REQUIRE_GPU=1 and no /dev/nvidia*: still skips" \
      || notok "$t with PDL_REQUIRE_GPU=1 and no /dev/nvidia* skips" "exit $rc"
  fi
done
