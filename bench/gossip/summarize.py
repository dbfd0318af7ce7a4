#!/usr/bin/env python3
"""bench/gossip/summarize.py RES — reads the runs of bench/gossip/run.sh (RES/setting.json names
them) and writes the .dat files plots/gossip-*.gp read, and rows.tsv (id, paper, ours, data set,
real/simulated, verdict) for the table. This script only derives metrics from the runs; every
verdict comes from bench/verdict.py, which applies the rules of bench/claims/gossip.toml (and
writes verdicts.json / verdicts.md beside rows.tsv). Stdlib only.

"Learns faster" is time to accuracy: the simulated time at which the nodes' mean test accuracy
first reaches each of TARGETS (fractions of the lowest final accuracy among the runs compared),
linearly interpolated between evaluation points."""
import csv
import json
import math
import os
import sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip().splitlines()[0].replace("RES", "RESULTS_DIR"))
    sys.exit(0 if len(sys.argv) == 2 else 2)
RES = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402
try:
    S = json.load(open(os.path.join(RES, "setting.json")))
except (OSError, ValueError) as e:
    sys.exit("summarize.py: %s: %s" % (os.path.join(RES, "setting.json"), e))
RUNS = S["runs"]
QUICK = bool(S["quick"])
K = S["K"]
MIB = S["model_mib_paper"]
IDLE_N = 4 * 5e-3 + MIB * 2**20 * 8 / 1e9      # an uncongested pull: request + 54 MiB reply, 1 Gb/s, 2 x 2 x 5 ms
IDLE_W = 4 * 5e-3 + MIB * 2**20 * 8 / 10e9
DS = "%s%s, net %s, batch %d, plain SGD lr %g" % (S["data"], " (%d-example subset, QUICK)" % S["train"] if QUICK else "",
                                                   S["net"], S["batch"], S["lr"])
CASE_B = ("SIMULATED (SimGrid, real numerics), case (b): K=%d, transfers timed as the paper's %d MiB model "
          "(links scaled by %.4g), G = %g s per step" % (K, MIB, S["bw_scale"], S["G_b"]))
CASE_A = ("SIMULATED (SimGrid, real numerics), case (a): K=%d, our %d-byte model over 1/10 Gb/s, device rate %.4g GFLOP/s "
          "calibrated on this machine" % (K, S["model_bytes"], S["rate_a_gflops"]))
rows = []
V = verdict.Session("gossip", RES, quick=QUICK)
TARGETS = (0.90, 0.95, 0.98)


def row(i, paper, ours, ds, mode, verdict):
    V.describe(i, ours, ds, mode)
    rows.append((i, paper, ours, ds, mode, verdict))


def lines(path):
    """path's JSON lines through the engine's one loader (verdict.read_jsonl: a torn last line is
    skipped with a warning); a malformed file gives [] here and an error row from the engine."""
    try:
        return verdict.read_jsonl(path)
    except verdict.VerdictError as e:
        print("summarize.py: %s" % e, file=sys.stderr)
        return []


def wait_ratio(s, i):
    """Node i's mean wait per pull it serves, above the uncongested pull time, over that time
    (> 1: congested, the measured side of every congestion rule); 0 for a node that served none."""
    c = s["C_serve_s"][i]
    return s["wait_at_node_s"][i] / c if c > 0 else 0.0


def wait_ratio_max(s):
    """The largest wait_ratio over the run's nodes (> 1: some node congested)."""
    return max([wait_ratio(s, i) for i in range(s["nodes"])] or [0.0])


def parse_rate(tok):
    """'41.2673Mbps' -> bytes/s ('bps' bits, 'Bps' bytes; k/M/G prefixes; a bare number is Gb/s)."""
    import re
    m = re.match(r"^([0-9.eE+-]+)\s*([kKMG]?)(bps|Bps)?$", tok)
    if not m:
        raise ValueError("bad bandwidth %r" % tok)
    v = float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    if m.group(3) is None:
        v = float(m.group(1)) * 1e9
    return v / 8 if m.group(3) in (None, "bps") else v


def platform_links(spec, K):
    """links:k=K,bw=A*n+B*m,lat=5ms -> (per-node bandwidth in bytes/s, latency in s)."""
    kv = dict(x.split("=", 1) for x in spec.split(":", 1)[1].split(",") if "=" in x)
    bws = []
    for part in kv["bw"].split("+"):
        tok, _, cnt = part.partition("*")
        bws += [parse_rate(tok)] * (int(cnt) if cnt else 1)
    if len(bws) == 1:
        bws *= K
    lat = kv.get("lat", "5ms")
    lat_s = float(lat[:-2]) * 1e-3 if lat.endswith("ms") else float(lat[:-2]) * 1e-6 if lat.endswith("us") else float(lat.rstrip("s"))
    return bws, lat_s


