#!/usr/bin/env bash
# tests/t_algo.sh — the algorithm layer's contract (src/algo/algo.h): algos.def is the only list
# of algorithms, and `pdl train --help` and the unknown---algo error are generated from it; the
# layers do not reach upwards (the runtime, the core and the kernels never include the algorithm
# layer, algorithm files reach MPI only through the seam); one configuration: a run without
# --threads on the sim runtime gives each role 1 OpenMP thread (the old EASGD trap gave it all
# cores), and says so in its "threads" figure.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
n_def=$(grep -c '^ALGO(' src/algo/algos.def)
help=$("$PDL" train --help 2>&1)
# the algorithm list of --help: after its header, "  NAME  help" lines (each followed by "[roles; flags]")
mapfile -t names < <(sed -n '/^algorithms (--algo/,$p' <<<"$help" | grep -E '^  [a-z][a-z0-9-]+ +[^ []' | awk '{print $1}')
[ "${#names[@]}" -eq "$n_def" ] && ok "pdl train --help lists one algorithm per algos.def line ($n_def)" \
  || notok "help vs algos.def" "${#names[@]} listed, $n_def lines: ${names[*]}"
dup=$(printf '%s\n' "${names[@]}" | sort | uniq -d)
[ -z "$dup" ] && ok "algorithm names are unique" || notok "unique names" "$dup"
err=$("$PDL" train --algo nosuch --data synthetic:n=64 2>&1); rc=$?
miss=(); for a in "${names[@]}"; do grep -qw -- "$a" <<<"$err" || miss+=("$a"); done
[ $rc -eq 2 ] && [ ${#miss[@]} -eq 0 ] && ok "unknown --algo exits 2 naming every algorithm" || notok "unknown --algo" "exit $rc, missing ${miss[*]}: $err"

up=$(grep -ln '#include "algo/' src/rt/* src/core/* src/coll/* src/optim/* base/util/* base/contract/* kernels/cpu/* 2>/dev/null)
[ -z "$up" ] && ok "runtime, core, coll, util and kernels do not include the algorithm layer" || notok "layering" "$up"
mpi=$(grep -ln 'mpi_util.h\|<mpi.h>\|pdl_mpi_' src/algo/*)
[ -z "$mpi" ] && ok "algorithm files reach MPI only through the seam (rt.h)" || notok "algorithms call MPI" "$mpi"
[ ! -d src/dist ] && ok "no src/dist (a name tooling treats as build output)" || notok "src/dist" "exists"

if [ -n "${SIMLIB:-}" ] || [ -f "${BUILD:-build}/libpdlsim.so" ]; then
  out=$("$PDL" train --algo easgd --runtime sim --platform links:k=3,bw=1Gbps,lat=1ms --data synthetic:n=512,seed=3 \
        --net tiny --batch 16 --lr 0.01 --steps 4 --test-subset 100 --quiet 2>&1 | tail -n 1)
  t=$(jget threads <<<"$out" 2>/dev/null)
  [ "$t" = 1 ] && ok "easgd on sim without --threads: 1 OpenMP thread per role" || notok "easgd threads" "threads=$t: $out"
else echo "skip - sim thread budget: SimGrid support not built"; fi
finish
