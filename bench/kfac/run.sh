#!/usr/bin/env bash
# bench/kfac/run.sh — `make bench-kfac`: distributed K-FAC (Tsuji, Osawa, Yokota, Matsuoka;
# docs/PAPERS.md §3, claims K2-K4; K1 is bench-collectives), written to results/kfac/*.jsonl,
# results/kfac/table.md and plots/out/kfac-*.png|pdf.
#
# What the paper ran and what we run (every value below is an environment variable):
#   paper: Chainer VGG on CIFAR-10, 30 epochs, TSUBAME 3.0 (4 P100 per node, Omni-Path), up to
#          64 GPUs; inversions by cuSOLVER on the GPU.
#   ours:  NET (vgg-small, 8 K-FAC layers, factors up to 1153 x 1153) on DATA (Fashion-MNIST) on
#          this 2-core CPU: real runs at 1 and 2 MPI ranks (4 oversubscribed), SimGrid runs to
#          64 devices whose compute is charged per kind at the rates `pdl calibrate` measured
#          here (training step, factor GEMMs, inversions by size, preconditioning); epochs scaled
#          down and a training subset (TRAIN examples) to fit the 45-minute budget.
# Experiments:
#   inverse  fast float inversion vs the LAPACKE double reference (pdl inverse), sizes INV_SIZES;
#   speed    a K-FAC step's breakdown on one process (pdl speed --algo kfac) and the calibration;
#   k2       weak scaling, batch BATCH per process: real at K2_REAL ranks (K2_REAL_STEPS updates: 30, so
#            that the 2-rank point K2 judges is not 4 updates' setup and noise; the real allreduce
#            runs, read by no claim, K2_STEPS), sim at K2_SIM devices (K2_STEPS: the sim's clock is
#            exact from the first update), owners by layer (the paper) and by cost (lpt, ours), both
#            communication schemes; the real 1- and 2-rank timings K2 judges are repeated (K2_REPEATS,
#            full 5, QUICK 2; issue 45: one timing sat at the 2x threshold, 1.99 / 2.26 / 2.08x across
#            runs), each repeat's two runs back to back, and K2 is judged on their spread: every
#            repeat a "seed" of the registry (k2.jsonl's "rep"). Cost: ~15 s per extra repeat (two
#            30-update runs at ~0.18 s per update plus start-up), ~1 min in the full bench;
#   k2m      K2-phases: the real 2-rank point against the sim of this machine, phase by phase
#            (machine: platform; 1-thread calibration, a real MPI reduce-scatter of the bundles);
#   k2p      K2-paper, K2-sgd: K-FAC and data-parallel SGD (--algo ssgd) at K2P_SIM devices on a
#            cluster at the paper's compute-to-communication ratio (P100_GFLOPS vs OPA_GBPS, derived
#            below run_k2m), K-FAC with the comm schemes K2P_COMMS;
#   k3g      one process, issue 33 item 3: each optimizer's grid (lr; K-FAC's lr, then its damping)
#            at seed 1 on a validation split held out of the training set (--val K3_VAL), 1 thread
#            per run, K3G_JOBS at once; bench/kfac/k3grid.py holds the rule and writes the picks;
#   k3t-sS   kfac vs adam vs msgd at their picks on the test set, accuracy per epoch and per second
#            (K3_EPOCHS), seed S of K3_SEEDS, 2 threads, one run at a time; and K-FAC's variants
#            there: the sampled Fisher (--kfac-fisher sampled) and the paper's literal Algorithm 1
#            (--momentum 0 at 10x the picked lr);
#   k4       total batch K4_BATCHES for msgd and kfac at a fixed K4_EPOCHS, seeds K4_SEEDS (bands).
# Seeds (issue 31): the registry asks 3 seeds of K3a (K-FAC's accuracy per epoch vs Adam's) and K4
# (accuracy and loss vs the total batch), so the full bench runs K3_SEEDS = K4_SEEDS = "1 2 3"
# (QUICK: 1). Seed 1 keeps the plain names (k3-kfac.jsonl), seed s > 1 adds "-sS" (k3-kfac-s2.jsonl);
# K4 writes k4-sS.jsonl per seed and k4.jsonl, all of them, for the summarizer. Each seed has its own
# done mark (k3t-sS, k4-sS), so adding a seed reuses the others. K3b (time per epoch, not stochastic
# in the registry) reads seed 1; so does the K3 plot.
# Budget: the full bench took 19.6 min with the build (Intel Xeon, 2 cores). A K4 seed is 4 msgd runs
# (~45 s) and 4 kfac runs (~3 min at the step breakdown of REPRODUCTION-kfac.md), ~4 min. K3 (issue
# 33 item 3) is the grid, 9-10 runs (13 min on the AMD EPYC, 2026-11-26), and per seed 5 runs at
# the picks (~6 min: 5.8, 5.7, 6.1); to pay for it K3_TRAIN went from 12000 to 6000 examples
# (docs/REPRODUCTION-kfac.md, "K3 judged fairly"). Measured end to end from a clean clone at 2a3e999
# (quiet AMD EPYC, 2 cores): 58 min 46 s, of which K3 29.5 min and K4's 3 seeds 16.6 min. That is over
# the ~45 min budget, on purpose: the registry's 3 seeds of K3a/K4 are kept. K4_SEEDS=1 gives ~48 min.
# Issue 33 item 2 adds ~5 min (estimated from timings on a loaded 2-core AMD EPYC, to be confirmed on
# a quiet machine): the real reduce-scatterv points at 30 updates instead of 4, ~0.3 min (26 more
# updates at 1, 2 and 4 ranks: ~0.15, ~0.15 and ~0.3 s each); k2m ~0.5 min (a 1-thread calibration,
# two pdl coll runs, the machine: sims at 1 and 2 ranks for 30 updates); k2p ~3.5-4 min (K-FAC with
# Allreduce and with reduce-scatterv at 2..64 devices, 126 simulated nodes x 4 updates at ~0.15 s of
# CPU each per series, ~1.5 min per series; ssgd at 1..64, ~0.6 min): ~35 min in all.
# QUICK adds k2m at 2 ranks (no 1-thread calibration: it reuses calibration.json; no allgather
# measurement) and k2p at 1 and 2 devices (K-FAC with Allreduce only), and pays for them with
# K2_SIM "1 2" instead of "1 4", no real allreduce run and no lpt run at 1 device (the layer run's).
# Measured back to back on the loaded 2-core EPYC (OMP_WAIT_POLICY=passive, as make test runs it),
# user + sys CPU seconds in two pairs: 40.7 and 40.7 before, 40.7 and 40.9 after.
# QUICK=1 (make test): small sizes and few steps: sim at 1 and 2 devices (issue 33: 2 rather than 4,
# so that K2-phases has its cluster column and the new experiments fit), one calibration pass, K4 on
# 512 examples (issue 36 item 8 cut these from 1 2 4 8 devices, 3 passes and 1024 examples for make
# test's time), K3 on 128 (a one-point grid per optimizer on 128 held-out examples, the picks, the
# variants: 8 runs where it had 3 on 512).
set -u
cd "$(dirname "$0")/../.."
# SCALE=paper: the paper's own experiments at its size (bench/scale.py, profile bench/kfac/paper.toml)
case ${SCALE:-} in '') ;; paper) exec python3 bench/scale.py kfac ;; *) echo "[kfac] SCALE=$SCALE: not a scale (paper, or unset for the stand-ins)" >&2; exit 2 ;; esac
source bench/lib.sh
bench_init kfac
if [ -n "$QUICK" ]; then
  INV_SIZES=${INV_SIZES:-257,1024}; INV_REPS=${INV_REPS:-3}
  K2_REAL=${K2_REAL:-"1 2"}; K2_SIM=${K2_SIM:-"1 2"}; K2_STEPS=${K2_STEPS:-2}; CAL_REPEATS=${CAL_REPEATS:-1}
  K2_REAL_STEPS=${K2_REAL_STEPS:-2}; K2_REPEATS=${K2_REPEATS:-2}; K2_REAL_AR=${K2_REAL_AR-}; K2M_ITERS=${K2M_ITERS:-3}; K2P_SIM=${K2P_SIM:-"1 2"}
  K2M_PROCS=${K2M_PROCS:-2}; K2M_AG=${K2M_AG-}
  K2P_COMMS=${K2P_COMMS:-allreduce}
  K3_EPOCHS=${K3_EPOCHS:-1}; K3_TRAIN=${K3_TRAIN:-128}; K3_SEEDS=${K3_SEEDS:-1}; K3_VAL=${K3_VAL:-128}; K4_BATCHES=${K4_BATCHES:-"32 256"}; K4_SEEDS=${K4_SEEDS:-1}
  K4_EPOCHS=${K4_EPOCHS:-1}; K4_TRAIN=${K4_TRAIN:-512}; NTEST=${NTEST:-300}; NET=${NET:-vgg-small}
