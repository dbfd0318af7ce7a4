#!/usr/bin/env python3
"""bench/hermans/summarize.py RES RUNS QUICK NET DATA RATE BW LAT EPOCHS NET_H3 [SEEDS [NET_H3A EPOCHS_H3A NTEST [RUNS_H3D]]] — reads the runs
of bench/hermans/run.sh and writes the .dat files plots/hermans-*.gp read, and rows.tsv (id, thesis,
ours, data set, real/simulated, verdict) for the table. This script derives metrics only; every
verdict comes from bench/verdict.py applying bench/claims/hermans.toml (verdicts.json/.md beside
rows.tsv). SEEDS ("1 2 3"; default "1"): the seeds run.sh ran; seed 1's runs have plain names, seed
s > 1's the suffix "-sS" (h3b-agn-n10-l10-s2). The claims the registry asks 3 seeds for (H3a, H3b,
H3c) get one set of metrics per seed that has the runs; the text, the plots and the seed-1 claims
(H1, H2, ...) read seed 1. NET_H3A, EPOCHS_H3A: H3a's net and epochs (default NET_H3, EPOCHS); NTEST: the
evaluation subsets' size (the center's training accuracy is taken on the first NTEST training
examples; default 10000). RUNS_H3D: the directory of H3d's runs (run.sh: RUNS/h3d-<its settings' hash>;
default RUNS): DynSGD at n workers with lambda = 1 and L on the same epochs and lambda = L on more
epochs (h3d-nN-l1, h3d-nN-lL, h3d-nN-lL-eE, seed suffixes as above); its settings are read off the
runs. Stdlib only."""
import glob
import math
import os
import re
import sys

if len(sys.argv) not in (11, 12, 15, 16) or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
RES, RUNS, QUICK, NET, DATA, RATE, BW, LAT, EPOCHS, NET_H3 = sys.argv[1:11]
SEEDS = [int(x) for x in (sys.argv[11].split() if len(sys.argv) > 11 else ["1"])] or [1]
NET_H3A, EPOCHS_H3A, NTEST = sys.argv[12:15] if len(sys.argv) > 12 else (NET_H3, EPOCHS, "10000")
RUNS_H3D = sys.argv[15] if len(sys.argv) > 15 else RUNS
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402
V = verdict.Session("hermans", RES, quick=bool(QUICK))
SIM = "SIMULATED: n worker hosts + 1 server of %s on %s / %s links (SimGrid), real numerics" % (RATE, BW, LAT)
DS = "%s%s, net %s, a quarter epoch per run" % (DATA, " (subset, QUICK)" if QUICK else "", NET)
DS3 = "%s%s, net %s, %s epochs split over the n workers" % (DATA, " (subset, QUICK)" if QUICK else "", NET_H3, EPOCHS)
DS3A = "%s%s, net %s, %s epochs split over the n workers" % (DATA, " (subset, QUICK)" if QUICK else "", NET_H3A, EPOCHS_H3A)
rows = []


def lines(path):
    """The JSON lines of path (the engine's loader: a torn last line is skipped with a warning); [] when
    the file is missing or malformed (the engine's scan then gives the malformed file an error row)."""
    if not os.path.exists(path):
        return []
    try:
        return verdict.read_jsonl(path)
    except verdict.VerdictError as e:
        print("hermans: %s" % e, file=sys.stderr)
        return []


def summary(name, d=None):
    s = [x for x in lines(os.path.join(d or RUNS, name + ".jsonl")) if x.get("event") == "summary"]
    return s[-1] if s else None


def evals(name, d=None):
    return [x for x in lines(os.path.join(d or RUNS, name + ".jsonl")) if x.get("event") == "eval"]


def sfx(seed):
    """The run-name suffix of seed `seed` (bench/hermans/run.sh: seed 1 plain, others "-sS")."""
    return "" if seed == 1 else "-s%d" % seed


def runs(prefix, seed=1, d=None):
    """{name without the seed's suffix: summary} of seed `seed`'s runs whose names start with prefix
    (in directory d, default RUNS)."""
    out = {}
    for f in sorted(glob.glob(os.path.join(d or RUNS, prefix + "*.jsonl"))):
        n = os.path.basename(f)[:-6]
        m = re.search(r"-s\d+$", n)
        if (m.group(0) if m else "") != sfx(seed):
            continue
        s = summary(n, d)
        if s:
            out[n[:len(n) - len(sfx(seed))]] = s
    return out


def per_seed(f):
    """(metrics per seed, seeds) over SEEDS, f(seed) -> metrics or None (that seed lacks the runs);
    (None, None) when no seed has them."""
    ms = [(sd, f(sd)) for sd in SEEDS]
    ms = [(sd, m) for sd, m in ms if m is not None]
    return ([m for _, m in ms], [sd for sd, _ in ms]) if ms else (None, None)


def seeds_txt(seeds, extra=""):
    """' (seed 1 shown; N seeds...)' where more than one seed ran, else ''."""
    return " (seed 1 shown; %d seeds%s)" % (len(seeds), extra) if seeds and len(seeds) > 1 else ""


def row(i, thesis, ours, ds, mode, verdict):
    V.describe(i, ours, ds, mode)
    rows.append((i, thesis, ours, ds, mode, verdict))


def dat(name, header, data):
    with open(os.path.join(RES, name), "w") as f:
        f.write("# " + header + "\n")
        for r in data:
            f.write(" ".join("%.6g" % v if isinstance(v, float) else str(v) for v in r) + "\n")


