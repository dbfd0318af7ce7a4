#!/usr/bin/env bash
# t_verdict.sh — the verdict engine (bench/verdict.py) and the claims registry (bench/claims/):
# every registry file parses; no summarizer decides a verdict on its own (they hand metrics to
# the engine); on small hand-made results the engine says agrees / disagrees / inconclusive (seeds
# straddling the threshold) / consistency check / not comparable / no results, evaluates a rule's
# history, and a broken JSON line gives a one-line error naming the file, exit status 1 and no
# traceback. Runs in about a second; needs no bin/pdl.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
V="python3 bench/verdict.py"

expect "every registry file parses" $V --check-registry
expect "verdict.py --help" $V --help
for s in bench/gossip/summarize.py bench/hermans/summarize.py bench/kfac/summarize.py bench/ppasgd/summarize.py \
         bench/collectives/summary.py bench/easgd/e23.py; do
  expect "$s --help" python3 "$s" --help
  grep -q 'verdict.Session(' "$s" && ok "$s takes its verdicts from the engine" || notok "$s" "no verdict.Session"
done
# no verdict word assigned or returned outside the engine (the words may appear in comments/docstrings)
bad=$(grep -nE "(=|return|else|,|\() *\"(agrees|disagrees|reproduced|not reproduced|partly|missing|works|in range|see plot|see table|shown)[ \"(:]" \
        bench/*/summarize.py bench/easgd/e23.py bench/collectives/summary.py bench/easgd/run.sh 2>/dev/null)
[ -z "$bad" ] && ok "no summarizer decides a verdict on its own" || notok "verdict words outside bench/verdict.py" "$bad"

# ---- a hand-made registry and results ------------------------------------------------------------
mkdir -p "$T/claims" "$T/res/runs"
cat > "$T/claims/gossip.toml" <<'TOML'
paper = "gossip"
title = "test"
[[claim]]
id = "A"
statement = "x above 1"
source = "Fig. 1"
kind = "reproduction"
metrics = ["x"]
results = ["runs/a*.jsonl"]
value = "x"
rule = "x > tol"
tolerance = 1.0
seeds = 3
fixed_at = "abc1234"
[[claim.history]]
date = "2026-01-01"
rule = "x > 2"
reason = "an older threshold"
verdict = "disagrees"
[[claim]]
id = "B"
statement = "x above 1, every seed"
source = "Fig. 2"
kind = "reproduction"
rule = "x > 1"
seeds = 3
fixed_at = "abc1234"
[[claim]]
id = "C"
statement = "y below 1"
source = "Fig. 3"
kind = "reproduction"
rule = "all(v < 1 for v in y)"
seeds = 1
fixed_at = "abc1234"
[[claim]]
id = "D"
statement = "by construction"
source = "eq. (1)"
kind = "consistency"
construction = "we chose G so"
rule = "x > 1"
seeds = 1
fixed_at = "abc1234"
[[claim]]
id = "E"
statement = "not like with like"
source = "Table 1"
kind = "reproduction"
rule = "x > 1"
not_comparable = "another metric"
seeds = 1
fixed_at = "abc1234"
[[claim]]
id = "G"
statement = "time to target: MLPerf aggregation"
source = "Fig. 4"
kind = "reproduction"
rule = "x > 1"
aggregate = "mlperf"
seeds = 5
fixed_at = "abc1234"
[[claim]]
id = "H"
statement = "two seeds never reach the target"
source = "Fig. 5"
kind = "reproduction"
rule = "x > 1"
aggregate = "mlperf"
seeds = 5
fixed_at = "abc1234"
[[claim]]
id = "F"
statement = "never measured"
source = "Fig. 9"
kind = "reproduction"
rule = "x > 1"
seeds = 1
fixed_at = "abc1234"
TOML
cat > "$T/res/measurements.jsonl" <<'J'
{"id": "A", "seed": 1, "metrics": {"x": 0.8}}
{"id": "A", "seed": 2, "metrics": {"x": 1.3}}
{"id": "A", "seed": 3, "metrics": {"x": 2.5}}
{"id": "B", "seed": 1, "metrics": {"x": 1.5}}
{"id": "B", "seed": 2, "metrics": {"x": 1.7}}
{"id": "B", "seed": 3, "metrics": {"x": 1.2}}
{"id": "C", "seed": 1, "metrics": {"y": [0.5, 1.5]}}
{"id": "D", "seed": 1, "metrics": {"x": 3}}
{"id": "E", "seed": 1, "metrics": {"x": 3}}
{"id": "G", "seed": 1, "metrics": {"x": 0.5}}
{"id": "G", "seed": 2, "metrics": {"x": 1.2}}
{"id": "G", "seed": 3, "metrics": {"x": 1.3}}
{"id": "G", "seed": 4, "metrics": {"x": 1.4}}
{"id": "G", "seed": 5, "metrics": {"x": 5}}
{"id": "H", "seed": 1, "metrics": {"x": 1e308}}
{"id": "H", "seed": 2, "metrics": {"x": 1e308}}
{"id": "H", "seed": 3, "metrics": {"x": 1.3}}
{"id": "H", "seed": 4, "metrics": {"x": 1.4}}
{"id": "H", "seed": 5, "metrics": {"x": 5}}
J
echo '{"event": "summary"}' > "$T/res/runs/a1.jsonl"
out=$($V --paper gossip --claims "$T/claims" --results "$T/res" --format json 2>"$T/err"); rc=$?
[ "$rc" = 0 ] && ok "engine on hand-made results exits 0" || notok "engine exit" "rc $rc: $(cat "$T/err")"
v() { python3 -c "import json,sys; r={x['id']: x for x in json.loads(sys.argv[1])}; print($2)" "$out" 2>&1; }
[ "$(v "$out" "r['A']['verdict']")" = inconclusive ] && ok "seeds straddling the threshold: inconclusive" || notok "A" "$(v "$out" "r['A']")"
[ "$(v "$out" "r['A']['min'], r['A']['max'], round(r['A']['mean'], 4)")" = "0.8 2.5 1.5333" ] && ok "mean and min-max over the seeds" || notok "A spread" "$(v "$out" "r['A']['mean'], r['A']['min'], r['A']['max']")"
[ "$(v "$out" "r['A']['history'][0]['verdict_now']")" = inconclusive ] && ok "the old rule is evaluated on the same results" || notok "history" "$(v "$out" "r['A']['history']")"
[ "$(v "$out" "r['B']['verdict']")" = agrees ] && ok "every seed holds: agrees" || notok "B" "$(v "$out" "r['B']")"
[ "$(v "$out" "r['C']['verdict']")" = disagrees ] && ok "rule fails: disagrees" || notok "C" "$(v "$out" "r['C']")"
[ "$(v "$out" "r['D']['verdict']")" = "consistency check" ] && ok "consistency kind: consistency check" || notok "D" "$(v "$out" "r['D']")"
[ "$(v "$out" "r['E']['verdict'], 'another metric' in r['E']['reason']")" = "not comparable True" ] && ok "not comparable with its reason" || notok "E" "$(v "$out" "r['E']")"
[ "$(v "$out" "r['G']['verdict']")" = agrees ] && ok "MLPerf aggregation: 5 seeds, fastest and slowest dropped" || notok "G" "$(v "$out" "r['G']")"
[ "$(v "$out" "r['H']['verdict']")" = inconclusive ] && ok "MLPerf aggregation: two seeds that never converge" || notok "H" "$(v "$out" "r['H']")"
[ "$(v "$out" "r['F']['verdict']")" = "no results" ] && ok "no measurement: no results" || notok "F" "$(v "$out" "r['F']")"
[ "$(v "$out" "sorted(r['A'])")" = "$(python3 -c "print(sorted(['paper','id','label','statement','source','kind','rule','tolerance','fixed_at','history','seeds','mean','min','max','paper_value','ours','verdict','reason','simulated','mode','data_set','plot','error']))")" ] \
  && ok "the JSON row has the documented keys" || notok "row keys" "$(v "$out" "sorted(r['A'])")"
$V --paper gossip --claims "$T/claims" --results "$T/res" --format md > "$T/md" 2>&1 && grep -q "Rule histories" "$T/md" \
  && ok "markdown output lists the rule histories" || notok "md" "$(head -3 "$T/md")"

# ---- missing and malformed results ---------------------------------------------------------------
out=$($V --paper gossip --claims "$T/claims" --results "$T/nowhere" --format json 2>"$T/err"); rc=$?
[ "$rc" = 0 ] && [ "$(v "$out" "sorted({x['verdict'] for x in r.values()})")" = "['no results']" ] \
  && ok "missing results directory: every claim says no results" || notok "missing results" "rc $rc $(cat "$T/err")"
printf '{"event": "eval"}\n{"event": "summ\n' > "$T/res/runs/a2.jsonl"
out=$($V --paper gossip --claims "$T/claims" --results "$T/res" --format json 2>"$T/err"); rc=$?
[ "$rc" = 1 ] && ok "a broken JSON line: exit status 1" || notok "broken line exit" "rc $rc"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "runs/a2.jsonl line 2: not JSON" "$T/err" && ! grep -q Traceback "$T/err" \
  && ok "a broken JSON line: one line naming the file and line, no traceback" || notok "broken line message" "$(cat "$T/err")"
[ "$(v "$out" "r['A']['verdict'], r['error']['verdict']")" = "no results no results" ] \
  && ok "a broken file: the claims reading it and an error row say no results" || notok "broken rows" "$(v "$out" "r.get('A')")"
rm "$T/res/runs/a2.jsonl"; echo '{"id": "A", "seed": 4, "metr' >> "$T/res/measurements.jsonl"
$V --paper gossip --claims "$T/claims" --results "$T/res" > /dev/null 2>"$T/err"; rc=$?
[ "$rc" = 1 ] && grep -q "measurements.jsonl line 20: not JSON" "$T/err" && ! grep -q Traceback "$T/err" \
  && ok "a broken measurements file: one-line error naming it" || notok "broken measurements" "rc $rc $(cat "$T/err")"
printf 'paper = "gossip"\n[[claim]]\nid = "A"\n' > "$T/claims/gossip.toml"
$V --check-registry --claims "$T/claims" > /dev/null 2>"$T/err"; rc=$?
[ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && ! grep -q Traceback "$T/err" && ok "a bad registry: one-line error" || notok "bad registry" "rc $rc $(cat "$T/err")"
$V --paper nosuch > /dev/null 2>&1; [ $? = 2 ] && ok "an unknown paper is refused" || notok "unknown paper" "accepted"
finish
