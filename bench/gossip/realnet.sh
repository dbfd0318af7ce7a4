#!/usr/bin/env bash
# bench/gossip/realnet.sh — gossip's congestion observed on a real heterogeneous network (issue 48):
# the real runtime's pull gossip (and gossip-warmup) on K = 8 MPI ranks, 6 wide and 2 narrow, each
# in its own network namespace behind a tc htb-limited veth (bench/net/hetnet.sh), over Open MPI's
# TCP; beside each real run, the sim on the same links: description with each node's compute time
# set to the one measured. Results: results/gossip/realnet-<settings hash>/NAME.jsonl (rank 0's
# summary, then one line {"event": "realnet", ...}: the description, wall and CPU seconds of the
# whole run), NAME.timeline.csv, NAME-sim.jsonl; results/gossip/realnet.json names the folder (or
# says why nothing ran). bench/gossip/realnet_summary.py reads them; bench/gossip/summarize.py hands
# its metrics to the engine (claims G1-congestion-real, G2-congestion-real, G-eq1-real,
# G4-warmup-real, G-sim-real).
#
# The scale (what differs from the paper): links are the paper's 1 and 10 Gb/s times
# (our model's bytes / 54 MiB), as in the sim's case (b), so that a transfer takes the paper's time
# (0.45 s narrow, 0.045 s wide for one model). The net is a one-hidden-layer MLP, relu F48 S10
# (153 kB, about vgg-quarter's 149 kB, so the links are ~2.7 and ~27 Mbit/s, but 1/50 of its FLOPs:
# 7 MFLOP per step at batch 32): the compute is this machine's (8 ranks on 2 cores, one thread
# each), and in three pilot runs with vgg-quarter beside the benchmark of record (our processes at
# nice 19, load 10-17) a step's compute took 0.06-0.47 s of wall time, as long as a narrow transfer,
# so the runs were compute-bound, not the regime asked for. With the MLP the compute stays small
# beside the transfers, at T = 1 and T = 4 the runs are transfer-bound and eq. (1) predicts
# congestion at both (the compute share is measured: compute_share, cpu_share). A third pull run
# at T = TF (48, at fewer pulls) is where the paper's remedy should work: eq. (1)'s load on a
# narrow node, C / (T G + mean C_j), falls below ~0.4 once T G exceeds ~1 s (eq. (1) is a mean-load
# condition, and with random arrivals the waits reach the transfer time from a load of ~0.5 on):
# with the ~25-30 ms per step measured here beside the benchmark (nice 19), T = 48 gives ~0.3; on
# an idle machine, where a step is a few ms, it would not (eq. (2)'s T* is in the summary). No
# latency is added (netem is not in this kernel): the description says lat=0.05ms, the veth +
# bridge path's own order, and the sim gets the same. htb counts Ethernet frames, so a payload
# moves at rate x 1448/1514; the summary's predicted transfer times include that factor.
# Runs (each PULLS pulls per node, PULLS x T local steps): pull-t1, pull-t4, warm-t1, warm-t4 (the
# warm-up over the whole run), pull-t<TF> (PULLS_TF pulls). Environment: RN_NET ("relu F48 S10"),
# RN_DATA (fashion-mnist), RN_BATCH (32), RN_LR (0.05), RN_K (8), RN_WIDE (6), RN_PULLS (40),
# RN_TS ("1 4"), RN_TF (48), RN_PULLS_TF (10), RN_TRAIN (8192 training images), RN_NTEST (500),
# RN_LAT (0.05ms), RN_LIMIT (600 s per run), RN_SEED (1), MODEL_MIB (54); FORCE=1 reruns.
# Invoked by bench/gossip/run.sh (`realnet.sh --probe`, then step realnet, to which it passes RES,
# NUMERICS, BENCH_STAMP and PDL) or
# alone: `bash bench/gossip/realnet.sh` (as root) prints realnet_summary.py's table at the end.
# Not root, or a kernel that refuses namespaces, veths or htb: nothing runs, realnet.json says why,
# exit 0 (the rows then read "no results" with that reason).
set -u
cd "$(dirname "$0")/../.."
ALONE=
if [ -z "${RES:-}" ]; then ALONE=1; source bench/lib.sh; bench_init gossip; else source bench/lib.sh; fi
NET=${RN_NET:-"relu F48 S10"}; DATA=${RN_DATA:-fashion-mnist}; BATCH=${RN_BATCH:-32}; LR=${RN_LR:-0.05}
K=${RN_K:-8}; W=${RN_WIDE:-6}; PULLS=${RN_PULLS:-40}; TS=${RN_TS:-"1 4"}; TF=${RN_TF:-48}; PULLS_TF=${RN_PULLS_TF:-10}
TRAIN=${RN_TRAIN:-8192}; NTEST=${RN_NTEST:-500}; LAT=${RN_LAT:-0.05ms}; LIMIT=${RN_LIMIT:-600}; SEED=${RN_SEED:-1}
MODEL_MIB=${MODEL_MIB:-54}
export PDL_SIM_OVERLAP=0 OMP_NUM_THREADS=1
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
NCORES=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)   # (not nproc: it reads OMP_NUM_THREADS)
say() { echo "[gossip realnet] $*"; }
skip() {   # nothing can run here: say why in realnet.json, exit 0
  python3 -c "import json,sys; json.dump({'skipped': sys.argv[1]}, open(sys.argv[2], 'w'))" "$1" "$RES/realnet.json"
  say "not run: $1"; exit 0
}

