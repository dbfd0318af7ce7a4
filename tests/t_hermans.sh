#!/usr/bin/env bash
# tests/t_hermans.sh — the Hermans algorithms (src/algo/agn.c) on both runtimes:
#  - round-robin service makes staleness exactly p - 1 after the first p commits (H1's setting);
#  - ADAG's Alg. 1 placement (the worker sends its stale center) and Alg. 2 (the server remembers
#    it) are the same arithmetic: bit-identical parameters;
#  - the thesis' DOWNPOUR with window lambda and plain SGD workers is the EASGD paper's mpiT
#    DOWNPOUR: `downpour-lambda --worker-opt sgd` == `downpour` within float rounding, lambda 1 and
#    3 (not bit for bit: the commit W - W_pulled is rounded where mpiT's accumulated -lr g is not);
#  - DynSGD and AGN differ once commits are stale (the scaling acts); DynSGD commits the
#    un-normalised sum (the thesis and dist-keras): with one worker it is downpour-lambda, in
#    pdl train and in pdl toy; adag-agn (Alg. 3) pulls once per commit; a partial last window
#    is not committed (dist-keras);
#  - every algorithm runs under mpirun (3 ranks: a server and 2 workers).
cd "$(dirname "$0")/.." || exit 1
# pdl-test: cpu=11
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
C=(--runtime sim --platform links:k=5,bw=1Gbps,lat=1ms --data synthetic:n=2048,seed=3 --net tiny --batch 16 --lr 0.01
   --steps 24 --test-subset 300 --threads 1 --quiet --ps-order round-robin)
run() { local name=$1; shift; PDL_DUMP_PARAMS=$T/$name.bin "$PDL" train "$@" 2>"$T/$name.err" | tail -n 1 > "$T/$name.json"; }

run agn --algo agn "${C[@]}" --tau 2
s=$(jget staleness_mean_steady < "$T/agn.json" 2>/dev/null); h=$(jget staleness_hist < "$T/agn.json" 2>/dev/null)
[ "$s" = 3 ] && ok "round-robin: staleness exactly p - 1 = 3 after the first p commits (hist $h)" || notok "round-robin staleness" "steady mean '$s', hist $h: $(cat "$T/agn.err" | tail -2)"

run adag2 --algo adag "${C[@]}" --tau 2; run adag1 --algo adag-alg1 "${C[@]}" --tau 2
cmp -s "$T/adag1.bin" "$T/adag2.bin" && [ -s "$T/adag1.bin" ] && ok "ADAG Alg. 1 == Alg. 2 placement, bit for bit" \
  || notok "ADAG Alg. 1 vs Alg. 2" "parameters differ: $(jget test_loss < "$T/adag1.json") vs $(jget test_loss < "$T/adag2.json")"
cmp -s "$T/adag2.bin" "$T/agn.bin" && notok "ADAG scales" "ADAG equals AGN: the scaling did nothing" || ok "ADAG differs from AGN (the scaling acts)"