else
  INV_SIZES=${INV_SIZES:-257,1024,1153,2048}; INV_REPS=${INV_REPS:-5}
  K2_REAL=${K2_REAL:-"1 2 4"}; K2_SIM=${K2_SIM:-"1 2 4 8 16 32 64"}; K2_STEPS=${K2_STEPS:-4}
  K2_REAL_STEPS=${K2_REAL_STEPS:-30}; K2_REPEATS=${K2_REPEATS:-5}; K2_REAL_AR=${K2_REAL_AR-1}; K2M_ITERS=${K2M_ITERS:-20}; K2P_SIM=${K2P_SIM:-$K2_SIM}
  K2M_PROCS=${K2M_PROCS:-"1 2"}; K2M_AG=${K2M_AG-1}
  K2P_COMMS=${K2P_COMMS:-"allreduce reduce-scatterv"}
  K3_EPOCHS=${K3_EPOCHS:-4}; K3_TRAIN=${K3_TRAIN:-6000}; K3_SEEDS=${K3_SEEDS:-"1 2 3"}; K3_VAL=${K3_VAL:-2000}; K4_BATCHES=${K4_BATCHES:-"32 128 512 2048"}
  K4_SEEDS=${K4_SEEDS:-"1 2 3"}; CAL_REPEATS=${CAL_REPEATS:-3}
  K4_EPOCHS=${K4_EPOCHS:-3}; K4_TRAIN=${K4_TRAIN:-8192}; NTEST=${NTEST:-2000}; NET=${NET:-vgg-small}
