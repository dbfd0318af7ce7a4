#!/usr/bin/env bash
# bench/collectives/run.sh — `make bench-collectives`: MPI (and NCCL where a CUDA device exists)
# Reduce / Allgather / Allreduce from 4 B to 64 MiB at 2 and 4 ranks, the K-FAC paper's Fig. 4
# analogue (K1), checked against an independent OSU-style loop run in the same session, with the
# in-run memcpy bandwidth as the single-node limit and the algorithm Open MPI's tuned component
# picked (bench/collectives/algo.py). Writes results/collectives/*.jsonl, summary.md, table.md
# and plots/out/collectives-*.png|pdf. QUICK=1: 4 B..1 MiB, one round, one algorithm probe (~20 s here).
# This machine has 2 cores: 4 ranks are oversubscribed, so they run with --oversubscribe
# --bind-to none and mpi_yield_when_idle=1 (a waiting rank yields its core); the OSU-style
# loop runs under exactly the same flags, alternating with pdl coll (REPS rounds, best of each).
set -u
cd "$(dirname "$0")/../.."
source bench/lib.sh
bench_init collectives
export OMP_NUM_THREADS=1
command -v mpicc >/dev/null 2>&1 || { echo "mpicc not found (make deps installs libopenmpi-dev)" >&2; exit 1; }
[ -x "$PDL" ] || { echo "$PDL not built (run make)" >&2; exit 1; }

RANKS=(2 4)
OPS=(reduce allgather allreduce)
if [ -n "$QUICK" ]; then
  MAX=1M; MAXB=$((1 << 20)); FACTOR=2; PROBES=(4:1048576); PROBE_OPS=(allreduce)
else
  # at 2 ranks most algorithms send the same traffic (one exchange), so one size is enough there
  MAX=64M; MAXB=$((64 << 20)); FACTOR=2; PROBES=(2:65536 4:4 4:65536 4:4194304); PROBE_OPS=(reduce allgather allreduce)
fi
CMP_MAXB=$((4 << 20)); REPS=2
[ -n "$QUICK" ] && { CMP_MAXB=$((1 << 20)); REPS=1; }
mpiflags() { if [ "$1" -gt 2 ]; then echo "--mca mpi_yield_when_idle 1"; fi; }
rc=0

# --- the OSU-style loop (no Debian package ships the OSU micro-benchmarks) ---
OSU=build/bench/osu_loop
mkdir -p build/bench
if [ ! "$OSU" -nt bench/collectives/osu_loop.c ]; then
  mpicc -O2 -Wall -o "$OSU" bench/collectives/osu_loop.c || { echo "cannot build $OSU" >&2; exit 1; }
fi

# --- memcpy bandwidth: 1 rank alone, then 2 ranks copying at once (both cores) ---
run_memcpy() {
  rm -f "$RES/memcpy.jsonl"
  mpirun_cmd -np 1 "$PDL" coll --op memcpy -m 64M -i 10 -x 2 --json "$RES/memcpy.jsonl" &&
  mpirun_cmd -np 2 "$PDL" coll --op memcpy -m 64M -i 10 -x 2 --json "$RES/memcpy.jsonl"
}
done_or_run memcpy run_memcpy || exit 1

sweep() { # sweep BACKEND OP NP: one pdl coll run over the whole size range, appended
  # shellcheck disable=SC2046
  mpirun_cmd $(mpiflags "$3") -np "$3" "$PDL" coll --backend "$1" --op "$2" -m "4:$MAX" -f "$FACTOR" \
    --json "$RES/$1-$2-np$3.jsonl" --timeout 120
}
osu() { # osu OP NP: the OSU-style loop at every 4th power of two up to CMP_MAXB (OSU's allgather
  # size is per rank), same flags and iteration counts as pdl coll's defaults, appended
  local max=$CMP_MAXB
  [ "$1" = allgather ] && max=$((CMP_MAXB / $2))
  # shellcheck disable=SC2046
  mpirun_cmd $(mpiflags "$2") -np "$2" "$OSU" "$1" 4 "$max" 16 100 20 10 2 >> "$RES/osu-$1-np$2.txt"
}
# REPS rounds of (pdl sweep, OSU-style loop) per op and rank count: the two programs alternate, so
# both see the same machine load; the plot's band spans ranks and rounds, and summary.py compares
# the best round of each program
measure() { # measure OP NP
  local r
  rm -f "$RES/mpi-$1-np$2.jsonl" "$RES/osu-$1-np$2.txt"
  for ((r = 1; r <= REPS; r++)); do sweep mpi "$1" "$2" || return 1; osu "$1" "$2" || return 1; done
}
cat /proc/loadavg > "$RES/load-start.txt" 2>/dev/null
for np in "${RANKS[@]}"; do for op in "${OPS[@]}"; do
  done_or_run "mpi-$op-np$np" measure "$op" "$np" || rc=1
done; done
cat /proc/loadavg > "$RES/load-end.txt" 2>/dev/null

# --- NCCL where devices exist; the backend prints "skipped: no CUDA device" otherwise ---
nccl_measure() { # nccl_measure OP NP: REPS sweeps
  local r
  rm -f "$RES/nccl-$1-np$2.jsonl"
  for ((r = 1; r <= REPS; r++)); do sweep nccl "$1" "$2" || return 1; done
}
nccl_state=$("$PDL" coll --backend nccl -m 4 -i 1 -x 0 2>&1 | tail -1)
case "$nccl_state" in
  skipped:*) echo "[collectives] nccl: $nccl_state"; echo "$nccl_state" > "$RES/nccl-status.txt" ;;
  *) ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
     echo "ran on ${ngpu:-?} GPU(s) of this node" > "$RES/nccl-status.txt"
     for np in "${RANKS[@]}"; do
       if [ "${ngpu:-0}" -lt "$np" ]; then echo "[collectives] nccl np=$np: only ${ngpu:-0} GPU(s), skipped"; continue; fi
       for op in "${OPS[@]}"; do done_or_run "nccl-$op-np$np" nccl_measure "$op" "$np" || rc=1; done
     done ;;
esac

# --- which algorithm Open MPI chose (traffic fingerprints, see algo.py) ---
probe_algos() {
  rm -f "$RES/algorithms.jsonl"
  local p np s op root=()
  [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  for p in "${PROBES[@]}"; do for op in "${PROBE_OPS[@]}"; do
    np=${p%%:*}; s=${p#*:}
    # shellcheck disable=SC2046
    python3 bench/collectives/algo.py --pdl "$PDL" --op "$op" --np "$np" --size "$s" --json "$RES/algorithms.jsonl" \
      -- mpirun --oversubscribe --bind-to none "${root[@]}" $(mpiflags "$np") || return 1
  done; done
}
if command -v ompi_info >/dev/null 2>&1; then done_or_run algorithms probe_algos || rc=1
else echo "[collectives] algorithms: not Open MPI (no ompi_info): cannot tell"; fi

# --- summary, plot data, plots, table ---
python3 bench/collectives/summary.py "$RES" || rc=1
render_plot plots/collectives.gp || rc=1
table_row K1 "Fig. 4: NCCL beats MPI for large Reduce/Allgather (2 nodes, TSUBAME3.0; ours: 2 ranks on one node)" \
  "$(cat "$RES/k1.txt" 2>/dev/null || echo "no data")" "synthetic validated buffers" real \
  "$(cat "$RES/k1-verdict.txt" 2>/dev/null || echo "n/a")"
table_print
cat "$RES/summary.md"
exit $rc
