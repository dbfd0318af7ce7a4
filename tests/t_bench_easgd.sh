#!/usr/bin/env bash
# t_bench_easgd.sh — `make bench-easgd QUICK=1` end to end, into a temporary results/plots root
# (PDL_RESULTS, PDL_PLOTS_OUT) so a user's results are never touched: E1-E3 complete, the table
# has the E1, E2 and E3 rows with real/simulated labels and verdicts, every plot is rendered as PNG
# and PDF, the training runs are marked simulated, and a re-run skips the complete experiments.
# pdl-test: cpu=38
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results PDL_PLOTS_OUT=$T/out QUICK=1
if out=$(bash bench/easgd/run.sh 2>&1); then ok "bench-easgd QUICK runs"; else notok "bench-easgd QUICK" "$(echo "$out" | tail -5)"; fi
tab=$T/results/easgd/table.md
for id in "E1 easgd-region p=3" "E1 easgd-region p=8" "E1 admm-region p=3" "E1 admm-diverge p=8" \
          "E2 DOWNPOUR tau sweep" "E2 EAMSGD vs comparators" "E3 EAMSGD speed-up vs MSGD"; do
  grep -q "^| $id" "$tab" 2>/dev/null && ok "table row: $id" || notok "table row: $id" "missing in $tab"
done
# every row carries a verdict cell, and no row says its experiment is missing
grep '^| E' "$tab" 2>/dev/null | grep -v '^| E3 ImageNet' | grep -q '| no results' && notok "no missing rows" "$(grep '| no results' "$tab")" || ok "no row reports missing results"
grep '^| E1 .*region' "$tab" 2>/dev/null | grep -qv '| agrees |$' && notok "E1 region checks" "$(grep '^| E1 .*region' "$tab")" || ok "E1 region checks agree"
grep '^| E[23]' "$tab" 2>/dev/null | grep -v 'ImageNet' | grep -qv 'SIMULATED' && notok "E2/E3 rows labelled" "a row lacks 'SIMULATED'" || ok "E2/E3 rows say SIMULATED"
f=$(ls "$T"/results/easgd/runs-quick-*/e2-eamsgd-*.jsonl 2>/dev/null | head -1)
grep -q '"simulated":true' "$f" 2>/dev/null && ok "e2 runs marked simulated" || notok "e2 simulated" "no \"simulated\":true in ${f:-any e2 run}"
for p in stability-admm stability-easgd stability-iterate e2 e3; do
  [ -s "$T/out/easgd-$p.png" ] && [ -s "$T/out/easgd-$p.pdf" ] && ok "plot easgd-$p png+pdf" || notok "plot easgd-$p" "missing"
done
out=$(bash bench/easgd/run.sh 2>&1)
[ "$(echo "$out" | grep -c 'complete, skipping')" -eq 3 ] && ok "re-run skips complete experiments" || notok "re-run skip" "$(echo "$out" | head -5)"
finish
