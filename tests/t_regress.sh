#!/usr/bin/env bash
# tests/t_regress.sh — the CI regression gate's own test (ci/regress.sh + ci/regress.py).
# Part 1 drives the gate with a fake probe (values from a file) and throw-away baselines, so every
# verdict is checked without timing noise: a ratio within tolerance passes, beyond it fails naming
# the metric, exact metrics compare exactly (7 vs 8, and floats differing in the last digit),
# differing repeats of an exact metric fail, MISSING/NEW/probe errors fail, skip and pending pass,
# regress-update rewrites only the value and then the gate passes, history lines are appended.
# Part 1c: the split make test uses (--untimed-to beside the tests, --untimed-from alone after
# them), on fake probes tagged timed / mpi.
# Part 2 runs two real probes (E1 stability counts, PP-ASGD under emulated staleness) once, as
# make test does (--untimed-to), and judges their records against the real baselines, then
# against a copy with one value made unattainable: the gate must fail with a FAIL line naming
# that metric.
cd "$(dirname "$0")/.." || exit 1
# pdl-test: cpu=17
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/probes" "$T/base"
cat > "$T/probes/fake.sh" <<'EOF'
probe_fake() { local n v; while read -r n v; do metric "$n" "$v"; done < "$FAKE_VALUES"; }
probe_fake_extra() {
  [ -z "${FAKE_SKIP:-}" ] || skip t.gpu "no CUDA device"
  note t.ratio "run 1: 0.85, other load 0%"
  [ -z "${FAKE_PENDING:-}" ] || pending "$FAKE_PENDING" "feature not built"
  [ -z "${FAKE_FAIL:-}" ] || { echo "fake probe breaks"; false; }
  true
}
EOF
base() { # base VALUE_OF_t.ratio VALUE_OF_t.exact [extra records as JSON]
  cat > "$T/base/fake.json" <<EOF
[
 {"name": "t.ratio", "value": $1, "tolerance": "10%", "direction": "higher_is_better", "unit": "ratio", "why": "test", "kind": "throughput"},
 {"name": "t.exact", "value": $2, "tolerance": 0, "direction": "exact", "unit": "count", "why": "test"},
 {"name": "t.float", "value": 0.123456789, "tolerance": 0, "direction": "exact", "unit": "nats", "why": "test"},
 {"name": "t.loss", "value": 0.5, "tolerance": 0.01, "direction": "lower_is_better", "unit": "nats", "why": "test"},
 {"name": "t.gpu", "value": 0, "tolerance": 0, "direction": "exact", "unit": "elements", "why": "test"},
 {"name": "t.new_feature", "value": ${NEWV:-null}, "tolerance": 0, "direction": "exact", "unit": "count", "why": "test"}${3:+,
 $3}
]
EOF
}
values() { printf '%s\n' "$@" > "$T/values"; }
export FAKE_VALUES=$T/values REGRESS_PROBES=$T/probes REGRESS_BASELINES=$T/base
export REGRESS_HISTORY=$T/res/ci/history.jsonl REGRESS_PLOTDIR=$T/out
export FAKE_SKIP=1 FAKE_PENDING=t.new_feature
gate() { out=$(bash ci/regress.sh "$@" 2>&1); rc=$?; }
# check NAME WANT_RC PATTERN: the last gate run exited WANT_RC and printed PATTERN (grep -E)
check() {
  if [ "$rc" -eq "$2" ] && grep -qE -- "$3" <<<"$out"; then ok "$1"
  else notok "$1" "exit $rc (want $2), pattern '$3' in: $(tail -n 12 <<<"$out" | tr '\n' '~')"; fi
}
ALL=("t.exact 7" "t.float 0.123456789" "t.loss 0.5" "t.gpu 0")

