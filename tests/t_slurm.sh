#!/usr/bin/env bash
# t_slurm.sh — a one-node Slurm cluster started by the test (issue 48, item 1): munged, slurmctld and
# slurmd from a slurm.conf in a temporary folder (this host as the one node, its own ports, munge
# key and socket), then:
#   - srun -n 2 --mpi=pmix runs pdl train --algo ssgd with the same parameters as mpirun -np 2, bit
#     for bit. PMIx, not PMI-2: Debian's Open MPI 4.1 is built --with-pmix (its pmix component is
#     ext3x, over libpmix2) and has no s1/s2 component, so under --mpi=pmi2 MPI_Init cannot find
#     its peers and aborts ("MPI_ERRORS_ARE_FATAL ... before MPI_INIT completed");
#   - an sbatch job ended by scancel (Slurm: SIGCONT, SIGTERM, SIGKILL after KillWait) leaves a
#     checkpoint (pdl saves on SIGTERM), and a second job resumes it to the parameters of an
#     uninterrupted run, bit for bit;
#   - the same for a job that runs out of its time limit. slurmctld tests time limits every 30 s
#     (its PERIODIC_TIMEOUT) and a limit is at least a minute, so the job's ranks are paused
#     (SIGSTOP, by process id) once its first checkpoint exists and its limit is cut to 0
#     (scontrol update TimeLimit=-1): the job then sits mid-run, costing no CPU, until slurmctld
#     ends it as TIMEOUT (its kill sequence starts with SIGCONT, so the ranks wake to the SIGTERM);
#   - bench/launch.sh's launchers (issue 48 item 2), as a bench calls them: LAUNCH=slurm writes the
#     run's sbatch script and submits it, LAUNCH=mpirun HOSTFILE=... runs mpirun with the hostfile;
#     both end at mpirun -np 2's parameters;
#   - every daemon and job process it started is stopped by process id, also when a check fails
#     (trap), and a last check finds none of them left.
# Runs when root (the daemons need it), prints a skip otherwise; installs nothing (make deps
# installs slurm-wlm and munge: ci/install-deps.sh). A test killed by SIGKILL leaves its daemons
# running, but the next run uses a new folder and new ports, so they do not break it.
# Wall: ~40 s on a quiet 2-core machine, most of it waiting for slurmctld's time-limit test: so
# "idle", it runs beside make test's pool of jobs (tests/run.sh) instead of holding a core's place.
# pdl-test: cpu=20 mpi idle
source tests/lib.sh
if [ "$(id -u)" != 0 ]; then echo "skip - t_slurm: not root (munged, slurmctld and slurmd must run as root)"; exit 0; fi
if ! command -v mpirun >/dev/null 2>&1; then echo "skip - t_slurm: no mpirun (a NO_MPI build; srun's ranks need MPI)"; exit 0; fi
for c in munged slurmctld slurmd srun sbatch scancel scontrol sinfo squeue; do
  command -v "$c" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$c" >/dev/null 2>&1 \
    || { notok "slurm: $c not found" "make deps installs slurm-wlm and munge (ci/install-deps.sh)"; finish; }
