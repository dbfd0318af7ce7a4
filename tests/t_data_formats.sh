#!/usr/bin/env bash
# t_data_formats.sh — pdl train on the data sets of issue 51, written on the fly by
# build/tests/test_data_formats --write: CIFAR-100 binary, downsampled ImageNet npz (imagenet32:),
# the ImageNet JPEG tree (imagenet:DIR,size=,classes=), and online augmentation (aug=): the same
# seed gives the same parameters, augmentation changes them, a checkpointed and resumed run with
# augmentation equals an uninterrupted one, and the results name the augmentation. Bad paths exit
# 1 naming the file, bad options exit 2.
# pdl-test: cpu=3
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
BUILD=${BUILD:-build}
"$BUILD/tests/test_data_formats" --write "$T" || { notok "write the data sets" "test_data_formats --write failed"; exit 1; }
NET="C8k3p1 relu P F32 relu"
COMMON=(--algo nag --batch 16 --lr 0.05 --threads 1 --quiet)
expect "cifar100 trains 5 steps" "$PDL" train --data "cifar100:$T/cifar100" --net "$NET S100" "${COMMON[@]}" --steps 5
expect "imagenet32 (npz) trains 5 steps" "$PDL" train --data "imagenet32:$T/imagenet32" --net "$NET S1000" "${COMMON[@]}" --steps 5
expect "imagenet (JPEG tree, 4 classes at 32x32) trains 5 steps" "$PDL" train --data "imagenet:$T/imagenet,size=32" --net "$NET S4" "${COMMON[@]}" --steps 5
expect "imagenet with a classes file (2 classes) trains 5 steps" "$PDL" train --data "imagenet:$T/imagenet,size=32,classes=$T/classes2.txt" --net "$NET S2" "${COMMON[@]}" --steps 5

# an npz written by Python's zipfile as numpy's savez / savez_compressed write it (zip64 entries
# opened for writing, deflated), not by our own C writer
mkdir -p "$T/pynpz"
python3 - "$T/pynpz" <<'PY'
import struct, sys, zipfile
def npy(descr, shape, data):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += ' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + '\n'
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + data
for name, n, comp in (('train_data_batch_1.npz', 40, zipfile.ZIP_DEFLATED), ('val_data.npz', 8, zipfile.ZIP_STORED)):
    with zipfile.ZipFile(sys.argv[1] + '/' + name, 'w', comp) as z:
        for member, blob in (('data.npy', npy('|u1', '(%d, 3072)' % n, bytes((i * 31 + k) & 255 for i in range(n) for k in range(3072)))),
                             ('labels.npy', npy('<i8', '(%d,)' % n, struct.pack('<%dq' % n, *[1 + i % 1000 for i in range(n)]))),
                             ('mean.npy', npy('<f8', '(3072,)', bytes(8 * 3072)))):
            with z.open(member, 'w', force_zip64=True) as f: f.write(blob)
PY
out=$("$PDL" train --data "imagenet32:$T/pynpz" --net "$NET S1000" "${COMMON[@]}" --steps 2 2>&1 | tail -n 1)
[ "$(echo "$out" | jget data 2>/dev/null)" = imagenet32 ] && ok "imagenet32: an npz from Python's zipfile (zip64, deflated) loads" || notok "python npz" "$out"

