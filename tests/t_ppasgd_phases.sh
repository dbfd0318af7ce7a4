#!/usr/bin/env bash
# t_ppasgd_phases.sh — PDL_PP_PHASES=1 (issue 34): a PP-ASGD sim run's summary carries
# update_phase_s, the update role's SIMULATED seconds per update by phase, and each phase is the
# formula of its charge (docs/REPRODUCTION.md, "P4's bound"): gather 4n(2G+1) bytes and step 28n
# bytes at the cluster's 40 GB/s memory, the ring allreduce of n + 4 floats
# 2(N-1)(1 us + 4(n+4)/N B / 7 GB/s), no lock waits; without the variable the summary has no
# update_phase_s and is otherwise the same (the instrumentation reads the clock only).
# Under a second (synthetic data, a small net, 30 updates on 2 nodes x 2 devices).
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_NO_PROGRESS=1
args=(train --data synthetic --net "relu F64 S10" --algo ppasgd --runtime sim --platform cluster:nodes=2,gpus=2
      --device-rate 8 --batch 1 --lr 0.0001 --steps 30 --quiet)
expect "sim run with PDL_PP_PHASES=1" env PDL_PP_PHASES=1 bin/pdl "${args[@]}" --results "$T/on.jsonl"
expect "sim run without it" bin/pdl "${args[@]}" --results "$T/off.jsonl"
python3 - "$T/on.jsonl" "$T/off.jsonl" <<'PY' && ok "update_phase_s: every phase is its charge's formula; off, the summary is the same without it" || notok "update_phase_s" "see above"
import json, sys
on, off = ([json.loads(l) for l in open(p) if l.strip()][-1] for p in sys.argv[1:3])
bad = []
ph = on.get("update_phase_s")
if not isinstance(ph, dict):
    print("no update_phase_s in %s" % on); sys.exit(1)
G, N, mem, bw, lat = 2, 2, 40e9, 7e9, 1e-6
n = ph["step_work"] * mem / 28
if abs(n - round(n)) > 1e-3 * n:
    bad.append("step_work %g is not 28n / 40 GB/s for an integer n (%g)" % (ph["step_work"], n))
n = round(n)
want = {"gather_work": 4.0 * n * (2 * G + 1) / mem, "allreduce": 2 * (N - 1) * (lat + 4.0 * (n + 4) / N / bw),
        "gather_wait": 0.0, "step_wait": 0.0, "rest": 0.0}
for k, v in want.items():
    if abs(ph[k] - v) > 1e-5 * max(v, 1e-9):
        bad.append("%s %g, formula %g (n = %d)" % (k, ph[k], v, n))
if "update_phase_s" in off:
    bad.append("update_phase_s without PDL_PP_PHASES")
a = {k: v for k, v in on.items() if k not in ("update_phase_s", "git")}
b = {k: v for k, v in off.items() if k != "git"}
if a != b:
    bad.append("summaries differ: %s" % sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))
if bad:
    print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
finish
