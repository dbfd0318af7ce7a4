#!/usr/bin/env bash
# tests/t_cuda_fail.sh — a CUDA failure on one MPI rank ends every rank at once, with a message
# naming the rank and the call (issue 18), instead of leaving the others to the watchdog. The
# probe is build/tests/test_cuda_fail under mpirun with PDL_CUDA_FAIL_RANK (see its header).
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
BUILD=${BUILD:-build}
bin=$BUILD/tests/test_cuda_fail
[ -x "$bin" ] || { notok "test_cuda_fail exists" "$bin missing: run make build"; exit 0; }
if ! grep -q 'nvcc=yes' "$BUILD/config.stamp" 2>/dev/null || ! grep -q 'mpi=yes' "$BUILD/config.stamp" 2>/dev/null; then
  gpu_required && notok "CUDA failure under MPI" "built without CUDA or MPI, and PDL_REQUIRE_GPU is set" \
    || echo "skip - CUDA failure under MPI: built without CUDA or MPI"
  exit 0
fi
t0=$SECONDS
out=$(MPIRUN -np 3 timeout 100 env PDL_CUDA_FAIL_RANK=1 "$bin" 2>&1); rc=$?
el=$((SECONDS - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'pdl: rank 1 of 3: CUDA failure in cudaSetDevice' <<<"$out" \
   && ! grep -q 'passed the barrier' <<<"$out"; then
  ok "a CUDA failure on rank 1 of 3 ends the job in ${el} s, naming the rank and the call (exit $rc)"
else
  notok "a CUDA failure on rank 1 of 3 ends the job" "exit $rc after ${el} s: $(head -c 600 <<<"$out")"
fi
