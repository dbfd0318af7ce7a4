#!/usr/bin/env bash
# tests/t_coll.sh — pdl coll (MPI backend): usage errors exit 2 with a reason, 1 rank with and
# without mpirun, every op at 2 and 3 ranks (3 divides none of the sizes), in place and not,
# float and double, the rounding of sizes that do not divide by the rank count, the JSON schema,
# validation catching a result made wrong through the test-only hook, and the watchdog turning a
# hang into exit 124 with a message naming op, size and rank. Needs mpirun; fails without it.
# (Every op at 3 ranks, a few at 2, to keep the launch count and time down on 2 cores.)
# pdl-test: cpu=20 mpi
cd "$(dirname "$0")/.."
source tests/lib.sh
export OMP_NUM_THREADS=1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

# --- usage ---
expect "coll --help" "$PDL" coll --help
bad() { # bad NAME WORD ARGS...: exit 2 and stderr naming WORD
  local n=$1 w=$2; shift 2
  "$PDL" coll "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$w" "$T/err"; then ok "$n"; else notok "$n" "exit $rc, stderr: $(head -c 300 "$T/err")"; fi
}
bad "unknown op exits 2" "unknown collective 'scan'" --op scan
bad "size 0 exits 2" "-m" -m 0
bad "size not a whole float exits 2" "multiples of 4" -m 6
bad "size not a whole double exits 2" "multiples of 8" -m 4:16 --dtype double
bad "MIN > MAX exits 2" "larger than MAX" -m 64:8
bad "garbage size exits 2" "not a size" -m 12Q
bad "size over the limit exits 2" "1 GiB" -m 4G
bad "unknown backend exits 2" "--backend" --backend gloo
bad "unknown flag exits 2" "--bogus" --bogus
bad "zero checks exits 2" "-c" -c 0
bad "memcpy in place exits 2" "in-place" --op memcpy --inplace
PDL_COLL_INJECT=x "$PDL" coll -m 4 >/dev/null 2>"$T/err"; rc=$?
if [ $rc -eq 2 ] && grep -q PDL_COLL_INJECT "$T/err"; then ok "malformed PDL_COLL_INJECT exits 2"; else notok "malformed PDL_COLL_INJECT exits 2" "exit $rc"; fi
MPIRUN -np 2 "$PDL" coll --op scan >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "unknown op under mpirun -np 2 exits 2" || notok "unknown op under mpirun -np 2 exits 2" "exit $rc"

# --- 1 rank, no launcher (singleton) and under mpirun ---
expect "1 rank singleton allreduce" "$PDL" coll -m 4:64K -f 4 -i 3 -x 1 --json "$T/one.jsonl"
expect "1 rank mpirun reduce_scatter" MPIRUN -np 1 "$PDL" coll --op reduce_scatter -m 4:4K -f 8 -i 3 -x 1
python3 - "$T/one.jsonl" <<'PY' && ok "JSON schema (1 rank)" || notok "JSON schema (1 rank)" "see above"
import json, sys
keys = ["op", "backend", "ranks", "bytes_per_rank", "bytes_total", "count", "avg_us", "min_us", "max_us",
        "p50_us", "p99_us", "algbw_gbs", "busbw_gbs", "wrong"]
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 8, len(rows)                       # 4 B .. 64 KiB by x4
for r in rows:
    missing = [k for k in keys if k not in r]
    assert not missing, missing
    assert r["ranks"] == 1 and r["wrong"] == 0 and r["backend"] == "mpi" and r["op"] == "allreduce"
    assert r["bytes_total"] == r["count"] * 4 and r["min_us"] <= r["avg_us"] <= r["max_us"]
    assert r["p50_us"] <= r["p99_us"] and r["busbw_gbs"] == 0      # 2(n-1)/n = 0 at one rank
PY

# --- every op at 3 ranks, the equal-block ones and allreduce at 2: validation passes ---
ALL="allreduce reduce allgather reduce_scatter bcast reduce_scatterv allgatherv reduce_scatterv_via_allreduce allgatherv_via_allreduce memcpy"
for np in 2 3; do
  ops=$ALL; [ $np = 2 ] && ops="allreduce allgather reduce_scatter"
  for op in $ops; do
    # 5, 50, 500, 5000 elements: odd, and none divides into 3 equal blocks
    for mode in "-m 20:20000 --dtype float" "-m 40:40000 --inplace --dtype double"; do
      [ $op = memcpy ] && [[ $mode == *inplace* ]] && continue
      out=$(MPIRUN -np $np "$PDL" coll --op $op $mode -f 10 -i 2 -x 1 -c 2 2>&1); rc=$?
      if [ $rc -eq 0 ] && grep -q '^# #wrong total: 0$' <<<"$out"; then ok "np=$np $op $mode"
      else notok "np=$np $op $mode" "exit $rc: $(tail -3 <<<"$out")"; fi
    done
  done