# ---- H1: staleness --------------------------------------------------------------------------
h1 = runs("h1-n")
ns = sorted(int(k.split("-n")[1]) for k in h1)
hists = {n: h1["h1-n%d" % n]["staleness_hist"] for n in ns}
top = max((len(h) for h in hists.values()), default=0)
dat("h1-staleness.dat", "staleness then the fraction of commits at n = " + " ".join(map(str, ns)),
    [[s] + [float(hists[n][s]) / max(1, sum(hists[n])) if s < len(hists[n]) else 0.0 for n in ns] for s in range(top)])
parts, flags = [], []
for n in ns:
    s1 = h1["h1-n%d" % n]
    m = s1["staleness_mean_steady"]
    dv = " DIVERGED%s" % (" at commit %s" % s1["diverged_at"] if s1.get("diverged_at") is not None else "") if s1.get("diverged") else ""
    parts.append("n=%d: mean %.2f after the first n commits, %.2f over all %d (n-1 = %d)%s" % (
        n, m, s1["staleness_mean"], s1["master_clock"], n - 1, dv))
    if dv:
        flags.append("n=%d diverged (train loss %s) and stopped after %d commits: its staleness covers those only" % (
            n, s1.get("train_loss", "?"), s1["master_clock"]))
row("H1 staleness", "homogeneous asynchronous workers: E[staleness] = n - 1", "; ".join(parts) or "not run",
    DS, SIM, V.claim("H1", {"steady_mean": [h1["h1-n%d" % n]["staleness_mean_steady"] for n in ns], "n": ns} if ns else None,
                     mode=SIM, data_set=DS, flags=flags, plot="plots/out/hermans-staleness.png"))
het = runs("h1het-n")
if het:
    k = sorted(het)[0]; hs = het[k]["staleness_hist"]; n = het[k]["workers"]
    dat("h1-staleness-het.dat", "staleness fraction (n = %d, half the workers at 1/4 rate)" % n,
        [[i, float(hs[i]) / max(1, sum(hs))] for i in range(len(hs))])
    spread = sum(1 for v in hs if v)
    hom = h1.get("h1-n%d" % n)
    def sd(h):   # the standard deviation of the staleness over all commits, from its histogram
        c = sum(h); m = sum(i * v for i, v in enumerate(h)) / max(1, c)
        return math.sqrt(sum(v * (i - m) ** 2 for i, v in enumerate(h)) / max(1, c))
    het_sd = sd(hs); hom_sd = sd(hom["staleness_hist"]) if hom else None
    row("H1 heterogeneous", "staleness histogram with heterogeneous workers (wider than the homogeneous one)",
        "n=%d, half the workers at 1/4 of the rate: mean %.2f after the first n commits, %d distinct staleness values (max %d), "
        "standard deviation %.2f (homogeneous at n=%d: %s)" % (
            n, het[k]["staleness_mean_steady"], spread, len(hs) - 1, het_sd, n, "%.2f" % hom_sd if hom else "not run"),
        DS, SIM + " (rates=LIST)",
        V.claim("H1-het", {"het_sd": het_sd, "hom_sd": hom_sd}, mode=SIM + " (rates=LIST)", data_set=DS))
else:
    row("H1 heterogeneous", "staleness histogram with heterogeneous workers", "not run", "-", "-", V.claim("H1-het"))

# ---- H2: implicit momentum ------------------------------------------------------------------
# The claim is about E over worker orders: on the quadratic, pdl toy's ensemble fit (many random
# orders, d_t+1 = mu d_t + beta grad, instrumental variables) estimates mu. On the net we have one
# run per n: the server's lag-1 slope of the center's updates is shown, but it is not an estimate
# of mu (it follows the slow decay of the trajectory as well; see src/analysis/toy_async.h).
h2 = runs("h2-n")
q = {d["workers"]: d for d in lines(os.path.join(RUNS, "h2-quadratic.jsonl"))}
data, parts, worst = [], [], 0.0
for n in sorted(set(q) | {h2[k]["workers"] for k in h2}):
    e = 1.0 - 1.0 / n
    fit = q[n]["momentum_fit"] if n in q else float("nan")
    net = [h2[k]["momentum_slope"] for k in h2 if h2[k]["workers"] == n]
    data.append([n, e, float(net[0]) if net else float("nan"), fit, fit, fit])
    parts.append("n=%d: quadratic %.4f (1-1/n %.4f); net lag-1 slope %s" % (n, fit, e, "%.2f" % net[0] if net else "-"))
    if n in q:
        worst = max(worst, abs(fit - e))
dat("h2-momentum.dat", "n expected slope_net(single run, lag-1) fit_quadratic min max", data)
row("H2 implicit momentum", "E[theta_t+1 - theta_t] = (1 - 1/n) E[theta_t - theta_t-1] - (eta/n) E[grad] (eq. 1.1)",
    "; ".join(parts) or "not run",
    "quadratic 0.5 (x1^2 + 0.1 x2^2): pdl toy, random order, ensemble of %s runs; net: %s" % (
        next(iter(q.values()))["ensemble"] if q else "-", DS),
    "deterministic host simulation (quadratic); " + SIM + " (net)",
    V.claim("H2", {"worst": worst} if q else None, mode="deterministic host simulation (quadratic)",
            flags=(["on the quadratic, max |mu - (1-1/n)| %.4f" % worst] if q else []) +
            (["the net's single-run slope (not an estimate of mu) is within %.3f of 1-1/n for n >= 8, lower below" % max(
                abs(r[2] - r[1]) for r in data if r[0] >= 8 and r[2] == r[2])] if any(r[0] >= 8 and r[2] == r[2] for r in data) else []),
            plot="plots/out/hermans-momentum.png"))

