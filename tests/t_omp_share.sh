#!/usr/bin/env bash
# t_omp_share.sh — the thread budget holds in every role's thread, and roles are started once per
# run (issue 50 item 6). pdl runs under tests/omp_share_shim.c (LD_PRELOAD), which sees every
# OpenMP parallel region and every pthread_create; OMP_NUM_THREADS is unset, as a user's shell
# has it, so that nothing but pdl itself keeps a thread to its share:
#   share: no region anywhere in any rank has a team wider than the share, or is opened by a
#          thread whose OpenMP count (what a region without num_threads would take) is above it.
#          The share is --threads 1, or without --threads cores / (ranks x roles): ssgd's main
#          role runs NAG's update and the evaluations, its grad roles (pthreads) the gradients;
#          ppasgd's update role beside its grad roles; the EASGD server and workers; gossip's
#          serving roles; seq-sgd and kfac-dist on the main role.
#   once:  a run of 16 updates creates as many threads as one of 4 (the runtime's role
#          threads are kept for the run: ee69217 started ssgd's grad roles, and every
#          replica_grad_on_device gradient, as a new pthread).
# On ee69217 both fail: ssgd's update role opened a 2-thread team every update (its OpenMP count
# was the default, all cores) and every grad role started at the default count.
# Not under a sanitizer build (the shim would have to come after the sanitizer's runtime).
# pdl-test: cpu=12 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
if ldd "$PDL" 2>/dev/null | grep -q -E 'lib[at]san'; then
  echo "skip - OpenMP share: $PDL is a sanitizer build (LD_PRELOAD of the shim is not possible there)"; finish
fi
SO=$T/omp_share_shim.so
if ! gcc -shared -fPIC -fopenmp -O1 -Wall -Wextra -Werror -o "$SO" tests/omp_share_shim.c -ldl 2>"$T/cc.err"; then
  notok "shim" "cannot build tests/omp_share_shim.c: $(head -3 "$T/cc.err")"; finish
fi
# the shim sees a region only through GOMP_parallel: any other entry pdl imports would go unseen
others=$(nm -D "$PDL" 2>/dev/null | awk '$1 == "U" {print $2}' | grep '^GOMP_parallel' | grep -v '^GOMP_parallel@')
if [ -z "$(nm -D "$PDL" 2>/dev/null | grep ' U GOMP_parallel@')" ]; then
  notok "shim coverage" "$PDL imports no GOMP_parallel (nm -D): is it an OpenMP build?"
elif [ -n "$others" ]; then notok "shim coverage" "$PDL opens regions the shim does not see: $others"
else ok "shim coverage: GOMP_parallel is the only parallel-region entry $PDL imports"; fi
# the shim refuses a share it cannot read (so a typo cannot turn the checks off)
LD_PRELOAD=$SO PDL_TEST_OMP_SHARE=1x "$PDL" nets >/dev/null 2>"$T/bad.err"; rc=$?
[ $rc = 2 ] && grep -q "PDL_TEST_OMP_SHARE must be a positive integer" "$T/bad.err" && ok "shim refuses PDL_TEST_OMP_SHARE=1x" \
  || notok "shim strict env" "rc=$rc $(head -2 "$T/bad.err")"

CORES=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)   # what loop_threads counts (sysconf), not nproc
A=(--data "synthetic:n=1024,seed=3" --net "leaky C8 P F64 S10" --lr 0.01 --momentum 0.9 --batch 16 --quiet)
# 100k parameters: above 2^16, so the update's elementwise pass (cpu_sgd_step) opens a team when
# its thread count allows one
MPI_EXTRA=(--oversubscribe --bind-to none); [ "$(id -u)" = 0 ] && MPI_EXTRA+=(--allow-run-as-root)
# under NP SHARE STEPS LOG ARGS...: pdl train under the shim on NP ranks (0: no mpirun)
under() {
  local np=$1 share=$2 steps=$3 log=$4; shift 4
  if [ "$np" = 0 ]; then
    env -u OMP_NUM_THREADS LD_PRELOAD="$SO" PDL_TEST_OMP_SHARE=$share "$PDL" train "${A[@]}" --steps "$steps" "$@" >"$log" 2>&1
  else
    env -u OMP_NUM_THREADS mpirun "${MPI_EXTRA[@]}" -np "$np" -x LD_PRELOAD="$SO" -x PDL_TEST_OMP_SHARE="$share" \
      "$PDL" train "${A[@]}" --steps "$steps" "$@" >"$log" 2>&1
  fi
}
# sums LOG: "regions wide over_icv created procs" over the shim's exit lines
sums() { awk '/^omp-share: pid/ {r += $5; w += $7; o += $9; c += $11; n++} END {print r + 0, w + 0, o + 0, c + 0, n + 0}' "$1"; }
# check NAME NP SHARE ARGS...: 4 and 16 updates, both within the share, the same threads created
check() {
  local name=$1 np=$2 share=$3; shift 3
  local procs=$((np > 0 ? np : 1)) a b
  under "$np" "$share" 4 "$T/a.log" "$@"; local rca=$?
  under "$np" "$share" 16 "$T/b.log" "$@"; local rcb=$?
  read -r ra wa oa ca na <<<"$(sums "$T/a.log")"; read -r rb wb ob cb nb <<<"$(sums "$T/b.log")"
  if [ $rca != 0 ] || [ $rcb != 0 ] || [ "$na" != $procs ] || [ "$nb" != $procs ] || ! grep -q '"event":"summary"' "$T/b.log"; then
    notok "$name" "runs failed (exit $rca/$rcb, $na/$nb shim lines of $procs): $(grep -v '^omp-share' "$T/b.log" | tail -3 | tr '\n' ' ')"
    return
  fi
  if [ "$rb" -lt 16 ]; then notok "$name: share" "the shim saw only $rb parallel regions in 16 updates"
  elif [ "$wb" = 0 ] && [ "$ob" = 0 ] && [ "$wa" = 0 ] && [ "$oa" = 0 ]; then
    ok "$name: every region within the share $share ($rb regions in 16 updates)"
  else
    notok "$name: share $share" "$((wa + wb)) regions with a wider team, $((oa + ob)) opened at a larger OpenMP count"
    grep -m2 -A8 VIOLATION "$T/b.log" | sed 's/^/    /'
  fi
  [ "$ca" = "$cb" ] && ok "$name: no thread started per update ($cb created in 16 updates, $ca in 4)" \
    || notok "$name: roles started once per run" "$ca threads created in 4 updates, $cb in 16"
}

half=$((CORES / 2)); [ $half -lt 1 ] && half=1
check "ssgd, 2 ranks x 2 grad roles, --threads 1" 2 1 --algo ssgd --grad-threads 2 --threads 1
check "ssgd, 2 ranks, no --threads (share cores/2 = $half)" 2 $half --algo ssgd
check "ppasgd, 2 ranks x 1 grad role + the update role, --threads 1" 2 1 --algo ppasgd --grad-threads 1 --threads 1
check "easgd, server + 2 workers, --threads 1" 3 1 --algo easgd --tau 2 --threads 1
check "gossip, 2 ranks, serving roles, --threads 1" 2 1 --algo gossip --tau 2 --threads 1
check "seq-sgd, one process, --threads 1" 0 1 --algo seq-sgd --threads 1
check "kfac-dist, 2 ranks, --threads 1" 2 1 --algo kfac-dist --threads 1
finish
