#!/usr/bin/env python3
"""summarize.py RESDIR TABLE_TSV [quick] - derives gnuplot .dat files from results/ppasgd/*.jsonl
and appends the P1-P4 paper-vs-ours rows to TABLE_TSV (id, paper, ours, data set, real/simulated,
verdict). Reads results only; never runs anything. Missing experiments give a 'not run' row. It derives
metrics only: every verdict comes from bench/verdict.py applying bench/claims/ppasgd.toml.
SEEDS (environment, default "1"): the seeds bench/ppasgd/run.sh ran for P1, P2 and P3; seed 1's runs have
plain names, seed s > 1's the suffix "-sS" (p2-ppasgd-S9-s2). P2 and P3 hand the engine one set of
metrics per seed that has the runs; the rows' text, the .dat files and the plots read seed 1.
Metrics are raw numbers (test errors, update counts, simulated times; +inf for a level never reached):
the rules in bench/claims/ppasgd.toml decide. Results files are read with verdict.read_jsonl."""
import glob, json, math, os, sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
res, table = sys.argv[1], sys.argv[2]
quick = len(sys.argv) > 3 and sys.argv[3] == "quick"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402
from verdict import read_jsonl  # noqa: E402
V = verdict.Session("ppasgd", res, quick=quick)
TARGET2 = 0.3   # P2: the paper's "to reach the same error rate 0.3" (S = 27, §3.1), shown for every S
INF = float("inf")   # a level never reached (the engine stores it as 1e308)
TARGET4 = float(os.environ.get("TARGET4", "0.35"))
SEEDS = [int(x) for x in os.environ.get("SEEDS", "1").split()] or [1]
rows = []


def sfx(seed):
    """The run-name suffix of seed `seed` (bench/ppasgd/run.sh: seed 1 plain, others "-sS")."""
    return "" if seed == 1 else "-s%d" % seed


def per_seed(f):
    """(metrics per seed, seeds) over SEEDS, f(seed) -> metrics or None (that seed lacks the runs)."""
    got = [(sd, f(sd)) for sd in SEEDS]
    got = [(sd, m) for sd, m in got if m is not None]
    return [m for _, m in got], [sd for sd, _ in got]


def seeds_txt(seeds, extra=""):
    """' (seed 1 shown; N seeds...)' where more than one seed has the runs, else ''."""
    return " (seed 1 shown; %d seeds%s)" % (len(seeds), extra) if len(seeds) > 1 else ""


def rng(xs, f="%.3f"):
    """'lo-hi' of the numbers in xs (None left out), 'never' when none."""
    xs = [x for x in xs if x is not None]
    return (f + "-" + f) % (min(xs), max(xs)) if xs else "never"


def load(name):
    p = os.path.join(res, name + ".jsonl")
    if not os.path.exists(p):
        return None
    try:
        lines = read_jsonl(p)
    except verdict.VerdictError as e:   # named by bench/verdict.py as an error row; this summarizer skips the run
        print("summarize.py: %s" % e, file=sys.stderr)
        return None
    return {"evals": [l for l in lines if l.get("event") == "eval"],
            "summary": next((l for l in reversed(lines) if l.get("event") == "summary"), None),
            "config": next((l for l in lines if l.get("event") == "config"), None)}


def dat(name, header, data):
    with open(os.path.join(res, name + ".dat.tmp"), "w") as f:
        f.write("# " + header + "\n")
        for r in data:
            f.write(" ".join("%.9g" % v for v in r) + "\n")
    os.replace(os.path.join(res, name + ".dat.tmp"), os.path.join(res, name + ".dat"))


def dset(run):
    s = (run or {}).get("summary") or {}
    d = s.get("data", "?")
    return "%s (subset)%s" % (d, ", quick" if quick else "")


def row(*c):
    V.describe(c[0], c[2], c[3], c[4])
    rows.append("\t".join(str(x).replace("|", "/") for x in c))


def first_reach(evals, target, key="time_s"):
    for e in evals:
        if e.get("test_err") is not None and e["test_err"] <= target:
            return e[key], e
    return None, None