# ---- H3a: DOWNPOUR ----------------------------------------------------------------------------
h3a = runs("h3a-")
h3a_s = {sd: runs("h3a-", sd) for sd in SEEDS}
FAILED_ERR = V.reg["_by_id"]["H3a-n20-l1"]["tolerance"]   # the rows' text only: the TOML's rules decide (chance: 0.9)
def div(k, d=None):
    d = h3a if d is None else d
    te = d[k]["test_err"]
    return d[k]["diverged"] or not (te is not None and te <= FAILED_ERR)
def nl(k):   # h3a-n10-l5 -> (10, 5)
    return int(k.split("-n")[1].split("-")[0]), int(k.split("-l")[1])
parts = []
n_min = min((nl(k)[0] for k in h3a), default=0)
n_max = max((nl(k)[0] for k in h3a), default=0)
for k in sorted(h3a, key=nl):
    n, l = nl(k)
    more = [h3a_s[sd][k] for sd in SEEDS if k in h3a_s[sd]]
    spread = "; %d seeds: failed in %d, test err %.3f-%.3f" % (
        len(more), sum(div(k, {k: x}) for x in more), min(x["test_err"] for x in more), max(x["test_err"] for x in more)) \
        if len(more) > 1 else ""
    parts.append("n=%d lambda=%d: %s (test err %.3f%s)" % (n, l, ("diverged" if h3a[k]["diverged"] else "failed") if div(k) else "converged",
                                                         h3a[k]["test_err"], spread))
ours3a = ("; ".join(parts) + " (failed: final test error above %.1f, chance 0.9)" % FAILED_ERR) if parts else "not run"
k10 = [k for k in h3a if nl(k) == (n_min, 1)]
k20 = [k for k in h3a if nl(k) == (n_max, 1) and n_max > n_min]
ls = sorted(nl(k)[1] for k in h3a if nl(k)[0] == n_min and nl(k)[1] > 1)
def h3a_raw(s):
    """The raw figures the H3a rules read: the commit at which the run was stopped for divergence (null:
    never) and the final test error (null when not finite)."""
    return {"diverged_at": s.get("diverged_at") if s.get("diverged") else None, "test_err": s.get("test_err")}
def h3a_failed(ks):
    """claim()'s metrics (one per seed) and seeds for the sub-claim on cell ks[0]."""
    return dict(zip(("metrics", "seeds"), per_seed(lambda sd: h3a_raw(h3a_s[sd][ks[0]]) if ks and ks[0] in h3a_s[sd] else None)))
for cid, ks, lab in (("H3a-n10-l1", k10, "n=%d, lambda=1 converges" % n_min), ("H3a-n20-l1", k20, "n=%d, lambda=1 diverges" % n_max)):
    row("H3a DOWNPOUR %s (net %s)" % (lab, NET_H3A), "lambda=1 converges at n=10, diverges at n=20", ours3a, DS3A, SIM,
        V.claim(cid, **h3a_failed(ks), mode=SIM, data_set=DS3A, label="H3a DOWNPOUR " + lab, plot="plots/out/hermans-curves.png"))
for cid, want in (("H3a-n10-l5", 5), ("H3a-n10-l10", 10), ("H3a-n10-l20", 20)):
    idx = {5: 0, 10: 1, 20: 2}[want]
    l = ls[idx] if idx < len(ls) else None
    ks = [k for k in h3a if l is not None and nl(k) == (n_min, l)]
    lab = "n=%d, lambda=%s diverges" % (n_min, l if l is not None else want)
    row("H3a DOWNPOUR %s" % lab, "at n=10 DOWNPOUR diverges for lambda = 5, 10, 20", ours3a, DS3A, SIM,
        V.claim(cid, **h3a_failed(ks), mode=SIM, data_set=DS3A, label="H3a DOWNPOUR " + lab))
# the full-width evidence: the H1 runs (AGN with lambda = 1 = DOWNPOUR with lambda = 1) on NET
def h3a_full(sd):
    d = h1 if sd == 1 else runs("h1-n", sd)
    return {"n": ns, "diverged_at": [h3a_raw(d["h1-n%d" % n])["diverged_at"] for n in ns]} \
        if ns and all("h1-n%d" % n in d for n in ns) else None
mf, sf = per_seed(h3a_full)
full = "; ".join("n=%d: %s" % (n, "diverged at commit %s" % h1["h1-n%d" % n].get("diverged_at") if h1["h1-n%d" % n].get("diverged")
                                else "completed") for n in ns)
if sf:
    full += seeds_txt(sf, ": diverged %s" % ", ".join("n=%d in %d" % (n, sum(m["diverged_at"][i] is not None for m in mf)) for i, n in enumerate(ns)))
row("H3a DOWNPOUR full width (net %s): n=%s" % (NET, "/".join(map(str, ns))), "lambda=1 converges at n=10, diverges at n=20",
    full or "not run", DS, SIM, V.claim("H3a-full", mf, seeds=sf, mode=SIM, data_set=DS))

