#!/usr/bin/env bash
# bench/ppasgd/run.sh — `make bench-ppasgd`: reproduces the PP-ASGD paper (Sato et al. 2017,
# docs/PAPERS.md §1, results P1-P4) on Fashion-MNIST (CIFAR-10 with DATA=cifar10:DIR) with the
# PP-ASGD CIFAR preset, on the real runtime (threads, MPI ranks) and the sim runtime (SimGrid,
# real numerics, simulated time). One function per experiment, each run through done_or_run
# (complete experiments are skipped unless FORCE=1; an interrupted one re-runs from scratch and
# never leaves a half result marked complete), then bench/ppasgd/summarize.py derives the .dat
# files, the plots and the paper-vs-ours table. QUICK=1: smaller subsets, same code paths.
# Hyper-parameters are environment variables (defaults below) and are recorded in every JSON line.
# SEEDS (full bench "1 2 3", QUICK "1"): the seeds of P2 (emulated staleness, deterministic per
# seed) and P3 (32 simulated devices), as the claims registry asks (bench/claims/ppasgd.toml: seeds
# = 3), and of P1 (p1a, p1b). Seed 1 keeps the plain names (p2-ppasgd-S9), seed s > 1 adds "-sS" (p2-ppasgd-S9-s2). A run
# is kept when its results file has a summary and its .sig file holds the same command line, so
# adding a seed (or re-running an interrupted experiment) reuses the complete runs of the others;
# the done marks of p1, p2 and p3 name their seeds. P4 and the hybrid runs stay at seed 1.
# Budget (AMD EPYC, 2 shared cores): a P2 seed is 7 one-process runs, a P3 seed 2 sim runs.
set -u
cd "$(dirname "$0")/../.." || exit 1
# SCALE=paper: the paper's own experiments at its size (bench/scale.py, profile bench/ppasgd/paper.toml)
case ${SCALE:-} in '') ;; paper) exec python3 bench/scale.py ppasgd ;; *) echo "[ppasgd] SCALE=$SCALE: not a scale (paper, or unset for the stand-ins)" >&2; exit 2 ;; esac
source bench/lib.sh
bench_init ppasgd

DATA=${DATA:-fashion-mnist}; [ -z "$DATA" ] && DATA=fashion-mnist
# QUICK uses a narrower net of the same CCPCPCPFFF form (1/16 of the FLOPs): same code paths, minutes less
if [ -n "$QUICK" ]; then NET=${NET:-"leaky C8 C8 P C16 P C32 P F64 F64 S10"}; else NET=${NET:-ppasgd-cifar}; fi
if [ -n "$QUICK" ]; then NTR=${NTR:-2000}; NTE=${NTE:-500}; EP2=${EP2:-1}; SIZES=${SIZES:-"1 4 16"}; EP4=${EP4:-0.5}; HSTEPS=${HSTEPS:-40}; SEEDS=${SEEDS:-1}
else NTR=${NTR:-10000}; NTE=${NTE:-2000}; EP2=${EP2:-3}; SIZES=${SIZES:-"1 4 16 64 256"}; EP4=${EP4:-2}; SEEDS=${SEEDS:-"1 2 3"}; fi
LR2=${LR2:-0.00005}; B2=${B2:-16}            # P1a/P2: emulated staleness (the paper's CIFAR runs)
B1=${B1:-auto}; LR1=${LR1:-0.00005}          # P1b: real threads; auto = b from a pilot run so S_bar lands near the paper's 7-8.5
BH=${BH:-8}                                  # hybrid runs' sub-batch
RATE=${RATE:-8}; B3=${B3:-1}; LR3=${LR3:-0.0001}   # P3/P4 sim: device GFLOP/s giving S_bar ~ 8.4 at 32 devices
                                             # (the paper's 8-9; 10 gave 6.9, and P3 1.5x instead of 2.0x)
                                             # (changed with that result in hand: P3's history in bench/claims/ppasgd.toml)
TARGET4=${TARGET4:-0.35}
COMMON=(--data "$DATA" --net "$NET" --train-subset "$NTR" --test-subset "$NTE" --warmup epoch --quiet)
export PDL_NO_PROGRESS=1

