#!/usr/bin/env bash
# ci/perf-ref.sh — builds `bin/pdl` of the throughput reference revision (the commit named in
# ci/perf-reference) on this machine, so that the gate's throughput probes compare this tree with
# that revision measured here, in the same run, instead of with figures recorded on another CPU.
#
# usage: ci/perf-ref.sh [--rev REV]       prints the path of the reference binary on stdout
#   The revision is exported with `git archive` into $BUILD/perf-ref/<sha>/ and built there by
#   its own Makefile (`make bin/pdl NO_CUDA=1`: the probes time CPU paths only), with none of the
#   caller's make variables or OPT leaking in: a tree built with other flags is compared with the
#   reference as the reference builds itself. The build is kept and reused (a `.built` mark),
#   and a lock lets `make test` start it in the background while the unit tests run.
# env: BUILD (build), PERF_REFERENCE (a revision instead of ci/perf-reference's), PERF_REF_OPT (build the reference with this OPT instead of its own, for
#      experiments only, e.g. "-O3 -march=haswell" to compare AVX2 code on an AVX-512 machine),
#      PERF_REF_NICE (nice level, default 0).
# Exit 1 with one plain line when the revision is not in this clone or does not build: the gate
# then fails; it never passes without its reference.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
rev=""
while [ $# -gt 0 ]; do
  case $1 in
    --rev) rev=${2:?--rev needs a revision}; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "perf-ref: unknown flag '$1' (ci/perf-ref.sh --help)" >&2; exit 2 ;;
  esac
  shift
done
rev=${rev:-${PERF_REFERENCE:-}}
if [ -z "$rev" ]; then
  [ -f ci/perf-reference ] || { echo "perf-ref: ci/perf-reference is missing: it names the reference revision" >&2; exit 1; }
  rev=$(grep -v '^[[:space:]]*#' ci/perf-reference | grep -m1 -o '[0-9a-f]\{7,40\}' || true)
  [ -n "$rev" ] || { echo "perf-ref: ci/perf-reference names no revision (want a commit id on a line of its own)" >&2; exit 1; }
fi
sha=$(git rev-parse --verify --quiet "$rev^{commit}" 2>/dev/null) || {
  echo "perf-ref: the reference revision $rev is not in this clone (a shallow clone? run: git fetch --unshallow): the throughput gate cannot run" >&2
  exit 1; }
opt=${PERF_REF_OPT:-}
key=$sha${opt:+-opt$(printf '%s' "$opt" | cksum | cut -d' ' -f1)}
dir=$BUILD/perf-ref/$key
mkdir -p "$BUILD/perf-ref"
exec 9>"$BUILD/perf-ref/lock"
flock 9
if [ ! -f "$dir/.built" ]; then
  rm -rf "$dir"; mkdir -p "$dir"
  log=$dir.log
  echo "perf-ref: building the reference revision ${sha:0:12} in $dir (log: $log)" >&2
  git archive --format=tar "$sha" | tar -x -C "$dir"
  if ! (cd "$dir" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u OPT \
          nice -n "${PERF_REF_NICE:-0}" \
          make -j"$(nproc 2>/dev/null || echo 2)" NO_CUDA=1 BUILD=build ${opt:+"OPT=$opt"} bin/pdl) >"$log" 2>&1; then
    echo "perf-ref: the reference revision ${sha:0:12} does not build here; last lines of $log:" >&2
    tail -n 5 "$log" | sed 's/^/    /' >&2
    exit 1
  fi
  touch "$dir/.built"
fi
echo "$PWD/$dir/bin/pdl"
