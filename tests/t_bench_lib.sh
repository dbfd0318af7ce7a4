#!/usr/bin/env bash
# tests/t_bench_lib.sh — bench/lib.sh's run_complete, which every bench driver (gossip, hermans,
# easgd, ppasgd) asks before it reuses a run's results: a run with a summary is reused, one without
# is run again, and one whose summary says interrupted_by_signal (pdl writes its summary on
# SIGINT/SIGTERM too) is run again: a bench stopped mid-step once left four truncated gossip runs
# (3 of their 58 updates) that the next `make bench-gossip` took as finished. Also: every driver
# that reuses runs goes through run_complete, none through a bare grep for the summary.
# pdl-test: cpu=1
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
finish
