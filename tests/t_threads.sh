#!/usr/bin/env bash
# t_threads.sh — the threaded distributed code under ThreadSanitizer (`make tsan` builds
# build-tsan/ with -fsanitize=thread and runs this with PDL=build-tsan/pdl). Any
# "WARNING: ThreadSanitizer" report (data race, lock-order inversion, ...) fails the test.
#   real runtime: SSGD with 2 grad threads (1 process; and 2 MPI ranks x 2 grad threads);
#                 PP-ASGD with 2 grad threads for 300 updates (1 process) and 100 updates on
#                 2 MPI ranks x 2 grad threads on the tiny net: grad roles, the update role and
#                 the w_hat / D_g mutexes under contention; gossip and gossip-push on 3 MPI ranks:
#                 the serving role, a second thread that calls MPI, beside the training role
#                 (gossip-push also with --checkpoint: agreed evaluations, snapshots under the mutexes);
#   sim runtime:  SSGD on cluster:nodes=2,gpus=2 with the overlap pool (helper pthreads computing
#                 gradients while actors sit in simulated compute), SimGrid actors on OS threads
#                 (PDL_SIM_CONTEXTS=thread: TSan cannot follow SimGrid's stack-switching contexts).
#   canary:       a two-line racy program built with -fsanitize=thread must be reported, so a
#                 silent sanitizer (or a broken grep) cannot pass this test.
# Uninstrumented libraries: libgomp is not TSan-instrumented, so kernels run 1 OpenMP thread
# (--threads 1, OMP_NUM_THREADS=1; no team is ever started). Open MPI runs with
# OMPI_MCA_btl=self,vader: its TCP transport (unused on one node) takes two of its own mutexes
# in both orders in mca_btl_tcp_add_procs during MPI_Init, which TSan reports as a lock-order
# inversion inside libmpi; no suppressions file is needed then (tests/tsan.supp lists none).
# With a binary that is not a TSan build (plain `bash tests/run.sh`), the runs still execute as
# functional checks and the TSan checks are reported as skipped.
# pdl-test: cpu=6 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1 OMPI_MCA_btl=self,vader
export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp second_deadlock_stack=1 history_size=4 ${TSAN_OPTIONS:-}"
# the sim library of the same build as $PDL (the loader would otherwise prefer build/libpdlsim.so)
[ -f "$(dirname "$PDL")/libpdlsim.so" ] && export PDL_SIMLIB=${PDL_SIMLIB:-$(cd "$(dirname "$PDL")" && pwd)/libpdlsim.so}
TSAN=0; ldd "$PDL" 2>/dev/null | grep -q libtsan && TSAN=1
S=(--data "synthetic:n=1024,seed=3" --net tiny --lr 0.0005 --momentum 0.9 --threads 1 --quiet --timeout 600)   # the watchdog thread runs too
# lr 0.0005: PP-ASGD sums every sub-batch gathered in an update (B_bar reaches ~80 here when the
# grad roles outpace the update loop), and a diverged multi-node run ends with an error; the
# test is about races, not learning.

# run NAME CMD...: must exit 0 with a summary line; under TSan, without any report
run() {
  local name=$1; shift
  local log=$T/$(echo "$name" | tr -c 'a-zA-Z0-9\n' _).log
  "$@" > "$log" 2>&1; local rc=$?
  local nrep; nrep=$(grep -c "WARNING: ThreadSanitizer" "$log")
  if [ $rc -ne 0 ] || ! grep -q '"event":"summary"' "$log"; then
    notok "$name" "exit $rc: $(grep -m3 -E 'WARNING|ERROR|error|SUMMARY' "$log" | tr '\n' ' ')"
  elif [ "$nrep" -gt 0 ]; then
    notok "$name" "$nrep ThreadSanitizer report(s):"; grep -A24 -m2 "WARNING: ThreadSanitizer" "$log" | sed 's/^/    /'
  elif [ $TSAN = 1 ]; then ok "$name: no ThreadSanitizer report"
  else ok "$name (not a TSan build: functional check only)"; fi
}

if [ $TSAN = 1 ]; then
  cat > "$T/racy.c" <<'EOF'
#include <pthread.h>
static int x;
static void *bump(void *a) { x++; return a; }
int main(void) { pthread_t t; pthread_create(&t, 0, bump, 0); x++; pthread_join(t, 0); return x == 2 ? 0 : 1; }
EOF
  if gcc -fsanitize=thread -g -O1 -o "$T/racy" "$T/racy.c" -lpthread 2>"$T/racy.err"; then
    "$T/racy" > "$T/racy.log" 2>&1
    grep -q "WARNING: ThreadSanitizer: data race" "$T/racy.log" && ok "canary: TSan reports a planted race" \
      || notok "canary" "no report for a planted race: $(head -3 "$T/racy.log")"
  else notok "canary" "cannot build with -fsanitize=thread: $(head -2 "$T/racy.err")"; fi
else
  echo "skip - ThreadSanitizer checks: $PDL is not a -fsanitize=thread build (run: make tsan)"
fi

run "ssgd, 1 process x 2 grad threads" "$PDL" train "${S[@]}" --steps 20 --algo ssgd --batch 8 --grad-threads 2
run "ssgd, 2 MPI ranks x 2 grad threads" MPIRUN -np 2 "$PDL" train "${S[@]}" --steps 20 --algo ssgd --batch 8 --grad-threads 2
run "ppasgd, 1 process x 2 grad threads, 300 updates" "$PDL" train "${S[@]}" --steps 300 --algo ppasgd --batch 8 --grad-threads 2
run "ppasgd, 2 MPI ranks x 2 grad threads, 100 updates" MPIRUN -np 2 "$PDL" train "${S[@]}" --steps 100 --algo ppasgd --batch 8 --grad-threads 2
# gossip: each node's serving role is a second thread that calls MPI (MPI_THREAD_MULTIPLE) while
# the main role trains and pulls; the model is shared under the node's mutex
run "gossip (pull), 3 MPI ranks: serving thread + main role" MPIRUN -np 3 "$PDL" train "${S[@]}" --steps 60 --algo gossip \
  --batch 8 --tau 2
run "gossip-push, 3 MPI ranks: serving thread + main role" MPIRUN -np 3 "$PDL" train "${S[@]}" --steps 60 --algo gossip-push \
  --batch 8 --tau 2
# with --checkpoint: an allreduce per evaluation beside the serving threads' traffic, and each
# node's snapshot taken under its model and table mutexes while a serving role may answer a peer
run "gossip-push --checkpoint, 3 MPI ranks: agreed evaluations, saves beside the serving thread" MPIRUN -np 3 "$PDL" train \
  "${S[@]}" --steps 60 --algo gossip-push --batch 8 --tau 2 --eval-every 10 --checkpoint "$T/gp.ck"
if [ -n "${PDL_SIMLIB:-}" ] || [ -f "$(dirname "$PDL")/../build/libpdlsim.so" ]; then
  PDL_SIM_CONTEXTS=thread run "sim ssgd, cluster:nodes=2,gpus=2, overlap pool" "$PDL" train "${S[@]}" --steps 10 \
    --algo ssgd --batch 8 --runtime sim --platform cluster:nodes=2,gpus=2
else
  echo "skip - sim ssgd under threads: SimGrid support was not built (libpdlsim.so; make deps, make)"
fi
finish
