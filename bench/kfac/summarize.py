#!/usr/bin/env python3
"""bench/kfac/summarize.py RES [quick] [K3_SEEDS] — reads bench-kfac's results (inverse, speed, k2, k3, k4 in RES),
writes the plots' data files (RES/kfac-*.dat), RES/analysis.json and the table rows (RES/table.tsv.tmp,
appended; bench/lib.sh's table_print renders them). It derives metrics only: every verdict comes from
bench/verdict.py applying bench/claims/kfac.toml (verdicts.json / verdicts.md beside the table).
K3_SEEDS ("1 2 3"; default "1"): the seeds of K3's runs at the picks (seed s > 1: k3-kfac-sS.jsonl);
K3a, K3a-sampled, K3a-alg1 and K3b get one set of metrics per seed (epochs and seconds to accuracy
targets), the plot reads seed 1; the grid and the picks (k3-picks.json) become RES/k3-grid.md. K4's
seeds are the summary lines of k4.jsonl. K2's "seeds" are the repeats of the real 1- and 2-rank
timings (k2.jsonl lines with "rep"; run.sh K2_REPEATS). Metrics are numbers and lists of numbers
only: the rules in the TOML decide (issue 45)."""
import json, math, os, statistics, sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
res = sys.argv[1]
quick = len(sys.argv) > 2 and sys.argv[2] == "quick"
K3_SEEDS = [int(x) for x in (sys.argv[3].split() if len(sys.argv) > 3 else ["1"])] or [1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402
V = verdict.Session("kfac", res, quick=quick)



def lines(name):
    """RES/name's JSON lines through the engine's one loader (verdict.read_jsonl); a malformed file
    gives [] here and an error row from the engine (V.write scans every results file)."""
    p = os.path.join(res, name)
    if not os.path.exists(p):
        return []
    try:
        return verdict.read_jsonl(p)
    except verdict.VerdictError as e:
        print("summarize: %s" % e, file=sys.stderr)
        return []


rows, analysis = [], {}


def row(i, paper, ours, data, mode, verdict):
    V.describe(i, ours, data, mode)
    rows.append("\t".join([i, paper, ours, data, mode, verdict]))


# ---- inversions ---------------------------------------------------------------------------------
inv = [d for d in lines("inverse.jsonl") if d.get("event") == "inverse"]
with open(os.path.join(res, "kfac-inverse.dat"), "w") as f:
    f.write("# n ref_s fast1_s fast_s speedup speedup_1t fast_max_err fast_resid\n")
    for d in inv:
        f.write("%d %.6g %.6g %.6g %.4g %.4g %.3g %.3g\n" % (d["n"], d["ref_s"], d["fast1_s"], d["fast_s"], d["speedup"],
                                                             d["speedup_1t"], d["fast_max_err"], d["fast_resid"]))
big = [d for d in inv if d["n"] >= 1024]
if big:
    worst = min(d["speedup"] for d in big)
    txt = ", ".join("n=%d %.2fx (1 thread %.2fx)" % (d["n"], d["speedup"], d["speedup_1t"]) for d in big)
    analysis["inverse"] = {"min_speedup_n_ge_1024": worst, "rows": inv}
    row("inv", "suite: fast inversion >= 2x the double LAPACKE reference at n >= 1024",
        "%s, threads %d, cond %.0e; max rel. error vs reference %.1e" % (txt, big[0]["threads"], big[0]["cond"],
                                                                        max(d["fast_max_err"] for d in inv)),
        "random SPD", "real", V.claim("inv", {"min_speedup": worst}, mode="real", data_set="random SPD"))

# ---- step breakdown -----------------------------------------------------------------------------
sp = [d for d in lines("speed.jsonl") if "kfac_step_ms" in d]
if sp:
    d = sp[-1]
    parts = ["fb_ms", "factors_ms", "inverse_ms", "precond_ms", "update_ms"]
    with open(os.path.join(res, "kfac-breakdown.dat"), "w") as f:
        f.write("# part ms\n")
        for p in parts:
            f.write('"%s" %.4g\n' % (p.replace("_ms", ""), d["kfac_" + p]))
    analysis["speed"] = {k: d[k] for k in d if k.startswith("kfac_") or k in ("img_per_s", "sgemm_gflops", "batch")}
    row("speed", "K-FAC step: factors and inversions are a large share",
        "batch %d: step %.1f ms = fwd/bwd %.1f + factors %.1f (%.0f%% of sgemm's GFLOP/s) + inversions %.1f + precond %.1f"
        " + update %.1f; SGD step %.1f ms" % (d["batch"], d["kfac_step_ms"], d["kfac_fb_ms"], d["kfac_factors_ms"],
                                             100 * d["kfac_factors_to_sgemm"], d["kfac_inverse_ms"], d["kfac_precond_ms"],
                                             d["kfac_update_ms"], 1e3 * d["batch"] / d["img_per_s"]),
        "random inputs", "real", V.claim("speed", {"factors_ms": d["kfac_factors_ms"], "inverse_ms": d["kfac_inverse_ms"],
                                                   "fb_ms": d["kfac_fb_ms"]}, mode="real", data_set="random inputs"))

# ---- K2 -----------------------------------------------------------------------------------------
k2 = lines("k2.jsonl")


def k2t(mode, assign, comm):
    """{procs: time per update} of one series (the real series: repeat 1, the runs every other row reads)."""
    return {d["procs"]: d["time_per_update_s"] for d in k2
            if d["mode"] == mode and d["kfac_assign"] == assign and d["kfac_comm"] == comm and d.get("rep", 1) == 1}


def k2_reps():
    """[(repeat, 2 x T1 / T2)]: the real 2-rank speed-up of each repeat of the real 1- and 2-rank
    timings (bench/kfac/run.sh K2_REPEATS; a repeat ran its two runs back to back)."""
    t = {}
    for d in k2:
        if d["mode"] == "real" and d["kfac_assign"] == "layer" and d["kfac_comm"] == "reduce-scatterv" and d["procs"] in (1, 2):
            t.setdefault(d.get("rep", 1), {})[d["procs"]] = d["time_per_update_s"]
    return [(r, 2 * x[1] / x[2]) for r, x in sorted(t.items()) if 1 in x and 2 in x]


sim_l, sim_p, sim_ar = k2t("sim", "layer", "reduce-scatterv"), k2t("sim", "lpt", "reduce-scatterv"), k2t("sim", "layer", "allreduce")
if 1 in sim_l and sim_p:
    sim_p.setdefault(1, sim_l[1])   # one device owns every layer whatever the assignment (run.sh runs it once)
real_l, real_ar = k2t("real", "layer", "reduce-scatterv"), k2t("real", "layer", "allreduce")
nl = len(k2[0]["factor_dims"].split(",")) if k2 else 0
if k2:   # the message sizes K-FAC sends per update, for the K1 plots' markers (plots/collectives.gp)
    with open(os.path.join(res, "kfac-msgs.dat"), "w") as f:
        f.write("# step bytes (vgg-small, whole buffers: step 3 = Reduce(+Scatterv) of [grad | A | G], step 6 = Allgather of dW)\n")
        f.write("3 %d\n6 %d\n" % (k2[0]["msg1_bytes"], k2[0]["msg2_bytes"]))
brk = {d["procs"]: d for d in k2 if d["mode"] == "sim" and d["kfac_assign"] == "layer" and d["kfac_comm"] == "reduce-scatterv"}
with open(os.path.join(res, "kfac-k2.dat"), "w") as f:
    f.write("# procs speedup_sim_layer speedup_sim_lpt speedup_sim_allreduce speedup_real linear t_sim_layer t_sim_lpt"
            " fb factors comm1 owner_max comm2\n")
    for p in sorted(sim_l):
        s = lambda t: p * t[1] / t[p] if p in t and 1 in t else float("nan")
        b = brk[p]
        f.write("%d %.4g %.4g %.4g %.4g %d %.5g %.5g %.5g %.5g %.5g %.5g %.5g\n" % (
            p, s(sim_l), s(sim_p), s(sim_ar), s(real_l), p, sim_l[p], sim_p.get(p, float("nan")), b["fb_s_per_update"],
            b["factors_s_per_update"], b["comm1_s_per_update"], b["owner_max_s_per_update"], b["comm2_s_per_update"]))
if sim_l and 1 in sim_l:
    sp_l = {p: p * sim_l[1] / sim_l[p] for p in sim_l}
    eff = {p: sp_l[p] / p for p in sp_l}
    knee = max(eff, key=lambda p: (eff[p], -p))
    txt = ", ".join("%d: %.2fx" % (p, sp_l[p]) for p in sorted(sp_l))
    real = ", ".join("%d: %.2fx" % (p, p * real_l[1] / real_l[p]) for p in sorted(real_l) if 1 in real_l)
    upd2 = [d["updates"] for d in k2 if d["mode"] == "real" and d["procs"] == 2 and d["kfac_comm"] == "reduce-scatterv"]
    if real and upd2:
        real += " (%d updates per run)" % upd2[0]
    reps = k2_reps()
    if len(reps) > 1:
        real += "; 2 ranks over %d repeats: %s" % (len(reps), ", ".join("%.2fx" % v for _, v in reps))
    analysis["k2"] = {"speedup_sim_layer": sp_l, "efficiency": eff, "knee": knee, "layers": nl,
                      "speedup_sim_lpt": {p: p * sim_p[1] / sim_p[p] for p in sim_p if 1 in sim_p},
                      "real_sp2_repeats": [v for _, v in reps]}
    procs = sorted(sp_l)
    sim_m = {"sim_procs": procs, "sim_speedup": [sp_l[p] for p in procs], "layers": nl}
    row("K2", V.reg["_by_id"]["K2"]["statement"],
        "weak scaling, batch %d/process, %d K-FAC layers; SIMULATED speed-up %s (efficiency peaks at %d); real (2 cores, "
        "ranks beyond 2 oversubscribed) %s" % (k2[0]["batch"], nl, txt, knee, real or "-"),
        "Fashion-MNIST, vgg-small", "SIMULATED (calibrated per kind) + real",
        V.claim("K2", [dict(sim_m, real_sp2=v) for _, v in reps] or None, seeds=[r for r, _ in reps] or None,
                mode="SIMULATED (calibrated per kind) + real", data_set="Fashion-MNIST, vgg-small", simulated=True,
                plot="plots/out/kfac-k2.png", why="no real 2-rank point in these results",
                flags=(["the real 2-rank point ran %d updates (issue 33 asks >= 30)" % upd2[0]]
                       if upd2 and upd2[0] < 30 and not quick else [])))
    ratios = {p: sim_l[p] / sim_p[p] for p in sim_p if p in sim_l and p > 1}
    if ratios:
        best = max(ratios, key=lambda p: ratios[p])
        bal = ", ".join("%d: %.3f" % (p, ratios[p]) for p in sorted(ratios))
        imb = ", ".join("%d: %.2f" % (d["procs"], d["inv_cost_max_over_mean"]) for d in k2
                        if d["mode"] == "sim" and d["kfac_assign"] == "layer" and d["kfac_comm"] == "reduce-scatterv")
        row("K2-lb", "future work: load imbalance of per-layer inversion ownership",
            "time per update, paper's owners / our LPT owners: %s (best %.3fx at %d); inversion cost max/mean with the "
            "paper's owners %s: one 1153-wide layer bounds the step, which whole-layer owners cannot split" % (bal, ratios[best], best, imb),
            "Fashion-MNIST, vgg-small", "SIMULATED", V.claim("K2-lb", {"best_ratio": ratios[best]}, mode="SIMULATED",
                                                             data_set="Fashion-MNIST, vgg-small"))
    if sim_ar:
        d_ar = ", ".join("%d: %.3f" % (p, sim_ar[p] / sim_l[p]) for p in sorted(sim_ar) if p in sim_l)
        row("K2-comm", "NCCL-style Allreduce for both steps measured about the same as Reduce+Scatterv / Allgather",
            "time per update, allreduce / reduce-scatterv+allgatherv: %s" % d_ar, "Fashion-MNIST, vgg-small",
            "SIMULATED", V.claim("K2-comm", {"ratios": [sim_ar[p] / sim_l[p] for p in sorted(sim_ar) if p in sim_l]},
                                 mode="SIMULATED", data_set="Fashion-MNIST, vgg-small"))

# ---- K2-phases: the real 2-rank point against the sim of this machine, phase by phase -------------
PHASES = [("fb", "forward/backward"), ("factors", "factors"), ("comm1", "reduce-scatter"), ("inverse", "inversions"),
          ("precond", "precond"), ("owner_other", "owner, other"), ("comm2", "allgather"), ("update", "update"),
          ("rest", "outside the phases")]


def phase_ms(d):
    """{phase: ms per update} of one summary line (node 0's, on its runtime's clock), and the total."""
    g = lambda k: 1e3 * d.get(k + "_s_per_update", 0.0)
    ph = {k: g(k) for k in ("fb", "factors", "comm1", "inverse", "precond", "comm2", "update")}
    ph["owner_other"] = g("owner") - ph["inverse"] - ph["precond"]
    tot = 1e3 * d["time_per_update_s"]
    ph["rest"] = tot - sum(ph.values())
    return ph, tot


k2m = {d["procs"]: d for d in lines("k2-match.jsonl")}
coll = {d["op"]: d for d in lines("k2-coll.jsonl")}
real_rs = {d["procs"]: d for d in k2 if d["mode"] == "real" and d["kfac_assign"] == "layer" and d["kfac_comm"] == "reduce-scatterv"
           and d.get("rep", 1) == 1}
cols = [("real_1", real_rs.get(1)), ("sim_1", k2m.get(1)), ("real_2", real_rs.get(2)), ("sim_2", k2m.get(2)),
        ("cluster_2", brk.get(2) if k2 else None)]
if any(d for _, d in cols):
    with open(os.path.join(res, "kfac-k2-phases.dat"), "w") as f:
        f.write("# phase %s (ms per update, node 0; real: 1 thread per rank; sim: machine: platform calibrated per phase;"
                " cluster: the K2 sim, 56 Gb/s; 0: not run)\n" % " ".join(c for c, _ in cols))
        got = {c: phase_ms(d) if d else None for c, d in cols}
        for k, name in PHASES + [("total", "total")]:
            f.write('"%s" %s\n' % (name, " ".join("%.5g" % ((got[c][1] if k == "total" else got[c][0][k]) if got[c] else 0)
                                                 for c, _ in cols)))
if 2 in real_rs and 2 in k2m:
    (rph, rtot), (sph, stot) = phase_ms(real_rs[2]), phase_ms(k2m[2])
    sp = lambda t: 2 * t[1]["time_per_update_s"] / t[2]["time_per_update_s"] if 1 in t and 2 in t else float("nan")
    rs, ag = coll.get("reduce_scatterv"), coll.get("allgatherv")
    ctxt = ""
    if rs:
        ctxt = "; shared-memory bandwidth %.2f GB/s from a real reduce-scatter of the %.1f MB bundles (median %.1f ms)" % (
            rs["bytes_total"] / rs["p50_us"] / 1e3, rs["bytes_total"] / 1e6, rs["p50_us"] / 1e3)
    if ag:
        ctxt += ", the %.1f MB allgather took %.2f ms" % (ag["bytes_total"] / 1e6, ag["p50_us"] / 1e3)
    analysis["k2_phases"] = {"real_2": rph, "sim_2": sph, "real_total_ms": rtot, "sim_total_ms": stot,
                             "speedup_real": sp(real_rs), "speedup_sim_machine": sp(k2m), "coll": coll}
    row("K2-phases", "suite: the sim of this machine gives the real 2-rank step phase by phase",
        "2 ranks, %d updates, ms per update real / sim: %s; total %.1f / %.1f; 2-rank speed-up real %.2fx, sim of this machine "
        "%.2fx, K2's cluster sim %.2fx%s" % (
            real_rs[2]["updates"], ", ".join("%s %.1f / %.1f" % (n, rph[k], sph[k]) for k, n in PHASES),
            rtot, stot, sp(real_rs), sp(k2m), sp_l.get(2, float("nan")) if sim_l and 1 in sim_l else float("nan"), ctxt),
        "Fashion-MNIST, vgg-small", "SIMULATED (machine:, calibrated per phase) + real",
        V.claim("K2-phases", {"real_ms": [rph[k] for k, _ in PHASES],
                              "sim_ms": [sph[k] for k, _ in PHASES], "real_total_ms": rtot, "sim_total_ms": stot},
                mode="SIMULATED (machine:, calibrated per phase) + real", data_set="Fashion-MNIST, vgg-small",
                plot="plots/out/kfac-k2-paper.png",
                flags=["QUICK: the sim's compute rates are the bench's THREADS-thread calibration, not 1 thread"] if quick else []))

# ---- K2-paper, K2-sgd: at the paper's compute-to-communication ratio ------------------------------
kp = lines("k2-paper.jsonl")
kp_t = lambda pred: {d["procs"]: d["time_per_update_s"] for d in kp if pred(d)}
pk_ar = kp_t(lambda d: d["algo"] == "kfac-dist" and d["kfac_comm"] == "allreduce")
pk_rs = kp_t(lambda d: d["algo"] == "kfac-dist" and d["kfac_comm"] == "reduce-scatterv")
ps = kp_t(lambda d: d["algo"] == "ssgd")
if kp and sim_l and 1 in sim_l:
    for t in (pk_ar, pk_rs):   # one device sends nothing: the K2 sim's time (a series that ran)
        if t:
            t.setdefault(1, sim_l[1])
    spd = lambda t: {p: p * t[1] / t[p] for p in sorted(t)} if 1 in t else {}
    s_ar, s_rs, s_sg = spd(pk_ar), spd(pk_rs), spd(ps)
    plat = [d for d in kp if d["procs"] > 1][:1] or kp[:1]
    link = plat[0].get("platform", "?").split(",", 2)[-1] if plat else "?"
    with open(os.path.join(res, "kfac-k2-paper.dat"), "w") as f:
        f.write("# procs speedup_kfac_allreduce speedup_kfac_rsv speedup_ssgd linear t_kfac_allreduce t_kfac_rsv t_ssgd"
                " (SIMULATED at the paper's ratio: %s)\n" % link)
        for p in sorted(set(s_ar) | set(s_sg)):
            g = lambda m, q: m.get(q, float("nan"))
            f.write("%d %.4g %.4g %.4g %d %.5g %.5g %.5g\n" % (p, g(s_ar, p), g(s_rs, p), g(s_sg, p), p, g(pk_ar, p),
                                                               g(pk_rs, p), g(ps, p)))
    # what 2 devices would need to beat linear: the communication (node 0's comm phases less its wait
    # for the slowest owner) at most T1 less the rest of T2, i.e. links r x faster next to compute
    be = ""
    d2 = [d for d in kp if d["procs"] == 2 and d["algo"] == "kfac-dist" and d["kfac_comm"] == "allreduce"]
    if d2:
        d = d2[0]
        m = d["comm1_s_per_update"] + d["comm2_s_per_update"] - (d["owner_max_s_per_update"] - d["owner_s_per_update"])
        room = pk_ar[1] - (d["time_per_update_s"] - m)
        r = m / room if room > 0 else float("inf")
        be = "; 2 devices would beat linear with communication %.1fx cheaper next to compute" % r if r > 1 else ""
        try:   # the assumption: the P100 at our step's fraction of sgemm; r x less of its peak breaks even
            cal = json.load(open(os.path.join(res, "calibration.json")))
            if r > 1:
                be += " (a P100 at %.0f%% of its peak in nominal flops instead of the assumed %.0f%%)" % (
                    100 * cal["ratio_to_sgemm"] / r, 100 * cal["ratio_to_sgemm"])
        except (OSError, ValueError, KeyError):
            pass
        analysis.setdefault("k2_paper", {})["breakeven_comm_factor_2"] = r
    fmt = lambda sp_: ", ".join("%d: %.2fx" % (p, v) for p, v in sp_.items())
    analysis.setdefault("k2_paper", {}).update({"link": link, "speedup_kfac_allreduce": s_ar, "speedup_kfac_rsv": s_rs,
                                                "speedup_ssgd": s_sg})
    ours = "links %s (derived from P100 vs Omni-Path, bench/kfac/run.sh); speed-up K-FAC, Allreduce both steps (the paper's " \
           "implementation) %s; reduce-scatterv %s; data-parallel SGD %s%s" % (link, fmt(s_ar), fmt(s_rs) or "-", fmt(s_sg) or "-", be)
    row("K2-paper", V.reg["_by_id"]["K2-paper"]["statement"], ours, "Fashion-MNIST, vgg-small",
        "SIMULATED (paper's ratio, calibrated per kind)",
        V.claim("K2-paper", {"procs": sorted(s_ar), "speedup": [s_ar[p] for p in sorted(s_ar)], "layers": nl, "sp2": s_ar.get(2)},
                mode="SIMULATED (paper's ratio, calibrated per kind)", data_set="Fashion-MNIST, vgg-small",
                plot="plots/out/kfac-k2-paper.png"))
    big = [p for p in sorted(s_ar) if p > nl and p in s_sg]
    if nl in s_ar and nl in s_sg and big:
        gk = [s_ar[p] / s_ar[nl] for p in big]
        gs = [s_sg[p] / s_sg[nl] for p in big]
        row("K2-sgd", V.reg["_by_id"]["K2-sgd"]["statement"],
            "speed-up from %d to p devices (p/%d x T(%d)/T(p)), K-FAC (Allreduce) / SGD: %s" % (
                nl, nl, nl, ", ".join("%d: %.2f / %.2f" % (p, a, b) for p, a, b in zip(big, gk, gs))),
            "Fashion-MNIST, vgg-small", "SIMULATED (paper's ratio, calibrated per kind)",
            V.claim("K2-sgd", {"procs": big, "growth_kfac": gk, "growth_sgd": gs, "ratios": [a / b for a, b in zip(gk, gs)]},
                    mode="SIMULATED (paper's ratio, calibrated per kind)", data_set="Fashion-MNIST, vgg-small",
                    plot="plots/out/kfac-k2-paper.png"))

# ---- K3 -----------------------------------------------------------------------------------------
# Issue 33 item 3: k3-picks.json (bench/kfac/k3grid.py) holds each optimizer's pick from its grid on
# the validation split; k3-O[-sS].jsonl are the runs at the picks on the test set, seeds K3_SEEDS,
# O = kfac, adam, msgd and K-FAC's variants kfac-sampled and kfac-alg1.
K3_RUNS = ("kfac", "adam", "msgd", "kfac-sampled", "kfac-alg1")
TARGETS = (0.90, 0.95, 0.98)   # K3a/K3b's accuracy targets: fractions of the lower final accuracy of the two runs
picks = None
if os.path.exists(os.path.join(res, "k3-picks.json")):
    picks = json.load(open(os.path.join(res, "k3-picks.json")))
    with open(os.path.join(res, "k3-grid.md"), "w") as f:   # the grid, for docs/REPRODUCTION-kfac.md
        f.write("| optimizer | lr | damping | validation accuracy, mean of the last epoch's evaluations | pick |\n|---|---|---|---|---|\n")
        for o in ("kfac", "adam", "msgd"):
            pk = picks["picks"][o]
            for r in sorted(picks["grid"][o], key=lambda r: (r["damping"] or 0, r["lr"])):
                va = r["val_acc_last_epoch"]
                f.write("| %s | %g | %s | %s | %s |\n" % (o, r["lr"], "-" if r["damping"] is None else "%g" % r["damping"],
                                                         "%.2f%%" % (100 * va) if va is not None else r["state"],
                                                         "**pick**" if (r["lr"], r["damping"]) == (pk["lr"], pk["damping"]) else ""))
        if picks.get("at_edge"):
            f.write("\nPicks at the edge of their extended lr grid: %s.\n" % ", ".join(picks["at_edge"]))
        if picks.get("diverged"):
            f.write("\nDiverged (out of the pick): %s.\n" % ", ".join(picks["diverged"]))


def k3_evals(o, sd):
    return [d for d in lines("k3-%s%s.jsonl" % (o, "" if sd == 1 else "-s%d" % sd)) if d.get("event") == "eval"]


curves = {o: k3_evals(o, 1) for o in K3_RUNS}
for o in K3_RUNS:
    with open(os.path.join(res, "kfac-k3-%s.dat" % o), "w") as f:
        f.write("# epoch time_s test_acc train_loss (seed 1)\n")
        for d in curves[o]:
            f.write("%.4g %.5g %.5g %.5g\n" % (d["epoch"], d["time_s"], 1 - d["test_err"], d["train_loss"]))


def at_epochs(ev):
    return {round(d["epoch"], 3): d for d in ev}


if all(curves[o] for o in ("kfac", "adam", "msgd")):
    ck, ca, cm = at_epochs(curves["kfac"]), at_epochs(curves["adam"]), at_epochs(curves["msgd"])
    common = sorted(set(ck) & set(ca) & set(cm))   # the evaluations seed 1's three runs share
    last = common[-1]
    tk = curves["kfac"][-1]["time_s"] / curves["kfac"][-1]["epoch"]
    ta = curves["adam"][-1]["time_s"] / curves["adam"][-1]["epoch"]

    def reach(ev, target, x):
        """x ("epoch" or "time_s") at which the test accuracy first reaches target, linearly interpolated
        between evaluations from (0, 10%) before the first one; inf when never."""
        x0, a0 = 0.0, 0.1
        for d in ev:
            a = 1 - d["test_err"]
            if a >= target:
                return x0 + (d[x] - x0) * (target - a0) / (a - a0) if a > a0 else d[x]
            x0, a0 = d[x], a
        return math.inf

    def vs_adam(o, sd):
        """K3a's and K3b's raw numbers for run o (kfac or a variant) at seed sd against Adam's pick at
        that seed: epochs and seconds to the accuracy targets (TARGETS x the lower of the two final
        accuracies at their last common evaluation), the final accuracies, seconds per epoch."""
        ek, ea = k3_evals(o, sd), k3_evals("adam", sd)
        if not ek or not ea:
            return None
        k, a = at_epochs(ek), at_epochs(ea)
        cs = [e for e in common if e in k and e in a]
        if not cs:
            return None
        ek, ea = [k[e] for e in cs], [a[e] for e in cs]
        fk, fa = 1 - ek[-1]["test_err"], 1 - ea[-1]["test_err"]
        tg = [f * min(fk, fa) for f in TARGETS]
        return {"kfac_epochs_to": [reach(ek, t, "epoch") for t in tg], "adam_epochs_to": [reach(ea, t, "epoch") for t in tg],
                "kfac_s_to": [reach(ek, t, "time_s") for t in tg], "adam_s_to": [reach(ea, t, "time_s") for t in tg],
                "kfac_acc_last": fk, "adam_acc_last": fa, "targets": tg,
                "kfac_s_per_epoch": ek[-1]["time_s"] / ek[-1]["epoch"], "adam_s_per_epoch": ea[-1]["time_s"] / ea[-1]["epoch"]}

    def final_accs(o):
        out = []
        for sd in K3_SEEDS:
            ev = at_epochs(k3_evals(o, sd))
            if last in ev:
                out.append(100 * (1 - ev[last]["test_err"]))
        return out

    def spread(xs):
        return "%.1f%%" % xs[0] if len(xs) == 1 else "%.1f%% (%.1f-%.1f)" % (statistics.mean(xs), min(xs), max(xs)) if xs else "-"

    pk = (picks or {}).get("picks", {})
    setting = lambda o: ("lr %g" % pk[o]["lr"] + (", damping %g" % pk[o]["damping"] if pk[o].get("damping") else "")) if o in pk else "lr as run"
    data_k3 = "Fashion-MNIST subset, vgg-small"
    ours3 = "settings picked on a validation split: K-FAC %s, Adam %s, MSGD %s. After %g epochs, %d seed(s): K-FAC %s, Adam %s, " \
        "MSGD %s test accuracy; %.1f s/epoch vs Adam %.1f s/epoch (seed 1)" % (
            setting("kfac"), setting("adam"), setting("msgd"), last, len(K3_SEEDS), spread(final_accs("kfac")),
            spread(final_accs("adam")), spread(final_accs("msgd")), tk, ta)
    analysis["k3"] = {"epochs": common, "kfac_s_per_epoch": tk, "adam_s_per_epoch": ta, "picks": pk,
                      "final_acc": {o: final_accs(o) for o in K3_RUNS}}
    for cid, o, what in (("K3a", "kfac", "K-FAC"), ("K3a-sampled", "kfac-sampled", "K-FAC with the sampled Fisher"),
                         ("K3a-alg1", "kfac-alg1", "Algorithm 1 (no momentum, 10x lr)")):
        per = [(sd, vs_adam(o, sd)) for sd in K3_SEEDS]
        per = [(sd, m) for sd, m in per if m is not None]
        if not per:
            continue
        ep = lambda xs: "/".join("%.2f" % x if math.isfinite(x) else "never" for x in xs)
        txt = "%s vs Adam, epochs to %s of the lower final accuracy: %s (seeds %s)" % (
            what, "/".join("%g" % t for t in TARGETS), "; ".join("%s vs %s" % (ep(m["kfac_epochs_to"]), ep(m["adam_epochs_to"]))
                                                                for _, m in per), " ".join(str(sd) for sd, _ in per))
        if cid != "K3a":
            txt += "; after %g epochs %s vs Adam %s" % (last, spread(final_accs(o)), spread(final_accs("adam")))
        keep = ("kfac_epochs_to", "adam_epochs_to", "kfac_acc_last", "adam_acc_last", "targets")
        row(cid, V.reg["_by_id"][cid]["statement"], (ours3 + "; " if cid == "K3a" else "") + txt, data_k3, "real, 1 process",
            V.claim(cid, [{x: m[x] for x in keep} for _, m in per], seeds=[sd for sd, _ in per], mode="real, 1 process",
                    data_set=data_k3, plot="plots/out/kfac-k3.png"))
    per = [(sd, vs_adam("kfac", sd)) for sd in K3_SEEDS]
    per = [(sd, m) for sd, m in per if m is not None]
    sec = lambda xs: "/".join("%.0f" % x if math.isfinite(x) else "never" for x in xs)
    keep = ("kfac_s_to", "adam_s_to", "kfac_s_per_epoch", "adam_s_per_epoch", "targets")
    row("K3b", V.reg["_by_id"]["K3b"]["statement"],
        "seconds to %s of the lower final accuracy, K-FAC vs Adam: %s (seeds %s); %.1f s/epoch vs Adam %.1f s/epoch (seed 1, %d threads)" % (
            "/".join("%g" % t for t in TARGETS), "; ".join("%s vs %s" % (sec(m["kfac_s_to"]), sec(m["adam_s_to"])) for _, m in per),
            " ".join(str(sd) for sd, _ in per), tk, ta,
            next((d.get("threads", 0) for d in lines("k3-kfac.jsonl") if d.get("event") == "summary"), 0)), data_k3, "real, 1 process",
        V.claim("K3b", [{x: m[x] for x in keep} for _, m in per] or None, seeds=[sd for sd, _ in per] or None, mode="real, 1 process",
                data_set=data_k3, plot="plots/out/kfac-k3.png", why="no K-FAC and Adam runs at a common evaluation"))

# ---- K4 -----------------------------------------------------------------------------------------
k4 = [d for d in lines("k4.jsonl") if d.get("event") == "summary"]
by = {}
for d in k4:
    by.setdefault((d["algo"], d["batch"]), []).append(d)
with open(os.path.join(res, "kfac-k4.dat"), "w") as f:
    f.write("# algo batch acc_mean acc_min acc_max loss_mean loss_min loss_max\n")
    for o in ("msgd", "kfac"):
        for b in sorted(b for (a, b) in by if a == o):
            ds = by[(o, b)]
            acc = [1 - d["test_err"] for d in ds]
            loss = [d["test_loss"] for d in ds]
            f.write("%s %d %.5g %.5g %.5g %.5g %.5g %.5g\n" % (o, b, statistics.mean(acc), min(acc), max(acc),
                                                            statistics.mean(loss), min(loss), max(loss)))
        f.write("\n\n")
if k4:
    def series(o):
        bs = sorted(b for (a, b) in by if a == o)
        return bs, {b: statistics.mean(1 - d["test_err"] for d in by[(o, b)]) for b in bs}, \
            {b: statistics.mean(d["test_loss"] for d in by[(o, b)]) for b in bs}
    bs, am, lm = series("msgd")
    _, ak, lk = series("kfac")
    if len(bs) >= 2:
        seeds = len(by[("msgd", bs[0])])
        row("K4", "fixed epochs: accuracy falls and loss rises with the total batch (SGD); K-FAC shown beside",
            "%s epochs, %d seed(s): MSGD accuracy %s; K-FAC %s (batch %s)" % (
                k4[0]["epochs"], seeds, " / ".join("%.1f%%" % (100 * am[b]) for b in bs),
                " / ".join("%.1f%%" % (100 * ak[b]) for b in bs if b in ak), "/".join(str(b) for b in bs)),
            "Fashion-MNIST subset, vgg-small", "real, 1 process",
            V.claim("K4", [{"acc_first": 1 - a["test_err"], "acc_last": 1 - z["test_err"], "loss_first": a["test_loss"],
                            "loss_last": z["test_loss"]} for a, z in zip(by[("msgd", bs[0])], by[("msgd", bs[-1])])],
                    seeds=[d.get("seed", i + 1) for i, d in enumerate(by[("msgd", bs[0])])],
                    mode="real, 1 process", data_set="Fashion-MNIST subset, vgg-small", plot="plots/out/kfac-k4.png"))
        analysis["k4"] = {"batches": bs, "msgd_acc": am, "kfac_acc": ak, "msgd_loss": lm, "kfac_loss": lk}

# ---- beyond the paper: the split inversion (bench/kfac/split.sh, issue 33 item 4) ------------------
sm = [d for d in lines("split.jsonl") if d.get("event") == "split_metrics"]
def by_procs(what, d):
    """{what_procs: [p, ...], what_speedups: [x, ...]} from a {"p": x} table (metrics are lists, not tables)."""
    ps = sorted(int(k) for k in (d or {}))
    return {what + "_procs": ps, what + "_speedups": [d[str(p)] if str(p) in d else d[p] for p in ps]}


if sm:
    m = sm[-1]
    fmt = lambda d: ", ".join("%s: %.2fx" % (p, v) for p, v in sorted(((int(k), v) for k, v in (d or {}).items()))) or "-"
    row("K2-split", "beyond the paper (future work, Sec. 6): split the inversion that bounds the step",
        "time per update without / with --kfac-split, owners by cost (LPT): SIMULATED %s (best %.2fx at %s devices); "
        "real %s (ranks on this machine's 2 cores: a figure, not the claim)"
        % (fmt(m.get("sim_speedup_by_procs")), m.get("sim_best_speedup") or 0, m.get("sim_best_procs"), fmt(m.get("real_speedup_by_procs"))),
        "Fashion-MNIST, vgg-small", "SIMULATED (+ real)",
        V.claim("K2-split", dict({k: m.get(k) for k in ("sim_best_speedup", "sim_min_speedup", "sim_best_procs")},
                                 **by_procs("sim", m.get("sim_speedup_by_procs")), **by_procs("real", m.get("real_speedup_by_procs"))),
                mode="SIMULATED", data_set="Fashion-MNIST, vgg-small"))

for cid in ("inv", "speed", "K2", "K2-lb", "K2-comm", "K2-phases", "K2-paper", "K2-sgd", "K2-split", "K3a", "K3a-sampled", "K3a-alg1", "K3b", "K4"):
    if not any(m["id"] == cid for m in V.meas):
        row(cid, V.reg["_by_id"][cid]["statement"], "not run", "-", "-", V.claim(cid))
V.write()
for e in V.errors:   # a malformed results file: a visible row, not a silent skip
    row("error", "-", e, "-", "-", "no results (%s)" % e)
json.dump(analysis, open(os.path.join(res, "analysis.json"), "w"), indent=1, default=str)
with open(os.path.join(res, "table.tsv.tmp"), "a") as f:
    for r in rows:
        f.write(r.replace("\n", " ") + "\n")
print("summarize: %d table rows" % len(rows))
