#!/usr/bin/env python3
"""bench/kfac/summarize.py RES [quick] [K3_SEEDS] — reads bench-kfac's results (inverse, speed, k2, k3, k4 in RES),
writes the plots' data files (RES/kfac-*.dat), RES/analysis.json and the table rows (RES/table.tsv.tmp,
appended; bench/lib.sh's table_print renders them). It derives metrics only: every verdict comes from
bench/verdict.py applying bench/claims/kfac.toml (verdicts.json / verdicts.md beside the table).
K3_SEEDS ("1 2 3"; default "1"): the seeds of K3's runs at the picks (seed s > 1: k3-kfac-sS.jsonl);
K3a, K3a-sampled and K3a-alg1 get one set of metrics per seed, K3b and the plot read seed 1; the
grid and the picks (k3-picks.json) become RES/k3-grid.md. K4's seeds are
the summary lines of k4.jsonl."""
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
    p = os.path.join(res, name)
    if not os.path.exists(p):
        return []
    out = []
    for ln in open(p):
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                out.append(json.loads(ln))
            except ValueError:
                pass
    return out


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
    return {d["procs"]: d["time_per_update_s"] for d in k2
            if d["mode"] == mode and d["kfac_assign"] == assign and d["kfac_comm"] == comm}


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
    upto = [p for p in sp_l if 1 < p <= nl]
    after = [p for p in sp_l if p > nl]
    superlin = all(sp_l[p] > p for p in upto) if upto else False
    flat_after = all(eff[p] <= eff[max(upto)] + 1e-9 for p in after) if upto and after else None
    txt = ", ".join("%d: %.2fx" % (p, sp_l[p]) for p in sorted(sp_l))
    real = ", ".join("%d: %.2fx" % (p, p * real_l[1] / real_l[p]) for p in sorted(real_l) if 1 in real_l)
    upd2 = [d["updates"] for d in k2 if d["mode"] == "real" and d["procs"] == 2 and d["kfac_comm"] == "reduce-scatterv"]
    if real and upd2:
        real += " (%d updates per run)" % upd2[0]
    analysis["k2"] = {"speedup_sim_layer": sp_l, "efficiency": eff, "knee": knee, "layers": nl,
                      "speedup_sim_lpt": {p: p * sim_p[1] / sim_p[p] for p in sim_p if 1 in sim_p}}
    row("K2", "speed-up vs processes better than linear while processes <= layers, then like data-parallel SGD",
        "weak scaling, batch %d/process, %d K-FAC layers; SIMULATED speed-up %s (efficiency peaks at %d); real (2 cores, "
        "ranks beyond 2 oversubscribed) %s" % (k2[0]["batch"], nl, txt, knee, real or "-"),
        "Fashion-MNIST, vgg-small", "SIMULATED (calibrated per kind) + real",
        V.claim("K2", {"superlinear_sim": superlin, "flat_after_sim": flat_after,
                       "real_sp2": 2 * real_l[1] / real_l[2] if 1 in real_l and 2 in real_l else None},
                mode="SIMULATED (calibrated per kind) + real", data_set="Fashion-MNIST, vgg-small", simulated=True,
                plot="plots/out/kfac-k2.png",
                flags=([] if (1 in real_l and 2 in real_l) else ["no real 2-rank point in these results"]) +
                      (["the real 2-rank point ran %d updates (issue 33 asks >= 30)" % upd2[0]]
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
real_rs = {d["procs"]: d for d in k2 if d["mode"] == "real" and d["kfac_assign"] == "layer" and d["kfac_comm"] == "reduce-scatterv"}
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
        V.claim("K2-phases", {"phases": [k for k, _ in PHASES], "real_ms": [rph[k] for k, _ in PHASES],
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
    upto = [p for p in s_ar if 1 < p <= nl]
    after = [p for p in s_ar if p > nl]
    eff = {p: s_ar[p] / p for p in s_ar}
    superlin = all(s_ar[p] > p for p in upto) if upto else False
    flat_after = all(eff[p] <= eff[max(upto)] + 1e-9 for p in after) if upto and after else None
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
        V.claim("K2-paper", {"superlinear": superlin, "flat_after": flat_after, "sp2": s_ar.get(2)},
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

    def vs_adam(o, sd):
        """K3a's metrics for run o (kfac or a variant) at seed sd against Adam's pick at that seed."""
        ek, ea = k3_evals(o, sd), k3_evals("adam", sd)
        if not ek or not ea:
            return None
        k, a = at_epochs(ek), at_epochs(ea)
        cs = [e for e in common if e in k and e in a]
        fin = lambda c: 1 - c[cs[-1]]["test_err"]
        return {"kfac_ge_adam": sum(1 - k[e]["test_err"] >= 1 - a[e]["test_err"] for e in cs), "evals": len(cs),
                "kfac_acc_last": fin(k), "adam_acc_last": fin(a),   # kfac_slower: the history's old K3a rule reads it
                "kfac_slower": ek[-1]["time_s"] / ek[-1]["epoch"] > ea[-1]["time_s"] / ea[-1]["epoch"]}

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
        txt = "%s >= Adam at %s evaluations (seeds %s)" % (
            what, ", ".join("%d of %d" % (m["kfac_ge_adam"], m["evals"]) for _, m in per), " ".join(str(sd) for sd, _ in per))
        if cid != "K3a":
            txt += "; after %g epochs %s vs Adam %s" % (last, spread(final_accs(o)), spread(final_accs("adam")))
        row(cid, V.reg["_by_id"][cid]["statement"], (ours3 + "; " if cid == "K3a" else "") + txt, data_k3, "real, 1 process",
            V.claim(cid, [m for _, m in per], seeds=[sd for sd, _ in per], mode="real, 1 process", data_set=data_k3,
                    plot="plots/out/kfac-k3.png"))
    row("K3b", "one device: per second K-FAC is slower than Adam", "%.1f s/epoch vs Adam %.1f s/epoch (seed 1, %d threads)" % (
        tk, ta, next((d.get("threads", 0) for d in lines("k3-kfac.jsonl") if d.get("event") == "summary"), 0)), data_k3, "real, 1 process",
        V.claim("K3b", {"kfac_s_per_epoch": tk, "adam_s_per_epoch": ta}, mode="real, 1 process",
                data_set=data_k3, plot="plots/out/kfac-k3.png"))

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
if sm:
    m = sm[-1]
    fmt = lambda d: ", ".join("%s: %.2fx" % (p, v) for p, v in sorted(((int(k), v) for k, v in (d or {}).items()))) or "-"
    row("K2-split", "beyond the paper (future work, Sec. 6): split the inversion that bounds the step",
        "time per update without / with --kfac-split, owners by cost (LPT): SIMULATED %s (best %.2fx at %s devices); "
        "real %s (ranks on this machine's 2 cores: a figure, not the claim)"
        % (fmt(m.get("sim_speedup_by_procs")), m.get("sim_best_speedup") or 0, m.get("sim_best_procs"), fmt(m.get("real_speedup_by_procs"))),
        "Fashion-MNIST, vgg-small", "SIMULATED (+ real)",
        V.claim("K2-split", {k: m.get(k) for k in ("sim_best_speedup", "sim_min_speedup", "sim_best_procs",
                                                     "sim_speedup_by_procs", "real_speedup_by_procs")},
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
