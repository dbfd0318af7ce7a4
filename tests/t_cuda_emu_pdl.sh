#!/usr/bin/env bash
# t_cuda_emu_pdl.sh — `pdl train --device cuda` end to end without a GPU, on $BUILD/cuda-emu/pdl
# (make cuda-emu-pdl: the CUDA backend through the CPU emulator of kernels/cuda/emu, everything
# else bin/pdl's code). What it checks, on a tiny conv net with dropout and synthetic 8x8 data:
#   - every optimizer trains on the device, with resident batches and the evaluation on the device
#     (the default, issue 35 B/F), and gives bit for bit what the same device gives fed from the
#     host step by step (PDL_TRAIN_RESIDENT=0): results lines (times aside) and final parameters;
#   - against the CPU (bin/pdl): the same number of evaluations, and final parameters within 2e-2
#     of the distance they moved (the summation orders differ: test_cuda_net.c's emulator bound);
#   - a checkpoint after epoch 1 and --resume on the device = the uninterrupted device run;
#   - resident chunks replayed as CUDA graphs (the emulator records and replays them) = eager chunks;
#   - --algo ssgd on the device: at one rank nag's steps, at 2 ranks NCCL (the stand-in over MPI)
#     on the device's buffers = --coll mpi staged through the host, near the CPU, resumable;
#   - --algo kfac-dist on the device at 2 ranks: NCCL = MPI staged = reduce-scatterv, near the
#     CPU's K-FAC, resumable; --kfac-fisher sampled at one rank near the CPU's.
# (pdl speed is left out: its SGEMM roofline alone takes a minute on the emulator.)
# On a GPU machine CUDA_PDL=bin/pdl runs it all on the real device (ci/device/check.sh CHECKS=resident):
# the same bit-for-bit pairs (deterministic algorithms, pinned conv path); --coll nccl at 2 ranks
# only with 2 GPUs (2 ranks share one GPU on --coll mpi).
# The convolution path is pinned (PDL_CUDA_CONV=im2col, then cudnn for one optimizer): "auto"
# picks per shape by timing, so two runs may sum in different orders.
# pdl-test: cpu=12 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
BUILD=${BUILD:-build}
EMU=${CUDA_PDL:-$BUILD/cuda-emu/pdl}   # CUDA_PDL=bin/pdl on a GPU machine: the same checks on the real device
NGPU=1   # the emulator: one device per process
[ -n "${CUDA_PDL:-}" ] && NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ ! -x "$EMU" ]; then
  if grep -q 'nvcc=yes' "$BUILD/config.stamp" 2>/dev/null && grep -q 'mpi=yes' "$BUILD/config.stamp"; then
    notok "emulated-CUDA pdl" "$EMU missing (make build makes it)"
  else echo "skip - emulated-CUDA pdl: needs nvcc (a CUDA build's objects) and MPI"; fi
  finish
fi
export PDL_CUDA_CONV=im2col
C=(--data "synthetic:n=256,c=1,h=8,w=8,seed=3" --net "leaky C4 P F12 D0.25 S10" --batch 16 --threads 1 --quiet
   --epochs 2 --eval-every 5)


# the initial parameters (0 steps are not allowed: 1 step at lr 0)
PDL_DUMP_PARAMS="$T/w0" "$PDL" train "${C[@]}" --algo sgd --lr 0 --steps 1 > /dev/null
for a in msgd nag adam asgd; do   # sgd, mvasgd: the same paths (t_train_resident.sh, test_cuda_net.c)
  lr=0.05; [ $a = adam ] && lr=0.002
  for m in 1 0; do
    PDL_TRAIN_RESIDENT=$m PDL_DUMP_PARAMS="$T/g$a$m" "$EMU" train --device cuda "${C[@]}" --algo $a --lr $lr \
      --results "$T/g$a$m.jsonl" > /dev/null 2> "$T/e$a$m" || notok "$a on the emulated device (resident $m)" "$(tail -2 "$T/e$a$m")"
  done
  PDL_DUMP_PARAMS="$T/c$a" "$PDL" train "${C[@]}" --algo $a --lr $lr --results "$T/c$a.jsonl" > /dev/null
  if cmp -s "$T/g${a}0" "$T/g${a}1" && d=$(same_results "$T/g${a}0.jsonl" "$T/g${a}1.jsonl"); then
    ok "$a --device cuda (emulated): resident batches + device evaluation = host-fed steps ($(grep -c '"eval"' "$T/g${a}1.jsonl") evaluations, parameters and lines)"
  else notok "$a: resident = host-fed on the device" "${d:-parameters differ}"; fi
  r=$(apart "$T/g${a}1" "$T/c$a" "$T/w0")
  ne_g=$(grep -c '"eval"' "$T/g${a}1.jsonl"); ne_c=$(grep -c '"eval"' "$T/c$a.jsonl")
  if [ "$ne_g" = "$ne_c" ] && within "$r" 2e-2; then ok "$a: device vs CPU parameters apart $r of the distance moved (<= 2e-2)"
  else notok "$a: device vs CPU" "apart $r, evaluations $ne_g vs $ne_c"; fi
