#!/usr/bin/env bash
# bench/net/hetnet.sh — a real heterogeneous network on this machine (issue 48, as root): one
# network namespace per MPI rank, each joined to one bridge by a veth pair, each link rate-limited
# with tc htb in both directions, built from a description in the sim's `links:` vocabulary
# (src/sim/platform.c; bench/net/links.py reads it), and the ranks run in it by Open MPI over TCP.
#
#   hetnet.sh probe                          exit 0 when this machine can build the network; exit 3
#                                            (the reason on stdout) when it cannot: not root, no ip/tc/
#                                            mpirun, the kernel refuses a namespace, veth, bridge or htb,
#                                            or TCP does not cross the bridge between two namespaces
#   hetnet.sh run SPEC [--limit S] -- CMD..  builds the network, runs `mpirun -np K CMD..` in it (rank i
#                                            in namespace i, on link i of SPEC; first a TCP connection
#                                            from every node to node 0 and back), tears it down, exits
#                                            with mpirun's status (124: past the limit, default 600 s;
#                                            shortly before it, stderr gets each process's state and
#                                            threads, and each rank's stacks where gdb is installed)
#   hetnet.sh up SPEC                        builds it and leaves it; prints its prefix and the mpirun
#                                            options to use (remove it with `down PREFIX`)
#   hetnet.sh down [PREFIX...|--all]         removes a run's namespaces, links, processes, /etc/hosts
#                                            lines and state: the PREFIXes named, or (no argument) every
#                                            leftover whose owner (the hetnet.sh that built it) is gone,
#                                            or --all
#   hetnet.sh list                           the prefixes present, their objects and whether the owner lives
#
# SPEC: links:k=K,bw=LIST[,lat=L], e.g. links:k=8,bw=26.3Mbps*6+2.63Mbps*2 (node i gets the i-th
# rate; `lat` cannot be applied, see links.py). Names: every object of a run carries the prefix
# pdn<PID> (PID: the hetnet.sh that built it), so a killed run never blocks the next one and `down`
# finds its leftovers by name: namespaces pdn<PID>n<i>, the bridge pdn<PID>br, veth pairs
# pdn<PID>b<i> (bridge side) / pdn<PID>v<i> (namespace side), /etc/hosts lines ending in
# "# pdlnet pdn<PID>", state in $PDLNET_STATE/pdn<PID>/ (default /tmp/pdlnet; edits of /etc/hosts
# and the choice of a subnet hold the lock /tmp/pdlnet.lock).
# Addresses: one private /24, 10.213.X.0/24 (X from the PID, skipping any in use here); node i is
# .i+1, the bridge (where mpirun listens) .254. No default route in the namespaces: they reach
# nothing but each other and mpirun.
# Rates, both directions: an htb on the namespace side of node i's veth shapes what node i sends;
# an htb on the bridge side of the same veth shapes what node i receives (the bridge's egress into
# the veth is the namespace's ingress, so no ingress policing or IFB is needed). A transfer from j
# to i thus runs at min(rate_j, rate_i) and concurrent transfers share each node's link, as in
# the sim's links: platform (a full-duplex link per node to one switch). burst = max(2 ms of the
# rate, 2 frames); queue: 400 ms of the rate; small TCP packets first (see shape below). htb counts
# whole Ethernet frames: a payload moves at
# rate x 1448/1514 (TCP/IP and Ethernet headers, 1500-byte MTU).
# MPI: Open MPI with a hostfile of the namespace names (1 slot each), plm rsh with ns-agent.sh as
# the "ssh" (an orted per namespace, no tree spawn; a daemon that has not reported within 60 s fails
# the launch: once, under load, one of 8 daemons never reported and mpirun waited), pml ob1 with btl self,tcp only: vader (shared
# memory) is left out on purpose, because namespaces share /dev/shm and vader would carry the
# ranks' messages around the shaped links; btl_tcp_if_include and oob_tcp_if_include name the
# /24. The namespace names resolve through /etc/hosts lines added for the run. mpi_yield_when_idle:
# each namespace holds one rank, so Open MPI sees no oversubscription and would busy-poll: a gossip
# rank's main role waiting for a pull and its serving roles waiting for requests kept both cores
# busy (run 2 of the bench: 81 CPU-s in 59 s, compute per step 64 ms instead of ~10-30).
# Bounds: at most 32 nodes, links of 8 kbit/s to 1 Gbit/s, and --limit seconds per run (timeout
# sends SIGTERM, then SIGKILL 10 s later), so a run moves at most sum(rates) x limit bytes.
# Teardown (a trap on EXIT, INT and TERM, so also on a failure or a signal): the run's process
# group (setsid: timeout, mpirun and the agents) gets SIGTERM then SIGKILL, every process left in
# its namespaces SIGKILL (`ip netns pids`: only processes started in them), then the veths,
# namespaces, bridge, hosts lines and state go, each by name. A run killed with SIGKILL cannot
# trap: `down` (or `down pdn<PID>`) does the same from the names and the recorded process group.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${PDLNET_STATE:-/tmp/pdlnet}
TAG=pdn
HOSTS=${PDLNET_HOSTS:-/etc/hosts}

