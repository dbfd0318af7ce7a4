#!/usr/bin/env bash
# ci/device/check.sh — the GPU checks, on a machine with a CUDA device, from build-gpu/bundle.tar.xz
# (ci/device/bundle.sh). Runs, each logged to $OUT (or /tmp/gpu-out):
#   the CUDA layer tests and the cuSOLVER inversion tests against the CPU reference, test_cuda_lazy, with
#   PDL_REQUIRE_GPU=1 (a skip is a failure); test_cuda_fail (a CUDA error names the call);
#   both under compute-sanitizer memcheck and racecheck; pdl coll --backend nccl at one rank;
#   K-FAC with its inversions on cuSOLVER (--kfac-inverse cuda) beside the CPU's (fast), and the whole update on the device (--device cuda), same seed;
#   pdl inverse (cuSOLVER beside the CPU's fast path and the LAPACKE reference) at K-FAC's orders;
#   test_cuda_net (training steps on the GPU against the CPU); pdl speed --device cuda, its
#   convolutions in each of SPEED_CONV's modes (PDL_CUDA_CONV; default auto im2col), each eager and
#   with the step as one CUDA graph (--graph; SPEED_GRAPH= turns that off), beside PyTorch
#   (bench/gpu/torch_speed_cuda.py, CUDA-graphed, and eager at TORCH_BATCHES) at batches 1, 16, 128, 512.
#   pdl train --device cuda beside --device cpu: one epoch of ppasgd-cifar on Fashion-MNIST
#   (carry build-gpu/fmnist as well).
#   pdl speed --device cuda --profile: the per-layer times of a GPU step (CHECKS=profile only);
#   --device cuda checkpoint after epoch 1 + resume == an uninterrupted 2 epochs (CHECKS=resume only).
# CHECKS=bench: bench/gpu/run.sh (make bench-gpu) with the bundle's pdl, its results under $OUT/results.
# CHECKS="tests train nccl seam resident kfac inverse speed san" (the default: all but profile, resume, bench) picks a
# subset; SAN_TOOLS, SAN_TESTS, SAN_TIMEOUT and SPEED_BATCHES narrow those parts. seam: pdl train --algo
# ssgd and kfac-dist (both also with --device cuda) on --coll nccl == --coll mpi at 1 rank, bit for bit (Open
# MPI from the bundle). resident: tests/t_cuda_emu_pdl.sh with the bundle's pdl on the real device (pdl
# train --device cuda resident = host-fed, against the CPU, resume; ssgd --device cuda = nag; kfac-dist
# --device cuda near the CPU, resumable) and tests/t_cuda_emu_algos.sh (every other algorithm's gradients
# on the device, near its CPU run).
# CUDA's libraries come from /usr/local/cuda and, for cuDNN and NCCL if they are not there, from
# the nvidia-* Python wheels. Prints a summary table last. Usage: bash ci/device/check.sh
set -u
cd "$(dirname "$0")/../.."
OUTD=${OUT:-/tmp/gpu-out}; mkdir -p "$OUTD"
G=/tmp/pdl-gpu; rm -rf $G; mkdir -p $G
tar -C $G -xJf build-gpu/bundle.tar.xz || { echo "check.sh: no build-gpu/bundle.tar.xz (run ci/device/bundle.sh, carry it)"; exit 1; }
LP=$G/lib:/usr/local/cuda/lib64
for so in libcudnn.so.9 libnccl.so.2 libcusolver.so.12 libcublas.so.13 libnvJitLink.so.13; do
  ldconfig -p | grep -q "$so" && continue
  [ -e /usr/local/cuda/lib64/$so ] && continue
  d=$(find / -xdev -name "$so" -path '*nvidia*' 2>/dev/null | head -1)
  [ -n "$d" ] && LP=$LP:$(dirname "$d")
