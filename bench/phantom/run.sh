#!/usr/bin/env bash
# bench/phantom/run.sh — the timing-only backend at the papers' scale (issue 47; docs/SIM.md, "The
# phantom backend"). Two steps (ONLY=speed|p4t runs one):
#   speed  PP-ASGD on its ImageNet-1000 net (below) at 224x224, 256 K80 dies (tsubame-kfc:nodes=32,
#          8 per node) x 100 updates on --device phantom: prints the run's wall and CPU seconds and its
#          peak memory (max RSS, /usr/bin/time) against the issue's 60 s and 2 GB, and the run's
#          simulated figures. Written to $RES/speed.jsonl.
#   p4t    P4's scaling shape, timing only: PP-ASGD and SSGD at 1, 2, 4, ..., 256 GPUs (1 to 8 per node,
#          then 8 per node), STEPS4 updates each; $RESROOT/ppasgd/p4t-{ppasgd,ssgd}-<G>.jsonl, then
#          bench/phantom/summarize.py hands the examples/s per GPU count to the verdict engine (claim
#          P4-scaling-timing of bench/claims/ppasgd.toml, written before the first run) and prints the
#          table with B_bar, S_bar and F_U (Fig. 4c's quantities) and a plot.
# The net: the paper's form CCPCPCPCPCF (Fig. 4 caption: 3x3 convolutions, non-overlapping max-pooling,
# activation max(a, 0.01a)) with widths and the 224x224 input ours (the paper gives neither); the paper
# mentions no stride and no batch normalization, so none is approximated. 51.8 M parameters (207 MB),
# 26 GFLOP per image forward + backward. Data: shape: (no pixels; a phantom run draws none).
# Timing-only: no loss, no accuracy; the numbers are simulated seconds on the platform's assumed K80
# rate (1500 GFLOP/s a die) and FDR InfiniBand.
set -u
cd "$(dirname "$0")/../.." || exit 1
PDL=${PDL:-bin/pdl}
RESROOT=${PDL_RESULTS:-results}
RES=$RESROOT/phantom; mkdir -p "$RES" "$RESROOT/ppasgd"
NET=${NET:-"leaky C64 C64 P C128 P C256 P C256 P C256 S1000"}
DATA=${DATA:-shape:c=3,h=224,w=224,classes=1000}
STEPS=${STEPS:-100}; STEPS4=${STEPS4:-20}; SIZES=${SIZES:-"1 2 4 8 16 32 64 128 256"}
ONLY=${ONLY:-}
COMMON=(--device phantom --runtime sim --data "$DATA" --net "$NET" --batch 1 --lr 0.0001 --quiet)
export PDL_NO_PROGRESS=1
[ -x "$PDL" ] || { echo "bench/phantom: $PDL not found (make build)" >&2; exit 2; }

plat() { local g=$1; if [ "$g" -le 8 ]; then echo "tsubame-kfc:nodes=1,gpus=$g"; else echo "tsubame-kfc:nodes=$((g / 8))"; fi; }

if [ -z "$ONLY" ] || [ "$ONLY" = speed ]; then
  t=$(mktemp); trap 'rm -f "$t" "$t.time"' EXIT
  /usr/bin/time -f '%e %U %S %M' -o "$t.time" "$PDL" train --algo ppasgd "${COMMON[@]}" --platform tsubame-kfc:nodes=32 \
    --steps "$STEPS" > "$t" || { echo "bench/phantom speed: the run failed" >&2; cat "$t.time" >&2; exit 1; }
  python3 - "$t" "$t.time" "$RES/speed.jsonl" "$STEPS" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
wall, user, sys_, rss_kb = (float(x) for x in open(sys.argv[2]).read().split()[-4:])
row = {"bench": "phantom-speed", "algo": s["algo"], "platform": s["platform"], "workers": s["workers"],
       "updates": s["updates"], "wall_s": wall, "cpu_s": user + sys_, "max_rss_mb": rss_kb / 1024,
       "sim_time_s": s["time_s"], "time_per_update_s": s["time_per_update_s"], "S_bar": s["S_bar"],
       "B_bar": s["B_bar"], "F_U": s["F_U"], "git": s.get("git")}
open(sys.argv[3], "a").write(json.dumps(row) + "\n")
print("phantom speed: %s, %d GPUs x %d updates of the ImageNet-1000 net: wall %.1f s (CPU %.1f s), max RSS %.0f MB"
      % (row["algo"], row["workers"], row["updates"], wall, row["cpu_s"], row["max_rss_mb"]))
print("  issue 47's bounds: under 60 s: %s; under 2 GB: %s" % ("yes" if wall < 60 else "NO", "yes" if rss_kb < 2 * 1024 * 1024 else "NO"))
print("  simulated: %.3f s per update, B_bar %.1f, S_bar %.3f, F_U %.2f updates/s" % (row["time_per_update_s"], row["B_bar"], row["S_bar"], row["F_U"]))
PY
fi

if [ -z "$ONLY" ] || [ "$ONLY" = p4t ]; then
  for g in $SIZES; do
    for a in ppasgd ssgd; do
      f=$RESROOT/ppasgd/p4t-$a-$g.jsonl; rm -f "$f"
      "$PDL" train --algo "$a" "${COMMON[@]}" --platform "$(plat "$g")" --steps "$STEPS4" --results "$f" >/dev/null \
        || { echo "bench/phantom p4t: $a at $g GPUs failed" >&2; exit 1; }
    done
    echo "p4t: $g GPUs done"
  done
  [ -n "${NOSUM:-}" ] || python3 bench/phantom/summarize.py "$RESROOT/ppasgd" || exit 1   # (bench-ppasgd summarizes itself)
fi