done
# msgd on the net with dropout: its chunks ran as graphs too (the masks drawn ahead into the chunk's
# buffer), and gave the host-fed steps' bits (above)
grep -q '"graph_chunks":[1-9]' "$T/gmsgd1.jsonl" && ok "msgd with dropout: chunks replayed as graphs ($(grep -o '"graph_chunks":[0-9]*' "$T/gmsgd1.jsonl"))" \
  || notok "dropout net graphs" "$(grep -o '"graph_chunks":[0-9]*' "$T/gmsgd1.jsonl")"
grep -q '"gpu":"host emulator' "$T/gmsgd1.jsonl" && grep -q '"resident_chunk":64' "$T/gmsgd1.jsonl" \
  && ok "the results name the (emulated) device and the resident chunk" || notok "config line" "$(head -c 400 "$T/gmsgd1.jsonl")"

# the cuDNN path (the emulator's stand-in runs the reference convolution)
for m in 1 0; do PDL_CUDA_CONV=cudnn PDL_TRAIN_RESIDENT=$m PDL_DUMP_PARAMS="$T/d$m" "$EMU" train --device cuda "${C[@]}" \
  --algo msgd --lr 0.05 --results "$T/d$m.jsonl" > /dev/null; done
cmp -s "$T/d0" "$T/d1" && same_results "$T/d0.jsonl" "$T/d1.jsonl" > /dev/null \
  && ok "msgd with PDL_CUDA_CONV=cudnn: resident = host-fed" || notok "cudnn path resident" "differs"

# resident chunks as CUDA graphs (sgd, msgd, nag, mvasgd, asgd, adam, one lr per chunk: captured after the first
# eager chunk, replayed): the same parameters and lines as eager chunks (PDL_TRAIN_GRAPH=0), with
# chunks of several lengths (--eval-every 24 against 64-step epochs: 24, 24, 16, 8, 24, 24, 8, ...:
# after the warm-up, lengths 16, 8 and 24 captured once each, then 5 chunks replayed with the
# state of later steps, Adam's and ASGD's per-step scalars new in each), a warm-up (lr changing
# every step: those chunks eager), and a checkpoint + resume across graph replays
G=(--data "synthetic:n=256,c=1,h=8,w=8,seed=3" --net "leaky C4 P F12 S10" --batch 4 --threads 1 --quiet --epochs 3
   --eval-every 24 --warmup 30)
for a in msgd nag mvasgd asgd adam; do   # (sgd: msgd's fused update without momentum; adam and asgd: their
  lr=0.05; [ $a = adam ] && lr=0.002     # per-step scalars from the device's slots, written before each replay)
  for g in 0 1; do PDL_TRAIN_GRAPH=$g PDL_DUMP_PARAMS="$T/gr$a$g" "$EMU" train --device cuda "${G[@]}" --algo $a \
    --lr $lr --results "$T/gr$a$g.jsonl" > "$T/gr$a$g.out"; done
  nch=$(jget graph_chunks < "$T/gr${a}1.out")
  cmp -s "$T/gr${a}0" "$T/gr${a}1" && same_results "$T/gr${a}0.jsonl" "$T/gr${a}1.jsonl" > /dev/null && [ "${nch:-0}" -gt 0 ] \
    && ok "$a: resident chunks as CUDA graphs ($nch run as graphs, 3 of them captured) = eager chunks, bit for bit" \
    || notok "$a: graph chunks" "graph_chunks=$nch; parameters or lines differ"
done
"$EMU" train --device cuda "${G[@]}" --lr 0.05 --algo msgd --epochs 2 --checkpoint "$T/grck" > /dev/null
PDL_DUMP_PARAMS="$T/grres" "$EMU" train --device cuda "${G[@]}" --lr 0.05 --algo msgd --checkpoint "$T/grck" --resume > /dev/null 2>&1
cmp -s "$T/grres" "$T/grmsgd1" && ok "graph chunks: checkpoint after epoch 2 + --resume = uninterrupted" \
  || notok "graph chunks checkpoint/resume" "final parameters differ"

# a device without room for the data sets (the emulator's free memory set to 0 MiB): pdl says so and
# feeds it from the host, with the same results
out=$(PDL_EMU_FREE_MIB=0 PDL_DUMP_PARAMS="$T/lowmem" "$EMU" train --device cuda "${C[@]:0:8}" "${C[@]:9}" --algo msgd --lr 0.05 \
  --results "$T/lowmem.jsonl" 2>&1 >/dev/null)
