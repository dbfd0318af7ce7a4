#!/usr/bin/env bash
# tests/t_gossip_eq1.sh — the gossip paper's eq. (1) on a platform the bench does not use (issue 32,
# item 8): K = 6 nodes on THREE link classes (200, 50 and 10 Mb/s, two nodes each), latency 2 ms
# (the bench: two classes, 5 ms) and device rates of our choosing (the bench: G = 0.125 s).
# Eq. (1)'s prediction is computed here from the platform alone -- link bandwidths, latency, the
# model's bytes, the compute time per step the device rate gives (the sim's G_s is flops / rate by
# construction), T, and uniform peer choice -- and compared with the waits the run measured
# (pair_pulls, pair_mean_s of the summary: wait per pull a node serves, above its idle time; the
# pull counts must be whole and sum to the steps / T of each requester).
#
# Eq. (1) is a condition on mean load: node i congests when its serve time C_i exceeds the mean
# over the other nodes of T G_j + C_j. Waiting already reaches the transfer time below that load
# (processor sharing: duration = C / (1 - load), so from load 0.5 on), so nodes whose ratio
# C_i / mean_j(T G_j + C_j) lies between 0.5 and 1.3 are not judged: there eq. (1) cannot decide
# (docs/REPRODUCTION-gossip.md). Every node outside that band must agree, and each run must have
# such nodes: run A (G 2 ms, T = 1) congests the 10 Mb/s nodes by eq. (1), run B (G 50 ms, T = 8)
# congests none.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
PLAT="links:k=6,bw=200Mbps*2+50Mbps*2+10Mbps*2,lat=2ms"
# the tiny net at batch 16 is 8.46e6 FLOP per step (its G_s at the sim's 1500 GFLOP/s default)
run() { # run NAME G_SECONDS T
  local rate; rate=$(python3 -c "print('%.6g' % (8.46e6 / $2 / 1e9))")
  "$PDL" train --algo gossip --runtime sim --platform "$PLAT" --device-rate "$rate" --tau "$3" \
    --data synthetic:n=4096,seed=5 --net tiny --batch 16 --lr 0.01 --steps 240 --test-subset 100 --threads 1 --quiet \
    --seed 2 2>"$T/$1.err" | tail -n 1 > "$T/$1.json"
}
run A 0.002 1
run B 0.05 8
check() { # check NAME EXPECT(congested|none)
  python3 - "$T/$1.json" "$PLAT" "$2" <<'EOF'
import json, sys
s = json.loads(open(sys.argv[1]).read())
K, expect = s["nodes"], sys.argv[3]
bw = []
for part in sys.argv[2].split("bw=")[1].split(",")[0].split("+"):
    tok, _, cnt = part.partition("*")
    bw += [float(tok[:-4]) * 1e6 / 8] * int(cnt)            # Mbps -> bytes/s
lat = 2e-3
req, rep = (1 + 2 * K) * 4, s["model_bytes"] + 8 * K       # gossip.c: op + time table; model + table
idle = lambda j, i: 4 * lat + (req + rep) / min(bw[j], bw[i])
G, T = s["G_s"], s["T"]
others = lambda i: [j for j in range(K) if j != i]
C = [sum(idle(j, i) for j in others(i)) / (K - 1) for i in range(K)]   # uniform peer choice
ratio = [C[i] / (sum(T * G[j] + C[j] for j in others(i)) / (K - 1)) for i in range(K)]
P, M = s["pair_pulls"], s["pair_mean_s"]
# the counts are whole and complete: every requester pulls once per T of its steps (issue 32: the
# summary once wrote them with one significant digit, 46 as 5e+01)
rows = [sum(P[j * K:(j + 1) * K]) for j in range(K)]
if any(r != s["updates"] // T for r in rows) or any(p != int(p) for p in P):
    sys.exit("pair_pulls rows %s, want %d each (whole counts)" % (rows, s["updates"] // T))
meas = []
for i in range(K):
    n = sum(P[j * K + i] for j in range(K))
    if not n:
        sys.exit("node %d served no pull" % i)
    w = sum(P[j * K + i] * (M[j * K + i] - idle(j, i)) for j in range(K)) / n
    c = sum(P[j * K + i] * idle(j, i) for j in range(K)) / n
    meas.append((w, c))
judged, bad = [], []
for i in range(K):
    if 0.5 <= ratio[i] <= 1.3:
        continue
    pred, got = ratio[i] > 1.3, meas[i][0] > meas[i][1]
    judged.append(i)
    if pred != got:
        bad.append("node %d: eq. (1) ratio %.2f says %s, measured wait %.4f s vs serve %.4f s" % (
            i, ratio[i], "congested" if pred else "not congested", meas[i][0], meas[i][1]))
desc = ", ".join("%d:%.2f%s" % (i, ratio[i], "*" if meas[i][0] > meas[i][1] else "") for i in range(K))
if bad:
    sys.exit("; ".join(bad) + " (ratios, * = measured congested: %s)" % desc)
want = [i for i in judged if (ratio[i] > 1.3) == (expect == "congested")]
if expect == "congested" and not any(ratio[i] > 1.3 for i in judged):
    sys.exit("no node predicted congested (ratios %s)" % desc)
if expect == "none" and (any(r > 1.3 for r in ratio) or len(judged) < K):
    sys.exit("expected every node clearly uncongested (ratios %s)" % desc)
print("%d of %d nodes judged, all agree (ratio per node, * = measured congested: %s)" % (len(judged), K, desc))
EOF
}
if out=$(check A congested 2>&1); then ok "eq. (1) from the platform alone vs measured waits, 3 link classes, G 2 ms T 1: $out"
else notok "eq. (1) on a 3-class platform (G 2 ms, T 1)" "$out $(tail -2 "$T/A.err")"; fi
if out=$(check B none 2>&1); then ok "eq. (1) from the platform alone vs measured waits, 3 link classes, G 50 ms T 8: $out"
else notok "eq. (1) on a 3-class platform (G 50 ms, T 8)" "$out $(tail -2 "$T/B.err")"; fi
finish
