# bench/lib.sh — shared helpers for bench/<paper>/run.sh drivers (sourced).
#   bench_init PAPER          sets RES=$RESROOT/PAPER, TABLE=$RES/table.tsv, creates dirs
#                             (RESROOT=${PDL_RESULTS:-results}, plots to OUTDIR=${PDL_PLOTS_OUT:-plots/out}:
#                             tests point both at a temp dir so they never touch a user's results);
#                             NUMERICS = the numerics hash of this build (bench/record.py hash: the
#                             tracked sources of src/, kernels/, reference/ and any other source
#                             folder, the Makefile, build/config.stamp); $PDL becomes
#                             bench/pdl-logged.sh, which logs each run's command line to
#                             $RES/commands.jsonl and execs the real binary ($PDL_REAL)
#   done_or_run NAME CMD...   skips an experiment whose results/PAPER/NAME.done says it completed in
#                             this mode (full or quick) with this NUMERICS (unless FORCE=1); runs
#                             CMD; marks it done only when CMD succeeded, so an interrupted run
#                             never leaves a half experiment marked complete. On a terminal, a step
#                             longer than a few seconds shows its runs done / total (the total is
#                             the step's run count last time) and an ETA; piped output gets no
#                             progress line (it stays line by line)
#   run_complete FILE         FILE (a run's --results JSONL) holds its summary and the run was not
#                             cut short: pdl writes a summary on SIGINT/SIGTERM too (no data lost),
#                             marked interrupted_by_signal, and such a run must be run again, not
#                             reused (a bench stopped mid-step once left four truncated gossip runs
#                             that the next run took as finished); and the run was made by a build
#                             of the same numerics hash: a file written since bench_init gets
#                             FILE.numerics (here, and for every run file after each step), an
#                             older one is reused only when its FILE.numerics equals NUMERICS
#                             (issue 45: one table never mixes binaries)
#   table_row ID PAPER OURS DATASET MODE VERDICT   one row of the paper-vs-ours table
#   table_print               prints the table (also written to $RES/table.md); after a full bench
#                             (not QUICK, not ONLY, every step done) of a paper of the claims
#                             registry, writes the results of record, $RES/record/ (bench/record.py)
#   mpirun_cmd ...            starts a run's ranks: mpirun with the flags this machine needs (root,
#                             oversubscribe), HOSTFILE=..., or LAUNCH=slurm (an sbatch script per run
#                             in $RES/slurm/), DRY_RUN=1 prints it (bench/launch.sh)
set -u
PDL=${PDL:-bin/pdl}
QUICK=${QUICK:-}
FORCE=${FORCE:-}
RESROOT=${PDL_RESULTS:-results}
OUTDIR=${PDL_PLOTS_OUT:-plots/out}
BENCH_FAILED=
bench_init() {
  PAPER=$1; RES=$RESROOT/$PAPER; TABLE=$RES/table.tsv
  mkdir -p "$RES" "$OUTDIR" "$RES/.progress"
  plots_writable || exit 1   # up front: a bench must not run for hours and then lose its figures
  : > "$TABLE.tmp"
  BENCH_STAMP=$RES/.bench-start; touch "$BENCH_STAMP"
  local real bdir; real=$(readlink -f "$PDL" 2>/dev/null || echo "$PDL"); bdir=$(dirname "$real")
  [ -f "$bdir/config.stamp" ] || bdir=${BUILD:-build}
  NUMERICS=$(python3 bench/record.py hash --build "$bdir") || { echo "[$PAPER] cannot compute the numerics hash (bench/record.py hash)" >&2; exit 1; }
  echo "[$PAPER] numerics hash ${NUMERICS:0:12} (runs of another build are not reused)"
  if [ "$(basename "$PDL")" != pdl-logged.sh ] && [ -x "$PDL" ]; then   # (a missing binary: the driver says so)
    case $PDL in /*) PDL_REAL=$PDL ;; *) PDL_REAL=$PWD/$PDL ;; esac
    export PDL_REAL PDL_CMDLOG=$PWD/$RES/commands.jsonl
    case $RES in /*) PDL_CMDLOG=$RES/commands.jsonl ;; esac
    PDL=$PWD/bench/pdl-logged.sh
  fi
}
# step_progress NAME T0 PIDFILE: the terminal's progress line of a running step, once a second
step_progress() {
  local name=$1 t0=$2 pids=$3 total=${4:-} n d p el eta line
  local parent=$$
  while sleep 1; do
    kill -0 "$parent" 2>/dev/null || exit 0   # the bench was killed: no orphan progress line
    el=$((SECONDS - t0)); [ "$el" -lt 3 ] && continue
    n=0; d=0
    if [ -f "$pids" ]; then while read -r p; do n=$((n + 1)); kill -0 "$p" 2>/dev/null || d=$((d + 1)); done < "$pids"; fi
    if [ -n "$total" ] && [ "$total" -gt 0 ]; then
      [ "$n" -gt "$total" ] && total=$n
      eta="ETA ?"; [ "$d" -gt 0 ] && eta=$(printf 'ETA %dm%02ds' $(( el * (total - d) / d / 60 )) $(( el * (total - d) / d % 60 )))
      line=$(printf '[%s] %s: %d/%d runs done, %dm%02ds, %s' "$PAPER" "$name" "$d" "$total" $((el / 60)) $((el % 60)) "$eta")
    else
      line=$(printf '[%s] %s: %d runs done, %d running, %dm%02ds (total unknown: the step has not completed here before)' \
        "$PAPER" "$name" "$d" $((n - d)) $((el / 60)) $((el % 60)))
    fi
    printf '\r\033[K%s' "$line"
  done
}
done_or_run() {
  local name=$1; shift
  local mode=${QUICK:+quick}${QUICK:-full}
  if [ -n "${ONLY:-}" ]; then   # ONLY="h3d k2": run only the experiments whose step names start so
    local w hit=; for w in $ONLY; do [ "${name#"$w"}" != "$name" ] && hit=1; done
    [ -n "$hit" ] || { echo "[$PAPER] $name: not in ONLY ($ONLY), skipped"; return 0; }
  fi
  local mark; mark=$(cat "$RES/$name.done" 2>/dev/null)
  if [ -z "$FORCE" ] && [ "${mark% *}" = "$mode ${NUMERICS:-}" ]; then
    echo "[$PAPER] $name: complete, skipping (FORCE=1 re-runs)"; return 0
  fi
  [ -n "$mark" ] && [ "${mark%% *}" = "$mode" ] && [ -z "$FORCE" ] && echo "[$PAPER] $name: done by another build (numerics hash differs): running again"
  echo "[$PAPER] $name: running${QUICK:+ (QUICK)}"
  local t0=$SECONDS pids=$RES/.progress/$name mon='' total rc=0
  total=$(cat "$RES/.progress/$name.$mode.runs" 2>/dev/null)
  : > "$pids"
  if [ -t 1 ]; then step_progress "$name" "$t0" "$pids" "$total" & mon=$!; fi
  PDL_PROGRESS=$PWD/$pids; case $pids in /*) PDL_PROGRESS=$pids ;; esac
  export PDL_PROGRESS
  BENCH_STEP=$name "$@" || rc=$?   # BENCH_STEP names LAUNCH=slurm's scripts
  unset PDL_PROGRESS
  if [ -n "$mon" ]; then kill "$mon" 2>/dev/null; wait "$mon" 2>/dev/null; printf '\r\033[K'; fi
  mark_numerics
  local nruns; nruns=$(wc -l < "$pids" 2>/dev/null || echo 0)
  if [ -n "${DRY_RUN:-}" ]; then   # its runs were not launched, so its own reading of them may fail (rc)
    find "$RES/slurm" -name "$name-*.sbatch" -newer "$pids" 2>/dev/null | sort | while read -r f; do echo "--- $f"; cat "$f"; done
    echo "[$PAPER] $name: DRY_RUN, nothing launched (status $rc), not marked done"; return 0
  fi
  if [ $rc = 0 ]; then
    echo "$mode ${NUMERICS:-} $((SECONDS - t0))" > "$RES/$name.done"
    echo "$nruns" > "$RES/.progress/$name.$mode.runs"
    echo "[$PAPER] $name: done in $((SECONDS - t0)) s ($nruns runs)"
  else BENCH_FAILED=1; echo "[$PAPER] $name: FAILED (exit $rc)" >&2; return $rc; fi
}
# mark_numerics: every run file written since bench_init is this build's: FILE.numerics (done after
# each step, also a failed one, so that a later bench reuses its complete runs)
mark_numerics() {
  [ -n "${NUMERICS:-}" ] || return 0
  local f
  while IFS= read -r -d '' f; do
    [ "$(cat "$f.numerics" 2>/dev/null)" = "$NUMERICS" ] || echo "$NUMERICS" > "$f.numerics"
  done < <(find "$RES" -name '*.jsonl' -newer "$BENCH_STAMP" ! -path '*/record/*' ! -name measurements.jsonl \
             ! -name commands.jsonl -print0 2>/dev/null)
}
run_complete() {
  grep '"event":"summary"' "$1" 2>/dev/null | grep -qv '"interrupted_by_signal"' || return 1
  [ -n "${NUMERICS:-}" ] || return 0   # outside a bench (bench_init not called)
  if [ "$1" -nt "$BENCH_STAMP" ]; then echo "$NUMERICS" > "$1.numerics"; return 0; fi   # made by this build
  [ "$(cat "$1.numerics" 2>/dev/null)" = "$NUMERICS" ]
}
table_row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$TABLE.tmp"; }
table_print() {
  mv "$TABLE.tmp" "$TABLE"
  { echo "| id | paper | ours | data set | real/simulated | verdict |"
    echo "|---|---|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}' "$TABLE"; } > "$RES/table.md"
  echo; cat "$RES/table.md"; echo
  write_record
}
# write_record: $RES/record/ (bench/record.py write) after a whole full bench of a registry paper
write_record() {
  python3 bench/verdict.py --list-papers 2>/dev/null | cut -f1 | grep -qx "$PAPER" || return 0
  if [ -n "$QUICK" ] || [ -n "${ONLY:-}" ] || [ -n "$BENCH_FAILED" ] || [ -n "${DRY_RUN:-}" ]; then
    echo "[$PAPER] no results of record written (${QUICK:+QUICK}${ONLY:+ONLY=$ONLY}${BENCH_FAILED:+a step failed}${DRY_RUN:+DRY_RUN}): only a whole full bench writes $RES/record/"
    return 0
  fi
  local f wall=0 m
  for f in "$RES"/*.done; do [ -f "$f" ] || continue; m=$(cat "$f"); m=${m##* }; case $m in ''|*[!0-9]*) ;; *) wall=$((wall + m)) ;; esac; done
  python3 bench/record.py write "$PAPER" --results "$RES" --wall "$wall" --numerics "$NUMERICS" \
    && echo "[$PAPER] results of record in $RES/record/: commit them, then run bench/reproduction.sh" \
    || { echo "[$PAPER] the results of record could not be written" >&2; return 1; }
}
source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"   # mpirun_cmd: LAUNCH=mpirun|slurm, HOSTFILE, DRY_RUN
# plots_writable: the plots' folder $OUTDIR takes a file (where gnuplot is installed; without it no
# plot is written anyway); else a message naming the folder and status 1
plots_writable() {
  command -v gnuplot >/dev/null 2>&1 || return 0
  local probe=$OUTDIR/.pdl-write-test.$$ err
  if ! err=$( { : > "$probe"; } 2>&1 ); then
    echo "[${PAPER:-bench}] the plots' folder $OUTDIR (PDL_PLOTS_OUT) cannot be written: ${err##*: }" >&2; return 1
  fi
  rm -f "$probe"
}
# render_plot plots/NAME.gp : PNG + PDF into $OUTDIR (skipped without gnuplot). Its status is gnuplot's
# (a plot without its data fails and the driver decides); a plot that cannot be WRITTEN ends the bench
# (exit 1 naming the folder): the figures are the bench's output, never lost without a word.
render_plot() {
  command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot not found: skipping $1" >&2; return 0; }
  local errf rc; errf=$(mktemp)
  gnuplot -e "resdir='$RESROOT'; outdir='$OUTDIR'" "$1" 2>"$errf"; rc=$?
  cat "$errf" >&2
  if grep -q "cannot open file; output not changed" "$errf"; then
    echo "[${PAPER:-bench}] $1: the plot could not be written to $OUTDIR (PDL_PLOTS_OUT): $(grep -m1 -o 'system error: .*' "$errf")" >&2
    rm -f "$errf"; exit 1
  fi
  rm -f "$errf"; return $rc
}