for l in 1 3; do
  run dl$l --algo downpour-lambda --worker-opt sgd "${C[@]}" --tau $l; run dp$l --algo downpour "${C[@]}" --tau $l
  d=$(python3 -c 'import array,sys
a=array.array("f"); b=array.array("f"); a.frombytes(open(sys.argv[1],"rb").read()); b.frombytes(open(sys.argv[2],"rb").read())
assert len(a)==len(b)>0; m=max(abs(x) for x in b) or 1; print("%.3g" % (max(abs(x-y) for x,y in zip(a,b))/m))' "$T/dl$l.bin" "$T/dp$l.bin" 2>/dev/null)
  python3 -c "import sys; sys.exit(0 if float('${d:-nan}') < 1e-4 else 1)" 2>/dev/null \
    && ok "downpour-lambda (SGD workers) == downpour within rounding, lambda $l (max rel diff $d)" \
    || notok "downpour-lambda == downpour (lambda $l)" "max rel diff ${d:-?}: $(jget test_loss < "$T/dl$l.json") vs $(jget test_loss < "$T/dp$l.json")"
done
run dyn --algo dynsgd "${C[@]}" --tau 2
cmp -s "$T/dyn.bin" "$T/agn.bin" && notok "DynSGD scales" "DynSGD equals AGN" || ok "DynSGD differs from AGN (stale commits scaled)"
# DynSGD is the thesis' rule (its Alg. DynSGDWorker, dist-keras' DynSGDWorker; issue 32): the worker
# commits the UN-normalised W - W_pulled and the server scales it by 1 / (staleness + 1). With one
# worker every staleness is 0, so dynsgd must be downpour-lambda bit for bit and differ from agn
# (which divides by lambda) -- in pdl train and in pdl toy alike (the rule as it ran before issue 32,
# Delta / lambda / (staleness + 1), was agn here).
C1=(--runtime sim --platform links:k=2,bw=1Gbps,lat=1ms --data synthetic:n=2048,seed=3 --net tiny --batch 16 --lr 0.01
    --steps 24 --test-subset 300 --threads 1 --quiet --worker-opt sgd)
run dyn1 --algo dynsgd "${C1[@]}" --tau 3; run dl1 --algo downpour-lambda "${C1[@]}" --tau 3; run agn1 --algo agn "${C1[@]}" --tau 3
if cmp -s "$T/dyn1.bin" "$T/dl1.bin" && [ -s "$T/dyn1.bin" ] && ! cmp -s "$T/dyn1.bin" "$T/agn1.bin"; then
  ok "pdl train: one worker, dynsgd == downpour-lambda bit for bit, != agn (un-normalised commits)"
else notok "pdl train dynsgd, one worker" "test_loss dynsgd $(jget test_loss < "$T/dyn1.json") downpour-lambda $(jget test_loss < "$T/dl1.json") agn $(jget test_loss < "$T/agn1.json")"; fi
# adag-agn is the thesis' Alg. 3: one pull per commit (it pulled twice before issue 32); agn pulls
# with every commit too (PUSH_PULL); both add each worker's first pull
for a in adag-agn agn; do
  run pulls-$a --algo $a "${C[@]}" --tau 2
  pl=$(jget pulls < "$T/pulls-$a.json"); cm=$(jget master_clock < "$T/pulls-$a.json")
  [ -n "$pl" ] && [ "$pl" = $((cm + 4)) ] && ok "$a: one pull per commit ($pl pulls, $cm commits, 4 workers)" \
    || notok "$a pulls per commit" "$pl pulls for $cm commits (want commits + 4)"
done
# a last, partial window is not committed (dist-keras commits when iteration % window == 0): 24
# steps at lambda 5 are 4 commits per worker, 16 in all, and the server still counts all 96 steps
run partial --algo agn "${C[@]}" --tau 5
cm=$(jget master_clock < "$T/partial.json"); sp=$(jget steps_per_worker < "$T/partial.json")
[ "$cm" = 16 ] && [ "$sp" = 24 ] && ok "a partial last window is not committed (16 commits, 24 steps per worker)" \
  || notok "partial last window" "master_clock $cm (want 16), steps_per_worker $sp (want 24)"
toyx() { "$PDL" toy --fn quadratic --rule "$1" --workers 1 --lambda 3 --lr 0.05 --commits 50 --order round-robin --seed 1 | jget x; }
tx_dyn=$(toyx dynsgd); tx_dp=$(toyx downpour); tx_agn=$(toyx agn)
[ -n "$tx_dyn" ] && [ "$tx_dyn" = "$tx_dp" ] && [ "$tx_dyn" != "$tx_agn" ] \
  && ok "pdl toy agrees: one worker, dynsgd == downpour, != agn" || notok "pdl toy dynsgd, one worker" "dynsgd $tx_dyn downpour $tx_dp agn $tx_agn"

for a in agn downpour-lambda dynsgd adag adag-alg1 adag-agn; do
  out=$(MPIRUN -np 3 "$PDL" train --algo $a --data synthetic:n=1024,seed=3 --net tiny --batch 16 --lr 0.01 --steps 10 --tau 2 \
        --test-subset 200 --threads 1 --quiet --timeout 60 2>&1 | tail -n 1)
  [ "$(jget master_clock <<<"$out" 2>/dev/null)" -ge 1 ] 2>/dev/null && ok "$a under mpirun -np 3" || notok "$a under mpirun" "$out"
done
finish