fresh() { rm -f "$RES/$1".jsonl; }
sfx() { [ "$1" = 1 ] || echo "-s$1"; }   # the run-name suffix of seed $1
# seeded NAME ARGS...: pdl train ARGS --results $RES/NAME.jsonl, unless that file already has a
# summary from the same ARGS (NAME.sig) and FORCE is unset; the .sig is written after success only
seeded() {
  local name=$1; shift
  local sig; sig=$(printf '%s\n' "$@" | md5sum | cut -c1-16)
  if [ -z "$FORCE" ] && [ "$(cat "$RES/$name.sig" 2>/dev/null)" = "$sig" ] &&
     run_complete "$RES/$name.jsonl"; then return 0; fi
  rm -f "$RES/$name.jsonl" "$RES/$name.sig"
  "$PDL" train "$@" --results "$RES/$name.jsonl" >/dev/null || return
  echo "$sig" > "$RES/$name.sig"
}

# P1 (Fig. 3 right): prediction error ||w_{t+S0+1} - f_S(w_t)|| for S = 0..13 after one epoch,
# mean of 100 updates; (a) emulated S0 = 7, (b) a real threaded run (1 update + 1 grad thread)
# whose S0 = floor(S_bar) is measured.
# Per seed (SEEDS; the registry asks 3 for P1a and P1b): seed 1 keeps the plain names p1a, p1b,
# seed s > 1 adds "-sS"; P1b's b is chosen once, by the pilot, for every seed.
p1() {
  local s x
  fresh p1b-pilot
  local spe=$((NTR / B2))
  for s in $SEEDS; do x=$(sfx "$s"); fresh "p1a$x"
    "$PDL" train "${COMMON[@]}" --algo ppasgd --staleness emulate:7 --batch "$B2" --lr "$LR2" \
      --steps $((spe + 120)) --probe 100 --seed "$s" --tag p1a --results "$RES/p1a$x.jsonl" >/dev/null || return
  done
  local b1=$B1
  [ "$b1" = auto ] && { b1=$(p1b_batch) || return; }
  for s in $SEEDS; do x=$(sfx "$s"); fresh "p1b$x"
    "$PDL" train "${COMMON[@]}" --algo ppasgd --staleness auto --grad-threads 1 --batch "$b1" --lr "$LR1" \
      --epochs 1.5 --probe 100 --seed "$s" --tag p1b --results "$RES/p1b$x.jsonl" >/dev/null || return
  done
}

