#!/usr/bin/env bash
# tests/t_hostile.sh — issue 46: what a careless or hostile user does by mistake loses no data and
# hangs nothing. Each case wants exit 1 (bad data or file) or 2 (bad usage) and a message naming
# the file, flag, field or variable:
#   environment variables (base/util/env.c's table): PDL_SIM_STACK_KB=1 (segfaulted) and
#     =99999999999, PDL_SIM_CONTEXTS / PDL_SIM_LOG garbage (aborted inside SimGrid), PDL_TEST_HANG_STEP=abc
#     (hung at step 0), other flags' garbage; every getenv of src/, base/ and kernels/ is a row of
#     `pdl --help-env`, and none is read outside the table but the CUDA emulator's header;
#   results lines whole or not at all: a full 1 MiB tmpfs (root only: mount/umount, else a skip
#     saying so) leaves no torn line and the next run's lines parse; a torn tail left by a crash is
#     cut at the next open with a warning;
#   outputs: --results and --checkpoint (or its .prev/.node<k>) on one file, an existing checkpoint
#     without --resume (left byte for byte), a read-only checkpoint folder (refused before the
#     first step, no eval line written); pdl inverse/stability/calibrate/coll: a read-only folder
#     refused before any work naming the flag, an output flag given twice (or --json and --results
#     on one file) exit 2 naming both;
#   checkpoints: crafted but checksummed fields (updates -5 and -1e12, generation 0, optimizer
#     step count, sampler epoch and rng, a flag, PP-ASGD's staleness and update count, AGN's pull
#     clocks, EASGD's round; K-FAC's factor values, counters and section size; gossip's time table,
#     pull counts, peer rng and the local loop's divergence flag; ADAG's staleness histogram) refused
#     naming file and field; a corrupt newest file falls back to .prev saying so (one node, and two
#     MPI ranks); an interrupted save's temp file is removed by the next save; SIGTERM ends a test
#     hang (the hook hung and ignored it); a second SIGTERM/SIGINT inside the save the first started
#     ends pdl at once and the newest whole generation loads;
#   small ones: --tag not UTF-8; a read-only PDL_PLOTS_OUT fails the hermans bench up front and a
#     plot step; report.py --fail-on-errors (make report) exits 1 with error rows; --kfac-split
#     bounds; PDL_SIMLIB naming a missing file; --device cuda and --coll nccl without a GPU.
# Against ee69217's pdl (built at 15:30 on 28 Nov, PDL= that bin/pdl) 9 of 90 pass; the data-loss and
# hang cases fail: results/checkpoint collisions (4), the forgotten --resume, the full file system
# (torn line, next run unreadable), the torn tail, the read-only checkpoint folder (an epoch ran),
# calibrate --out (after the measurement), the .prev fall-backs (1 and 2 ranks), the stale temp file,
# PDL_TEST_HANG_STEP=abc and SIGTERM in a hang (hung), EASGD's round -1e12 (ran on). Its sequential
# checkpoints are format 4 (a "position" section): patch cannot reach them, so those crafted cases fail
# for that reason (by hand: its step -5 hangs and ignores SIGTERM); the second-signal cases cannot run
# there (no pause hook; its hang hook ignores SIGTERM).
# pdl-test: cpu=12
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); MNT=()
cleanup() { for m in "${MNT[@]}"; do umount "$m" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
C=(train --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16)
SIMRUN=("${C[@]}" --algo ssgd --steps 2 --runtime sim --platform cluster:nodes=2,gpus=1)
# case NAME CODE PATTERN CMD...: CMD exits CODE (20 s at most: a hang fails) and its output matches PATTERN
case_() {
  local n=$1 code=$2 pat=$3; shift 3
  out=$(timeout -k 5 20 "$@" 2>&1); local rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pat" <<<"$out"; then ok "$n: exit $rc, $(grep -m1 -oE -- "$pat" <<<"$out")"
  else notok "$n" "wanted exit $code and /$pat/, got exit $rc: $(tail -c 300 <<<"$out")"; fi
}
# all_lines_parse FILE: every line of FILE is a JSON object (no torn or glued line)
all_lines_parse() { python3 -c '
import json, sys
n = 0
for i, l in enumerate(open(sys.argv[1], "rb"), 1):
    json.loads(l.decode("utf-8")); n += 1
print(n)' "$1" 2>&1; }
# patch FILE SECTION OFFSET FORMAT VALUE[,VALUE...]: sets a field (or consecutive fields) of a version-5
# checkpoint and recomputes its CRC; a VALUE +N (+-N) adds N (-N) to the field. SECTION -N:NAME: section
# NAME's last N bytes removed, its record's size with them (OFFSET FORMAT VALUE unused).
# (header: 3200 bytes, gen at 872; a section record is name[32] kind u32 pad u32 bytes u64, then its bytes)
patch() { python3 - "$@" <<'PY'
import struct, sys, zlib
path, section, off, fmt, values = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5].split(",")
cut = 0
if section.startswith("-"):
    section, cut = section.split(":")[1], int(section.split(":")[0][1:])
b = bytearray(open(path, "rb").read())
if section == "header":
    pos = off
else:
    o, pos = 3200, None
    while o < len(b) - 4:
        name = bytes(b[o:o + 32]).split(b"\0")[0].decode()
        n = struct.unpack_from("<Q", b, o + 40)[0]
        if name == section:
            pos = o + 48 + off
            break
        o += 48 + n
    if pos is None:
        sys.exit("no section " + section)
if cut:
    struct.pack_into("<Q", b, o + 40, n - cut)
    del b[o + 48 + n - cut:o + 48 + n]
else:
    size = struct.calcsize("<" + fmt)
    for i, v in enumerate(values):
        at = pos + i * size
        x = float(v.lstrip("+")) if fmt in "df" else int(v.lstrip("+"))
        if v.startswith("+"):
            x += struct.unpack_from("<" + fmt, b, at)[0]
        struct.pack_into("<" + fmt, b, at, x)
struct.pack_into("<I", b, len(b) - 4, zlib.crc32(bytes(b[:-4])) & 0xffffffff)
open(path, "wb").write(b)
PY
}
as_root() { [ "$(id -u)" = 0 ]; }
skip() { echo "skip - $1: $2"; }
# MPI: mpirun as tests/lib.sh's MPIRUN runs it, as a command (timeout cannot run a shell function)
MPI=(env OMP_NUM_THREADS=1 mpirun --oversubscribe --bind-to none); as_root && MPI+=(--allow-run-as-root)
# rofs DIR: a read-only folder (a read-only tmpfs as root; a mode-555 folder otherwise)
rofs() { mkdir -p "$1"; if as_root; then mount -t tmpfs -o ro,size=64k tmpfs "$1" && MNT+=("$1"); else chmod 555 "$1"; fi; }

# ---- environment variables ---------------------------------------------------------------------
case_ "PDL_SIM_STACK_KB=1 (segfaulted)" 2 "PDL_SIM_STACK_KB='1': out of range" env PDL_SIM_STACK_KB=1 "$PDL" "${SIMRUN[@]}"
case_ "PDL_SIM_STACK_KB=99999999999 (aborted in SimGrid)" 2 "PDL_SIM_STACK_KB='99999999999': out of range" \
  env PDL_SIM_STACK_KB=99999999999 "$PDL" "${SIMRUN[@]}"
case_ "PDL_SIM_CONTEXTS=garbage" 2 "PDL_SIM_CONTEXTS='garbage': expected one of" env PDL_SIM_CONTEXTS=garbage "$PDL" "${SIMRUN[@]}"
case_ "PDL_SIM_LOG=garbage" 2 "PDL_SIM_LOG='garbage'" env PDL_SIM_LOG=garbage "$PDL" "${SIMRUN[@]}"
case_ "PDL_SIM_LOG=root.thresh:nonsense" 2 "PDL_SIM_LOG='root.thresh:nonsense': 'nonsense' is not a level" \
  env PDL_SIM_LOG=root.thresh:nonsense "$PDL" "${SIMRUN[@]}"
if [ -n "${SIMLIB:-build/libpdlsim.so}" ] && [ -f "${SIMLIB:-build/libpdlsim.so}" ]; then
  case_ "valid PDL_SIM_LOG and PDL_SIM_STACK_KB still run" 0 '"event":"summary"' \
    env PDL_SIM_LOG="root.thresh:error xbt.threshold:CRITICAL" PDL_SIM_STACK_KB=4096 "$PDL" "${SIMRUN[@]}"
else skip "valid sim variables" "no libpdlsim.so (SimGrid not built)"; fi
case_ "PDL_TEST_HANG_STEP=abc (hung at step 0)" 2 "PDL_TEST_HANG_STEP='abc': not an integer" env PDL_TEST_HANG_STEP=abc "$PDL" "${C[@]}" --steps 3
case_ "PDL_TEST_HANG_STEP=-1" 2 "PDL_TEST_HANG_STEP='-1': out of range" env PDL_TEST_HANG_STEP=-1 "$PDL" "${C[@]}" --steps 3
case_ "PDL_COLL_TEST_HANG=x" 2 "PDL_COLL_TEST_HANG='x'" env PDL_COLL_TEST_HANG=x "$PDL" coll --help
for kv in PDL_KFAC_DEV=yes PDL_PP_PHASES=2 PDL_TRAIN_GRAPH=on PDL_SIM_OVERLAP=off PDL_CONV=fast OMPI_COMM_WORLD_LOCAL_SIZE=x; do
  case_ "$kv" 2 "${kv%%=*}='${kv#*=}'" env "$kv" "$PDL" "${C[@]}" --steps 1
done
help=$("$PDL" --help-env); missing=
for v in $(grep -rhoE 'getenv\("[A-Za-z_]+"\)|env_(get|long)\("[A-Za-z_]+"' src base kernels | grep -oE '"[A-Za-z_]+"' | tr -d '"' | sort -u); do
  grep -q "^  $v " <<<"$help" || missing+=" $v"
done
[ -z "$missing" ] && ok "pdl --help-env lists every variable src/, base/ and kernels/ read" || notok "--help-env" "not listed:$missing"
outside=$(grep -rlE '\bgetenv\(' src base kernels | grep -vxE 'base/util/env.c|kernels/cuda/emu/cuda_runtime.h')
[ -z "$outside" ] && ok "no getenv outside base/util/env.c (but the CUDA emulator's stand-in header)" || notok "getenv outside the table" "$outside"

# ---- results files: whole lines or none ---------------------------------------------------------
R=("${C[@]}" --steps 8 --eval-every 1)
if as_root && mkdir -p "$T/full" && mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
  MNT+=("$T/full")
  "$PDL" "${R[@]}" --results "$T/full/r.jsonl" >/dev/null 2>&1
  dd if=/dev/zero of="$T/full/filler" bs=4k 2>/dev/null   # the file system is full now, but for r.jsonl's last page
  out=$("$PDL" "${R[@]}" --results "$T/full/r.jsonl" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 1 ] && grep -q "cannot write results file $T/full/r.jsonl: No space left on device; the partial line was removed" <<<"$out" \
    && ok "full file system: exit 1 naming the results file" || notok "full file system" "exit $rc: $out"
  [ "$(tail -c 1 "$T/full/r.jsonl" | od -An -c | tr -d ' ')" = '\n' ] && n=$(all_lines_parse "$T/full/r.jsonl") \
    && ok "full file system: no torn line ($n whole lines)" || notok "torn line on a full file system" "$(tail -c 80 "$T/full/r.jsonl")"
  rm -f "$T/full/filler"
  "$PDL" "${R[@]}" --results "$T/full/r.jsonl" >/dev/null 2>&1
  n2=$(all_lines_parse "$T/full/r.jsonl") && [ "$n2" -gt "${n:-0}" ] && ok "the next run's lines stay readable ($n2 lines parse)" \
    || notok "next run after a full file system" "$n2"
else skip "full file system (results lines)" "needs root to mount a 1 MiB tmpfs (uid $(id -u))"; fi
printf '%s\n%s' '{"event":"config","seed":1}' '{"event":"eval","upd' > "$T/torn.jsonl"   # a crash's torn tail
out=$("$PDL" "${C[@]}" --steps 2 --results "$T/torn.jsonl" 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && grep -q "results file $T/torn.jsonl: its last line .* was torn" <<<"$out" && n=$(all_lines_parse "$T/torn.jsonl") \
  && ok "a torn last line is cut with a warning naming the file; then $n lines parse" || notok "torn tail" "exit $rc: $out; $(cat "$T/torn.jsonl")"

# ---- outputs: no collision, no silent replacement, writability up front ---------------------------
case_ "--checkpoint X --results X" 2 "--results $T/same and --checkpoint $T/same name the same file" \
  "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/same" --results "$T/same"
[ ! -e "$T/same" ] && ok "--checkpoint X --results X: nothing written" || notok "collision wrote" "$(ls -la "$T/same")"
ln -s "$T/res.jsonl" "$T/link.ck"
case_ "--checkpoint through a symlink to --results" 2 "name the same file \($T/res.jsonl\)" \
  "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/link.ck" --results "$T/res.jsonl"
case_ "--results on a node's checkpoint file" 2 "--results $T/c.node1 is one of the files of --checkpoint $T/c" \
  "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/c" --results "$T/c.node1"
case_ "PDL_DUMP_PARAMS on --results" 2 "PDL_DUMP_PARAMS $T/r2 and --results $T/r2 name the same file" \
  env PDL_DUMP_PARAMS="$T/r2" "$PDL" "${C[@]}" --steps 1 --results "$T/r2"
"$PDL" "${C[@]}" --epochs 2 --checkpoint "$T/keep.ck" >/dev/null 2>&1; cp "$T/keep.ck" "$T/keep.orig"
case_ "an existing checkpoint without --resume" 2 "--checkpoint $T/keep.ck exists .*give --resume to continue it, or --overwrite" \
  "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/keep.ck"
cmp -s "$T/keep.ck" "$T/keep.orig" && ok "the existing checkpoint is left byte for byte" || notok "checkpoint replaced" "keep.ck changed"
case_ "--overwrite replaces it" 0 '"event":"summary"' "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/keep.ck" --overwrite
case_ "--overwrite with --resume" 2 "--overwrite and --resume: give one" "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/keep.ck" --overwrite --resume
rofs "$T/ro"
if ! ( : > "$T/ro/x" ) 2>/dev/null; then
  case_ "a read-only checkpoint folder" 1 "cannot write checkpoint $T/ro/ck: .*\(checked before any work\)" \
    "$PDL" "${C[@]}" --epochs 1 --checkpoint "$T/ro/ck" --results "$T/ro.jsonl"
  ! grep -q '"event":"eval"' "$T/ro.jsonl" 2>/dev/null && ok "a read-only checkpoint folder: refused before any evaluation" \
    || notok "read-only checkpoint folder" "an epoch ran first: $(grep -c eval "$T/ro.jsonl") eval lines"
  # the other subcommands that write files: refused before any work, naming the flag
  case_ "pdl inverse --json in a read-only folder" 1 "cannot write --json $T/ro/inv.jsonl: .*\(checked before any work\)" \
    "$PDL" inverse --sizes 8 --reps 1 --threads 1 --json "$T/ro/inv.jsonl"
  case_ "pdl stability --results in a read-only folder" 1 "cannot write --results $T/ro/st.jsonl: .*\(checked before any work\)" \
    "$PDL" stability --check --grid 11 --rounds 2 --results "$T/ro/st.jsonl"
  case_ "pdl calibrate --out in a read-only folder (found after minutes of measuring)" 1 \
    "cannot write --out $T/ro/cal.json: .*\(checked before any work\)" "$PDL" calibrate --net tiny --threads 1 --out "$T/ro/cal.json"
  if command -v mpirun >/dev/null 2>&1; then
    case_ "pdl coll --json in a read-only folder" 1 "cannot write --json $T/ro/coll.jsonl: .*\(checked before any work\)" \
      "${MPI[@]}" -np 1 "$PDL" coll -m 4 -i 1 -x 0 --json "$T/ro/coll.jsonl"
  fi
else skip "read-only checkpoint folder (and the other subcommands' outputs)" "this user can write a read-only folder"; fi
case_ "pdl coll --json given twice" 2 "coll: --json $T/c1.jsonl and --json $T/c2.jsonl: one output given twice" \
  "$PDL" coll --json "$T/c1.jsonl" --json "$T/c2.jsonl"
case_ "pdl inverse --json twice on one file" 2 "inverse: --json $T/i.jsonl and --json $T/./i.jsonl name the same file" \
  "$PDL" inverse --json "$T/i.jsonl" --json "$T/./i.jsonl"
case_ "pdl stability --json and --results on one file" 2 "stability: --json $T/s.jsonl and --results $T/s.jsonl name the same file" \
  "$PDL" stability --check --json "$T/s.jsonl" --results "$T/s.jsonl"
case_ "pdl calibrate --out twice" 2 "calibrate: --out $T/a.json and --out $T/b.json: one output given twice" \
  "$PDL" calibrate --out "$T/a.json" --out "$T/b.json"

# ---- checkpoints: checksummed is not trusted -----------------------------------------------------
"$PDL" "${C[@]}" --epochs 2 --checkpoint "$T/base.ck" >/dev/null 2>&1
# craft NAME SECTION OFFSET FORMAT VALUE PATTERN: the patched copy is refused (exit 1) naming file and field
craft() {
  local n=$1 pat=$7; cp "$T/base.ck" "$T/x.ck"; rm -f "$T/x.ck.prev"; patch "$T/x.ck" "$2" "$3" "$4" "$5"
  case_ "$n" 1 "checkpoint $T/x.ck: $pat" "$PDL" "${C[@]}" --epochs 3 --checkpoint "$T/x.ck" --resume
}
craft "crafted update count -5 (hung at the test hook)" loop 0 q -5 x "field 'updates' of section 'loop' is -5"
craft "crafted update count -1e12 (saved 'at update -999999928110')" loop 0 q -1000000000000 x "field 'updates' of section 'loop' is -1e\+12"
craft "crafted generation 0" header 872 q 0 x "field 'generation' of the header is 0"
craft "crafted flag 'reached' 7" loop 128 i 7 x "field 'reached' of section 'loop' is 7"
craft "crafted examples NaN" loop 72 d nan x "field 'examples' of section 'loop' is nan"
craft "crafted optimizer step count" optimizer 0 q -3 x "field 'step count' of section 'optimizer' is -3"
craft "crafted sampler epoch 2^50" sampler 0 q 1125899906842624 x "section 'sampler': sampler at epoch 1125899906842624"
# an algorithm's own figures: PP-ASGD's staleness; AGN's pull clocks (a pull after the master clock
# indexed the staleness histogram below 0)
P=(train --algo ppasgd --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16)
"$PDL" "${P[@]}" --epochs 1 --checkpoint "$T/pp.ck" >/dev/null 2>&1; cp "$T/pp.ck" "$T/pp2.ck"; patch "$T/pp.ck" S_bar 0 d 1e12
case_ "crafted PP-ASGD S_bar 1e12" 1 "checkpoint $T/pp.ck: PP-ASGD's fields 'S' [0-9]+, 'S_bar' 1e\+12" \
  "$PDL" "${P[@]}" --epochs 2 --checkpoint "$T/pp.ck" --resume
if command -v mpirun >/dev/null 2>&1; then
  A=(train --algo agn --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16 --tau 1)
  "${MPI[@]}" -np 3 "$PDL" "${A[@]}" --epochs 1 --checkpoint "$T/agn.ck" >/dev/null 2>&1; patch "$T/agn.ck" pulled_at 8 q 999999
  case_ "crafted AGN pulled_at past the master clock" 1 "checkpoint $T/agn.ck: field 'pulled_at\[1\]' is 999999, out of range" \
    "${MPI[@]}" -np 3 "$PDL" "${A[@]}" --epochs 2 --checkpoint "$T/agn.ck" --resume
  E=(train --algo easgd-sync --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16)
  "${MPI[@]}" -np 3 "$PDL" "${E[@]}" --epochs 1 --checkpoint "$T/es.ck" >/dev/null 2>&1; patch "$T/es.ck.node1" round 0 q -1000000000000
  case_ "crafted EASGD round -1e12 in node 1's file (would run 1e12 rounds)" 1 "checkpoint $T/es.ck.node1: field 'round' -1000000000000" \
    "${MPI[@]}" -np 3 "$PDL" "${E[@]}" --epochs 2 --checkpoint "$T/es.ck" --resume
else skip "crafted AGN and EASGD checkpoints" "no mpirun"; fi
craft "crafted sampler rng all zero (no seed gives it)" sampler 16 q 0,0,0,0 x "section 'sampler': the sampler's rng state is all zero"
patch "$T/pp2.ck" t 0 q -1000000000000
case_ "crafted PP-ASGD update count t -1e12" 1 "checkpoint $T/pp2.ck: field 't \(updates done\)' is -1000000000000" \
  "$PDL" "${P[@]}" --steps 40 --checkpoint "$T/pp2.ck" --resume
# K-FAC's owner state: factor values and counters against the net and the update count
K=(train --algo kfac --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16)
"$PDL" "${K[@]}" --steps 3 --checkpoint "$T/kf.ck" >/dev/null 2>&1
kcraft() {   # kcraft NAME SECTION OFFSET FORMAT VALUE PATTERN
  cp "$T/kf.ck" "$T/kx.ck"; patch "$T/kx.ck" "$2" "$3" "$4" "$5"
  case_ "$1" 1 "checkpoint $T/kx.ck: $6" "$PDL" "${K[@]}" --steps 6 --checkpoint "$T/kx.ck" --resume
}
kcraft "crafted K-FAC factor NaN" kfac.factors 0 f nan "section 'kfac.factors': layer 0's A\[0\]\[0\] is nan \(not finite\)"
kcraft "crafted K-FAC factor diagonal -1" kfac.factors 0 f -1 "section 'kfac.factors': layer 0's A\[0\]\[0\] is -1 \(a factor's diagonal is a mean square"
kcraft "crafted K-FAC folded count 1e9" kfac.folded 8 q 1000000000 "field 'kfac.folded\[1\]' is 1000000000, out of range \[0, 3\]"
kcraft "crafted K-FAC counter past the net's layers" kfac.inverted_at 80 q 5 "field 'kfac.folded\[10\]' 0 or 'kfac.inverted_at\[10\]' 5 is set, but the net has 3 K-FAC layers"
kcraft "K-FAC factors of other dimensions" -4:kfac.factors 0 q 0 "section 'kfac.factors' holds [0-9]+ bytes, this run needs [0-9]+"
# the local-steps loop (gossip) and the parameter server's staleness histogram (ADAG): several nodes,
# on the sim runtime (one process), else under mpirun
# (prefix and suffix arrays, not a function: timeout runs the command)
if [ -f "${SIMLIB:-build/libpdlsim.so}" ]; then
  D2=("$PDL"); D3=("$PDL"); S2=(--runtime sim --platform cluster:nodes=2,gpus=1); S3=(--runtime sim --platform cluster:nodes=3,gpus=1)
else D2=("${MPI[@]}" -np 2 "$PDL"); D3=("${MPI[@]}" -np 3 "$PDL"); S2=(); S3=(); fi
G=(train --algo gossip --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16 --tau 2)
"${D2[@]}" "${G[@]}" --epochs 1 --checkpoint "$T/gs.ck" "${S2[@]}" >/dev/null 2>&1
gcraft() {   # gcraft NAME SECTION OFFSET FORMAT VALUE PATTERN: node 0's file
  cp "$T/gs.ck" "$T/gx.ck"; cp "$T/gs.ck.node1" "$T/gx.ck.node1"; patch "$T/gx.ck" "$2" "$3" "$4" "$5"
  case_ "$1" 1 "checkpoint $T/gx.ck: $6" "${D2[@]}" "${G[@]}" --epochs 2 --checkpoint "$T/gx.ck" --resume "${S2[@]}"
}
gcraft "crafted gossip time table entry -1" times 4 f -1 "field 'times\[1\] \(transfer time of node 1; \+inf: unknown\)' is -1"
gcraft "crafted gossip pull count past the steps" stats 16 q 999999 "field 'stats.pulls \(one exchange per --tau steps at most\)' is 999999"
gcraft "crafted gossip pulls from itself" pairs 0 f 3 "field 'pairs\[0\] \(pulls from node 0\)' is 3, out of range \[0, 0\]"
gcraft "crafted gossip peer rng all zero" peer_rng 0 q 0,0,0,0 "section 'peer_rng' is all zero"
gcraft "crafted loop.local divergence flag 0.5" loop.local 0 d 0.5 "field 'diverged' of section 'loop.local' is 0.5, not 0 or 1"
# one node's file at another update than the others' (ssgd): they would wait on each other for ever
S2C=(train --algo ssgd --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16)
"${D2[@]}" "${S2C[@]}" --epochs 1 --checkpoint "$T/cut.ck" "${S2[@]}" >/dev/null 2>&1; patch "$T/cut.ck.node1" loop 0 q +-4
case_ "crafted update count in node 1's file only (the nodes would wait on each other)" 1 \
  "checkpoint $T/cut.ck.node1: snapshot 1 is at update [0-9]+ there but at update [0-9]+ in node 0's file: the nodes' files are not one cut" \
  "${D2[@]}" "${S2C[@]}" --epochs 2 --checkpoint "$T/cut.ck" --resume "${S2[@]}"
A3=(train --algo adag --data synthetic:n=256,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16 --tau 1)
"${D3[@]}" "${A3[@]}" --epochs 1 --checkpoint "$T/ad.ck" "${S3[@]}" >/dev/null 2>&1
acraft() {   # acraft NAME SECTION OFFSET FORMAT VALUE PATTERN: the server's (node 0's) file
  cp "$T/ad.ck" "$T/ax.ck"; cp "$T/ad.ck.node1" "$T/ax.ck.node1"; cp "$T/ad.ck.node2" "$T/ax.ck.node2"
  patch "$T/ax.ck" "$2" "$3" "$4" "$5"
  case_ "$1" 1 "checkpoint $T/ax.ck: $6" "${D3[@]}" "${A3[@]}" --epochs 2 --checkpoint "$T/ax.ck" --resume "${S3[@]}"
}
acraft "crafted ADAG staleness count -4" staleness_hist 8 q -4 "field 'staleness_hist\[1\]' is -4, out of range"
acraft "crafted ADAG histogram that does not count the commits" staleness_hist 0 q +7 "section 'staleness_hist' counts [0-9]+ commits, field 'commits' is [0-9]+"
acraft "crafted ADAG staleness in a bin past the commits" staleness_hist 32760 q 1 "field 'staleness_hist\[4095\] \(a staleness above the commits\)'"
acraft "crafted ADAG staleness sum" stale_sum 0 d 1e300 "field 'stale_sum \(the histogram's staleness sum\)' is 1e\+300"
cp "$T/base.ck" "$T/fb.ck"; cp "$T/base.ck.prev" "$T/fb.ck.prev"
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[5000] ^= 0xff; open(p, "wb").write(b)' "$T/fb.ck"
case_ "a corrupt newest checkpoint falls back to its .prev" 0 "checkpoint $T/fb.ck: checksum mismatch .*falling back to the kept previous generation $T/fb.ck.prev" \
  "$PDL" "${C[@]}" --epochs 3 --checkpoint "$T/fb.ck" --resume
if command -v mpirun >/dev/null 2>&1; then
  S=(train --algo ssgd --data synthetic:n=512,seed=3 --net tiny --lr 0.02 --threads 1 --quiet --batch 16)
  "${MPI[@]}" -np 2 "$PDL" "${S[@]}" --epochs 2 --checkpoint "$T/d.ck" >/dev/null 2>&1
  python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[5000] ^= 0xff; open(p, "wb").write(b)' "$T/d.ck.node1"
  case_ "2 ranks: a corrupt newest file of node 1 falls back to the generation every node keeps" 0 \
    "checkpoint $T/d.ck.node1: checksum mismatch .*falling back to the kept previous generation $T/d.ck.node1.prev" \
    "${MPI[@]}" -np 2 "$PDL" "${S[@]}" --epochs 3 --checkpoint "$T/d.ck" --resume
else skip "distributed fall-back to .prev" "no mpirun"; fi
cp "$T/base.ck" "$T/st.ck"; head -c 300000 /dev/zero > "$T/.st.ck.Ab12Cd"   # a kill -9 during a save leaves one
case_ "a stale temp file of an interrupted save is removed by the next save" 0 "removed $T/.st.ck.Ab12Cd, a temporary checkpoint file" \
  "$PDL" "${C[@]}" --epochs 3 --checkpoint "$T/st.ck" --resume
[ ! -e "$T/.st.ck.Ab12Cd" ] && ok "the temp file is gone" || notok "stale temp file" "still there"
# SIGTERM always works: the hook hung and ignored it (ee69217)
PDL_TEST_HANG_STEP=3 "$PDL" "${C[@]}" --steps 50 --checkpoint "$T/hang.ck" >/dev/null 2>&1 & p=$!
sleep 2; kill -TERM $p; for _ in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
if kill -0 $p 2>/dev/null; then kill -9 $p; wait $p; notok "SIGTERM during a test hang" "still running 10 s after SIGTERM"
else wait $p; rc=$?; [ $rc -eq 143 ] && [ -s "$T/hang.ck" ] && ok "SIGTERM ends a test hang with the state saved (exit 143)" \
  || notok "SIGTERM during a test hang" "exit $rc"; fi
# A second SIGTERM or SIGINT during the save the first one started (issue 46: a second signal ends pdl at
# once): no hang, no torn checkpoint, the newest whole generation loads. PDL_TEST_SAVE_PAUSE_MS holds that
# save at its first rename (temp file written) or its second (the replaced file kept as .prev).
sig2() {   # sig2 SIG AT
  local sig=$1 at=$2 ck=$T/s2$1.ck p rc t
  PDL_TEST_HANG_STEP=20 PDL_TEST_SAVE_PAUSE_MS=2500 "$PDL" "${C[@]}" --steps 50 --checkpoint "$ck" >/dev/null 2>"$T/s2.err" & p=$!
  for _ in $(seq 300); do [ -s "$ck" ] && break; sleep 0.05; done   # generation 1: the save at the first epoch's end
  cp "$ck" "$T/s2.gen1"; sleep 0.2
  kill -"$sig" $p
  for _ in $(seq 300); do grep -q "pause $at of 2" "$T/s2.err" && break; sleep 0.05; done
  kill -"$sig" $p; t=$SECONDS
  for _ in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
  if kill -0 $p 2>/dev/null; then kill -9 $p; wait $p; notok "a second SIG$sig during the save" "still running 10 s after it"; return; fi
  wait $p; rc=$?
  local name="a second SIG$sig during the save (at its $([ "$at" = 1 ] && echo first || echo second) rename)"
  if [ $rc -ne $((128 + $(kill -l "$sig"))) ] || ! grep -q "pause $at of 2" "$T/s2.err" || grep -q "checkpoint saved" "$T/s2.err"; then
    notok "$name" "exit $rc; wanted the second signal's ending inside the save: $(tail -c 300 "$T/s2.err")"; return; fi
  ok "$name: pdl ended at once (exit $rc, $((SECONDS - t)) s), the save not finished"
  local kept=$ck; [ "$at" = 2 ] && kept=$ck.prev
  cmp -s "$kept" "$T/s2.gen1" && ok "$name: generation 1 left whole as $(basename "$kept")" || notok "$name" "$kept is not generation 1"
  rm -f "$T/s2.jsonl"
  out=$("$PDL" "${C[@]}" --steps 24 --checkpoint "$ck" --resume --results "$T/s2.jsonl" 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q '"event":"resume".*"snapshot":1' "$T/s2.jsonl" && grep -q "removed .*a temporary checkpoint file" <<<"$out" \
    && ok "$name: --resume loads generation 1 and removes the save's temp file" || notok "$name: resume" "exit $rc: $(tail -c 300 <<<"$out")"
}
sig2 TERM 1
sig2 INT 2

# ---- small ones --------------------------------------------------------------------------------
case_ "--tag not UTF-8" 2 "--tag: not valid UTF-8 \(byte 0xff at offset 3\)" "$PDL" "${C[@]}" --steps 1 --tag $'bad\xff' --results "$T/tag.jsonl"
[ ! -s "$T/tag.jsonl" ] && ok "--tag not UTF-8: no line written" || notok "--tag" "a line was written"
if command -v gnuplot >/dev/null 2>&1; then
  rofs "$T/plots"
  if ! ( : > "$T/plots/x" ) 2>/dev/null; then
    case_ "a read-only PDL_PLOTS_OUT fails the hermans bench up front" 1 "the plots' folder $T/plots \(PDL_PLOTS_OUT\) cannot be written" \
      env PDL_PLOTS_OUT="$T/plots" PDL_RESULTS="$T/res" QUICK=1 PDL="$PDL" bash bench/hermans/run.sh
    case_ "a plot step into a read-only folder fails naming it" 1 "the plot could not be written to $T/plots" \
      bash -c 'PDL_RESULTS=$1 PDL_PLOTS_OUT=$2; source bench/lib.sh; PAPER=hermans; render_plot plots/hermans-staleness.gp; echo "went on"' _ "$T/res" "$T/plots"
  else skip "read-only plots folder" "this user can write a read-only folder"; fi
else skip "read-only plots folder" "no gnuplot"; fi
echo '[{"paper":"kfac","id":"error","verdict":"error","reason":"results/kfac/x.jsonl line 2: not JSON"}]' > "$T/rows.json"
mkdir -p "$T/empty"
case_ "report.py --fail-on-errors (make report) with an error row" 1 "has 1 error row" \
  python3 bench/report.py --fail-on-errors --rows "$T/rows.json" --results "$T/empty" --plots "$T/empty" --out "$T/page.html"
[ -s "$T/page.html" ] && ok "the page is still written" || notok "report page" "not written"
# the report page on one of its own inputs (issue 46 item 1: outputs never collide): --rows, a plot, a results file
cp "$T/rows.json" "$T/rows-keep.json"; mkdir -p "$T/plots-in" "$T/res-in/p"; : > "$T/plots-in/a.png"
case_ "report.py --out on its --rows file" 2 "are the same file" \
  python3 bench/report.py --rows "$T/rows-keep.json" --results "$T/res-in" --plots "$T/plots-in" --out "$T/rows-keep.json"
cmp -s "$T/rows.json" "$T/rows-keep.json" && ok "report.py: the refused --out left its --rows file as it was" || notok "report.py --out = --rows" "rows file changed"
case_ "report.py --out on a plot" 2 "lies among --plots" \
  python3 bench/report.py --rows "$T/rows-keep.json" --results "$T/res-in" --plots "$T/plots-in" --out "$T/plots-in/a.png"
case_ "report.py --out on a results file" 2 "lies among --results" \
  python3 bench/report.py --rows "$T/rows-keep.json" --results "$T/res-in" --plots "$T/plots-in" --out "$T/res-in/p/x.jsonl"
grep -q 'bench/report.py --fail-on-errors' Makefile && ok "make report runs report.py --fail-on-errors" || notok "make report" "no --fail-on-errors"
for s in -5 1 abc; do
  case_ "--kfac-split $s" 2 "--kfac-split: '$s': give off \(or 0\), auto \(or -1\)" "$PDL" train --algo kfac-dist --kfac-split "$s" --steps 1
done
"$PDL" train --algo kfac-dist --help 2>&1 | grep -q "off = 0, auto = -1" && ok "--kfac-split 0 and -1: documented as off and auto" \
  || notok "--kfac-split help" "0 and -1 undocumented"
if [ -f "${SIMLIB:-build/libpdlsim.so}" ]; then
  case_ "PDL_SIMLIB=/missing when SimGrid is built" 1 "PDL_SIMLIB=$T/missing.so: No such file or directory" \
    env PDL_SIMLIB="$T/missing.so" "$PDL" "${SIMRUN[@]}"
  grep -q "was not built" <<<"$out" && notok "PDL_SIMLIB message" "still says SimGrid support was not built" || ok "PDL_SIMLIB=/missing: does not say 'not built'"
else skip "PDL_SIMLIB=/missing" "SimGrid not built here"; fi
if compgen -G '/dev/nvidia[0-9]*' >/dev/null; then skip "no-GPU messages" "this machine has a GPU"
elif "$PDL" train "${C[@]}" --steps 1 --device cuda 2>&1 | grep -q "built without CUDA"; then skip "no-GPU messages" "a build without CUDA"
else
  case_ "--device cuda without a GPU" 2 "--device cuda: no CUDA device found" "$PDL" "${C[@]}" --steps 1 --device cuda
  grep -q "driver version is insufficient" <<<"$out" && notok "--device cuda message" "says the driver is insufficient" || ok "--device cuda: no 'driver version is insufficient'"
  if command -v mpirun >/dev/null 2>&1; then
    case_ "--coll nccl without a GPU" 2 "--coll nccl: no CUDA device found" "${MPI[@]}" -np 2 "$PDL" "${C[@]}" --algo ssgd --steps 1 --coll nccl
  fi
fi
finish
