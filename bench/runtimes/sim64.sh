#!/usr/bin/env bash
# bench/runtimes/sim64.sh — the cost of the sim runtime at scale (issue 3's done-criterion):
# 64 simulated workers (cluster:nodes=8,gpus=8) of the PP-ASGD CIFAR preset run 100 SSGD
# updates at batch 4 (6400 real gradients). Records wall seconds, CPU seconds (user + sys of
# the run) and the load average, since this machine is shared (docs/RUNTIMES.md "Sim cost").
# Appends to results/runtimes/sim64.jsonl. Env: STEPS (100), PDL_SIM_OVERLAP=0 to time the
# inline path.
set -u
cd "$(dirname "$0")/../.." || exit 1
PDL=${PDL:-bin/pdl}
STEPS=${STEPS:-100}
mkdir -p results/runtimes
python3 - "$PDL" "$STEPS" <<'PY'
import json, os, resource, socket, subprocess, sys, time
pdl, steps = sys.argv[1], sys.argv[2]
cmd = [pdl, "train", "--net", "ppasgd-cifar", "--algo", "ssgd", "--batch", "4", "--steps", steps,
       "--runtime", "sim", "--platform", "cluster:nodes=8,gpus=8", "--lr", "0.01", "--test-subset", "1000", "--quiet"]
load0 = float(open("/proc/loadavg").read().split()[0])
t0 = time.monotonic()
p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
if p.returncode:
    sys.exit("sim64: pdl train failed with exit %d" % p.returncode)
s = json.loads([l for l in p.stdout.splitlines() if l.startswith('{"event":"summary"')][-1])
row = {"event": "sim64", "command": " ".join(cmd), "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
       "loadavg_1min_before": load0, "loadavg_1min_after": float(open("/proc/loadavg").read().split()[0]),
       "overlap": os.environ.get("PDL_SIM_OVERLAP", "1") != "0", "workers": s["workers"], "updates": s["updates"],
       "simulated_time_s": s["time_s"], "test_err": s["test_err"], "runtime": "sim", "simulated": True,
       "git": s.get("git"), "host": socket.gethostname()}
with open("results/runtimes/sim64.jsonl", "a") as f:
    f.write(json.dumps(row) + "\n"); f.flush(); os.fsync(f.fileno())
print("sim64: %d workers x %d updates: %.1f s wall, %.1f s CPU (load average %.1f -> %.1f)%s" % (
    row["workers"], row["updates"], wall, row["cpu_s"], load0, row["loadavg_1min_after"],
    "" if row["overlap"] else ", overlap off"))
PY
