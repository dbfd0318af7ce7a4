#!/usr/bin/env bash
# ci/device/bundle.sh — pack what the GPU checks need for a machine that has a GPU and the CUDA
# toolkit but none of our Debian packages (OpenBLAS, LAPACKE, Open MPI, libxsmm) and no package
# registry: pdl and the CUDA test binaries, built for any x86-64-v3 CPU (not -march=native: the
# GPU host's CPU is not this one), and the shared libraries they need that are not glibc,
# libstdc++, zlib or CUDA's (those are the GPU machine's own). Writes build-gpu/bundle.tar.xz;
# ci/device/check.sh unpacks and runs it there. Usage: bash ci/device/bundle.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "bundle.sh: no nvcc (CUDA toolkit) here" >&2; exit 1; }
T=(tests/test_cuda_layers tests/test_cuda_inv tests/test_cuda_net tests/test_cuda_fail tests/test_cuda_lazy tests/test_layers tests/test_inv)
make -j"$(nproc)" BUILD=$B PDL=$B/pdl OPT="-O3 -march=x86-64-v3 -g" $B/pdl "${T[@]/#/$B/}" >&2
rm -rf $B/pkg && mkdir -p $B/pkg/bin $B/pkg/lib
cp $B/pdl "${T[@]/#/$B/}" $B/pkg/bin/
# the libraries ldd resolves outside CUDA and the base system, by their sonames
for f in $B/pkg/bin/*; do ldd "$f"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r so path; do
    case "$path" in /usr/local/cuda*) continue ;; esac
    case "$so" in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libstdc++*|libgcc_s*|libz.so*|ld-linux*) continue ;; esac
    cp -L "$path" "$B/pkg/lib/$so"
  done
# Open MPI 4.1 (Debian's), relocated under ompi/ (OPAL_PREFIX; check.sh sets it): its components,
# PMIx's, orted and mpirun, and their help texts, so that pdl's MPI starts on the GPU machine (a
# singleton or mpirun -np 1) for the --coll nccl and kfac-dist checks; their libraries join lib/
O=$B/pkg/ompi
mkdir -p $O/bin $O/lib/x86_64-linux-gnu $O/share
cp -a /usr/lib/x86_64-linux-gnu/openmpi $O/lib/x86_64-linux-gnu/
rm -rf $O/lib/x86_64-linux-gnu/openmpi/include $O/lib/x86_64-linux-gnu/openmpi/lib/*.a
cp -a /usr/lib/x86_64-linux-gnu/pmix2 $O/pmix2
cp -L /usr/bin/orted /usr/bin/orterun $O/bin/ && ln -sf orterun $O/bin/mpirun
cp -a /usr/share/openmpi $O/share/
for f in $O/bin/orted $O/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so $O/pmix2/lib/pmix/*.so; do ldd "$f"; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r so path; do
    case "$so" in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libstdc++*|libgcc_s*|libz.so*|ld-linux*) continue ;; esac
    [ -e "$B/pkg/lib/$so" ] || cp -L "$path" "$B/pkg/lib/$so"
  done
git describe --always --dirty > $B/pkg/REVISION
# Fashion-MNIST (dataset-fashion-mnist) for check.sh's training runs: carry build-gpu/fmnist too
if [ -d /usr/share/datasets/fashion-mnist ]; then
  mkdir -p $B/fmnist && cp /usr/share/datasets/fashion-mnist/*.gz $B/fmnist/
fi
tar -C $B/pkg -cJf $B/bundle.tar.xz .
ls -la $B/bundle.tar.xz >&2