grep -q "batches uploaded every step instead of resident" <<<"$out" && cmp -s "$T/lowmem" "$T/gmsgd1" \
  && ! grep -q resident_chunk "$T/lowmem.jsonl" && ok "no room on the device for the data sets: said, host-fed, same parameters" \
  || notok "device short of memory" "$out"

# checkpoint after epoch 1 on the device, resume to epoch 2 (Adam: two state vectors and its step count)
"$EMU" train --device cuda "${C[@]}" --algo adam --lr 0.002 --epochs 1 --checkpoint "$T/ck" > /dev/null
PDL_DUMP_PARAMS="$T/res" "$EMU" train --device cuda "${C[@]}" --algo adam --lr 0.002 --checkpoint "$T/ck" --resume \
  > /dev/null 2>&1
cmp -s "$T/res" "$T/gadam1" && ok "device checkpoint after epoch 1 + --resume = uninterrupted (bit for bit)" \
  || notok "device checkpoint/resume" "final parameters differ"

# ssgd on the device (issue 35 G), a net without dropout at one rank: the same steps as --algo nag
# --device cuda (as on the CPU); then at 2 ranks, NCCL (the stand-in) on the device's buffers
# against --coll mpi staged through the host: the same bits; against the CPU's 2-rank run; and a
# checkpoint after epoch 1 + --resume on the devices = the uninterrupted run
S=(--data "synthetic:n=256,c=1,h=8,w=8,seed=3" --batch 8 --threads 1 --quiet --epochs 2 --lr 0.05 --momentum 0.9)
PDL_DUMP_PARAMS="$T/nag" "$EMU" train --device cuda "${S[@]}" --net "leaky C4 P F12 S10" --algo nag \
  --results "$T/nag.jsonl" > /dev/null
PDL_DUMP_PARAMS="$T/ss1" "$EMU" train --device cuda "${S[@]}" --net "leaky C4 P F12 S10" --algo ssgd \
  --results "$T/ss1.jsonl" > /dev/null
evals() { python3 -c 'import json,sys; print([(d["updates"], d["test_err"], d["test_loss"]) for d in map(json.loads, open(sys.argv[1])) if d["event"] == "eval"])' "$1"; }
cmp -s "$T/nag" "$T/ss1" && [ "$(evals "$T/nag.jsonl")" = "$(evals "$T/ss1.jsonl")" ] \
  && ok "ssgd --device cuda at one rank = nag --device cuda (parameters, and the evaluations on the device)" \
  || notok "ssgd --device cuda at one rank" "differs from nag --device cuda: $(evals "$T/ss1.jsonl") vs $(evals "$T/nag.jsonl")"
S+=(--net "leaky C4 P F12 D0.25 S10" --algo ssgd)
COLLS="mpi nccl"
[ "$NGPU" -lt 2 ] && [ -n "${CUDA_PDL:-}" ] && { COLLS=mpi; echo "skip - ssgd --coll nccl at 2 ranks: $NGPU GPU here (NCCL needs one per rank)"; }
for coll in $COLLS; do
  PDL_DUMP_PARAMS="$T/ss2$coll" MPIRUN -np 2 "$EMU" train --device cuda "${S[@]}" --coll $coll > "$T/ss2$coll.out" 2>&1 \
    || notok "ssgd --device cuda --coll $coll at 2 ranks" "$(tail -2 "$T/ss2$coll.out")"
done
PDL_DUMP_PARAMS="$T/ss2cpu" MPIRUN -np 2 "$PDL" train "${S[@]}" > /dev/null 2>&1
[ "$COLLS" = mpi ] || cmp -s "$T/ss2mpi" "$T/ss2nccl" && ok "ssgd --device cuda at 2 ranks: NCCL on the device's buffers = MPI staged (bit for bit)" \
  || notok "ssgd 2 ranks nccl vs mpi" "parameters differ"
r=$(apart "$T/ss2mpi" "$T/ss2cpu" "$T/w0")   # (the same net and seed as C's)
within "$r" 2e-2 && ok "ssgd at 2 ranks: devices vs CPU parameters apart $r of the distance moved (<= 2e-2)" \
  || notok "ssgd 2 ranks devices vs CPU" "apart $r"
