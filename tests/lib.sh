# tests/lib.sh — shared helpers for script tests (sourced). Prints TAP-like lines that
# tests/run.sh counts: ok(name), notok(name, why).
PDL=${PDL:-bin/pdl}
# Waiting threads sleep instead of spinning (tests time nothing; only wait policies, no numerics):
# an OpenMP team (K-FAC's --threads N) waits passively -- libgomp's default spin burnt 3.7x the CPU of
# a vgg-small K-FAC run at --threads 2 on a loaded 2-core machine -- and MPIRUN's ranks yield their
# core when idle (they are oversubscribed: -np 4 on 2 cores; the QUICK benches' mpiruns too).
# tests/run.sh sets the same.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1: $2"; FAILED=1; }
FAILED=0
# expect NAME CMD...: the command must succeed
expect() { local n=$1; shift; if out=$("$@" 2>&1); then ok "$n"; else notok "$n" "exit $? from: $* :: $(echo "$out" | tail -3)"; fi; }
# expect_exit CODE NAME CMD...: the command must exit with CODE
expect_exit() { local code=$1 n=$2; shift 2; out=$("$@" 2>&1); local rc=$?
  if [ "$rc" -eq "$code" ]; then ok "$n"; else notok "$n" "wanted exit $code, got $rc from: $* :: $(echo "$out" | tail -2)"; fi; }
# mpirun with the flags this machine needs; fails loudly when there is no mpirun.
MPIRUN() {
  if ! command -v mpirun >/dev/null 2>&1; then
    echo "not ok - mpirun: no mpirun found; MPI tests need Open MPI (make deps installs openmpi-bin)"; FAILED=1; return 127
  fi
  local extra=(--oversubscribe --bind-to none)
  [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} mpirun "${extra[@]}" "$@"
}
# last_json: the last stdout line of a command's output
last_line() { tail -n 1; }
# jget KEY: read a numeric/string field from a JSON object on stdin (flat objects only)
jget() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); v=d; 
for k in sys.argv[1].split("."): v=v[k]
print(v)' "$1"; }
# maxdiff A B: max |a - b| over two float32 parameter dumps (PDL_DUMP_PARAMS); 1e30 when their
# lengths differ or they are empty
maxdiff() { python3 - "$1" "$2" <<'PY'
import struct, sys
def r(p):
    d = open(p, 'rb').read(); return struct.unpack('%df' % (len(d) // 4), d)
a, b = r(sys.argv[1]), r(sys.argv[2])
print(max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) and a else 1e30)
PY
}
# within X TOL: X <= TOL (floats)
within() { python3 -c "import sys; sys.exit(0 if float('$1') <= $2 else 1)"; }
finish() { exit "$FAILED"; }
# apart GPU CPU W0: max |gpu - cpu| / max |cpu - w0| over raw float32 parameter dumps (PDL_DUMP_PARAMS):
# how far a device run lands from its CPU run, as a share of the distance the CPU run moved
apart() {
  python3 - "$@" <<'PY'
import array, sys
g, c, w = (array.array("f", open(f, "rb").read()) for f in sys.argv[1:4])
moved = max(abs(a - b) for a, b in zip(c, w))
print("%.3g" % (max(abs(a - b) for a, b in zip(g, c)) / moved if moved else float("inf")))
PY
}

# gpu_required: PDL_REQUIRE_GPU=1 on a machine with a /dev/nvidia* device node, or
# PDL_REQUIRE_GPU=force anywhere (tests/harness.h's h_gpu_required): a GPU test that cannot use
# the device must fail, not skip.
gpu_required() {
  case ${PDL_REQUIRE_GPU:-0} in
    0|'') return 1 ;;
    force) return 0 ;;
    *) compgen -G '/dev/nvidia[0-9]*' >/dev/null ;;
  esac
}
# same_results A.jsonl B.jsonl: the two runs' results lines are the same, times and the resident
# chunk and graph fields aside (pdl train's resident and step-by-step loops); prints the first difference
same_results() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
def load(f):
    out = []
    for l in open(f):
        d = json.loads(l)
        for k in ("time_s", "resident_chunk", "graph_chunks"):
            d.pop(k, None)
        out.append(d)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    for x, y in zip(a, b):
        if x != y:
            print({k: (x.get(k), y.get(k)) for k in set(x) | set(y) if x.get(k) != y.get(k)})
            break
    print("lines: %d vs %d" % (len(a), len(b)))
    sys.exit(1)
EOF
}