# ---- H3b: AGN vs AEASGD, temporal efficiency ---------------------------------------------------
# The thesis' Eq. (3.4) (temporal efficiency, §3.2): E(a, b) = int_0^m f_a(t) dt / int_0^m f_b(t) dt, f the
# training accuracy, m the shorter of the two training times. Ours: f = the center's accuracy on the
# first NTEST training examples (eval lines' train_err), t the simulated time, trapezoids between
# the evaluations (the start and every tenth of the run).
# The thesis' own per-cell figures on our grid (Table 3.1, §3.2; chapter_accumulated_gradient_normalization.tex,
# table:agn_temporal_efficiency, the 7 x 7 grid of n, lambda in 10..40 step 5): AGN ahead (> 1) in
# 10 of these 16 cells = 62.5% (69.73% over its 7 x 7 grid, as its caption states).
THESIS_TE = {(10, 10): 1.009, (10, 20): 1.003, (10, 30): 0.988, (10, 40): 0.990,
             (20, 10): 0.983, (20, 20): 1.022, (20, 30): 1.007, (20, 40): 0.997,
             (30, 10): 0.926, (30, 20): 1.045, (30, 30): 1.012, (30, 40): 1.005,
             (40, 10): 1.044, (40, 20): 1.027, (40, 30): 0.997, (40, 40): 1.009}
def area(ev, tmax):
    pts = sorted((d["time_s"], 1.0 - d["train_err"]) for d in ev if d.get("train_err") is not None)
    a = 0.0
    for (t0, y0), (t1, y1) in zip(pts, pts[1:]):
        if t0 >= tmax:
            break
        if t1 > tmax:
            y1 = y0 + (y1 - y0) * (tmax - t0) / (t1 - t0); t1 = tmax
        a += 0.5 * (y0 + y1) * (t1 - t0)
    return a
def h3b(sd):
    """{(n, lambda): temporal efficiency AGN / AEASGD} of seed sd's grid cells."""
    cells = {}
    for k in sorted(runs("h3b-agn-", sd)):
        n, l = int(k.split("-n")[1].split("-")[0]), int(k.split("-l")[1])
        ke = "h3b-aeasgd-n%d-l%d" % (n, l)
        ea, ee = evals(k + sfx(sd)), evals(ke + sfx(sd))
        if not ea or not ee:
            continue
        T = min(max(d["time_s"] for d in ea), max(d["time_s"] for d in ee))
        a, b = area(ea, T), area(ee, T)
        cells[(n, l)] = a / b if b > 0 else float("nan")
    return cells
def h3b_metrics(cells):
    """wins (cells AGN is ahead), total, and on the cells the thesis' table has: how many, and in how
    many ours and the thesis' agree on who is ahead (shown; the rule reads wins and total)."""
    if not cells:
        return None
    common = [c for c in cells if c in THESIS_TE]
    return {"wins": sum(1 for r in cells.values() if r > 1), "total": len(cells),
            "thesis_cells": len(common), "thesis_wins": sum(1 for c in common if THESIS_TE[c] > 1),
            "same_side": sum(1 for c in common if (cells[c] > 1) == (THESIS_TE[c] > 1))}
h3b_s = {sd: h3b(sd) for sd in SEEDS}
cells1 = h3b_s.get(1) or h3b(1)
mb, sb = per_seed(lambda sd: h3b_metrics(h3b_s[sd]))
wins = sum(1 for r in cells1.values() if r > 1); total = len(cells1)
# one .dat row per cell: n lambda ours (mean over the seeds that ran it) thesis (0: not in its table)
grid = []
for c in sorted(cells1):
    rs = [h3b_s[sd][c] for sd in SEEDS if c in h3b_s[sd]]
    grid.append([c[0], c[1], sum(rs) / len(rs), THESIS_TE.get(c, 0.0)])
dat("h3b-efficiency.dat", "n lambda temporal_efficiency(AGN / AEASGD, training accuracy, mean over %d seed(s)) thesis(0: not in its table)" % len(sb or [1]), grid)
aea = next(iter(runs("h3b-aeasgd-").values()), {})
tcells = [c for c in sorted(cells1) if c in THESIS_TE]
ours3b = "not run"
if total:
    ours3b = "AGN ahead in %d of %d configurations (%.0f%%); grid n x lambda in %s x %s%s" % (
        wins, total, 100.0 * wins / total, sorted({c[0] for c in cells1}), sorted({c[1] for c in cells1}),
        seeds_txt(sb, ": AGN ahead in %s" % ", ".join("%d of %d" % (m["wins"], m["total"]) for m in mb or [])))
    if tcells:
        ours3b += ("; beside the thesis' table on the same %d cells (AGN ahead in %d of them): ours (thesis) %s; "
                   "the same side of 1 in %d of %d" % (
            len(tcells), sum(1 for c in tcells if THESIS_TE[c] > 1),
            ", ".join("n%d/l%d %.3f (%.3f)" % (c[0], c[1], g[2], THESIS_TE[c]) for c in tcells for g in grid if (g[0], g[1]) == c),
            sum(1 for g in grid if (g[0], g[1]) in THESIS_TE and (g[2] > 1) == (g[3] > 1)), len(tcells)))
DS3B = DS3 + ("; temporal efficiency on the center's training accuracy (the first %s training examples), simulated time; "
              "AGN with Adam lr 1e-3, AEASGD with %s workers lr 1e-3 and alpha %s (the thesis' rho 5 x learning_rate 0.01)" % (
                  NTEST, aea.get("worker_opt", "?"), "%.3g" % aea["alpha"] if "alpha" in aea else "?"))
