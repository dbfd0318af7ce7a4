#!/usr/bin/env bash
# t_bench_gossip.sh — `make bench-gossip QUICK=1` end to end, into a temporary results/plots root:
# every G row, the eq. (1)/(2) check and the beyond-the-paper rows exist with a verdict, every row
# says SIMULATED, the plots are rendered, and the deterministic facts hold (T = 1 congests the
# narrow nodes of the 6-wide setting, T = 4 does not; case (b)'s G lies in the eq. (1) interval).
# pdl-test: cpu=35
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results PDL_PLOTS_OUT=$T/out QUICK=1
if out=$(bash bench/gossip/run.sh 2>&1); then ok "bench-gossip QUICK runs"; else notok "bench-gossip QUICK" "$(echo "$out" | tail -5)"; fi
tab=$T/results/gossip/table.md
for id in "G1 congestion" "G1 learning curves (T=1" "G1 learning curves at G=" "G2 T=4: no congestion" "G2 T=4: learns faster" "G3 accuracy by T" \
          "G3 batch size" "G4 warm-up keeps accuracy" "G4 warm-up speeds convergence" "push comparator" \
          "G1/G2 case (a)" "eq. (1) check, informative nodes" "eq. (2) check, every distinct run" "beyond: heterogeneous compute, K=8" "beyond: heterogeneous compute, K=16" \
          "beyond: non-IID shards, K=8" "beyond: non-IID shards, K=16" "case (b) compute time"; do
  grep -q "^| $id" "$tab" 2>/dev/null && ok "table row: $id" || notok "table row: $id" "missing in $tab"
done
grep '^| ' "$tab" 2>/dev/null | grep -q '| no results' && notok "no missing rows" "$(grep '| no results' "$tab")" || ok "no row reports missing results"
n_sim=$(grep -c '^| .*| SIMULATED' "$tab" 2>/dev/null); n_rows=$(grep -c '^| [^i-]' "$tab" 2>/dev/null)
[ "$n_sim" = "$n_rows" ] && ok "all $n_rows rows say SIMULATED" || notok "simulated labels" "$n_sim of $n_rows"
r=$(ls -d "$T"/results/gossip/runs-quick-* 2>/dev/null | head -1)
an() { python3 -c "import json,sys; d=json.load(open('$T/results/gossip/analysis.json'))['$1']; $2"; }
an g1-w6 "sys.exit(0 if d['measured_congested'][6] or d['measured_congested'][7] else 1)" 2>/dev/null \
  && ok "G1: a narrow node congests at T=1 (6 wide; waiting per pull above the uncongested time)" || notok "G1 congestion" "$(grep '^| G1 cong' "$tab")"
an g2-w6 "sys.exit(0 if not any(d['measured_congested']) and not any(d['eq1_congested']) else 1)" 2>/dev/null \
  && ok "G2: nothing congests at T=4 (6 wide), measured or by eq. (1)" || notok "G2" "$(grep '^| G2' "$tab")"
grep -q '^| case (b) compute time.*| consistency check (.*the rule holds)' "$tab" && ok "case (b): G = 0.125 s lies in eq. (1)'s interval" \
  || notok "case (b) G" "$(grep '^| case (b)' "$tab")"
grep '^| G1 learning curves (T=1' "$tab" | grep -q 'simulated time to .*%/.*%/.*% mean test accuracy' && ok "G1: learns faster = time to 3 accuracy targets" \
  || notok "G1 time to accuracy" "$(grep '^| G1 learning curves (T=1' "$tab")"
grep -q '^| eq. (1) check.*duplicates not counted: g3-t1 = g1-w0, g3-t4 = g2-w0' "$tab" && ok "eq. (1): the copied runs g3-t1 / g3-t4 counted once" \
  || notok "eq. (1) duplicates" "$(grep '^| eq. (1)' "$tab" | cut -c1-300)"
# a results file with a broken line: the summarizer names it in an error row (exit 0, no traceback)
cp -r "$T/results/gossip" "$T/bad"; rb=$(ls -d "$T"/bad/runs-quick-* | head -1)
sed -i 's#"runs": "[^"]*"#"runs": "'"$rb"'"#' "$T/bad/setting.json"; echo '{"event": "eval", "time_s' >> "$rb/g2-w6.jsonl"
out=$(python3 bench/gossip/summarize.py "$T/bad" 2>&1); rc=$?
[ "$rc" = 0 ] && ! grep -q Traceback <<<"$out" && grep -q "^error	.*g2-w6.jsonl line [0-9]*: not JSON" "$T/bad/rows.tsv" \
  && ok "a broken results line gives an error row naming the file" || notok "broken results line" "rc $rc: $(echo "$out" | tail -2)"
for p in timeline curves accuracy-t warmup eq1 beyond; do
  [ -s "$T/out/gossip-$p.png" ] && [ -s "$T/out/gossip-$p.pdf" ] && ok "plot gossip-$p png+pdf" || notok "plot gossip-$p" "missing"
done
finish