base 1.0 7; values "t.ratio 0.93" "${ALL[@]}"; gate
check "ratio 7% below a 10% tolerance passes" 0 '^t\.ratio .*\| ok'
check "skip (no device) and pending (value null) do not fail" 0 'pending' 
check "summary line says PASS" 0 '^regress: 6 metrics: .*PASS'
[ "$(wc -l < "$REGRESS_HISTORY")" = 1 ] && python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); assert d["figures"]["t.ratio"] == 0.93 and d["ok"] and d["commit"] and d["host"]' "$REGRESS_HISTORY" \
  && ok "history line appended with commit, host and figures" || notok "history" "$(cat "$REGRESS_HISTORY")"
values "t.ratio 0.93" "t.exact 7" "t.float 0.123456789" "t.loss 0.5"; gate
check "a skipped metric (not measured) prints its reason" 0 '^skip t\.gpu: no CUDA device'

values "t.ratio 0.85" "${ALL[@]}"; gate
check "a failure shows the probe's note on how it was measured" 1 'FAIL t\.ratio: .*\(measured: run 1: 0\.85, other load 0%\)'
check "ratio 15% below a 10% tolerance fails naming the metric" 1 '^FAIL t\.ratio: REGRESSED: baseline 1, now 0\.85'
values "t.ratio 1.5" "${ALL[@]}"; gate
check "a ratio far above the baseline passes as improved" 0 '^t\.ratio .*\| improved'

values "t.ratio 1" "t.exact 8" "t.float 0.123456789" "t.loss 0.5" "t.gpu 0"; gate
check "exact count 8 vs 7 fails" 1 '^FAIL t\.exact: CHANGED'
values "t.ratio 1" "t.exact 7" "t.float 0.123456788" "t.loss 0.5" "t.gpu 0"; gate
check "exact float differing in the 9th digit fails" 1 '^FAIL t\.float: CHANGED'
values "t.ratio 1" "t.exact 7" "t.exact 7" "t.exact 6" "t.float 0.123456789" "t.loss 0.5" "t.gpu 0"; gate
check "differing repeats of an exact metric fail" 1 '^FAIL t\.exact: NONDETERMINISTIC'
values "t.ratio 1" "t.exact 7" "t.float 0.123456789" "t.loss 0.509" "t.gpu 0"; gate
check "lower_is_better within its absolute tolerance passes" 0 '^t\.loss .*\| ok'
values "t.ratio 1" "t.exact 7" "t.float 0.123456789" "t.loss 0.52" "t.gpu 0"; gate
check "lower_is_better beyond its absolute tolerance fails" 1 '^FAIL t\.loss: REGRESSED'

values "t.ratio 1" "t.float 0.123456789" "t.loss 0.5" "t.gpu 0"; gate
check "a record nobody measured fails as MISSING" 1 '^FAIL t\.exact: MISSING'
values "t.ratio 1" "${ALL[@]}" "t.unknown 3"; gate
check "a measurement without a record fails as NEW" 1 '^FAIL t\.unknown: NEW'
values "t.ratio 1" "${ALL[@]}"; FAKE_FAIL=1 gate
check "a failing probe fails the gate naming the probe" 1 '^FAIL probe probe_fake_extra: exit status 1'
values "t.ratio 1" "t.exact 7" "t.float 0.123456789" "t.loss 0.5"; FAKE_SKIP="" gate
check "without the skip, an unmeasured device metric fails" 1 '^FAIL t\.gpu: MISSING'
NEWV=3 base 1.0 7; values "t.ratio 1" "${ALL[@]}"; gate
check "pending fails once the metric has a recorded value" 1 '^FAIL t\.new_feature: MISSING: .*had a baseline'
NEWV=null

