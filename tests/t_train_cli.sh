#!/usr/bin/env bash
# t_train_cli.sh — `pdl train` / `pdl speed` / `pdl nets` from the command line: help, bad flags
# (exit 2), broken data (exit 1 naming the file), learning on synthetic data, bit-identical
# repeats, checkpoint/resume and SIGINT give the same final parameters as an uninterrupted run;
# the hang hook (PDL_TEST_HANG_STEP) read strictly and ended by SIGTERM; a checkpoint of another
# format version, or with a crafted progress, refused naming the file.
# pdl-test: cpu=10
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
SYN="synthetic:n=512,seed=3"
COMMON=(--data "$SYN" --net tiny --algo nag --batch 32 --lr 0.05 --threads 1 --quiet)

for c in train speed nets calibrate; do expect "help: $c" "$PDL" "$c" --help; done
expect_exit 2 "unknown flag" "$PDL" train --bogus 1
expect_exit 2 "bad batch" "$PDL" train --batch 0
expect_exit 2 "bad lr" "$PDL" train --lr abc
expect_exit 2 "unknown algo" "$PDL" train "${COMMON[@]}" --algo nope --steps 1
expect_exit 2 "bad net spec" "$PDL" train "${COMMON[@]}" --net "C8 X3 S10" --steps 1
expect_exit 2 "unknown data" "$PDL" train --data imagenet --steps 1
expect_exit 2 "unknown command" "$PDL" frobnicate
expect_exit 2 "bad --device" "$PDL" train --device gpu --steps 1
# --val N (a validation split after --train-subset's examples): it needs --train-subset, excludes
# --test-subset, and the set must hold both
expect_exit 2 "--val without --train-subset" "$PDL" train "${COMMON[@]}" --val 64 --steps 1
expect_exit 2 "--val with --test-subset" "$PDL" train "${COMMON[@]}" --train-subset 256 --val 64 --test-subset 64 --steps 1
expect_exit 2 "--val beyond the set" "$PDL" train "${COMMON[@]}" --train-subset 500 --val 64 --steps 1
v=$("$PDL" train "${COMMON[@]}" --train-subset 256 --val 64 --steps 2 | tail -1)
[ -n "$(jget test_err <<<"$v")" ] && ok "--val 64: a run evaluated on the held-out split" || notok "--val run" "$v"
# --device cuda trains every sequential optimizer and every algorithm whose descriptor says .device
# (all of them: cmd_train refuses the others, exit 2 naming the flag); and a GPU run does not take
# ssgd's sim runtime or several grad threads
n=0; refused=""
for a in $("$PDL" train --help | sed -n '/^algorithms (--algo/,/^the algorithms/p' | grep -o '^  [a-z][a-z0-9-]*'); do
  out=$("$PDL" train "${COMMON[@]}" --algo $a --device cuda --steps 1 2>&1); n=$((n + 1))
  grep -q "runs on the CPU (drop --device)" <<<"$out" && refused+=" $a"
done
[ "$n" -gt 20 ] && [ -z "$refused" ] && ok "all $n algorithms of train --help take --device cuda (none refused as a CPU-only node program)" \
  || notok "every algorithm takes --device cuda" "$n listed; refused:$refused"
expect_exit 2 "ssgd --device cuda --runtime sim" "$PDL" train "${COMMON[@]}" --algo ssgd --device cuda --runtime sim --steps 1
# cuda:N puts every rank on device N (the registry's mapping is local rank modulo the host's GPUs
# otherwise); NCCL sets each rank up on its own, so --coll nccl refuses it, naming the flag
expect_exit 2 "ssgd --device cuda:1 --coll nccl" "$PDL" train "${COMMON[@]}" --algo ssgd --device cuda:1 --coll nccl --steps 1
grep -q -- "--device cuda:1: --coll nccl" <<<"$out" && ok "ssgd --device cuda:1 --coll nccl: says why" || notok "ssgd cuda:1 nccl message" "$out"
for v in cuda:x cuda: cpu:0 cuda:64 gpu:0; do   # parsed once (the registry's forms), exit 2 naming the flag
  expect_exit 2 "bad --device $v" "$PDL" train "${COMMON[@]}" --device $v --steps 1
  grep -q -- "^pdl: --device .*cpu | cuda\[:N\]" <<<"$out" || grep -q -- "--device '$v'" <<<"$out" \
    && ok "--device $v: the message names the flag" || notok "--device $v message" "$out"