def reanalyze(s):
    """Eq. (1)/(2) and the measured congestion from the per-pair pulls of the summary and the
    platform's uncongested pull times (the issue's definition: waiting per transfer above the
    uncongested transfer time). idle(j pulls from i) = request + reply over the route j-sw-i at
    the narrower of the two node links, 2 x lat each way. Overwrites the summary's own figures
    (which estimate the uncongested time by each pair's shortest pull)."""
    K = s["nodes"]
    if K < 2 or "pair_pulls" not in s or not s.get("platform", "").startswith("links:"):
        return s
    bw, lat = platform_links(s["platform"], K)
    # a request is the op and the requester's time table (1 + 2K floats, src/algo/gossip.c TAB);
    # the reply is the model and the peer's table (issue 32: this read (1 + 4K) floats before)
    req, rep = (1 + 2 * K) * 4, s["model_bytes"] + 8 * K
    P, M = s["pair_pulls"], s["pair_mean_s"]
    idle = lambda j, i: 4 * lat + req / min(bw[j], bw[i]) + rep / min(bw[j], bw[i])
    C = [0.0] * K; W = [0.0] * K; Cr = [0.0] * K
    for i in range(K):
        n = sum(P[j * K + i] for j in range(K))
        if n:
            C[i] = sum(P[j * K + i] * idle(j, i) for j in range(K)) / n
            W[i] = sum(P[j * K + i] * (M[j * K + i] - idle(j, i)) for j in range(K)) / n
        m = sum(P[i * K + k] for k in range(K))
        if m:
            Cr[i] = sum(P[i * K + k] * idle(i, k) for k in range(K)) / m
    G, T = s["G_s"], s["T"]
    lhs = [(T * (sum(G) - G[i]) + (sum(Cr) - Cr[i])) / (K - 1) for i in range(K)]
    pred = [int(C[i] > 0 and lhs[i] < C[i]) for i in range(K)]
    meas = [int(C[i] > 0 and W[i] > C[i]) for i in range(K)]
    tstar = [((K - 1) * C[i] - (sum(Cr) - Cr[i])) / (sum(G) - G[i]) if sum(G) - G[i] > 0 else 0 for i in range(K)]
    s.update({"C_serve_s": C, "C_transfer_s": Cr, "wait_at_node_s": W, "eq1_lhs_s": lhs, "eq1_congested": pred,
              "measured_congested": meas, "eq2_T_star": tstar, "measured_any_congested": int(any(meas)),
              "eq1_any_congested": int(any(pred)), "eq1_disagreements": sum(a != b for a, b in zip(pred, meas))})
    return s


RUN = {}   # name -> (summary, evals)
for f in sorted(os.listdir(RUNS)):
    if f.endswith(".jsonl"):
        d = lines(os.path.join(RUNS, f))
        s = [x for x in d if x.get("event") == "summary"]
        if s:
            RUN[f[:-6]] = (reanalyze(s[-1]), [x for x in d if x.get("event") == "eval"])


def have(*names):
    return all(n in RUN for n in names)


def summ(n):
    return RUN[n][0]


def rtime(n):
    """The run's simulated time: the mean over the nodes of the time each finished its steps (every
    node evaluates at its last step, so this is the x of the learning curve's last point; the
    slowest node's finish is the last eval's time_max_s)."""
    ev = RUN[n][1]
    return ev[-1]["time_s"] if ev else summ(n)["time_s"]


def acc(n):
    return 1.0 - summ(n)["test_err"]


def curve(n):
    return [(e["time_s"], 1.0 - e["test_err"], e["epochs"]) for e in RUN[n][1]]


def time_to(n, target):
    """Simulated time at which the mean test accuracy first reaches target (linear interpolation
    between evaluation points; from (0, 0.1) before the first one); inf if never."""
    prev = (0.0, 0.1)
    for t, a, _ in curve(n):
        if a >= target:
            t0, a0 = prev
            return t0 + (t - t0) * (target - a0) / (a - a0) if a > a0 else t
        prev = (t, a)
    return math.inf


def target_of(names, frac=0.95):
    """A common target: frac of the lowest final accuracy among the runs compared (so that every
    run reaches it)."""
    return frac * min(acc(n) for n in names)


def targets_of(names):
    return [target_of(names, f) for f in TARGETS]


def dat(name, header, data):
    with open(os.path.join(RES, name), "w") as f:
        f.write("# " + header + "\n")
        for r in data:
            f.write(" ".join("%.6g" % v if isinstance(v, float) else str(v) for v in r) + "\n")


def curves_dat(names, fname):
    with open(os.path.join(RES, fname), "w") as f:
        f.write("# one block per run (gnuplot index), in the order: %s; columns time_s mean_test_acc epochs\n" % " ".join(names))
        for n in names:
            f.write("# %s\n" % n)
            for t, a, e in curve(n) if n in RUN else []:
                f.write("%.6g %.6g %.6g\n" % (t, a, e))
            f.write("\n\n")


def timeline(n):
    p = os.path.join(RUNS, n + ".timeline.csv")
    try:
        return [(int(r["node"]), int(r["peer"]), float(r["start_s"]), float(r["taken_s"]), float(r["end_s"])) for r in csv.DictReader(open(p))]
    except (OSError, KeyError, ValueError):
        return []


def wides(prefix):
    return sorted(int(n[len(prefix):]) for n in RUN if n.startswith(prefix) and n[len(prefix):].isdigit())


def fmt_t(x):
    return "never" if math.isinf(x) else "%.1f s" % x


# ---- case (b)'s compute time: the interval of G for which eq. (1) predicts congestion at T = 1 and
# none at T = 4 on the narrow nodes of the 6-wide setting, from the transfer and serve times measured
# in the uncongested run (T = 4): congestion at T <=> T G + mean_j!=i C_j < C_i.
G_LO = G_HI = None
if "g2-w6" in RUN:
    s = summ("g2-w6"); Cx, Cs = s["C_transfer_s"], s["C_serve_s"]
    lo, hi = 0.0, math.inf
    for i in range(6, K):
        m = (sum(Cx) - Cx[i]) / (K - 1)
        hi = min(hi, Cs[i] - m); lo = max(lo, (Cs[i] - m) / 4)
    G_LO, G_HI = lo, hi

# ---- G1: congestion on the narrow nodes at T = 1 (6 wide + 2 narrow) ----------------------------------
tl1 = timeline("g1-w6") if "g1-w6" in RUN else []
tl4 = timeline("g2-w6") if "g2-w6" in RUN else []
for nm, tl in (("timeline-T1.dat", tl1), ("timeline-T4.dat", tl4)):
    dat(nm, "requester start_s end_s served_by_narrow(1) peer (every pull; case (b))",
        [[n, st, en, 1 if p >= 6 else 0, p] for n, p, st, _, en in tl])
