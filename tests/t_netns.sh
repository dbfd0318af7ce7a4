#!/usr/bin/env bash
# tests/t_netns.sh — the real heterogeneous network, short (issue 48; the full experiment is
# bench/gossip/realnet.sh): bench/net/hetnet.sh builds 3 namespaces, 2 on wide links (40 Mbit/s)
# and 1 on a narrow one (8 Mbit/s), runs 3 gossip ranks in them over TCP, and tears everything
# down. Checks:
#   - a run killed with SIGKILL (the driver, mid-run, ranks training) leaves its namespaces and
#     processes behind (so the checks below are not vacuous), and `hetnet.sh down PREFIX` then
#     removes every namespace, veth, bridge, /etc/hosts line, state folder and process of it;
#     while it runs, both htb shapers of a link carry its rate and no namespace has a default route;
#   - a normal run after it (the killed one does not block it) trains 8 steps, and the narrow
#     node's shortest pull (its download is the narrow link) is slower than the shortest
#     wide-to-wide pull in the ratio of the rates, 5: measured between 2.5 and 7.5 (loose:
#     fixed costs per pull -- the MPI rendezvous, copies, scheduling on a loaded 2-core machine --
#     add to both and shrink the ratio; htb lets a GSO packet (up to 64 kB) through on credit; the
#     wide pull may share its peer's uplink with the narrow node's pull), and no faster than the
#     link allows (its shortest pull at least 0.75 x bytes / rate, frames counted: htb's credit for
#     a GSO packet of up to 64 kB, 0.065 s at 8 Mbit/s, measured 0.88x);
#     A run that fails (its limit, pdl's --timeout watchdog) is reported on a skip line with
#     hetnet.sh's account of each process (state, CPU time, where its threads wait) and run once
#     more; only a second failure fails the test (see normal_run below);
#   - after it, nothing of that run is left either (names, and no process whose command line
#     holds its rank tag, hostfile or subnet).
# Skipped (with the reason) when not root, when the kernel refuses a namespace, veth, bridge or
# htb, or when TCP does not cross the bridge between two namespaces (a firewall on bridged traffic;
# hetnet.sh probe). ~2 CPU-s counted by /usr/bin/time, plus the ranks' (orted runs
# --daemonize, so they are not counted; ~0.5 CPU-s each, 6 ranks): ~5 CPU-s; 15 s wall on a quiet
# machine, 86 s at nice 19 beside the benchmark of record.
# pdl-test: cpu=5 mpi
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
NETSH=bench/net/hetnet.sh
STATE=${PDLNET_STATE:-/tmp/pdlnet}
[ "$(id -u)" = 0 ] || { echo "skip - t_netns: needs root (network namespaces, veth pairs and tc)"; exit 0; }
why=$(bash "$NETSH" probe 2>&1); rc=$?
[ $rc = 3 ] && { echo "skip - t_netns: $why"; exit 0; }
[ $rc = 0 ] && ok "hetnet.sh probe: $why" || { notok "hetnet.sh probe" "status $rc: $why"; finish; }
T=$(mktemp -d)
DRV=
cleanup() { if [ -n "$DRV" ]; then kill -KILL "$DRV" 2>/dev/null; bash "$NETSH" down "pdn$DRV" >/dev/null 2>&1; fi; rm -rf "$T"; }
trap cleanup EXIT
SPEC="links:k=3,bw=40Mbps*2+8Mbps,lat=0.05ms"
TAG=netns-$$
TR=(train --algo gossip --net "relu F128 S10" --data synthetic:n=2048,seed=3 --batch 16 --lr 0.05 --tau 1 --threads 1 --quiet
    --test-subset 100 --timeout 40)

