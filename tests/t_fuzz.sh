#!/usr/bin/env bash
# tests/t_fuzz.sh — the libFuzzer targets (tests/fuzz/: net spec, flags, sim platform incl. file:
# XML, idx/gzip and CIFAR loaders, checkpoint loader, the resume path) under ASan + UBSan, 2000 inputs each from the
# seed corpus with a fixed seed: deterministic, so a finding fails here and on every re-run.
# Longer, randomised runs: make fuzz FUZZ_S=N.
# The targets' scratch files go to a private directory on /dev/shm (a tmpfs) where there is one:
# the checkpoint and loader targets rewrite a file per input, and truncating a file on this
# machine's journalled disk took ~3.5 ms, so 2 x 2000 rewrites were ~13 s of waiting (issue 36
# item 8); the inputs and findings are the same.
# pdl-test: cpu=14
cd "$(dirname "$0")/.." || exit 1
if [ -d /dev/shm ] && [ -w /dev/shm ] && scratch=$(mktemp -d /dev/shm/pdl-fuzz.XXXXXX 2>/dev/null); then
  trap 'rm -rf "$scratch"' EXIT
  export TMPDIR=$scratch
fi
BUILD_FUZZ=${BUILD:-build}/fuzz bash tests/fuzz/run.sh --runs "${FUZZ_RUNS:-2000}"