# ---- P1 ----
# per seed (SEEDS): seed 1's run (p1a, p1b) gives the plot and the numbers shown; the claim is
# judged on every seed's (p1a-s2, ...)
for tag, what, mode in (("p1a", "emulated S0 = 7", "real (emulated staleness)"),
                        ("p1b", "threaded run, measured S0", "real (1 update + 1 grad thread)")):
    r = load(tag)
    s = r and r["summary"]
    cid = "P1a" if tag == "p1a" else "P1b"
    if not s or not s.get("pred_n"):
        dat(tag, "no measurement", [])
        why = ("probe skipped: measured S0 = %s above the limit" % s.get("pred_S0")) if s and s.get("pred_skipped") else "not run / no measurement"
        row("P1 " + what, "argmin_S = S0 = 7; PP error / ASGD error = 42%", why,
            dset(r), mode, V.claim(cid, why=why, mode=mode, data_set=dset(r)))
        continue
    errs = s["pred_err"]
    dat(tag, "S prediction_error  (asgd %.9g, S0 %d)" % (s["pred_err_asgd"], s["pred_S0"]),
        [(i, e) for i, e in enumerate(errs)])
    dat(tag + "-asgd", "S asgd_error", [(0, s["pred_err_asgd"]), (len(errs) - 1, s["pred_err_asgd"])])
    S0 = s["pred_S0"]
    dat(tag + "-point", "S0 error_at_S0", [(S0, errs[S0])])
    ratio = s["pred_ratio"]
    per, names = [], []
    for sd in SEEDS:
        rs = load(tag + ("" if sd == 1 else "-s%d" % sd))
        ss = rs and rs["summary"]
        if ss and ss.get("pred_n"):
            per.append({"argmin": ss["pred_argmin"], "S0": ss["pred_S0"], "ratio": ss["pred_ratio"]})
            names.append(sd)
    more = ""
    if len(per) > 1:
        more = " (seed 1 shown; %d seeds: S0 / argmin_S %s; ratio %.0f-%.0f%%)" % (
            len(per), ", ".join("%d/%d" % (m["S0"], m["argmin"]) for m in per),
            100 * min(m["ratio"] for m in per), 100 * max(m["ratio"] for m in per))
    row("P1 " + what, "argmin_S = S0 = 7; PP error / ASGD error = 42%",
        "S0 = %d (S_bar %.2f, b = %d), argmin_S = %d, ratio = %.0f%% (n = %d)" % (
            S0, s.get("S_bar", S0), s.get("batch", 0), s["pred_argmin"], 100 * ratio, s["pred_n"]) + more,
        dset(r), mode, V.claim(cid, per, seeds=names, mode=mode, data_set=dset(r), plot="plots/out/ppasgd-p1.png"))

# ---- P2 ----
curves = {}
for name in ["p2-ssgd"] + ["p2-%s-S%d" % (a, S) for S in (3, 9, 27) for a in ("asgd-dist", "ppasgd")]:
    r = load(name)
    if not r:
        continue
    curves[name] = r
    dat(name, "epoch test_err updates", [(e["epoch"], e["test_err"], e["updates"]) for e in r["evals"]
                                         if e.get("test_err") is not None])
ss = curves.get("p2-ssgd")


def paired(a, p, max_epoch=None):
    """(PP-ASGD's, ASGD's) test errors at every evaluation both runs made (the same update counts;
    the start, where both are the initial model, left out), up to max_epoch epochs."""
    ea = {e["updates"]: e["test_err"] for e in a["evals"] if e.get("test_err") is not None and e.get("updates")
          and (max_epoch is None or e.get("epoch", 0) <= max_epoch)}
    ep = [(e["updates"], e["test_err"]) for e in p["evals"] if e.get("test_err") is not None and e["updates"] in ea]
    return [x for _, x in ep], [ea[u] for u, _ in ep]


def updates_to(r, target):
    u, _ = first_reach(r["evals"], target, "updates")
    return u if u else INF


def final_err(r):
    """The run's final test error; 1.0 (the worst) when it has none (a run that diverged)."""
    f = r["summary"].get("test_err")
    return f if f is not None else 1.0


