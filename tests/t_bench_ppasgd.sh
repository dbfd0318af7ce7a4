#!/usr/bin/env bash
# t_bench_ppasgd.sh — `make bench-ppasgd QUICK=1` end to end, into a temporary results/plots
# root (PDL_RESULTS, PDL_PLOTS_OUT) so a user's results are never touched: every experiment
# completes, the table has the P1-P4 and hybrid rows with real/simulated labels, the plots are
# rendered, sim results are marked simulated, and a re-run skips the complete experiments.
# pdl-test: cpu=26
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results PDL_PLOTS_OUT=$T/out QUICK=1
if out=$(bash bench/ppasgd/run.sh 2>&1); then ok "bench-ppasgd QUICK runs"; else notok "bench-ppasgd QUICK" "$(echo "$out" | tail -5)"; fi
tab=$T/results/ppasgd/table.md
for id in "P1 emulated" "P1 threaded" "P2 S=3" "P2 S=9" "P2 S=27" "P3" "P4 ratio" "P4 scaling" "P4 Fig.4c" "P4 scaling (timing only)" "hybrid"; do
  grep -q "^| $id" "$tab" 2>/dev/null && ok "table row: $id" || notok "table row: $id" "missing in $tab"
done
grep "^| P3\|^| P4" "$tab" | grep -qv SIMULATED && notok "sim rows labelled" "a P3/P4 row lacks SIMULATED" || ok "P3/P4 rows say SIMULATED"
grep -q '"simulated":true' "$T/results/ppasgd/p3-ppasgd.jsonl" && ok "p3 results marked simulated" || notok "p3 simulated" "no \"simulated\":true"
grep -q '"runtime":"real","simulated":false' "$T/results/ppasgd/p1b.jsonl" && ok "p1b results marked real" || notok "p1b real" "label"
grep -q '"F_U"' "$T/results/ppasgd/hybrid-R2.jsonl" && ok "hybrid logs F_U/F_G/S_bar" || notok "hybrid" "no F_U"
for p in p1 p2 p3 p4 p4t; do
  [ -s "$T/out/ppasgd-$p.png" ] && [ -s "$T/out/ppasgd-$p.pdf" ] && ok "plot ppasgd-$p png+pdf" || notok "plot ppasgd-$p" "missing"
