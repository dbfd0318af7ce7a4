#!/usr/bin/env bash
# tests/t_bench_gpu.sh — make bench-gpu (issue 35 H) without a GPU: bench/gpu/summarize.py on the
# results of a real H200 run (tests/data/gpu-h200/speed.jsonl: a3bc1e0, ci/device/check.sh's speed
# logs) must give its table, targets and plot data; its errors name the file; bench/gpu/run.sh on a
# machine without a CUDA device says "skipped: no CUDA device" and exits 0 (with one, it runs: the
# device check is ci/device/check.sh's).
# pdl-test: cpu=3
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cp tests/data/gpu-h200/speed.jsonl "$T/"
if out=$(python3 bench/gpu/summarize.py "$T" 2>&1); then
  tab=$T/table.md
  grep -q "| 1 | 2192 (2088-2301) | 5441 (5440-5442) | not run | 3714 (3713-3715) | PyTorch CUDA graph: 1.47x, met |" "$tab" \
    && ok "gpu table: batch 1, pdl graph 1.47x PyTorch's graph, met" || notok "gpu table: batch 1" "$(grep '^| 1 ' "$tab")"
  grep -q "| 512 | .* | PyTorch eager: 0.51x, not met | 0.42x | 0.49x |" "$tab" \
    && ok "gpu table: batch 512 judged against PyTorch eager" || notok "gpu table: batch 512" "$(grep '^| 512 ' "$tab")"
  grep -q "Roofline: cuBLAS SGEMM 4096^3 FP32 49496-49707 GFLOP/s" "$tab" && grep -q "NVIDIA H200" "$tab" \
    && ok "gpu table: roofline and device named" || notok "gpu table: roofline" "$(tail -3 "$tab")"
  [ "$(grep -vc '^#' "$T/gpu-speed.dat")" = 4 ] && awk '!/^#/ && NF != 16 {bad=1} END {exit bad}' "$T/gpu-speed.dat" \
    && ok "gpu plot data: 4 batches x 16 columns" || notok "gpu plot data" "$(cat "$T/gpu-speed.dat")"
  grep -q "^| 16 | .* | not run | - |$" "$tab" && ok "gpu table: pdl train's chunks 'not run' in a run without them" \
    || notok "gpu table: chunk columns" "$(grep '^| 16 ' "$tab")"
  if command -v gnuplot >/dev/null; then
    mkdir -p "$T/r/gpu" && cp "$T/gpu-speed.dat" "$T/r/gpu/" &&
      gnuplot -e "resdir='$T/r'; outdir='$T'" plots/gpu-speed.gp 2>"$T/gp.err" && [ -s "$T/gpu-speed.png" ] \
      && ok "plots/gpu-speed.gp renders" || notok "plots/gpu-speed.gp" "$(head -2 "$T/gp.err")"
  fi
else notok "bench/gpu/summarize.py on the H200 results" "$out"; fi
# errors name the file and never trace back
mkdir -p "$T/empty" "$T/bad"
out=$(python3 bench/gpu/summarize.py "$T/empty" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "empty/speed.jsonl not found" <<<"$out" && ! grep -q Traceback <<<"$out" \
  && ok "summarize: missing results named" || notok "summarize: missing results" "rc $rc: $out"
# a bad line before the last: exit 1 naming file and line (the engine's read_jsonl); a torn last line
# (a run killed mid-write) is skipped with a warning naming it
printf 'not json\n{"side":"pdl","mode":"eager","batch":1,"img_per_s":1,"img_per_s_min":1,"img_per_s_max":1}\n' > "$T/bad/speed.jsonl"
out=$(python3 bench/gpu/summarize.py "$T/bad" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "bad/speed.jsonl line 1: not JSON" <<<"$out" && ! grep -q Traceback <<<"$out" \
  && ok "summarize: a bad line named by file and line" || notok "summarize: bad line" "rc $rc: $out"
printf '{"side":"pdl","mode":"eager","batch":1,"img_per_s":1,"img_per_s_min":1,"img_per_s_max":1}\n{"side":"pd' > "$T/bad/speed.jsonl"
out=$(python3 bench/gpu/summarize.py "$T/bad" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "bad/speed.jsonl line 2: torn last line skipped" <<<"$out" && ! grep -q Traceback <<<"$out" \
  && ok "summarize: a torn last line skipped with a warning naming it" || notok "summarize: torn last line" "rc $rc: $out"
# no CUDA device here (dev machines and CI): the bench skips, exit 0, nothing written
if ! "$PDL" speed --device cuda --batch 1 --repeats 1 >/dev/null 2>&1; then
  out=$(PDL_RESULTS="$T/res" PDL="$PDL" bash bench/gpu/run.sh 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q "^skipped: no CUDA device" <<<"$out" && [ ! -e "$T/res/gpu" ] \
    && ok "bench-gpu without a device: skipped, exit 0" || notok "bench-gpu without a device" "rc $rc: $out"
else echo "skip - bench-gpu's no-device path: this machine has a CUDA device"; fi
finish