row("H3 AGN vs AEASGD", "AGN ahead of asynchronous EASGD in 69.73% of the (n, lambda) configurations (temporal efficiency); "
    "on our 4 x 4 grid the thesis' own table gives 10 of 16 = 62.5%", ours3b, DS3B, SIM,
    V.claim("H3b", mb if total else None, seeds=sb if total else None, mode=SIM, data_set=DS3B,
            plot="plots/out/hermans-efficiency.png"))

# ---- H3c: AGN alone vs ADAG at n = 30 ----------------------------------------------------------
# The thesis' Fig. 4.4 (issue 45): AGN's center shows divergent behaviour in the initial phase and
# then stabilizes; with ADAG, in the same conditions, the divergence is absent and it reaches
# convergence in fewer updates. Per run, from the center's training loss at the evaluations (the
# first NTEST training examples): loss0 at step 0; early_max, the worst loss after step 0 in the
# first EARLY of the planned epochs (shown); rise, the largest increase of the loss above its lowest
# value so far over the evaluations in that phase (step 0 included; a non-finite loss there: inf);
# final, the loss at the last evaluation; and per seed upd, the updates at the first evaluation where
# the loss is at or below the lowest loss both runs reach. The rules are in the TOML.
EARLY = 0.25
h3c = runs("h3c-")
def c_curve(name):
    """[(updates, epoch, train loss or inf)] of run `name`'s evaluations."""
    return [(d["updates"], d["epoch"], float(d["train_loss"]) if d.get("train_loss") is not None else float("inf"))
            for d in evals(name)]
def early(name):
    """(loss at step 0, worst loss after step 0 in the first EARLY of the run, largest rise above the best
    so far in that phase) of run `name`; None without the evaluations."""
    ev = c_curve(name)
    ep = float(EPOCHS)
    start = [l for u, e, l in ev if u == 0]
    phase = [l for u, e, l in ev if 0 < u and e <= EARLY * ep + 1e-9]
    if not start or not phase:
        return None
    best, rise = start[0], 0.0
    for l in phase:
        rise = max(rise, l - best) if l == l else float("inf")
        best = min(best, l)
    return start[0], max(phase), rise
def c_desc(k):
    s = h3c[k]; e = early(k)
    return "%s: %s, test err %.3f%s" % (s["algo"], "diverged at commit %s" % s.get("diverged_at") if s["diverged"] else "completed",
                                       s["test_err"], "; worst train loss in the first %d%% %.3f (start %.3f, largest rise above "
                                       "the best so far %.3f)" % (100 * EARLY, e[1], e[0], e[2]) if e else "")
agn = [k for k in h3c if "-agn-" in k]; adag = [k for k in h3c if "-adag-" in k]
n3 = h3c[agn[0]]["workers"] if agn else "?"
h3c_s = {sd: runs("h3c-", sd) for sd in SEEDS}
def c_metrics(sd):
    """Seed sd's H3c metrics (both runs: the ADAG rows compare with AGN in the same seed), or None."""
    if not agn or not adag or agn[0] not in h3c_s[sd] or adag[0] not in h3c_s[sd]:
        return None
    m, curves = {}, {}
    for key, k in (("agn", agn[0]), ("adag", adag[0])):
        e = early(k + sfx(sd)); c = c_curve(k + sfx(sd))
        if not e or not c:
            return None
        curves[key] = c
        final = float("inf") if h3c_s[sd][k].get("diverged") else c[-1][2]   # a run stopped for divergence: inf
        m.update({key + "_loss0": e[0], key + "_early_max": e[1], key + "_rise": e[2], key + "_final": final})
    both = max(min(l for _, _, l in curves[key]) for key in curves)   # the lowest loss both runs reach
    for key, c in curves.items():
        m[key + "_upd"] = next((float(u) for u, _, l in c if l <= both), float("inf"))
    return m
mc, sc = per_seed(c_metrics)
for cid, lab, keys in (("H3c-agn", "AGN alone diverges early", ("agn_rise",)),
                       ("H3c-adag", "ADAG: AGN's early divergence absent", ("adag_rise", "agn_rise")),
                       ("H3c-adag-faster", "ADAG converges in fewer updates than AGN", ("adag_upd", "agn_upd"))):
    spread = ""
    if sc and len(sc) > 1:
        spread = seeds_txt(sc, ": " + "; ".join("%s %s" % (k, ", ".join("%.4g" % m[k] for m in mc)) for k in keys))
    row("H3c at n=%s: %s" % (n3, lab), "with n = 30, AGN alone diverges early (then stabilizes); with ADAG the divergence is "
        "absent and it converges in fewer updates (Fig. 4.4)",
        ("; ".join(c_desc(k) for k in sorted(h3c)) + spread) or "not run",
        DS3 + "; lambda = (n + 4) / 2, gamma 1e-4; early phase: the first %d%% of the epochs, the center's train loss on the "
              "first %s training examples" % (100 * EARLY, NTEST), SIM,
        V.claim(cid, [dict(m) for m in mc] if mc else None, seeds=sc, mode=SIM, data_set=DS3, label="H3c at n=%s: %s" % (n3, lab)))
