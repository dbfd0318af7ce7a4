#!/usr/bin/env bash
# t_example_algo.sh — a new algorithm is one file and one line in src/ (issue 50 item 7,
# docs/DESIGN.md "Adding an algorithm"): into a temporary copy of the tree it copies
# tests/example_algo/example.c (local SGD with periodic averaging; two flags of its own,
# --example-period and --example-beta) as src/algo/example.c and appends ALGO(example) to
# src/algo/algos.def, and checks with git that nothing else in the copy changed; then builds
# bin/pdl and the emulated-CUDA pdl there (make bin/pdl, make cuda-emu-pdl) and checks:
#   - `pdl train --help` lists it with its two flags and their help;
#   - 2 ranks on the CPU train (the test loss falls to <= 0.85x the initial parameters');
#   - a bad value of either flag exits 2 naming the flag, and another algorithm refuses its flag
#     naming it;
#   - 2 ranks on the emulated device (--device cuda: its gradients on each rank's device) train to
#     final parameters within 2e-2 of the distance the CPU run moved them (t_cuda_emu_algos.sh's
#     bound: the summation orders differ), but not equal to them, with the same evaluations.
# Build cost: the copy starts from this tree's objects ($BUILD/obj, copied with their times, so
# make sees them current), so it compiles example.c and algo.c (which includes algos.def) and
# links; every other object would be recompiled only if it were stale here. A source edited after
# the last `make build` makes the copy compile it too (slower, still right).
# On a GPU machine CUDA_PDL=1 runs the device check with the copy's bin/pdl on the real device
# (2 ranks on one GPU, or one each).
# pdl-test: cpu=8 mpi
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/config.stamp" ] || [ ! -d "$BUILD/obj" ]; then
  notok "example algorithm" "$BUILD/config.stamp or $BUILD/obj missing: make build first"; finish
fi
if ! grep -q 'nvcc=yes' "$BUILD/config.stamp" || ! grep -q 'mpi=yes' "$BUILD/config.stamp"; then
  echo "skip - example algorithm: the emulated-CUDA pdl needs nvcc (a CUDA build's objects) and MPI"; finish
fi
T=$(mktemp -d); [ -n "${KEEP_TMP:-}" ] && echo "# kept: $T" || trap 'rm -rf "$T"' EXIT
W=$T/tree
mkdir -p "$W/build"   # (the copy builds in build/ whatever $BUILD is here: never into this tree's)
cp -a Makefile base src kernels reference "$W/"                     # the sources, with their times
cp -a "$BUILD/obj" "$BUILD/config.stamp" "$W/build/"                 # the objects, newer than them
( cd "$W" && git init -q && printf '/build/\n/bin/\n' > .git/info/exclude && git add -A \
  && git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -q -m base ) || { notok "temporary copy" "git init failed"; finish; }

# the algorithm: one file, one line
cp tests/example_algo/example.c "$W/src/algo/example.c"
echo 'ALGO(example)' >> "$W/src/algo/algos.def"
st=$(cd "$W" && git status --porcelain --untracked-files=all | sort | tr '\n' ' ')
num=$(cd "$W" && git diff --numstat | tr '\t' ' ')
[ "$st" = " M src/algo/algos.def ?? src/algo/example.c " ] && [ "$num" = "1 0 src/algo/algos.def" ] \
  && ok "the example algorithm is one new file (src/algo/example.c) and one line (src/algo/algos.def)" \
  || notok "one file + one line" "git status: $st; numstat: $num"
t0=$SECONDS
if ! (cd "$W" && make --no-print-directory BUILD=build bin/pdl cuda-emu-pdl) > "$T/make.log" 2>&1; then
  notok "build with the example algorithm" "$(grep -E 'error:|Error [0-9]|undefined reference' "$T/make.log" | head -5)"; finish
fi
ncc=$(grep -cE '^(mpicc|gcc|g\+\+|.*nvcc) .* -c ' "$T/make.log")
ok "bin/pdl and build/cuda-emu/pdl built with it ($ncc compiles, $((SECONDS - t0)) s)"
TP=$W/bin/pdl TE=$W/build/cuda-emu/pdl
where=emulated; [ -n "${CUDA_PDL:-}" ] && TE=$TP && where="a real GPU"   # on a GPU machine (as t_cuda_emu_algos.sh): the copy's bin/pdl on the real devices
st2=$(cd "$W" && git status --porcelain --untracked-files=all | sort | tr '\n' ' ')
[ "$st2" = "$st" ] && ok "the build changed no tracked file" || notok "build left the tree as it was" "$st2"