done
export PATH=$PATH:/usr/sbin
PDLA=$(realpath "$PDL")
T=$(mktemp -d /tmp/pdl-slurm.XXXXXX); chmod 755 "$T"
CONF=$T/slurm.conf
PIDS=()   # the daemons this test started, in start order
# procs_of_ours: pids of every process that carries this cluster's SLURM_CONF (slurmstepd, the
# batch shells, srun, the ranks): slurmd passes its environment on to them
procs_of_ours() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = $$ ] && continue
    tr '\0' '\n' 2>/dev/null < "$p/environ" | grep -qx "SLURM_CONF=$CONF" && echo "${p#/proc/}"
  done
}
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st:0:1}" != Z ]; }   # zombies are gone
cleanup() {
  local p i left=""
  [ "$BASHPID" = $$ ] || return 0   # the main shell only
  if [ ${#PIDS[@]} = 3 ] && alive "${PIDS[1]}"; then   # slurmctld up: end the jobs the Slurm way first
    p=$(timeout 5 squeue -h -o %i 2>/dev/null); [ -n "$p" ] && timeout 5 scancel --full $p 2>/dev/null
  fi
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null; done   # slurmd, slurmctld, munged
  for i in $(seq 1 50); do
    left=""; for p in "${PIDS[@]}" $(procs_of_ours); do alive "$p" && left+=" $p"; done
    [ -z "$left" ] && break
    [ "$i" = 30 ] && kill -KILL $left 2>/dev/null   # 3 s after SIGTERM
    sleep 0.1
  done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  PIDS=() LEFT=$left
}
trap 'cleanup; [ -n "${PDL_KEEP_T:-}" ] && cp -r "$T" /tmp/t_slurm_kept; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM

# --- the cluster --------------------------------------------------------------------------------
unset $(env | sed -n 's/^\(SLURM_[A-Z_]*\)=.*/\1/p')   # when the test itself runs inside a Slurm job
export SLURM_CONF=$CONF OMP_NUM_THREADS=1
read -r P1 P2 < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
H=$(hostname -s)
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/tmp" && chmod 711 "$T/munge"
head -c 1024 /dev/urandom > "$T/munge/key" && chmod 400 "$T/munge/key"
munged -F --force --socket="$T/munge/sock" --key-file="$T/munge/key" --pid-file="$T/munge/pid" \
  --log-file="$T/munge/log" --seed-file="$T/munge/seed" >"$T/munged.out" 2>&1 &
PIDS+=($!)
# TmpFS: the pmix plugin's per-step folder (spmix_appdir_<uid>_<job>.<step>) goes there, not in
# /tmp, where one left by a killed run would fail the next run's step of the same number.
# CPUs=4 on a 2-core host (SlurmdParameters=config_overrides: the configuration is believed): the
# paused time-limit job holds two while the other jobs run. KillWait=5: the SIGTERM-to-SIGKILL
# grace, far more than a checkpoint of this net takes. MinJobAge: finished jobs stay visible.
cat > "$CONF" <<EOF
ClusterName=pdltest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$P1
SlurmdPort=$P2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
TmpFS=$T/tmp
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
OverTimeLimit=0
MinJobAge=600
NodeName=$H NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=pdl Nodes=$H Default=YES MaxTime=INFINITE State=UP
EOF
for i in $(seq 1 50); do [ -S "$T/munge/sock" ] && break; sleep 0.1; done
slurmctld -D -f "$CONF" >"$T/slurmctld.out" 2>&1 & PIDS+=($!)
slurmd -D -f "$CONF" >"$T/slurmd.out" 2>&1 & PIDS+=($!)
state=""
for i in $(seq 1 100); do   # bounded: 20 s
  state=$(sinfo -h -n "$H" -o %T 2>/dev/null); [ "$state" = idle ] && break; sleep 0.2
done
if [ "$state" = idle ]; then ok "slurm cluster up: munged, slurmctld, slurmd (pids ${PIDS[*]}), node $H idle"
else
  notok "slurm cluster" "node state '$state' after 20 s: $(tail -3 "$T/munged.out" "$T/slurmctld.out" "$T/slurmd.out" 2>&1 | tr '\n' ' ')"
  finish
fi

# jstate J: the job's state (PENDING RUNNING COMPLETING CANCELLED TIMEOUT COMPLETED FAILED ...)
jstate() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
# wait_end J SECS: wait (bounded) until job J has ended and left no process behind; sets JS to its
# state (in this shell, not a $(...) one: a signal's trap runs between two short commands)
wait_end() {
  local j=$1 i
  for ((i = 0; i < $2 * 5; i++)); do
    JS=$(jstate "$j")
    case $JS in PENDING|RUNNING|COMPLETING|CONFIGURING|SUSPENDED|'') ;;
      *) [ -z "$(squeue -h -j "$j" 2>/dev/null)" ] && break ;;
    esac
    sleep 0.2
  done
  JS=$(jstate "$j")
}
# bgw CMD...: CMD in the background, waited for: a signal's trap (the cleanup) runs at once, not
# after CMD ends (bash defers traps until the foreground command returns)
bgw() { "$@" & wait $!; }
# wait_file F SECS J: wait (bounded) until F exists, while job J is pending or running
wait_file() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [ -s "$1" ] && return 0
    ((i % 10 == 9)) && case $(jstate "$3") in PENDING|RUNNING|CONFIGURING) ;; *) return 1 ;; esac
    sleep 0.1
  done
  return 1
}
# job_ranks J: the pids of job J's pdl ranks
# (one grep over every environ: a loop of tr | grep per process took seconds on a busy machine, longer
# than a whole job on a fast CPU)
job_ranks() {
  local f p
  for f in $(grep -lsxzF "SLURM_JOB_ID=$1" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = pdl ] && grep -qsxzF "SLURM_CONF=$CONF" "$f" && echo "$p"
  done
}

