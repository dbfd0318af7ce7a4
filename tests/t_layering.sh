#!/usr/bin/env bash
# t_layering.sh — the layering of the source tree (ci/layering.py): the tree passes; planted
# wrong-way includes (core including the algorithm layer; a kernel including the runtime; a backend
# including the core instead of the contract; the ground floor including src) fail naming the file
# and the rule; CUDA named outside kernels/, the registry and the NCCL backend (an angle-bracket
# CUDA header, a kernels/cuda header, a CUDA runtime call, an NCCL type) fails, while the same
# names in a comment or a string pass; a kernel table named outside the registry fails; a listed
# debt or pending file that no longer occurs fails (the lists only shrink); the matrix may not let
# a folder include a higher floor. The plants go into a copy of the tree (and of the script).
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
out=$(python3 ci/layering.py 2>&1); rc=$?
[ $rc -eq 0 ] && ok "layering: $(tail -1 <<<"$out")" || notok "layering of the tree" "$(head -5 <<<"$out")"
copy() { mkdir -p "$T/$1"; cp -r base src kernels reference "$T/$1/"; }

copy tree
echo '#include "algo/algo.h"' >> "$T/tree/src/core/model.c"
echo '#include "rt/rt.h"' >> "$T/tree/kernels/cpu/cpu_fc.c"
echo '#include "core/model.h"' >> "$T/tree/kernels/cuda/cuda_table.h"
echo '#include "core/run.h"' >> "$T/tree/base/util/util.c"
out=$(python3 ci/layering.py --root "$T/tree" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'src/core/model.c:[0-9]*: #include "algo/algo.h": src/core may not include src/algo' <<<"$out" \
  && grep -q 'kernels/cpu/cpu_fc.c:[0-9]*: #include "rt/rt.h": kernels/cpu may not include src/rt' <<<"$out" \
  && grep -q 'kernels/cuda/cuda_table.h:[0-9]*: #include "core/model.h": kernels/cuda may not include src/core' <<<"$out" \
  && grep -q 'base/util/util.c:[0-9]*: #include "core/run.h": base/util may not include src/core' <<<"$out" \
  && ok "planted wrong-way includes fail, each named with its line and rule" || notok "planted includes" "rc=$rc $out"

copy cuda
echo '#include <cuda_runtime.h>' >> "$T/cuda/src/algo/ssgd.c"
echo '#include "kernels/cuda/cuda_layers.h"' >> "$T/cuda/src/algo/loop.c"
echo 'static void pl_sync(void) { cudaDeviceSynchronize(); }' >> "$T/cuda/src/core/model.c"
echo 'static ncclComm_t pl_comm;' >> "$T/cuda/src/coll/coll_mpi.c"
echo 'static void pl_free(float *p) { cuda_free(p); }' >> "$T/cuda/src/optim/optim.c"
echo '/* cudaMalloc, ncclAllReduce(), cuda_free() */ static const char *pl_s = "cudaMalloc ncclComm_t";' >> "$T/cuda/src/rt/rt_real.c"
echo 'static const void *pl_t = &kernels_cpu;' >> "$T/cuda/src/algo/seq.c"
echo 'static void pl_nccl(void) { ncclGetVersion(0); }' >> "$T/cuda/src/coll/coll_nccl.c"
out=$(python3 ci/layering.py --root "$T/cuda" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'src/algo/ssgd.c:[0-9]*: #include <cuda_runtime.h>: names CUDA outside kernels/' <<<"$out" \
  && grep -q 'src/algo/loop.c:[0-9]*: #include "kernels/cuda/cuda_layers.h": names CUDA' <<<"$out" \
  && grep -q 'src/core/model.c:[0-9]*: cudaDeviceSynchronize: names CUDA' <<<"$out" \
  && grep -q 'src/coll/coll_mpi.c:[0-9]*: ncclComm_t: names CUDA' <<<"$out" \
  && grep -q 'src/optim/optim.c:[0-9]*: cuda_free: names CUDA' <<<"$out" \
  && grep -q 'src/algo/seq.c:[0-9]*: kernels_cpu: a kernel table named outside the registry' <<<"$out" \
  && ! grep -q '^src/rt/rt_real.c:\|^src/coll/coll_nccl.c:' <<<"$out" \
  && ok "CUDA headers, symbols and calls outside kernels/, the registry and the NCCL backend fail; comments and strings pass" \
  || notok "planted CUDA names" "rc=$rc $out"

# a paid debt or a file that no longer names CUDA must leave its list, and the matrix keeps the floors
copy lists
sed -e 's|^KNOWN = {|KNOWN = {\n    ("src/core/model.c", "algo/algo.h"): "planted",|' \
    -e 's|^PENDING_CUDA = {|PENDING_CUDA = {\n    "src/core/data.c": "planted",|' \
    -e 's|^    "base/util": set(),|    "base/util": {"src/core"},|' ci/layering.py > "$T/layering.py"
out=$(python3 "$T/layering.py" --root "$T/lists" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'KNOWN entry src/core/model.c -> "algo/algo.h" no longer occurs' <<<"$out" \
  && grep -q 'PENDING_CUDA entry src/core/data.c names no CUDA any more' <<<"$out" \
  && grep -q 'ALLOWED lets base/util include src/core, a folder on a higher floor' <<<"$out" \
  && ok "a stale KNOWN or PENDING_CUDA entry fails (the lists only shrink); the matrix keeps the floors" \
  || notok "stale entries" "rc=$rc $out"
finish
