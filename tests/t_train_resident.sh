#!/usr/bin/env bash
# t_train_resident.sh — pdl train's resident-batch loop (issue 35 B/F; src/algo/seq.c), which
# a CUDA device runs by default: the data sets kept in the backend's memory, chunks of up to 64
# steps gathered there from one upload of their indices, the losses read back per chunk, the
# evaluation there too. PDL_TRAIN_RESIDENT=1 runs that loop on the CPU, so that its bookkeeping
# (chunk boundaries at epoch ends, --eval-every and the last step, the sampler's state, the losses'
# sums, checkpoints, resume, divergence) is checked here against the step-by-step loop, where no GPU
# is: every results line (times aside) and the final parameters must be the same. The device side
# of the same calls (gather, the softmax's sums on the device) is tests/test_cuda_net.c's
# test_resident_steps and test_eval_ws, under the emulator in make test and on a GPU.
# pdl-test: cpu=6
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# 512 examples at batch 4: 128 steps an epoch, so an epoch takes two full chunks; --eval-every 50
# cuts chunks mid-epoch; a dropout layer (its masks drawn on the host in the same order)
COMMON=(--data "synthetic:n=512,seed=3" --net "leaky C4 P F12 D0.25 S10" --batch 4 --threads 1 --quiet)


for a in sgd nag adam mvasgd; do
  lr=0.01; [ $a = adam ] && lr=0.002
  for m in 0 1; do
    PDL_TRAIN_RESIDENT=$m PDL_DUMP_PARAMS="$T/p$a$m" "$PDL" train "${COMMON[@]}" --algo $a --lr $lr --epochs 2.3 \
      --eval-every 50 --results "$T/r$a$m.jsonl" > /dev/null 2>"$T/e$a$m" || notok "train --algo $a (resident $m)" "$(tail -2 "$T/e$a$m")"
  done
  grep -q '"resident_chunk":64' "$T/r${a}1.jsonl" && ! grep -q resident_chunk "$T/r${a}0.jsonl" \
    && ok "$a: the config line says resident (chunk 64) only in the resident run" || notok "$a: resident_chunk in the config" "$(head -c 300 "$T/r${a}1.jsonl")"
  if cmp -s "$T/p${a}0" "$T/p${a}1" && out=$(same_results "$T/r${a}0.jsonl" "$T/r${a}1.jsonl"); then
    ok "$a: resident chunks = step by step ($(grep -c '"eval"' "$T/r${a}1.jsonl") evaluations, final parameters and every line the same)"
  else notok "$a: resident chunks differ from step by step" "$out"; fi
done

# with replacement (the sampler's rng instead of its order)
for m in 0 1; do PDL_TRAIN_RESIDENT=$m PDL_DUMP_PARAMS="$T/wr$m" "$PDL" train "${COMMON[@]}" --algo msgd --lr 0.01 \
  --steps 150 --with-replacement --results "$T/wr$m.jsonl" > /dev/null; done
cmp -s "$T/wr0" "$T/wr1" && same_results "$T/wr0.jsonl" "$T/wr1.jsonl" >/dev/null \
  && ok "--with-replacement: resident = step by step" || notok "--with-replacement resident" "parameters or lines differ"

# checkpoint at the end of epoch 1, then resume to 2.5 epochs: the uninterrupted run's parameters
PDL_TRAIN_RESIDENT=1 PDL_DUMP_PARAMS="$T/full" "$PDL" train "${COMMON[@]}" --algo nag --lr 0.01 --epochs 2.5 > /dev/null
PDL_TRAIN_RESIDENT=1 "$PDL" train "${COMMON[@]}" --algo nag --lr 0.01 --epochs 1 --checkpoint "$T/ck" > /dev/null
PDL_TRAIN_RESIDENT=1 PDL_DUMP_PARAMS="$T/res" "$PDL" train "${COMMON[@]}" --algo nag --lr 0.01 --epochs 2.5 \
  --checkpoint "$T/ck" --resume > /dev/null 2>&1
cmp -s "$T/full" "$T/res" && ok "resident: checkpoint after epoch 1 + resume = uninterrupted (bit for bit)" \
  || notok "resident checkpoint/resume" "final parameters differ"

# divergence: reported at the same step as the step-by-step loop (the parameters evaluated after
# it are the chunk end's: documented in src/algo/seq.c)
for m in 0 1; do
  PDL_TRAIN_RESIDENT=$m "$PDL" train "${COMMON[@]}" --algo nag --lr 0.05 --steps 120 > "$T/div$m" 2>/dev/null
done
d0=$(jget diverged_at < "$T/div0" 2>/dev/null); d1=$(jget diverged_at < "$T/div1" 2>/dev/null)
[ -n "$d0" ] && [ "$d0" = "$d1" ] && [ "$(jget updates < "$T/div0")" = "$(jget updates < "$T/div1")" ] \
  && ok "divergence: resident reports the same step ($d0) and update count as step by step" \
  || notok "divergence step, resident" "step by step: $d0, resident: $d1"

expect_exit 2 "PDL_TRAIN_RESIDENT=2: refused (exit 2, base/util/env.c's table), naming it" env PDL_TRAIN_RESIDENT=2 "$PDL" train "${COMMON[@]}" --steps 1
grep -q "PDL_TRAIN_RESIDENT='2'" <<<"$out" && ok "the message names PDL_TRAIN_RESIDENT" || notok "message" "$out"
finish