help=$("$TP" train --help 2>&1)
if grep -qE '^  example +local SGD with periodic averaging' <<<"$help" \
   && grep -qE '^  +\[peers; .*--example-period --example-beta' <<<"$help" \
   && grep -qE '^  --example-period P +average the nodes. models every P local steps' <<<"$help" \
   && grep -qE '^  --example-beta B +averaging weight' <<<"$help"; then
  ok "pdl train --help lists example with --example-period and --example-beta and their help"
else notok "help lists example" "$(grep -E 'example' <<<"$help")"; fi

C0=(--data "synthetic:n=256,c=1,h=8,w=8,seed=3" --net "leaky C4 P F12 D0.25 S10" --batch 16 --threads 1
    --epochs 4 --eval-every 4 --lr 0.1 --momentum 0.9 --algo example --example-period 3 --example-beta 0.75)
C=("${C0[@]}" --quiet)
for bad in "--example-period 0" "--example-period x" "--example-beta 1.5"; do
  out=$("$TP" train "${C[@]}" $bad 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q -- "${bad%% *}" <<<"$out" && ok "$bad exits 2 naming the flag" \
    || notok "$bad" "exit $rc: $out"
done
out=$("$TP" train --algo ssgd --example-beta 0.5 --data synthetic:n=64 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q -- '--example-beta.*example' <<<"$out" && ok "--algo ssgd --example-beta exits 2 naming the algorithm that reads it" \
  || notok "ssgd refuses --example-beta" "exit $rc: $out"

# the CPU, 2 ranks: it trains
D=(--data "synthetic:n=256,c=1,h=8,w=8,seed=3" --net "leaky C4 P F12 D0.25 S10")   # (C0's data and net)
# the initial parameters (lr 0: one step leaves them) and their test loss
l0=$(PDL_DUMP_PARAMS="$T/w0" "$TP" train "${D[@]}" --quiet --algo sgd --lr 0 --steps 1 | jget test_loss)
PDL_DUMP_PARAMS="$T/c" MPIRUN -np 2 "$TP" train "${C[@]}" --results "$T/c.jsonl" > /dev/null 2> "$T/ec" \
  || notok "example on the CPU at 2 ranks" "$(tail -3 "$T/ec")"
fell=$(python3 - "$T/c.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in rows if r.get("event") == "summary"][-1]
print("%d %.4f %d" % (sum(r.get("event") == "eval" for r in rows), s["test_loss"], s["averages"]))
EOF
)
read -r ne l1 navg <<<"$fell"
# 32 updates (256 examples / (16 x 2 ranks) x 4 epochs), period 3: averages after 3, 6, .., 30 and the last.
# Deterministic (synchronous, seeded, 1 thread); 0.85: the run reaches 0.73x of the initial loss
# (2.106 of 2.891), the bound leaves room for a changed net initialisation or data generator.
within "$l1" "$(python3 -c "print(${l0:-0} * 0.85)")" && [ "${ne:-0}" -gt 4 ] && [ "$navg" = 11 ] \
  && ok "example on the CPU at 2 ranks trains: test loss $l0 at the initial parameters, $l1 after $ne evaluations; $navg averages" \
  || notok "example trains on the CPU" "evaluations ${ne:-?}, test loss $l0 -> $l1 (wanted <= 0.85x), averages $navg (wanted 11)"

# the emulated device, 2 ranks: within the bound of the CPU run
export PDL_CUDA_CONV=im2col   # "auto" times both paths per shape: two runs could sum in different orders
if PDL_DUMP_PARAMS="$T/g" MPIRUN -np 2 "$TE" train --device cuda "${C0[@]}" --results "$T/g.jsonl" > "$T/eg" 2>&1; then
  r=$(apart "$T/g" "$T/c" "$T/w0")
  ne_g=$(grep -c '"eval"' "$T/g.jsonl"); ne_c=$(grep -c '"eval"' "$T/c.jsonl"); nd=$(grep -c 'gradients on cuda:' "$T/eg")
  # apart > 0: the gradients were computed on the device (its sums run in another order than the
  # CPU's); a node program that named the device but computed on the host would match bit for bit
  [ "$ne_g" = "$ne_c" ] && within "$r" 2e-2 && ! within "$r" 0 && [ "$nd" = 2 ] \
    && ok "example --device cuda ($where, 2 ranks): each rank's gradients on its device, $ne_g evaluations, parameters apart $r of the distance moved from the CPU's (0 < apart <= 2e-2)" \
    || notok "example device vs CPU" "apart $r, evaluations $ne_g vs $ne_c, $nd ranks on a device"
else notok "example --device cuda ($where) at 2 ranks" "$(grep -m 3 -E 'pdl|train' "$T/eg")"; fi
finish