done
out=$(bash bench/ppasgd/run.sh 2>&1)
[ "$(echo "$out" | grep -c 'complete, skipping')" -eq 6 ] && ok "re-run skips complete experiments" || notok "re-run skip" "$(echo "$out" | head -5)"
# three seeds (issue 34): the QUICK P2/P3 runs copied as seeds 2 and 3 ("-s2", "-s3", as the full
# bench names them), seed 2's PP-ASGD at S = 9 made 0.05 below ASGD at every evaluation and seed
# 3's 0.05 above (P2-S9's rule holds on seed 2 and fails on seed 3, its value is +0.05 / -0.05), and
# seed 2's P3 runs reaching the target, PP-ASGD at its second evaluation and ASGD at twice that
# simulated time (2x: the paper's "approximately by a factor of two"); the summarizer given SEEDS
# "1 2 3" hands the seeded claims three seeds, the engine gives P2-S9's mean and min-max and calls
# P2-S9 and P3 inconclusive; the seed-1 claims and seed 1's values stay as they were
R=$T/results/ppasgd; R3=$T/seeds/ppasgd; mkdir -p "$R3"
cp "$R"/*.jsonl "$R3/"
for f in "$R"/p2-*.jsonl "$R"/p3-*.jsonl; do
  for s in 2 3; do cp "$f" "$R3/$(basename "$f" .jsonl)-s$s.jsonl"; done
done
python3 - "$R/p2-asgd-dist-S9.jsonl" "$R3" <<'PY'
import json, os, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for sd, d in ((2, -0.05), (3, 0.05)):
    out = [dict(l, test_err=l["test_err"] + d) if l.get("event") == "eval" and l.get("test_err") is not None else l for l in L]
    open(os.path.join(sys.argv[2], "p2-ppasgd-S9-s%d.jsonl" % sd), "w").write("".join(json.dumps(l) + "\n" for l in out))
PY
python3 - "$R3/p3-ppasgd-s2.jsonl" "$R3/p3-asgd-dist-s2.jsonl" <<'PY'
import json, sys
t = None
for f in sys.argv[1:]:
    L = [json.loads(l) for l in open(f) if l.strip()]
    ev = [l for l in L if l.get("event") == "eval"]
    e = ev[min(1, len(ev) - 1)]
    e["test_err"] = 0.3
    if t is None:
        t = e["time_s"]
    else:
        e["time_s"] = 2 * t
    open(f, "w").write("".join(json.dumps(l) + "\n" for l in L))
PY
if SEEDS="1 2 3" python3 bench/ppasgd/summarize.py "$R3" "$R3/t.tsv" quick > "$T/s3.out" 2>&1; then ok "summarize.py over seeds 1 2 3"
else notok "summarize.py over seeds 1 2 3" "$(tail -3 "$T/s3.out")"; fi
python3 - "$R3/verdicts.json" "$R/verdicts.json" <<'PY' && ok "3 seeds: P2/P3 claims have 3, P2-S9 mean/min-max, P2-S9 and P3 inconclusive, seed-1 claims unchanged" || notok "3 seeds" "see above"
import json, sys
r = {x["id"]: x for x in json.load(open(sys.argv[1]))}
one = {x["id"]: x for x in json.load(open(sys.argv[2]))}
bad = []
for cid in ("P2-S3", "P2-S9", "P2-S27", "P2-SSGD", "P3"):
    if [s["seed"] for s in r[cid]["seeds"]] != [1, 2, 3]:
        bad.append("%s: seeds %s" % (cid, [s["seed"] for s in r[cid]["seeds"]]))
b = r["P2-S9"]; v = [s["value"] for s in b["seeds"]]
if not (v[0] == one["P2-S9"]["mean"] and abs(v[1] - 0.05) < 1e-9 and abs(v[2] + 0.05) < 1e-9
        and [s["holds"] for s in b["seeds"]][1:] == [True, False] and b["min"] == min(v) < b["max"] == max(v)
        and abs(b["mean"] - sum(v) / 3) < 1e-12):
    bad.append("P2-S9 mean/min/max %s %s %s over %s (seed 1 alone: %s)" % (b["mean"], b["min"], b["max"], v, one["P2-S9"]["mean"]))
h1 = one["P3"]["seeds"][0]["holds"]   # QUICK's P3 runs reach no target: the rule fails on seed 1
for s in r.values():   # raw numbers only (issue 45): no metric handed to the engine is a boolean or a string
    for sd in s["seeds"]:
        for k, x in (sd["metrics"] or {}).items():
            if isinstance(x, (bool, str)) or (isinstance(x, list) and any(isinstance(y, (bool, str)) for y in x)):
                bad.append("%s: metric %s = %r" % (s["id"], k, x))
if [s["holds"] for s in r["P3"]["seeds"]] != [h1, True, h1]:
    bad.append("P3 per seed: %s" % [s["holds"] for s in r["P3"]["seeds"]])
for cid in ("P2-S9",) + (() if h1 else ("P3",)):
    if r[cid]["verdict"] != "inconclusive" or "of 3 seeds" not in r[cid]["reason"]:
        bad.append("%s: %s (%s)" % (cid, r[cid]["verdict"], r[cid]["reason"]))
for cid in ("P1a", "P4-ratio", "P4-scaling", "P4-fig4c", "hybrid"):
    if len(r[cid]["seeds"]) != len(one[cid]["seeds"]) or r[cid]["verdict"] != one[cid]["verdict"] or r[cid]["ours"] != one[cid]["ours"]:
        bad.append("%s changed with the extra seeds" % cid)
if "seed 1 shown; 3 seeds" not in r["P2-S9"]["ours"] or "seed 1 shown; 3 seeds" not in r["P3"]["ours"]:
    bad.append("the rows' text does not name the seeds: %r / %r" % (r["P2-S9"]["ours"], r["P3"]["ours"]))
if bad:
    print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
grep '^P2 S=9' "$R3/t.tsv" | grep -q 'to .*3 seeds)' && ok "P2 S=9's table cell gives the spread over 3 seeds" \
  || notok "P2 S=9 cell" "$(grep '^P2 S=9' "$R3/t.tsv")"
# an experiment run again without its done mark (interrupted, or a seed added) keeps its complete
# runs: P2 re-run with the same settings rewrites none of its 7 results files
rm -f "$R/p2.done"; m0=$(stat -c %Y "$R"/p2-*.jsonl | md5sum); sleep 1
out=$(bash bench/ppasgd/run.sh 2>&1)
echo "$out" | grep -q 'p2: done' && [ "$(stat -c %Y "$R"/p2-*.jsonl | md5sum)" = "$m0" ] && [ "$(ls "$R"/p2-*.sig | wc -l)" -eq 7 ] \
  && ok "P2 re-run reuses its 7 complete runs (.sig)" || notok "P2 reuse" "$(echo "$out" | grep p2)"
finish
