#!/usr/bin/env bash
# ci/regress.sh — the CI regression gate: `make regress` (make test runs it after the unit tests)
# and `make regress-update`. Runs every probe, i.e. every function named probe_* in
# ci/probes/*.sh (file order, then definition order); a probe runs short pdl commands and records
# figures with the helpers below (metric, emit, skip, pending). ci/regress.py then judges them
# against ci/baselines/*.json, prints the table, appends the run to results/ci/history.jsonl and
# exits non-zero on any regression. How to add a metric: ci/README.md.
#
# usage: ci/regress.sh [--update | --spread N] [--only REGEX] [--no-history]
#        ci/regress.sh --untimed-to FILE [--mpi only|skip] [--only REGEX]
#        ci/regress.sh --untimed-from DIR [--only REGEX] [--no-history]
#   --update       rewrite the baseline values from this run and print the diff
#   --spread N     run the probes N times and print each metric's run-to-run spread beside its
#                  tolerance (to set tolerances on a new CI machine; judges nothing, no history)
#   --only REGEX   run only the probes whose function name matches (records not measured are
#                  then left out of the table instead of failing as MISSING)
#   --no-history   do not append to the history file
#   --untimed-to FILE   run only the probes that time nothing (those not marked timed, below) and
#                  write their records to FILE; judges nothing (exit 1 when a probe failed: its
#                  error is in FILE and fails the judging run). --mpi only|skip: of those, only the
#                  ones marked mpi, or all but them. make test runs these beside the unit tests
#                  (tests/run.sh, GATE_UNTIMED): they give the same figures however loaded the
#                  machine is (one thread, fixed seeds, simulated time, counts)
#   --untimed-from DIR  run only the timed probes, alone, and judge them together with the records
#                  in DIR/*.jsonl, which --untimed-to runs of this same pdl binary and probe files
#                  wrote; an untimed probe with no such record fails the gate as a probe error
# A probe's definition line may carry a tag: "probe_x() {   # probe: timed" (it times something:
# it calls ab, or its figure is a speed; it must run alone) or "# probe: mpi" (it runs mpirun:
# tests/run.sh runs it beside the other MPI tests). ab refuses to run in a probe not marked timed.
# Throughput is never compared with a figure recorded elsewhere: a throughput probe calls ab,
# which runs the same measurement with this tree's pdl and with the reference revision's pdl
# (ci/perf-reference, built here by ci/perf-ref.sh), interleaved, and records their ratio.
# env: PDL (bin/pdl), REPEATS (samples per metric, median judged: 4, 8 for --update; for a
#      throughput metric, pairs of reference and current runs),
#      BUILD (build: where the reference revision is built, BUILD/perf-ref/),
#      REGRESS_REF_PDL (use this binary as the reference instead of building ci/perf-reference:
#      for experiments, e.g. swapping the two sides),
#      REGRESS_BASELINES (ci/baselines), REGRESS_PROBES (ci/probes),
#      REGRESS_HISTORY (results/ci/history.jsonl; the plot reads RESDIR/ci/ with RESDIR two
#      levels up), REGRESS_PLOTDIR (plots/out), REGRESS_KEEP=1 keeps the probe logs.
#      REGRESS_AB_MIN (2: ab's pairs before it may stop early, see ab),
# Probes run under `set -e -o pipefail` in a subshell: any failing command fails that probe, its
# log tail is printed and the gate fails (its metrics also show as MISSING).
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build} source tests/pypath.sh   # python3 without a version manager's shim
PDL=${PDL:-bin/pdl}
BASELINES=${REGRESS_BASELINES:-ci/baselines}
PROBES=${REGRESS_PROBES:-ci/probes}
HISTORY=${REGRESS_HISTORY:-results/ci/history.jsonl}
mode=compare only="" passes=1 untimed_to="" untimed_from="" mpi_sel=""
while [ $# -gt 0 ]; do
  case $1 in
    --update) mode=update ;;
    --spread) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "regress: --spread needs a count N >= 1" >&2; exit 2; }
              mode=spread passes=$2; shift ;;
    --only) [ $# -ge 2 ] || { echo "regress: --only needs a REGEX" >&2; exit 2; }; only=$2; shift ;;
    --no-history) HISTORY="" ;;
    --untimed-to) [ $# -ge 2 ] && [ -n "$2" ] || { echo "regress: --untimed-to needs a FILE" >&2; exit 2; }; untimed_to=$2; shift ;;
    --untimed-from) [ $# -ge 2 ] && [ -d "${2:-}" ] || { echo "regress: --untimed-from needs a directory (of --untimed-to files)" >&2; exit 2; }
                    untimed_from=$2; shift ;;
    --mpi) [[ ${2:-} =~ ^(only|skip)$ ]] || { echo "regress: --mpi needs only or skip" >&2; exit 2; }; mpi_sel=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "regress: unknown flag '$1' (ci/regress.sh --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$untimed_to" ] && [ -n "$untimed_from" ]; then echo "regress: --untimed-to and --untimed-from exclude each other" >&2; exit 2; fi