left() {   # the named objects of prefix $1 still present, one line
  { ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1n"
    ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$1"
    grep " # pdlnet $1\$" /etc/hosts
    [ -e "$STATE/$1" ] && echo "$STATE/$1"; } 2>/dev/null | tr '\n' ' '
}
alive() { local p n=0; for p in "$@"; do [ -e "/proc/$p" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$p/stat" 2>/dev/null && n=$((n + 1)); done; echo $n; }
ranks_in() {   # how many of prefix $1's 3 namespaces hold a rank with tag $2
  local k n=0
  for k in 0 1 2; do
    for p in $(ip netns pids "$1n$k" 2>/dev/null); do { tr '\0' ' ' < "/proc/$p/cmdline"; } 2>/dev/null; echo; done | grep -q -- "--tag $2" && n=$((n + 1))
  done
  echo $n
}
# how many processes hold $1 in their command line (its last character in brackets, so that grep's
# own command line does not match; '.' in $1 matches any character, looser but harmless)
cmdlines_with() { grep -l -E -- "${1%?}[${1: -1}]" /proc/[0-9]*/cmdline 2>/dev/null | grep -v "^/proc/$$/" | wc -l; }

# ---- a run killed with SIGKILL mid-run, then `down` ------------------------------------------------------
bash "$NETSH" run "$SPEC" --limit 120 -- "$PDL" "${TR[@]}" --steps 100000 --tag "$TAG-killed" > "$T/killed.out" 2>&1 &
DRV=$!; P=pdn$DRV
for i in $(seq 300); do [ "$(ranks_in "$P" "$TAG-killed")" = 3 ] && break; sleep 0.1; done
if [ "$(ranks_in "$P" "$TAG-killed")" = 3 ]; then
  ok "3 ranks run in their namespaces ${P}n0-2"
  q2=$(tc class show dev "${P}b2" 2>&1); q2n=$(ip netns exec "${P}n2" tc class show dev "${P}v2" 2>&1); q0=$(tc class show dev "${P}b0" 2>&1)
  if grep -q "htb 1:1 root rate 8Mbit ceil 8Mbit" <<<"$q2" && grep -q "htb 1:1 root rate 8Mbit ceil 8Mbit" <<<"$q2n" \
     && grep -q "htb 1:1 root rate 40Mbit ceil 40Mbit" <<<"$q0"; then
    ok "node 2's link is shaped both ways at 8 Mbit/s (bridge side and namespace side of its veth), node 0's at 40 Mbit/s"
  else notok "htb classes" "$q2 | $q2n | $q0"; fi
  routes=$(for k in 0 1 2; do ip -n "${P}n$k" route 2>&1; done)
  grep -q default <<<"$routes" && notok "no default route" "$routes" || ok "no default route in the namespaces (they reach only the /24)"
else
  notok "killed run: ranks started" "$(tail -5 "$T/killed.out")"
fi
pids=$(for k in 0 1 2; do ip netns pids "${P}n$k" 2>/dev/null; done)
read -r pg _ < "$STATE/$P/pgid" 2>/dev/null
[ -n "${pg:-}" ] && pids="$pids $(cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$pg" '{pid = $1; sub(/^.*\) /, ""); if ($3 == g) print pid}')"
kill -KILL "$DRV"; wait "$DRV" 2>/dev/null
n_left=$(ip netns list 2>/dev/null | grep -c "^${P}n"); n_alive=$(alive $pids)
[ "$n_left" = 3 ] && [ "$n_alive" -gt 0 ] && ok "kill -9 of the driver left its network behind ($n_left namespaces, $n_alive of its $(echo $pids | wc -w) processes alive)" \
  || notok "kill -9 leaves leftovers (else the next check proves nothing)" "$n_left namespaces, $n_alive processes alive"
out=$(bash "$NETSH" down "$P" 2>&1); rc=$?
[ $rc = 0 ] && ok "hetnet.sh down $P: $out" || notok "down $P" "status $rc: $out"
for i in $(seq 30); do [ "$(alive $pids)" = 0 ] && break; sleep 0.1; done
l=$(left "$P"); a=$(alive $pids)
[ -z "$l" ] && [ "$a" = 0 ] && ok "after down: no namespace, veth, bridge, hosts line, state folder or process of $P is left" \
  || notok "down left something" "objects: ${l:-none}; processes alive: $a ($(for p in $pids; do [ -e /proc/$p ] && tr '\0' ' ' < /proc/$p/cmdline | cut -c1-60; done | tr '\n' ';'))"
DRV=

# ---- a normal run: the narrow node's pulls are slower in the ratio of the rates ------------------------
# stalled: one line of a failed run's diagnosis (hetnet.sh's report near the limit, pdl's watchdog)
stalled() {
  { grep -m 2 -E 'watchdog: no progress|ORTE|PMIx|rror|passed its limit' "$1"
    grep -E '^  pid [0-9]+:' "$1" | sed -E 's/^  pid ([0-9]+): +([A-Za-z+]+) +([0-9:]+) +([^ ]+).*/pid \1 \4 \2 cpu \3/'
    grep -E '^      (gs_|gossip_node|loop_|MPI_Init|PMPI_Init|ompi_mpi_init|rt_real_init|MPI_Finalize|ompi_mpi_finalize)' "$1" | sed 's/^ *//' | sort | uniq -c
    tail -n 2 "$1"; } 2>/dev/null | tr -s ' \n' ' ' | cut -c1-900
}
normal_run() {   # normal_run TAG: 8 steps in a new network; $T/run.out, $T/r.jsonl; sets rc, P
  rm -f "$T/r.jsonl"
  bash "$NETSH" run "$SPEC" --limit 120 -- "$PDL" "${TR[@]}" --steps 8 --tag "$1" --results "$T/r.jsonl" > "$T/run.out" 2>&1 &
  DRV=$!; wait "$DRV"; rc=$?; P=pdn$DRV; DRV=
}
normal_run "$TAG-run"
# Once (issue 48's CI failure at 7d9c248: the run reached its limit, status 124, on a loaded CI
# machine, and did not recur in 11 loaded runs here): a stalled run is reported on a skip line, with
# hetnet.sh's account of where each process was, and run once more; a second stall fails the test.
if [ $rc != 0 ] || ! grep -q '"event":"summary"' "$T/r.jsonl" 2>/dev/null; then
  echo "skip - t_netns: the normal run failed once (status $rc), ran it again; what it was doing: $(stalled "$T/run.out")"
  cp "$T/run.out" "$T/run1.out"; P1=$P
  normal_run "$TAG-run2"
  l=$(left "$P1"); [ -z "$l" ] || notok "the stalled run left objects behind" "$l"
fi
net=$(grep -o '10\.213\.[0-9]*\.0/24' "$T/run.out" | head -1)
if [ $rc = 0 ] && grep -q '"event":"summary"' "$T/r.jsonl" 2>/dev/null; then
  ok "a run after the killed one: 3 gossip ranks, 8 steps over $net"
  res=$(python3 - "$T/r.jsonl" <<'EOF'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][-1]
K, P, M, N = s["nodes"], s["pair_pulls"], s["pair_mean_s"], s["pair_min_s"]
ov = 1514 / 1448                                        # htb counts Ethernet frames
size = ((1 + 2 * K) * 4 + s["model_bytes"] + 8 * K) * ov   # request + reply (src/algo/gossip.c)
own = min(N[2 * K + k] for k in range(K) if P[2 * K + k] > 0)   # its shortest pull: uncongested
ww = [N[j * K + i] for j, i in ((0, 1), (1, 0)) if P[j * K + i] > 0]
pred_n, pred_w = size / (8e6 / 8), size / (40e6 / 8)
if not ww:
    print("nan nan %.4f %.4f nan" % (own, pred_n)); sys.exit()
print("%.3f %.4f %.4f %.4f %.4f" % (own / min(ww), min(ww), own, pred_n, pred_w))
EOF
)
  read -r ratio wmin nown pn pw <<<"$res"
  python3 -c "import sys; r = float('$ratio'); sys.exit(0 if 2.5 <= r <= 7.5 else 1)" 2>/dev/null \
    && ok "narrow node's pulls ${nown} s against the shortest wide-to-wide pull ${wmin} s: ratio $ratio (rates 40/8 = 5; predicted $pn / $pw s)" \
    || notok "ratio of the narrow to the wide pulls" "ratio $ratio (want 2.5..7.5), narrow $nown s, wide $wmin s, predicted $pn / $pw s"
  python3 -c "import sys; sys.exit(0 if 0.75 * float('$pn') <= float('$nown') <= 3 * float('$pn') else 1)" 2>/dev/null \
    && ok "the narrow link holds its rate: ${nown} s per pull against $pn s for the bytes at 8 Mbit/s" \
    || notok "narrow pull time" "$nown s against $pn s predicted (want 0.75x..3x)"
else
  notok "normal run" "status $rc: $(stalled "$T/run.out")"
fi
l=$(left "$P"); n=$(( $(cmdlines_with "$TAG-run") + $(cmdlines_with "$TAG-run2") + $(cmdlines_with "$STATE/$P/") + $( [ -n "$net" ] && cmdlines_with "${net%.0/24}." || echo 0) ))
[ -z "$l" ] && [ "$n" = 0 ] && ok "after the run: no namespace, veth, bridge, hosts line or state of $P, no process with its tag, hostfile or subnet" \
  || notok "the run left something" "objects: ${l:-none}; processes: $n"
finish
