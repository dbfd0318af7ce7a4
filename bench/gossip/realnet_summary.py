#!/usr/bin/env python3
"""bench/gossip/realnet_summary.py RES — the real-network part of bench-gossip (issue 48): reads
RES/realnet.json and the runs it names (bench/gossip/realnet.sh), prints the measured / predicted /
simulated table and writes it to RES/realnet.md. bench/gossip/summarize.py imports it and hands
metrics() to the engine (bench/verdict.py); nothing here decides a verdict. Stdlib only.

Per run, for the pulls that the NARROW nodes served (the paper's congestion: requests queue at the
narrow link), from the summary's per-pair pull counts and mean / shortest durations:
  measured    mean (and shortest) duration of a pull served by a narrow node;
  predicted   its uncongested time from the description alone: request + reply bytes at the
              narrower of the two links, x 1514/1448 on the real network (htb counts Ethernet
              frames: headers of a full 1448-byte TCP segment), + 4 x lat;
  wait        measured - predicted, and wait / predicted (> 1: congested, the suite's definition);
  eq. (1)     C_i / mean_{j != i}(T G_j + C_j) with G_j the measured compute per step and C the
              predicted transfer times (> 1: eq. (1) predicts congestion at node i); eq. (2)'s T*;
  sim         the same figures from the sim on the same description, each node's device rate set to
              its measured G (bench/gossip/realnet.sh), payload bytes only (no frame factor).
Also each narrow node's own pulls (its download is narrow too), the share of all pulls sent to wide
nodes (the warm-up's effect), the compute share (the ranks' gradient time over their wall time)
and the CPU share (CPU seconds of the whole run over wall x cores)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
import links  # noqa: E402  (bench/net/links.py: the links: description's reader)
import verdict  # noqa: E402


def setting(res):
    """RES/realnet.json: {'runs': folder, ...}, {'skipped': reason}, or None (the step never ran)."""
    try:
        return json.load(open(os.path.join(res, "realnet.json")))
    except (OSError, ValueError):
        return None


def load(path):
    """(summary, realnet event) of one run file; (None, None) when it has no summary."""
    try:
        d = verdict.read_jsonl(path)
    except verdict.VerdictError:
        return None, None
    s = [x for x in d if x.get("event") == "summary"]
    e = [x for x in d if x.get("event") == "realnet"]
    return (s[-1] if s else None), (e[-1] if e else None)


def parse_links(spec):
    """(per-node link rates in bytes/s, lat in s) from a links: description (the sim's other keys,
    rates= among them, are not the network's)."""
    kv = [x for x in spec.split(":", 1)[-1].split(",") if "=" in x]
    bits, _ = links.parse("links:" + ",".join(x for x in kv if x.split("=", 1)[0] in ("k", "bw")))
    lat = 0.0
    for x in kv:
        if x.startswith("lat="):
            lat = links.qty(x[4:], links.TIME_UNITS, 1e-3)
    return [b / 8.0 for b in bits], lat


def figures(s, spec, ovh):
    """The per-run figures (see the module's doc) from summary s on the description spec."""
    K, T = s["nodes"], s["T"]
    bw, lat = parse_links(spec)
    req, rep = (1 + 2 * K) * 4, s["model_bytes"] + 8 * K   # gossip.c: op + time table; model + table
    idle = lambda j, i: 4 * lat + (req + rep) * ovh / min(bw[j], bw[i])
    P, M, N = s["pair_pulls"], s["pair_mean_s"], s["pair_min_s"]
    G = s["G_s"]
    narrow = [i for i in range(K) if bw[i] < max(bw)]
    served = {}
    Cr = []
    for i in range(K):
        n = sum(P[j * K + i] for j in range(K))
        mean = sum(P[j * K + i] * M[j * K + i] for j in range(K)) / n if n else 0.0
        C = sum(P[j * K + i] * idle(j, i) for j in range(K)) / n if n else 0.0
        mn = min([N[j * K + i] for j in range(K) if P[j * K + i] > 0] or [0.0])
        served[i] = {"n": n, "mean": mean, "min": mn, "idle": C, "wait": mean - C, "ratio": (mean - C) / C if C > 0 else 0.0}
        m = sum(P[i * K + k] for k in range(K))
        Cr.append(sum(P[i * K + k] * idle(i, k) for k in range(K)) / m if m else 0.0)
    own = {}
    for i in range(K):
        m = sum(P[i * K + k] for k in range(K))
        own[i] = {"n": m, "mean": sum(P[i * K + k] * M[i * K + k] for k in range(K)) / m if m else 0.0, "idle": Cr[i]}
    eq1, tstar = [], []
    for i in range(K):
        lhs = (T * (sum(G) - G[i]) + (sum(Cr) - Cr[i])) / (K - 1)
        eq1.append(served[i]["idle"] / lhs if lhs > 0 else 0.0)
        tstar.append(((K - 1) * served[i]["idle"] - (sum(Cr) - Cr[i])) / (sum(G) - G[i]) if sum(G) - G[i] > 0 else 0.0)
    nn = sum(served[i]["n"] for i in narrow)
    steps = [T * own[j]["n"] for j in range(K)]   # one pull every T local steps
    tot = sum(P)
    return {
        "K": K, "T": T, "narrow": narrow, "served": served, "own": own, "eq1": eq1, "tstar": tstar,
        "mean_narrow_s": sum(served[i]["n"] * served[i]["mean"] for i in narrow) / nn if nn else 0.0,
        "idle_narrow_s": sum(served[i]["n"] * served[i]["idle"] for i in narrow) / nn if nn else 0.0,
        "min_narrow_s": min([served[i]["min"] for i in narrow if served[i]["n"]] or [0.0]),
        "narrow_wait_ratio": [served[i]["ratio"] for i in narrow],
        "eq1_ratio_narrow": [eq1[i] for i in narrow],
        "T_star_max": max(tstar[i] for i in narrow) if narrow else 0.0,
        "wide_share": sum(P[j * K + i] for j in range(K) for i in range(K) if i not in narrow) / tot if tot else 0.0,
        "G_mean_s": sum(G) / K,
        "compute_share": sum(g * n for g, n in zip(G, steps)) / (K * s["time_s"]) if s.get("time_s") else 0.0,
        "time_s": s.get("time_s", 0.0),
    }


def runs(res):
    """{name: {'real': figures, 'sim': figures or None, 'event': realnet event}} of the runs done."""
    st = setting(res)
    if not st or "runs" not in st:
        return st, {}
    out = {}
    d = st["runs"]
    if not os.path.isabs(d) and not os.path.isdir(d):
        d = os.path.join(res, os.path.basename(d))   # a results tree moved elsewhere
    if not os.path.isdir(d):
        return st, {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".jsonl") or f.endswith("-sim.jsonl"):
            continue
        name = f[:-6]
        s, e = load(os.path.join(d, f))
        if not s or not e or s.get("interrupted_by_signal") or "pair_pulls" not in s:
            continue
        r = {"real": figures(s, e["links"], st.get("frame_overhead", 1514 / 1448)), "event": e, "sim": None}
        r["real"]["cpu_share"] = e["cpu_s"] / (e["wall_s"] * e["cores"]) if e.get("wall_s") else 0.0
        ss, _ = load(os.path.join(d, name + "-sim.jsonl"))
        if ss and "pair_pulls" in ss and ss.get("platform", "").startswith("links:"):
            r["sim"] = figures(ss, ss["platform"], 1.0)
        out[name] = r
    return st, out


def metrics(res):
    """{claim id: metrics dict} for the claims whose runs exist (bench/claims/gossip.toml)."""
    st, R = runs(res)
    m = {}
    tf = "pull-t%d" % st["T_free"] if st and "T_free" in st else None
    p1, p4 = R.get("pull-t1"), R.get("pull-t4")
    if p1:
        a = p1["real"]
        m["G1-congestion-real"] = {"mean_narrow_s": a["mean_narrow_s"], "idle_narrow_s": a["idle_narrow_s"],
                                   "narrow_wait_ratio": a["narrow_wait_ratio"], "eq1_ratio_narrow": a["eq1_ratio_narrow"],
                                   "sim_mean_narrow_s": p1["sim"]["mean_narrow_s"] if p1["sim"] else None,
                                   "compute_share": a["compute_share"], "cpu_share": a["cpu_share"]}
    if p1 and tf in R:
        f = R[tf]["real"]
        m["G2-congestion-real"] = {"mean_narrow_t1": p1["real"]["mean_narrow_s"], "mean_narrow_free": f["mean_narrow_s"],
                                   "wait_ratio_free": f["narrow_wait_ratio"], "T_free": f["T"], "T_star_free": f["T_star_max"],
                                   "mean_narrow_t4": p4["real"]["mean_narrow_s"] if p4 else None,
                                   "wait_ratio_t4": p4["real"]["narrow_wait_ratio"] if p4 else None,
                                   "compute_share_free": f["compute_share"]}
    pulls = [n for n in ("pull-t1", "pull-t4", tf) if n in R]
    if pulls:
        m["G-eq1-real"] = {"eq1_ratio": [x for n in pulls for x in R[n]["real"]["eq1_ratio_narrow"]],
                           "wait_ratio": [x for n in pulls for x in R[n]["real"]["narrow_wait_ratio"]]}
        sims = [n for n in pulls if R[n]["sim"]]
        if sims:
            m["G-sim-real"] = {"T": [R[n]["real"]["T"] for n in sims],
                               "mean_narrow_real": [R[n]["real"]["mean_narrow_s"] for n in sims],
                               "mean_narrow_sim": [R[n]["sim"]["mean_narrow_s"] for n in sims],
                               "wait_ratio_real": [max(R[n]["real"]["narrow_wait_ratio"]) for n in sims],
                               "wait_ratio_sim": [max(R[n]["sim"]["narrow_wait_ratio"]) for n in sims]}
    ts = [t for t in (st or {}).get("Ts", []) if "warm-t%d" % t in R and "pull-t%d" % t in R]
    if ts:
        m["G4-warmup-real"] = {"T": ts,
                               "wide_share_warm": [R["warm-t%d" % t]["real"]["wide_share"] for t in ts],
                               "wide_share_pull": [R["pull-t%d" % t]["real"]["wide_share"] for t in ts],
                               "mean_narrow_warm": [R["warm-t%d" % t]["real"]["mean_narrow_s"] for t in ts],
                               "mean_narrow_pull": [R["pull-t%d" % t]["real"]["mean_narrow_s"] for t in ts],
                               "wait_ratio_warm": [max(R["warm-t%d" % t]["real"]["narrow_wait_ratio"]) for t in ts],
                               "wait_ratio_pull": [max(R["pull-t%d" % t]["real"]["narrow_wait_ratio"]) for t in ts]}
    return m


def order(names):
    key = lambda n: (n.split("-")[0] != "pull", int(n.split("-t")[1]) if n.split("-t")[-1].isdigit() else 0)
    return sorted(names, key=key)


def table(res):
    """The markdown lines of the measured / predicted / simulated table ([] when nothing ran)."""
    st, R = runs(res)
    if not R:
        return []
    f3 = lambda x: "%.3f" % x
    lines = ["Real network (%s; %s, %d-byte model, batch %d; links scaled by %.4g: a transfer takes the paper's 54 MiB "
             "time; Open MPI over TCP between network namespaces, tc htb both directions): pulls served by the narrow nodes %s"
             % (st["links"], st["net"], st["model_bytes"], st["batch"], st["bw_scale"], ", ".join(map(str, R[order(R)[0]]["real"]["narrow"]))),
             "",
             "| run | T | pulls served by narrow nodes | measured mean (shortest), s | predicted uncongested, s | measured wait / uncongested | "
             "eq. (1) ratio (> 1: congests) | sim mean, s | sim wait / uncongested | narrow nodes' own pulls: measured / predicted, s | "
             "pulls to wide nodes | G per step, s | compute share | CPU share |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in order(R):
        a, s = R[n]["real"], R[n]["sim"]
        nar = a["narrow"]
        lines.append("| %s | %d | %d | %s (%s) | %s | %s | %s | %s | %s | %s / %s | %.2f | %.4f | %.2f | %.2f |" % (
            n, a["T"], sum(a["served"][i]["n"] for i in nar), f3(a["mean_narrow_s"]), f3(a["min_narrow_s"]), f3(a["idle_narrow_s"]),
            ", ".join("%.2f" % x for x in a["narrow_wait_ratio"]), ", ".join("%.2f" % x for x in a["eq1_ratio_narrow"]),
            f3(s["mean_narrow_s"]) if s else "-", ", ".join("%.2f" % x for x in s["narrow_wait_ratio"]) if s else "-",
            ", ".join(f3(a["own"][i]["mean"]) for i in nar), ", ".join(f3(a["own"][i]["idle"]) for i in nar),
            a["wide_share"], a["G_mean_s"], a["compute_share"], a["cpu_share"]))
    lines += ["", "Where a cell lists two figures, they are the narrow nodes %s in turn. eq. (2)'s T* for the narrow nodes: %s."
              % (", ".join(map(str, R[order(R)[0]]["real"]["narrow"])),
                 "; ".join("%s %s" % (n, ", ".join("%.1f" % R[n]["real"]["tstar"][i] for i in R[n]["real"]["narrow"]))
                           for n in order(R) if n.startswith("pull"))),
              "Compute share: the ranks' gradient time over their training wall time; CPU share: CPU seconds of the whole "
              "run (mpirun, daemons, ranks) over its wall time x %d cores." % st["cores"]]
    return lines


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0])
        return 0 if len(argv) == 2 else 2
    st = setting(argv[1])
    if st is None:
        print("realnet: %s/realnet.json: not found (bench/gossip/realnet.sh has not run)" % argv[1], file=sys.stderr)
        return 1
    if "skipped" in st:
        print("realnet: not run: %s" % st["skipped"])
        return 0
    lines = table(argv[1])
    if not lines:
        print("realnet: no finished run in %s" % st.get("runs"), file=sys.stderr)
        return 1
    with open(os.path.join(argv[1], "realnet.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
