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
export PDL_CLAIMS_REQUIRE_QUOTES=1   # the schema as make test runs it (the switch is tested below)

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
quote = "the paper's words"
strength = "faithful"
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
[[claim.history]]
date = "2025-06-01"
rule = "x > tol"
tolerance = 0.5
kind = "observation"
commit = "0123abc"
reason = "a looser tolerance"
verdict = "agrees"
[[claim]]
id = "B"
half = "every seed"
statement = "x above 1, every seed"
source = "Fig. 2"
quote = "the paper's words"
strength = "faithful"
kind = "reproduction"
rule = "x > 1"
seeds = 3
fixed_at = "abc1234"
[[claim]]
id = "C"
statement = "y below 1"
source = "Fig. 3"
quote = "the paper's words"
strength = "faithful"
kind = "reproduction"
rule = "all(v < 1 for v in y)"
seeds = 1
fixed_at = "abc1234"
[[claim]]
id = "D"
statement = "by construction"
source = "eq. (1)"
quote = "the paper's words"
strength = "faithful"
kind = "consistency"
construction = "we chose G so"
rule = "x > 1"
seeds = 1
fixed_at = "abc1234"
[[claim]]
id = "E"
statement = "not like with like"
source = "Table 1"
quote = "the paper's words"
strength = "faithful"
kind = "reproduction"
rule = "x > 1"
not_comparable = "another metric"
seeds = 1
fixed_at = "abc1234"
[[claim]]
id = "G"
statement = "time to target: MLPerf aggregation"
source = "Fig. 4"
quote = "the paper's words"
strength = "faithful"
kind = "reproduction"
rule = "x > 1"
aggregate = "mlperf"
seeds = 5
fixed_at = "abc1234"
[[claim]]
id = "H"
statement = "two seeds never reach the target"
source = "Fig. 5"
quote = "the paper's words"
strength = "faithful"
kind = "reproduction"
rule = "x > 1"
aggregate = "mlperf"
seeds = 5
fixed_at = "abc1234"
[[claim]]
id = "F"
statement = "never measured"
source = "Fig. 9"
quote = "the paper's words"
strength = "faithful"
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
[ "$(v "$out" "r['A']['history'][1]['verdict_now'], r['A']['history'][1]['tolerance'], r['A']['history'][1]['kind'], r['A']['history'][1]['commit']")" = "agrees 0.5 observation 0123abc" ] \
  && ok "an old rule is evaluated with its own tolerance (0.5: agrees; today's 1.0 would not)" || notok "history tolerance" "$(v "$out" "r['A']['history']")"
[ "$(v "$out" "r['B']['verdict']")" = agrees ] && ok "every seed holds: agrees" || notok "B" "$(v "$out" "r['B']")"
[ "$(v "$out" "r['C']['verdict']")" = disagrees ] && ok "rule fails: disagrees" || notok "C" "$(v "$out" "r['C']")"
[ "$(v "$out" "r['D']['verdict']")" = "consistency check" ] && ok "consistency kind: consistency check" || notok "D" "$(v "$out" "r['D']")"
[ "$(v "$out" "r['E']['verdict'], 'another metric' in r['E']['reason']")" = "not comparable True" ] && ok "not comparable with its reason" || notok "E" "$(v "$out" "r['E']")"
[ "$(v "$out" "r['G']['verdict']")" = agrees ] && ok "MLPerf aggregation: 5 seeds, fastest and slowest dropped" || notok "G" "$(v "$out" "r['G']")"
[ "$(v "$out" "r['H']['verdict']")" = inconclusive ] && ok "MLPerf aggregation: two seeds that never converge" || notok "H" "$(v "$out" "r['H']")"
[ "$(v "$out" "r['F']['verdict']")" = "no results" ] && ok "no measurement: no results" || notok "F" "$(v "$out" "r['F']")"
[ "$(v "$out" "sorted(r['A'])")" = "$(python3 -c "print(sorted(['paper','id','label','statement','source','kind','rule','tolerance','fixed_at','history','seeds','mean','min','max','paper_value','ours','verdict','reason','simulated','mode','data_set','plot','error','quote','quote_ja','strength','why','half']))")" ] \
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
# ---- issue 45/46: schema fields, metric types, measurement types, bounded rules, read_jsonl ----------
N=$T/n; mkdir -p "$N/claims" "$N/res"
reg() { # reg EXTRA-LINES: a one-claim registry whose claim A has the lines given
  printf 'paper = "gossip"\ntitle = "t"\n[[claim]]\nid = "A"\nstatement = "s"\nsource = "Fig. 1, §2, p. 3"\nkind = "reproduction"\nfixed_at = "abc"\nseeds = 1\n%s\n' "$1" > "$N/claims/gossip.toml"; }
