#!/usr/bin/env python3
"""summarize.py RESDIR [TABLE_TSV] - P4's scaling shape at the paper's scale, timing only (bench/phantom/run.sh, step
p4t): reads RESDIR/p4t-{ppasgd,ssgd}-<GPUs>.jsonl (--device phantom runs: simulated seconds, no
numerics), derives the examples per simulated second of each method at each GPU count and hands them
to the verdict engine as claim P4-scaling-timing (bench/claims/ppasgd.toml decides; this script
decides nothing), adding its measurement to those RESDIR already holds (Session keep=True, so it may
run after bench/ppasgd/summarize.py). Prints the table (updates/s, time per update, examples/s and
parallel efficiency, and Fig. 4c's B_bar, S_bar, F_U for PP-ASGD) and writes RESDIR/p4t-speedup.dat
for plots/ppasgd-p4t.gp; with TABLE_TSV, appends the row to the paper-vs-ours table (bench/lib.sh's
columns: label, paper, ours, data set, mode, verdict). Reads results only; never runs anything."""
import glob, os, re, sys

if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
res = sys.argv[1]
table = sys.argv[2] if len(sys.argv) == 3 else None
PAPER = "PP-ASGD near-linear to 256 GPUs, SSGD sub-linear"


def table_row(ours, dset, mode, cell):
    if table:
        with open(table, "a") as f:
            f.write("\t".join(["P4 scaling (timing only)", PAPER, ours, dset, mode, cell]) + "\n")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402
from verdict import read_jsonl  # noqa: E402

runs = {}
for path in glob.glob(os.path.join(res, "p4t-*-*.jsonl")):
    m = re.match(r"p4t-(ppasgd|ssgd)-(\d+)\.jsonl$", os.path.basename(path))
    if not m:
        continue
    summ = [x for x in read_jsonl(path) if x.get("event") == "summary"]
    if summ:
        runs[(m.group(1), int(m.group(2)))] = summ[-1]


def xps(a, s):
    """training examples per simulated second"""
    if s["time_s"] <= 0:
        return 0.0
    if a == "ppasgd":
        return s["B_bar"] * s["updates"] * s["batch"] / s["time_s"]
    return s["updates"] * s["batch"] * s["workers"] / s["time_s"]


devices = sorted(g for (a, g) in runs if a == "ppasgd" and ("ssgd", g) in runs)
V = verdict.Session("ppasgd", res, keep=True)
if not devices:
    cell = V.claim("P4-scaling-timing", None, why="no p4t runs in %s (bench/phantom/run.sh, step p4t)" % res)
    V.write()
    table_row("not run", "-", "SIMULATED, timing only", cell)
    print("P4-scaling-timing: no results (%s)" % cell)
    sys.exit(0)
xp = [xps("ppasgd", runs[("ppasgd", g)]) for g in devices]
xs = [xps("ssgd", runs[("ssgd", g)]) for g in devices]
s0 = runs[("ppasgd", devices[0])]
mode = "SIMULATED, timing only (--device phantom)"
dset = "shape:3x224x224, 1000 classes (no pixels)"
ours = "examples/s at %d GPUs over 1: PP-ASGD %.1fx, SSGD %.1fx (ideal %dx)" % (
    devices[-1], xp[-1] / xp[0] if xp[0] else 0, xs[-1] / xs[0] if xs[0] else 0, devices[-1] // devices[0])
cell = V.claim("P4-scaling-timing", {"devices": devices, "xps_pp": xp, "xps_ssgd": xs}, ours=ours, mode=mode,
               data_set=dset, plot="plots/out/ppasgd-p4t.png")
V.write()
table_row(ours, dset, mode, cell)
with open(os.path.join(res, "p4t-speedup.dat"), "w") as f:
    f.write("# GPUs speedup_ssgd speedup_ppasgd ideal (examples/s over each method's %d-GPU run)\n" % devices[0])
    for g, a, b in zip(devices, xs, xp):
        f.write("%d %.6g %.6g %.6g\n" % (g, a / xs[0] if xs[0] else 0, b / xp[0] if xp[0] else 0, g / devices[0]))
print("P4 timing only (%s; net %s; %s)" % (mode, s0.get("net_spec"), s0.get("platform")))
print("%5s | %10s %12s %12s %6s | %10s %12s %12s %6s %8s %7s %8s" % (
    "GPUs", "SSGD upd/s", "s/update", "examples/s", "eff", "PP upd/s", "s/update", "examples/s", "eff", "B_bar", "S_bar", "F_U"))
for g, a, b in zip(devices, xs, xp):
    ss, pp = runs[("ssgd", g)], runs[("ppasgd", g)]
    print("%5d | %10.3f %12.4f %12.1f %6.2f | %10.3f %12.4f %12.1f %6.2f %8.1f %7.3f %8.3f" % (
        g, ss["updates"] / ss["time_s"], ss["time_per_update_s"], a, a / xs[0] / (g / devices[0]),
        pp["updates"] / pp["time_s"], pp["time_per_update_s"], b, b / xp[0] / (g / devices[0]),
        pp["B_bar"], pp["S_bar"], pp["F_U"]))
print("P4-scaling-timing: %s" % cell)
print("(the paper's Fig. 4c values are in its figure only, not in the text we have: nothing to set beside them)")
