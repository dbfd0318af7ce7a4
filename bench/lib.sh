# bench/lib.sh — shared helpers for bench/<paper>/run.sh drivers (sourced).
#   bench_init PAPER          sets RES=$RESROOT/PAPER, TABLE=$RES/table.tsv, creates dirs
#                             (RESROOT=${PDL_RESULTS:-results}, plots to OUTDIR=${PDL_PLOTS_OUT:-plots/out}:
#                             tests point both at a temp dir so they never touch a user's results)
#   done_or_run NAME CMD...   skips an experiment whose results/PAPER/NAME.done exists (unless
#                             FORCE=1); runs CMD; marks it done only when CMD succeeded, so an
#                             interrupted run never leaves a half experiment marked complete
#   run_complete FILE         FILE (a run's --results JSONL) holds its summary and the run was not
#                             cut short: pdl writes a summary on SIGINT/SIGTERM too (no data lost),
#                             marked interrupted_by_signal, and such a run must be run again, not
#                             reused (a bench stopped mid-step once left four truncated gossip runs
#                             that the next run took as finished)
#   table_row ID PAPER OURS DATASET MODE VERDICT   one row of the paper-vs-ours table
#   table_print               prints the table (also written to $RES/table.md)
#   mpirun_cmd ...            mpirun with the flags this machine needs (root, oversubscribe)
set -u
PDL=${PDL:-bin/pdl}
QUICK=${QUICK:-}
FORCE=${FORCE:-}
RESROOT=${PDL_RESULTS:-results}
OUTDIR=${PDL_PLOTS_OUT:-plots/out}
bench_init() {
  PAPER=$1; RES=$RESROOT/$PAPER; TABLE=$RES/table.tsv
  mkdir -p "$RES" "$OUTDIR"
  : > "$TABLE.tmp"
}
done_or_run() {
  local name=$1; shift
  if [ -n "${ONLY:-}" ]; then   # ONLY="h3d k2": run only the experiments whose step names start so
    local w hit=; for w in $ONLY; do [ "${name#"$w"}" != "$name" ] && hit=1; done
    [ -n "$hit" ] || { echo "[$PAPER] $name: not in ONLY ($ONLY), skipped"; return 0; }
  fi
  if [ -z "$FORCE" ] && [ -f "$RES/$name.done" ] && [ "$(cat "$RES/$name.done")" = "${QUICK:+quick}${QUICK:-full}" ]; then
    echo "[$PAPER] $name: complete, skipping (FORCE=1 re-runs)"; return 0
  fi
  echo "[$PAPER] $name: running${QUICK:+ (QUICK)}"
  local t0=$SECONDS
  if "$@"; then echo "${QUICK:+quick}${QUICK:-full}" > "$RES/$name.done"; echo "[$PAPER] $name: done in $((SECONDS - t0)) s"
  else local rc=$?; echo "[$PAPER] $name: FAILED (exit $rc)" >&2; return $rc; fi
}
run_complete() { grep '"event":"summary"' "$1" 2>/dev/null | grep -qv '"interrupted_by_signal"'; }
table_row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$TABLE.tmp"; }
table_print() {
  mv "$TABLE.tmp" "$TABLE"
  { echo "| id | paper | ours | data set | real/simulated | verdict |"
    echo "|---|---|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}' "$TABLE"; } > "$RES/table.md"
  echo; cat "$RES/table.md"; echo
}
mpirun_cmd() {
  command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found (make deps installs openmpi-bin)" >&2; return 127; }
  local extra=(--oversubscribe --bind-to none)
  [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
  mpirun "${extra[@]}" "$@"
}
render_plot() { # render_plot plots/NAME.gp : PNG + PDF into $OUTDIR (skipped without gnuplot)
  command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot not found: skipping $1" >&2; return 0; }
  gnuplot -e "resdir='$RESROOT'; outdir='$OUTDIR'" "$1"
}