A=(--data "cifar100:$T/cifar100,aug=crop4+flip" --net "$NET S100" "${COMMON[@]}")
PDL_DUMP_PARAMS=$T/a1.bin "$PDL" train "${A[@]}" --steps 12 >/dev/null 2>&1
PDL_DUMP_PARAMS=$T/a2.bin "$PDL" train "${A[@]}" --steps 12 >/dev/null 2>&1
PDL_DUMP_PARAMS=$T/n.bin "$PDL" train --data "cifar100:$T/cifar100" --net "$NET S100" "${COMMON[@]}" --steps 12 >/dev/null 2>&1
[ -s "$T/a1.bin" ] && cmp -s "$T/a1.bin" "$T/a2.bin" && ok "aug=crop4+flip: same seed, same parameters" || notok "aug reproducible" "a1/a2 differ or missing"
[ -s "$T/n.bin" ] && ! cmp -s "$T/a1.bin" "$T/n.bin" && ok "aug=crop4+flip changes the batches" || notok "aug has an effect" "same parameters as without aug"
"$PDL" train "${A[@]}" --steps 7 --checkpoint "$T/ck" >/dev/null 2>&1
PDL_DUMP_PARAMS=$T/r.bin "$PDL" train "${A[@]}" --steps 12 --checkpoint "$T/ck" --resume >/dev/null 2>&1
cmp -s "$T/a1.bin" "$T/r.bin" && ok "aug: checkpoint at 7 + resume to 12 == 12 uninterrupted" || notok "aug resume" "parameters differ"
out=$("$PDL" train "${A[@]}" --steps 2 2>/dev/null | tail -n 1)
[ "$(echo "$out" | jget aug)" = "crop4+flip" ] && ok "results record aug" || notok "results record aug" "summary: $out"

# decoders=2: the train batches decoded lazily (prefetched by 2 threads) train to the same parameters
for algo in "nag" "ssgd --grad-threads 2"; do
  I=(--net "$NET S4" --algo $algo --batch 8 --lr 0.005 --threads 1 --quiet --steps 40)
  PDL_DUMP_PARAMS=$T/e.bin "$PDL" train --data "imagenet:$T/imagenet,size=32,aug=crop4+flip" "${I[@]}" >/dev/null 2>&1
  PDL_DUMP_PARAMS=$T/l.bin "$PDL" train --data "imagenet:$T/imagenet,size=32,aug=crop4+flip,decoders=2" "${I[@]}" >/dev/null 2>&1
  [ -s "$T/e.bin" ] && cmp -s "$T/e.bin" "$T/l.bin" && ok "imagenet decoders=2 (lazy) == in memory, --algo $algo" || notok "lazy == eager ($algo)" "parameters differ or missing"
  rm -f "$T/e.bin" "$T/l.bin"
done

out=$("$PDL" train --data "imagenet:$T/imagenet,size=32,decoders=2" --net "$NET S4" --algo nag --batch 8 --lr 0.005 --threads 1 --quiet --steps 40 2>/dev/null | tail -n 1)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["data_batches_prefetched"] + d["data_batches_on_demand"] == 40 and d["data_batches_prefetched"] >= 35 and d["data_decoded"] >= 320 and d["data_wait_s"] >= 0 else 1)' "$out" \
  && ok "decoders=2: the summary counts prefetched batches (>= 35 of 40: misses only at the start and epoch ends) and the wait" || notok "lazy summary" "$out"

# pdl speed --data: the lazy JPEG path's decode rate and the step's wait, the thread budget printed
out=$("$PDL" speed --data "imagenet:$T/imagenet,size=32,aug=crop4+flip" --net "$NET S4" --batch 16 --threads 1 --decoders 2 2>/dev/null | tail -n 1)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["event"] == "speed_data" and d["decode_img_per_s"] > 0 and d["thread_budget"] == 3 and 0 <= d["wait_frac"] <= 1 and d["steps"] > 0 else 1)' "$out" \
  && ok "pdl speed --data reports decode_img_per_s and wait_frac" || notok "pdl speed --data" "$out"
expect_exit 2 "pdl speed --data cifar100: refused (decoded at load)" "$PDL" speed --data "cifar100:$T/cifar100" --net "$NET S100"

expect_exit 1 "cifar100: missing folder exits 1" "$PDL" train --data "cifar100:$T/nothere" --net "$NET S100" "${COMMON[@]}" --steps 1
out=$("$PDL" train --data "cifar100:$T/nothere" --net "$NET S100" "${COMMON[@]}" --steps 1 2>&1)
echo "$out" | grep -q "$T/nothere/train.bin: missing" && ok "the error names the file" || notok "error names the file" "$out"
expect_exit 2 "aug=twirl exits 2" "$PDL" train --data "cifar100:$T/cifar100,aug=twirl" --net "$NET S100" "${COMMON[@]}" --steps 1
exit $FAILED