if { [ -n "$untimed_to" ] || [ -n "$untimed_from" ]; } && [ "$mode" != compare ]; then
  echo "regress: --untimed-to/--untimed-from split a compare run; not with --update or --spread" >&2; exit 2
fi
[ -n "$mpi_sel" ] && [ -z "$untimed_to" ] && { echo "regress: --mpi goes with --untimed-to" >&2; exit 2; }
# a new baseline deserves more samples than a check: 8 for --update, 4 otherwise (an even count:
# ab's pairs then make whole ABBA cycles)
REPEATS=${REPEATS:-$([ "$mode" = update ] && echo 8 || echo 4)}
[ -x "$PDL" ] || { echo "regress: $PDL is not built (run make)" >&2; exit 2; }
case $REPEATS in ''|*[!0-9]*|0) echo "regress: REPEATS must be a positive integer, got '$REPEATS'" >&2; exit 2 ;; esac
case ${REGRESS_AB_MIN:-2} in *[!0-9]*|0) echo "regress: REGRESS_AB_MIN must be a positive integer" >&2; exit 2 ;; esac
python3 ci/regress.py validate --baselines "$BASELINES" >/dev/null || exit 2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pdl-regress.XXXXXX")
cleanup() { [ -n "${REGRESS_KEEP:-}" ] && echo "regress: probe logs kept in $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT
export OMP_NUM_THREADS=1   # probes pass --threads explicitly; nothing else may spread out

# ---- helpers for probes -----------------------------------------------------------------------
# metric NAME VALUE: one sample (several samples of one NAME are judged by their median).
metric() {
  if [[ $2 =~ ^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$ ]]; then
    printf '{"metric":"%s","value":%s}\n' "$1" "$2" >> "$MEAS"
  else
    echo "metric $1: value '$2' is not a number" >&2; return 1
  fi
}
# emit PREFIX JSON KEY...: metric PREFIX.KEY for each KEY of the flat JSON object JSON.
emit() {
  local prefix=$1 json=$2; shift 2
  python3 - "$prefix" "$json" "$@" >> "$MEAS" <<'PY' || { echo "emit $1: bad JSON or missing key" >&2; return 1; }
import json, math, sys
prefix, d = sys.argv[1], json.loads(sys.argv[2])
for k in sys.argv[3:]:
    v = d[k]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        sys.exit("key %s: %r is not a finite number" % (k, v))
    print(json.dumps({"metric": "%s.%s" % (prefix, k), "value": v}))
PY
}
# jnum JSON EXPR: a number computed from the flat JSON object (python expression over d), e.g.
#   jnum "$j" 'd["img_per_s"] / d["sgemm_gflops"]'
jnum() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%.10g" % eval(sys.argv[2]))' "$1" "$2"; }
# jrec KEY VALUE KEY VALUE...: append one JSON object of strings to the measurements.
jrec() { python3 -c 'import json,sys; a=sys.argv[1:]; print(json.dumps(dict(zip(a[::2], a[1::2]))))' "$@" >> "$MEAS"; }
# skip NAME REASON: NAME cannot be measured on this machine (e.g. no CUDA device); not a failure.
skip() { jrec skip "$1" reason "$2"; }
# note NAME TEXT: how NAME was measured (e.g. the load on the machine), shown when NAME fails.
note() { jrec note "$1" text "$2"; }
# pending NAME REASON: the feature is not in this build yet; passes only while the baseline
# value is null (never recorded), fails once a value was recorded.
pending() { jrec pending "$1" reason "$2"; }
# pdl_json ARGS...: run pdl, log everything, print its last stdout line (the JSON summary).
pdl_json() {
  local out rc=0
  out=$("$PDL" "$@" 2>>"$PLOG") || rc=$?
  printf '$ pdl %s\n%s\n' "$*" "$out" >> "$PLOG"
  [ $rc -eq 0 ] || { echo "pdl $* exited with status $rc" >> "$PLOG"; return $rc; }
  printf '%s\n' "$out" | tail -n 1
}
# mpi_json NP ARGS...: the same under mpirun -np NP (fails loudly when there is no mpirun).
mpi_json() {
  local np=$1 out rc=0; shift
  command -v mpirun >/dev/null 2>&1 || { echo "no mpirun: MPI probes need Open MPI (make deps)" | tee -a "$PLOG" >&2; return 127; }
  local extra=(--oversubscribe --bind-to none)
  [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
  out=$(mpirun "${extra[@]}" -np "$np" "$PDL" "$@" 2>>"$PLOG") || rc=$?
  printf '$ mpirun -np %s pdl %s\n%s\n' "$np" "$*" "$out" >> "$PLOG"
  [ $rc -eq 0 ] || { echo "mpirun -np $np pdl $* exited with status $rc" >> "$PLOG"; return $rc; }
  printf '%s\n' "$out" | tail -n 1
}
# ref_pdl: the reference revision's pdl (REGRESS_REF_PDL, or ci/perf-ref.sh builds and caches it);
# fails with perf-ref.sh's plain message when the revision is missing or does not build.
ref_pdl() {
  if [ -n "${REGRESS_REF_PDL:-}" ]; then
    [ -x "$REGRESS_REF_PDL" ] || { echo "REGRESS_REF_PDL=$REGRESS_REF_PDL is not an executable" >&2; return 1; }
    echo "$REGRESS_REF_PDL"; return 0
  fi
  BUILD=${BUILD:-build} bash ci/perf-ref.sh
}
# ab NAME rate|time MEASURE [ARGS...]: the same-run, same-machine throughput comparison.
# MEASURE ARGS prints one number for the pdl in $PDL: a rate (higher = faster) or a time
# (lower = faster). Up to REPEATS pairs run it once with the reference revision's pdl and once
# with this tree's, in ABBA order (pair i: reference first when i is even, this tree first when
# odd, so a steady drift of the machine's speed touches both sides alike). NAME records each
# side's BEST sample over the pairs, as this/ref (rates) or ref/this (times): above 1 means this
# tree is faster. Best-of-N, not the median of pair ratios: another process on a 2-core machine
# slows single samples of either side at random (pairs from 0.66 to 1.12 around an unchanged
# tree), the best sample of each side is its uncontended speed, and a real slowdown lowers it
# too. A compare run stops after a whole ABBA cycle (from REGRESS_AB_MIN pairs on, default 2)
# when the figure so far passes with at least half its tolerance to spare (ci/regress.py clear):
# more pairs can lower the figure only by raising the reference's best, so they could fail it
# only if noise had slowed both of the reference's first two samples by about half the
# tolerance and not this tree's (on a quiet machine single pairs stay within 1-4% for the speed
# probes). A figure that fails or sits nearer its edge gets every pair, as before; --update and
# --spread run every pair. The pairs go to the probe log.
ab() {
  local name=$1 kind=$2 ref cur=$PDL i a b as=() bs=(); shift 2
  case $kind in rate|time) ;; *) echo "ab $name: kind must be rate or time, got '$kind'" >&2; return 2 ;; esac
  [ "${PROBE_TAG[$CUR_PROBE]:-}" = timed ] || { echo "ab $name: $CUR_PROBE times things: mark it '# probe: timed' (ci/regress.sh)" >&2; return 2; }
  ref=$(ref_pdl 2>>"$PLOG") || { echo "reference revision unavailable: $(tail -n 3 "$PLOG" | tr '\n' ' ')" >&2; return 1; }
  local min=${REGRESS_AB_MIN:-2}
  for ((i = 0; i < REPEATS; i++)); do
    if [ $((i % 2)) = 0 ]; then PDL=$ref; a=$("$@"); PDL=$cur; b=$("$@")
    else PDL=$cur; b=$("$@"); PDL=$ref; a=$("$@"); PDL=$cur; fi
    printf 'ab %s pair %d: reference %s, this tree %s (%s)\n' "$name" "$i" "$a" "$b" "$kind" >> "$PLOG"
    as+=("$a"); bs+=("$b")
    r=$(python3 -c 'import sys
k, n = sys.argv[1], int(sys.argv[2]); a = [float(x) for x in sys.argv[3:3 + n]]; b = [float(x) for x in sys.argv[3 + n:]]
print("%.6g" % (max(b) / max(a) if k == "rate" else min(a) / min(b)))' "$kind" "${#as[@]}" "${as[@]}" "${bs[@]}") \
      || { echo "ab $name: not numbers: reference ${as[*]}, this tree ${bs[*]}" >&2; return 1; }
    if [ "$mode" = compare ] && [ $((i % 2)) = 1 ] && [ $((i + 1)) -ge "$min" ] && [ $((i + 1)) -lt "$REPEATS" ] \
       && python3 ci/regress.py clear --baselines "$BASELINES" --name "$name" --value "$r" >> "$PLOG" 2>&1; then
      printf 'ab %s: %s after %d pairs passes with half its tolerance to spare: the other pairs are not needed\n' "$name" "$r" $((i + 1)) >> "$PLOG"
      break
    fi
  done
  printf 'ab %s: best %s over %d pairs -> %s\n' "$name" "$kind" "${#as[@]}" "$r" >> "$PLOG"
  metric "$name" "$r"
}
# unknown_algo ALGO: true when the last pdl run in this probe rejected --algo ALGO (not built yet).
unknown_algo() { grep -q "unknown --algo '$1'" "$PLOG"; }

# ---- run the probes ---------------------------------------------------------------------------
shopt -s nullglob
files=("$PROBES"/*.sh)
[ ${#files[@]} -gt 0 ] || { echo "regress: no probe files in $PROBES" >&2; exit 2; }
for f in "${files[@]}"; do source "$f" || { echo "regress: cannot source $f" >&2; exit 2; }; done
mapfile -t probes < <(grep -ho '^probe_[A-Za-z0-9_]*' "${files[@]}")
# the tags: "# probe: timed" / "# probe: mpi" on the definition line
declare -A PROBE_TAG
while IFS= read -r line; do
  PROBE_TAG[${line%%(*}]=$(sed -n 's/.*# probe: *\([a-z]*\).*/\1/p' <<<"$line")
done < <(grep -h '^probe_[A-Za-z0-9_]*()' "${files[@]}")
for p in "${probes[@]}"; do
  case ${PROBE_TAG[$p]:-} in ''|timed|mpi) ;; *) echo "regress: $p: unknown tag '# probe: ${PROBE_TAG[$p]}' (timed or mpi)" >&2; exit 2 ;; esac
