#!/usr/bin/env bash
# t_dist.sh — distributed training on the seam with real MPI ranks:
#   SSGD with R ranks x G grad threads x batch b == sequential NAG with batch R*G*b
#   (float summation order differs and grows through the dynamics: max |diff| <= 1e-4 after 24
#   updates at lr 0.02, parameters are O(1); measured ~1e-6);
#   PP-ASGD under emulated staleness 0 == SSGD on one worker, bit for bit;
#   a killed rank ends the whole job (no hang) within the watchdog time.
# pdl-test: cpu=8 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
S=(--data "synthetic:n=1024,seed=3" --net tiny --lr 0.02 --momentum 0.9 --threads 1 --quiet --steps 24)

PDL_DUMP_PARAMS=$T/seq64.bin "$PDL" train "${S[@]}" --algo nag --batch 64 >/dev/null || notok "sequential nag" "failed"
PDL_DUMP_PARAMS=$T/seq32.bin "$PDL" train "${S[@]}" --algo nag --batch 32 >/dev/null
PDL_DUMP_PARAMS=$T/seq16.bin "$PDL" train "${S[@]}" --algo nag --batch 16 >/dev/null
for R in 1 2 4; do
  b=$((64 / R))
  PDL_DUMP_PARAMS=$T/ss$R.bin MPIRUN -np $R "$PDL" train "${S[@]}" --algo ssgd --batch $b > "$T/ss$R.out" 2>&1
  rc=$?; d=$(maxdiff "$T/seq64.bin" "$T/ss$R.bin" 2>/dev/null)
  if [ $rc -eq 0 ] && within "$d" 1e-4; then ok "ssgd $R ranks x b=$b == nag b=64 (max diff $d)"
  else notok "ssgd $R ranks" "rc=$rc diff=$d $(tail -3 "$T/ss$R.out")"; fi
  tail -1 "$T/ss$R.out" | grep -q '"runtime":"real","simulated":false' && ok "ssgd $R ranks: summary marks runtime real" || notok "ssgd $R summary" "$(tail -1 "$T/ss$R.out")"
done
PDL_DUMP_PARAMS=$T/g2.bin MPIRUN -np 2 "$PDL" train "${S[@]}" --algo ssgd --batch 16 --grad-threads 2 >/dev/null 2>&1
d=$(maxdiff "$T/seq64.bin" "$T/g2.bin"); within "$d" 1e-4 && ok "ssgd 2 ranks x 2 grad threads == nag b=64 ($d)" || notok "hybrid ssgd" "diff $d"

PDL_DUMP_PARAMS=$T/e0.bin "$PDL" train "${S[@]}" --algo ppasgd --batch 16 --staleness emulate:0 >/dev/null
PDL_DUMP_PARAMS=$T/s1.bin "$PDL" train "${S[@]}" --algo ssgd --batch 16 >/dev/null
cmp -s "$T/e0.bin" "$T/s1.bin" && ok "ppasgd emulate:0 == ssgd bit for bit" || notok "emulate:0" "differs"
cmp -s "$T/seq16.bin" "$T/s1.bin" && ok "ssgd 1 worker == sequential nag bit for bit" || notok "ssgd 1 == nag" "differs"

expect_exit 2 "ppasgd bad staleness" "$PDL" train "${S[@]}" --algo ppasgd --staleness emulate:-1
expect_exit 2 "ppasgd fixed staleness < 0" "$PDL" train "${S[@]}" --algo ppasgd --staleness -1
expect_exit 2 "grad threads 0" "$PDL" train "${S[@]}" --algo ssgd --grad-threads 0
expect_exit 2 "batch 0" "$PDL" train "${S[@]}" --algo ssgd --batch 0

# multi-host the way a cluster runs it: ranks placed by a hostfile (this host listed twice, one slot
# each, as two nodes would be), per-node checkpoint files in one shared folder, a resume from them
printf 'localhost\nlocalhost\n' > "$T/hosts"   # a host listed once per slot (Open MPI)
PDL_DUMP_PARAMS=$T/hf.bin MPIRUN --hostfile "$T/hosts" -np 2 "$PDL" train "${S[@]}" --algo ssgd --batch 32 > "$T/hf.out" 2>&1; rc=$?
[ $rc -eq 0 ] && cmp -s "$T/hf.bin" "$T/ss2.bin" && ok "mpirun --hostfile (this host twice): 2 ranks, the same parameters as -np 2" \
  || notok "hostfile run" "rc=$rc $(tail -2 "$T/hf.out")"
H=(--data "synthetic:n=1024,seed=3" --net tiny --lr 0.02 --momentum 0.9 --threads 1 --quiet --algo ssgd --batch 32)
PDL_DUMP_PARAMS=$T/hfull.bin MPIRUN --hostfile "$T/hosts" -np 2 "$PDL" train "${H[@]}" --epochs 2 >/dev/null 2>&1
MPIRUN --hostfile "$T/hosts" -np 2 "$PDL" train "${H[@]}" --epochs 1 --checkpoint "$T/shared/run.ck" >/dev/null 2>&1
[ -s "$T/shared/run.ck" ] && [ -s "$T/shared/run.ck.node1" ] && ok "per-node checkpoint files in the shared folder (run.ck, run.ck.node1)" \
  || notok "per-node checkpoints" "$(ls "$T/shared" 2>&1)"
PDL_DUMP_PARAMS=$T/hres.bin MPIRUN --hostfile "$T/hosts" -np 2 "$PDL" train "${H[@]}" --epochs 2 --checkpoint "$T/shared/run.ck" --resume >/dev/null 2>&1
cmp -s "$T/hfull.bin" "$T/hres.bin" && ok "hostfile run resumed from the per-node files == uninterrupted, bit for bit" \
  || notok "hostfile resume" "params differ"

# a rank that dies ends the job: SIGKILL rank 1 mid-run; mpirun must return non-zero promptly
SLOW=(--data "synthetic:n=8192,seed=3" --net "C16 C16 P F64 S10" --lr 0.01 --threads 1 --quiet --steps 100000 --timeout 20)
t0=$SECONDS
MPIRUN -np 2 "$PDL" train "${SLOW[@]}" --algo ssgd --batch 32 > "$T/kill.out" 2>&1 &
mp=$!
for i in $(seq 1 50); do pids=$(pgrep -f "pdl train .*--steps 100000" | tail -n +2); [ -n "$pids" ] && break; sleep 0.2; done
sleep 2; victim=$(pgrep -f "pdl train .*--steps 100000" | tail -1); [ -n "$victim" ] && kill -9 "$victim"
( sleep 60; kill -9 $mp 2>/dev/null ) & guard=$!
wait $mp; rc=$?; kill $guard 2>/dev/null
if [ $rc -ne 0 ] && [ $((SECONDS - t0)) -lt 50 ]; then ok "killed rank ends the job (exit $rc in $((SECONDS - t0)) s)"
else notok "killed rank" "rc=$rc after $((SECONDS - t0)) s: $(tail -3 "$T/kill.out")"; fi
pkill -9 -f "pdl train .*--steps 100000" 2>/dev/null
finish
