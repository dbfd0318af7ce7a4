#!/bin/sh
# bench/net/ns-agent.sh — Open MPI's plm_rsh_agent for bench/net/hetnet.sh: where mpirun would
# ssh to HOST, it runs the daemon (orted) inside the network namespace of that name. Each
# namespace is then a "host" of its own to Open MPI, with its own orted, which reaches mpirun over
# the bridge (`mpirun -np 1 ip netns exec NS ...` does not work: the rank's PMIx client cannot
# reach the server in the root namespace, "OPAL ERROR: Unreachable").
ns=$1; shift
exec ip netns exec "$ns" sh -c "$*"
