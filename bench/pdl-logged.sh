#!/usr/bin/env bash
# bench/pdl-logged.sh — what bench/lib.sh's bench_init puts in $PDL: logs pdl's command line
# (one JSON line {"argv": [...], "cwd": ..., "pid": ...} appended to $PDL_CMDLOG: the record's runs
# name their command, bench/record.py) and its process id (to $PDL_PROGRESS: the step runner counts
# runs done from it), then execs the real binary $PDL_REAL, so the process, its signals, exit
# status and timing are pdl's own. Under mpirun only rank 0 logs (one line per run, not per rank).
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}
if [ "$rank" = 0 ]; then
  if [ -n "${PDL_CMDLOG:-}" ]; then
    esc() { local a=${1//\\/\\\\}; a=${a//\"/\\\"}; a=${a//$'\t'/\\t}; a=${a//$'\n'/\\n}; a=${a//$'\r'/\\r}; printf '"%s"' "$a"; }
    j="{\"argv\": [$(esc "$PDL_REAL")"
    for a in "$@"; do j+=", $(esc "$a")"; done
    j+="], \"cwd\": $(esc "$PWD"), \"pid\": $$}"
    printf '%s\n' "$j" >> "$PDL_CMDLOG" 2>/dev/null
  fi
  [ -n "${PDL_PROGRESS:-}" ] && echo "$$" >> "$PDL_PROGRESS" 2>/dev/null
fi
exec "$PDL_REAL" "$@"