done
expect_exit 2 "ssgd --device cuda --grad-threads 2" "$PDL" train "${COMMON[@]}" --algo ssgd --device cuda --grad-threads 2 --steps 1
expect_exit 2 "speed --device cuda --algo kfac" "$PDL" speed --device cuda --algo kfac
# --device cuda without a usable device (the CPU machines): exit 2 ("no CUDA device found", as --coll
# nccl; a build without CUDA: exit 1), saying why, for every optimizer (the CLI lets each through);
# with one, each trains
for a in sgd msgd nag adam asgd mvasgd ssgd ppasgd asgd-dist kfac kfac-dist seq-sgd gossip; do
  out=$("$PDL" train "${COMMON[@]}" --algo $a --device cuda --steps 4 2>&1); rc=$?
  if grep -q "no CUDA device\|built without CUDA" <<<"$out"; then
    want=1; grep -q "no CUDA device found" <<<"$out" && want=2
    [ $rc -eq $want ] && ok "train --algo $a --device cuda without a device: exit $want ($(grep -o 'no CUDA device\|built without CUDA' <<<"$out" | head -1))" \
      || notok "train --algo $a --device cuda without a device exits $want" "rc=$rc"
  else
    [ $rc -eq 0 ] && jget test_err <<<"$(tail -1 <<<"$out")" >/dev/null && ok "train --algo $a --device cuda: 4 steps on the GPU" \
      || notok "train --algo $a --device cuda on a GPU" "rc=$rc $(tail -2 <<<"$out")"
  fi
done

# broken data: exit 1 and the file named
mkdir -p "$T/fm"; for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f /usr/share/datasets/fashion-mnist/$f.gz ] && cp /usr/share/datasets/fashion-mnist/$f.gz "$T/fm/"; done
if [ -f "$T/fm/train-images-idx3-ubyte.gz" ]; then
  head -c 100000 /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz > "$T/fm/train-images-idx3-ubyte.gz"
  out=$("$PDL" train --data "fashion-mnist:$T/fm" --steps 1 2>&1); rc=$?
  if [ $rc -eq 1 ] && echo "$out" | grep -q "train-images-idx3-ubyte"; then ok "truncated data file: exit 1 naming it"
  else notok "truncated data file" "rc=$rc out=$out"; fi
else notok "fashion-mnist present" "dataset-fashion-mnist not installed (make deps)"; fi

# learns on synthetic data; summary is the last stdout line with the documented keys
out=$("$PDL" train "${COMMON[@]}" --epochs 4 --results "$T/r.jsonl"); rc=$?
err=$(echo "$out" | tail -1 | jget test_err 2>/dev/null)
if [ $rc -eq 0 ] && python3 -c "import sys; sys.exit(0 if float('$err') < 0.3 else 1)" 2>/dev/null; then ok "learns synthetic (test_err $err)"
else notok "learns synthetic" "rc=$rc test_err=$err"; fi
keys_ok=1; for k in test_acc test_err test_loss train_loss epochs updates time_s seed; do
  echo "$out" | tail -1 | jget $k >/dev/null 2>&1 || keys_ok=0; done
[ $keys_ok = 1 ] && ok "summary keys" || notok "summary keys" "$(echo "$out" | tail -1)"
n=$(grep -c '"event":"eval"' "$T/r.jsonl"); [ "$n" -ge 4 ] && ok "results file has eval lines ($n)" || notok "results eval lines" "$n"

# bit-identical repeats
PDL_DUMP_PARAMS=$T/a.bin "$PDL" train "${COMMON[@]}" --epochs 2 >/dev/null
PDL_DUMP_PARAMS=$T/b.bin "$PDL" train "${COMMON[@]}" --epochs 2 >/dev/null
cmp -s "$T/a.bin" "$T/b.bin" && ok "same seed: bit-identical parameters" || notok "bit-identical" "params differ"
PDL_DUMP_PARAMS=$T/c.bin "$PDL" train "${COMMON[@]}" --epochs 2 --seed 2 >/dev/null
cmp -s "$T/a.bin" "$T/c.bin" && notok "seed matters" "seed 2 gave the same params" || ok "different seed differs"

# checkpoint after epoch 1, resume to epoch 2 == uninterrupted
"$PDL" train "${COMMON[@]}" --epochs 1 --checkpoint "$T/ck" >/dev/null
PDL_DUMP_PARAMS=$T/r.bin "$PDL" train "${COMMON[@]}" --epochs 2 --checkpoint "$T/ck" --resume >/dev/null
cmp -s "$T/a.bin" "$T/r.bin" && ok "checkpoint/resume == uninterrupted" || notok "checkpoint/resume" "params differ"
# a run that ends by --steps mid-epoch (16 updates an epoch here) still saves its final state
rm -f "$T/ck3"
"$PDL" train "${COMMON[@]}" --steps 5 --checkpoint "$T/ck3" >/dev/null 2>&1
[ -s "$T/ck3" ] && ok "--steps 5 (mid-epoch) with --checkpoint saves the final state" || notok "mid-epoch final checkpoint" "no $T/ck3"
PDL_DUMP_PARAMS=$T/s10.bin "$PDL" train "${COMMON[@]}" --steps 10 >/dev/null
PDL_DUMP_PARAMS=$T/s10r.bin "$PDL" train "${COMMON[@]}" --steps 10 --checkpoint "$T/ck3" --resume >/dev/null 2>&1
cmp -s "$T/s10.bin" "$T/s10r.bin" && ok "resumed from update 5 to 10 == 10 uninterrupted (bit for bit)" || notok "mid-epoch resume" "params differ"