reg_err() { # reg_err NAME EXTRA-LINES WANT: --check-registry fails with one line containing WANT
  reg "$2"; $V --check-registry --claims "$N/claims" > /dev/null 2>"$T/err"; local rc=$?
  if [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -qF "$3" "$T/err" && grep -q "gossip.toml claim A" "$T/err" \
     && ! grep -q Traceback "$T/err"; then ok "registry: $1: one line naming file, claim and field"
  else notok "registry: $1" "rc $rc: $(cat "$T/err")"; fi; }
reg_err "no quote" 'strength = "faithful"' "'quote'"
reg_err "no strength" 'quote = "q"' "'strength'"
reg_err "a bad strength" $'quote = "q"\nstrength = "similar"' "'strength' is 'similar'"
reg_err "weaker without why" $'quote = "q"\nstrength = "weaker"' "'why' (strength is weaker)"
reg_err "a history entry without its verdict" $'quote = "q"\nstrength = "faithful"\n[[claim.history]]\ndate = "2026-01-01"\nrule = ""\nreason = "r"' "history entry 1: missing field 'verdict'"
reg_err "a history tolerance that is not a number" $'quote = "q"\nstrength = "faithful"\n[[claim.history]]\ndate = "2026-01-01"\nrule = ""\nreason = "r"\nverdict = "agrees"\ntolerance = "big"' "'tolerance' must be a number"
reg_err "a huge integer in a rule" $'quote = "q"\nstrength = "faithful"\nrule = "x > 99999999999999999999"' "the integer"
reg $'strength = "faithful"'
PDL_CLAIMS_REQUIRE_QUOTES=0 $V --check-registry --claims "$N/claims" > /dev/null 2>&1 && $V --check-registry --lenient --claims "$N/claims" > /dev/null 2>&1 \
  && ok "the issue-45 fields are required behind a switch (PDL_CLAIMS_REQUIRE_QUOTES=0, --lenient)" || notok "lenient switch" "refused"
sed -i 's/^title = "t"/title = "t"\nlanguage = "ja"/' "$N/claims/gossip.toml"; sed -i 's/^strength = "faithful"/quote = "q"\nstrength = "faithful"/' "$N/claims/gossip.toml"
$V --check-registry --claims "$N/claims" > /dev/null 2>"$T/err"; grep -q "'quote_ja'" "$T/err" \
  && ok "a Japanese paper's claim needs quote_ja" || notok "quote_ja" "$(cat "$T/err")"
# a boolean (or string) metric: an error row naming the claim and the metric, exit 1
reg $'quote = "q"\nstrength = "faithful"\nrule = "passed"'
echo '{"id": "A", "seed": 1, "metrics": {"passed": true}}' > "$N/res/measurements.jsonl"
out=$($V --paper gossip --claims "$N/claims" --results "$N/res" --format json 2>"$T/err"); rc=$?
[ "$rc" = 1 ] && grep -q "claim A seed 1: metric 'passed' is a boolean" "$T/err" && [ "$(v "$out" "r['A']['verdict'], r['error']['verdict']")" = "no results no results" ] \
  && ok "a boolean metric: an error row naming the claim and the metric" || notok "bool metric" "rc $rc $(cat "$T/err")"
echo '{"id": "A", "seed": 1, "metrics": {"passed": [1, "yes"]}}' > "$N/res/measurements.jsonl"
$V --paper gossip --claims "$N/claims" --results "$N/res" > /dev/null 2>"$T/err"; [ $? = 1 ] && grep -q "metric 'passed' is a str" "$T/err" \
  && ok "a string inside a metric list: refused" || notok "str metric" "$(cat "$T/err")"
# measurement lines of the wrong type: one line naming file, line and field
for bad in '{"id": "A", "seed": 1, "metrics": [1, 2]}|metrics' '{"id": 7, "seed": 1, "metrics": {}}|id' \
           '{"id": "A", "instance": 3, "metrics": {}}|instance' '{"id": "A", "seed": 1.5, "metrics": {}}|seed' '[1, 2]|object'; do
  printf '{"id": "A", "seed": 1, "metrics": {"x": 1}}\n%s\n' "${bad%|*}" > "$N/res/measurements.jsonl"
  $V --paper gossip --claims "$N/claims" --results "$N/res" > /dev/null 2>"$T/err"; rc=$?
  if [ "$rc" = 1 ] && grep -q "measurements.jsonl line 2: .*${bad#*|}" "$T/err" && ! grep -q Traceback "$T/err"; then
    ok "a measurement with a bad ${bad#*|}: one line naming file, line and field"
  else notok "measurement type ${bad#*|}" "rc $rc $(cat "$T/err")"; fi
done
# bounded rules: a huge power, a huge range, sequence repetition: the row says why, at once, no traceback
for r in 'x ** 100000 > 1|integer power' 'sum(range(int(x) * 1000000000)) > 0|range of' 'len([x] * 1000000000) > 0|sequence repetition'; do
  reg $'quote = "q"\nstrength = "faithful"\nrule = "'"${r%|*}"'"'
  echo '{"id": "A", "seed": 1, "metrics": {"x": 7}}' > "$N/res/measurements.jsonl"
  t0=$(date +%s); out=$(timeout 20 $V --paper gossip --claims "$N/claims" --results "$N/res" --format json 2>"$T/err"); rc=$?
  if [ "$rc" = 0 ] && [ $(( $(date +%s) - t0 )) -le 5 ] && v "$out" "r['A']['reason']" | grep -q "${r#*|}" && ! grep -q Traceback "$T/err"; then
    ok "a bounded rule: ${r%|*} is refused with a reason"
  else notok "bounded rule ${r%|*}" "rc $rc $(v "$out" "r['A']['reason']") $(cat "$T/err")"; fi
done
reg $'quote = "q"\nstrength = "faithful"\nrule = "all(a >= 0 for a in range(1000000) for b in range(1000000))"'
t0=$(date +%s); out=$(timeout 30 $V --paper gossip --claims "$N/claims" --results "$N/res" --format json 2>"$T/err"); rc=$?
[ "$rc" = 0 ] && v "$out" "r['A']['reason']" | grep -q "longer than" && [ $(( $(date +%s) - t0 )) -le 15 ] \
  && ok "a rule that runs too long is stopped with a reason" || notok "rule time limit" "rc $rc $(v "$out" "r['A']['reason']")"
# issue 46, item 7: the inputs that once gave tracebacks or hangs: one line, exit 1, at once
reg $'quote = "q"\nstrength = "faithful"\nvalue = "x"\nrule = "x > 1"'
hostile() { # hostile NAME WANT: the engine on the current registry and measurements
  timeout 20 $V --paper gossip --claims "$N/claims" --results "$N/res" > /dev/null 2>"$T/err"; local rc=$?
  if [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" -le 2 ] && grep -qF "$2" "$T/err" && ! grep -q Traceback "$T/err"; then ok "hostile input: $1"
  else notok "hostile input: $1" "rc $rc: $(head -c 300 "$T/err")"; fi; }
python3 -c "print('{\"id\": \"A\", \"seed\": 1, \"metrics\": {\"x\": %s}}' % ('9' * 4000))" > "$N/res/measurements.jsonl"
hostile "a 4000-digit metric" "metric 'x' is an integer of 4000 digits"
printf '{"id": "A", "ours": "\xff\xfe"}\n' > "$N/res/measurements.jsonl"; hostile "non-UTF-8 bytes in measurements" "line 1: not UTF-8"
echo '{"id": "A", "flags": 5}' > "$N/res/measurements.jsonl"; hostile '"flags": 5' "field 'flags' must be a list"
rm -f "$N/res/measurements.jsonl"
printf 'paper = "gossip"\ntitle = "t"\nclaim = "x"\n' > "$N/claims/gossip.toml"; hostile 'claim = "x"' "field 'claim' must be a list"
reg $'quote = "q"\nstrength = "faithful"\nrule = 5'; hostile "rule = 5" "field 'rule' must be a string"
reg $'quote = "q"\nstrength = "faithful"\nlabel = "\xff"'; hostile "non-UTF-8 bytes in a claims file" "gossip.toml"
reg $'quote = "q"\nstrength = "faithful"\nhistory = [1]'; hostile "history = [1]" "history entry 1: not a table"
# read_jsonl: a torn last line is skipped with a warning; a bad middle line raises one line
printf '{"a": 1}\n{"a": 2}\n{"a": 3, "b' > "$N/t.jsonl"
res=$(cd bench && python3 -c "import verdict, sys; print(len(verdict.read_jsonl(sys.argv[1])))" "$N/t.jsonl" 2>"$T/err")
[ "$res" = 2 ] && grep -q "t.jsonl line 3: torn last line skipped" "$T/err" && [ "$(wc -l < "$T/err")" = 1 ] \
  && ok "read_jsonl: a torn last line is skipped with a one-line warning" || notok "read_jsonl torn" "$res $(cat "$T/err")"
printf '{"a": 1}\n{"a": \n{"a": 3}\n' > "$N/t.jsonl"
res=$(cd bench && python3 -c "
import verdict, sys
try: verdict.read_jsonl(sys.argv[1])
except verdict.VerdictError as e: print(e)" "$N/t.jsonl" 2>&1)
case $res in *"t.jsonl line 2: not JSON"*) ok "read_jsonl: a bad line before the last raises VerdictError naming file and line" ;;
  *) notok "read_jsonl bad line" "$res" ;; esac
# the paper list: one place (the registry files' top-level keys), in their order
res=$(cd bench && python3 -c "import verdict; print(' '.join(verdict.paper_names()))")
want=$(for f in bench/claims/*.toml; do printf '%s %s\n' "$(sed -n 's/^order = //p' "$f")" "$(basename "$f" .toml)"; done | sort -n | cut -d' ' -f2 | tr '\n' ' ')
[ "$res " = "$want" ] && ok "verdict.papers(): the registry files in their order ($res)" || notok "papers()" "'$res' vs '$want'"

$V --paper nosuch > /dev/null 2>&1; [ $? = 2 ] && ok "an unknown paper is refused" || notok "unknown paper" "accepted"
# issue 46 item 9: a property-based fuzz of the engine's input readers (tests/verdict_fuzz.py:
# mutated measurements.jsonl and claims registries; nothing but a one-line VerdictError escapes,
# every call bounded). Seed fixed here for a reproducible make test; `python3 tests/verdict_fuzz.py
# 5000 SEED` searches further. It found a 'flags' list holding a number (a TypeError in the
# reason's join) on its first seeds.
out=$(python3 tests/verdict_fuzz.py 300 2 2>/dev/null); rc=$?   # seed 2 meets the flags case at input 171
printf '%s\n' "$out"
[ $rc -eq 0 ] || notok "verdict_fuzz.py" "exit $rc"
finish
