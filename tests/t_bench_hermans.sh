#!/usr/bin/env bash
# t_bench_hermans.sh — `make bench-hermans QUICK=1` end to end, into a temporary results/plots root:
# every H row and the Booth row exist with a verdict, the simulated rows say so, the plots are
# rendered, and the deterministic checks hold (round-robin-free homogeneous staleness near n - 1);
# the summarizer over the QUICK runs copied as three seeds gives the 3-seed claims 3 seeds and the spread;
# H3b (issue 32) is judged on the center's training accuracy with Adam AEASGD workers, the thesis' per-cell
# figures beside ours on the cells its table has (checked with the QUICK cells copied as n, lambda in
# {10, 20}); H3c is judged on the early phase (three rows: AGN's rise, ADAG's absent rise beside AGN's, updates
# to the loss both reach); H3d (the thesis' DynSGD lambda = 1 vs 10) gives three rows, a
# plot and its seeds.
# pdl-test: cpu=50
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results PDL_PLOTS_OUT=$T/out QUICK=1
if out=$(bash bench/hermans/run.sh 2>&1); then ok "bench-hermans QUICK runs"; else notok "bench-hermans QUICK" "$(echo "$out" | tail -5)"; fi
tab=$T/results/hermans/table.md
for id in "H1 staleness" "H1 heterogeneous" "H2 implicit momentum" "H3a DOWNPOUR n=8, lambda=1 converges" "H3a DOWNPOUR n=16, lambda=1 diverges" \
          "H3a DOWNPOUR full width" "H3 AGN vs AEASGD" "H3c at n=" "H3 ADAG scaling" "Booth" "server throughput"; do
  grep -q "^| $id" "$tab" 2>/dev/null && ok "table row: $id" || notok "table row: $id" "missing in $tab"
done
# QUICK runs one lambda > 1 at the small n: only the rows of lambda 10 and 20 may lack results
grep '^| H[123]' "$tab" 2>/dev/null | grep -v 'lambda=\(10\|20\) diverges' | grep -q '| no results' && notok "no missing rows" "$(grep '| no results' "$tab")" || ok "no row reports missing results"
grep '^| H1 staleness' "$tab" 2>/dev/null | grep -q 'SIMULATED' && ok "H1 row says SIMULATED" || notok "H1 simulated label" "$(grep '^| H1' "$tab")"
grep '^| H1 staleness' "$tab" 2>/dev/null | grep -q '| consistency check (true by construction: .*; the rule holds[;)]' && ok "homogeneous staleness near n - 1 (a consistency check)" || notok "H1 verdict" "$(grep '^| H1 stal' "$tab")"
grep '^| H3 AGN vs AEASGD' "$tab" 2>/dev/null | grep "training accuracy" | grep "adam workers lr 1e-3 and alpha 0.05" | grep -Eq '\| (agrees|disagrees|inconclusive)[ |]' \
  && ok "H3b judged: training accuracy, Adam AEASGD workers, alpha 0.05" || notok "H3b verdict" "$(grep '^| H3 AGN' "$tab")"
grep '^| H3c at n=' "$tab" 2>/dev/null | grep -c 'worst train loss in the first 25%.*largest rise above the best so far' | grep -q '^3$' && ok "H3c rows give the early phase's worst train loss" \
  || notok "H3c early phase" "$(grep '^| H3c' "$tab")"
grep '^| Booth' "$tab" 2>/dev/null | grep -q '| consistency check (true by construction: .*; the rule holds' && ok "Booth: asynchronous EASGD converges (a consistency check)" || notok "Booth" "$(grep '^| Booth' "$tab")"
for p in staleness momentum curves efficiency throughput adag-scaling; do
  [ -s "$T/out/hermans-$p.png" ] && [ -s "$T/out/hermans-$p.pdf" ] && ok "plot hermans-$p png+pdf" || notok "plot hermans-$p" "missing"
done
# H3d (issue 32, item 1): the thesis' DynSGD comparison of communication windows, three rows judged by the
# engine from the runs in their own subdirectory (runs-*/h3d-<hash>/), and its plot
[ "$(grep -c '^| H3d DynSGD n=8: lambda=4 .*| \(agrees\|disagrees\|inconclusive\)[ |]' "$tab" 2>/dev/null)" = 3 ] \
  && ok "H3d: three DynSGD rows (lambda = 1 vs L) with a verdict" || notok "H3d rows" "$(grep '^| H3d' "$tab")"