# the training run every job below makes: 600 updates of SSGD on 2 ranks, 16 updates per epoch
# (a checkpoint at each epoch's end), ~3 s on 2 idle cores
L=(--data "synthetic:n=512,seed=3" --net tiny --lr 0.02 --momentum 0.9 --threads 1 --algo ssgd --batch 16 --steps 600)
cat > "$T/train.sbatch" <<EOF
#!/bin/bash
#SBATCH --ntasks=2
exec srun --mpi=pmix "$PDLA" train ${L[*]@Q} "\$@"
EOF

# --- a job that runs out of its time limit (started first: it waits for slurmctld's 30 s test) ---
jt=$(sbatch --parsable -J timeout --time=1 -o "$T/timeout.out" "$T/train.sbatch" --checkpoint "$T/ckt/ck")
# Its ranks are paused as soon as both exist, then let run in 20 ms bursts until the first
# checkpoint (both nodes' files) is there: a fast CPU runs all 600 updates in under a second, so
# waiting for the checkpoint first could find the job finished (CI: COMPLETED, no ranks to pause).
paused=""
end=$((SECONDS + 30)) n=0
while [ $SECONDS -lt $end ]; do
  p=$(job_ranks "$jt")
  if [ "$(echo $p | wc -w)" = 2 ]; then kill -STOP $p 2>/dev/null && paused=$p; break; fi
  n=$((n + 1)); ((n % 25 == 0)) && case $(jstate "$jt") in COMPLETED|FAILED|CANCELLED|TIMEOUT) break ;; esac
  sleep 0.02
done
if [ -n "$paused" ]; then
  for i in $(seq 1 1500); do
    [ -s "$T/ckt/ck" ] && [ -s "$T/ckt/ck.node1" ] && break
    kill -CONT $paused 2>/dev/null; sleep 0.02; kill -STOP $paused 2>/dev/null
  done
  [ -s "$T/ckt/ck" ] || paused=""
fi
if [ "$(echo $paused | wc -w)" = 2 ] && scontrol update JobId="$jt" TimeLimit=-1; then
  ok "time-limit job $jt: ranks paused after their first checkpoint (pids $(echo $paused)), limit cut to 0"
else notok "time-limit job $jt" "ranks '$paused', state $(jstate "$jt"): $(tail -3 "$T/timeout.out")"; fi

# --- srun -n 2 --mpi=pmix == mpirun -np 2, bit for bit ------------------------------------------
S=(--data "synthetic:n=1024,seed=3" --net tiny --lr 0.02 --momentum 0.9 --threads 1 --quiet --algo ssgd --batch 32 --steps 24)
PDL_DUMP_PARAMS=$T/srun.bin bgw timeout -k 5 60 srun -n 2 --mpi=pmix "$PDLA" train "${S[@]}" >"$T/srun.out" 2>&1; rc=$?
PDL_DUMP_PARAMS=$T/mpirun.bin bgw MPIRUN -np 2 "$PDLA" train "${S[@]}" >"$T/mpirun.out" 2>&1
if [ $rc -eq 0 ] && grep -q '"ranks":2,' "$T/srun.out" && [ -s "$T/srun.bin" ] && cmp -s "$T/srun.bin" "$T/mpirun.bin"; then
  ok "srun -n 2 --mpi=pmix: ssgd on 2 ranks, parameters == mpirun -np 2's bit for bit"
else notok "srun --mpi=pmix" "rc=$rc $(tail -3 "$T/srun.out" | cut -c1-300)"; fi

# --- bench/launch.sh's launchers, as a bench calls them (mpirun_cmd): LAUNCH=slurm writes the run's
# sbatch script into $RES/slurm/ and submits it; LAUNCH=mpirun HOSTFILE=... (this host twice) ---
lb() { ( source bench/lib.sh; RES=$T/bench PAPER=t BENCH_STEP=s; export PDL_DUMP_PARAMS=$1
         OMP_NUM_THREADS=1 mpirun_cmd -np 2 "$PDLA" train "${S[@]}" ); }
LAUNCH=slurm bgw lb "$T/ls.bin" >"$T/ls.out" 2>"$T/ls.err"; rc=$?
f=$(ls "$T"/bench/slurm/s-*.sbatch 2>/dev/null)
if [ $rc -eq 0 ] && [ -n "$f" ] && grep -qx '#SBATCH --ntasks=2' "$f" && grep -q '"ranks":2,' "$T/ls.out" && cmp -s "$T/ls.bin" "$T/mpirun.bin"; then
  ok "LAUNCH=slurm (bench/launch.sh): $(basename "$f") submitted with sbatch --wait, output back, parameters == mpirun -np 2's"