base 1.0 7; values "t.ratio 0.5" "t.exact 9" "t.float 0.123456789" "t.loss 0.5" "t.gpu 0"; gate --update
check "regress-update shows the diff of the rewritten values" 0 '^\+.*"value": 9'
python3 - "$T/base/fake.json" <<'EOF' && ok "regress-update keeps tolerance/direction/why" || notok "update kept policy" "$(cat "$T/base/fake.json")"
import json, sys
r = {x["name"]: x for x in json.load(open(sys.argv[1]))}
assert r["t.exact"]["value"] == 9 and r["t.ratio"]["value"] == 0.5 and r["t.ratio"]["tolerance"] == "10%"
assert r["t.ratio"]["why"] == "test" and r["t.new_feature"]["value"] is None
EOF
gate
check "after regress-update the same figures pass" 0 'PASS'
[ "$(wc -l < "$REGRESS_HISTORY")" -ge 15 ] && ok "every run appends one history line" || notok "history count" "$(wc -l < "$REGRESS_HISTORY")"
if command -v gnuplot >/dev/null 2>&1; then
  [ -s "$T/out/ci-history.png" ] && [ -s "$T/res/ci/history-throughput.dat" ] && grep -q '^run date commit t.ratio' "$T/res/ci/history-throughput.dat" \
    && ok "history .dat derived and ci-history.png rendered" || notok "history plot" "$(ls "$T/out" "$T/res/ci" 2>&1 | tr '\n' ' ')"
else echo "skip - history plot: gnuplot not found (make deps installs gnuplot-nox)"; fi
echo '[{"name": "t.x", "value": 1, "tolerance": 0, "direction": "up", "unit": "u", "why": "w"}]' > "$T/base/bad.json"; gate
check "a baseline with an unknown direction is refused" 2 "direction 'up' is not one of"
rm -f "$T/base/bad.json"

# ---- part 1b: same-run throughput against a reference (ab), with fake binaries ----------------
# The fake "pdl"s print a rate; ab pairs each with REGRESS_REF_PDL in ABBA order.
mkdir -p "$T/bins" "$T/abprobes" "$T/abbase"
for v in 100 60; do printf '#!/bin/sh\necho %s\n' "$v" > "$T/bins/rate$v"; chmod +x "$T/bins/rate$v"; done
for w in ref cur; do printf '#!/bin/sh\necho %s >> %s\necho 100\n' "$w" "$T/order" > "$T/bins/log$w"; chmod +x "$T/bins/log$w"; done
printf '%s\n' 'fake_rate() { "$PDL"; }' 'probe_ab() {   # probe: timed' '  ab t.ab rate fake_rate; }' > "$T/abprobes/ab.sh"
echo '[{"name": "t.ab", "value": 1, "tolerance": "10%", "direction": "higher_is_better", "unit": "ratio", "why": "test", "kind": "throughput", "compare": "reference"}]' > "$T/abbase/ab.json"
abgate() { out=$(REGRESS_PROBES=$T/abprobes REGRESS_BASELINES=$T/abbase REPEATS=4 bash ci/regress.sh --no-history "$@" 2>&1); rc=$?; }
PDL=$T/bins/rate100 REGRESS_REF_PDL=$T/bins/rate100 abgate
check "ab: as fast as the reference passes" 0 '^t\.ab .*\| 1 .*\| ok'
PDL=$T/bins/rate60 REGRESS_REF_PDL=$T/bins/rate100 abgate
check "ab: 1.67x slower than the reference fails naming the metric" 1 '^FAIL t\.ab: REGRESSED: baseline 1, now 0\.6 '
PDL=$T/bins/rate100 REGRESS_REF_PDL=$T/bins/rate60 abgate
check "ab: sides swapped, the faster tree shows as improved" 0 '^t\.ab .*\| improved'
: > "$T/order"; PDL=$T/bins/logcur REGRESS_REF_PDL=$T/bins/logref REGRESS_AB_MIN=4 abgate
[ "$(tr '\n' ' ' < "$T/order")" = "ref cur cur ref ref cur cur ref " ] && ok "ab: pairs run in ABBA order" \
  || notok "ab: ABBA order" "$(tr '\n' ' ' < "$T/order")"
# a figure clear of its tolerance by half or more after one ABBA cycle needs no more pairs; one
# nearer its edge (0.93: 7% down, tolerance 10%) gets all REPEATS; --update always does
: > "$T/order"; PDL=$T/bins/logcur REGRESS_REF_PDL=$T/bins/logref abgate
[ "$(tr '\n' ' ' < "$T/order")" = "ref cur cur ref " ] && [ $rc = 0 ] && ok "ab: a figure clear by half its tolerance stops after one ABBA cycle" \
  || notok "ab: early stop" "exit $rc, order $(tr '\n' ' ' < "$T/order")"