if tl1:
    nar = [en - st for n, p, st, _, en in tl1 if p >= 6]
    wid = [en - st for n, p, st, _, en in tl1 if p < 6 and n < 6]
    s1 = summ("g1-w6")
    cong = [i for i in range(K) if s1["measured_congested"][i]]
    mean_n = sum(nar) / max(1, len(nar))
    row("G1 congestion (T=1, 6 wide)",
        "narrow nodes' transfers take far longer than one 54 MiB model over 1 Gb/s (~0.45 s): congestion (Fig. 1a)",
        "pulls served by the narrow nodes: mean %.2f s, max %.2f s (uncongested %.3f s); wide-to-wide pulls mean %.3f s (uncongested %.3f s); "
        "measured congested (waiting per pull served above the uncongested pull time): nodes %s; eq. (1) says %s"
        % (mean_n, max(nar or [0]), IDLE_N, sum(wid) / max(1, len(wid)), IDLE_W, cong or "none",
           [i for i in range(K) if s1["eq1_congested"][i]] or "none"),
        DS, CASE_B, V.claim("G1-congestion", {"mean_narrow_s": mean_n, "idle_narrow_s": IDLE_N,
                                              "narrow_wait_ratio": [wait_ratio(s1, i) for i in range(6, K)]},
                            mode=CASE_B, data_set=DS))
else:
    row("G1 congestion (T=1, 6 wide)", "narrow nodes' transfers take far longer than ~0.45 s", "not run", "-", "-", V.claim("G1-congestion"))

# ---- G1/G2: learning curves vs the number of wide nodes -------------------------------------------------
w1, w2 = wides("g1-w"), wides("g2-w")
curves_dat(["g1-w%d" % w for w in w1], "curves-T1.dat")
curves_dat(["g2-w%d" % w for w in w2], "curves-T4.dat")
with open(os.path.join(RES, "wides.txt"), "w") as f:
    f.write(" ".join(map(str, w1)) + "\n" + " ".join(map(str, w2)) + "\n")
def sname(base, seed):
    """The run name of seed `seed` (bench/gossip/run.sh: seed 1 plain, others "-sS")."""
    return base if seed == 1 else "%s-s%d" % (base, seed)


def g12(seed):
    """G1/G2 metrics of one seed (None when a run is missing): "learns faster" = time to accuracy at
    TARGETS (fractions of the lowest final accuracy of the runs compared); the run's total time for
    its fixed number of steps and the single 95% target are kept for the rules' history."""
    n1 = {w: sname("g1-w%d" % w, seed) for w in w1}
    n4 = {w: sname("g2-w%d" % w, seed) for w in w2}
    if not have(*n1.values(), *n4.values()):
        return None
    allr = list(n1.values()) + list(n4.values())
    d = {"tgts": targets_of(allr), "tgt": target_of(allr)}
    d["t1"] = {w: rtime(n1[w]) for w in w1}
    d["t4"] = {w: rtime(n4[w]) for w in w2}
    d["tt1"] = {w: [time_to(n1[w], x) for x in d["tgts"]] for w in w1}
    d["tt4"] = {w: [time_to(n4[w], x) for x in d["tgts"]] for w in w2}
    sp = lambda a, b: a / b if b and not math.isinf(b) else 0.0
    top = max(w for w in w1 if w < K) if any(w < K for w in w1) else None
    d["m1"] = None
    if top is not None and 0 in d["t1"] and top in d["t4"] and 0 in d["t4"]:
        d["m1"] = {"sp1_tta": [sp(d["tt1"][0][i], d["tt1"][top][i]) for i in range(len(TARGETS))],
                   "sp4_tta": [sp(d["tt4"][0][i], d["tt4"][top][i]) for i in range(len(TARGETS))],
                   "sp1_run": d["t1"][0] / d["t1"][top], "sp4_run": d["t4"][0] / d["t4"][top],
                   "sp1_t95": sp(time_to(n1[0], d["tgt"]), time_to(n1[top], d["tgt"])),
                   "sp4_t95": sp(time_to(n4[0], d["tgt"]), time_to(n4[top], d["tgt"]))}
    d["m2"] = {"tta": [[d["tt4"][w][i] for w in w2] for i in range(len(TARGETS))], "run_time": [d["t4"][w] for w in w2],
               "tta95": [time_to(n4[w], d["tgt"]) for w in w2]}
    d["top"] = top
    return d


SEEDS = [int(x) for x in S.get("seeds", [1])]
if w1 and w2 and g12(1):
    per = [(sd, g12(sd)) for sd in SEEDS]
    per = [(sd, d) for sd, d in per if d]
    d = per[0][1]
    tgts, t1, t4, tt1, tt4, top, m1 = d["tgts"], d["t1"], d["t4"], d["tt1"], d["tt4"], d["top"], d["m1"]
    desc1 = ", ".join("%d wide %s (run %s)" % (w, "/".join(fmt_t(x) for x in tt1[w]), fmt_t(t1[w])) for w in w1)
    desc4 = ", ".join("%d wide %s (run %s)" % (w, "/".join(fmt_t(x) for x in tt4[w]), fmt_t(t4[w])) for w in w2)
    fin1 = ", ".join("%.3f" % acc("g1-w%d" % w) for w in w1)
    tdesc = "/".join("%.1f%%" % (100 * x) for x in tgts)
    seeds_txt = " (seed 1 shown; %d seeds)" % len(per) if len(per) > 1 else ""
    spd = ("; speed-up 0 -> %s wide to %s, T=1 vs T=4: %s" % (top, tdesc, ", ".join(
        "%.2fx vs %.2fx" % (a, b) for a, b in zip(m1["sp1_tta"], m1["sp4_tta"])))) if m1 else ""
    ok1 = [(sd, x["m1"]) for sd, x in per if x["m1"]]
    row("G1 learning curves (T=1, wide %s)" % "/".join(map(str, w1)),
        "adding wide nodes barely speeds learning while the narrow nodes congest (Fig. 1b)",
        "simulated time to %s mean test accuracy%s: %s; final accuracy %s%s" % (tdesc, seeds_txt, desc1, fin1, spd), DS, CASE_B,
        V.claim("G1-curves", [m for _, m in ok1] or None, seeds=[sd for sd, _ in ok1] or None, mode=CASE_B, data_set=DS,
                plot="plots/out/gossip-curves.png", why="no 0-wide or %s-wide run" % top))
    s4 = [summ("g2-w%d" % w) for w in w2]
    congr = [w for w, x in zip(w2, s4) if x["measured_any_congested"]]
    row("G2 T=4: no congestion (wide %s)" % "/".join(map(str, w2)), "T = 4 removes the congestion (Fig. 3a)",
        "measured congestion in %s" % ("no run" if not congr else "runs %s" % congr), DS, CASE_B,
        V.claim("G2-congestion", {"wait_ratio_max": [wait_ratio_max(x) for x in s4]}, mode=CASE_B, data_set=DS))
    row("G2 T=4: learns faster (wide %s)" % "/".join(map(str, w2)),
        "T = 4: then more wide nodes learn faster (Fig. 3b)",
        "simulated time to %s%s: %s; final accuracy %s" % (tdesc, seeds_txt, desc4, ", ".join("%.3f" % acc("g2-w%d" % w) for w in w2)),
        DS, CASE_B, V.claim("G2-faster", [x["m2"] for _, x in per], seeds=[sd for sd, _ in per],
                            mode=CASE_B, data_set=DS, plot="plots/out/gossip-curves.png"))
