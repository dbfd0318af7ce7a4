#!/usr/bin/env bash
# t_gossip.sh — gossip SGD (issue 16, docs/PAPERS.md §5): pull gossip, its warm-up and the push
# comparator run on the sim runtime and under `mpirun -np 4`, learn, and on the paper's
# 6-wide + 2-narrow setting scaled to our model (link bandwidths scaled by our model's bytes over
# the paper's 54 MiB, device rate set for 0.125 s per step) the narrow nodes congest at T = 1 and
# not at T = 4, where eq. (1) says so too. --target-err stops every node (sim and mpirun).
# Checkpoint/resume: t_ckpt_dist.sh.
# pdl-test: cpu=35
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
summary_of() { tail -n 1; }
py() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); $1"; }

out=$("$PDL" train --help); grep -q "gossip-warmup" <<<"$out" && grep -q "gossip-push" <<<"$out" \
  && ok "train --help lists gossip, gossip-warmup, gossip-push" || notok "help" "gossip missing"

# ---- sim: congestion at T = 1 on the narrow nodes, none at T = 4 (measured, and eq. (1)) -----------
P=(--runtime sim --platform "links:k=8,bw=35.76Mbps*6+3.576Mbps*2,lat=5ms" --device-rate 0.0677
   --data synthetic:n=4096,seed=2 --net tiny --batch 16 --steps 60 --lr 0.05 --quiet)
j1=$("$PDL" train --algo gossip "${P[@]}" --tau 1 | summary_of)
j4=$("$PDL" train --algo gossip "${P[@]}" --tau 4 | summary_of)
if py "m=d['measured_congested']; e=d['eq1_congested']; sys.exit(0 if m[6]==m[7]==1 and sum(m[:6])==0 and e==m else 1)" <<<"$j1"; then
  ok "T=1: narrow nodes 6,7 congested (wait $(py "print([round(x,2) for x in d['wait_at_node_s'][6:]])" <<<"$j1") s > serve $(py "print([round(x,2) for x in d['C_serve_s'][6:]])" <<<"$j1") s), eq. (1) agrees"
else notok "T=1 congestion" "$(py "print(d['measured_congested'], d['eq1_congested'], d['wait_at_node_s'], d['C_serve_s'])" <<<"$j1")"; fi
if py "sys.exit(0 if d['measured_any_congested']==0 and d['eq1_any_congested']==0 else 1)" <<<"$j4"; then
  ok "T=4: no congestion, measured or by eq. (1); eq. (2) bound for the narrow nodes $(py "print([round(x,2) for x in d['eq2_T_star'][6:]])" <<<"$j4")"
else notok "T=4 no congestion" "$(py "print(d['measured_congested'], d['eq1_congested'])" <<<"$j4")"; fi
t1=$(py "print(d['time_s'])" <<<"$j1"); t4=$(py "print(d['time_s'])" <<<"$j4")
python3 -c "import sys; sys.exit(0 if $t4 < 0.6 * $t1 else 1)" && ok "T=4 finishes the same steps in $t4 s vs $t1 s at T=1" \
  || notok "T=4 faster" "$t4 vs $t1"

# ---- sim is deterministic; every variant learns --------------------------------------------------
L=(--runtime sim --platform "links:k=4,bw=1Gbps*2+10Gbps*2,lat=5ms" --data synthetic:n=4096,seed=2 --net tiny --batch 16
   --epochs 3 --lr 0.05 --tau 2 --quiet)
for a in gossip gossip-warmup gossip-warmup-compute gossip-push; do
  PDL_DUMP_PARAMS=$T/$a.1 "$PDL" train --algo $a "${L[@]}" > "$T/$a.out" 2>&1; rc=$?
  PDL_DUMP_PARAMS=$T/$a.2 "$PDL" train --algo $a "${L[@]}" >/dev/null 2>&1
  e=$(summary_of < "$T/$a.out" | py "print(d['test_err'])" 2>/dev/null)
  if [ $rc -eq 0 ] && cmp -s "$T/$a.1" "$T/$a.2" && python3 -c "import sys; sys.exit(0 if float('$e') < 0.2 else 1)" 2>/dev/null; then
    ok "sim $a: learns (mean test error over nodes $e), repeat bit-identical"
  else notok "sim $a" "rc=$rc err=$e $(tail -2 "$T/$a.out")"; fi