# SIGINT mid-run: checkpoint saved, summary flushed, resume == uninterrupted
SLOW=(--data "synthetic:n=4096,seed=3" --net "C16 C16 P F64 S10" --algo nag --batch 32 --lr 0.02 --threads 1 --quiet)
PDL_DUMP_PARAMS=$T/full.bin "$PDL" train "${SLOW[@]}" --epochs 3 >/dev/null
rm -f "$T/ck2"
"$PDL" train "${SLOW[@]}" --epochs 3 --checkpoint "$T/ck2" --results "$T/int.jsonl" > "$T/int.out" 2>&1 &
# interrupt during epoch 2: wait for epoch 1's checkpoint (not a fixed sleep, which a fast or a
# loaded machine turns into a finished or a not-yet-started run), then SIGINT at once
pid=$!
for _ in $(seq 1000); do [ -s "$T/ck2" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.01; done
kill -INT $pid; wait $pid; rc=$?
if [ $rc -ne 0 ] && [ -f "$T/ck2" ] && grep -q interrupted_by_signal "$T/int.jsonl"; then ok "SIGINT: checkpoint + summary (exit $rc)"
else notok "SIGINT" "rc=$rc ck=$(ls "$T") $(tail -2 "$T/int.out")"; fi
PDL_DUMP_PARAMS=$T/res.bin "$PDL" train "${SLOW[@]}" --epochs 3 --checkpoint "$T/ck2" --resume >/dev/null
cmp -s "$T/full.bin" "$T/res.bin" && ok "SIGINT + resume == uninterrupted" || notok "SIGINT resume" "params differ"

# the watchdog covers sequential runs: a hang (test hook) ends in exit 124 naming the step
out=$(PDL_TEST_HANG_STEP=5 timeout 60 "$PDL" train "${COMMON[@]}" --steps 50 --timeout 2 2>&1); rc=$?
[ $rc -eq 124 ] && grep -q "watchdog: no progress for 2 s while sequential nag: step 5 of 50" <<<"$out" \
  && ok "sequential --timeout: a hang exits 124 naming the step" || notok "sequential watchdog" "rc=$rc $out"

# the hook is read strictly (garbage: exit 2 naming it), and a hang ends on SIGTERM with the state saved
expect_exit 2 "PDL_TEST_HANG_STEP=abc: refused" env PDL_TEST_HANG_STEP=abc timeout -k 5 60 "$PDL" train "${COMMON[@]}" --steps 2
grep -q "PDL_TEST_HANG_STEP" <<<"$out" && ok "the message names PDL_TEST_HANG_STEP" || notok "hang hook message" "$out"
rm -f "$T/ckh"
PDL_TEST_HANG_STEP=3 "$PDL" train "${COMMON[@]}" --steps 50 --eval-every 1 --results "$T/h.jsonl" --checkpoint "$T/ckh" \
  > "$T/h.out" 2>&1 & pid=$!
for _ in $(seq 3000); do grep -q '"updates":3,' "$T/h.jsonl" 2>/dev/null || ! kill -0 $pid 2>/dev/null && break; sleep 0.01; done
sleep 1; kill -TERM $pid   # (update 3 evaluated: the next one hangs, and does by now)
for _ in $(seq 1000); do kill -0 $pid 2>/dev/null || break; sleep 0.01; done
kill -KILL $pid 2>/dev/null; wait $pid; rc=$?   # (137: SIGTERM did not end it within 10 s)
[ $rc -eq 143 ] && grep -q "checkpoint saved to $T/ckh at update 3" "$T/h.out" && ok "SIGTERM ends a hang (exit 143, saved at update 3)" \
  || notok "SIGTERM during the test hang" "rc=$rc $(tail -2 "$T/h.out")"

# checkpoints: one format (version 5); another version, or a crafted progress behind a valid
# checksum, is refused naming the file
python3 - "$T/ckh" "$T/ck4" "$T/ckneg" <<'PY'
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
v4 = bytearray(b); struct.pack_into("<I", v4, 8, 4); open(sys.argv[2], "wb").write(v4)
assert b[3200:3204] == b"loop"            # the first section, the loop's: its update count first
struct.pack_into("<q", b, 3248, -1)
struct.pack_into("<I", b, len(b) - 4, zlib.crc32(bytes(b[:-4])) & 0xffffffff)
open(sys.argv[3], "wb").write(b)
PY
out=$("$PDL" train "${COMMON[@]}" --steps 50 --checkpoint "$T/ck4" --resume 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "checkpoint $T/ck4: format version 4, written by an older pdl; this pdl reads version 5" <<<"$out" \
  && ok "a version-4 checkpoint: refused naming the file and both versions" || notok "old checkpoint" "rc=$rc $out"
out=$(timeout 20 "$PDL" train "${COMMON[@]}" --steps 50 --checkpoint "$T/ckneg" --resume 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "checkpoint $T/ckneg: field 'updates' of section 'loop' is -1" <<<"$out" \
  && ok "a crafted negative update count: refused naming the file" || notok "negative progress" "rc=$rc $out"

out=$("$PDL" nets); echo "$out" | grep -q ppasgd-cifar && ok "nets lists presets" || notok "nets" "$out"
finish