fi
DATA=${DATA:-fashion-mnist}; BATCH=${BATCH:-32}; THREADS=${THREADS:-$(nproc)}; K3G_JOBS=${K3G_JOBS:-$(nproc)}
P100_GFLOPS=${P100_GFLOPS:-10600}; OPA_GBPS=${OPA_GBPS:-100}   # K2 at the paper's ratio (run_k2p)
LR_KFAC=${LR_KFAC:-0.003}; LR_MSGD=${LR_MSGD:-0.01}; LR_ADAM=${LR_ADAM:-0.001}; DAMP=${DAMP:-0.03}
COMMON=(--data "$DATA" --net "$NET" --test-subset "$NTEST" --quiet)

# ---- inversions and the step breakdown --------------------------------------------------------
run_inverse() {
  "$PDL" inverse --sizes "$INV_SIZES" --cond 1e4 --reps "$INV_REPS" --threads "$THREADS" --json "$RES/inverse.jsonl.tmp" \
    && mv "$RES/inverse.jsonl.tmp" "$RES/inverse.jsonl"
}
run_speed() {
  "$PDL" calibrate --net "$NET" --batch "$BATCH" --threads "$THREADS" --repeats "$CAL_REPEATS" --out "$RES/calibration.json" \
    > "$RES/speed.jsonl.tmp" && mv "$RES/speed.jsonl.tmp" "$RES/speed.jsonl"
}

