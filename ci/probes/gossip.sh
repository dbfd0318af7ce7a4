# ci/probes/gossip.sh — gossip SGD (docs/PAPERS.md §5), sourced by ci/regress.sh. Deterministic
# SimGrid runs (real numerics, simulated time) of 8 nodes, 6 wide + 2 narrow links scaled so that a
# 202 KB model takes as long as the paper's 54 MiB one (case (b) of bench-gossip, tiny net):
# congestion at T = 1 and none at T = 4 (measured and by eq. (1)), the simulated time, accuracy;
# and the warm-up's share of pulls that went to wide nodes (Alg. 2's point).
GOSSIP_SIM=(--runtime sim --platform "links:k=8,bw=35.76Mbps*6+3.576Mbps*2,lat=5ms" --device-rate 0.0677
  --data fashion-mnist --train-subset 4096 --test-subset 1000 --net tiny --batch 16 --lr 0.05 --steps 64 --seed 1 --threads 1)
probe_gossip_sim() {
  local j t
  for t in 1 4; do
    j=$(pdl_json train --algo gossip "${GOSSIP_SIM[@]}" --tau $t) || return 1
    emit gossip.pull-8n-6w-T$t "$j" test_err test_loss time_s measured_any_congested eq1_any_congested eq1_disagreements
  done
  j=$(pdl_json train --algo gossip-warmup "${GOSSIP_SIM[@]}" --tau 4 --gossip-warmup 64 --gossip-timeline "$WORK/gossip-warm.csv") || return 1
  emit gossip.warmup-8n-6w-T4 "$j" test_err time_s
  python3 - "$WORK/gossip-warm.csv" >> "$MEAS" <<'PY'
import csv, json, sys
r = list(csv.DictReader(open(sys.argv[1])))
print(json.dumps({"metric": "gossip.warmup-8n-6w-T4.wide_share", "value": round(sum(int(x["peer"]) < 6 for x in r) / len(r), 6)}))
PY
}