done

# ---- Alg. 2 prefers the wide peers; the compute-sharing warm-up also prefers the fast ones --------
W=(--runtime sim --data synthetic:n=4096,seed=2 --net tiny --batch 16 --steps 120 --lr 0.05 --quiet --tau 4 --gossip-warmup 120)
"$PDL" train --algo gossip-warmup "${W[@]}" --platform "links:k=8,bw=35.76Mbps*6+3.576Mbps*2,lat=5ms" --device-rate 0.0677 \
  --gossip-timeline "$T/w.csv" > /dev/null 2>&1
share=$(python3 -c "import csv; r=list(csv.DictReader(open('$T/w.csv'))); print(round(sum(int(x['peer'])<6 for x in r)/len(r), 3))" 2>/dev/null)
python3 -c "import sys; sys.exit(0 if float('$share') > 0.85 else 1)" 2>/dev/null \
  && ok "gossip-warmup: $share of the pulls go to the 6 wide nodes (uniform: 0.75)" || notok "warm-up share" "$share"
# the unknown-peer rule (issue 32): by default an unknown peer counts as the best known time, so in
# a whole-run warm-up every node is pulled and the wide ones still take most pulls; Alg. 2 as written
# (--gossip-unknown literal: 1 / INF = 0) locks in the first round's uniform picks, leaving nodes
# that nobody ever pulls (2-3 of 8 on seeds 1-4 here)
miss() { python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); s=set(int(x['peer']) for x in r); print(8 - len(s), round(sum(int(x['peer'])<6 for x in r)/len(r), 3))" "$1" 2>/dev/null; }
lit_miss=0 best_txt="" lit_txt=""
for s in 1 2 3; do
  for rule in best literal; do
    "$PDL" train --algo gossip-warmup "${W[@]}" --platform "links:k=8,bw=35.76Mbps*6+3.576Mbps*2,lat=5ms" --device-rate 0.0677 \
      --seed $s --gossip-unknown $rule --gossip-timeline "$T/u-$rule-$s.csv" > /dev/null 2>&1
  done
  read -r bm bs < <(miss "$T/u-best-$s.csv"); read -r lm ls < <(miss "$T/u-literal-$s.csv")
  best_txt+=" seed $s: $bm unpulled, wide share $bs;"; lit_txt+=" $lm"
  [ "${bm:-9}" = 0 ] && python3 -c "import sys; sys.exit(0 if float('${bs:-0}') > 0.85 else 1)" || best_bad=1
  [ "${lm:-0}" -gt 0 ] && lit_miss=$((lit_miss + 1))
done
[ -z "${best_bad:-}" ] && ok "warm-up, unknown peer = best known time: every node pulled, wide nodes still preferred ($best_txt)" \
  || notok "unknown-peer rule best" "$best_txt"
[ "$lit_miss" -ge 2 ] && ok "warm-up, --gossip-unknown literal: nodes never pulled in $lit_miss of 3 seeds (unpulled per seed:$lit_txt) -- the lock-in" \
  || notok "literal rule lock-in" "unpulled per seed:$lit_txt"
for a in gossip-warmup gossip-warmup-compute; do
  "$PDL" train --algo $a "${W[@]}" --platform "links:k=8,bw=35.76Mbps*8,lat=5ms,rates=0.0677*4+0.0169*4" \
    --gossip-timeline "$T/h-$a.csv" > /dev/null 2>&1
done
fw=$(python3 -c "import csv; r=list(csv.DictReader(open('$T/h-gossip-warmup.csv'))); print(round(sum(int(x['peer'])<4 for x in r)/len(r), 3))" 2>/dev/null)
fc=$(python3 -c "import csv; r=list(csv.DictReader(open('$T/h-gossip-warmup-compute.csv'))); print(round(sum(int(x['peer'])<4 for x in r)/len(r), 3))" 2>/dev/null)
python3 -c "import sys; sys.exit(0 if float('$fc') > float('$fw') + 0.1 else 1)" 2>/dev/null \
  && ok "equal links, nodes 4-7 at 1/4 rate: the compute-sharing warm-up sends $fc of its pulls to the fast nodes, Alg. 2 $fw" \
  || notok "warmup-compute prefers fast nodes" "compute $fc vs plain $fw"
