#!/usr/bin/env bash
# tests/t_bn_outside.sh — batch normalization checked from outside (issue 51, item 5): pdl's batch
# norm (the fast CPU path and the reference, through `test_fullnet --bn-dump`) against a float64
# model written from Ioffe & Szegedy's definition in Python (tests/bn_oracle.py, stdlib only), at
# batch 1, 2 and 128, training mode (forward, running statistics, backward) and evaluation mode
# (forward from the running statistics). Shapes: after a conv (4 channels of 4x4) and after an fc
# (HW = 1; at batch 1 the batch has one value, variance 0; at batch 2 the input gradient cancels).
# Planted errors it catches are listed in the issue 51 note (a biased running variance, eps outside
# the square root).
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
BIN=${BUILD:-build}/tests/test_fullnet
[ -x "$BIN" ] || { notok "bn outside" "no $BIN (make build)"; exit 1; }
for be in cpu ref; do
  for B in 1 2 128; do
    for shape in "4 16" "6 1"; do
      for train in 1 0; do
        set -- $shape
        name="bn outside $be B=$B C=$1 HW=$2 train=$train"
        if out=$("$BIN" --bn-dump $be "$B" "$1" "$2" "$train" $((B + $1 + train)) | python3 tests/bn_oracle.py 2>&1); then
          ok "$name: $out"
        else
          notok "$name" "$out"
        fi
      done
    done
  done
done
exit $FAILED
