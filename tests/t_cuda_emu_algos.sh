#!/usr/bin/env bash
# t_cuda_emu_algos.sh — the distributed algorithms beyond ssgd and kfac(-dist) with --device cuda
# (issue 50 item 3) on $BUILD/cuda-emu/pdl (the CUDA backend through the CPU emulator, as
# tests/t_cuda_emu_pdl.sh), a tiny conv net with dropout on synthetic 8x8 data. Their gradients run
# on each node's device (loop_device, replica_grad_host: the parameters up, the gradient down); the
# parameters, centers and optimizer state stay on the host, where the messages and collectives read
# them (a parameter server's state on its rank's host: it only applies what workers send).
# ppasgd and asgd-dist (src/algo/ppasgd.c):
#   - --staleness emulate:S (one process, deterministic): ppasgd (S = 2) and asgd-dist (S = 1) on
#     the device against the CPU run: the same number of evaluations, and final parameters within
#     2e-2 of the distance they moved (t_cuda_emu_pdl's bound: the summation orders differ);
#   - the real runtime at 2 ranks (asynchronous: not reproducible run to run, so no bit-for-bit
#     pair): ppasgd --coll nccl and asgd-dist --coll mpi on the devices train (a summary line with
#     a finite loss, each rank naming its device), and a signal-free --checkpoint + --resume of
#     ppasgd goes on to the end.
# On a GPU machine CUDA_PDL=bin/pdl runs the same checks on the real device (--coll nccl at 2 ranks
# only with 2 GPUs).
# The others, each against its CPU run (final parameters within 2e-2 of the distance moved):
#   - the seq-* comparators (one node, deterministic);
#   - the EASGD and parameter-server families at 2 ranks (a server and one worker: deterministic);
#   - the four gossip variants at 2 ranks (asynchronous pulls: not reproducible even on the CPU, so
#     they train, name the device and end with a finite test loss).
# Then every algorithm that `pdl train --help` lists (the list and each one's roles read there, so a
# new algorithm is checked without an edit here): on the device, a checkpoint after epoch 1 and
# --resume to epoch 2 = the uninterrupted device run, bit for bit (a server and workers at 2 ranks,
# one node and peers in one process: gossip then makes no exchange, ssgd and kfac-dist sum over one
# node; their 2-rank resumes are t_cuda_emu_pdl.sh's).
# pdl-test: cpu=45 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
BUILD=${BUILD:-build}
EMU=${CUDA_PDL:-$BUILD/cuda-emu/pdl}
NGPU=1
[ -n "${CUDA_PDL:-}" ] && NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ ! -x "$EMU" ]; then
  if grep -q 'nvcc=yes' "$BUILD/config.stamp" 2>/dev/null && grep -q 'mpi=yes' "$BUILD/config.stamp"; then
    notok "emulated-CUDA pdl" "$EMU missing (make build makes it)"
  else echo "skip - emulated-CUDA pdl: needs nvcc (a CUDA build's objects) and MPI"; fi
  finish
fi
export PDL_CUDA_CONV=im2col   # "auto" times both paths per shape: two runs could sum in different orders
C0=(--data "synthetic:n=256,c=1,h=8,w=8,seed=3" --net "leaky C4 P F12 D0.25 S10" --batch 16 --threads 1
    --epochs 2 --eval-every 5 --lr 0.05 --momentum 0.9)
C=("${C0[@]}" --quiet)

PDL_DUMP_PARAMS="$T/w0" "$PDL" train "${C[@]}" --algo sgd --lr 0 --steps 1 > /dev/null