else:
    row("G1 learning curves", "adding wide nodes barely speeds learning", "not run", "-", "-", V.claim("G1-curves"))
    row("G2 T=4: no congestion", "T = 4 removes the congestion", "not run", "-", "-", V.claim("G2-congestion"))
    row("G2 T=4: learns faster", "more wide nodes learn faster", "not run", "-", "-", V.claim("G2-faster"))

# ---- G1 at the low end of eq. (1)'s interval of G: how the T = 1 penalty depends on compute time
def sens_m(seed):
    """G1-curves-sens metrics of one seed (None when a run is missing)."""
    sn = {k: sname("sens-%s" % k, seed) for k in ("t1-w0", "t1-w6", "t4-w0", "t4-w6")}
    if not have(*sn.values()):
        return None
    stg = targets_of(list(sn.values()))
    spx = lambda a, b, x: time_to(a, x) / time_to(b, x) if not math.isinf(time_to(b, x)) else 0.0
    return {"sp1_tta": [spx(sn["t1-w0"], sn["t1-w6"], x) for x in stg],
            "sp4_tta": [spx(sn["t4-w0"], sn["t4-w6"], x) for x in stg],
            "sp1_run": rtime(sn["t1-w0"]) / rtime(sn["t1-w6"]), "sp4_run": rtime(sn["t4-w0"]) / rtime(sn["t4-w6"]), "_stg": stg}


per_s = [(sd, sens_m(sd)) for sd in SEEDS]
per_s = [(sd, m) for sd, m in per_s if m]
if have("sens-t1-w0", "sens-t1-w6", "sens-t4-w0", "sens-t4-w6"):
    ms = sens_m(1)
    r1, r4, stg = ms["sp1_run"], ms["sp4_run"], ms["_stg"]
    c1 = summ("sens-t1-w6")
    row("G1 learning curves at G=%g s" % S["G_sens"],
        "adding wide nodes barely speeds learning while the narrow nodes congest (Fig. 1b)",
        "G = %g s per step (the low end of eq. (1)'s interval)%s: speed-up 0 -> 6 wide to %s: T=1 %s, T=4 %s; "
        "run time 0 -> 6 wide %.0f -> %.0f s at T=1 (%.2fx), %.0f -> %.0f s at T=4 (%.2fx); "
        "6 wide, T=1: narrow nodes wait %.2f / %.2f s against a %.2f s serve; final accuracy %.3f, %.3f, %.3f, %.3f"
        % (S["G_sens"], " (seed 1 shown; %d seeds)" % len(per_s) if len(per_s) > 1 else "",
           "/".join("%.1f%%" % (100 * x) for x in stg), "/".join("%.2fx" % x for x in ms["sp1_tta"]),
           "/".join("%.2fx" % x for x in ms["sp4_tta"]),
           rtime("sens-t1-w0"), rtime("sens-t1-w6"), r1, rtime("sens-t4-w0"), rtime("sens-t4-w6"), r4,
           c1["wait_at_node_s"][6], c1["wait_at_node_s"][7], c1["C_serve_s"][6],
           acc("sens-t1-w0"), acc("sens-t1-w6"), acc("sens-t4-w0"), acc("sens-t4-w6")),
        DS, CASE_B.replace("G = %g s" % S["G_b"], "G = %g s" % S["G_sens"]),
        V.claim("G1-curves-sens", [{k: v for k, v in m.items() if k != "_stg"} for _, m in per_s],
                seeds=[sd for sd, _ in per_s], mode=CASE_B, data_set=DS))


def split_seed(n):
    """'g3b-w0-b64-s2' -> ('g3b-w0-b64', 2); a name without '-sS' is seed 1."""
    base, _, tail = n.rpartition("-s")
    return (base, int(tail)) if base and tail.isdigit() else (n, 1)


# ---- G3: accuracy by T (all narrow) and the batch-size table -------------------------------------------
PAPER_T = {1: 87.4, 4: 87.5, 8: 87.4, 16: 86.9, 32: 86.2}
ts = sorted(int(n[4:]) for n in RUN if n.startswith("g3-t") and n[4:].isdigit())
dat("accuracy-t.dat", "T ours_final_mean_acc_percent paper_acc_percent time_s",
    [[t, 100 * acc("g3-t%d" % t), PAPER_T.get(t, float("nan")), float(rtime("g3-t%d" % t))] for t in ts])
curves_dat(["g3-t%d" % t for t in ts], "curves-G3.dat")
with open(os.path.join(RES, "g3.txt"), "w") as f:
    f.write(" ".join(map(str, ts)) + "\n")
