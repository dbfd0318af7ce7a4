#!/usr/bin/env bash
# bench/runtimes/validate.sh — validates the sim runtime against this machine (issue 3):
# for R = 1, 2, 4 MPI ranks, SSGD's measured time per update (`mpirun -np R pdl train --algo
# ssgd`, wall clock minus evaluation) beside the time the sim runtime predicts for the platform
# `machine:ranks=R,gflops=X,membw=Y` that describes this machine, and the error of the
# prediction, (simulated - measured) / measured.
#   X: GFLOP/s of one core on this net and batch, from `pdl calibrate --threads 1 --batch B`
#      (counted training flops / measured seconds), the mean of a calibration right before and
#      one right after each real run, so both see the machine load of the moment (it is shared);
#   Y: single-thread memory bandwidth (bytes touched per second) from bench/runtimes/membw.c;
#   L: the other users' busy sessions, and X0 = X / s the rate of a core of its own, from the
#      share s of a core that calibrate got (bench/runtimes/calib_share.py): the machine is
#      shared, and Linux's autogroup scheduler shares the CPUs fairly among sessions, so the R
#      ranks of one mpirun get C/(1+L) cores' worth together, however many they are.
# The machine platform puts all R ranks on one host; with load=L it has C/(1+L) cores' worth
# (docs/SIM.md), so at R = 4 (oversubscribed even on an idle machine: 4 ranks, 2 cores) and
# under load the ranks share what the session gets, as the OS time-slices them. Two predictions:
# "sim", gflops=X0,load=L (the platform describing the machine as it was while measured), and
# "idle model", gflops=X with all C cores and no load (what one gets ignoring the other users).
# Each R is run REPS times (interleaved); the table shows medians. The runs' summaries also
# split the time into grad_s_per_update and allreduce_s_per_update, kept in the JSONL.
# Outputs: results/runtimes/validate.jsonl (one line per repetition and R, with X, Y, load),
#   validate-runs.jsonl (the runs' own config/summary lines, marked simulated or not),
#   validate.dat (for plots/runtimes-validate.gp), validate.md and table.md, plots/out/runtimes-validate.*
# Env: B (per-rank batch, 16), STEPS (30), REPS (3), QUICK=1 (12 steps, 1 repetition), FORCE=1.
set -u
cd "$(dirname "$0")/../.." || exit 1
source bench/lib.sh
bench_init runtimes
B=${B:-16}; STEPS=${STEPS:-30}; REPS=${REPS:-3}
[ -n "$QUICK" ] && { STEPS=12; REPS=1; }
NET=ppasgd-cifar
OUT=$RES/validate.jsonl
RUNS=$RES/validate-runs.jsonl
TRAIN=(--net $NET --algo ssgd --batch "$B" --steps "$STEPS" --lr 0.01 --threads 1 --test-subset 100 --quiet)

# the summary line (last JSON line) of a run's stdout, or nothing
summary() { grep '^{"event":"summary"' | tail -1; }

validate() {
  gcc -O2 -Wall -o build/membw bench/runtimes/membw.c || return
  command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found (make deps installs openmpi-bin)" >&2; return 127; }
  : > "$OUT.tmp"
  local rep R load X s L X0 Y real sim sim0 C c1 c2
  C=$(nproc)
  for rep in $(seq 1 "$REPS"); do
    for R in 1 2 4; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      c1=$(python3 bench/runtimes/calib_share.py "$PDL" $NET "$B" "$RES/calibration-b$B.json") || return
      Y=$(build/membw) || return
      real=$(OMP_NUM_THREADS=1 mpirun_cmd -np "$R" "$PDL" train "${TRAIN[@]}" --results "$RUNS" \
             --tag "validate-real-R$R" | summary)
      [ -n "$real" ] || { echo "real run R=$R failed" >&2; return 1; }
      c2=$(python3 bench/runtimes/calib_share.py "$PDL" $NET "$B" "$RES/calibration-b$B.json") || return
      # the machine's state while the real run ran: mean of the calibrations before and after it
      read -r X s L X0 < <(echo "$c1 $c2" | awk '{printf "%.6g %.4f %.3f %.6g\n", ($1+$5)/2, ($2+$6)/2, ($3+$7)/2, ($4+$8)/2}')
      [ -n "$X0" ] || { echo "calibration failed" >&2; return 1; }
      sim=$("$PDL" train "${TRAIN[@]}" --runtime sim --platform "machine:ranks=$R,gflops=$X0,membw=$Y,load=$L" \
            --results "$RUNS" --tag "validate-sim-R$R" | summary)
      sim0=$("$PDL" train "${TRAIN[@]}" --runtime sim --platform "machine:ranks=$R,gflops=$X,membw=$Y" \
             --results "$RUNS" --tag "validate-sim-idle-model-R$R" | summary)
      [ -n "$sim" ] && [ -n "$sim0" ] || { echo "sim run R=$R failed" >&2; return 1; }
      python3 - "$rep" "$R" "$X" "$Y" "$load" "$real" "$sim" "$B" "$STEPS" "$NET" "$s" "$L" "$X0" "$sim0" "$C" >> "$OUT.tmp" <<'EOF'
import json, socket, sys
rep, R, X, Y, load, real, sim, B, steps, net, s, L, X0, sim0, C = sys.argv[1:]
real, sim, sim0 = json.loads(real), json.loads(sim), json.loads(sim0)
tr, ts, t0 = real["time_per_update_s"], sim["time_per_update_s"], sim0["time_per_update_s"]
row = {"event": "validate", "rep": int(rep), "ranks": int(R), "net": net, "data": "fashion-mnist",
       "algo": "ssgd", "batch_per_rank": int(B), "steps": int(steps), "gflops_calibrated": float(X),
       "core_share": float(s), "bg_load": float(L), "gflops_own_core": float(X0), "cores": int(C),
       "membw_GBps": float(Y), "loadavg_1min": float(load),
       "autogroup": open("/proc/sys/kernel/sched_autogroup_enabled").read().strip() == "1",
       "platform": "machine:ranks=%s,gflops=%s,membw=%s,load=%s" % (R, X0, Y, L),
       "measured_s": tr, "simulated_s": ts, "error": (ts - tr) / tr,
       "simulated_idle_model_s": t0, "error_idle_model": (t0 - tr) / tr,
       "measured_grad_s": real["grad_s_per_update"], "measured_allreduce_s": real["allreduce_s_per_update"],
       "simulated_grad_s": sim["grad_s_per_update"], "simulated_allreduce_s": sim["allreduce_s_per_update"],
       "runtime": "real+sim", "simulated": True, "measured_is_real": True, "host": socket.gethostname()}
print(json.dumps(row))
print("[runtimes] rep %s R %s: X %.1f GFLOP/s on %.2f of a core (X0 %.1f, L %.2f, loadavg %s), Y %.1f GB/s: "
      "measured %.4f s (grad %.4f, allreduce %.4f), sim %.4f s (grad %.4f, allreduce %.4f), idle model %.4f s"
      % (rep, R, float(X), float(s), float(X0), float(L), load, float(Y), tr, row["measured_grad_s"],
         row["measured_allreduce_s"], ts, row["simulated_grad_s"], row["simulated_allreduce_s"], t0), file=sys.stderr)
EOF
    done
  done
  mv "$OUT.tmp" "$OUT"
}