c1=${COLLS##* }   # nccl where it ran
MPIRUN -np 2 "$EMU" train --device cuda "${S[@]}" --coll $c1 --epochs 1 --checkpoint "$T/ssck" > /dev/null 2>&1
PDL_DUMP_PARAMS="$T/ssres" MPIRUN -np 2 "$EMU" train --device cuda "${S[@]}" --coll $c1 --checkpoint "$T/ssck" --resume \
  > /dev/null 2>&1
cmp -s "$T/ssres" "$T/ss2$c1" && ok "ssgd on the devices at 2 ranks: checkpoint after epoch 1 + --resume = uninterrupted" \
  || notok "ssgd device checkpoint/resume" "final parameters differ"

# kfac-dist on the devices (issue 35 G: bundles, factors by cuBLAS, cuSOLVER inversions, ΔW on the
# device, kfac/kfac_dev.c) at 2 ranks: --kfac-comm allreduce with NCCL (the stand-in) on the
# device's buffers = the same staged through the host on --coll mpi = --kfac-comm reduce-scatterv
# (staged: NCCL has no Scatterv), bit for bit (a sum of two); against the CPU's 2-rank run (kfac.c:
# ssyrk factors, the fast float inverse) within the bound above; a checkpoint after epoch 1 +
# --resume (the owners' running factors and held inverses downloaded and uploaded) = the
# uninterrupted run
K=(--data "synthetic:n=128,c=1,h=8,w=8,seed=3" --net "leaky C4 P F12 S10" --batch 8 --threads 1 --quiet --epochs 2
   --lr 0.02 --algo kfac-dist --kfac-stat-decay 0.9 --kfac-inv-every 3)   # running factors, inverses held across updates
for v in "nccl allreduce" "mpi allreduce" "mpi reduce-scatterv"; do
  set -- $v
  [ "$1" = nccl ] && [ "$NGPU" -lt 2 ] && [ -n "${CUDA_PDL:-}" ] && continue
  PDL_DUMP_PARAMS="$T/kf$1$2" MPIRUN -np 2 "$EMU" train --device cuda "${K[@]}" --coll $1 --kfac-comm $2 \
    --results "$T/kf$1$2.jsonl" > "$T/kf$1$2.out" 2>&1 || notok "kfac-dist --device cuda --coll $1 --kfac-comm $2" "$(tail -2 "$T/kf$1$2.out")"
done
PDL_DUMP_PARAMS="$T/kfcpu" MPIRUN -np 2 "$PDL" train "${K[@]}" --kfac-comm allreduce > /dev/null 2>&1
{ [ -n "${CUDA_PDL:-}" ] && [ "$NGPU" -lt 2 ] || cmp -s "$T/kfncclallreduce" "$T/kfmpiallreduce"; } \
  && cmp -s "$T/kfmpiallreduce" "$T/kfmpireduce-scatterv" && grep -q '"kfac_on":"cuda"' "$T/kfmpiallreduce.jsonl" \
  && ok "kfac-dist --device cuda at 2 ranks: NCCL allreduce = MPI staged = reduce-scatterv staged (bit for bit)" \
  || notok "kfac-dist devices: collectives" "parameters differ (or kfac_on not cuda)"
r=$(apart "$T/kfmpiallreduce" "$T/kfcpu" "$T/w0")
within "$r" 2e-2 && ok "kfac-dist at 2 ranks: devices vs CPU parameters apart $r of the distance moved (<= 2e-2)" \
  || notok "kfac-dist devices vs CPU" "apart $r"
MPIRUN -np 2 "$EMU" train --device cuda "${K[@]}" --coll mpi --kfac-comm allreduce --epochs 1 --checkpoint "$T/kfck" \
  > /dev/null 2>&1
PDL_DUMP_PARAMS="$T/kfres" MPIRUN -np 2 "$EMU" train --device cuda "${K[@]}" --coll mpi --kfac-comm allreduce \
  --checkpoint "$T/kfck" --resume > /dev/null 2>&1
cmp -s "$T/kfres" "$T/kfmpiallreduce" && ok "kfac-dist on the devices: checkpoint after epoch 1 + --resume = uninterrupted" \
  || notok "kfac-dist device checkpoint/resume" "final parameters differ"
# --kfac-fisher sampled on the device at one rank (the probabilities downloaded, the labels drawn on
# the host as on the CPU): near the CPU's sampled run
PDL_DUMP_PARAMS="$T/kfsg" "$EMU" train --device cuda "${K[@]}" --algo kfac --batch 16 --kfac-fisher sampled > /dev/null 2>&1
PDL_DUMP_PARAMS="$T/kfsc" "$PDL" train "${K[@]}" --algo kfac --batch 16 --kfac-fisher sampled > /dev/null 2>&1
r=$(apart "$T/kfsg" "$T/kfsc" "$T/w0")
within "$r" 2e-2 && ok "kfac --kfac-fisher sampled: device vs CPU parameters apart $r of the distance moved (<= 2e-2)" \
  || notok "kfac sampled devices vs CPU" "apart $r"
finish
