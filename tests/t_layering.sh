#!/usr/bin/env bash
# t_layering.sh — the allowed-include matrix between the source folders (ci/layering.py): the tree
# passes, and a planted wrong-way include (core including the algorithm layer; a kernel including
# the runtime; a backend including the core instead of the contract) fails naming the file and the
# rule. The plants go into a copy of the tree.
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
out=$(python3 ci/layering.py 2>&1); rc=$?
[ $rc -eq 0 ] && ok "layering: $(tail -1 <<<"$out")" || notok "layering of the tree" "$(head -5 <<<"$out")"
mkdir -p "$T/tree"; cp -r src kernels reference "$T/tree/"
echo '#include "algo/algo.h"' >> "$T/tree/src/core/model.c"
echo '#include "rt/rt.h"' >> "$T/tree/kernels/cpu/cpu_fc.c"
echo '#include "core/model.h"' >> "$T/tree/kernels/cuda/cuda_table.h"
out=$(python3 ci/layering.py --root "$T/tree" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'src/core/model.c:[0-9]*: #include "algo/algo.h": src/core may not include src/algo' <<<"$out" \
  && grep -q 'kernels/cpu/cpu_fc.c:[0-9]*: #include "rt/rt.h": kernels/cpu may not include src/rt' <<<"$out" \
  && grep -q 'kernels/cuda/cuda_table.h:[0-9]*: #include "core/model.h": kernels/cuda may not include src/core' <<<"$out" \
  && ok "planted wrong-way includes fail, each named with its line and rule" || notok "planted includes" "rc=$rc $out"
# a listed debt that is paid must leave the list
mkdir -p "$T/tree2"; cp -r src kernels reference "$T/tree2/"
sed -i '/#include "core\/rng.h"/d' "$T/tree2/reference/inv_ref.c"
out=$(python3 ci/layering.py --root "$T/tree2" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'KNOWN entry reference/inv_ref.c -> "core/rng.h" no longer occurs' <<<"$out" \
  && ok "a paid debt still listed fails (the list only shrinks)" || notok "stale KNOWN entry" "rc=$rc $out"
# one backend registry: outside src/core/backend.c (kernels_for) no source under src/ names a
# kernel table (comments aside)
named=$(grep -rn --include='*.c' --include='*.h' -E '&kernels_(cpu|ref|cuda)\b|\bcuda_kernels_on\(' src \
        | grep -v '^src/core/backend.c:' | grep -vE '^[^:]*:[0-9]*:\s*(/?\*|//)')
[ -z "$named" ] && ok "kernels_for (src/core/backend.c) is the only place under src/ that names a backend" \
  || notok "one backend registry" "$named"
finish