def p2_metrics(S, a, p):
    """P2's raw metrics of one seed's ASGD and PP-ASGD runs at staleness S (bench/claims/ppasgd.toml);
    mean_err_*: the mean test error over each curve, which the rules before issue 45 read (history)."""
    old = {"mean_err_pp": mean_err(p["evals"]), "mean_err_asgd": mean_err(a["evals"])}
    if S == 3:
        pp, aa = paired(a, p)
        return dict(old, err_pp=pp, err_asgd=aa)
    if S == 9:   # "in the interval of first 7 epochs"
        pp, aa = paired(a, p, 7)
        return dict(old, err_pp=pp, err_asgd=aa)
    return {"upd_pp": updates_to(p, TARGET2), "upd_asgd": updates_to(a, TARGET2),
            "upd_run": a["summary"].get("updates") or max([e["updates"] for e in a["evals"]] or [0]),
            "final_pp": final_err(p), "final_asgd": final_err(a)}


def p2_runs(S, sd):
    if sd == 1:
        return curves.get("p2-asgd-dist-S%d" % S), curves.get("p2-ppasgd-S%d" % S)
    return load("p2-asgd-dist-S%d%s" % (S, sfx(sd))), load("p2-ppasgd-S%d%s" % (S, sfx(sd)))


def p2_seed(S, sd):
    a, p = p2_runs(S, sd)
    return p2_metrics(S, a, p) if a and p and a["summary"] and p["summary"] else None


def mean_err(ev):
    return sum(e["test_err"] for e in ev) / max(1, len(ev))


for S in (3, 9, 27):
    a, p = curves.get("p2-asgd-dist-S%d" % S), curves.get("p2-ppasgd-S%d" % S)
    claim = {3: "S=3: PP-ASGD's error lower than or similar to ASGD's at each point",
             9: "S=9: PP-ASGD clearly lower for the first 7 epochs",
             27: "S=27: PP-ASGD ~5x faster to error 0.3, much lower final error"}[S]
    if not a or not p:
        row("P2 S=%d" % S, claim, "not run", "-", "real (emulated staleness)", V.claim("P2-S%d" % S))
        continue
    ua, up = updates_to(a, TARGET2), updates_to(p, TARGET2)
    fa, fp = a["summary"]["test_err"], p["summary"]["test_err"]
    ma, mp = mean_err(a["evals"]), mean_err(p["evals"])
    sp = (ua / up) if ua < INF and up < INF else None
    ep, ea = paired(a, p)
    d = [x - y for x, y in zip(ep, ea)]
    ours = ("updates to err %.2f: ASGD %s, PP %s%s; final err ASGD %.3f%s, PP %.3f%s; mean err over curve %.3f vs %.3f; "
            "PP - ASGD at each evaluation %s") % (
        TARGET2, ua if ua < INF else "never", up if up < INF else "never", (" (%.1fx)" % sp) if sp else "",
        fa if fa is not None else float("nan"), " (diverged)" if a["summary"].get("diverged") else "",
        fp if fp is not None else float("nan"), " (diverged)" if p["summary"].get("diverged") else "", ma, mp,
        ("from %+.3f to %+.3f" % (min(d), max(d))) if d else "-")
    m2, s2 = per_seed(lambda sd: p2_seed(S, sd))
    fin = [(final_err(r[0]), final_err(r[1])) for r in (p2_runs(S, sd) for sd in s2)]
    ours += seeds_txt(s2, ": final err ASGD %s, PP %s" % (rng([x for x, _ in fin]), rng([y for _, y in fin])))
    row("P2 S=%d" % S, claim, ours, dset(a), "real (emulated staleness)",
        V.claim("P2-S%d" % S, m2, seeds=s2, mode="real (emulated staleness)", data_set=dset(a), plot="plots/out/ppasgd-p2.png"))


def early(r):
    """Mean test error over the evaluations in epochs (0, 1] ("the interval of the first few epochs")."""
    ev = [e["test_err"] for e in r["evals"] if e.get("test_err") is not None and 0 < e.get("epoch", 0) <= 1]
    return sum(ev) / len(ev) if ev else None


def p2_ssgd(sd):
    r = ss if sd == 1 else load("p2-ssgd" + sfx(sd))
    if not (r and r["summary"]) or early(r) is None:
        return None
    others = []
    for S in (3, 9, 27):
        for x in p2_runs(S, sd):
            if x and x["summary"] and early(x) is not None:
                others.append(early(x))
    return {"early_ssgd": early(r), "early_others": others}