# ---- K2: weak scaling --------------------------------------------------------------------------
# k2_run FILE MODE PROCS STEPS PLATFORM CAL ARGS...: one training run of PROCS processes, its summary
# line tagged mode=MODE and procs appended to FILE. PLATFORM "-": real (mpirun, 1 thread per rank);
# else the sim runtime on PLATFORM with the calibration file CAL.
k2_run() {
  local f=$1 mode=$2 p=$3 steps=$4 plat=$5 cal=$6 line; shift 6
  local args=(train "${COMMON[@]}" --train-subset $((BATCH * p * (steps + 1))) --batch "$BATCH" --steps "$steps"
              --eval-every 0 --threads 1 "$@")
  if [ "$plat" = - ]; then
    line=$(OMP_NUM_THREADS=1 mpirun_cmd -np "$p" "$PDL" "${args[@]}" 2>>"$RES/k2.log" | tail -1) || return 1
  else
    line=$("$PDL" "${args[@]}" --runtime sim --platform "$plat" --device-rate "calibrated:$cal" 2>>"$RES/k2.log" | tail -1) || return 1
  fi
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(mode=sys.argv[2], procs=int(sys.argv[3]), rep=int(sys.argv[4])); print(json.dumps(d))' \
    "$line" "$mode" "$p" "${K2_REP:-1}" >> "$f"
}
# one line per run in k2.jsonl, tagged mode=real|sim, procs, assign, comm, rep (K2_REP: the repeat of a real timing)
k2_one() {   # k2_one MODE PROCS ASSIGN COMM [STEPS]
  local mode=$1 p=$2 a=$3 c=$4 plat=-
  [ "$mode" = sim ] && plat="cluster:nodes=$p,gpus=1"
  k2_run "$RES/k2.jsonl.tmp" "$mode" "$p" "${5:-$K2_STEPS}" "$plat" "$RES/calibration.json" --algo kfac-dist \
    --lr "$LR_KFAC" --kfac-damping "$DAMP" --kfac-assign "$a" --kfac-comm "$c" --tag "k2-$mode-$p-$a-$c${K2_REP:+-r$K2_REP}"
}
run_k2() {
  : > "$RES/k2.jsonl.tmp"; : > "$RES/k2.log"
  local p a
  for p in $K2_REAL; do   # the real points K2 judges: K2_REAL_STEPS updates (the allreduce ones, read by no claim: K2_STEPS)
    k2_one real "$p" layer reduce-scatterv "$K2_REAL_STEPS" || return 1
    [ "$p" -gt 1 ] && [ -n "$K2_REAL_AR" ] && { k2_one real "$p" layer allreduce || return 1; }
  done
  local r   # K2's real point repeated (issue 45): the 1- and 2-rank timings again, back to back, K2_REPEATS in all
  for ((r = 2; r <= K2_REPEATS; r++)); do for p in 1 2; do
    [[ " $K2_REAL " == *" $p "* ]] || continue
    echo "  k2 real: $p rank(s), repeat $r of $K2_REPEATS" >&2
    K2_REP=$r k2_one real "$p" layer reduce-scatterv "$K2_REAL_STEPS" || return 1
  done; done
  for a in layer lpt; do for p in $K2_SIM; do
    [ "$a" = lpt ] && [ "$p" = 1 ] && continue   # one device owns every layer either way: the layer run's time
    echo "  k2 sim: $p devices, owners by $a" >&2
    k2_one sim "$p" "$a" reduce-scatterv || return 1
  done; done
  for p in $K2_SIM; do [ "$p" -gt 1 ] && { k2_one sim "$p" layer allreduce || return 1; }; done
  mv "$RES/k2.jsonl.tmp" "$RES/k2.jsonl"
}