for as in ppasgd:2 asgd-dist:1; do
  a=${as%%:*}; S=${as##*:}
  E=(--algo $a --staleness emulate:$S)
  PDL_DUMP_PARAMS="$T/g$a" "$EMU" train --device cuda "${C[@]}" "${E[@]}" --results "$T/g$a.jsonl" > /dev/null 2> "$T/e$a" \
    || notok "$a --staleness emulate:$S on the emulated device" "$(tail -2 "$T/e$a")"
  PDL_DUMP_PARAMS="$T/c$a" "$PDL" train "${C[@]}" "${E[@]}" --results "$T/c$a.jsonl" > /dev/null
  r=$(apart "$T/g$a" "$T/c$a" "$T/w0")
  ne_g=$(grep -c '"eval"' "$T/g$a.jsonl"); ne_c=$(grep -c '"eval"' "$T/c$a.jsonl")
  if [ "$ne_g" = "$ne_c" ] && [ "$ne_g" -gt 2 ] && within "$r" 2e-2 && grep -q '"gpu":"' "$T/g$a.jsonl" \
     && ! grep -q '"gpu":"' "$T/c$a.jsonl"; then
    ok "$a --staleness emulate:$S --device cuda (emulated): $ne_g evaluations, parameters apart $r of the distance moved from the CPU's (<= 2e-2)"
  else notok "$a emulate:$S device vs CPU" "apart $r, evaluations $ne_g vs $ne_c"; fi
done

# the real runtime, 2 ranks: asynchronous (no bit-for-bit pair); each trains on its device
loss_ok() { python3 -c 'import json,math,sys; d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); sys.exit(0 if d.get("event")=="summary" and math.isfinite(d["test_loss"]) and d["updates"] > 0 else 1)' "$1"; }
for ac in ppasgd:nccl asgd-dist:mpi; do
  a=${ac%%:*}; coll=${ac##*:}
  [ "$coll" = nccl ] && [ "$NGPU" -lt 2 ] && [ -n "${CUDA_PDL:-}" ] && coll=mpi
  out=$(MPIRUN -np 2 "$EMU" train --device cuda "${C0[@]}" --algo $a --coll $coll --results "$T/a$a.jsonl" 2>&1); rc=$?
  if [ $rc -eq 0 ] && loss_ok "$T/a$a.jsonl" && [ "$(grep -c 'gradients on cuda:' <<<"$out")" = 2 ]; then
    ok "$a --device cuda --coll $coll at 2 ranks (emulated devices): trains ($(grep -c '"eval"' "$T/a$a.jsonl") evaluations, a finite loss), each rank on its device"
  else notok "$a --device cuda --coll $coll at 2 ranks" "rc=$rc $(tail -2 "$T/a$a.jsonl") $out"; fi
done
MPIRUN -np 2 "$EMU" train --device cuda "${C[@]}" --algo ppasgd --epochs 1 --checkpoint "$T/pck" > /dev/null 2>&1
MPIRUN -np 2 "$EMU" train --device cuda "${C[@]}" --algo ppasgd --checkpoint "$T/pck" --resume --results "$T/pres.jsonl" \
  > /dev/null 2>&1
loss_ok "$T/pres.jsonl" && grep -q '"resumed' "$T/pres.jsonl" \
  && ok "ppasgd on the devices at 2 ranks: --checkpoint, then --resume trains on to the end" \
  || notok "ppasgd device checkpoint/resume at 2 ranks" "$(tail -1 "$T/pres.jsonl" 2>/dev/null | head -c 300)"

# every other algorithm: the gradients on the device, the rest on the host
dev_vs_cpu() {   # dev_vs_cpu NAME NP ARGS...: the device run against the CPU's (parameters, evaluations);
  local a=$1 np=$2; shift 2   # every worker (not a server) says where its gradients run
  local run=("$EMU"); local cpu=("$PDL"); [ "$np" -gt 1 ] && { run=(MPIRUN -np "$np" "$EMU"); cpu=(MPIRUN -np "$np" "$PDL"); }
  PDL_DUMP_PARAMS="$T/g$a" "${run[@]}" train --device cuda "${C0[@]}" "$@" --results "$T/g$a.jsonl" > "$T/e$a" 2>&1 \
    || { notok "$a --device cuda (emulated)" "$(tail -2 "$T/e$a")"; return 1; }
  PDL_DUMP_PARAMS="$T/c$a" "${cpu[@]}" train "${C[@]}" "$@" --results "$T/c$a.jsonl" > /dev/null 2>&1
  local r; r=$(apart "$T/g$a" "$T/c$a" "$T/w0")
  local ne_g ne_c; ne_g=$(grep -c '"eval"' "$T/g$a.jsonl"); ne_c=$(grep -c '"eval"' "$T/c$a.jsonl")
  local nw=1; [ "$np" -gt 1 ] && nw=$((np - 1))   # (these multi-rank ones have a server at rank 0)
  if [ "$ne_g" = "$ne_c" ] && [ "$ne_g" -gt 2 ] && within "$r" 2e-2 && [ "$(grep -c 'gradients on cuda:' "$T/e$a")" = $nw ]; then
    ok "$a --device cuda (emulated, $np rank(s)): $ne_g evaluations, parameters apart $r of the distance moved from the CPU's (<= 2e-2)"
  else notok "$a device vs CPU" "apart $r, evaluations $ne_g vs $ne_c, $(grep -c 'gradients on cuda:' "$T/e$a") workers on a device"; fi
}
for a in seq-sgd seq-msgd seq-nag seq-asgd seq-mvasgd; do dev_vs_cpu $a 1 --algo $a; done
for a in easgd easgd-sync eamsgd downpour mdownpour adownpour mvadownpour agn downpour-lambda dynsgd adag adag-alg1 adag-agn; do
  dev_vs_cpu $a 2 --algo $a
done
for a in gossip gossip-warmup gossip-push gossip-warmup-compute; do
  out=$(MPIRUN -np 2 "$EMU" train --device cuda "${C0[@]}" --algo $a --results "$T/s$a.jsonl" 2>&1); rc=$?
  if [ $rc -eq 0 ] && loss_ok "$T/s$a.jsonl" && [ "$(grep -c 'gradients on cuda:' <<<"$out")" = 2 ]; then
    ok "$a --device cuda at 2 ranks (emulated devices): trains ($(grep -c '"eval"' "$T/s$a.jsonl") evaluations, a finite loss), each rank on its device"
  else notok "$a --device cuda at 2 ranks" "rc=$rc $(tail -2 <<<"$out")"; fi
done

# every algorithm of `pdl train --help` (the list and each one's roles read there): on the device,
# --epochs 1 with --checkpoint, then --resume to epoch 2 = the uninterrupted device run, bit for
# bit. A server and workers: 2 ranks (one worker: deterministic); one node and peers: 1 process
# (deterministic, no mpirun: peers at 2 ranks are covered above and in t_cuda_emu_pdl.sh). The
# uninterrupted run is the one above where there is one ($T/g<algo>, same arguments), else made
# here. Arguments beyond C's for determinism or state worth saving: PP-ASGD's emulated staleness,
# K-FAC's running factors and held inverses, Adam's learning rate.
resume_args() {
  case $1 in
    ppasgd) echo --staleness emulate:2 ;;
    asgd-dist) echo --staleness emulate:1 ;;
    kfac|kfac-dist) echo --lr 0.02 --kfac-stat-decay 0.9 --kfac-inv-every 3 ;;
    adam) echo --lr 0.002 ;;
  esac
}
mapfile -t ROWS < <("$EMU" train --help | sed -n '/^algorithms (--algo/,/^the algorithms/p' \
  | awk '/^  [a-z]/ { a = $1; next } /^ +\[/ && a != "" { print a, (index($0, "[server") ? 2 : 1); a = "" }')
