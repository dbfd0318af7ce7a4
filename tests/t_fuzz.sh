#!/usr/bin/env bash
# tests/t_fuzz.sh — the libFuzzer targets (tests/fuzz/: net spec, flags, sim platform incl. file:
# XML, idx/gzip and CIFAR loaders, checkpoint loader) under ASan + UBSan, 2000 inputs each from the
# seed corpus with a fixed seed: deterministic, so a finding fails here and on every re-run.
# Longer, randomised runs: make fuzz FUZZ_S=N.
# pdl-test: long
cd "$(dirname "$0")/.." || exit 1
BUILD_FUZZ=${BUILD:-build}/fuzz bash tests/fuzz/run.sh --runs "${FUZZ_RUNS:-2000}"