usage() { sed -n '2,/^set -u/p' "$0" | sed -n '/^#   hetnet.sh/,/^# SPEC/p' | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
say() { echo "hetnet: $*" >&2; }

# ---- the objects of a prefix, found by name -----------------------------------------------------------
ns_of() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1n[0-9]+\$"; }
links_of() { ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^$1(b[0-9]+|br)\$" | sort -r; }
hosts_of() { grep -c " # pdlnet $1\$" "$HOSTS" 2>/dev/null; }
prefixes() {   # every prefix present, from any of its objects
  { ip netns list 2>/dev/null | awk '{print $1}'; ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'
    grep -o " # pdlnet $TAG[0-9]*\$" "$HOSTS" 2>/dev/null | awk '{print $3}'; ls "$STATE" 2>/dev/null; } \
    | grep -oE "^$TAG[0-9]+(n[0-9]+|b[0-9]+|br|v[0-9]+)?\$" | grep -oE "^$TAG[0-9]+" | sort -u
}
owner_alive() {   # the hetnet.sh whose PID is in the prefix still runs
  local pid=${1#"$TAG"}
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "hetnet\.sh"
}
pg_members() { # pids whose process group is $1 (field 5 of /proc/PID/stat; the command may hold ") ")
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$1" '{pid = $1; sub(/^.*\) /, ""); if ($3 == g) print pid}'
}
starttime() { awk '{sub(/^.*\) /, ""); print $20}' "/proc/$1/stat" 2>/dev/null; }   # field 22: start, in ticks
ns_pids() { local ns; for ns in $(ns_of "$1"); do ip netns pids "$ns" 2>/dev/null; done; }
live() { local p n=0; for p in "$@"; do [ -e "/proc/$p" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$p/stat" 2>/dev/null && n=$((n + 1)); done; echo $n; }

lock() { exec 9>>"${PDLNET_LOCK:-/tmp/pdlnet.lock}"; flock 9; }   # one lock for every run: /etc/hosts, subnets
unlock() { flock -u 9; exec 9>&-; }
hosts_remove() {   # the prefix's /etc/hosts lines, rewritten in place (the file may be a bind mount)
  [ "$(hosts_of "$1")" -gt 0 ] 2>/dev/null || return 0
  lock
  local tmp; tmp=$(mktemp)
  grep -v " # pdlnet $1\$" "$HOSTS" > "$tmp"; cat "$tmp" > "$HOSTS"; rm -f "$tmp"
  unlock
}

# teardown PREFIX: everything of one run, by name; safe to call twice and on a half-built network
teardown() {
  local P=$1 pg='' st='' pids l ns i
  [ -r "$STATE/$P/pgid" ] && read -r pg st < "$STATE/$P/pgid"
  # the run's process group (recorded with its leader's start time): a group id cannot be reused
  # while the group has members, but once it had none a new leader may carry the same id
  if [ -n "$pg" ] && [ -e "/proc/$pg" ] && [ "$(starttime "$pg")" != "$st" ]; then
    say "$P: process group $pg now belongs to another process (pid reused): left alone"; pg=
  fi
  if [ -n "$pg" ]; then
    pids=$(pg_members "$pg")
    if [ -n "$pids" ]; then
      kill -TERM $pids 2>/dev/null
      for i in $(seq 20); do [ "$(live $pids)" = 0 ] && break; sleep 0.1; done
      pids=$(pg_members "$pg"); [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    fi
  fi
  pids=$(ns_pids "$P")
  if [ -n "$pids" ]; then
    kill -KILL $pids 2>/dev/null
    for i in $(seq 50); do [ -z "$(ns_pids "$P")" ] && break; sleep 0.1; done
  fi
  for l in $(links_of "$P"); do ip link del "$l" 2>/dev/null; done   # a veth goes with its peer
  for ns in $(ns_of "$P"); do ip netns del "$ns" 2>/dev/null; done
  hosts_remove "$P"
  rm -rf "${STATE:?}/$P"
  local left; left=$( { ns_of "$P"; links_of "$P"; } | tr '\n' ' ')
  [ -z "$left" ] || { say "$P: could not remove: $left"; return 1; }
  return 0
}

# ---- building -----------------------------------------------------------------------------------------
x() {   # x CMD...: run it; on failure say which command failed and why
  local err rc
  err=$("$@" 2>&1); rc=$?
  [ $rc = 0 ] || { say "${P:-?}: '$*' failed: ${err:-status $rc}"; return 1; }
}
pick_subnet() {   # the third octet of a 10.213.X.0/24 not in use here (called under the lock)
  local used x try
  used=$(ip -4 -o addr show 2>/dev/null; ip -4 route show 2>/dev/null)
  x=$(( ${P#"$TAG"} % 250 + 1 ))
  for try in $(seq 250); do
    grep -q "10\.213\.$x\." <<<"$used" || { echo "$x"; return 0; }
    x=$(( x % 250 + 1 ))
  done
  return 1
}
# shape NS DEV RATE BURST LIMIT: DEV's egress (in namespace NS, "" for the root one) limited to RATE
# bit/s by htb; small TCP packets (under 256 bytes: pure ACKs, and small messages such as gossip's
# requests when they travel alone) go first, everything else queues in a bfifo of LIMIT bytes.
# Without that class, a node whose uplink is busy serving replies held the ACKs of its own download
# and its requests behind up to 400 ms of queue (measured: a 407 kB pull over 8 Mbit/s, 0.43 s by the
# rate, took 0.74-0.96 s on average with tbf alone): the links are meant to be independent in each
# direction, as in the sim's full-duplex links, and small transfers not to wait behind big ones, as
# under the sim's max-min sharing. (tbf has no classes; prio and sfq are not in this kernel.)
shape() {
  local n=() d=$2 r=$3 b=$4 l=$5
  [ -n "$1" ] && n=(ip netns exec "$1")
  x "${n[@]}" tc qdisc add dev "$d" root handle 1: htb default 20 \
    && x "${n[@]}" tc class add dev "$d" parent 1: classid 1:1 htb rate "${r}bit" ceil "${r}bit" burst "$b" cburst "$b" \
    && x "${n[@]}" tc class add dev "$d" parent 1:1 classid 1:10 htb rate "$((r / 10))bit" ceil "${r}bit" prio 0 burst "$b" cburst "$b" \
    && x "${n[@]}" tc class add dev "$d" parent 1:1 classid 1:20 htb rate "$((r - r / 10))bit" ceil "${r}bit" prio 1 burst "$b" cburst "$b" \
    && x "${n[@]}" tc qdisc add dev "$d" parent 1:20 handle 20: bfifo limit "$l" \
    && x "${n[@]}" tc filter add dev "$d" parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff match u16 0x0000 0xff00 at 2 flowid 1:10
}
# build PREFIX SPEC RATE...: the bridge, then per node a namespace, a veth pair, addresses, the two
# shapers and a hosts line; the hostfile and the mpirun options into the state folder
build() {
  P=$1; local spec=$2; shift 2
  local K=$# i=0 r burst lim ns net cidr d=$STATE/$P
  if [ -d "$d" ] || [ -n "$( { ns_of "$P"; links_of "$P"; } )" ] || [ "$(hosts_of "$P")" -gt 0 ] 2>/dev/null; then
    say "$P: leftovers of an earlier run with this pid: removing them first"; teardown "$P" || return 1
  fi
  mkdir -p "$d" || return 1
  echo "$spec" > "$d/spec"
  lock
  net=$(pick_subnet) || { unlock; say "$P: no free 10.213.X.0/24 here"; return 1; }
  net=10.213.$net; cidr=$net.0/24
  x ip link add "${P}br" type bridge || { unlock; return 1; }
  unlock
  x ip addr add "$net.254/24" dev "${P}br" && x ip link set "${P}br" up || return 1
  sysctl -qw "net.ipv6.conf.${P}br.disable_ipv6=1" 2>/dev/null
  : > "$d/hostfile"
  for r in "$@"; do
    ns=${P}n$i
    burst=$(( r / 8 / 500 )); [ "$burst" -lt 3028 ] && burst=3028   # 2 ms of the rate, at least 2 frames
    lim=$(( r / 8 * 2 / 5 + burst ))                                  # 400 ms of the rate
    x ip netns add "$ns" && x ip link add "${P}b$i" type veth peer name "${P}v$i" netns "$ns" \
      && x ip link set "${P}b$i" master "${P}br" && x ip link set "${P}b$i" up \
      && x ip -n "$ns" link set lo up && x ip -n "$ns" addr add "$net.$((i + 1))/24" dev "${P}v$i" \
      && x ip -n "$ns" link set "${P}v$i" up \
      && shape "" "${P}b$i" "$r" "$burst" "$lim" && shape "$ns" "${P}v$i" "$r" "$burst" "$lim" || return 1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
    echo "$ns slots=1" >> "$d/hostfile"
    echo "$net.$((i + 1)) $ns # pdlnet $P" >> "$d/hosts"
    echo "$i $ns $net.$((i + 1)) $r" >> "$d/nodes"
    i=$((i + 1))
  done
  lock; cat "$d/hosts" >> "$HOSTS"; unlock
  printf '%s\n' --allow-run-as-root --hostfile "$d/hostfile" -np "$K" --map-by slot --bind-to none \
    --mca plm rsh --mca plm_rsh_agent "$HERE/ns-agent.sh" --mca plm_rsh_no_tree_spawn 1 --mca orte_startup_timeout 60 \
    --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include "$cidr" --mca oob_tcp_if_include "$cidr" \
    --mca mpi_yield_when_idle 1 -x "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}" > "$d/mpirun.args"
  say "$P: $K namespaces on $cidr, links (bit/s): $*"
}

# reach NS_FROM NS_TO IP: a TCP connection from namespace NS_FROM to IP (an address of NS_TO) is
# accepted within 5 s. Bridged traffic between namespaces can be dropped where the bridge netfilter
# hands it to a firewall (net.bridge.bridge-nf-call-iptables = 1 and a FORWARD rule or policy that
# drops it); MPI's ranks would then start (they reach mpirun, a local address) and wait forever on
# their first message to each other. Prints the reason and returns 1 when the connection fails.
reach() {
  local from=$1 to=$2 ip=$3 port=45999 lp out
  ip netns exec "$to" python3 -c "
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('$ip', $port)); s.listen(1)
s.settimeout(8); print('listening', flush=True)
try: s.accept()[0].close()
except OSError: pass" > "${TMPDIR:-/tmp}/pdlnet-reach.$$" 2>&1 &
  lp=$!
  for _ in $(seq 50); do grep -q listening "${TMPDIR:-/tmp}/pdlnet-reach.$$" 2>/dev/null && break; sleep 0.1; done
  out=$(ip netns exec "$from" python3 -c "
import socket
s = socket.create_connection(('$ip', $port), timeout=5); s.close()" 2>&1)
  local rc=$?
  kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null; rm -f "${TMPDIR:-/tmp}/pdlnet-reach.$$"
  [ $rc = 0 ] && return 0
  local nf; nf=$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)
  echo "namespace $from cannot reach $ip in $to over the bridge (TCP: $(tail -n 1 <<<"$out"))${nf:+; net.bridge.bridge-nf-call-iptables = $nf}: a firewall may drop bridged traffic here"
  return 1
}

need() {   # root and the tools, else exit 3 with the reason on stdout
  [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, veth pairs and tc)"; exit 3; }
  local c; for c in ip tc flock python3 "$@"; do command -v "$c" >/dev/null 2>&1 || { echo "$c not found (make deps installs iproute2, openmpi-bin)"; exit 3; }; done
}

cmd_probe() {
  need mpirun setsid timeout
  P=$TAG$$
  trap 'teardown "$P" >/dev/null 2>&1' EXIT
  local out
  if ! out=$(x ip netns add "${P}n0" 2>&1 && x ip link add "${P}br" type bridge 2>&1 \
             && x ip link add "${P}b0" type veth peer name "${P}v0" netns "${P}n0" 2>&1 \
             && x ip link set "${P}b0" master "${P}br" 2>&1 \
             && shape "" "${P}b0" 1000000 3028 60000 2>&1 && shape "${P}n0" "${P}v0" 1000000 3028 60000 2>&1); then
    echo "this kernel or container cannot build the network: ${out#hetnet: }"; exit 3
  fi
  # a second namespace on the bridge, and a TCP connection between the two (bridged traffic)
  local net=10.213.251
  if ! out=$(x ip netns add "${P}n1" 2>&1 && x ip link add "${P}b1" type veth peer name "${P}v1" netns "${P}n1" 2>&1 \
             && x ip link set "${P}b1" master "${P}br" 2>&1 && x ip link set "${P}b0" up 2>&1 && x ip link set "${P}b1" up 2>&1 \
             && x ip link set "${P}br" up 2>&1 && x ip -n "${P}n0" addr add $net.1/24 dev "${P}v0" 2>&1 \
             && x ip -n "${P}n1" addr add $net.2/24 dev "${P}v1" 2>&1 && x ip -n "${P}n0" link set "${P}v0" up 2>&1 \
             && x ip -n "${P}n1" link set "${P}v1" up 2>&1 && x ip -n "${P}n1" link set lo up 2>&1); then
    echo "this kernel or container cannot build the network: ${out#hetnet: }"; exit 3
  fi
  out=$(reach "${P}n0" "${P}n1" $net.2) || { echo "$out"; exit 3; }
  echo "ok: network namespaces, veth pairs, a bridge and htb with a u32 filter work here, and TCP crosses the bridge"
}

cmd_up() {
  [ $# = 1 ] || usage
  need
  local rates; rates=$(python3 "$HERE/links.py" "$1") || exit 2
  P=$TAG$$
  build "$P" "$1" $rates || { teardown "$P"; exit 1; }
  echo "$P"
  echo "mpirun $(tr '\n' ' ' < "$STATE/$P/mpirun.args")CMD ..."
  echo "remove it with: $0 down $P"
}

# stall_report PREFIX LIMIT: each process in the run's namespaces (orted, the ranks) with its state,
# CPU time and threads (state and kernel wait channel each), and, where gdb is installed, each
# rank's stacks (a few frames a thread): on stderr, when a run nears its limit
stall_report() {
  local P=$1 p t
  say "$P: near the limit of $2 s; the processes in its namespaces:"
  for p in $(ns_pids "$P"); do
    [ -r "/proc/$p/stat" ] || continue
    echo "  pid $p: $(ps -o stat=,time=,args= -p "$p" 2>/dev/null | cut -c1-160)"
    for t in /proc/"$p"/task/*; do
      echo "    thread ${t##*/} $(cut -d' ' -f3 "$t/stat" 2>/dev/null) $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
    done | head -20
    if command -v gdb >/dev/null 2>&1 && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q " train "; then
      timeout 20 gdb -p "$p" -batch -nx -ex "thread apply all bt 14" 2>/dev/null | grep -E '^(Thread|#)' \
        | grep -v -E 'nptl|futex|sysdeps|start_thread|clone3' | sed -E 's/^#[0-9]+ +(0x[0-9a-f]+ in )?//; s/ \(.*\) (at|from) / at /' \
        | cut -c1-120 | head -60 | sed 's/^/      /'
    fi
  done >&2
}

TORN=
cleanup() { [ -n "$TORN" ] && return; TORN=1; teardown "$P"; }
cmd_run() {
  [ $# -ge 1 ] || usage
  local spec=$1 limit=600; shift
  while [ $# -gt 0 ]; do
    case $1 in
      --limit) [[ ${2:-} =~ ^[0-9]+$ ]] || { say "--limit wants seconds"; exit 2; }; limit=$2; shift 2 ;;
      --) shift; break ;;
      *) usage ;;
    esac
  done
  [ $# -gt 0 ] || usage
  need mpirun setsid timeout
  local rates; rates=$(python3 "$HERE/links.py" "$spec") || exit 2
  P=$TAG$$
  trap cleanup EXIT
  trap 'say "$P: interrupted: tearing down"; cleanup; exit 130' INT
  trap 'say "$P: terminated: tearing down"; cleanup; exit 143' TERM
  build "$P" "$spec" $rates || exit 1
  # every node reaches node 0, and node 0 the last node, over the bridge: a network that drops
  # bridged traffic fails here, naming the reason, rather than leaving the ranks waiting
  local i K n0ip why; K=$(wc -l < "$STATE/$P/nodes"); n0ip=$(awk '$1 == 0 {print $3}' "$STATE/$P/nodes")
  for i in $(seq 1 $((K - 1))); do
    why=$(reach "${P}n$i" "${P}n0" "$n0ip") || { say "$P: $why"; exit 1; }
  done
  [ "$K" -gt 1 ] && { why=$(reach "${P}n0" "${P}n$((K - 1))" "$(awk -v k=$((K - 1)) '$1 == k {print $3}' "$STATE/$P/nodes")") || { say "$P: $why"; exit 1; }; }
  local args rc
  mapfile -t args < "$STATE/$P/mpirun.args"
  # its own process group and session (setsid), so that teardown reaches timeout, mpirun and the
  # agents by their group id, and a terminal's ^C reaches this script (which tears down) first
  setsid timeout -k 10 "$limit" mpirun "${args[@]}" "$@" < /dev/null &
  local pg=$!
  echo "$pg $(starttime "$pg")" > "$STATE/$P/pgid"
  # shortly before the limit (an eighth of it, 2 to 15 s), what every process of the run is doing (a
  # stall's diagnosis: launch, MPI_Init or the training, and where), on stderr before timeout stops them
  local lead=$((limit / 8)) diagp; [ $lead -gt 15 ] && lead=15; [ $lead -lt 2 ] && lead=2; [ "$limit" -le 4 ] && lead=0
  ( trap 'kill $s 2>/dev/null; exit 0' TERM; sleep $((limit - lead)) & s=$!; wait $s; stall_report "$P" "$limit" ) &
  diagp=$!
  wait "$pg"; rc=$?
  kill "$diagp" 2>/dev/null; wait "$diagp" 2>/dev/null
  [ $rc = 124 ] && say "$P: the run passed its limit of $limit s and was stopped"
  exit $rc
}

cmd_down() {
  local all= P list=() rc=0
  if [ "${1:-}" = --all ]; then all=1; shift; fi
  [ "$(id -u)" = 0 ] || { say "down needs root"; exit 2; }
  if [ $# -gt 0 ]; then
    for P in "$@"; do [[ $P =~ ^$TAG[0-9]+$ ]] || { say "'$P' is not a prefix ($TAG<PID>)"; exit 2; }; list+=("$P"); done
  else
    for P in $(prefixes); do
      if [ -z "$all" ] && owner_alive "$P"; then say "$P: its run is alive (pid ${P#"$TAG"}), left alone"; continue; fi
      list+=("$P")
    done
  fi
  for P in "${list[@]}"; do teardown "$P" && say "$P: removed" || rc=1; done
  return $rc
}

cmd_list() {
  local P
  for P in $(prefixes); do
    echo "$P namespaces=$(ns_of "$P" | wc -l) links=$(links_of "$P" | wc -l) hosts_lines=$(hosts_of "$P") processes=$(ns_pids "$P" | wc -w) owner=$(owner_alive "$P" && echo alive || echo gone)"
  done
}

case ${1:-} in
  probe) shift; cmd_probe "$@" ;;
  run) shift; cmd_run "$@" ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  list) shift; cmd_list "$@" ;;
  *) usage ;;
esac
