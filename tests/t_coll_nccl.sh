#!/usr/bin/env bash
# tests/t_coll_nccl.sh — the NCCL backend of pdl coll. Where nvcc and NCCL exist the backend must
# be compiled in (its object references ncclAllReduce). Without a CUDA device the run must say
# "skipped: no CUDA device" and exit 0 (reported here as a skip, never as a pass); with devices
# it must validate (#wrong 0) at 1 and 2 ranks and catch an injected wrong element. Without a GPU
# the NCCL code itself is checked on the stand-in build by tests/t_coll_seam.sh.
cd "$(dirname "$0")/.."
source tests/lib.sh
BUILD=${BUILD:-build}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

obj=$BUILD/obj/src/coll/coll_nccl.o
if grep -q 'nccl=yes' "$BUILD/config.stamp" 2>/dev/null; then
  if nm "$obj" 2>/dev/null | grep -q ncclAllReduce; then ok "NCCL backend compiled in (nvcc and NCCL found)"
  else notok "NCCL backend compiled in" "$obj has no ncclAllReduce although PDL_HAVE_NCCL is set"; fi
elif gpu_required; then
  notok "nccl backend" "not built (no nvcc or nccl.h), and PDL_REQUIRE_GPU says a GPU is required here"
else
  echo "skip - nccl backend: not built (no nvcc or nccl.h); pdl coll --backend nccl says so"
fi

# the v ops are offered on NCCL (grouped ncclBroadcast / ncclReduce, as training's --coll nccl runs them)
o=$("$PDL" coll --backend nccl --op allgatherv -m 4:1K -i 2 -x 1 2>&1); rc=$?
[ $rc -eq 0 ] && { grep -q '^skipped:' <<<"$o" || grep -q '^# #wrong total: 0$' <<<"$o"; } && ok "nccl allgatherv is offered (not refused)" \
  || notok "nccl allgatherv offered" "exit $rc: $(tail -2 <<<"$o")"

out=$("$PDL" coll --backend nccl -m 4:64K -f 16 -i 2 -x 1 2>&1); rc=$?
if grep -q '^skipped: no CUDA device' <<<"$out" && gpu_required; then
  notok "nccl collectives: PDL_REQUIRE_GPU is set and a GPU is required here" "$(grep -m1 '^skipped' <<<"$out")"
elif grep -q '^skipped: no CUDA device' <<<"$out"; then
  [ $rc -eq 0 ] && echo "skip - nccl collectives: $(grep -m1 '^skipped' <<<"$out")" || notok "no-device skip exits 0" "exit $rc"
  out2=$(MPIRUN -np 2 "$PDL" coll --backend nccl --op allgather -m 4:1K 2>&1); rc=$?
  if [ $rc -eq 0 ] && grep -q '^skipped: no CUDA device' <<<"$out2" && ! grep -q '#wrong' <<<"$out2"; then
    ok "nccl at 2 ranks without a device: every rank skips, no figures printed"
  else notok "nccl at 2 ranks without a device" "exit $rc: $(tail -2 <<<"$out2")"; fi
elif grep -q '^skipped:' <<<"$out" && gpu_required; then
  notok "nccl collectives: PDL_REQUIRE_GPU is set and a GPU is required here" "$(grep -m1 '^skipped' <<<"$out")"
elif grep -q '^skipped:' <<<"$out"; then
  echo "skip - nccl collectives: $(grep -m1 '^skipped' <<<"$out")"
else
  [ $rc -eq 0 ] && grep -q '^# #wrong total: 0$' <<<"$out" && ok "nccl allreduce at 1 rank validates" \
    || notok "nccl allreduce at 1 rank" "exit $rc: $(tail -3 <<<"$out")"
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "${ngpu:-0}" -ge 2 ]; then
    for op in allreduce reduce allgather reduce_scatter bcast reduce_scatterv allgatherv reduce_scatterv_via_allreduce allgatherv_via_allreduce memcpy; do
      for mode in "" "--inplace"; do
        [ $op = memcpy ] && [ -n "$mode" ] && continue
        o=$(MPIRUN -np 2 "$PDL" coll --backend nccl --op $op -m 4:1M -f 32 -i 2 -x 1 $mode 2>&1); rc=$?
        [ $rc -eq 0 ] && grep -q '^# #wrong total: 0$' <<<"$o" && ok "nccl np=2 $op $mode" || notok "nccl np=2 $op $mode" "exit $rc: $(tail -3 <<<"$o")"
      done
    done
    PDL_COLL_INJECT=1:2 MPIRUN -np 2 "$PDL" coll --backend nccl --op allreduce -m 64 -i 1 -x 0 >"$T/o" 2>&1; rc=$?
    [ $rc -eq 1 ] && grep -q '#wrong total: 2' "$T/o" && ok "nccl: injected wrong element caught" || notok "nccl inject" "exit $rc"
  else
    echo "skip - nccl at 2 ranks: this node has ${ngpu:-0} GPU(s)"
  fi
fi
finish