why=$(bash bench/net/hetnet.sh probe 2>&1); rc=$?
if [ "${1:-}" = --probe ]; then   # run.sh: may the step run here? (exit 3 and realnet.json saying why if not)
  [ $rc = 0 ] && exit 0
  [ $rc = 3 ] && { ( skip "$why" ); exit 3; }
  say "bench/net/hetnet.sh probe failed (status $rc): $why" >&2; exit 1
fi
[ $rc = 3 ] && skip "$why"
[ $rc = 0 ] || { say "bench/net/hetnet.sh probe failed (status $rc): $why" >&2; exit 1; }
bash bench/net/hetnet.sh down >/dev/null 2>&1   # leftovers of earlier runs whose owner is gone

# ---- model bytes and FLOPs per step (a sim step at 1 GFLOP/s takes FLOP / 1e9 seconds) --------------
probe=$("$PDL" train --algo gossip --runtime sim --platform links:k=2,bw=1Gbps --device-rate 1 --data "$DATA" \
  --train-subset 256 --test-subset 10 --net "$NET" --batch "$BATCH" --steps 1 --threads 1 --quiet 2>&1 | tail -1)
read -r MB GF < <(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['model_bytes'], d['G_s'][0])" "$probe" 2>/dev/null) \
  || { say "could not size NET '$NET' on $DATA: $probe" >&2; exit 1; }