mid = sorted(grid, key=lambda g: (abs(g[0] - 20), abs(g[1] - 20)))[:1]   # the thesis' example n = 20, lambda = 20
pick = list(h3c) + list(h3a) + (["h3b-agn-n%d-l%d" % (mid[0][0], mid[0][1]), "h3b-aeasgd-n%d-l%d" % (mid[0][0], mid[0][1])] if mid else [])
for k in pick:
    ev = evals(k)
    if ev:
        dat("curve-%s.dat" % k, "time_s test_acc epoch train_acc(the center, first %s training examples) train_loss" % NTEST,
            [[float(d["time_s"]), 1.0 - (d["test_err"] if d["test_err"] is not None else 1.0), float(d["epoch"]),
              1.0 - (d["train_err"] if d.get("train_err") is not None else 1.0),
              float(d["train_loss"]) if d.get("train_loss") is not None else float("nan")] for d in ev])
with open(os.path.join(RES, "curves.txt"), "w") as f:
    f.write(" ".join(sorted(os.path.basename(p)[6:-4] for p in glob.glob(os.path.join(RES, "curve-*.dat")))) + "\n")
row("H3 ADAG scaling", "ADAG's scaling 1 / (gamma^-1 e^2 + 1) (eq. 4.7), gamma usually 1e-4; Fig. 4.3 shows it measured for three learning rates", "plotted: 1 / (gamma^-1 e^2 + 1) against the per-weight distance e",
    "-", "analytic", V.claim("H3-scaling", {}, mode="analytic", plot="plots/out/hermans-adag-scaling.png"))

# ---- H3d: DynSGD, lambda = 1 against lambda = L (the thesis' Ch. 2, Figs. 2.14 / 2.15) -------------
# Per seed, from the three runs: t (the run's simulated time), acc (the center's training accuracy on
# the first NTEST training examples at the run's last evaluation, i.e. its end), dd (the largest fall
# of that accuracy below its best so far over the evaluations after the first EARLY_D of the run's
# epochs) and acc40_t1 (the longer lambda = L run's accuracy at the lambda = 1 run's end time t1,
# linear between evaluations, or at its own end where that comes first). A run that diverged counts
# as accuracy 0 from its last evaluation on.
EARLY_D = 0.25
def d_curve(name):
    """[(time_s, epoch, train acc, test acc)] of H3d run `name` (with the seed's suffix), plus a 0 at the
    end of a run that diverged."""
    ok = lambda x: x is not None and x == x and abs(x) < 1e300
    pts = [(float(e["time_s"]), float(e["epoch"]), 1.0 - e["train_err"] if ok(e.get("train_err")) else 0.0,
            1.0 - e["test_err"] if ok(e.get("test_err")) else 0.0) for e in evals(name, RUNS_H3D)]
    s = summary(name, RUNS_H3D)
    if s and s.get("diverged") and pts:
        pts.append((max(float(s["time_s"]), pts[-1][0]), pts[-1][1], 0.0, 0.0))
    return pts
def d_fall(pts):
    """The largest fall of the training accuracy below its best so far after the first EARLY_D of the run."""
    if not pts:
        return None
    last = max(p[1] for p in pts)
    best, dd = -1.0, 0.0
    for p in pts:
        if p[1] + 1e-9 >= EARLY_D * last:
            best = max(best, p[2]); dd = max(dd, best - p[2])
    return dd
def d_at(pts, t):
    """Training accuracy at time t (linear between evaluations; the last one past the end)."""
    prev = None
    for p in pts:
        if p[0] >= t:
            if prev is None or p[0] == prev[0]:
                return p[2]
            return prev[2] + (p[2] - prev[2]) * (t - prev[0]) / (p[0] - prev[0])
        prev = p
    return pts[-1][2] if pts else None
def d_runs(sd):
    """{'l1'|'lL'|'fair': (name with the seed's suffix, summary), 'E': epochs, 'E_fair': the longer run's} of
    seed sd's H3d runs (h3d-nN-l1-eE, h3d-nN-lL-eE, h3d-nN-lL-eE_fair), or None."""
    got = {}
    for k, s in runs("h3d-", sd, RUNS_H3D).items():
        m = re.match(r"^h3d-n(\d+)-l(\d+)-e([0-9.]+)$", k)
        if m:
            got[(int(m.group(2)), float(m.group(3)))] = (k + sfx(sd), s)
    one = [c for c in got if c[0] == 1]
    more = sorted(c for c in got if c[0] > 1 and one and c[0] == max(got)[0])
    if len(got) != 3 or len(one) != 1 or len(more) != 2 or more[0][1] != one[0][1] or more[1][1] <= one[0][1]:
        return None   # not the three runs run.sh makes (lambda = 1 and L on E epochs, L on more)
    return {"l1": got[one[0]], "lL": got[more[0]], "fair": got[more[1]], "E": one[0][1], "E_fair": more[1][1]}
def d_metrics(sd):
    got = d_runs(sd)
    if not got:
        return None
    c = {k: d_curve(got[k][0]) for k in ("l1", "lL", "fair")}
    if not all(c.values()):
        return None
    t1, tl, tf = (float(got[k][1]["time_s"]) for k in ("l1", "lL", "fair"))
    return {"t1": t1, "t10": tl, "t40": tf, "acc1": c["l1"][-1][2], "acc10": c["lL"][-1][2], "acc40": c["fair"][-1][2],
            "dd1": d_fall(c["l1"]), "dd10": d_fall(c["lL"]), "acc40_t1": d_at(c["fair"], min(t1, tf))}
