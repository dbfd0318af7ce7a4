#!/usr/bin/env bash
# tests/t_bench_lib.sh — bench/lib.sh's run_complete, which every bench driver (gossip, hermans,
# easgd, ppasgd) asks before it reuses a run's results: a run with a summary is reused, one without
# is run again, and one whose summary says interrupted_by_signal (pdl writes its summary on
# SIGINT/SIGTERM too) is run again: a bench stopped mid-step once left four truncated gossip runs
# (3 of their 58 updates) that the next `make bench-gossip` took as finished. Also: every driver
# that reuses runs goes through run_complete, none through a bare grep for the summary. And
# (issue 45) a run or a step is reused only when the build that made it has this build's numerics
# hash; a step's progress line appears on a terminal only, never in piped output. The launcher
# (bench/launch.sh): LAUNCH=slurm DRY_RUN=1 writes and prints a run's sbatch script with its rank,
# CPU and GPU counts and launches nothing; bad LAUNCH, HOSTFILE and options are refused.
# Mostly sleeps (its two progress checks wait 4 and 5 s): "idle", beside the pool (tests/run.sh).
# pdl-test: cpu=1 idle
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
PDL_RESULTS=$T source bench/lib.sh
printf '%s\n' '{"event":"eval","updates":3}' '{"event":"summary","updates":58,"diverged":false}' > "$T/done.jsonl"
printf '%s\n' '{"event":"eval","updates":3}' '{"event":"summary","updates":3,"interrupted_by_signal":15}' > "$T/cut.jsonl"
printf '%s\n' '{"event":"eval","updates":3}' > "$T/none.jsonl"
run_complete "$T/done.jsonl" && ok "run_complete: a finished run is reused" || notok "run_complete" "a finished run's summary was not accepted"
run_complete "$T/cut.jsonl" && notok "run_complete" "a run cut short by signal 15 was taken as finished" \
  || ok "run_complete: a run cut short by a signal is run again"
run_complete "$T/none.jsonl" && notok "run_complete" "a run without a summary was taken as finished" \
  || ok "run_complete: a run without a summary is run again"
run_complete "$T/missing.jsonl" && notok "run_complete" "a missing file was taken as finished" \
  || ok "run_complete: a missing results file is run again"