if ss:
    us = updates_to(ss, TARGET2)
    mS, sS = per_seed(p2_ssgd)
    row("P2 SSGD", "SSGD has the largest error drop in the first epoch",
        "mean err over epoch 1: SSGD %s, ASGD/PP-ASGD at S=3,9,27 %s; SSGD reaches err %.2f %s; final %.3f" % (
            "%.3f" % mS[0]["early_ssgd"] if mS else "-", rng(mS[0]["early_others"]) if mS else "-",
            TARGET2, "after %d updates" % us if us < INF else "never", ss["summary"]["test_err"]) +
        seeds_txt(sS, ": SSGD's epoch-1 mean err %s" % rng([m["early_ssgd"] for m in mS])), dset(ss), "real",
        V.claim("P2-SSGD", mS, seeds=sS, mode="real", data_set=dset(ss), plot="plots/out/ppasgd-p2.png"))

# ---- P3 ----
def time_to(r, target):
    t, _ = first_reach(r["evals"], target)
    return t if t else INF


def tfmt(t):
    return "%.3g s" % t if t < INF else "never"


a, p = load("p3-asgd-dist"), load("p3-ppasgd")
for name, r in (("p3-asgd-dist", a), ("p3-ppasgd", p)):
    if r:
        dat(name, "sim_time_s test_err epoch", [(e["time_s"], e["test_err"], e["epoch"]) for e in r["evals"]])
if a and p:
    ta, tp = time_to(a, TARGET4), time_to(p, TARGET4)
    sa, sp_ = a["summary"], p["summary"]
    ours = "S_bar %.1f / %.1f; sim time to err %.2f: ASGD %s, PP %s%s" % (
        sa.get("S_bar", float("nan")), sp_.get("S_bar", float("nan")), TARGET4,
        tfmt(ta), tfmt(tp), (" (%.1fx)" % (ta / tp)) if ta < INF and tp < INF else "")
    m3 = "SIMULATED time (SimGrid, 4x8 devices at %s GFLOP/s), real numerics" % sa.get("device_rate", "?")

    def p3_seed(sd):
        ra, rp = (a, p) if sd == 1 else (load("p3-asgd-dist" + sfx(sd)), load("p3-ppasgd" + sfx(sd)))
        if not (ra and rp and ra["summary"] and rp["summary"]):
            return None
        return {"t_asgd": time_to(ra, TARGET4), "t_pp": time_to(rp, TARGET4)}
    m3s, s3 = per_seed(p3_seed)
    ours += seeds_txt(s3, ": ASGD/PP %s" % rng([m["t_asgd"] / m["t_pp"] if m["t_asgd"] < INF and m["t_pp"] < INF else None
                                                for m in m3s], "%.2fx"))
    row("P3", "32 devices, S_bar ~ 8.5: PP-ASGD ~2x faster than ASGD to a test-error level",
        ours, dset(a), m3, V.claim("P3", m3s, seeds=s3, mode=m3, data_set=dset(a), plot="plots/out/ppasgd-p3.png"))
else:
    row("P3", "PP-ASGD ~2x faster than ASGD", "not run", "-", "SIMULATED", V.claim("P3"))

# ---- P4 ----
sizes = sorted({int(f.split("-D")[-1].split(".")[0]) for f in glob.glob(os.path.join(res, "p4-*-D*.jsonl"))})
tt = {}
for D in sizes:
    for alg in ("ssgd", "ppasgd"):
        r = load("p4-%s-D%d" % (alg, D))
        if not r:
            continue
        dat("p4-%s-D%d" % (alg, D), "sim_time_s test_err", [(e["time_s"], e["test_err"]) for e in r["evals"]])
        tt[(alg, D)] = (time_to(r, TARGET4), r["summary"])