# medians per R -> validate.dat and validate.md (the table the script prints)
summarize() {
  python3 - "$OUT" "$RES/validate.dat" "$RES/validate.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["ranks"], []).append(r)
med = statistics.median
with open(sys.argv[2], "w") as d, open(sys.argv[3], "w") as m:
    d.write("# R measured_s simulated_s idle_model_s error error_idle min_measured max_measured  (medians over reps; errors: median of each rep's error; %s)\n" % sys.argv[1])
    m.write("| R | measured s/update (min-max) | simulated s/update | error (min..max) | idle-model s/update | error | X0 GFLOP/s | L | Y GB/s | reps |\n")
    m.write("|---|---|---|---|---|---|---|---|---|---|\n")
    for R in sorted(by):
        v = by[R]
        me, si, s0 = (med([r[k] for r in v]) for k in ("measured_s", "simulated_s", "simulated_idle_model_s"))
        lo, hi = min(r["measured_s"] for r in v), max(r["measured_s"] for r in v)
        e, e0 = med([r["error"] for r in v]), med([r["error_idle_model"] for r in v])
        elo, ehi = min(r["error"] for r in v), max(r["error"] for r in v)
        d.write("%d %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n" % (R, me, si, s0, e, e0, lo, hi))
        m.write("| %d | %.4f (%.4f-%.4f) | %.4f | %+.1f%% (%+.0f..%+.0f%%) | %.4f | %+.1f%% | %.1f | %.2f | %.1f | %d |\n" % (
            R, me, lo, hi, si, 100 * e, 100 * elo, 100 * ehi, s0, 100 * e0,
            med([r["gflops_own_core"] for r in v]), med([r["bg_load"] for r in v]), med([r["membw_GBps"] for r in v]), len(v)))
print(open(sys.argv[3]).read())
EOF
}

rows() {
  [ -f "$OUT" ] || { table_row validate "issue 3: sim vs real" "no results (validate did not finish)" "-" "-" "missing"; return; }
  python3 - "$OUT" <<'EOF' | while IFS=$'\t' read -r id paper ours data mode verdict; do table_row "$id" "$paper" "$ours" "$data" "$mode" "$verdict"; done
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["ranks"], []).append(r)
med = statistics.median
for R in sorted(by):
    v = by[R]
    me, si, e, e0 = (med([r[k] for r in v]) for k in ("measured_s", "simulated_s", "error", "error_idle_model"))
    print("\t".join(["validate-R%d" % R, "sim predicts real SSGD time/update (issue 3)",
                     "measured %.1f ms, simulated %.1f ms: error %+.0f%% (idle model %+.0f%%), median of %d" % (
                         1e3 * me, 1e3 * si, 100 * e, 100 * e0, len(v)),
                     "fashion-mnist, %s b=%d/rank" % (v[0]["net"], v[0]["batch_per_rank"]),
                     "real vs simulated (machine:ranks=%d)" % R,
                     "reported (shared machine, load L %.1f)" % med([r["bg_load"] for r in v])]))
EOF
}

done_or_run validate validate
[ -f "$OUT" ] && summarize
rows
table_print
render_plot plots/runtimes-validate.gp
