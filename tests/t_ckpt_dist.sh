#!/usr/bin/env bash
# t_ckpt_dist.sh — checkpoint and resume of distributed runs (issue 14): SIGINT on one rank of an
# `mpirun -np 3` run saves every node's snapshot and ends every rank; --resume continues to the
# uninterrupted result: bit-identical for SSGD (real and sim) and synchronous EASGD (sim),
# statistically equivalent for the asynchronous parameter-server algorithms (the same local steps
# and commits, the same final error within a tolerance; the order in which the server takes
# requests after the interruption differs) and PP-ASGD on sim; PP-ASGD with emulated staleness is
# bit-identical. Gossip (issue 36.4): SIGINT and resume bit-identical on sim (gossip, gossip-push,
# gossip-warmup-compute; and a run extended by a resume), statistical under mpirun; a changed
# gossip option refused. Also: a changed node count, an incomplete node set,
# the kept .prev generation, and a seq-* comparator's checkpoint (every algorithm saves one now).
# The synthetic images are 14 x 14 (a quarter of tiny's work per step at 28 x 28; 53 -> 44 s alone).
# pdl-test: cpu=55 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

# wait_lines FILE N: until FILE has N eval lines (at most 30 s)
wait_lines() { for _ in $(seq 600); do [ "$(cat "$1" 2>/dev/null | grep -c '"eval"')" -ge "$2" ] && return 0; sleep 0.05; done; return 1; }
# rank_pid PID RANK: the pid of that rank among PID's descendants (not another test's), by its
# environment: one grep over the descendants' environ files (a tr | grep per process took seconds
# on a busy machine, while the run went on towards its end; t_slurm.sh found the same)
descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
rank_pid() {
  local f
  for _ in $(seq 200); do
    f=$(descendants "$1" | sed 's|.*|/proc/&/environ|' | xargs -r grep -lzx "OMPI_COMM_WORLD_RANK=$2" 2>/dev/null | head -n 1)
    [ -n "$f" ] && { f=${f#/proc/}; echo "${f%/environ}"; return 0; }
    sleep 0.05
  done; return 1
}
summary() { grep '"event":"summary"' "$1" | tail -1; }
# interrupt_np3 TAG ARGS...: pdl ARGS on 3 ranks with --checkpoint $T/TAG.ck --results $T/TAG-b.jsonl,
# SIGINT to rank 1 after two evaluations; sets rc, u (updates) and sig (the summary's signal), and
# snaps=1 when the snapshot and both nodes' files exist
interrupt_np3() {
  local tag=$1; shift
  MPIRUN -np 3 "$PDL" "$@" --checkpoint "$T/$tag.ck" --results "$T/$tag-b.jsonl" >/dev/null 2>"$T/$tag-b.err" &
  local mp=$!
  wait_lines "$T/$tag-b.jsonl" 2; kill -INT "$(rank_pid $mp 1)" 2>/dev/null; wait $mp; rc=$?
  local sm; sm=$(summary "$T/$tag-b.jsonl"); u=$(field "$sm" updates); sig=$(field "$sm" interrupted_by_signal)
  snaps=; [ -f "$T/$tag.ck" ] && [ -f "$T/$tag.ck.node1" ] && [ -f "$T/$tag.ck.node2" ] && snaps=1
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }

# ---- mpirun -np 3 ssgd: SIGINT on rank 1 mid-run, resume: bit-identical --------------------------
# 1000 updates (23 epochs): the SIGINT lands after the second evaluation (update ~85), ~900 updates
# (seconds) before the end; was 3000 (issue 36 item 8: each -np 3 update is 3 oversubscribed ranks)
S=(train --algo ssgd --data synthetic:n=2048,seed=5,h=14,w=14 --net tiny --batch 16 --steps 1000 --eval-every 100 --momentum 0.9 --threads 1 --quiet --seed 3)
PDL_DUMP_PARAMS=$T/ss-a.bin MPIRUN -np 3 "$PDL" "${S[@]}" --results "$T/ss-a.jsonl" >/dev/null 2>"$T/err" \
  || notok "ssgd uninterrupted" "$(tail -3 "$T/err")"
interrupt_np3 ss "${S[@]}"
if [ $rc -ne 0 ] && [ "$sig" = 2 ] && [ "$u" -lt 1000 ] && [ -n "$snaps" ]; then
  ok "ssgd -np 3: SIGINT on rank 1 stops every rank at update $u with a snapshot per node (exit $rc)"
else notok "ssgd SIGINT" "rc=$rc updates=$u sig=$sig files=$(ls "$T" | tr '\n' ' ') $(tail -3 "$T/ss-b.err")"; fi
PDL_DUMP_PARAMS=$T/ss-b.bin MPIRUN -np 3 "$PDL" "${S[@]}" --checkpoint "$T/ss.ck" --resume --results "$T/ss-b.jsonl" >/dev/null 2>"$T/err"
cmp -s "$T/ss-a.bin" "$T/ss-b.bin" && [ "$(field "$(summary "$T/ss-b.jsonl")" updates)" = 1000 ] \
  && ok "ssgd -np 3: resumed run is bit-identical to the uninterrupted one" \
  || notok "ssgd resume" "params differ or the run is short: $(tail -3 "$T/err")"
grep -q '"event":"resume"' "$T/ss-b.jsonl" && ok "the results file records the resume" || notok "resume line" "none"

# ---- a changed node count, an incomplete set, the kept .prev generation ----------------------------
out=$(MPIRUN -np 2 "$PDL" "${S[@]}" --checkpoint "$T/ss.ck" --resume 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "the node count" <<<"$out" && ok "resume on another node count: refused, naming the node count" \
  || notok "node count mismatch" "rc=$rc $(tail -2 <<<"$out")"
cp -p "$T/ss.ck.node2" "$T/keep2"; rm -f "$T/ss.ck.node2" "$T/ss.ck.node2.prev"
out=$(MPIRUN -np 3 "$PDL" "${S[@]}" --checkpoint "$T/ss.ck" --resume 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "no common snapshot generation" <<<"$out" && ok "a node's file missing: refused, listing every node's generations" \
  || notok "incomplete set" "rc=$rc $(tail -2 <<<"$out")"
# node 1 one generation behind (a crash between two nodes' saves): all fall back to the kept .prev
R=(train --algo ssgd --data synthetic:n=2048,seed=5,h=14,w=14 --net tiny --batch 16 --epochs 2 --momentum 0.9 --threads 1 --seed 3)
rm -f "$T"/pv.ck*
MPIRUN -np 3 "$PDL" "${R[@]}" --quiet --checkpoint "$T/pv.ck" >/dev/null 2>&1   # saves at epoch 1 and at the end
cp "$T/pv.ck.node1.prev" "$T/pv.ck.node1"
out=$(PDL_DUMP_PARAMS=$T/pv.bin MPIRUN -np 3 "$PDL" "${R[@]}" --checkpoint "$T/pv.ck" --resume 2>&1); rc=$?
PDL_DUMP_PARAMS=$T/pv-a.bin MPIRUN -np 3 "$PDL" "${R[@]}" --quiet >/dev/null 2>&1
[ $rc -eq 0 ] && grep -q "kept .prev generation" <<<"$out" && cmp -s "$T/pv.bin" "$T/pv-a.bin" \
  && ok "a node one generation behind: every node resumes from the kept .prev, same result" \
  || notok ".prev fallback" "rc=$rc $(tail -3 <<<"$out")"

# ---- mpirun -np 3 easgd (requests in arrival order): SIGINT on a worker, then on the server -------
# 500 steps per worker (2 workers: 1000 updates; the test error is at most 0.004 from update 500
# on): the SIGINT lands at the second evaluation (update 300; the first is update 0), 700 updates
# before the end; was 1500 (issue 36 item 8)
E=(train --algo easgd --data synthetic:n=2048,seed=5,h=14,w=14 --net tiny --batch 16 --steps 500 --eval-every 300 --tau 4 --threads 1 --quiet --seed 3)
MPIRUN -np 3 "$PDL" "${E[@]}" --results "$T/ea-a.jsonl" >/dev/null 2>"$T/err" || notok "easgd uninterrupted" "$(tail -3 "$T/err")"
ea=$(summary "$T/ea-a.jsonl")
for victim_rank in 2 0; do
  rm -f "$T"/ea.ck* "$T/ea-b.jsonl"
  MPIRUN -np 3 "$PDL" "${E[@]}" --checkpoint "$T/ea.ck" --results "$T/ea-b.jsonl" >/dev/null 2>"$T/ea-b.err" &
  mp=$!
  wait_lines "$T/ea-b.jsonl" 2; victim=$(rank_pid $mp $victim_rank); kill -INT "$victim" 2>/dev/null; wait $mp; rc=$?
  sm=$(summary "$T/ea-b.jsonl"); sig=$(field "$sm" interrupted_by_signal); st=$(field "$sm" steps_per_worker)
  if [ $rc -ne 0 ] && [ "$sig" = 2 ] && python3 -c "import sys; sys.exit(0 if float('$st') < 500 else 1)" \
     && [ -f "$T/ea.ck" ] && [ -f "$T/ea.ck.node1" ] && [ -f "$T/ea.ck.node2" ]; then
    ok "easgd -np 3: SIGINT on rank $victim_rank ends every rank with a snapshot (at $st steps per worker)"
  else notok "easgd SIGINT on rank $victim_rank" "rc=$rc sig=$sig steps=$st $(tail -3 "$T/ea-b.err")"; fi
  MPIRUN -np 3 "$PDL" "${E[@]}" --checkpoint "$T/ea.ck" --resume --results "$T/ea-b.jsonl" >/dev/null 2>"$T/err"
  eb=$(summary "$T/ea-b.jsonl")
  if python3 - "$ea" "$eb" <<'EOF'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
same = a["steps_per_worker"] == b["steps_per_worker"] == 500 and a["master_clock"] == b["master_clock"]
sys.exit(0 if same and abs(a["test_err"] - b["test_err"]) <= 0.05 and b["test_err"] < 0.2 else 1)
EOF
  then ok "easgd resume after rank $victim_rank's SIGINT: same steps and commits, test error $(field "$eb" test_err) vs $(field "$ea" test_err)"
  else notok "easgd resume (rank $victim_rank)" "uninterrupted $(field "$ea" test_err)/$(field "$ea" master_clock), resumed $(field "$eb" test_err)/$(field "$eb" master_clock) $(tail -3 "$T/err")"; fi
done

# ---- sim runtime: ssgd and easgd-sync resume bit-identically --------------------------------------
for a in ssgd easgd-sync; do
  M=(train --algo $a --runtime sim --platform "links:k=3,bw=1Gbps,lat=0.05ms" --data synthetic:n=2048,seed=5,h=14,w=14 --net tiny --batch 16
     --steps 1200 --eval-every 100 --quiet --seed 3)
  [ $a = easgd-sync ] && M+=(--tau 4)   # ssgd has no period (pdl refuses a flag the --algo does not read)
  PDL_DUMP_PARAMS=$T/$a-sa.bin "$PDL" "${M[@]}" >/dev/null 2>&1
  rm -f "$T"/sm.ck* "$T/sm.jsonl"
  "$PDL" "${M[@]}" --checkpoint "$T/sm.ck" --results "$T/sm.jsonl" >/dev/null 2>&1 &
  p=$!; wait_lines "$T/sm.jsonl" 2; kill -INT $p; wait $p; rc=$?
  PDL_DUMP_PARAMS=$T/$a-sb.bin "$PDL" "${M[@]}" --checkpoint "$T/sm.ck" --resume >/dev/null 2>&1
  [ $rc = 130 ] && cmp -s "$T/$a-sa.bin" "$T/$a-sb.bin" && ok "sim $a: SIGINT (exit 130) and resume: bit-identical" \
    || notok "sim $a resume" "rc=$rc, params $(cmp "$T/$a-sa.bin" "$T/$a-sb.bin" 2>&1)"
done

# ---- PP-ASGD: emulated staleness resumes bit-identically; on sim (async grad roles) statistically --
PE=(train --algo ppasgd --staleness emulate:3 --data synthetic:n=2048,seed=5,h=14,w=14 --net tiny --batch 16 --steps 3000 --eval-every 100
    --momentum 0.9 --lr 0.002 --threads 1 --quiet --seed 3)
PDL_DUMP_PARAMS=$T/pe-a.bin "$PDL" "${PE[@]}" >/dev/null 2>&1
rm -f "$T"/pe.ck* "$T/pe.jsonl"
"$PDL" "${PE[@]}" --checkpoint "$T/pe.ck" --results "$T/pe.jsonl" >/dev/null 2>&1 &
p=$!; wait_lines "$T/pe.jsonl" 3; kill -INT $p; wait $p; rc=$?
PDL_DUMP_PARAMS=$T/pe-b.bin "$PDL" "${PE[@]}" --checkpoint "$T/pe.ck" --resume >/dev/null 2>&1
[ $rc = 130 ] && cmp -s "$T/pe-a.bin" "$T/pe-b.bin" && ok "ppasgd emulate:3: SIGINT and resume: bit-identical" \
  || notok "ppasgd emulate resume" "rc=$rc, params $(cmp "$T/pe-a.bin" "$T/pe-b.bin" 2>&1)"
PS=(train --algo ppasgd --runtime sim --platform cluster:nodes=2,gpus=2 --device-rate 10 --data synthetic:n=2048,seed=5,h=14,w=14 --net tiny
    --batch 8 --steps 3000 --eval-every 100 --lr 0.001 --quiet --seed 3)
"$PDL" "${PS[@]}" --results "$T/ps-a.jsonl" >/dev/null 2>&1
rm -f "$T"/ps.ck* "$T/ps-b.jsonl"
"$PDL" "${PS[@]}" --checkpoint "$T/ps.ck" --results "$T/ps-b.jsonl" >/dev/null 2>&1 &
p=$!; wait_lines "$T/ps-b.jsonl" 3; kill -INT $p; wait $p; rc=$?
"$PDL" "${PS[@]}" --checkpoint "$T/ps.ck" --resume --results "$T/ps-b.jsonl" >/dev/null 2>&1
pa=$(summary "$T/ps-a.jsonl"); pb=$(summary "$T/ps-b.jsonl")
if [ $rc = 130 ] && python3 - "$pa" "$pb" <<'EOF'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ok = a["updates"] == b["updates"] == 3000 and abs(a["S_bar"] - b["S_bar"]) <= 0.05 * a["S_bar"]
sys.exit(0 if ok and abs(a["test_err"] - b["test_err"]) <= 0.05 and abs(a["epochs"] - b["epochs"]) <= 0.05 * a["epochs"] else 1)
EOF
then ok "ppasgd sim: SIGINT and resume: same updates, S_bar $(field "$pb" S_bar) vs $(field "$pa" S_bar), test error $(field "$pb" test_err) vs $(field "$pa" test_err)"
else notok "ppasgd sim resume" "rc=$rc uninterrupted $pa :: resumed $pb"; fi

# ---- gossip (the node loop's local-steps schedule): every node's own snapshot ---------------------
# --checkpoint makes the nodes agree at each evaluation (one allreduce), so a signal anywhere stops
# every node at the same evaluation point and the snapshots are one cut; a resume leaves an
# allreduce of the same size before it goes on, as the saved run left the cut. On sim the resumed
# run is bit-identical (parameters and the whole summary line, simulated times included); on real
# it is statistical (the exchange order depends on timing): same local steps, the error within a
# tolerance.
gcmp() { python3 - "$1" "$2" <<'EOF2'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ok = a["updates"] == b["updates"] and a["epochs"] == b["epochs"] and a["nodes"] == b["nodes"]
sys.exit(0 if ok and a["test_err"] < 0.2 and b["test_err"] < 0.2 else 1)
EOF2
}
GS=(train --runtime sim --platform "links:k=4,bw=1Gbps*2+10Gbps*2,lat=5ms" --data synthetic:n=4096,seed=2,h=14,w=14 --net tiny --batch 16
    --epochs 3 --lr 0.05 --tau 2 --eval-every 32 --quiet)
for a in gossip gossip-push gossip-warmup-compute; do
  rm -f "$T"/gs.ck* "$T"/gsa.ck* "$T/gs-b.jsonl"
  PDL_DUMP_PARAMS=$T/gs-a.bin "$PDL" "${GS[@]}" --algo $a --checkpoint "$T/gsa.ck" > "$T/gs-a.out" 2>&1
  "$PDL" "${GS[@]}" --algo $a --checkpoint "$T/gs.ck" --results "$T/gs-b.jsonl" >/dev/null 2>&1 &
  p=$!; wait_lines "$T/gs-b.jsonl" 2; kill -INT $p; wait $p; rc=$?
  sm=$(summary "$T/gs-b.jsonl"); u=$(field "$sm" updates); sig=$(field "$sm" interrupted_by_signal)
  PDL_DUMP_PARAMS=$T/gs-b.bin "$PDL" "${GS[@]}" --algo $a --checkpoint "$T/gs.ck" --resume > "$T/gs-b.out" 2>"$T/err"
  if [ $rc = 130 ] && [ "$sig" = 2 ] && [ "$u" -lt 192 ] && [ -f "$T/gs.ck.node3" ] && cmp -s "$T/gs-a.bin" "$T/gs-b.bin" \
     && [ "$(tail -1 "$T/gs-a.out")" = "$(tail -1 "$T/gs-b.out")" ]; then
    ok "sim $a: SIGINT stops every node at local step $u (exit 130); resumed: bit-identical (parameters, summary line)"
  else notok "sim $a checkpoint/resume" "rc=$rc sig=$sig u=$u params $(cmp "$T/gs-a.bin" "$T/gs-b.bin" 2>&1) $(tail -2 "$T/err")"; fi
done
# a longer run resumes from a shorter one's end: bit-identical to the longer run
G1=(train --algo gossip-warmup --runtime sim --platform "links:k=4,bw=1Gbps*2+10Gbps*2,lat=5ms" --data synthetic:n=4096,seed=2,h=14,w=14
    --net tiny --batch 16 --lr 0.05 --tau 2 --eval-every 32 --quiet)
rm -f "$T"/g1.ck* "$T"/g1a.ck*
PDL_DUMP_PARAMS=$T/g1-a.bin "$PDL" "${G1[@]}" --epochs 2 --checkpoint "$T/g1a.ck" >/dev/null 2>&1
"$PDL" "${G1[@]}" --epochs 1 --checkpoint "$T/g1.ck" >/dev/null 2>&1
PDL_DUMP_PARAMS=$T/g1-b.bin "$PDL" "${G1[@]}" --epochs 2 --checkpoint "$T/g1.ck" --resume >/dev/null 2>&1
cmp -s "$T/g1-a.bin" "$T/g1-b.bin" && ok "sim gossip-warmup: 1 epoch, then --epochs 2 --resume: bit-identical to 2 epochs" \
  || notok "sim gossip-warmup extended" "params $(cmp "$T/g1-a.bin" "$T/g1-b.bin" 2>&1)"
# a changed gossip option is refused, naming it; the timeline is not in the snapshot
out=$("$PDL" "${G1[@]}" --epochs 2 --tau 3 --checkpoint "$T/g1.ck" --resume 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q -- "--tau" <<<"$out" && ok "gossip resume with another --tau: refused, naming --tau" \
  || notok "gossip --tau mismatch" "rc=$rc $(tail -2 <<<"$out")"
out=$("$PDL" "${G1[@]}" --epochs 2 --gossip-servers 2 --checkpoint "$T/g1.ck" --resume 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q -- "--gossip-servers" <<<"$out" && ok "gossip resume with another --gossip-servers: refused, naming it" \
  || notok "gossip --gossip-servers mismatch" "rc=$rc $(tail -2 <<<"$out")"
out=$("$PDL" "${G1[@]}" --epochs 2 --gossip-timeline "$T/tl.csv" --checkpoint "$T/g1.ck" --resume 2>&1); rc=$?
[ $rc = 2 ] && grep -q -- "--gossip-timeline" <<<"$out" && ok "gossip --gossip-timeline with --resume: exit 2, naming the flag" \
  || notok "gossip timeline + resume" "rc=$rc $(tail -2 <<<"$out")"
# real: mpirun -np 3, SIGINT on rank 1 (a serving thread per rank): every rank stops with a snapshot
GR=(train --algo gossip --data synthetic:n=4096,seed=2,h=14,w=14 --net tiny --batch 16 --epochs 6 --lr 0.05 --tau 1 --eval-every 32 --threads 1 --quiet)
rm -f "$T"/gr.ck* "$T/gr-a.jsonl" "$T/gr-b.jsonl"
MPIRUN -np 3 "$PDL" "${GR[@]}" --results "$T/gr-a.jsonl" >/dev/null 2>"$T/err" || notok "gossip -np 3 uninterrupted" "$(tail -3 "$T/err")"
interrupt_np3 gr "${GR[@]}"
if [ $rc -ne 0 ] && [ "$sig" = 2 ] && [ "$u" -lt 510 ] && [ -n "$snaps" ]; then
  ok "gossip -np 3: SIGINT on rank 1 stops every rank at local step $u with a snapshot per node (exit $rc)"
else notok "gossip -np 3 SIGINT" "rc=$rc updates=$u sig=$sig $(tail -3 "$T/gr-b.err")"; fi
MPIRUN -np 3 "$PDL" "${GR[@]}" --checkpoint "$T/gr.ck" --resume --results "$T/gr-b.jsonl" >/dev/null 2>"$T/err"
ga=$(summary "$T/gr-a.jsonl"); gb=$(summary "$T/gr-b.jsonl")
gcmp "$ga" "$gb" && ok "gossip -np 3 resumed: $(field "$gb" updates) local steps, test error $(field "$gb" test_err) vs $(field "$ga" test_err)" \
  || notok "gossip -np 3 resume" "uninterrupted $(field "$ga" test_err)/$(field "$ga" updates), resumed $(field "$gb" test_err)/$(field "$gb" updates) $(tail -3 "$T/err")"
# real gossip-push -np 2: checkpoints at epoch ends, a longer run resumes from the shorter one's end
GP=(train --algo gossip-push --data synthetic:n=4096,seed=2,h=14,w=14 --net tiny --batch 16 --lr 0.05 --tau 1 --threads 1 --quiet)
rm -f "$T"/gp.ck*
MPIRUN -np 2 "$PDL" "${GP[@]}" --epochs 6 --results "$T/gp-a.jsonl" >/dev/null 2>&1
MPIRUN -np 2 "$PDL" "${GP[@]}" --epochs 3 --checkpoint "$T/gp.ck" >/dev/null 2>&1
MPIRUN -np 2 "$PDL" "${GP[@]}" --epochs 6 --checkpoint "$T/gp.ck" --resume --results "$T/gp-b.jsonl" >/dev/null 2>"$T/err"
ga=$(summary "$T/gp-a.jsonl"); gb=$(summary "$T/gp-b.jsonl")
grep -q '"resumed_at":384' "$T/gp-b.jsonl" && gcmp "$ga" "$gb" \
  && ok "gossip-push -np 2: 3 epochs, then --epochs 6 --resume from local step 384: test error $(field "$gb" test_err) vs $(field "$ga" test_err)" \
  || notok "gossip-push -np 2 resume" "uninterrupted $(field "$ga" test_err), resumed $(field "$gb" test_err)/$(field "$gb" updates) $(tail -3 "$T/err")"

# ---- the p = 1 comparators (seq-*) save too (issue 50: every algorithm): 4 steps, then --steps 8 --resume ----
Q=(train --algo seq-nag --data synthetic:n=256,seed=2,h=14,w=14 --net tiny --batch 16 --lr 0.05 --threads 1 --quiet --eval-every 3)
PDL_DUMP_PARAMS="$T/sq-a.bin" "$PDL" "${Q[@]}" --steps 8 > /dev/null 2>&1
"$PDL" "${Q[@]}" --steps 4 --checkpoint "$T/sq.ck" > /dev/null 2>&1
PDL_DUMP_PARAMS="$T/sq-b.bin" "$PDL" "${Q[@]}" --steps 8 --checkpoint "$T/sq.ck" --resume --results "$T/sq-b.jsonl" > /dev/null 2>&1
grep -q '"resumed_at":4' "$T/sq-b.jsonl" && [ -s "$T/sq-a.bin" ] && cmp -s "$T/sq-a.bin" "$T/sq-b.bin" \
  && ok "seq-nag: 4 steps with --checkpoint, then --steps 8 --resume = 8 steps (bit for bit)" \
  || notok "seq-nag checkpoint/resume" "$(cmp "$T/sq-a.bin" "$T/sq-b.bin" 2>&1) $(head -c 300 "$T/sq-b.jsonl" 2>/dev/null)"
finish