if ts and 1 in ts:
    ppick = max(t for t in PAPER_T if t in ts and PAPER_T[t] >= PAPER_T[1] - 1.0) if ts else None

    def g3_accs(seed):
        """The final accuracy (points) of each T's run at seed, in the order of ts (T = 1 first)."""
        names = {t: sname("g3-t%d" % t, seed) for t in ts}
        if not have(*names.values()):
            return None
        return [100 * acc(names[t]) for t in ts]

    def g3_pick(accs):   # for the row's text only: the rule in the registry computes its own
        return max(t for t, a in zip(ts, accs) if a >= accs[0] - 1.0)
    per3 = [(sd, g3_accs(sd)) for sd in SEEDS]
    per3 = [(sd, a) for sd, a in per3 if a is not None]
    row("G3 accuracy by T (all narrow)", "T 1/4/8/16/32: 87.4/87.5/87.4/86.9/86.2%; the largest T within 1 point is 16 (Table 3)",
        "T %s: %s%%%s; largest T within 1 point of T=1: %s (time for the run: %s)"
        % ("/".join(map(str, ts)), "/".join("%.1f" % (100 * acc("g3-t%d" % t)) for t in ts),
           " (seed 1)" if len(per3) > 1 else "", "/".join(str(g3_pick(a)) for _, a in per3) + (" (seeds %s)" % "/".join(str(sd) for sd, _ in per3) if len(per3) > 1 else ""),
           ", ".join("T=%d %.0f s" % (t, rtime("g3-t%d" % t)) for t in ts)),
        DS + ", %s epochs" % S["epochs_g3"], CASE_B,
        V.claim("G3-T", [{"Ts": ts, "acc": a, "paper_pick": ppick} for _, a in per3], seeds=[sd for sd, _ in per3], mode=CASE_B, data_set=DS,
                flags=["our runs are %s epochs, the paper's far longer" % S["epochs_g3"]]))
else:
    row("G3 accuracy by T", "the largest T within 1 point is 16", "not run", "-", "-", V.claim("G3-T"))
bss = {}   # seed -> wide -> batch -> final accuracy
for n in RUN:
    if n.startswith("g3b-w"):
        base, sd = split_seed(n)
        w, b = base[5:].split("-b")
        bss.setdefault(sd, {}).setdefault(int(w), {})[int(b)] = acc(n)
bs = bss.get(1, {})
PAPER_B = {0: {64: 87.1, 128: 87.5, 256: 87.4, 512: 87.7}, 8: {64: 87.0, 128: 87.1, 256: 87.5, 512: 87.5}}
allb = sorted({b for w in bs for b in bs[w]})
dat("batch.dat", "batch ours_w0 ours_w8 paper_w0 paper_w8 (percent)",
    [[b, 100 * bs.get(0, {}).get(b, float("nan")), 100 * bs.get(K, {}).get(b, float("nan")),
      PAPER_B[0].get(b, float("nan")), PAPER_B[8].get(b, float("nan"))] for b in allb])
if bs:
    spr = lambda t: {w: 100 * (max(v.values()) - min(v.values())) for w, v in t.items()}
    spread = spr(bs)
    perb = [(sd, spr(bss[sd])) for sd in SEEDS if sd in bss and set(bss[sd]) == set(bs)
            and all(set(bss[sd][w]) == set(bs[w]) for w in bs)]
    row("G3 batch size (T=1)", "batch 64..512: accuracy flat within ~0.6 points (Table 2; 0 and 8 wide)",
        "; ".join("%d wide: %s (spread %.1f points)" % (w, ", ".join("b%d %.1f%%" % (b, 100 * a) for b, a in sorted(v.items())), spread[w])
                  for w, v in sorted(bs.items())) + (" (seed 1; spread per seed %s)" % ", ".join(
                      "/".join("%.1f" % x[w] for w in sorted(x)) for _, x in perb) if len(perb) > 1 else ""),
        DS.replace("batch %d, " % S["batch"], "") + ", %s epochs at every batch (fewer steps at larger batches)" % S["epochs_b"], CASE_B,
        V.claim("G3-batch", [{"spread_points": [x[w] for w in sorted(x)]} for _, x in perb], seeds=[sd for sd, _ in perb],
                mode=CASE_B, data_set=DS,
                flags=["at a fixed lr and %s epochs the large batches take far fewer steps" % S["epochs_b"]]))
else:
    row("G3 batch size (T=1)", "batch 64..512: accuracy flat", "not run", "-", "-", V.claim("G3-batch"))

# ---- G4: warm-up vs normal ------------------------------------------------------------------------------
g4 = sorted(int(n[4:].split("-")[0]) for n in RUN if n.startswith("g4-w") and n.endswith("-warm"))
g4 = [w for w in g4 if "g2-w%d" % w in RUN]
curves_dat(sum([["g2-w%d" % w, "g4-w%d-warm" % w] for w in g4], []), "curves-G4.dat")
with open(os.path.join(RES, "g4.txt"), "w") as f:
    f.write(" ".join(map(str, g4)) + "\n")
def g4m(seed):
    """G4 metrics of one seed: accuracy differences (points) and speed-ups normal / warm-up."""
    out = {"d_acc": [], "sps": [], "spt": [], "sp95": [], "parts": [], "W": 0}
    for w in g4:
        nrm, wrm = sname("g2-w%d" % w, seed), sname("g4-w%d-warm" % w, seed)
        if not have(nrm, wrm):
            return None
        tgts = targets_of([nrm, wrm])
        sp = rtime(nrm) / rtime(wrm)
        st = [time_to(nrm, x) / time_to(wrm, x) if not math.isinf(time_to(wrm, x)) else 0.0 for x in tgts]
        out["W"] = summ(wrm).get("warmup_steps", 0)
        out["d_acc"].append(100 * (acc(wrm) - acc(nrm))); out["sps"].append(sp); out["spt"].append(st)
        t95 = target_of([nrm, wrm])
        out["sp95"].append(time_to(nrm, t95) / time_to(wrm, t95) if not math.isinf(time_to(wrm, t95)) else 0.0)
        out["parts"].append("%d wide: accuracy %.1f%% warm-up vs %.1f%% normal; to %s %s faster; the run %.2fx (%.0f vs %.0f s)" % (
            w, 100 * acc(wrm), 100 * acc(nrm), "/".join("%.1f%%" % (100 * x) for x in tgts), "/".join("%.2fx" % x for x in st),
            sp, rtime(wrm), rtime(nrm)))
    return out