[ -s "$T/out/hermans-dynsgd.png" ] && [ -s "$T/out/hermans-dynsgd.pdf" ] && ok "plot hermans-dynsgd png+pdf" || notok "plot hermans-dynsgd" "missing"
D3=$T/h3d/hermans; HD=$(ls -d "$T"/results/hermans/runs-quick-*/h3d-*); mkdir -p "$D3/runs/h3d"
for f in "$HD"/*.jsonl; do b=$(basename "$f" .jsonl); cp "$f" "$D3/runs/h3d/$b.jsonl"; for s in 2 3; do cp "$f" "$D3/runs/h3d/$b-s$s.jsonl"; done; done
cp "$HD"/h3d-n8-l1-e1.jsonl "$D3/runs/h3d/h3d-n8-l4-e1-s3.jsonl"   # seed 3: its lambda = 4 run is lambda = 1's
cp "$HD"/h3dt-n8-l1-e1.jsonl "$D3/runs/h3d/h3dt-n8-l4-e1-s3.jsonl"  # (H3d-l10 reads the thesis-net pair h3dt)
python3 bench/hermans/summarize.py "$D3" "$D3/runs" quick "relu F128 F256 F128 S10" fashion-mnist 100Gf 10Gbps 0.1ms 1 "relu F128 F256 F128 S10" \
  "1 2 3" "relu F128 F256 F128 S10" 1 1000 "$D3/runs/h3d" > "$T/h3d.out" 2>&1
python3 - "$D3/verdicts.json" <<'PY' && ok "H3d over seeds 1 2 3: three seeds per claim, seed 3's own metrics" || notok "H3d seeds" "$(tail -3 "$T/h3d.out")"
import json, sys
r = {x["id"]: x for x in json.load(open(sys.argv[1]))}
bad = [c for c in ("H3d-l10", "H3d-unstable", "H3d-fair", "H3d-eighth") if [s["seed"] for s in r[c]["seeds"]] != [1, 2, 3]]
m = [s["metrics"] for s in r["H3d-l10"]["seeds"]]
if bad or not (m[0] == m[1] and m[2]["acc10"] == m[2]["acc1"] == m[0]["acc1"] and m[2]["t10"] == m[2]["t1"]) or "3 seeds: acc lambda=1" not in r["H3d-l10"]["ours"]:
    print("H3d seeds: %s %s %s" % (bad, m, r["H3d-l10"]["ours"])); sys.exit(1)
PY
# three seeds (issue 31): the QUICK runs copied as seeds 2 and 3 ("-s2", "-s3", as the full bench
# names them), seed 3 with AGN and AEASGD swapped in one H3b cell (AGN's win count moves) and seed 2's
# ADAG diverged; the summarizer given SEEDS "1 2 3" hands every 3-seed claim three seeds, the engine
# gives H3b's mean and min-max and calls H3c-adag inconclusive (seed 2: AGN's center made to rise early,
# ADAG's made to fall steadily, so the rule holds; seed 3: ADAG's made to rise, so it fails); seed 1's rows stay as they were
R3=$T/seeds/hermans; RUNS=$(ls -d "$T"/results/hermans/runs-quick-*); mkdir -p "$R3/runs"
cp "$RUNS"/*.jsonl "$R3/runs/" 2>/dev/null
for f in "$RUNS"/h1-n*.jsonl "$RUNS"/h3[abc]-*.jsonl; do
  for s in 2 3; do cp "$f" "$R3/runs/$(basename "$f" .jsonl)-s$s.jsonl"; done
done
c=$(basename "$(ls "$RUNS"/h3b-agn-*.jsonl | head -1)" .jsonl); c=${c#h3b-agn-}
cp "$RUNS/h3b-aeasgd-$c.jsonl" "$R3/runs/h3b-agn-$c-s3.jsonl"; cp "$RUNS/h3b-agn-$c.jsonl" "$R3/runs/h3b-aeasgd-$c-s3.jsonl"
a=$(basename "$(ls "$RUNS"/h3c-adag-*.jsonl | head -1)" .jsonl); g=$(basename "$(ls "$RUNS"/h3c-agn-*.jsonl | head -1)" .jsonl)
python3 - "$R3/runs/$g-s2.jsonl" rise "$R3/runs/$a-s2.jsonl" fall "$R3/runs/$a-s3.jsonl" rise <<'PY' || notok "H3c seed edits" "see above"
import json, sys
for path, how in zip(sys.argv[1::2], sys.argv[2::2]):   # the early phase of QUICK's 1 epoch: epoch <= 0.25
    ls = [json.loads(l) for l in open(path) if l.strip()]
    ev = [d for d in ls if d.get("event") == "eval"]
    l0 = [d for d in ev if d["updates"] == 0][0]["train_loss"]
    early = [d for d in ev if 0 < d["updates"] and d["epoch"] <= 0.25 + 1e-9]
    assert len(early) >= 2, path
    for i, d in enumerate(early):
        d["train_loss"] = l0 * (0.9 - 0.01 * i) if how == "fall" else (l0 * 2 if i == 1 else l0 * 0.9)
    open(path, "w").write("".join(json.dumps(d) + "\n" for d in ls))
PY
sargs=(quick "relu F128 F256 F128 S10" fashion-mnist 100Gf 10Gbps 0.1ms 1 "relu F128 F256 F128 S10")
if python3 bench/hermans/summarize.py "$R3" "$R3/runs" "${sargs[@]}" "1 2 3" > "$T/s3.out" 2>&1; then ok "summarize.py over seeds 1 2 3"
else notok "summarize.py over seeds 1 2 3" "$(tail -3 "$T/s3.out")"; fi
python3 - "$R3/verdicts.json" "$T/results/hermans/verdicts.json" <<'PY' && ok "3 seeds: every 3-seed claim has 3, H3b mean/min-max, H3c-adag inconclusive, seed-1 claims unchanged" || notok "3 seeds" "see above"
import json, sys
r = {x["id"]: x for x in json.load(open(sys.argv[1]))}
one = {x["id"]: x for x in json.load(open(sys.argv[2]))}
bad = []
for cid in ("H3a-n10-l1", "H3a-n20-l1", "H3a-full", "H3a-n10-l5", "H3b", "H3c-agn", "H3c-adag", "H3c-adag-faster"):
    if [s["seed"] for s in r[cid]["seeds"]] != [1, 2, 3]:
        bad.append("%s: seeds %s" % (cid, [s["seed"] for s in r[cid]["seeds"]]))
b = r["H3b"]; v = [s["value"] for s in b["seeds"]]
if not (b["min"] == min(v) < b["max"] == max(v) and abs(b["mean"] - sum(v) / 3) < 1e-12 and v[0] == v[1] == one["H3b"]["mean"]):
    bad.append("H3b mean/min/max %s %s %s over %s (seed 1 alone: %s)" % (b["mean"], b["min"], b["max"], v, one["H3b"]["mean"]))
if r["H3c-adag"]["verdict"] != "inconclusive" or not ("holds on 1 of 3 seeds" in r["H3c-adag"]["reason"] or "holds on 2 of 3 seeds" in r["H3c-adag"]["reason"]):
    bad.append("H3c-adag: %s (%s)" % (r["H3c-adag"]["verdict"], r["H3c-adag"]["reason"]))
for cid in ("H1", "H1-het", "H2"):
    if len(r[cid]["seeds"]) != 1 or r[cid]["verdict"] != one[cid]["verdict"] or r[cid]["ours"] != one[cid]["ours"]:
        bad.append("%s changed with the extra seeds" % cid)
if "seed 1 shown; 3 seeds" not in r["H3b"]["ours"] or "3 seeds: failed in" not in r["H3a-n10-l1"]["ours"]:
    bad.append("the rows' text does not name the seeds: %r / %r" % (r["H3b"]["ours"], r["H3a-n10-l1"]["ours"]))
if bad:
    print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
grep '^H3 AGN vs AEASGD' "$R3/rows.tsv" | grep -q 'to .*3 seeds)' && ok "H3b's table cell gives the spread over 3 seeds" \
  || notok "H3b cell" "$(grep '^H3 AGN' "$R3/rows.tsv")"
# the thesis beside ours: the QUICK grid's 4 cells renamed to (10, 10), (10, 20), (20, 10), (20, 20)
RT=$T/thesis/hermans; mkdir -p "$RT/runs"; cp "$RUNS"/*.jsonl "$RT/runs/"; rm -f "$RT/runs"/h3b-*.jsonl
set -- $(ls "$RUNS"/h3b-agn-*.jsonl | sed 's/.*h3b-agn-//; s/\.jsonl$//' | sort -V)
for c in "$1:n10-l10" "$2:n10-l20" "$3:n20-l10" "$4:n20-l20"; do
  for a in agn aeasgd; do cp "$RUNS/h3b-$a-${c%%:*}.jsonl" "$RT/runs/h3b-$a-${c#*:}.jsonl"; done
done
python3 bench/hermans/summarize.py "$RT" "$RT/runs" "${sargs[@]}" > "$T/st.out" 2>&1
grep '^H3 AGN vs AEASGD' "$RT/rows.tsv" 2>/dev/null | grep -q "beside the thesis' table on the same 4 cells (AGN ahead in 3 of them): ours (thesis) n10/l10 [0-9.]* (1.009), n10/l20 [0-9.]* (1.003), n20/l10 [0-9.]* (0.983), n20/l20 [0-9.]* (1.022); the same side of 1 in [0-4] of 4" \
  && awk '!/^#/ {print NF}' "$RT/h3b-efficiency.dat" | sort -u | grep -qx 4 \
  && ok "H3b: the thesis' per-cell figures beside ours on the cells its table has" || notok "H3b beside the thesis" "$(grep '^H3 AGN' "$RT/rows.tsv"; tail -3 "$T/st.out")"
finish