# S_bar = 1 + F_U/F_G is a property of the machine: the update's cost (vector passes over w) over
# a sub-batch gradient's (~b x FLOPs/image). A pilot at b = 8 measures it and b is scaled so that
# F_U/F_G ~ 6.5 (S_bar ~ 7.5, the paper's S0 = 7 .. S_bar 8.5); the pilot goes to p1b-pilot.jsonl
# and the choice to stderr. The pilot must see enough gradients: it was 300 updates until the
# update role got fast (F_U ~4,500/s on the AMD EPYC): 300 updates then took 0.07 s and held 6
# sub-batches, the first with its start-up, so it read S_bar 51 and b fell to 1. Now it starts at
# 3000 updates and runs 4x longer (at most twice) until it holds 30 sub-batches (QUICK's narrow net
# under make test's load had 20 in 3000); a pilot that never does fails loudly.
p1b_batch() {
  local sb b steps=3000 try
  for try in 1 2 3; do
    sb=$("$PDL" train "${COMMON[@]}" --algo ppasgd --staleness auto --grad-threads 1 --batch 8 --lr "$LR1" \
      --steps "$steps" --tag p1b-pilot --results "$RES/p1b-pilot.jsonl" | tail -1 |
      python3 -c 'import json,sys
d = json.loads(sys.stdin.read())
n = d["B_bar"] * d["updates"]
print("%s %.0f" % (d["S_bar"], n) if n >= 30 else "short %.0f %g" % (n, d["S_bar"]))') || return
    [ "${sb%% *}" != short ] && break
    echo "[ppasgd] p1b: pilot of $steps updates held only $(echo "$sb" | cut -d' ' -f2) sub-batches (S_bar $(echo "$sb" | cut -d' ' -f3)): 4x longer" >&2
    steps=$((steps * 4)); rm -f "$RES/p1b-pilot.jsonl"
  done
  [ "${sb%% *}" != short ] || { echo "p1b pilot: under 30 sub-batches in $((steps / 4)) updates: S_bar is not a measurement" >&2; return 1; }
  sb=${sb%% *}
  b=$(python3 -c "import sys; s=float(sys.argv[1]); print(max(1, min(64, round(8 * 6.5 / max(s - 1, 0.1)))))" "$sb") || return
  echo "[ppasgd] p1b: pilot at b=8 measured S_bar $sb -> b=$b" >&2
  echo "$b"
}

# P2 (Fig. 2): SSGD, ASGD and PP-ASGD under emulated staleness S = 3, 9, 27 (one process), per seed.
p2() {
  local S a s x
  for s in $SEEDS; do x=$(sfx "$s")
    seeded "p2-ssgd$x" "${COMMON[@]}" --algo ssgd --batch "$B2" --lr "$LR2" --epochs "$EP2" \
      --eval-every-examples $((NTR / 8)) --seed "$s" --tag p2 || return
    for S in 3 9 27; do
      for a in asgd-dist ppasgd; do
        seeded "p2-$a-S$S$x" "${COMMON[@]}" --algo $a --staleness emulate:$S --batch "$B2" --lr "$LR2" --epochs "$EP2" \
          --eval-every $((NTR / 8 / B2)) --seed "$s" --tag p2 || return
      done
    done
  done
}

# P3 (Fig. 3 left): ASGD vs PP-ASGD on 32 simulated devices (4 nodes x 8), S measured online, per seed.
p3() {
  local a s
  for s in $SEEDS; do
    for a in asgd-dist ppasgd; do
      seeded "p3-$a$(sfx "$s")" "${COMMON[@]}" --algo $a --runtime sim --platform cluster:nodes=4,gpus=8 --device-rate "$RATE" \
        --batch "$B3" --lr "$LR3" --epochs "$EP4" --eval-every-examples $((NTR / 8)) --seed "$s" --tag p3 || return
    done
  done
}

# P4 (Fig. 4): time to a target test error for SSGD and PP-ASGD on 1..256 simulated devices of the
# paper's cluster (8 devices per node, FDR InfiniBand), relative to one device.
p4() {
  local D a nodes gpus
  for D in $SIZES; do
    gpus=$((D < 8 ? D : 8)); nodes=$((D / gpus))
    for a in ssgd ppasgd; do
      fresh "p4-$a-D$D"
      "$PDL" train "${COMMON[@]}" --algo $a --runtime sim --platform "cluster:nodes=$nodes,gpus=$gpus" \
        --device-rate "$RATE" --batch "$B3" --lr "$LR3" --epochs "$EP4" --eval-every-examples $((NTR / 10)) \
        --target-err "$TARGET4" --tag p4 --results "$RES/p4-$a-D$D.jsonl" >/dev/null || return
    done
  done
}

# Real hybrid runs: R MPI ranks x 1 grad thread, F_U, F_G, S_bar logged.
hybrid() {
  local R
  for R in 1 2 4; do
    fresh "hybrid-R$R"
    OMP_NUM_THREADS=1 mpirun_cmd -np $R "$PDL" train "${COMMON[@]}" --algo ppasgd --grad-threads 1 --batch "$BH" \
      --lr "$LR1" --steps "${HSTEPS:-400}" --threads 1 --tag hybrid --results "$RES/hybrid-R$R.jsonl" >/dev/null || return
  done
}

# P4 at the paper's scale, timing only (issue 47: --device phantom, the ImageNet-1000 net at 224x224 on
# 1-256 simulated K80 dies of TSUBAME-KFC/DL; bench/phantom/run.sh's step p4t, its runs
# $RES/p4t-*.jsonl; QUICK: 1, 16 and 256 GPUs, 5 updates a run, instead of 1, 2, 4, ..., 256 and 20)
p4t() {
  if [ -n "$QUICK" ]; then ONLY=p4t PDL_RESULTS=$RESROOT SIZES="1 16 256" STEPS4=5 NOSUM=1 bench/phantom/run.sh
  else ONLY=p4t PDL_RESULTS=$RESROOT NOSUM=1 bench/phantom/run.sh; fi
}

rc=0
ST=; [ "$SEEDS" = 1 ] || ST=-seeds-$(echo $SEEDS | tr ' ' '-')   # the done marks of p1, p2 and p3 name their seeds
for e in p1 p2 p3 p4 p4t hybrid; do case $e in p1|p2|p3) m=$e$ST ;; *) m=$e ;; esac; done_or_run "$m" "$e" || rc=1; done
SEEDS="$SEEDS" TARGET4=$TARGET4 python3 bench/ppasgd/summarize.py "$RES" "$TABLE.tmp" "${QUICK:+quick}" || rc=1
python3 bench/phantom/summarize.py "$RES" "$TABLE.tmp" || rc=1   # adds P4-scaling-timing to the measurements
for gp in plots/ppasgd-*.gp; do render_plot "$gp" || rc=1; done
table_print
exit $rc