if g4:
    per4 = [(sd, g4m(sd)) for sd in SEEDS]
    per4 = [(sd, x) for sd, x in per4 if x]
    d4 = per4[0][1]
    ours = "; ".join(d4["parts"]) + "; warm-up = the first %d local steps (%g of the run)%s" % (
        d4["W"], S["warm_frac"], " (seed 1 shown; %d seeds)" % len(per4) if len(per4) > 1 else "")
    row("G4 warm-up keeps accuracy (T=4, wide %s)" % "/".join(map(str, g4)),
        "warm-up never lowers accuracy by more than 0.3 points (Table 4)", ours, DS, CASE_B,
        V.claim("G4-accuracy", [{"acc_diff_points": x["d_acc"]} for _, x in per4], seeds=[sd for sd, _ in per4],
                mode=CASE_B, data_set=DS, plot="plots/out/gossip-warmup.png"))
    row("G4 warm-up speeds convergence (T=4, wide %s)" % "/".join(map(str, g4)),
        "warm-up speeds convergence, more the more wide nodes (Figs. 5-7)", ours, DS, CASE_B,
        V.claim("G4-speedup", [{"sp_tta": [[x["spt"][j][i] for j in range(len(g4))] for i in range(len(TARGETS))],
                                "sp_run": x["sps"], "sp_t95": x["sp95"]} for _, x in per4], seeds=[sd for sd, _ in per4],
                mode=CASE_B, data_set=DS, plot="plots/out/gossip-warmup.png"))
    dat("warmup.dat", "wide speedup(time to %g of the lower final accuracy, normal / warm-up) acc_diff_points"
        % TARGETS[1], [[w, s_[1], dd] for w, s_, dd in zip(g4, d4["spt"], d4["d_acc"])])
else:
    row("G4 warm-up keeps accuracy", "warm-up keeps accuracy", "not run", "-", "-", V.claim("G4-accuracy"))
    row("G4 warm-up speeds convergence", "warm-up speeds convergence", "not run", "-", "-", V.claim("G4-speedup"))

# ---- push comparator ----------------------------------------------------------------------------------
if have("push-w6", "g2-w6"):
    row("push comparator (T=4, 6 wide)", "push gossip is not suited to warm-up: narrow nodes would receive fewer models (§4.2; no figure)",
        "push: final accuracy %.1f%%, %.0f s; pull: %.1f%%, %.0f s" % (100 * acc("push-w6"), rtime("push-w6"),
                                                                      100 * acc("g2-w6"), rtime("g2-w6")),
        DS, CASE_B, V.claim("G-push", {"acc_push": acc("push-w6"), "acc_pull": acc("g2-w6")}, mode=CASE_B, data_set=DS))

# ---- case (a): our own bytes and compute ----------------------------------------------------------------
if have("a-w6-t1", "a-w6-t4"):
    a1, a4 = summ("a-w6-t1"), summ("a-w6-t4")
    row("G1/G2 case (a): our model and device (6 wide)",
        "the phenomenon depends on compute time vs transfer time (eq. 1)",
        "G = %.4f s per step, narrow serve %.4f s: T=1 measured congestion at nodes %s, eq. (1) %s; T=4: %s / %s; time %.1f s (T=1) vs %.1f s (T=4)"
        % (sum(a1["G_s"]) / K, max(a1["C_serve_s"]), [i for i in range(K) if a1["measured_congested"][i]] or "none",
           [i for i in range(K) if a1["eq1_congested"][i]] or "none",
           [i for i in range(K) if a4["measured_congested"][i]] or "none", [i for i in range(K) if a4["eq1_congested"][i]] or "none",
           rtime("a-w6-t1"), rtime("a-w6-t4")),
        DS, CASE_A, V.claim("G-case-a", {"wait_ratio_max_t1": wait_ratio_max(a1)}, mode=CASE_A, data_set=DS,
                            flags=["with a model this small, " + ("the narrow nodes still congest at T=1" if a1["measured_any_congested"]
                                                                  else "compute dominates and nothing congests even at T=1")]))

# ---- the eq. (1)/(2) check over every run ---------------------------------------------------------------
pts, agree, total, bad = [], 0, 0, []
agree_i = total_i = 0          # informative nodes: link narrower than the run's widest (eq. (1) can say "congested")
t_ok = t_tot = 0
eq1_r, wait_r = [], []         # G-eq1: per informative node, eq. (1)'s ratio and the measured wait / serve ratio
eq2_T, eq2_ts, eq2_w = [], [], []   # G-eq2: per distinct run, T, max_i T*_i and the largest wait / serve ratio
seen, dups = {}, []
for n in sorted(RUN):
    s = summ(n)
    if "eq1_lhs_s" not in s or s.get("nodes", 0) < 2:
        continue
    key = json.dumps([s.get(k) for k in ("platform", "G_s", "T", "pair_pulls", "pair_mean_s", "test_err")])
    if key in seen:            # g3-t1 / g3-t4 reuse g1-w0 / g2-w0 (g_same): count a run once
        dups.append("%s = %s" % (n, seen[key]))
        continue
    seen[key] = n
    bw = platform_links(s["platform"], s["nodes"])[0] if s.get("platform", "").startswith("links:") else [1.0] * s["nodes"]
    for i in range(s["nodes"]):
        lhs, cs, wt = s["eq1_lhs_s"][i], s["C_serve_s"][i], s["wait_at_node_s"][i]
        if cs <= 0 or lhs <= 0:
            continue
        pts.append([cs / lhs, max(wt / cs, 1e-4), int(s["eq1_congested"][i]), int(s["measured_congested"][i]), n, i])
        same = int(s["eq1_congested"][i] == s["measured_congested"][i])
        total += 1
        agree += same
        if bw[i] < max(bw):
            total_i += 1
            agree_i += same
            eq1_r.append(cs / lhs)
            wait_r.append(wt / cs)
    if s["eq1_disagreements"]:
        bad.append("%s (nodes %s)" % (n, [i for i in range(s["nodes"]) if s["eq1_congested"][i] != s["measured_congested"][i]]))
    # eq. (2): T >= max_i T*_i exactly when eq. (1) predicts no congestion; checked against measurement
    pred_free = s["T"] >= max(s["eq2_T_star"])
    t_tot += 1; t_ok += int(pred_free == (s["measured_any_congested"] == 0))
    eq2_T.append(s["T"]); eq2_ts.append(max(s["eq2_T_star"])); eq2_w.append(wait_ratio_max(s))