P4MODE = "SIMULATED time (SimGrid cluster, 8 dev/node, FDR IB), real numerics"
if sizes:
    # the device counts both methods ran (an interrupted size is left out, not counted as never)
    both = [D for D in sizes if ("ssgd", D) in tt and ("ppasgd", D) in tt]
    t_s = [tt[("ssgd", D)][0] for D in both]
    t_p = [tt[("ppasgd", D)][0] for D in both]
    ref = t_s[0] if t_s else INF
    lines = []
    for D in sizes:
        ts = tt.get(("ssgd", D), (INF,))[0]
        tp = tt.get(("ppasgd", D), (INF,))[0]
        lines.append((D, ref / ts if ref < INF and ts < INF else float("nan"),
                      ref / tp if ref < INF and tp < INF else float("nan"), D / sizes[0]))
    dat("p4-speedup", "devices speedup_ssgd speedup_ppasgd ideal (relative to SSGD on %d device)" % sizes[0], lines)
    fig4c = []
    for D in sizes:
        s = tt.get(("ppasgd", D), (None, {}))[1] or {}
        fig4c.append((D, s.get("B_bar", float("nan")), s.get("S_bar", float("nan")), s.get("F_U", float("nan"))))
    dat("p4-fig4c", "devices B_bar S_bar F_U (PP-ASGD)", fig4c)
    ratios = ["%d: %s" % (D, ("%.2fx" % (ts / tp)) if ts < INF and tp < INF else ("PP only" if tp < INF else ("SSGD only" if ts < INF else "neither")))
              for D, ts, tp in zip(both, t_s, t_p)]
    m4 = {"devices": both, "t_ssgd": t_s, "t_pp": t_p}
    # ratios: SSGD/PP-ASGD where both reached the level, what P4-ratio's rule read before issue 45 (history)
    m4r = dict(m4, ratios=[x / y for x, y in zip(t_s, t_p) if x < INF and y < INF])
    d4 = dset(load("p4-ssgd-D%d" % sizes[0]))
    row("P4 ratio", "PP-ASGD 1.8-1.9x faster than SSGD to the error target at every device count",
        "time to err %.2f, SSGD/PP-ASGD at devices " % TARGET4 + ", ".join(ratios), d4, P4MODE,
        V.claim("P4-ratio", m4r, mode=P4MODE, data_set=d4, plot="plots/out/ppasgd-p4.png"))

    def eff(ts):
        return ", ".join("%d: %s" % (D, "%.2f" % (ts[0] / t / (D / both[0])) if ts[0] < INF and t < INF else "-")
                         for D, t in zip(both, ts))
    row("P4 scaling", "PP-ASGD near-linear speed-up to 256 devices, SSGD sub-linear",
        "parallel efficiency (speed-up over %d device(s) / device ratio) to err %.2f: PP-ASGD %s; SSGD %s" % (
            both[0] if both else 0, TARGET4, eff(t_p), eff(t_s)), d4, P4MODE,
        V.claim("P4-scaling", dict(m4), mode=P4MODE, data_set=d4, plot="plots/out/ppasgd-p4.png"))
    row("P4 Fig.4c", "table of B_bar, S_bar, F_U", "; ".join("D=%d: B_bar %.2f S_bar %.2f F_U %.0f/s" % t for t in fig4c) +
        " (what bounds F_U and the speed-up: docs/REPRODUCTION.md, 'PP-ASGD P4')",
        "-", "SIMULATED", V.claim("P4-fig4c", {}, mode="SIMULATED"))
else:
    row("P4", "speed-up curves", "not run", "-", "SIMULATED", V.claim("P4-ratio"))

# ---- hybrid real runs ----
hy = []
for R in (1, 2, 4):
    r = load("hybrid-R%d" % R)
    if r and r["summary"]:
        s = r["summary"]
        hy.append("R=%d: F_U %.0f/s F_G %.1f/s S_bar %.1f" % (R, s.get("F_U", float("nan")), s.get("F_G", float("nan")),
                                                            s.get("S_bar", float("nan"))))
row("hybrid", "mpirun -np R pdl train --algo ppasgd --grad-threads G works, logs F_U/F_G/S_bar",
    "; ".join(hy) if hy else "not run", "fashion-mnist", "real (MPI ranks on 2 cores)",
    V.claim("hybrid", {"ranks_done": len(hy)} if hy else None, mode="real (MPI ranks on 2 cores)", data_set="fashion-mnist"))
V.write()
for e in V.errors:   # a malformed results file: a visible row, not a silent skip
    row("error", "-", e, "-", "-", "no results (%s)" % e)

with open(table, "a") as f:
    for r in rows:
        f.write(r + "\n")