done
# Open MPI relocated from the bundle (bundle.sh): OPAL_PREFIX finds its components and help texts,
# PMIx's are named; shared memory and self only (no UCX or fabric on one node)
if [ -d $G/ompi ]; then
  export OPAL_PREFIX=$G/ompi PMIX_INSTALL_PREFIX=$G/ompi/pmix2 PMIX_MCA_mca_base_component_path=$G/ompi/pmix2/lib/pmix
  export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_osc=^ucx
  LP=$LP:$G/ompi/lib/x86_64-linux-gnu/openmpi/lib:$G/ompi/pmix2/lib; export PATH=$G/ompi/bin:$PATH
fi
export LD_LIBRARY_PATH=$LP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH PDL_REQUIRE_GPU=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "bundle $(cat $G/REVISION); $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
echo "host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
SUM=()
step() { # step NAME CMD...: run, log, record pass/fail and the tail
  local name=$1; shift
  local t0=$SECONDS
  "$@" > "$OUTD/$name.log" 2>&1; local rc=$?
  local tests; tests=$(grep -c '^ok ' "$OUTD/$name.log"); local skips; skips=$(grep -c '^skip ' "$OUTD/$name.log")
  local bad; bad=$(grep -c '^not ok' "$OUTD/$name.log")
  SUM+=("$(printf '%-28s rc=%-3s ok=%-4s not_ok=%-3s skip=%-3s %4ss' "$name" "$rc" "$tests" "$bad" "$skips" $((SECONDS - t0)))")
  echo "== $name (rc $rc)"; tail -4 "$OUTD/$name.log"
}
want() { [[ " ${CHECKS:-tests train nccl seam resident kfac inverse speed san} " == *" $1 "* ]]; }
PDL=$G/bin/pdl
if want tests; then
  step cuda_layers $G/bin/test_cuda_layers
  step cuda_inv $G/bin/test_cuda_inv
  step cuda_net $G/bin/test_cuda_net
  step cuda_fail $G/bin/test_cuda_fail
  step cuda_lazy $G/bin/test_cuda_lazy
fi
if want train && [ -d build-gpu/fmnist ]; then # issue 18's check: one epoch of ppasgd-cifar, msgd, GPU vs CPU
  for dv in cuda cpu; do
    step train_$dv $PDL train --device $dv --net ppasgd-cifar --algo msgd --epochs 1 --data fashion-mnist:build-gpu/fmnist --quiet
  done