dat("eq1.dat", "eq1_ratio(C_serve / mean_j(T G_j + C_j); >1 predicts congestion) measured_ratio(wait / serve; >1 congested) "
    "eq1 measured run node", pts)
if total:
    row("eq. (1) check, informative nodes", "eq. (1) predicts congestion at node i",
        "eq. (1) vs measured (waiting per pull served by node i above its uncongested pull time) agree on %d of %d nodes whose "
        "link is narrower than their run's widest (where eq. (1) can say 'congested'), %d of %d nodes in all, over %d distinct runs "
        "(duplicates not counted: %s); disagreements: %s"
        % (agree_i, total_i, agree, total, t_tot, ", ".join(dups) or "none", "; ".join(bad) or "none"),
        "all runs above", "SIMULATED (SimGrid), cases (a) and (b)",
        V.claim("G-eq1", {"eq1_ratio": eq1_r, "wait_ratio": wait_r},
                mode="SIMULATED (SimGrid), cases (a) and (b)", data_set="all runs above", plot="plots/out/gossip-eq1.png"))
    row("eq. (2) check, every distinct run", "eq. (2) gives the T that avoids congestion",
        "eq. (2)'s T >= max T* matches a congestion-free run in %d of %d distinct runs" % (t_ok, t_tot),
        "all runs above", "SIMULATED (SimGrid), cases (a) and (b)",
        V.claim("G-eq2", {"T": eq2_T, "T_star_max": eq2_ts, "wait_ratio_max": eq2_w}, mode="SIMULATED (SimGrid), cases (a) and (b)", data_set="all runs above"))

# ---- beyond the paper: heterogeneous compute and non-IID shards (every seed: issue 32) ------------------
def seeds_of(names):
    """The seeds whose runs of `names` (seed-1 names) all exist."""
    return [sd for sd in SEEDS if have(*(sname(n, sd) for n in names))]


def spread_txt(names, sds):
    """' (3 seeds: 61.2% (60.1-62.0), ...)' for the runs of names over seeds sds; '' for one seed."""
    if len(sds) < 2:
        return ""
    parts = []
    for n in names:
        v = [100 * acc(sname(n, sd)) for sd in sds]
        parts.append("%.1f%% (%.1f-%.1f)" % (sum(v) / len(v), min(v), max(v)))
    return " (mean and min-max over %d seeds: %s)" % (len(sds), ", ".join(parts))


ks = sorted({int(n.split("-")[1][1:]) for n in RUN if n.startswith("het-k")})
beyond_names, groups = [], []
for k in ks:
    names = ["het-k%d-%s" % (k, a) for a in ("gossip", "gossip-warmup", "gossip-warmup-compute")]
    if not have(*names):
        continue
    beyond_names += names; groups.append("heterogeneous-compute-K=%d" % k)
    tgt = target_of(names)
    sds = seeds_of(names)
    row("beyond: heterogeneous compute, K=%d" % k, "future work: a warm-up that also shares compute times (§6)",
        "; ".join("%s: %.1f%%, run %.0f s, to %.1f%% %s" % (n.split("-", 2)[2], 100 * acc(n), rtime(n), 100 * tgt, fmt_t(time_to(n, tgt))) for n in names)
        + (" (seed 1)" if len(sds) > 1 else "") + spread_txt(names, sds),
        DS + "; half the nodes at 1/4 of the rate, every link wide", CASE_B.replace("K=%d" % K, "K=%d" % k),
        V.claim("beyond-het-K" if k == K else "beyond-het-bigK", [{"acc": [acc(sname(n, sd)) for n in names]} for sd in sds],
                seeds=sds, mode=CASE_B.replace("K=%d" % K, "K=%d" % k), data_set=DS, label="beyond: heterogeneous compute, K=%d" % k,
                plot="plots/out/gossip-beyond.png"))
for k in sorted({int(n.split("-")[1][1:]) for n in RUN if n.startswith("noniid-k")}):
    names = ["iid-k%d" % k, "noniid-k%d" % k, "noniid-k%d-warm" % k]
    if not have(*names):
        continue
    beyond_names += names; groups.append("non-IID-shards-%g-by-label-K=%d" % (S["noniid"], k))
    sds = seeds_of(names)
    row("beyond: non-IID shards, K=%d" % k, "future work: non-uniform data (§6)",
        "final accuracy: IID %.1f%%, non-IID %.1f%%, non-IID with warm-up %.1f%% (%g of the data dealt by label; %d of %d nodes wide)%s%s"
        % (100 * acc(names[0]), 100 * acc(names[1]), 100 * acc(names[2]), S["noniid"], k * 3 // 4, k,
           " (seed 1)" if len(sds) > 1 else "", spread_txt(names, sds)),
        DS, CASE_B.replace("K=%d" % K, "K=%d" % k),
        V.claim("beyond-noniid-K" if k == K else "beyond-noniid-bigK", [{"acc": [acc(sname(n, sd)) for n in names]} for sd in sds],
                seeds=sds, mode=CASE_B.replace("K=%d" % K, "K=%d" % k), data_set=DS, label="beyond: non-IID shards, K=%d" % k,
                plot="plots/out/gossip-beyond.png"))
curves_dat(beyond_names, "curves-beyond.dat")
with open(os.path.join(RES, "beyond.txt"), "w") as f:
    f.write(" ".join(beyond_names) + "\n" + " ".join(groups) + "\n")