md, sdd = per_seed(d_metrics)
g1 = d_runs(1) or (d_runs(sdd[0]) if sdd else None)
if g1 and md:
    S = {k: g1[k][1] for k in ("l1", "lL", "fair")}
    nD, lD, eD, eF = S["lL"]["workers"], S["lL"]["lambda"], g1["E"], g1["E_fair"]
    m1 = md[0]
    DSD = "%s%s, net %s, DynSGD (%s workers), n = %d, m = %s, %.3g and %.3g epochs split over the workers; %d evaluations per run" % (
        DATA, " (subset, QUICK)" if QUICK else "", S["l1"].get("net_spec", "?"), S["l1"].get("worker_opt", "?"), nD, S["l1"].get("batch", "?"),
        eD, eF, len(evals(g1["l1"][0], RUNS_H3D)) - 1)
    oursd = ("seed %d: lambda=1, %.3g epochs: %.3g s, train acc %.3f (largest fall after the first %d%%: %.3f); "
             "lambda=%d, %.3g epochs: %.3g s (%.2f of lambda=1's), train acc %.3f (fall %.3f); "
             "lambda=%d, %.3g epochs: %.3g s, train acc %.3f (%.3f at %s)") % (
        sdd[0], eD, m1["t1"], m1["acc1"], 100 * EARLY_D, m1["dd1"], lD, eD, m1["t10"], m1["t10"] / m1["t1"], m1["acc10"], m1["dd10"],
        lD, eF, m1["t40"], m1["acc40"], m1["acc40_t1"], "lambda=1's end time" if m1["t1"] < m1["t40"] else "its own end, before lambda=1's")
    if len(sdd) > 1:
        oursd += "; %d seeds: acc lambda=1 %s, lambda=%d %s, %d epochs at equal time %s; fall lambda=1 %s, lambda=%d %s; time ratio %s" % (
            len(sdd), "/".join("%.3f" % m["acc1"] for m in md), lD, "/".join("%.3f" % m["acc10"] for m in md), eF,
            "/".join("%.3f" % m["acc40_t1"] for m in md), "/".join("%.3f" % m["dd1"] for m in md), lD,
            "/".join("%.3f" % m["dd10"] for m in md), "/".join("%.2f" % (m["t10"] / m["t1"]) for m in md))
    # the plot's data: one file per configuration, one block per seed (seed 1 first), and the panel titles
    for key, fn in (("l1", "h3d-l1.dat"), ("lL", "h3d-l10.dat"), ("fair", "h3d-fair.dat")):
        with open(os.path.join(RES, fn), "w") as f:
            f.write("# time_s train_acc(the center, first %s training examples) test_acc epoch; one block per seed (%s)\n" % (
                NTEST, ", ".join(map(str, sdd))))
            for i, sd in enumerate(sdd):
                f.write(("\n\n" if i else "") + "# seed %d\n" % sd)
                for p in d_curve((d_runs(sd) or {})[key][0]):
                    f.write("%.6g %.6g %.6g %.6g\n" % (p[0], p[2], p[3], p[1]))
    with open(os.path.join(RES, "h3d-panels.txt"), "w") as f:
        f.write("(a) lambda = 1, %.3g epochs (thesis Fig. 2.14)\n(b) lambda = %d, %.3g epochs (Fig. 2.15 a)\n"
                "(c) lambda = %d, %.3g epochs (Fig. 2.15 b)\nDynSGD, n = %d, %s: the center's accuracy (training: the first %s "
                "training examples; SIMULATED cluster, %s; seed %d bold, %d seed(s))\n" % (
                    eD, lD, eD, lD, eF, nD, S["l1"].get("net_spec", "?"), NTEST, DATA, sdd[0], len(sdd)))
else:
    DSD, oursd, nD, lD, eF = DS3, "not run", "?", "L", "E"
def t_metrics(sd):
    """H3d-l10 / H3d-unstable metrics of seed sd on the thesis' own net (run.sh's h3dt-nN-l1-eE and
    h3dt-nN-lL-eE pair), or None."""
    got = {}
    for k, s in runs("h3dt-", sd, RUNS_H3D).items():
        m = re.match(r"^h3dt-n(\d+)-l(\d+)-e([0-9.]+)$", k)
        if m:
            got[int(m.group(2))] = (k + sfx(sd), s)
    if len(got) != 2 or 1 not in got:
        return None
    lL = max(got)
    c1, cL = d_curve(got[1][0]), d_curve(got[lL][0])
    if not c1 or not cL:
        return None
    return {"t1": float(got[1][1]["time_s"]), "t10": float(got[lL][1]["time_s"]), "acc1": c1[-1][2], "acc10": cL[-1][2],
            "dd1": d_fall(c1), "dd10": d_fall(cL), "_net": got[1][1].get("net_spec") or got[1][1].get("net", "?"), "_lL": lL}
