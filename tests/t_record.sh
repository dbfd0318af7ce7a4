#!/usr/bin/env bash
# t_record.sh — the results of record re-derive (issue 45, item 4): bench/record.py check re-runs
# bench/verdict.py on every committed results/<paper>/record/ and fails when a file's sha256
# differs from its manifest, when verdicts.json (the report's data) differs from the engine on the
# record's measurements, or when docs/REPRODUCTION.md's section or README's status block differ
# from what the records give (a paper with no record yet: its section is kept as it is and not
# checked; README counts its rows as no results). Then, in a temporary copy with a one-paper
# registry, it shows that the check is not vacuous: a record written there passes, and a planted
# one-number edit of a measurement, a hand edit of a verdict word in docs/REPRODUCTION.md, an edited
# README count and an extra file each fail it; a record is byte-for-byte reproducible, and QUICK
# measurements are refused. About 4 CPU-s (15 s wall); needs no bin/pdl.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

python3 bench/record.py check 2>"$T/err" && ok "the committed records re-derive (manifests, verdicts, docs sections, README block)" \
  || notok "committed records re-derive" "$(head -5 "$T/err")"
n=$(ls -d results/*/record 2>/dev/null | wc -l)
echo "# $n committed record(s)"

# ---- a copy with a one-paper registry: the check must fail on planted edits --------------------------
R=$T/repo; mkdir -p "$R/bench/claims" "$R/docs" "$R/results/demo"
cp bench/verdict.py bench/record.py bench/status.py bench/reproduction.sh "$R/bench/"
cp docs/REPRODUCTION.md "$R/docs/"; cp README.md "$R/"
cat > "$R/bench/claims/demo.toml" <<'TOML'
paper = "demo"
title = "A demo paper"
order = 1
bench = "make bench-demo"
doc_title = "## A demo paper (bench-demo)"
paper_ids = ["D1"]
[[claim]]
id = "D1"
statement = "x above 1"
quote = "x is clearly above one."
source = "Fig. 1, §2, p. 3"
strength = "faithful"
kind = "reproduction"
results = ["runs/*.jsonl"]
value = "x"
rule = "x > tol"
tolerance = 1.0
seeds = 2
fixed_at = "abc1234"
[[claim]]
id = "D2"
statement = "y at most 2"
quote = "y stays near 2."
source = "Table 1, §3, p. 4"
strength = "weaker"
why = "the paper gives no bound; 2 is ours"
kind = "observation"
rule = "y <= 2"
seeds = 1
simulated = true
fixed_at = "abc1234"
TOML
mkdir -p "$R/results/demo/runs"
printf '{"event":"config","seed":1,"git":"aaa1111"}\n{"event":"summary","seed":1,"git":"aaa1111","x":1.5}\n' > "$R/results/demo/runs/s1.jsonl"
printf '{"event":"summary","seed":2,"git":"bbb2222","x":1.7}\n' > "$R/results/demo/runs/s2.jsonl"
echo '{"argv": ["/x/pdl", "train", "--seed", "1", "--results", "results/demo/runs/s1.jsonl"], "cwd": "'"$R"'", "pid": 1}' > "$R/results/demo/commands.jsonl"
cat > "$R/results/demo/measurements.jsonl" <<'J'
{"id": "D1", "seed": 1, "metrics": {"x": 1.5}, "label": "D1 x", "ours": "x = 1.5", "data_set": "toy", "mode": "real", "quick": false}
{"id": "D1", "seed": 2, "metrics": {"x": 1.7}, "label": "D1 x", "ours": "x = 1.7", "data_set": "toy", "mode": "real", "quick": false}
{"id": "D2", "seed": 1, "metrics": {"y": 2.5}, "label": "D2 y", "ours": "y = 2.5", "data_set": "toy", "mode": "SIMULATED", "quick": false}
J
(cd "$R" && git init -q . && python3 bench/record.py write demo --wall 12 --numerics feedbeef > /dev/null) \
  && [ -f "$R/results/demo/record/manifest.json" ] && ok "a record is written (measurements, runs, verdicts, manifest)" \
  || notok "record write" "$(ls "$R/results/demo/record" 2>&1)"
cp "$R/results/demo/record/runs.jsonl.gz" "$R/results/demo/record/verdicts.json" "$T/"
(cd "$R" && python3 bench/record.py write demo --wall 12 --numerics feedbeef > /dev/null)
cmp -s "$T/runs.jsonl.gz" "$R/results/demo/record/runs.jsonl.gz" && cmp -s "$T/verdicts.json" "$R/results/demo/record/verdicts.json" \
  && ok "a record is reproducible byte for byte (gzip mtime 0, sorted keys)" || notok "record reproducible" "the second write differs"
got=$(python3 - "$R/results/demo/record" <<'PY'
import gzip, json, sys
d = sys.argv[1]
runs = [json.loads(l) for l in gzip.open(d + "/runs.jsonl.gz")]
m = json.load(open(d + "/manifest.json"))
print(len(runs), runs[0]["argv"][-1], runs[0]["kept"], runs[1]["git"], m["commit_range"], m["seeds"], m["wall_s"],
      sorted(m["sha256"]), bool(m["cpu"]))
PY
)
[ "$got" = "2 results/demo/runs/s1.jsonl summary bbb2222 aaa1111..bbb2222 ['1', '2'] 12.0 ['measurements.jsonl', 'runs.jsonl.gz', 'verdicts.json'] True" ] \
  && ok "runs carry command line, summary and commit; the manifest names commit range, seeds, wall time, hashes" \
  || notok "record contents" "$got"
(cd "$R" && bash bench/reproduction.sh > /dev/null 2>"$T/err") && grep -q "Results of record: \`results/demo/record/\`" "$R/docs/REPRODUCTION.md" \
  && grep -q "aaa1111..bbb2222" "$R/docs/REPRODUCTION.md" && ok "reproduction.sh renders the section from the record, with its commit range" \
  || notok "reproduction.sh from record" "$(cat "$T/err")"
grep -q '| A demo paper | D1 | aaa1111..bbb2222 | 1 | - | - | - | - | - | 1 SIM | - | `make bench-demo` |' "$R/README.md" \
  && ok "README's status block counts the record's verdicts (SIMULATED apart)" || notok "status counts" "$(grep 'demo paper' "$R/README.md")"
(cd "$R" && python3 bench/record.py check 2>"$T/err") && ok "the copy's record re-derives" || notok "copy check" "$(cat "$T/err")"
rm "$R/results/demo/measurements.jsonl"
got=$(cd "$R" && python3 bench/verdict.py --paper demo --format tsv 2>&1 | cut -f1,6 | tr '\t\n' ':;')
[ "$got" = "D1 x:agrees (value 1.6 (1.5 to 1.7, 2 seeds));D2 y:observation (the rule does not hold);" ] \
  && ok "with no local results (a fresh clone) the engine reads the record" || notok "engine on a clone" "$got"
fails() { # fails NAME WANT: the check fails with a line containing WANT; then the copy is restored
  (cd "$R" && python3 bench/record.py check > /dev/null 2>"$T/err"); local rc=$?
  if [ $rc = 1 ] && grep -qF "$2" "$T/err" && ! grep -q Traceback "$T/err"; then ok "t_record fails on $1"
  else notok "t_record on $1" "rc $rc: $(cat "$T/err")"; fi
  rm -rf "$R/results/demo/record" "$R/docs/REPRODUCTION.md" "$R/README.md"
  cp -r "$T/good/record" "$R/results/demo/"
  cp "$T/good/REPRODUCTION.md" "$R/docs/"; cp "$T/good/README.md" "$R/"
}
mkdir -p "$T/good"; cp -r "$R/results/demo/record" "$T/good/"; cp "$R/docs/REPRODUCTION.md" "$R/README.md" "$T/good/"
sed -i 's/"x": 1.7/"x": 0.7/' "$R/results/demo/record/measurements.jsonl"
fails "a planted one-number edit of a measurement" "measurements.jsonl: sha256"
python3 - "$R/results/demo/record" <<'PY'   # the same edit with the manifest's hash "fixed" too: the verdicts give it away
import hashlib, json, sys
d = sys.argv[1]; p = d + "/measurements.jsonl"
s = open(p).read().replace('"x": 1.7', '"x": 0.7'); open(p, "w").write(s)
m = json.load(open(d + "/manifest.json")); m["sha256"]["measurements.jsonl"] = hashlib.sha256(s.encode()).hexdigest()
json.dump(m, open(d + "/manifest.json", "w"), indent=1, sort_keys=True)
PY
fails "an edited measurement with its manifest hash rewritten" "verdicts.json: differs from bench/verdict.py"
python3 - "$R/docs/REPRODUCTION.md" <<'PY'   # a hand edit of a verdict word in the demo section
import sys
p = sys.argv[1]; s = open(p).read(); a = s.index("## A demo paper")
b = s.index("| agrees", a); s = s[:b] + "| disagrees" + s[b + len("| agrees"):]; open(p, "w").write(s)
PY
fails "a hand edit of a verdict word in docs/REPRODUCTION.md" "section '## A demo paper (bench-demo)' differs from its record"
sed -i 's/| A demo paper | D1 | aaa1111..bbb2222 | 1 |/| A demo paper | D1 | aaa1111..bbb2222 | 2 |/' "$R/README.md"
fails "an edited count in README's status block" "README.md: the status block differs"
echo x > "$R/results/demo/record/extra.txt"
fails "a file in the record the manifest does not name" "files the manifest does not name: extra.txt"
sed -i 's/^tolerance = 1.0/tolerance = 1.6/' "$R/bench/claims/demo.toml"
fails "a registry change without bench/record.py refresh" "python3 bench/record.py refresh demo"
(cd "$R" && python3 bench/record.py refresh demo && bash bench/reproduction.sh > /dev/null && python3 bench/record.py check 2>"$T/err") \
  && ok "after refresh and reproduction.sh the record re-derives again" || notok "refresh" "$(cat "$T/err")"
sed -i 's/^tolerance = 1.6/tolerance = 1.0/' "$R/bench/claims/demo.toml"
# QUICK measurements are never results of record
cp "$R/results/demo/record/measurements.jsonl" "$R/results/demo/"
sed -i 's/"quick": false/"quick": true/' "$R/results/demo/measurements.jsonl"
(cd "$R" && python3 bench/record.py write demo > /dev/null 2>"$T/err"); rc=$?
[ $rc = 1 ] && grep -q "QUICK measurements are never results of record" "$T/err" && ok "QUICK measurements: no record" \
  || notok "QUICK record" "rc $rc $(cat "$T/err")"
# the numerics hash follows the sources and the compiler lines, not the docs
mkdir -p "$R/src" "$R/build"; echo 'int f(void) { return 1; }' > "$R/src/a.c"; (cd "$R" && git add src/a.c bench docs README.md)
h1=$(cd "$R" && python3 bench/record.py hash); echo "cc=gcc -O3" > "$R/build/config.stamp"; h2=$(cd "$R" && python3 bench/record.py hash)
echo 'more' >> "$R/docs/REPRODUCTION.md"; h3=$(cd "$R" && python3 bench/record.py hash)
echo 'int f(void) { return 2; }' > "$R/src/a.c"; h4=$(cd "$R" && python3 bench/record.py hash)
[ "$h1" != "$h2" ] && [ "$h2" = "$h3" ] && [ "$h3" != "$h4" ] && ok "numerics hash: changes with a source and config.stamp, not with docs" \
  || notok "numerics hash" "$h1 $h2 $h3 $h4"
finish