done
# this pdl binary and these probes: an --untimed-to file is used by an --untimed-from run only
# when it was written by the same
RUN_ID=$(cat "$PDL" "${files[@]}" | sha1sum | cut -c1-16)
# wanted P: P runs in this invocation (--only, and the split of --untimed-to/--untimed-from)
wanted() {
  [ -n "$only" ] && ! [[ $1 =~ $only ]] && return 1
  local tag=${PROBE_TAG[$1]:-}
  if [ -n "$untimed_to" ]; then
    [ "$tag" = timed ] && return 1
    case $mpi_sel in only) [ "$tag" = mpi ] ;; skip) [ "$tag" != mpi ] ;; *) true ;; esac
  elif [ -n "$untimed_from" ]; then [ "$tag" = timed ]
  else true; fi
}
t_all=$SECONDS nrun=0 meas_files=()
echo "regress: $mode${untimed_to:+ (untimed probes${mpi_sel:+, mpi $mpi_sel})}${untimed_from:+ (timed probes; the others from $untimed_from)}, $(git rev-parse --short HEAD 2>/dev/null || echo '?'), host $(hostname), load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null), REPEATS=$REPEATS" >&2
for ((pass = 1; pass <= passes; pass++)); do
  MEAS=$WORK/measured-$pass.jsonl; : > "$MEAS"; meas_files+=("$MEAS")
  [ "$passes" -gt 1 ] && echo "regress: pass $pass of $passes" >&2
  if [ -n "$untimed_from" ]; then   # the untimed probes' records, from runs of this binary and these probes
    nfrom=0 tfrom=0
    for p in "${probes[@]}"; do
      [ "${PROBE_TAG[$p]:-}" = timed ] && continue
      [ -n "$only" ] && ! [[ $p =~ $only ]] && continue
      f=$(grep -l "^{\"ran\": \"$p\", \"id\": \"$RUN_ID\"" "$untimed_from"/*.jsonl 2>/dev/null | head -n 1)
      if [ -z "$f" ]; then
        jrec probe "$p" error "not run: no record of it from this pdl and these probes in $untimed_from/*.jsonl (ci/regress.sh --untimed-to)"
        echo "regress: $p: no record in $untimed_from/ (FAILED)" >&2; continue
      fi
      python3 - "$f" "$p" >> "$MEAS" <<'PY'
import json, sys
f, p = sys.argv[1], sys.argv[2]
on = False
for line in open(f):   # the records between the probe's "start" and "ran" lines
    o = json.loads(line)
    if o.get("start") == p:
        on = True
    elif o.get("ran") == p:
        break
    elif on:
        print(line.rstrip("\n"))
PY
      nfrom=$((nfrom + 1)); tfrom=$((tfrom + $(sed -n "s/^{\"ran\": \"$p\".*\"seconds\": \([0-9]*\).*/\1/p" "$f" | head -n 1)))
    done
    echo "regress: $nfrom untimed probes' records from $untimed_from/ ($tfrom s, run beside the tests)" >&2
  fi
  for p in "${probes[@]}"; do
    wanted "$p" || continue
    PLOG=$WORK/$p.log; : > "$PLOG"; CUR_PROBE=$p
    t0=$SECONDS before=$(wc -l < "$MEAS")
    [ -n "$untimed_to" ] && printf '{"start": "%s"}\n' "$p" >> "$MEAS"
    ( set -e -o pipefail; "$p" ) >>"$PLOG" 2>&1; rc=$?
    n=$(( $(wc -l < "$MEAS") - before )); nrun=$((nrun + 1))
    if [ $rc -ne 0 ]; then
      jrec probe "$p" error "exit status $rc; log tail: $(tail -n 3 "$PLOG" | tr '\n\t' '  ' | cut -c1-300)"
      echo "regress: $p FAILED (status $rc, $((SECONDS - t0)) s); log tail:" >&2; tail -n 5 "$PLOG" | sed 's/^/    /' >&2
    else
      echo "regress: $p: $n records in $((SECONDS - t0)) s" >&2
    fi
    [ -n "$untimed_to" ] && printf '{"ran": "%s", "id": "%s", "seconds": %d, "status": %d}\n' "$p" "$RUN_ID" $((SECONDS - t0)) $rc >> "$MEAS"
  done
done
[ $nrun -gt 0 ] || [ -n "$untimed_from" ] || { echo "regress: no probe matches --only '$only'" >&2; exit 2; }
if [ -n "$untimed_to" ]; then   # records for a later --untimed-from run; judged there
  cp "$MEAS" "$untimed_to.tmp" && mv "$untimed_to.tmp" "$untimed_to" || { echo "regress: cannot write $untimed_to" >&2; exit 2; }
  echo "regress: $nrun untimed probes in $((SECONDS - t_all)) s -> $untimed_to (judged by ci/regress.sh --untimed-from)" >&2
  ! grep -q '^{"probe": ' "$MEAS"
  exit
fi
if [ "$mode" = spread ]; then
  python3 ci/regress.py spread --baselines "$BASELINES" --measured "${meas_files[@]}"
  exit
fi
refrev=${PERF_REFERENCE:-$(grep -v '^[[:space:]]*#' ci/perf-reference 2>/dev/null | grep -m1 -o '[0-9a-f]\{7,40\}')}
refrev=$(git rev-parse --short=12 --verify --quiet "$refrev^{commit}" 2>/dev/null || echo "missing:$refrev")
[ -n "${REGRESS_REF_PDL:-}" ] && refrev="binary:$REGRESS_REF_PDL"
python3 ci/regress.py "$mode" --measured "$MEAS" --baselines "$BASELINES" --history "$HISTORY" \
  --elapsed $((SECONDS - t_all)) ${only:+--only "$only"} --reference "$refrev"
rc=$?
if [ -n "$HISTORY" ] && [ -z "$only" ] && command -v gnuplot >/dev/null 2>&1; then
  resdir=$(dirname "$(dirname "$HISTORY")") plotdir=${REGRESS_PLOTDIR:-plots/out}
  mkdir -p "$plotdir"
  if gnuplot -e "resdir='$resdir'; outdir='$plotdir'" plots/ci-history.gp 2>"$WORK/plot.err"; then
    echo "history: $HISTORY ($(wc -l < "$HISTORY") runs), plot $plotdir/ci-history.png" >&2
  else
    echo "regress: warning: plots/ci-history.gp failed: $(head -n 3 "$WORK/plot.err")" >&2
  fi
fi
exit $rc
