#!/usr/bin/env bash
# tests/t_coll_seam.sh — the collective seam (src/coll/coll.h, coll_seam_t): the real runtime's
# collectives on --coll mpi or nccl, through the backend run() that pdl coll times.
#   usage: --coll other than mpi|nccl, --coll nccl on --runtime sim, a sequential --algo or ppasgd's
#   one-process emulated staleness exit 2 naming --coll; bin/pdl --coll nccl without a CUDA device (or without NCCL) exits 2 naming
#   --coll and why, at 1 and 2 ranks;
#   the NCCL stand-in build ($BUILD/nccl-emu/pdl: NCCL as MPI calls on host memory) at 2 ranks:
#   ssgd (allreduce) and kfac-dist (reduce_scatterv + allgatherv, and --kfac-comm allreduce) on
#   --coll nccl give --coll mpi's parameters and final JSON bit for bit (timing and provenance
#   fields aside; 2 ranks: every sum is a + b, whatever the order), and kfac-dist at 3 ranks within
#   1e-5 (the v ops' sums in another order); a checkpoint written on
#   --coll mpi resumes on --coll nccl to the uninterrupted run's parameters (--coll is not in the
#   checkpoint header); pdl coll --backend nccl validates every op on it (2 and 3 ranks);
#   on a real GPU: bin/pdl ssgd --coll nccl == --coll mpi at 1 rank, and with 2 or more GPUs ssgd
#   and kfac-dist at 2 ranks, bit for bit.
cd "$(dirname "$0")/.." || exit 1
# pdl-test: cpu=25 mpi
source tests/lib.sh
BUILD=${BUILD:-build}
EMU=$BUILD/nccl-emu/pdl
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1
S=(--data "synthetic:n=1024,seed=3" --net tiny --threads 1 --quiet)
SS=("${S[@]}" --algo ssgd --lr 0.02 --momentum 0.9 --batch 32 --steps 24)
KF=(--data "synthetic:n=1024,seed=3,h=14,w=14" "${S[@]:2}" --algo kfac-dist --lr 0.01 --batch 16 --steps 12)   # 14 x 14: A 393 wide, not 1569 (t_kfac.sh)

# same_json A B: the last JSON lines agree but for timing, provenance and the coll field
same_json() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
drop = {"git", "host", "cpu", "isa", "gpu", "coll"}   # and the timings: *_s, *_s_per_update
def load(p):
    d = json.loads(open(p).read().strip().splitlines()[-1])
    return [(k, v) for k, v in d.items() if k not in drop and not k.endswith(("_s", "_s_per_update"))]
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    da, db = dict(a), dict(b)
    print(" ".join(f"{k}: {da.get(k)} vs {db.get(k)}" for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)) or "field order differs")
    sys.exit(1)
EOF
}
# exit2_names WHAT WANT CMD...: exit 2 with WANT in the output
exit2_names() {
  local what=$1 want=$2; shift 2
  local out rc; out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$want" <<<"$out"; then ok "$what: exit 2 naming '$want'"
  else notok "$what" "exit $rc, want 2 naming '$want': $(grep -m2 -v '^---\|^$' <<<"$out" | tr '\n' ' ')"; fi
}

exit2_names "--coll bogus" "--coll" "$PDL" train "${SS[@]}" --coll bogus
exit2_names "--coll nccl on --runtime sim" "--coll nccl: --runtime sim" \
  "$PDL" train "${SS[@]}" --runtime sim --platform cluster:nodes=2,gpus=1 --coll nccl
exit2_names "--coll nccl with a sequential --algo" "--coll nccl: --algo sgd is sequential" \
  "$PDL" train "${S[@]}" --algo sgd --steps 2 --coll nccl
exit2_names "--coll nccl with ppasgd's emulated staleness (one process)" "drop --coll nccl" \
  "$PDL" train "${S[@]}" --algo ppasgd --staleness emulate:1 --steps 2 --coll nccl
"$PDL" train --help | grep -q -- '--coll C .*mpi.*nccl' && ok "pdl train --help lists --coll" || notok "--help" "no --coll line"

# bin/pdl's own NCCL: a device, or exit 2 naming --coll and why
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -eq 0 ]; then
  gpu_required && notok "--coll nccl on a GPU" "PDL_REQUIRE_GPU is set but nvidia-smi lists no GPU"
  exit2_names "--coll nccl without a device, 1 rank" "--coll nccl: " "$PDL" train "${SS[@]}" --steps 2 --coll nccl
  exit2_names "--coll nccl without a device, 2 ranks" "--coll nccl: " MPIRUN -np 2 "$PDL" train "${SS[@]}" --steps 2 --batch 16 --coll nccl
else
  # real_same NP NAME ARGS...: bin/pdl on --coll nccl gives --coll mpi's parameters bit for bit
  real_same() {
    local np=$1 n=$2; shift 2
    PDL_DUMP_PARAMS=$T/$n-m.bin MPIRUN -np $np "$PDL" train "$@" --coll mpi > "$T/$n-m.out" 2>&1
    PDL_DUMP_PARAMS=$T/$n-n.bin MPIRUN -np $np "$PDL" train "$@" --coll nccl > "$T/$n-n.out" 2>&1; local rc=$?
    [ $rc -eq 0 ] && cmp -s "$T/$n-m.bin" "$T/$n-n.bin" && ok "real NCCL, $np rank(s): $n --coll nccl == --coll mpi bit for bit" \
      || notok "real NCCL $n at $np rank(s)" "exit $rc: $(tail -2 "$T/$n-n.out")"
  }
  real_same 1 ssgd "${SS[@]}"
  if [ "$ngpu" -ge 2 ]; then
    real_same 2 ssgd "${SS[@]}"
    real_same 2 kfac-dist "${KF[@]}" --kfac-inverse ref
  else
    echo "skip - real NCCL at 2 ranks: this node has $ngpu GPU (NCCL needs one per rank)"
  fi
