#!/usr/bin/env bash
# t_sim_dist.sh — distributed training on the sim runtime (SimGrid actors, real numerics):
#   sim SSGD on cluster:nodes=2,gpus=2 (4 workers x batch b) == sequential NAG with batch 4b
#     (float summation order differs -- the sim ring allreduce, per-role partial sums -- and
#     grows through the dynamics: max |diff| <= 1e-5 after 24 updates at lr 0.02 on O(1)
#     parameters; measured ~2e-7);
#   sim SSGD == real SSGD (mpirun -np 4) with the same 4 workers, same tolerance and reason;
#   the overlap pool (gradients on helper threads while roles sit in simulated compute) gives
#     the same bits as computing inline (PDL_SIM_OVERLAP=0), and a sim run is deterministic;
#   8, 16 and 64 simulated workers run (elapsed seconds printed; speed is measured in benchmarks,
#     the timeout only guards against a hang);
#   summaries mark "runtime":"sim","simulated":true with the worker count and the platform;
#   machine:...,load=L (L other busy sessions; the autogroup scheduler gives our session
#     C/(1+L) cores): 2 ranks with load=1 on 2 cores share one core, so they take exactly as
#     long as 2 ranks at half the rate on 2 idle cores; 1 rank with load=3 gets half a core.
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
S=(--data "synthetic:n=1024,seed=3" --net tiny --lr 0.02 --momentum 0.9 --threads 1 --quiet --steps 24)
SIM=(--runtime sim --platform cluster:nodes=2,gpus=2)
TOL=1e-5

PDL_DUMP_PARAMS=$T/seq64.bin "$PDL" train "${S[@]}" --algo nag --batch 64 >/dev/null || notok "sequential nag" "failed"
PDL_DUMP_PARAMS=$T/sim.bin "$PDL" train "${S[@]}" --algo ssgd --batch 16 "${SIM[@]}" > "$T/sim.out" 2>&1
rc=$?; d=$(maxdiff "$T/seq64.bin" "$T/sim.bin" 2>/dev/null)
if [ $rc -eq 0 ] && within "$d" $TOL; then ok "sim ssgd 2 nodes x 2 gpus x b=16 == nag b=64 (max diff $d)"
else notok "sim ssgd == nag" "rc=$rc diff=$d $(tail -3 "$T/sim.out")"; fi
line=$(tail -1 "$T/sim.out")
echo "$line" | grep -q '"runtime":"sim","simulated":true' && ok "sim summary marks runtime sim, simulated true" \
  || notok "sim summary" "$line"
[ "$(echo "$line" | jget workers)" = 4 ] && [ "$(echo "$line" | jget platform)" = "cluster:nodes=2,gpus=2" ] \
  && ok "sim summary: 4 workers on cluster:nodes=2,gpus=2" || notok "sim summary fields" "$line"

PDL_DUMP_PARAMS=$T/real.bin MPIRUN -np 4 "$PDL" train "${S[@]}" --algo ssgd --batch 16 > "$T/real.out" 2>&1
rc=$?; d=$(maxdiff "$T/real.bin" "$T/sim.bin" 2>/dev/null)
if [ $rc -eq 0 ] && within "$d" $TOL; then ok "sim ssgd 4 workers == real ssgd 4 ranks (max diff $d)"
else notok "sim vs real ssgd" "rc=$rc diff=$d $(tail -3 "$T/real.out")"; fi

PDL_SIM_OVERLAP=0 PDL_DUMP_PARAMS=$T/inline.bin "$PDL" train "${S[@]}" --algo ssgd --batch 16 "${SIM[@]}" >/dev/null 2>&1
cmp -s "$T/inline.bin" "$T/sim.bin" && ok "overlap pool == inline gradients, bit for bit" || notok "overlap" "differs from inline"
PDL_DUMP_PARAMS=$T/sim2.bin "$PDL" train "${S[@]}" --algo ssgd --batch 16 "${SIM[@]}" >/dev/null 2>&1
cmp -s "$T/sim2.bin" "$T/sim.bin" && ok "sim ssgd is deterministic (two runs, same bits)" || notok "determinism" "runs differ"

tpu() { "$PDL" train "${S[@]}" --steps 4 --algo ssgd --batch 16 --runtime sim --platform "$1" 2>&1 | tail -1 | jget time_per_update_s; }
for pair in "ranks=2,gflops=10,membw=10,load=1 ranks=2,gflops=5,membw=10" "ranks=1,gflops=10,membw=10,load=3 ranks=1,gflops=5,membw=10"; do
  set -- $pair
  a=$(tpu "machine:$1"); b=$(tpu "machine:$2")
  python3 -c "import sys; a, b = $a, $b; sys.exit(0 if abs(a - b) <= 1e-9 * b else 1)" 2>/dev/null \
    && ok "machine $1 takes as long as $2 ($a s per update)" || notok "machine load" "$1: $a vs $2: $b"
done
expect_exit 2 "machine load=-1 is a usage error" "$PDL" train "${S[@]}" --algo ssgd --runtime sim --platform machine:ranks=2,load=-1

# a grad role per device, 1 to 8 devices per node
for shape in "nodes=2,gpus=4 8" "nodes=4,gpus=4 16" "nodes=8,gpus=8 64"; do
  set -- $shape
  t0=$(date +%s.%N)
  out=$(timeout 300 "$PDL" train --data "synthetic:n=4096,seed=3" --net tiny --lr 0.02 --threads 1 --quiet \
        --steps 10 --algo ssgd --batch 4 --runtime sim --platform "cluster:$1" 2>&1)
  rc=$?; el=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
  line=$(echo "$out" | tail -1)
  if [ $rc -eq 0 ] && [ "$(echo "$line" | jget workers)" = "$2" ] && [ "$(echo "$line" | jget updates)" = 10 ] \
     && echo "$line" | grep -q '"simulated":true'; then ok "$2 simulated workers (cluster:$1): 10 updates in $el s wall"
  else notok "$2 simulated workers" "rc=$rc after $el s: $(echo "$out" | tail -2)"; fi
done
finish