printf '#!/bin/sh\necho cur >> %s\necho 93\n' "$T/order" > "$T/bins/log93"; chmod +x "$T/bins/log93"
: > "$T/order"; PDL=$T/bins/log93 REGRESS_REF_PDL=$T/bins/logref abgate
[ "$(grep -c . "$T/order")" = 8 ] && [ $rc = 0 ] && grep -q '^t\.ab .*| 0\.93 .*| ok' <<<"$out" \
  && ok "ab: a figure within its tolerance but not clear by half gets every pair (4 here)" \
  || notok "ab: no early stop near the edge" "exit $rc, $(grep -c . "$T/order") runs: $(grep '^t\.ab' <<<"$out")"
: > "$T/order"; PDL=$T/bins/logcur REGRESS_REF_PDL=$T/bins/logref REPEATS=4 abgate --update
[ "$(grep -c . "$T/order")" = 8 ] && ok "ab: --update runs every pair" || notok "ab: --update pairs" "$(grep -c . "$T/order") runs"
printf '%s\n' 'fake_rate() { "$PDL"; }' 'probe_ab() { ab t.ab rate fake_rate; }' > "$T/abprobes/ab.sh"
PDL=$T/bins/rate100 REGRESS_REF_PDL=$T/bins/rate100 abgate
check "ab in a probe not marked timed fails, naming the tag" 1 "probe_ab times things: mark it '# probe: timed'"
printf '%s\n' 'fake_rate() { "$PDL"; }' 'probe_ab() {   # probe: timed' '  ab t.ab rate fake_rate; }' > "$T/abprobes/ab.sh"
PDL=$T/bins/rate100 PERF_REFERENCE=0123456789abcdef0123456789abcdef01234567 abgate
check "ab: a reference revision missing from the clone fails the gate plainly" 1 'not in this clone'
check "ab: ... and the run says FAIL" 1 '^regress: .*FAIL'
expect_exit 1 "perf-ref.sh names a missing revision" bash ci/perf-ref.sh --rev 0123456789abcdef0123456789abcdef01234567

# ---- part 1c: the split of make test: untimed probes beside the tests, timed ones alone after --
# fake probes: one plain, one mpi, one timed (an ab against the same fake binary)
mkdir -p "$T/sprobes" "$T/sbase" "$T/u"
cat > "$T/sprobes/s.sh" <<'EOF'
probe_s_plain() { echo plain >> "$SPLIT_LOG"; metric s.plain 3; }
probe_s_mpi() {   # probe: mpi
  echo mpi >> "$SPLIT_LOG"; metric s.mpi "${S_MPI:-5}"; }
probe_s_timed() {   # probe: timed
  echo timed >> "$SPLIT_LOG"; ab s.timed rate s_rate; }
s_rate() { "$PDL"; }
EOF
cat > "$T/sbase/s.json" <<'EOF'
[{"name": "s.plain", "value": 3, "tolerance": 0, "direction": "exact", "unit": "count", "why": "test"},
 {"name": "s.mpi", "value": 5, "tolerance": 0, "direction": "exact", "unit": "count", "why": "test"},
 {"name": "s.timed", "value": 1, "tolerance": "10%", "direction": "higher_is_better", "unit": "ratio", "why": "test", "kind": "throughput", "compare": "reference"}]
