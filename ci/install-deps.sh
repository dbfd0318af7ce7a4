#!/usr/bin/env bash
# ci/install-deps.sh — checks for the Debian packages pdlbench needs and, when run as root,
# installs the missing ones (apt-get update first, only when something must be installed).
# Not root and something missing: one message with the exact apt-get line, exit 1.
# Quiet and idempotent when everything is present. Optional extras (python3-torch for the
# PyTorch side of bench-core) are installed by that bench, not here.
set -euo pipefail
# NO_MPI=1 (as for make) leaves Open MPI out, and ScaLAPACK with it (libscalapack-openmpi-dev:
# --kfac-split's distributed inversion, src/kfac/split_inv.c). chromium: the headless browser tests/t_report.sh
# loads the report page in (make report). slurm-wlm and munge: tests/t_slurm.sh starts a one-node
# Slurm cluster (its own munged, slurmctld, slurmd) and launches pdl with srun --mpi=pmix.
# libjpeg62-turbo-dev: the ImageNet JPEG loader (src/core/data_jpeg.c). iproute2 (ip, tc): the real
# heterogeneous network of namespaces (bench/net/hetnet.sh, tests/t_netns.sh).
REQUIRED=(build-essential libopenblas-dev liblapacke-dev libxsmm-dev zlib1g-dev libjpeg62-turbo-dev libsimgrid-dev gnuplot-nox
          dataset-fashion-mnist python3 git clang libclang-rt-14-dev chromium ${PDL_EXTRA_PKGS:-})
[ -n "${NO_MPI:-}" ] || REQUIRED+=(libopenmpi-dev openmpi-bin libscalapack-openmpi-dev slurm-wlm munge iproute2)
missing=()
for p in "${REQUIRED[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
line="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
  echo "pdlbench: missing Debian packages: ${missing[*]}" >&2
  echo "pdlbench: run as root:  $line" >&2
  exit 1
fi
echo "pdlbench: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
