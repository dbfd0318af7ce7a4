#!/usr/bin/env bash
# bench/gpu/run.sh — `make bench-gpu` (issue 35 H): pdl's training step on a CUDA device beside the
# same net in PyTorch, in one run on one machine. For each batch in BATCHES (1 16 128 512):
#   pdl speed --device cuda, eager, with the whole step as one CUDA graph (--graph), and as pdl
#   train runs (--chunk 64: its resident chunks of 64 steps, each replayed as one CUDA graph), conv
#   PDL_CUDA_CONV (default auto: per shape the faster of cuDNN and im2col + cuBLAS);
#   bench/gpu/torch_speed_cuda.py: PyTorch FP32 (TF32 off, cudnn.benchmark on, the batch on the
#   device), eager and CUDA-graphed, when a PyTorch with CUDA is importable (else those cells say so);
#   cuBLAS SGEMM 4096^3 FP32 (the roofline) comes in pdl speed's own JSON (sgemm_gflops).
# Alternates the sides batch by batch so both see the same machine state. Writes
# results/gpu/speed.jsonl (one line per run, "side" and "mode" added), results/gpu/table.md and
# results/gpu/gpu-speed.dat (bench/gpu/summarize.py), plots/out/gpu-speed.png|pdf.
# Without a CUDA device it prints "skipped: no CUDA device" and exits 0, writing nothing.
# PDL=path runs another pdl (ci/device/check.sh passes the bundle's); REPEATS (5) windows each.
cd "$(dirname "$0")/../.."
source bench/lib.sh
PDL=${PDL:-bin/pdl}
BATCHES=${BATCHES:-"1 16 128 512"}
REPEATS=${REPEATS:-5}
[ -n "$QUICK" ] && { BATCHES=${QUICK_BATCHES:-"1 16"}; REPEATS=2; }
probe=$("$PDL" speed --device cuda --batch 1 --repeats 1 2>&1); rc=$?
if [ $rc -ne 0 ]; then
  if grep -q "no CUDA device" <<<"$probe"; then echo "skipped: $(grep -o "no CUDA device.*" <<<"$probe" | head -1)"; exit 0; fi
  echo "[gpu] pdl speed --device cuda failed (exit $rc): $(tail -2 <<<"$probe")" >&2; exit 1
fi
bench_init gpu
OUT=$RES/speed.jsonl
: > "$OUT.tmp"
have_torch=0
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && have_torch=1
[ $have_torch = 1 ] || echo "[gpu] no PyTorch with CUDA here: the PyTorch columns will say 'not run'" >&2
# one JSON line from a command's output, tagged: emit SIDE MODE BATCH CMD...
emit() {
  local side=$1 mode=$2 b=$3; shift 3
  local line; line=$("$@" 2>/dev/null | grep '^{' | tail -1)
  if [ -z "$line" ]; then echo "[gpu] $side $mode batch $b: no result" >&2
    printf '{"side":"%s","mode":"%s","batch":%s,"failed":true}\n' "$side" "$mode" "$b" >> "$OUT.tmp"; return 1; fi
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); j.update(side=sys.argv[2], mode=sys.argv[3], batch=int(sys.argv[4])); print(json.dumps(j))' \
    "$line" "$side" "$mode" "$b" >> "$OUT.tmp"
}
rc=0
for b in $BATCHES; do
  echo "[gpu] batch $b" >&2
  emit pdl eager "$b" "$PDL" speed --device cuda --batch "$b" --repeats "$REPEATS" || rc=1
  emit pdl graph "$b" "$PDL" speed --device cuda --batch "$b" --repeats "$REPEATS" --graph || rc=1
  emit pdl chunk "$b" "$PDL" speed --device cuda --batch "$b" --repeats "$REPEATS" --chunk 64 || rc=1
  if [ $have_torch = 1 ]; then
    for m in eager graph; do emit torch $m "$b" python3 bench/gpu/torch_speed_cuda.py "$b" $m "$REPEATS" || rc=1; done
  fi
done
mv "$OUT.tmp" "$OUT"
python3 bench/gpu/summarize.py "$RES" || rc=1
render_plot plots/gpu-speed.gp
cat "$RES/table.md"
exit $rc
