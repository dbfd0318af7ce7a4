# ci/probes/easgd.sh — EASGD paper (docs/PAPERS.md §2), sourced by ci/regress.sh.
# E1: `pdl stability --check` (round-robin stability maps by LAPACKE_dgeev) on a 101 x 101 grid:
# the disagreement counts with the analytic condition, ADMM's unstable-cell counts and the number
# of failed checks; all integer counts of a deterministic computation.
# Synchronous EASGD in sim mode (deterministic): pending until `--algo easgd-sync` is built.
probe_easgd_stability() {
  local rc=0
  "$PDL" stability --check --grid 101 --rounds 20000 --json "$WORK/stability.jsonl" || rc=$?
  [ $rc -le 1 ] || return $rc   # 1 = a check failed: still record the counts, the gate judges them
  python3 - "$WORK/stability.jsonl" >> "$MEAS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def m(name, v): print(json.dumps({"metric": "easgd.E1." + name, "value": v}))
for r in rows:
    if r["check"] == "easgd-region":
        m("easgd-region-p%d.disagree_outside_band" % r["p"], r["disagree_outside_band"])
        m("easgd-region-p%d.disagree_in_band" % r["p"], r["disagree_in_band"])
    elif r["check"] == "admm-region":
        m("admm-region-p%d.above_1" % r["p"], r["above_1"])
m("checks_failed", sum(1 for r in rows if not r["pass"]))
PY
}

probe_easgd_sync_sim() {
  local j
  if ! j=$(pdl_json train --algo easgd-sync --runtime sim --platform cluster:nodes=4,gpus=1 --tau 1 \
      --net tiny --batch 16 --lr 0.001 --steps 100 --train-subset 3200 --test-subset 1000 --seed 1 --threads 1); then
    unknown_algo easgd-sync || return 1
    pending easgd.sync-sim-4x1.test_err "pdl train has no --algo easgd-sync in this build"
    pending easgd.sync-sim-4x1.test_loss "pdl train has no --algo easgd-sync in this build"
    return 0
  fi
  emit easgd.sync-sim-4x1 "$j" test_err test_loss
}