read -r SCALE NB WB < <(python3 -c "
import sys; s = float(sys.argv[1]) / (float(sys.argv[2]) * 2**20)
print('%.6g %.6gMbps %.6gMbps' % (s, 1000 * s, 10000 * s))" "$MB" "$MODEL_MIB")
DESC="links:k=$K,bw=$WB*$W+$NB*$((K - W)),lat=$LAT"
RSIG=$(echo "$NET $DATA $BATCH $LR $K $W $PULLS $TS $TF $PULLS_TF $TRAIN $NTEST $LAT $SEED $MODEL_MIB" | md5sum | cut -c1-8)
RD=$RES/realnet-$RSIG; mkdir -p "$RD"
python3 - "$RES/realnet.json" <<EOF
import json, sys
json.dump({"runs": "$RD", "links": "$DESC", "net": "$NET", "data": "$DATA", "batch": $BATCH, "lr": $LR, "K": $K,
           "wide": $W, "pulls": $PULLS, "Ts": [$(echo $TS | tr ' ' ',')], "T_free": $TF, "pulls_free": $PULLS_TF,
           "train": $TRAIN, "ntest": $NTEST, "lat": "$LAT", "seed": $SEED, "model_bytes": $MB, "gflop_per_step": $GF,
           "model_mib_paper": $MODEL_MIB, "bw_scale": $SCALE, "narrow": "$NB", "wide_bw": "$WB", "cores": $NCORES,
           "frame_overhead": 1514 / 1448}, open(sys.argv[1], "w"), indent=1)
EOF
say "$NET: $MB bytes, $GF GFLOP per step; links scaled by $SCALE: $DESC"

CHILD=
trap 'if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD"; fi; exit 143' TERM
trap 'if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD"; fi; exit 130' INT
# sample PREFIX FILE: once a second while the run lives, "pid ticks" of every process in the run's
# namespaces (utime + stime). The CPU seconds of a run are the sum of each process's last sample (a
# process's last second is lost): the daemons are not waited for by mpirun, so the children's CPU
# times of this script do not hold the ranks'
sample() {
  local P=$1 f=$2 ns p
  while kill -0 "$CHILD" 2>/dev/null; do
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${P}n"); do
      for p in $(ip netns pids "$ns" 2>/dev/null); do
        awk -v p="$p" '{sub(/^.*\) /, ""); print p, $12 + $13}' "/proc/$p/stat" 2>/dev/null
      done
    done >> "$f"
    sleep 1
  done
}

# one_run NAME ALGO T PULLS: the real run in the network, then the sim on the same description
one_run() {
  local name=$1 algo=$2 t=$3 pulls=$4 steps extra=() t0 t1 rc samp
  steps=$((pulls * t))
  [ "$algo" = gossip-warmup ] && extra=(--gossip-warmup "$steps" --gossip-unknown best)
  local common=(--algo "$algo" --tau "$t" --steps "$steps" --net "$NET" --data "$DATA" --train-subset "$TRAIN"
                --test-subset "$NTEST" --batch "$BATCH" --lr "$LR" --eval-every "$steps" --threads 1 --quiet --seed "$SEED"
                --timeout "$LIMIT" "${extra[@]}")
  if ! run_complete "$RD/$name.jsonl" || [ -n "$FORCE" ]; then
    rm -f "$RD/$name.jsonl" "$RD/$name.timeline.csv" "$RD/$name-sim.jsonl"
    say "$name: $algo, T = $t, $steps local steps per node, real network"
    t0=$(date +%s.%N); : > "$RD/$name.cpu"
    bash bench/net/hetnet.sh run "$DESC" --limit "$LIMIT" -- "$PDL" train "${common[@]}" \
      --gossip-timeline "$RD/$name.timeline.csv" --results "$RD/$name.jsonl" --tag "realnet-$name" > "$RD/$name.out" 2>&1 &
    CHILD=$!; sample "pdn$CHILD" "$RD/$name.cpu" & samp=$!
    wait "$CHILD"; rc=$?; t1=$(date +%s.%N); CHILD=; wait "$samp"
    if [ $rc != 0 ] || ! run_complete "$RD/$name.jsonl"; then
      say "$name: the real run failed (status $rc); its output ($RD/$name.out) ends:" >&2; tail -n 15 "$RD/$name.out" >&2
      [ "${5:-}" = retry ] && return 1
      say "$name: once more (a launch can fail under load: a daemon that never reports)"
      one_run "$@" retry; return
    fi
    python3 -c "
import json, sys
last = {}
for l in open(sys.argv[5]):
    p, t = l.split()
    last[p] = int(t)
print(json.dumps({'event': 'realnet', 'name': sys.argv[1], 'links': sys.argv[2], 'wall_s': float(sys.argv[4]) - float(sys.argv[3]),
                  'cpu_s': sum(last.values()) / float(sys.argv[6]), 'cpu_processes': len(last), 'cores': int(sys.argv[7]),
                  'nice': int(sys.argv[8]),
                  'net': 'bench/net/hetnet.sh: network namespaces, veth pairs to a bridge, tc htb both directions; Open MPI btl self,tcp'}))" \
      "$name" "$DESC" "$t0" "$t1" "$RD/$name.cpu" "$HZ" "$NCORES" "$(awk '{sub(/^.*\) /, ""); print $17}' /proc/$$/stat)" >> "$RD/$name.jsonl"
  fi
  run_complete "$RD/$name-sim.jsonl" && [ -z "$FORCE" ] && return 0
  # the sim on the same links, each node's device rate set so that its step takes the G it measured
  local rates
  rates=$(python3 -c "
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '\"summary\"' in l][-1]
G = s['G_s']; m = sum(G) / len(G)
print('+'.join('%.6g' % (float(sys.argv[2]) / (g if g > 0 else m)) for g in G))" "$RD/$name.jsonl" "$GF") \
    || { say "$name: no G_s in the real run's summary" >&2; return 1; }
  say "$name: the sim on the same description"
  "$PDL" train "${common[@]}" --runtime sim --platform "$DESC,rates=$rates" --gossip-timeline "$RD/$name-sim.timeline.csv" \
    --results "$RD/$name-sim.jsonl" --tag "realnet-$name-sim" > "$RD/$name-sim.out" 2>&1 \
    || { say "$name: the sim run failed; $RD/$name-sim.out ends:" >&2; tail -n 5 "$RD/$name-sim.out" >&2; return 1; }
}

bad=0
for t in $TS; do
  one_run "pull-t$t" gossip "$t" "$PULLS" || bad=1
  one_run "warm-t$t" gossip-warmup "$t" "$PULLS" || bad=1
done
one_run "pull-t$TF" gossip "$TF" "$PULLS_TF" || bad=1
[ -n "$ALONE" ] && python3 bench/gossip/realnet_summary.py "$RES"
exit $bad
