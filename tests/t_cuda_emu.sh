#!/usr/bin/env bash
# tests/t_cuda_emu.sh — the CUDA kernels (kernels/cuda/*.cu) compiled by g++ against the host
# emulator (kernels/cuda/emu: stand-in headers, launches as host threads, cuBLAS as OpenBLAS, cuSOLVER
# as LAPACK) and run by tests/test_cuda_layers.c and tests/test_cuda_inv.c against reference/, under
# ASan + UBSan. On a machine without a GPU this is the only check the CUDA code gets, so it runs in
# make test everywhere (it needs g++, not nvcc).
# The emulator reports one device, so no test may skip here. Its lines are prefixed "emu:".
# pdl-test: cpu=70
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
out=$(BUILD=${BUILD:-build} bash kernels/cuda/emu/run.sh 2>&1); rc=$?
printf '%s\n' "$out" | sed -e 's/^ok - /ok - emu: /' -e 's/^not ok - /not ok - emu: /' -e 's/^skip - /skip - emu: /'
nok=$(grep -c '^ok - ' <<<"$out"); nskip=$(grep -c '^skip - ' <<<"$out")
if [ $rc -ne 0 ]; then notok "emulated CUDA tests" "kernels/cuda/emu/run.sh exited $rc: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
elif [ "$nok" -lt 10 ] || [ "$nskip" -ne 0 ]; then notok "emulated CUDA tests ran" "$nok passed, $nskip skipped (want >= 10 and none skipped)"
else ok "emulated CUDA tests: $nok ran, none skipped"; fi
finish