e0=$("$PDL" train --algo gossip --runtime sim --platform "links:k=4,bw=1Gbps,lat=5ms" --data synthetic:n=4096,seed=2 --net tiny \
     --batch 16 --steps 40 --lr 0.05 --quiet --noniid 1 | summary_of | py "print(d.get('noniid'))" 2>/dev/null)
[ "$e0" = 1 ] && ok "--noniid 1 runs and is recorded in the summary" || notok "--noniid" "$e0"
"$PDL" train --algo ssgd --runtime sim --platform links:k=2,bw=1Gbps --noniid 0.5 > "$T/nn.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "noniid" "$T/nn.out" && ok "--noniid is refused for ssgd (exit 2, names the flag)" || notok "--noniid refused" "rc=$rc $(cat "$T/nn.out")"

# ---- --target-err (the node loop: the nodes agree at each evaluation): every node stops there ------
TE=(--data synthetic:n=4096,seed=2 --net tiny --batch 16 --epochs 6 --lr 0.05 --tau 2 --eval-every 16 --quiet --target-err 0.5)
for rt in sim real; do
  if [ $rt = sim ]; then out=$("$PDL" train --algo gossip --runtime sim --platform "links:k=4,bw=1Gbps,lat=5ms" "${TE[@]}" --results "$T/te.jsonl" 2>&1); rc=$?
  else rm -f "$T/te.jsonl"; out=$(MPIRUN -np 2 "$PDL" train --algo gossip-push --threads 1 "${TE[@]}" --results "$T/te.jsonl" 2>&1); rc=$?; fi
  u=$(py "print(d['updates'])" <<<"$out" 2>/dev/null); e=$(py "print(d['test_err'])" <<<"$out" 2>/dev/null)
  first=$(grep '"eval"' "$T/te.jsonl" 2>/dev/null | python3 -c "import json,sys
for l in sys.stdin:
  d=json.loads(l)
  if d['test_err'] <= 0.5: print(d['updates']); break" 2>/dev/null)
  if [ $rc -eq 0 ] && [ -n "$u" ] && [ "$u" = "$first" ] && python3 -c "import sys; sys.exit(0 if $u < 6 * 4096 // 16 // 2 and $e <= 0.5 else 1)"; then
    ok "$rt: --target-err 0.5 stops every node at the first evaluation that reaches it (local step $u, mean test error $e)"
  else notok "$rt --target-err" "rc=$rc updates=$u first=$first err=$e $(tail -2 <<<"$out")"; fi
done

# ---- real runtime: 4 MPI ranks, a serving thread each (MPI_THREAD_MULTIPLE) -----------------------
# 6 epochs, not the sim block's 3: this task sits on a plateau for 1-3 epochs and leaves it at a
# point that depends on the seed and, on the real runtime, on the interleaving of steps and
# averages. At 3 epochs, 4 ranks on 2 loaded cores ended between 0.001 and 0.19 mean test error
# over 15 runs (a CI run read 0.215); at 6 epochs 30 such runs stayed at or below 0.011.
for a in gossip gossip-warmup gossip-push; do
  out=$(MPIRUN -np 4 "$PDL" train --algo $a --data synthetic:n=4096,seed=2 --net tiny --batch 16 --epochs 6 --lr 0.05 \
        --tau 1 --threads 1 --quiet --gossip-timeline "$T/tl-$a.csv" 2>&1); rc=$?
  e=$(py "print(d['test_err'])" <<<"$out" 2>/dev/null); nodes=$(py "print(d['nodes'])" <<<"$out" 2>/dev/null)
  lines=$(($(wc -l < "$T/tl-$a.csv" 2>/dev/null || echo 1) - 1))
  if [ $rc -eq 0 ] && [ "$nodes" = 4 ] && [ "$lines" -gt 100 ] && python3 -c "import sys; sys.exit(0 if float('$e') < 0.2 else 1)"; then
    ok "mpirun -np 4 $a: learns (mean test error $e), $lines exchanges in the timeline"
  else notok "mpirun $a" "rc=$rc nodes=$nodes lines=$lines err=$e $(tail -3 <<<"$out")"; fi
done
finish