mt, sdt = per_seed(t_metrics)
if mt:
    m1t = mt[0]
    ourst = ("seed %d: lambda=1: %.3g s, train acc %.3f (largest fall after the first %d%%: %.3f); lambda=%d: %.3g s (%.2f of lambda=1's), "
             "train acc %.3f (fall %.3f)") % (sdt[0], m1t["t1"], m1t["acc1"], 100 * EARLY_D, m1t["dd1"], m1t["_lL"], m1t["t10"],
                                             m1t["t10"] / m1t["t1"], m1t["acc10"], m1t["dd10"])
    if len(sdt) > 1:
        ourst += "; %d seeds: acc lambda=1 %s, lambda=%d %s; fall lambda=1 %s, lambda=%d %s; time ratio %s" % (
            len(sdt), "/".join("%.3f" % m["acc1"] for m in mt), m1t["_lL"], "/".join("%.3f" % m["acc10"] for m in mt),
            "/".join("%.3f" % m["dd1"] for m in mt), m1t["_lL"], "/".join("%.3f" % m["dd10"] for m in mt),
            "/".join("%.2f" % (m["t10"] / m["t1"]) for m in mt))
    DST = DSD.replace(S["l1"].get("net_spec", "?"), m1t["_net"]) if g1 and md else "net %s" % m1t["_net"]
    DST = DST.replace(" and %.3g epochs" % eF, "") if g1 and md else DST
    mt = [{k: v for k, v in m.items() if not k.startswith("_")} for m in mt]
else:
    ourst, DST = "not run", DS3
# H3d-l10 and H3d-unstable are judged on the thesis' net (h3dt); H3d-fair, and the same pair on the
# 1/8-width net shown beside (H3d-eighth), on the 1/8-width runs (h3d)
for cid, thesis, lab, o, d, m, sds in (
        ("H3d-l10", "n = 20, 5 epochs: lambda = 10 takes ~1/10 of lambda = 1's time but reaches ~90% training accuracy against 98.1% (Figs. 2.14, 2.15 a)",
         "lambda=%s on the same epochs is faster but ends lower than lambda=1" % lD, ourst, DST, mt, sdt),
        ("H3d-unstable", "at lambda = 10 the larger commits destabilise the center (its accuracy falls from ~0.92 to ~0.59 mid-run); "
                         "at lambda = 1 DynSGD copes with the staleness (Figs. 2.14, 2.15 a)",
         "lambda=%s destabilises the center, lambda=1 does not" % lD, ourst, DST, mt, sdt),
        ("H3d-eighth", "the same comparison (Figs. 2.14, 2.15 a), on the thesis' net",
         "lambda=1 vs %s on the 1/8-width net (shown)" % lD, oursd, DSD, md, sdd),
        ("H3d-fair", "lambda = 10 on 40 epochs: 99.7% training accuracy in about lambda = 1's time, against 98.1% (Fig. 2.15 b)",
         "lambda=%s on %s epochs ahead of lambda=1 at equal time" % (lD, eF if isinstance(eF, str) else "%.3g" % eF), oursd, DSD, md, sdd)):
    row("H3d DynSGD n=%s: %s" % (nD, lab), thesis, o, d, SIM,
        V.claim(cid, m, seeds=sds, mode=SIM, data_set=d, label="H3d DynSGD n=%s: %s" % (nD, lab), plot="plots/out/hermans-dynsgd.png"))

# ---- Booth ---------------------------------------------------------------------------------------
b = lines(os.path.join(RES, "booth.jsonl"))
row("Booth", "40 asynchronous workers on Booth from (90, 90), lr 0.01 (the thesis' script: asynchronous EASGD, rho 100)",
    "; ".join("%s: %s" % (d["rule"], "diverged" if d.get("diverged") or d["final_f"] is None else "f = %.3g" % d["final_f"]) for d in b) or "not run",
    "Booth function", "deterministic host simulation (round-robin)",
    V.claim("Booth", {"easgd_final_f": next((d.get("final_f") for d in b if d["rule"] == "easgd"), None)} if b else None,
            mode="deterministic host simulation (round-robin)", data_set="Booth function"))

# ---- server throughput ---------------------------------------------------------------------------
tp = [d for d in lines(os.path.join(RES, "throughput.jsonl")) if d.get("event") == "summary"]
data, parts = [], []
for d in tp:
    n = d["workers"]; c = d["master_clock"]; t = d["time_s"]
    cps = c / t if t > 0 else float("nan")
    # each commit moves the model twice: the worker's Delta in, the center back (PUSH_PULL)
    data.append([d["net"], n, cps, cps * d.get("params", 0) * 4 * 2 / 1e6])
for net in sorted({d[0] for d in data}):
    pts = sorted((r[1], r[2], r[3]) for r in data if r[0] == net)
    dat("throughput-%s.dat" % net, "workers commits_per_s MB_per_s", [[n, v, m] for n, v, m in pts])
    if pts:
        parts.append("%s: %.0f commits/s = %.0f MB/s at n = %d (%.0f commits/s at n = %d)" % (
            net, pts[-1][1], pts[-1][2], pts[-1][0], pts[0][1], pts[0][0]))
row("server throughput", "a single parameter server is a significant bottleneck, but sufficed (dist-keras, sec. 5.1.1)", "; ".join(parts) or "not run",
    "commits of the whole model (4 bytes x params each way)", "real (MPI ranks on this machine's 2 cores)",
    V.claim("throughput", {"max_n": max(r[1] for r in data)} if data else None, mode="real (MPI ranks on this machine's 2 cores)",
            flags=["served every n up to %d" % max(r[1] for r in data)] if data else []))

V.write()
for e in V.errors:   # a malformed results file: a visible row, not a silent skip
    row("error", "-", e, "-", "-", "no results (%s)" % e)
with open(os.path.join(RES, "rows.tsv"), "w") as f:
    for r in rows:
        f.write("\t".join(str(x) for x in r) + "\n")