fi

# the NCCL stand-in build
if [ ! -x "$EMU" ]; then
  if grep -q 'mpi=yes' "$BUILD/config.stamp" 2>/dev/null; then notok "NCCL stand-in build" "$EMU missing (make build makes it)"
  else echo "skip - NCCL stand-in: needs an MPI build"; fi
  finish
fi
run() {  # run NAME BINARY ARGS...: 2 ranks, parameters to $T/NAME.bin, output to $T/NAME.out
  local n=$1 bin=$2; shift 2
  PDL_DUMP_PARAMS=$T/$n.bin MPIRUN -np 2 "$bin" train "$@" > "$T/$n.out" 2>&1 || notok "$n" "exit $?: $(tail -2 "$T/$n.out")"
}
seam_same() {  # seam_same WHAT A B
  local d
  if ! cmp -s "$T/$2.bin" "$T/$3.bin"; then notok "$1" "parameters differ"
  elif ! d=$(same_json "$T/$2.out" "$T/$3.out"); then notok "$1" "final JSON differs: $d"
  else ok "$1: parameters and final JSON bit for bit"; fi
}
run ss-mpi "$PDL" "${SS[@]}" --coll mpi
run ss-nccl "$EMU" "${SS[@]}" --coll nccl
seam_same "ssgd 2 ranks, --coll nccl (stand-in) == --coll mpi" ss-mpi ss-nccl
grep -q '"coll":"nccl"' "$T/ss-nccl.out" && ! grep -q '"coll"' "$T/ss-mpi.out" \
  && ok "the summary says \"coll\":\"nccl\" (and nothing for the default mpi)" || notok "coll field" "$(tail -1 "$T/ss-nccl.out")"
run kf-mpi "$PDL" "${KF[@]}" --kfac-inverse ref --coll mpi
run kf-nccl "$EMU" "${KF[@]}" --kfac-inverse ref --coll nccl
seam_same "kfac-dist (reduce_scatterv + allgatherv) 2 ranks, --coll nccl == --coll mpi" kf-mpi kf-nccl
run ka-mpi "$PDL" "${KF[@]}" --kfac-comm allreduce --coll mpi
run ka-nccl "$EMU" "${KF[@]}" --kfac-comm allreduce --coll nccl
seam_same "kfac-dist --kfac-comm allreduce 2 ranks, --coll nccl == --coll mpi" ka-mpi ka-nccl
# 3 ranks: uneven blocks; each library sums in its own order, so within rounding, not bit for bit
PDL_DUMP_PARAMS=$T/k3m.bin MPIRUN -np 3 "$PDL" train "${KF[@]}" --batch 8 --kfac-inverse ref --coll mpi >/dev/null 2>&1
PDL_DUMP_PARAMS=$T/k3n.bin MPIRUN -np 3 "$EMU" train "${KF[@]}" --batch 8 --kfac-inverse ref --coll nccl > "$T/k3n.out" 2>&1
d=$(maxdiff "$T/k3m.bin" "$T/k3n.bin" 2>/dev/null)
[ -n "$d" ] && within "$d" 1e-5 && ok "kfac-dist 3 ranks, --coll nccl (stand-in) within rounding of --coll mpi (max |diff| $d)" \
  || notok "kfac-dist 3 ranks on the stand-in" "max |diff| '$d': $(tail -2 "$T/k3n.out")"

# a resume may switch the backend: epoch 1 on mpi, epoch 2 on nccl == 2 epochs on mpi
R=("${S[@]}" --algo ssgd --lr 0.02 --momentum 0.9 --batch 32)
run full "$PDL" "${R[@]}" --epochs 2 --coll mpi
MPIRUN -np 2 "$PDL" train "${R[@]}" --epochs 1 --checkpoint "$T/ck/run.ck" --coll mpi >/dev/null 2>&1
run res "$EMU" "${R[@]}" --epochs 2 --checkpoint "$T/ck/run.ck" --resume --coll nccl
cmp -s "$T/full.bin" "$T/res.bin" && ok "checkpoint on --coll mpi, resumed on --coll nccl == uninterrupted, bit for bit" \
  || notok "resume across --coll" "parameters differ: $(tail -1 "$T/res.out")"

novis() { CUDA_VISIBLE_DEVICES= MPIRUN -np 2 -x CUDA_VISIBLE_DEVICES "$@"; }
exit2_names "stand-in with no device (CUDA_VISIBLE_DEVICES empty), 2 ranks" "--coll nccl: no CUDA device" \
  novis "$EMU" train "${SS[@]}" --steps 2 --batch 16 --coll nccl

# pdl coll --backend nccl on the stand-in: the same run() as training, every op validated
bad=""
for np in 2 3; do
  for op in allreduce reduce allgather reduce_scatter bcast reduce_scatterv allgatherv reduce_scatterv_via_allreduce allgatherv_via_allreduce memcpy; do
    [ $np = 3 ] && [ $op != reduce_scatterv ] && [ $op != allgatherv ] && continue
    for mode in "" --inplace; do
      [ $op = memcpy ] && [ -n "$mode" ] && continue
      o=$(MPIRUN -np $np "$EMU" coll --backend nccl --op $op -m 4:64K -f 64 -i 2 -x 1 $mode 2>&1)
      [ $? -eq 0 ] && grep -q '^# #wrong total: 0$' <<<"$o" || bad+="np=$np $op $mode; "
    done
  done
done
[ -z "$bad" ] && ok "pdl coll --backend nccl on the stand-in: every op validates (2 ranks; v ops also 3)" || notok "stand-in pdl coll" "$bad"
finish
