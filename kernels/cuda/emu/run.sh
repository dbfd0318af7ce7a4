#!/usr/bin/env bash
# kernels/cuda/emu/run.sh — run tests/test_cuda_layers, test_cuda_inv and test_cuda_net against kernels/cuda on
# the CPU, for machines without a GPU. The .cu sources are compiled by g++ with the stand-in headers
# of this folder (kernel<<<g, b, shm, s>>>(args) rewritten to emu_launch(kernel, g, b, shm, s)(args));
# each launch runs blockDim.x fibers (ucontext, one host thread) over the blocks in order, yielding at barriers for __syncthreads
# and warp shuffles; cublasSgemm is column-major OpenBLAS sgemm with cuBLAS's argument checks, cuDNN's
# convolutions (cudnn.h) the direct sum in double with a NaN-filled workspace and refusable algorithms
# offered first, and
# cusolverDnSpotrf/Spotri are column-major LAPACK with cuSOLVER's. Built with ASan + UBSan, so an
# out-of-bounds index in a kernel fails loudly. Checks indexing, layouts and the row-/column-major
# mappings; says nothing about real-GPU timing, memory model or arch-specific codegen.
# Usage (repo root): bash kernels/cuda/emu/run.sh   (~70 s of CPU with its compiles, Intel Xeon)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${BUILD:-build}/cuda-emu
mkdir -p "$out"
san="-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer"   # -g1: line tables for the reports, a third less compile time than -g
perl -0pe 's/(\w+(?:<\w+>)?)<<<(.*?)>>>\(/emu_launch($1, $2)(/gs' kernels/cuda/cuda_layers.cu > "$out/cuda_layers_emu.cpp"
g++ -std=c++20 $san -Wall -Wextra -DPDL_HAVE_CUDNN -Ikernels/cuda/emu -Isrc -Ibase -I. -c "$out/cuda_layers_emu.cpp" -o "$out/layers.o"
g++ -std=c++20 $san -Wall -Wextra -Ikernels/cuda/emu -Isrc -Ibase -I. -x c++ -c kernels/cuda/cuda_context.cu -o "$out/context.o"
# the C files all three tests link (the oracle and the utilities; none reads a PDL_HAVE_* or
# PDL_CUDA_EMU macro or OpenMP), compiled once rather than once per test
common=()
for src in reference/*.c base/util/rng.c base/util/util.c base/util/env.c; do
  o=$out/common-$(basename "$src" .c).o
  gcc -std=c11 $san -Wall -Wextra -Werror -D_GNU_SOURCE -DPDL_GIT_REV_DEFAULT='"emu"' -Isrc -Ibase -I. -c "$src" -o "$o"
  common+=("$o")
done
gcc -std=c11 $san -Wall -Wextra -Werror -D_GNU_SOURCE -DPDL_GIT_REV_DEFAULT='"emu"' -DPDL_HAVE_CUDA -DPDL_HAVE_CUDNN \
  -DPDL_CUDA_EMU -Isrc -Ibase -I. tests/test_cuda_layers.c "${common[@]}" "$out/layers.o" "$out/context.o" \
  -o "$out/test_cuda_layers_emu" -llapacke -lopenblas -lstdc++ -lpthread -lm
OPENBLAS_NUM_THREADS=1 "$out/test_cuda_layers_emu"
# The SPD inversion (cuda_inv.cu) with the cusolverDn.h stand-in (cuSOLVER as column-major LAPACK).
perl -0pe 's/(\w+(?:<\w+>)?)<<<(.*?)>>>\(/emu_launch($1, $2)(/gs' kernels/cuda/cuda_inv.cu > "$out/cuda_inv_emu.cpp"
g++ -std=c++20 $san -Wall -Wextra -DPDL_HAVE_CUSOLVER -Ikernels/cuda/emu -Isrc -Ibase -I. -c "$out/cuda_inv_emu.cpp" -o "$out/inv.o"
gcc -std=c11 $san -Wall -Wextra -Werror -D_GNU_SOURCE -DPDL_GIT_REV_DEFAULT='"emu"' -DPDL_HAVE_CUDA -DPDL_HAVE_CUSOLVER \
  -Isrc -Ibase -I. tests/test_cuda_inv.c "${common[@]}" "$out/inv.o" "$out/context.o" \
  -o "$out/test_cuda_inv_emu" -llapacke -lopenblas -lstdc++ -lpthread -lm
OPENBLAS_NUM_THREADS=1 "$out/test_cuda_inv_emu"
# Whole training steps through kernels_cuda (cuda_table.c, model.c) against kernels_ref: a small
# net and a few steps; every optimizer through the table (optim.c, train_state.c: pdl train
# --device's step) against optim_step on kernels_cpu, which the registry (backend.c) hands the
# optimizers (tests/test_cuda_net.c with PDL_CUDA_EMU).
gcc -std=c11 $san -fopenmp -Wall -Wextra -Werror -D_GNU_SOURCE -DPDL_GIT_REV_DEFAULT='"emu"' -DPDL_HAVE_CUDA -DPDL_HAVE_CUDNN -DPDL_CUDA_EMU \
  -Isrc -Ibase -I. tests/test_cuda_net.c kernels/cuda/cuda_table.c src/core/model.c src/core/backend.c \
  src/core/train_state.c src/optim/optim.c kernels/cpu/*.c kernels/phantom/*.c "${common[@]}" \
  "$out/layers.o" "$out/context.o" -o "$out/test_cuda_net_emu" -llapacke -lopenblas -lstdc++ -lpthread -lm
OPENBLAS_NUM_THREADS=1 "$out/test_cuda_net_emu"