# ---- K2-phases: the real 2-rank point against the sim of this machine, phase by phase (issue 33) --
# The K2 sim above is a GPU cluster (56 Gb/s links, devices at the bench's THREADS-thread rate); the
# real ranks run 1 thread each and talk through shared memory. So the same runs are simulated on
# `machine:` (docs/SIM.md: the R ranks on this machine's cores), calibrated phase by phase:
#   compute: `pdl calibrate --threads 1` (the real ranks' thread count; QUICK reuses calibration.json),
#            whose K-FAC step sets the factors', preconditioning's and inversions' rates (kfac_dist.c);
#   comm:    shmbw = the bundles' bytes / the median of a real 2-rank MPI reduce-scatter of them
#            (pdl coll; a ring of 2 sends both halves over the one shared loopback, so the sim's
#            reduce-scatter takes exactly that time); the ΔW allgather is measured beside it;
#   update:  membw = the update's 24 B per parameter / the calibrated K-FAC update time.
# Writes calibration-t1.json, k2-coll.jsonl and k2-match.jsonl (mode sim-machine, procs K2M_PROCS:
# 1 and 2; QUICK 2, without the allgather's measurement: K2M_AG).
run_k2m() {
  local cal=$RES/calibration.json f=$RES/k2-match.jsonl.tmp
  if [ -z "$QUICK" ]; then
    "$PDL" calibrate --net "$NET" --batch "$BATCH" --threads 1 --repeats "$CAL_REPEATS" --out "$RES/calibration-t1.json.tmp" \
      > /dev/null 2>>"$RES/k2.log" && mv "$RES/calibration-t1.json.tmp" "$RES/calibration-t1.json" || return 1
    cal=$RES/calibration-t1.json
  fi
  local sizes; sizes=$(python3 -c 'import json,sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [x for x in d if x["mode"] == "real" and x["procs"] == 2 and x["kfac_comm"] == "reduce-scatterv"]
print("%d %d" % (r[0]["msg1_bytes"], r[0]["msg2_bytes"]) if r else "")' "$RES/k2.jsonl") || return 1
  [ -n "$sizes" ] || { echo "  k2m: no real 2-rank point in k2.jsonl (K2_REAL='$K2_REAL')" >&2; return 0; }
  set -- $sizes
  rm -f "$RES/k2-coll.jsonl.tmp"
  mpirun_cmd -np 2 "$PDL" coll --op reduce_scatterv -m "$1:$1" -i "$K2M_ITERS" --json "$RES/k2-coll.jsonl.tmp" > /dev/null 2>>"$RES/k2.log" \
    || return 1
  if [ -n "$K2M_AG" ]; then   # the ΔW allgather beside it (shown, not fitted)
    mpirun_cmd -np 2 "$PDL" coll --op allgatherv -m "$2:$2" -i "$K2M_ITERS" --json "$RES/k2-coll.jsonl.tmp" > /dev/null 2>>"$RES/k2.log" \
      || return 1
  fi
  mv "$RES/k2-coll.jsonl.tmp" "$RES/k2-coll.jsonl"
  local bw; bw=$(python3 -c 'import json,sys
c = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rs = [x for x in c if x["op"] == "reduce_scatterv"][0]
cal = json.load(open(sys.argv[2]))
n = int(sys.argv[3]) / 4 - 3 * 2            # the parameters: the ΔW buffer less 3 control floats per rank
print("shmbw=%.6gBps,membw=%.6gBps" % (rs["bytes_total"] / (rs["p50_us"] * 1e-6), 24 * n / (cal["kfac_update_ms"] * 1e-3)))' \
    "$RES/k2-coll.jsonl" "$cal" "$2") || return 1
  : > "$f"
  local p
  for p in $K2M_PROCS; do
    echo "  k2m: sim machine:ranks=$p,$bw" >&2
    k2_run "$f" sim-machine "$p" "$K2_REAL_STEPS" "machine:ranks=$p,$bw" "$cal" --algo kfac-dist --lr "$LR_KFAC" \
      --kfac-damping "$DAMP" --kfac-assign layer --kfac-comm reduce-scatterv --tag "k2m-$p" || return 1
  done
  mv "$f" "$RES/k2-match.jsonl"
}

# ---- K2-paper, K2-sgd: K2 at the paper's compute-to-communication ratio, and data-parallel SGD --
# The K2 sim charges compute at this CPU's calibrated rate and sends on 56 Gb/s links; TSUBAME3.0
# (the paper's Table 1) has 4 P100 per node and 4 x 100 Gbps Omni-Path per node: 100 Gb/s per GPU.
# Derivation of the paper-ratio platform (docs/REPRODUCTION-kfac.md, "K2 at the paper's ratio"):
#   P100 (SXM2, TSUBAME3.0's): FP32 peak 3584 cores x 2 flop x 1.48 GHz = 10.6 TFLOP/s (P100_GFLOPS).
#   Assumption: the P100 runs each K-FAC kind at the same fraction of its peak as our device runs it
#   of its sgemm rate S (calibration.json's sgemm_gflops, measured in the same run). So a P100 is
#   c = P100_GFLOPS / S times our device, and a P100 with 100 Gb/s (OPA_GBPS) has the ratio of ours
#   with links of B = OPA_GBPS x S / P100_GFLOPS. The sim keeps our device and its per-kind rates and
#   divides the links by c / (OPA_GBPS / 56) against the K2 sim: ib = B, and the latency (0.5 us per
#   link, Omni-Path's ~1 us end to end) times c. E.g. S = 150 GFLOP/s: c = 70.7, ib = 1.42 Gb/s,
#   lat = 35 us: communication 39x dearer next to compute than on the K2 sim's 56 Gb/s.
# K-FAC runs with the paper's implementation's Allreduce for both steps (its Sec. 3.2: NCCL has no
# Scatterv) and with reduce-scatterv (its Fig. 3, the K2 sim's); --algo ssgd (synchronous data-parallel
# SGD, one allreduce of the gradient per update) with the same net, batch per process and platform is
# the baseline that "then like data-parallel SGD" names. Their 1-device K-FAC time is the K2 sim's
# (one device sends nothing, so the link does not matter). Writes k2-paper.jsonl (mode sim-paper).
paper_link() {   # the paper-ratio platform's link keys, from the bench's calibration
  python3 -c 'import json,sys
S = json.load(open(sys.argv[1]))["sgemm_gflops"]; P, B = float(sys.argv[2]), float(sys.argv[3])
print("ib=%.6gGbps,lat=%.6gus" % (B * S / P, 0.5 * P / S))' "$RES/calibration.json" "$P100_GFLOPS" "$OPA_GBPS"
}
run_k2p() {
  local link f=$RES/k2-paper.jsonl.tmp p c; link=$(paper_link) || return 1
  : > "$f"
  for p in $K2P_SIM; do
    echo "  k2p: $p devices, cluster:nodes=$p,gpus=1,$link" >&2
    for c in $K2P_COMMS; do
      [ "$p" -gt 1 ] || continue
      k2_run "$f" sim-paper "$p" "$K2_STEPS" "cluster:nodes=$p,gpus=1,$link" "$RES/calibration.json" --algo kfac-dist \
        --lr "$LR_KFAC" --kfac-damping "$DAMP" --kfac-assign layer --kfac-comm "$c" --tag "k2p-$p-$c" || return 1
    done
    k2_run "$f" sim-paper "$p" "$K2_STEPS" "cluster:nodes=$p,gpus=1,$link" "$RES/calibration.json" --algo ssgd \
      --lr "$LR_MSGD" --momentum 0.9 --tag "k2p-$p-ssgd" || return 1
  done
  mv "$f" "$RES/k2-paper.jsonl"
}

# ---- K3: one process, three optimizers ---------------------------------------------------------
# Issue 33 item 3 (plan and rule: docs/REPRODUCTION-kfac.md, "K3 judged fairly", written before any
# grid run): k3g runs each optimizer's grid at seed 1 on the validation split (--val K3_VAL, held out
# of the training set), 1 thread per run, K3G_JOBS at once; bench/kfac/k3grid.py says which runs the
# rule needs next and then writes the picks (k3-picks.json). k3t-sS runs seed S at the picks on the
# test set, 2 threads, one at a time (their time axes compare): kfac, adam, msgd, and K-FAC's two
# variants, the sampled Fisher (k3-kfac-sampled) and the paper's literal Algorithm 1 (k3-kfac-alg1:
# --momentum 0 at 10x the picked lr). Seed 1 keeps the plain names (k3-kfac.jsonl), seed S adds -sS.
sfx() { [ "$1" = 1 ] || echo "-s$1"; }   # the run-name suffix of seed $1
k3_one() {   # k3_one FILE ALGO LR DAMP|- SEED THREADS ARGS...: one K3 run, evaluated every half epoch, into RES/FILE
  local f=$1 o=$2 lr=$3 d=$4 s=$5 t=$6 spe=$((K3_TRAIN / BATCH)); shift 6
  local kd=(); [ "$d" != - ] && kd=(--kfac-damping "$d")   # pdl refuses a flag the --algo does not read
  "$PDL" train --algo "$o" --data "$DATA" --net "$NET" --quiet --train-subset "$K3_TRAIN" --batch "$BATCH" --lr "$lr" "${kd[@]}" \
    --epochs "$K3_EPOCHS" --eval-every $((spe / 2)) --seed "$s" --threads "$t" --tag "${f%.jsonl}" --results "$RES/$f.tmp" "$@" \
    > /dev/null 2>>"$RES/k3.log" || { echo "k3: $f failed (pdl exit $?; $RES/k3.log)" >&2; return 1; }
  mv "$RES/$f.tmp" "$RES/$f"
}
run_k3g() {
  local q=${QUICK:+quick} round todo o lr d f r fail=0 prev=
  for round in 1 2 3 4; do
    todo=$(python3 bench/kfac/k3grid.py next "$RES" $q) || return 1
    [ -n "$todo" ] || break
    [ "$todo" != "$prev" ] || { echo "k3g: the grid's next runs did not change after running them: $todo" >&2; return 1; }
    prev=$todo
    while read -r o lr d; do
      f="k3g-$o-lr$lr"; [ "$d" = - ] || f+="-d$d"; f+=.jsonl
      while [ "$(jobs -rp | wc -l)" -ge "$K3G_JOBS" ]; do wait -n || fail=1; done
      echo "  k3g: $o lr $lr$([ "$d" = - ] || echo " damping $d") (validation, seed 1)" >&2
      k3_one "$f" "$o" "$lr" "$d" 1 1 --val "$K3_VAL" &
    done <<< "$todo"
    while :; do wait -n; r=$?; [ "$r" = 127 ] && break; [ "$r" = 0 ] || fail=1; done   # 127: no job left
    [ "$fail" = 0 ] || return 1
  done
  python3 bench/kfac/k3grid.py picks "$RES" $q >&2
}
run_k3t() {   # run_k3t SEED: every optimizer at its pick, and K-FAC's two variants, on the test set
  local s=$1 x; x=$(sfx "$1")
  local lk dk la lm
  read -r lk dk la lm < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["picks"]
print("%g %g %g %g" % (p["kfac"]["lr"], p["kfac"]["damping"], p["adam"]["lr"], p["msgd"]["lr"]))' "$RES/k3-picks.json") || return 1
  local lk10; lk10=$(python3 -c "print('%g' % (10 * $lk))")
  echo "  k3: seed $s at the picks: kfac lr $lk damping $dk, adam lr $la, msgd lr $lm; kfac-sampled; kfac-alg1 lr $lk10" >&2
  k3_one "k3-kfac$x.jsonl" kfac "$lk" "$dk" "$s" "$THREADS" --test-subset "$NTEST" || return 1
  k3_one "k3-adam$x.jsonl" adam "$la" - "$s" "$THREADS" --test-subset "$NTEST" || return 1
  k3_one "k3-msgd$x.jsonl" msgd "$lm" - "$s" "$THREADS" --test-subset "$NTEST" || return 1
  k3_one "k3-kfac-sampled$x.jsonl" kfac "$lk" "$dk" "$s" "$THREADS" --test-subset "$NTEST" --kfac-fisher sampled || return 1
  k3_one "k3-kfac-alg1$x.jsonl" kfac "$lk10" "$dk" "$s" "$THREADS" --test-subset "$NTEST" --momentum 0 || return 1
}

# ---- K4: total batch at a fixed number of epochs ------------------------------------------------
run_k4() {   # run_k4 SEED: every batch for msgd and kfac at one seed, into k4-sSEED.jsonl
  local s=$1 f=$RES/k4-s$1.jsonl
  : > "$f.tmp"
  local o b lr line
  for o in msgd kfac; do for b in $K4_BATCHES; do
    local kd=(); [ "$o" = kfac ] && kd=(--kfac-damping "$DAMP")
    [ "$o" = kfac ] && lr=$LR_KFAC || lr=$LR_MSGD
    echo "  k4: $o batch $b seed $s" >&2
    line=$("$PDL" train --algo "$o" "${COMMON[@]}" --train-subset "$K4_TRAIN" --batch "$b" --lr "$lr" "${kd[@]}" \
           --epochs "$K4_EPOCHS" --seed "$s" --threads "$THREADS" --tag "k4-$o-$b-$s" 2>>"$RES/k4.log" | tail -1) || return 1
    echo "$line" >> "$f.tmp"
  done; done
  mv "$f.tmp" "$f"
}

done_or_run inverse run_inverse || exit 1
done_or_run speed run_speed || exit 1
done_or_run k2 run_k2 || exit 1
done_or_run k2m run_k2m || exit 1
done_or_run k2p run_k2p || exit 1
# beyond the paper (issue 33 item 4): the split inversion, bench/kfac/split.sh; the full bench only
# (QUICK: SPLIT_QUICK=1; its correctness is tests/t_split.sh's, in make test)
if [ -z "$QUICK" ] || [ -n "${SPLIT_QUICK:-}" ]; then
  source bench/kfac/split.sh; split_defaults
  done_or_run split run_split || exit 1
fi
done_or_run k3g run_k3g || exit 1
for s in $K3_SEEDS; do done_or_run "k3t-s$s" run_k3t "$s" || exit 1; done
for s in $K4_SEEDS; do done_or_run "k4-s$s" run_k4 "$s" || exit 1; done
for s in $K4_SEEDS; do cat "$RES/k4-s$s.jsonl"; done > "$RES/k4.jsonl.tmp" && mv "$RES/k4.jsonl.tmp" "$RES/k4.jsonl"
python3 bench/kfac/summarize.py "$RES" "${QUICK:+quick}" "$K3_SEEDS" || exit 1
for gp in plots/kfac-*.gp; do render_plot "$gp"; done
table_print