if G_LO is not None:
    row("case (b) compute time", "congestion at T=1 and none at T=4 in the 6-wide setting (what the paper observed)",
        "eq. (1) with the transfer and serve times measured at T=4: congestion at T=1 and none at T=4 for G in [%.3f, %.3f) s per step; we use G = %g s"
        % (G_LO, G_HI, S["G_b"]), DS, CASE_B, V.claim("G-caseb", {"G_lo": G_LO, "G_hi": G_HI, "G": S["G_b"]}, mode=CASE_B, data_set=DS))

# ---- issue 48: the congestion on a REAL network (bench/gossip/realnet.sh, bench/net/hetnet.sh) ----------
# Real MPI ranks in network namespaces behind tc htb links; the figures come from
# bench/gossip/realnet_summary.py (measured, predicted from the rates and bytes, and the sim on the same
# description). No rows in QUICK when the step did not run (make test's bench runs no real network).
import realnet_summary  # noqa: E402  (bench/gossip/, beside this script)
RN = realnet_summary.setting(RES)
RN_IDS = (("G1-congestion-real", "G1 congestion on a real network (T=1, 6 wide)"),
          ("G2-congestion-real", "G2 congestion resolved by a larger T on a real network (6 wide)"),
          ("G-eq1-real", "eq. (1) check on a real network (narrow nodes)"),
          ("G4-warmup-real", "G4 warm-up on a real network: pulls to wide nodes (T=1, 4)"),
          ("G-sim-real", "real network vs the sim on the same description"))
if RN is not None or not QUICK:
    RNM = realnet_summary.metrics(RES) if RN and "runs" in RN else {}
    why_not = ("not run: %s" % RN["skipped"]) if RN and "skipped" in RN else (
        "not run: the realnet step has not run (bench/gossip/realnet.sh, as root)" if not RN else
        "no finished run in %s" % RN["runs"])
    if RN and "runs" in RN:
        RDS = "%s on %s, batch %d (%d-image training subset), %d MPI ranks on %s cores" % (
            RN["net"], RN["data"], RN["batch"], RN["train"], RN["K"], RN["cores"])
        RMODE = ("REAL: Open MPI over TCP (btl self,tcp), one network namespace per rank, tc htb links %s "
                 "(the paper's 1 / 10 Gb/s scaled by %.4g), no added latency" % (RN["links"], RN["bw_scale"]))
        tab = realnet_summary.table(RES)
        if tab:
            with open(os.path.join(RES, "realnet.md"), "w") as f:
                f.write("\n".join(tab) + "\n")
    else:
        RDS, RMODE = "-", "REAL (not run)"
    lst = lambda xs: " / ".join("%.2f" % x for x in xs)
    for cid, label in RN_IDS:
        m = RNM.get(cid)
        if m is None:
            row(label, "-", why_not, "-", "-", V.claim(cid, why=why_not))
            continue
        if cid == "G1-congestion-real":
            paper = "narrow nodes' transfers take far longer than one model over the narrow link: congestion (Fig. 1a)"
            ours = ("pulls served by the narrow nodes: mean %.3f s against %.3f s uncongested (from the rates and bytes); "
                    "wait / uncongested %s; eq. (1) ratio %s; the sim on the same description: %s; compute share %.2f, "
                    "CPU share %.2f" % (m["mean_narrow_s"], m["idle_narrow_s"], lst(m["narrow_wait_ratio"]),
                                        lst(m["eq1_ratio_narrow"]),
                                        "%.3f s" % m["sim_mean_narrow_s"] if m["sim_mean_narrow_s"] is not None else "not run",
                                        m["compute_share"], m["cpu_share"]))
        elif cid == "G2-congestion-real":
            paper = "T = 4 resolves the congestion: communication times shorter overall (Fig. 3a)"
            ours = ("T = %d: narrow pulls mean %.3f s, wait / uncongested %s (eq. (2): T* %.1f; compute share %.2f); "
                    "T = 1: %.3f s; T = 4 (shown, not judged): %s" % (
                        m["T_free"], m["mean_narrow_free"], lst(m["wait_ratio_free"]), m["T_star_free"], m["compute_share_free"],
                        m["mean_narrow_t1"], "%.3f s, wait / uncongested %s" % (m["mean_narrow_t4"], lst(m["wait_ratio_t4"]))
                        if m["mean_narrow_t4"] is not None else "not run"))
        elif cid == "G-eq1-real":
            paper = "eq. (1) predicts congestion at node i"
            ours = "narrow nodes of the pull runs: eq. (1) ratio %s against measured wait / uncongested %s" % (
                lst(m["eq1_ratio"]), lst(m["wait_ratio"]))
        elif cid == "G4-warmup-real":
            paper = "the warm-up communicates more with wide nodes (§6)"
            ours = "T = %s: share of pulls sent to wide nodes, warm-up %s against gossip %s; narrow pulls mean %s s against %s s" % (
                "/".join(map(str, m["T"])), lst(m["wide_share_warm"]), lst(m["wide_share_pull"]),
                lst(m["mean_narrow_warm"]), lst(m["mean_narrow_pull"]))
        else:
            paper = "communication simulated (§5.2)"
            ours = "narrow pulls mean, real against sim: %s" % ", ".join(
                "T = %d %.3f s vs %.3f s" % (t, a, b) for t, a, b in zip(m["T"], m["mean_narrow_real"], m["mean_narrow_sim"]))
        row(label, paper, ours, RDS, RMODE, V.claim(cid, m, mode=RMODE, data_set=RDS, simulated=False))

with open(os.path.join(RES, "analysis.json"), "w") as f:   # the per-node verdicts the rows use, for tests
    json.dump({n: {k: RUN[n][0].get(k) for k in ("measured_congested", "eq1_congested", "wait_at_node_s", "C_serve_s")}
               for n in RUN}, f)
V.write()
for e in V.errors:   # a malformed results file: a visible row, not a silent skip
    row("error", "-", e, "-", "-", "no results (%s)" % e)
with open(os.path.join(RES, "rows.tsv"), "w") as f:
    for r in rows:
        f.write("\t".join(str(x).replace("\t", " ").replace("|", "/") for x in r) + "\n")
