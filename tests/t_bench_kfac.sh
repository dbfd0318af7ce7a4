#!/usr/bin/env bash
# t_bench_kfac.sh — `make bench-kfac QUICK=1` end to end, into a temporary results/plots root:
# the inversion, step-breakdown, K2 (with the load-balance and communication rows), K3 and K4 rows
# exist with a verdict, the simulated rows say so, the calibration the sim used was written there
# (not into the user's results/), and the four plots are rendered.
# pdl-test: long
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results PDL_PLOTS_OUT=$T/out QUICK=1
if out=$(bash bench/kfac/run.sh 2>&1); then ok "bench-kfac QUICK runs"; else notok "bench-kfac QUICK" "$(echo "$out" | tail -5)"; fi
tab=$T/results/kfac/table.md
for id in inv speed K2 K2-lb K2-comm K3a K3b K4; do
  grep -q "^| $id |" "$tab" 2>/dev/null && ok "table row: $id" || notok "table row: $id" "missing in $tab"
done
grep -q '^| K2 |.*| SIMULATED (calibrated per kind) + real |' "$tab" && ok "K2 row is labelled SIMULATED + real" \
  || notok "K2 label" "$(grep '^| K2 |' "$tab")"
grep -q '"kfac_rel_inverse"' "$T/results/kfac/calibration.json" 2>/dev/null && ok "the sim's per-kind rates were calibrated into the bench's results" \
  || notok "calibration" "no kfac_rel_inverse in $T/results/kfac/calibration.json"
python3 - "$T/results/kfac/k2.jsonl" <<'PY' && ok "K2 sim runs charged per kind (calibrated)" || notok "K2 sim rates" "a sim run was not calibrated per kind"
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if d and all(x["kfac_sim_rates"] == "calibrated per kind" for x in d if x["mode"] == "sim") else 1)
PY
python3 bench/verdict.py --paper kfac --results "$T/results/kfac" --format json > "$T/v.json" 2>/dev/null \
  && python3 -c "import json,sys; r={x['id']: x for x in json.load(open(sys.argv[1]))}; sys.exit(0 if r['K2-comm']['verdict'] == 'not comparable' and r['K4']['verdict'] == 'observation' else 1)" "$T/v.json" \
  && ok "engine: K2-comm not comparable, K4 an observation" || notok "K-FAC verdicts" "$(grep -E '^\| (K2-comm|K4) ' "$tab")"
for p in k2 k3 k4 inverse; do
  [ -s "$T/out/kfac-$p.png" ] && [ -s "$T/out/kfac-$p.pdf" ] && ok "plot kfac-$p png+pdf" || notok "plot kfac-$p" "missing"
done
finish