[ "${#ROWS[@]}" -gt 30 ] && ok "train --help lists ${#ROWS[@]} algorithms, each with its roles" \
  || notok "the algorithm list of train --help" "${#ROWS[@]} rows: ${ROWS[*]}"
for row in "${ROWS[@]}"; do
  read -r a np <<<"$row"
  run=("$EMU"); [ "$np" -gt 1 ] && run=(MPIRUN -np "$np" "$EMU")
  X=(--device cuda "${C[@]}" --algo "$a" $(resume_args "$a"))
  [ -s "$T/g$a" ] || PDL_DUMP_PARAMS="$T/g$a" "${run[@]}" train "${X[@]}" > "$T/u$a" 2>&1 < /dev/null
  "${run[@]}" train "${X[@]}" --epochs 1 --checkpoint "$T/k$a" > "$T/h$a" 2>&1 < /dev/null
  PDL_DUMP_PARAMS="$T/q$a" "${run[@]}" train "${X[@]}" --checkpoint "$T/k$a" --resume --results "$T/q$a.jsonl" \
    > "$T/r$a" 2>&1 < /dev/null
  if [ -s "$T/g$a" ] && cmp -s "$T/q$a" "$T/g$a" && grep -q '"resumed_at":[1-9]' "$T/q$a.jsonl"; then
    ok "$a on the device ($np process(es)): checkpoint after epoch 1 + --resume = uninterrupted (bit for bit)"
  else notok "$a device checkpoint/resume ($np process(es))" \
    "$(cmp "$T/q$a" "$T/g$a" 2>&1 | head -1) $(cat "$T/u$a" "$T/h$a" "$T/r$a" 2>/dev/null | grep -v '^pdl: ' | tail -3)"; fi
done
finish
