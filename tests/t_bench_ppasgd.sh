#!/usr/bin/env bash
# t_bench_ppasgd.sh — `make bench-ppasgd QUICK=1` end to end, into a temporary results/plots
# root (PDL_RESULTS, PDL_PLOTS_OUT) so a user's results are never touched: every experiment
# completes, the table has the P1-P4 and hybrid rows with real/simulated labels, the plots are
# rendered, sim results are marked simulated, and a re-run skips the complete experiments.
# pdl-test: long
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results PDL_PLOTS_OUT=$T/out QUICK=1
if out=$(bash bench/ppasgd/run.sh 2>&1); then ok "bench-ppasgd QUICK runs"; else notok "bench-ppasgd QUICK" "$(echo "$out" | tail -5)"; fi
tab=$T/results/ppasgd/table.md
for id in "P1 emulated" "P1 threaded" "P2 S=3" "P2 S=9" "P2 S=27" "P3" "P4 ratio" "P4 Fig.4c" "hybrid"; do
  grep -q "^| $id" "$tab" 2>/dev/null && ok "table row: $id" || notok "table row: $id" "missing in $tab"
done
grep "^| P3\|^| P4" "$tab" | grep -qv SIMULATED && notok "sim rows labelled" "a P3/P4 row lacks SIMULATED" || ok "P3/P4 rows say SIMULATED"
grep -q '"simulated":true' "$T/results/ppasgd/p3-ppasgd.jsonl" && ok "p3 results marked simulated" || notok "p3 simulated" "no \"simulated\":true"
grep -q '"runtime":"real","simulated":false' "$T/results/ppasgd/p1b.jsonl" && ok "p1b results marked real" || notok "p1b real" "label"
grep -q '"F_U"' "$T/results/ppasgd/hybrid-R2.jsonl" && ok "hybrid logs F_U/F_G/S_bar" || notok "hybrid" "no F_U"
for p in p1 p2 p3 p4; do
  [ -s "$T/out/ppasgd-$p.png" ] && [ -s "$T/out/ppasgd-$p.pdf" ] && ok "plot ppasgd-$p png+pdf" || notok "plot ppasgd-$p" "missing"
done
out=$(bash bench/ppasgd/run.sh 2>&1)
[ "$(echo "$out" | grep -c 'complete, skipping')" -eq 5 ] && ok "re-run skips complete experiments" || notok "re-run skip" "$(echo "$out" | head -5)"
finish