EOF
export SPLIT_LOG=$T/split.log
sgate() {   # sgate [PDL=...] ARGS...: the gate on the split probes
  : > "$SPLIT_LOG"
  out=$(PDL=${SPDL:-$T/bins/rate100} REGRESS_REF_PDL=$T/bins/rate100 REGRESS_PROBES=$T/sprobes REGRESS_BASELINES=$T/sbase \
        bash ci/regress.sh --no-history "$@" 2>&1); rc=$?
}
sgate --untimed-to "$T/u/mpi.jsonl" --mpi only
[ $rc = 0 ] && [ "$(cat "$SPLIT_LOG")" = mpi ] && grep -q '"s.mpi"' "$T/u/mpi.jsonl" && ok "--untimed-to --mpi only: runs the mpi probe alone and saves its records" \
  || notok "--untimed-to --mpi only" "exit $rc, ran: $(tr '\n' ' ' < "$SPLIT_LOG"): $(tail -2 <<<"$out")"
sgate --untimed-to "$T/u/other.jsonl" --mpi skip
[ $rc = 0 ] && [ "$(cat "$SPLIT_LOG")" = plain ] && ok "--untimed-to --mpi skip: the other untimed probes, never a timed one" \
  || notok "--untimed-to --mpi skip" "exit $rc, ran: $(tr '\n' ' ' < "$SPLIT_LOG")"
sgate --untimed-from "$T/u"
[ "$(cat "$SPLIT_LOG")" = timed ] && ok "--untimed-from: runs only the timed probes" || notok "--untimed-from runs" "$(tr '\n' ' ' < "$SPLIT_LOG")"
check "--untimed-from judges every record, the saved ones too" 0 '^regress: 3 metrics: .*PASS'
S_MPI=6 sgate --untimed-to "$T/u/mpi.jsonl" --mpi only; sgate --untimed-from "$T/u"
check "a saved record that regressed fails the judging run" 1 '^FAIL s\.mpi: CHANGED'
rm -f "$T/u/mpi.jsonl"; sgate --untimed-from "$T/u"
check "an untimed probe with no saved record fails, naming it" 1 '^FAIL probe probe_s_mpi: not run'
sgate --untimed-to "$T/u/mpi.jsonl" --mpi only
cp "$T/bins/rate100" "$T/bins/other"; echo '# another build' >> "$T/bins/other"
SPDL=$T/bins/other sgate --untimed-from "$T/u"
check "records saved from another pdl binary are not used" 1 '^FAIL probe probe_s_mpi: not run'
sgate --untimed-to "$T/u/x.jsonl" --update
check "--untimed-to with --update is refused" 2 'not with --update'
unset SPLIT_LOG

# ---- part 2: real probes against the real baselines ---------------------------------------------
# run once, as make test runs them (--untimed-to), and judged twice from the saved records
unset REGRESS_PROBES FAKE_SKIP FAKE_PENDING
cp ci/baselines/*.json "$T/base/" && rm -f "$T/base/fake.json"
rm -rf "$T/u" && mkdir -p "$T/u"
gate --only 'probe_easgd_stability|probe_ppasgd_emulate' --untimed-to "$T/u/real.jsonl"
[ $rc = 0 ] && grep -q '"ppasgd.emulate-S7.test_err"' "$T/u/real.jsonl" && ok "real stability and PP-ASGD probes run (--untimed-to)" \
  || notok "real probes" "exit $rc: $(tail -3 <<<"$out")"
gate --only 'probe_easgd_stability|probe_ppasgd_emulate' --untimed-from "$T/u" --no-history
check "real stability and PP-ASGD probes match the committed baselines" 0 '^ppasgd\.emulate-S7\.test_err .*\| ok'
python3 - "$T/base/ppasgd.json" <<'EOF'
import json, sys
recs = json.load(open(sys.argv[1]))
for r in recs:
    if r["name"] == "ppasgd.emulate-S7.test_err":
        r["value"] = 0.01   # unattainable after 160 updates of the tiny net
json.dump(recs, open(sys.argv[1], "w"), indent=2)
EOF
gate --only 'probe_ppasgd_emulate' --untimed-from "$T/u" --no-history
check "an unattainable baseline fails make regress naming the metric" 1 '^FAIL ppasgd\.emulate-S7\.test_err: REGRESSED: baseline 0\.01, now 0\.279'
check "the failing run ends with FAIL" 1 '^regress: .*FAIL'
finish