else notok "LAUNCH=slurm" "rc=$rc script '$f': $(tail -n 3 "$T/ls.err" "$T/ls.out" 2>&1 | cut -c1-200 | tr '\n' ' ')"; fi
printf '%s\n%s\n' "$H" "$H" > "$T/hosts"
HOSTFILE=$T/hosts bgw lb "$T/lh.bin" >"$T/lh.out" 2>&1; rc=$?
[ $rc -eq 0 ] && cmp -s "$T/lh.bin" "$T/mpirun.bin" && ok "LAUNCH=mpirun HOSTFILE=... (this host twice): parameters == mpirun -np 2's" \
  || notok "LAUNCH=mpirun HOSTFILE" "rc=$rc $(tail -3 "$T/lh.out" | cut -c1-200)"

# --- the uninterrupted run (the reference for both resumes) -------------------------------------
PDL_DUMP_PARAMS=$T/ref.bin bgw MPIRUN -np 2 "$PDLA" train "${L[@]}" --quiet --checkpoint "$T/ckr/ck" >"$T/ref.out" 2>&1 \
  || notok "uninterrupted run" "$(tail -3 "$T/ref.out")"

# check_kill NAME J STATE OUT CK: job J ended in STATE, pdl saved on SIGTERM before the end, then a
# second job resumes from CK to the uninterrupted run's parameters
check_kill() {
  local name=$1 j=$2 want=$3 out=$4 ck=$5 s at j2 s2
  wait_end "$j" "$6"; s=$JS
  at=$(sed -n 's/.*signal 15: checkpoint saved to .* at update \([0-9]*\).*/\1/p' "$out" | head -1)
  if [ "$s" = "$want" ] && [ -n "$at" ] && [ "$at" -lt 600 ] && [ -s "$ck" ] && [ -s "$ck.node1" ]; then
    ok "$name: job $j ended $s; pdl saved on SIGTERM at update $at of 600 ($(basename "$ck"), $(basename "$ck").node1)"
  elif [ -n "$7" ] && [ "$s" = "$want" ] && { [ -s "$ck" ] || [ -s "$ck.prev" ]; }; then
    # at a time limit srun may force-kill the ranks ("srun: forcing job termination") before every
    # rank has finished its SIGTERM save: what must hold is that the resume below takes the newest
    # whole generation (a partial one falls back to .prev) and ends bit for bit where an
    # uninterrupted run ends
    at="the newest whole checkpoint"
    ok "$name: job $j ended $s; the ranks were killed before their SIGTERM save finished ($(ls -A "$(dirname "$ck")" | tr '\n' ' '))"
  else notok "$name" "job $j state '$s' (want $want), saved at '$at': $(grep -v '^epoch' "$out" | tail -4 | cut -c1-200 | tr '\n' ' ')"; return; fi
  j2=$(PDL_DUMP_PARAMS=$T/$name.bin sbatch --parsable -J resume -o "$T/$name-resume.out" "$T/train.sbatch" --checkpoint "$ck" --resume)
  wait_end "$j2" 60; s2=$JS
  if [ "$s2" = COMPLETED ] && [ -s "$T/$name.bin" ] && cmp -s "$T/$name.bin" "$T/ref.bin"; then
    ok "$name: job $j2 resumed from update $at to 600, parameters == the uninterrupted run's bit for bit"
  else notok "$name resume" "job $j2 state '$s2': $(grep -v '^epoch' "$T/$name-resume.out" | tail -3 | cut -c1-200 | tr '\n' ' ')"; fi
}

# --- scancel: SIGTERM, then SIGKILL after KillWait ------------------------------------------------
jc=$(sbatch --parsable -J cancel -o "$T/cancel.out" "$T/train.sbatch" --checkpoint "$T/ckc/ck")
if wait_file "$T/ckc/ck" 30 "$jc"; then scancel "$jc"; fi   # after the first epoch's checkpoint: mid-run
check_kill scancel "$jc" CANCELLED "$T/cancel.out" "$T/ckc/ck" 30

# --- the time-limit job, ended by slurmctld ---------------------------------------------------------
check_kill timelimit "$jt" TIMEOUT "$T/timeout.out" "$T/ckt/ck" 75 may-be-killed

# --- every daemon and job process gone ---------------------------------------------------------------
daemons="${PIDS[*]}"
cleanup
if [ -z "$LEFT" ]; then ok "stopped by pid: munged, slurmctld, slurmd ($daemons); no process of this cluster remains"
else notok "daemons left" "pids $LEFT: $(ps -o pid=,args= -p ${LEFT// /,} 2>&1 | head -5)"; fi
finish
