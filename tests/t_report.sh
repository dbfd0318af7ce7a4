#!/usr/bin/env bash
# tests/t_report.sh — the report page (bench/report.py, `make report`) in a real headless browser.
# Builds the page from a small fixture (results folders with a broken JSONL line, PNG plots, one of
# them truncated; a rows file with every field the engine gives) and loads it with Debian's
# chromium: the page loads, its inline self-check ran, every <img> decoded, every claim id of the
# registry (bench/claims, through the engine; of the fixture rows otherwise) is present, and each
# bad input (broken results line, broken PNG, failing engine, engine printing no JSON) is a
# visible error row naming the file, never a blank page or a traceback. Installs nothing: chromium
# comes from ci/install-deps.sh (`make deps`), and its absence is a failure, not a skip.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
REPORT=bench/report.py
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
  notok "chromium present" "no chromium binary: install Debian's package 'chromium' (make deps does, ci/install-deps.sh)"
  finish
fi
ok "chromium present ($CHROMIUM)"
tmp=$(mktemp -d /tmp/pdl-t-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# dom FILE: the page's DOM after load, as the browser sees it (-> FILE.dom)
dom() {
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile" \
    --virtual-time-budget=5000 --dump-dom "file://$(realpath "$1")" >"$1.dom" 2>"$1.chromium.err"
}
# selfcheck FILE.dom: the #selfcheck line the page's script wrote
selfcheck() { grep -o '<p id="selfcheck">[^<]*' "$1" | sed 's/.*>//'; }
# images_ok NAME FILE.dom MIN: the self-check ran, and every one of at least MIN images decoded
images_ok() {
  local s n d; s=$(selfcheck "$2")
  n=$(sed -n 's/.*images=\([0-9]*\).*/\1/p' <<<"$s"); d=$(sed -n 's/.*decoded=\([0-9]*\).*/\1/p' <<<"$s")
  if [ -n "$n" ] && [ "$n" = "$d" ] && [ "$n" -ge "$3" ]; then ok "$1: page loaded, $s"
  else notok "$1" "self-check says '${s:-nothing (page did not load or its script did not run)}', want images=decoded >= $3"; fi
}
# has NAME FILE PATTERN: the (extended) pattern is on one line of the file; hasz: anywhere, across lines
has() { if grep -qE -- "$3" "$2"; then ok "$1"; else notok "$1" "no /$3/ in $2"; fi; }
hasz() { if grep -zqE -- "$3" "$2"; then ok "$1"; else notok "$1" "no /$3/ in $2"; fi; }

# ---- fixture: results with a broken line, plots (one truncated), rows of every kind ----------
mkdir -p "$tmp/res/kfac" "$tmp/res/hermans" "$tmp/res/gossip/runs-quick" "$tmp/res/ppasgd" "$tmp/plots" "$tmp/empty"
echo '{"event":"summary","seed":1,"simulated":true,"git":"def5678"}' >"$tmp/res/gossip/runs-quick/g1-w0.jsonl"
echo '{"event":"summary","seed":1,"simulated":false}' >"$tmp/res/ppasgd/p1.jsonl"
# the engine's own metrics file, cut mid-line: every gossip claim keeps its row, marked with the error
printf '%s\n' '{"id": "G2-faster", "seed": 1, "metr' >"$tmp/res/gossip/measurements.jsonl"
cat >"$tmp/res/kfac/k2.jsonl" <<'EOF'
{"event":"config","paper":"kfac","seed":1,"simulated":true,"git":"abc1234","host":"fixture","cpu":"Fixture CPU","isa":"avx2"}
{"event":"summary","seed":1,"simulated":true,"speedup":1.9,"git":"abc1234","host":"fixture","cpu":"Fixture CPU","isa":"avx2"}
EOF
printf '%s\n' '{"event":"config","seed":1,"simulated":true}' '{"event":"summary","seed":1,"stal' \
  '{"event":"summary","seed":2,"simulated":true}' >"$tmp/res/hermans/h1.jsonl"
python3 - "$tmp/plots" <<'PY'
import struct, sys, zlib
def png(w, h, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * w for _ in range(h))
    ch = lambda k, d: struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d) & 0xffffffff)
    return b"\x89PNG\r\n\x1a\n" + ch(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
        ch(b"IDAT", zlib.compress(raw)) + ch(b"IEND", b"")
d = sys.argv[1]
open(d + "/kfac-k2.png", "wb").write(png(64, 40, (200, 60, 60)))
open(d + "/hermans-staleness.png", "wb").write(png(48, 32, (60, 60, 200)))
open(d + "/hermans-efficiency.png", "wb").write(png(30, 30, (60, 200, 60)))   # only in the gallery
open(d + "/gossip-curves.png", "wb").write(png(40, 40, (0, 0, 0))[:60])       # truncated
PY
cat >"$tmp/rows.json" <<'EOF'
[
 {"paper":"kfac","id":"K2","statement":"K-FAC scales better than linearly","source":"Fig. 5","kind":"reproduction",
  "rule":"speedup(4) / 4 >= 1","tolerance":0.05,"fixed_at":"abc1234",
  "history":[{"date":"2026-11-01","rule":"sim speedup only","reason":"the real 2-rank point was left out","verdict":"agrees"}],
  "seeds":[1.9,2.0,2.1],"mean":2.0,"min":1.9,"max":2.1,"paper_value":"2.5x at 4","ours":"2.0x at 4 (SIMULATED)",
  "verdict":"agrees","reason":"mean above the line","simulated":true,"data_set":"Fashion-MNIST","plot":"plots/out/kfac-k2.png"},
 {"paper":"kfac","id":"K2-comm","statement":"communication hidden","source":"Fig. 6","kind":"reproduction",
  "rule":"comm share < 0.2","tolerance":null,"fixed_at":"abc1234","history":[],"seeds":[0.4],"mean":0.4,"min":0.4,"max":0.4,
  "paper_value":"<20%","ours":"40%","verdict":"not comparable","reason":"ring pays for empty segments",
  "simulated":true,"data_set":"Fashion-MNIST","plot":"plots/out/kfac-k2.png"},
 {"paper":"kfac","id":"K4","statement":"large batch keeps accuracy","source":"Table 3","kind":"observation","rule":"acc(2048) >= acc(256) - 0.01",
  "tolerance":0.01,"fixed_at":"abc1234","history":[],"seeds":[0.85,0.86,0.84],"mean":0.85,"min":0.84,"max":0.86,
  "paper_value":"75.4%","ours":"85%","verdict":"observation","reason":"12 updates only","simulated":false,"data_set":"Fashion-MNIST","plot":null},
 {"paper":"hermans","id":"H1","statement":"staleness is n - 1","source":"Sec. 3.2","kind":"consistency","rule":"mode == n - 1",
  "tolerance":0,"fixed_at":"abc1234","history":[],"seeds":[],"mean":null,"min":null,"max":null,"paper_value":"n - 1","ours":"",
  "verdict":"no results","reason":"results/hermans/h1.jsonl has no summary","simulated":true,"data_set":"Fashion-MNIST",
  "plot":"plots/out/hermans-staleness.png"},
 {"paper":"gossip","id":"G1","statement":"gossip learns faster","source":"Fig. 3","kind":"reproduction","rule":"t2t(gossip) < t2t(allreduce)",
  "tolerance":0.02,"fixed_at":"abc1234","history":[],"seeds":[10,12,30],"mean":17.3,"min":10,"max":30,"paper_value":"faster",
  "ours":"17 s vs 18 s","verdict":"inconclusive","reason":"spread straddles","simulated":true,"data_set":"Fashion-MNIST",
  "plot":"plots/out/gossip-curves.png"},
 {"paper":"ppasgd","id":"P1","statement":"prediction <script>alert(1)</script> helps","source":"Fig. 2","kind":"reproduction","rule":"err(pp) < err(asgd)",
  "tolerance":null,"fixed_at":"abc1234","history":[],"seeds":[0.1],"mean":0.1,"min":0.1,"max":0.1,"paper_value":"yes","ours":"yes",
  "verdict":"disagrees","reason":"x","simulated":false,"data_set":"Fashion-MNIST","plot":"plots/out/ppasgd-none.png"}
]
EOF

# ---- the command line -------------------------------------------------------------------------
expect "report.py --help" python3 $REPORT --help
out=$(python3 $REPORT --rows "$tmp/nope.json" --out "$tmp/x.html" 2>&1); rc=$?
if [ "$rc" -ne 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q "nope.json" <<<"$out" && ! grep -q Traceback <<<"$out"; then
  ok "unreadable --rows: one line naming the file, exit $rc"
else notok "unreadable --rows" "exit $rc, output: $out"; fi
echo '[{"id": ' >"$tmp/badrows.json"
out=$(python3 $REPORT --rows "$tmp/badrows.json" --out "$tmp/x.html" 2>&1); rc=$?
if [ "$rc" -ne 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q "badrows.json" <<<"$out"; then ok "bad --rows JSON: one line naming the file"
else notok "bad --rows JSON" "exit $rc, output: $out"; fi

# ---- A: the fixture rows, every field rendered ------------------------------------------------
A=$tmp/a.html
expect "report from fixture rows" python3 $REPORT --rows "$tmp/rows.json" --results "$tmp/res" --plots "$tmp/plots" --out "$A"
dom "$A"; D=$A.dom
images_ok "fixture rows" "$D" 3
for id in K2 K2-comm K4 H1 G1 P1; do has "fixture claim $id present" "$D" "data-claim=\"$id\""; done
has "SIMULATED shown in capitals" "$D" '<span class="sim">SIMULATED</span>'
has "real rows labelled real" "$D" '<span class="real">real</span>'
has "verdict word shown with its colour" "$D" 'class="verdict v-notcomparable">not comparable<'
has "seeds and spread shown" "$D" 'mean 2, min-max 1.9-2.1, n = 3'
hasz "rule history shown (date, old rule, reason, old verdict)" "$D" '2026-11-01.*sim speedup only.*the real 2-rank point was left out.*agrees'
has "statement and figure shown" "$D" 'Fig. 5'
has "no results row says which bench to run" "$D" 'make bench-hermans'
has "broken results line is a visible error row naming the file" "$D" 'class="claim v-error".*hermans/h1.jsonl: line 2: not JSON'
has "truncated PNG is a visible error row naming the file" "$D" 'class="claim v-error".*gossip-curves.png: truncated PNG'
has "missing plot says make plots" "$D" 'ppasgd-none.png not rendered yet'
has "results provenance read from the files" "$D" 'commit abc1234.*CPU Fixture CPU'
has "results in sub-folders read too" "$D" 'results/gossip</code>: 2 files, 1 lines; commit def5678'
hasz "page provenance: commit, CPU/ISA, GPU, date" "$D" '<td>commit</td>.*<td>CPU</td>.*ISA (AVX-512|AVX2|no AVX2|unknown).*<td>GPU</td>.*<td>date</td>'
if grep -q '<script>alert(1)' "$D"; then notok "statement text escaped" "a row's <script> reached the page"
else ok "statement text escaped"; fi
if grep -qE '(src|href)="(https?:)?//' "$A"; then notok "self-contained" "external reference: $(grep -oE '(src|href)="(https?:)?//[^"]*' "$A" | head -1)"
else ok "self-contained (no external src/href)"; fi

# ---- B: through the engine: every registry claim id, no results, broken line ------------------
B=$tmp/b.html
if [ -f bench/verdict.py ]; then
  expect "report through bench/verdict.py" python3 $REPORT --results "$tmp/res" --plots "$tmp/plots" --out "$B"
  dom "$B"; D=$B.dom
  images_ok "engine rows" "$D" 1
  ids=$(python3 - <<'PY'
import glob, tomllib
ids = []
def walk(x):
    if isinstance(x, dict):
        if isinstance(x.get("id"), str) and ("rule" in x or "statement" in x):
            ids.append(x["id"])
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
for f in sorted(glob.glob("bench/claims/*.toml")):
    with open(f, "rb") as fh: walk(tomllib.load(fh))
print(" ".join(ids))
PY
)
  if [ -z "$ids" ]; then notok "registry claim ids" "bench/claims/*.toml gave no claim ids"; fi
  # a claim measured at several settings gives rows "ID instance" (bench/verdict.py)
  miss=(); for id in $ids; do grep -qF -e "data-claim=\"$id\"" -e "data-claim=\"$id " "$D" || miss+=("$id"); done
  [ ${#miss[@]} -eq 0 ] && ok "every registry claim id present ($(wc -w <<<"$ids") ids)" \
    || notok "every registry claim id present" "missing: ${miss[*]}"
  has "broken results line: visible error row (engine path)" "$D" 'class="claim v-error".*hermans/h1.jsonl'
  has "broken engine metrics file: visible error row naming it" "$D" 'data-error="1".*gossip/measurements.jsonl'
  C=$tmp/c.html
  expect "report with no results at all" python3 $REPORT --results "$tmp/empty" --plots "$tmp/empty" --out "$C"
  dom "$C"; D=$C.dom
  images_ok "no results" "$D" 0
  has "no results: the note names the benches to run" "$D" 'No results at all.*make bench-kfac'
  if grep -oE 'class="verdict [^"]*">[^<]*' "$D" | grep -v '>no results$' | grep -vq '>error$'; then
    notok "no results: every claim reads no results" "$(grep -oE 'class="verdict [^"]*">[^<]*' "$D" | sort | uniq -c | tr '\n' ' ')"
  else ok "no results: every claim reads no results"; fi
else
  notok "report through bench/verdict.py" "bench/verdict.py is missing"
fi

# ---- C: a failing engine and one printing no JSON: error rows, still a page ------------------
printf 'import sys\nprint("[{\\"id\\": \\"K2\\", \\"verd")\nsys.exit(3)\n' >"$tmp/badengine.py"
E=$tmp/e.html
expect "report with a failing engine still writes a page" python3 $REPORT --engine "$tmp/badengine.py" \
  --results "$tmp/res" --plots "$tmp/plots" --out "$E"
dom "$E"; D=$E.dom
images_ok "failing engine" "$D" 0
has "failing engine: error row with its exit status" "$D" 'class="claim v-error".*badengine.py --all .*--format json exited with status 3'
has "failing engine: error row for its bad JSON" "$D" 'class="claim v-error".*badengine.py --all .*--format json printed no valid JSON'
finish