done

# --- sizes that do not divide by the rank count ---
MPIRUN -np 3 "$PDL" coll --op allgather -m 20 -i 1 -x 0 --json "$T/ag.jsonl" >/dev/null 2>&1
MPIRUN -np 3 "$PDL" coll --op allgatherv -m 20 -i 1 -x 0 --json "$T/agv.jsonl" >/dev/null 2>&1
MPIRUN -np 3 "$PDL" coll --op reduce_scatter -m 8 -i 1 -x 0 --json "$T/rs.jsonl" >/dev/null 2>&1
python3 - "$T" <<'PY' && ok "uneven sizes: equal-block ops round, v ops keep the size" || notok "uneven sizes" "see above"
import json, sys
d = sys.argv[1]
ag = json.loads(open(d + "/ag.jsonl").readline())      # 5 floats at 3 ranks -> 1 float each
assert (ag["bytes_total"], ag["bytes_per_rank"], ag["count"], ag["wrong"]) == (12, 4, 3, 0), ag
agv = json.loads(open(d + "/agv.jsonl").readline())    # 5 floats kept: blocks 2, 2, 1
assert (agv["bytes_total"], agv["bytes_per_rank"], agv["count"], agv["wrong"]) == (20, 8, 5, 0), agv
rs = json.loads(open(d + "/rs.jsonl").readline())      # 2 floats at 3 ranks -> at least 1 each
assert (rs["bytes_total"], rs["bytes_per_rank"], rs["wrong"]) == (12, 4, 0), rs
PY

# --- validation catches a wrong result (test-only hook: rank R's input element E gets +1) ---
inject() { # inject NAME NP RANK:ELEM EXPECTED_WRONG ARGS...
  local n=$1 np=$2 at=$3 want=$4; shift 4
  PDL_COLL_INJECT=$at MPIRUN -np "$np" "$PDL" coll "$@" -i 1 -x 0 --json "$T/inj.jsonl" >"$T/out" 2>&1; local rc=$?
  local got; got=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["wrong"])' "$T/inj.jsonl" 2>/dev/null)
  if [ $rc -eq 1 ] && [ "$got" = "$want" ] && grep -q "#wrong total: $want" "$T/out"; then ok "$n"
  else notok "$n" "exit $rc, wrong=$got (want exit 1, wrong=$want): $(tail -2 "$T/out")"; fi
  rm -f "$T/inj.jsonl"
}
inject "wrong allreduce element seen on both ranks" 2 1:3 2 --op allreduce -m 64
inject "wrong reduce element seen on the root" 3 2:0 1 --op reduce -m 64
inject "wrong allgather block seen on all ranks" 3 1:1 3 --op allgather -m 48
inject "wrong reduce_scatter element seen by its owner" 2 0:9 1 --op reduce_scatter -m 64
inject "wrong bcast root value seen by all" 2 0:5 2 --op bcast -m 64
inject "wrong value through the allgatherv workaround" 2 1:0 2 --op allgatherv_via_allreduce -m 40
inject "wrong value at 1 rank" 1 0:0 1 --op allreduce -m 4

# --- watchdog ---
PDL_COLL_TEST_HANG=1 MPIRUN -np 2 "$PDL" coll --op allgather -m 1K --timeout 2 >"$T/out" 2>&1; rc=$?
if [ $rc -eq 124 ] && grep -q "pdl: rank [01]: watchdog: no progress for .* while allgather 1024 B" "$T/out"; then
  ok "watchdog: hang at 2 ranks -> exit 124 naming op, size, rank"
else notok "watchdog at 2 ranks" "exit $rc: $(grep -m2 watchdog "$T/out")"; fi
PDL_COLL_TEST_HANG=0 timeout 60 "$PDL" coll -m 64 --timeout 1 >"$T/out" 2>&1; rc=$?
if [ $rc -eq 124 ] && grep -q "pdl: rank 0: watchdog: no progress for .* while allreduce 64 B" "$T/out"; then
  ok "watchdog: hang at 1 rank -> exit 124"
else notok "watchdog at 1 rank" "exit $rc: $(grep -m2 watchdog "$T/out")"; fi
finish