elif want train; then SUM+=("train: no build-gpu/fmnist (carry it: ci/device/bundle.sh copies Fashion-MNIST there)"); fi
if want resume && [ -d build-gpu/fmnist ]; then # --device cuda: checkpoint after epoch 1, resume to 2 == uninterrupted
  R=(train --device cuda --net ppasgd-cifar --algo msgd --data fashion-mnist:build-gpu/fmnist --train-subset 4096
     --test-subset 1000 --quiet)
  rm -f /tmp/gpu-ck /tmp/gpu-full.bin /tmp/gpu-res.bin
  PDL_DUMP_PARAMS=/tmp/gpu-full.bin step resume_full $PDL "${R[@]}" --epochs 2
  step resume_first $PDL "${R[@]}" --epochs 1 --checkpoint /tmp/gpu-ck
  PDL_DUMP_PARAMS=/tmp/gpu-res.bin step resume_rest $PDL "${R[@]}" --epochs 2 --checkpoint /tmp/gpu-ck --resume
  if cmp -s /tmp/gpu-full.bin /tmp/gpu-res.bin; then SUM+=("resume: checkpoint/resume on the GPU == uninterrupted, bit for bit")
  else SUM+=("resume: checkpoint/resume on the GPU DIFFERS from uninterrupted: $(python3 -c 'import sys,array
a=array.array("f",open(sys.argv[1],"rb").read()); b=array.array("f",open(sys.argv[2],"rb").read())
print("max |diff| %.3g over %d params" % (max(abs(x-y) for x,y in zip(a,b)) if len(a)==len(b) else float("nan"), len(a)))' /tmp/gpu-full.bin /tmp/gpu-res.bin)"); fi
  command -v compute-sanitizer >/dev/null &&
    step san_memcheck_train timeout ${SAN_TIMEOUT:-200} compute-sanitizer --tool memcheck --error-exitcode 9 $PDL "${R[@]}" --steps 20
fi
want nccl && step nccl_coll_np1 $PDL coll --backend nccl -m 4:64M -f 4 -i 5 -x 2
if want resident; then   # tests/t_cuda_emu_pdl.sh on the real device: resident = host-fed, ssgd = nag, resume
  step resident env CUDA_PDL=$PDL PDL=$PDL bash tests/t_cuda_emu_pdl.sh
  step resident_algos env CUDA_PDL=$PDL PDL=$PDL bash tests/t_cuda_emu_algos.sh   # the other algorithms (issue 50)
fi
if want seam; then # the collective seam on a real GPU: training on --coll nccl == --coll mpi, 1 rank, bit for bit
  S=(--data "synthetic:n=1024,seed=3" --net tiny --threads 1 --quiet)
  for c in mpi nccl; do
    PDL_DUMP_PARAMS=/tmp/seam-ss-$c.bin step seam_ssgd_$c mpirun -np 1 $PDL train "${S[@]}" --algo ssgd --lr 0.02 \
      --momentum 0.9 --batch 32 --steps 24 --coll $c
    PDL_DUMP_PARAMS=/tmp/seam-kf-$c.bin step seam_kfac_$c mpirun -np 1 $PDL train "${S[@]}" --algo kfac-dist --lr 0.01 \
      --batch 16 --steps 12 --kfac-inverse cuda --coll $c
  done
  for c in mpi nccl; do   # ssgd and kfac-dist with --device cuda (issue 35 G): NCCL on the compute stream vs MPI staged
    PDL_DUMP_PARAMS=/tmp/seam-sd-$c.bin step seam_ssgd_dev_$c mpirun -np 1 $PDL train "${S[@]}" --algo ssgd --lr 0.02 \
      --momentum 0.9 --batch 32 --steps 24 --coll $c --device cuda
    PDL_DUMP_PARAMS=/tmp/seam-kd-$c.bin step seam_kfac_dev_$c mpirun -np 1 $PDL train "${S[@]}" --algo kfac-dist --lr 0.01 \
      --batch 16 --steps 12 --kfac-comm allreduce --coll $c --device cuda
  done
  for a in ss kf sd kd; do
    if cmp -s /tmp/seam-$a-mpi.bin /tmp/seam-$a-nccl.bin; then SUM+=("seam $a: --coll nccl == --coll mpi at 1 rank, bit for bit")
    else SUM+=("seam $a: --coll nccl DIFFERS from --coll mpi at 1 rank (or a run failed)"); fi
  done
fi
if want kfac; then
  for inv in cuda fast; do
    step kfac_$inv $PDL train --net ppasgd-cifar --data synthetic --batch 32 --steps 20 --seed 7 --algo kfac --kfac-inverse $inv
  done
  # the whole K-FAC update on the device (issue 35 G: kfac/kfac_dev.c), the same run
  step kfac_device $PDL train --net ppasgd-cifar --data synthetic --batch 32 --steps 20 --seed 7 --algo kfac --device cuda
fi
want inverse && step inverse $PDL inverse --sizes 289,577,1024,1153,2048,4096 --reps 5
if want speed; then # pdl speed --device cuda (each conv mode, eager and one CUDA graph per step) beside PyTorch eager and CUDA-graphed
  for b in ${SPEED_BATCHES:-1 16 128 512}; do
    for cv in ${SPEED_CONV:-auto im2col}; do
      PDL_CUDA_CONV=$cv step speed_pdl_${cv}_b$b $PDL speed --device cuda --batch $b --repeats 5
      [ -n "${SPEED_GRAPH:-1}" ] && PDL_CUDA_CONV=$cv step speed_pdl_${cv}_graph_b$b $PDL speed --device cuda --batch $b --repeats 5 --graph
    done
    for m in graph eager; do
      [[ " ${TORCH_BATCHES:-${SPEED_BATCHES:-1 16 128 512}} " == *" $b "* || $m == graph ]] || continue
      step speed_torch_${m}_b$b python3 bench/gpu/torch_speed_cuda.py $b $m 5
    done
  done
fi
if want bench; then # make bench-gpu's driver on the bundle's pdl: results/gpu's table and plot data under $OUTD
  PDL=$PDL PDL_RESULTS=$OUTD/results PDL_PLOTS_OUT=$OUTD step bench_gpu bash bench/gpu/run.sh
  [ -f "$OUTD/results/gpu/table.md" ] && SUM+=("bench-gpu: $OUTD/results/gpu/table.md")
fi
if want profile; then # where a GPU step's time goes, layer by layer (timers wait for the device)
  for b in ${SPEED_BATCHES:-1 16 128 512}; do step profile_b$b $PDL speed --device cuda --batch $b --repeats 3 --profile; done
fi
# last, being the slowest (each bounded by SAN_TIMEOUT seconds; exit 124 = ran out)
if want san && command -v compute-sanitizer >/dev/null; then
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
    for t in ${SAN_TESTS:-cuda_layers cuda_net cuda_inv}; do
      step "san_${tool}_$t" timeout ${SAN_TIMEOUT:-200} compute-sanitizer --tool $tool --error-exitcode 9 $G/bin/test_$t
    done
  done
elif want san; then SUM+=("compute-sanitizer: not found"); fi
echo; echo "summary ($(cat $G/REVISION), logs in $OUTD):"; printf '%s\n' "${SUM[@]}"
for inv in cuda fast; do # the same run with the inversions on cuSOLVER and on the CPU
  [ -f "$OUTD/kfac_$inv.log" ] || continue
  echo "kfac $inv: $(grep -o '"train_loss":[^,]*,\|"test_loss":[^,]*,\|"inverse_s_per_update":[^,]*,' "$OUTD/kfac_$inv.log" | tr -d '\n')"
done
for dv in cuda cpu; do
  [ -f "$OUTD/train_$dv.log" ] || continue
  echo "train --device $dv: $(grep -o '"test_err":[^,]*,\|"train_loss":[^,]*,\|"time_s":[^,]*,' "$OUTD/train_$dv.log" | tail -3 | tr -d '\n')"
done
if want profile; then
  for b in ${SPEED_BATCHES:-1 16 128 512}; do echo; grep -v '^{' "$OUTD/profile_b$b.log"; done
fi
if want speed; then
  echo "img/s, median of 5 windows (min-max), per batch: pdl (conv mode, eager or graph) and PyTorch (eager, graph)"
  python3 -c 'import json,sys,glob,re,os
rows={}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "speed_*_b*.log"))):
  m=re.match(r"speed_(.*)_b(\d+)\.log", os.path.basename(p))
  try:
    j=[json.loads(l) for l in open(p) if l.startswith("{")][-1]; v="%.0f (%.0f-%.0f)" % (j["img_per_s"], j["img_per_s_min"], j["img_per_s_max"])
  except Exception: v="failed"
  rows.setdefault(int(m.group(2)), []).append("%s %s" % (m.group(1), v))
for b in sorted(rows): print("  batch %d: %s" % (b, "; ".join(rows[b])))' "$OUTD"
  grep -h "cuBLAS SGEMM" "$OUTD"/speed_pdl_*_b*.log | head -8
  python3 -c 'import json,sys
for p in sys.argv[1:]:
  try: j=[json.loads(l) for l in open(p) if l.startswith("{")][-1]
  except Exception: continue
  print(p.split("/")[-1], "ops/step %.2f, waits/step %.3f, bytes up/step %.0f" % (j.get("gpu_ops_per_step",-1), j.get("gpu_syncs_per_step",-1), j.get("h2d_bytes_per_step",-1)), j.get("graph_last_loss",""), j.get("cudnn_algos",""))' "$OUTD"/speed_pdl_*_b*.log
fi