bare=$(grep -ln "grep -q '\"event\":\"summary\"'" bench/*/run.sh)
[ -z "$bare" ] && ok "no bench driver reuses a run by a bare grep for its summary" \
  || notok "bench drivers use run_complete" "a bare summary grep in: $bare"
# ---- the numerics hash (issue 45): runs and steps of another build are not reused -----------------
(
  cd "$(dirname "$0")/.." || exit 1
  PDL_RESULTS=$T/nh; source bench/lib.sh; PDL=/bin/true
  bench_init demo > /dev/null
  [ ${#NUMERICS} = 64 ] && ok "bench_init: the numerics hash ($(echo "$NUMERICS" | cut -c1-12))" || notok "numerics hash" "'$NUMERICS'"
  printf '%s\n' '{"event":"summary","updates":58}' > "$RES/new.jsonl"
  cp "$RES/new.jsonl" "$RES/old.jsonl"; touch -d '2020-01-01' "$RES/old.jsonl"
  run_complete "$RES/new.jsonl" && [ "$(cat "$RES/new.jsonl.numerics")" = "$NUMERICS" ] \
    && ok "run_complete: a run made since bench_init is this build's (FILE.numerics written)" || notok "new run" "not taken"
  run_complete "$RES/old.jsonl" && notok "old run" "a run of unknown build was reused" || ok "run_complete: an older run without FILE.numerics is run again"
  echo "0123" > "$RES/old.jsonl.numerics"
  run_complete "$RES/old.jsonl" && notok "old run" "a run of another build was reused" || ok "run_complete: a run of another numerics hash is run again"
  echo "$NUMERICS" > "$RES/old.jsonl.numerics"
  run_complete "$RES/old.jsonl" && ok "run_complete: an older run of the same numerics hash is reused" || notok "old run same hash" "not reused"
  mkdir -p "$RES/runs-x"; w() { printf '%s\n' '{"event":"summary"}' > "$RES/runs-x/w.jsonl"; }
  FORCE=1 done_or_run wr w > /dev/null; touch -d '2020-01-01' "$RES/runs-x/w.jsonl"
  run_complete "$RES/runs-x/w.jsonl" && ok "a run a step wrote (never asked run_complete) is reused by the next bench" \
    || notok "step run marks" "no FILE.numerics after the step"
  echo "full 0123 5" > "$RES/st.done"
  out=$(done_or_run st true); case $out in *"another build"*"st: done in"*) ok "done_or_run: a step done by another build runs again" ;;
    *) notok "done_or_run other build" "$out" ;; esac
  out=$(done_or_run st true); case $out in *"st: complete, skipping"*) ok "done_or_run: a step done by this build is skipped" ;;
    *) notok "done_or_run same build" "$out" ;; esac
  slow() { sleep 4; }
  out=$(FORCE=1 done_or_run sl slow | od -c); case $out in *'\r'*) notok "piped progress" "a carriage return in piped output" ;;
    *) ok "done_or_run: piped output has no progress line (line by line)" ;; esac
  if command -v script > /dev/null; then
    out=$(FORCE=1 PDL_RESULTS=$T/nh script -q -c "bash -c 'source bench/lib.sh; bench_init demo >/dev/null; slow() { sleep 5; }; FORCE=1 done_or_run sl slow'" /dev/null)
    case $out in *"sl: 0/"*"runs done"*|*"sl: 0 runs done"*) ok "done_or_run: a step longer than a few seconds shows its progress on a terminal" ;;
      *) notok "terminal progress" "$(printf '%s' "$out" | tr '\r' '\n' | head -5)" ;; esac
  else echo "skip - terminal progress: no script(1)"; fi
  exit "${FAILED:-0}"
) || FAILED=1
# ---- the launcher (bench/launch.sh, issue 48 item 2): DRY_RUN writes and prints, runs nothing ------
(
  cd "$(dirname "$0")/.." || exit 1
  PDL_RESULTS=$T/ln; source bench/lib.sh; PDL=/bin/true
  bench_init demo > /dev/null
  mkdir -p "$T/fakebin"; printf '#!/bin/sh\ntouch %s/launched\nexit 9\n' "$T" > "$T/fakebin/sbatch"
  cp "$T/fakebin/sbatch" "$T/fakebin/mpirun"; chmod +x "$T/fakebin/sbatch" "$T/fakebin/mpirun"
  export PATH=$T/fakebin:$PATH   # a launch would leave $T/launched
  k2() { OMP_NUM_THREADS=2 mpirun_cmd --mca mpi_yield_when_idle 1 -np 4 bin/pdl train --algo kfac-dist --threads 2 --device cuda:1 --results "$RES/a b.jsonl"; }
  out=$(LAUNCH=slurm DRY_RUN=1 done_or_run k2 k2 2>&1)
  f=$(ls "$RES"/slurm/k2-*.sbatch 2>/dev/null)
  if [ -n "$f" ] && [ ! -e "$T/launched" ] && [ ! -e "$RES/k2.done" ] && grep -qx '#SBATCH --ntasks=4' "$f" \
     && grep -qx '#SBATCH --cpus-per-task=2' "$f" && grep -qx '#SBATCH --gpus-per-task=1' "$f" \
     && grep -qx 'export OMPI_MCA_mpi_yield_when_idle=1' "$f" && grep -qx 'export OMP_NUM_THREADS=2' "$f" \
     && grep -q '^srun --mpi=pmix --cpus-per-task=2 bin/pdl train .*--device cuda:1 --results .*a\\ b.jsonl$' "$f" \
     && grep -q "^--- $f" <<<"$out" && grep -q '^#SBATCH --ntasks=4' <<<"$out" && grep -q 'not marked done' <<<"$out"; then
    ok "LAUNCH=slurm DRY_RUN=1: $(basename "$f") (4 ranks, 2 CPUs, 1 GPU each, srun --mpi=pmix) printed, nothing submitted, step not marked done"
  else notok "LAUNCH=slurm DRY_RUN" "script '$f': $(cat "$f" 2>&1 | tr '\n' '|') out: $out"; fi
  printf 'localhost\nlocalhost\n' > "$T/hosts"
  out=$(HOSTFILE=$T/hosts DRY_RUN=1 mpirun_cmd -np 2 bin/pdl train 2>&1)
  [ ! -e "$T/launched" ] && grep -q "^DRY_RUN: mpirun .*--hostfile $T/hosts -np 2 bin/pdl train$" <<<"$out" \
    && ok "LAUNCH=mpirun HOSTFILE=... DRY_RUN=1: the mpirun line with --hostfile, nothing run" || notok "HOSTFILE dry run" "$out"
  expect_exit 2 "LAUNCH=bogus: refused" env LAUNCH=bogus bash -c 'source bench/lib.sh; mpirun_cmd -np 2 true'
  out=$(LAUNCH=bogus mpirun_cmd -np 2 true 2>&1); grep -q "LAUNCH=bogus" <<<"$out" && ok "the message names LAUNCH" || notok "LAUNCH message" "$out"
  out=$(HOSTFILE=$T/none mpirun_cmd -np 2 true 2>&1); rc=$?
  [ $rc = 2 ] && grep -q "HOSTFILE=$T/none" <<<"$out" && ok "a missing HOSTFILE: exit 2 naming it" || notok "missing HOSTFILE" "rc=$rc $out"
  out=$(LAUNCH=slurm mpirun_cmd --map-by-node -np 2 true 2>&1); rc=$?
  [ $rc = 2 ] && grep -q -- "--map-by-node" <<<"$out" && ok "LAUNCH=slurm: an mpirun option without a Slurm form: exit 2 naming it" || notok "unknown option" "rc=$rc $out"
  [ ! -e "$T/launched" ] || notok "launcher" "something was launched"
  exit "${FAILED:-0}"
) || FAILED=1
finish
