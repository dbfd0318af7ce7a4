#!/usr/bin/env python3
"""algo.py — which algorithm did Open MPI's `tuned` component run for a collective?

Open MPI does not say, but its pml `monitoring` component can count, for each pair of ranks,
the point-to-point messages (and bytes, and a log2 size histogram) a run sent; a collective is
made of exactly such messages. One `pdl coll --probe 1` run (a single call, no barrier, no
validation) gives the traffic matrix of that call with the default decision; the same run with
each algorithm forced (coll_tuned_use_dynamic_rules=1, coll_tuned_<op>_algorithm=K, the names
come from ompi_info) gives each candidate's matrix. The default's algorithm is the forced one(s)
whose matrix is identical. Several matches mean the traffic cannot tell them apart (e.g. at two
ranks); no match means some other component (han, sm, ucc, ...) or a fallback ran.

usage: algo.py --pdl bin/pdl --op allreduce --np 4 --size 1048576 --json out.jsonl -- MPIRUN...
Prints one line and appends one JSON object per call to --json.
"""
import argparse, json, re, subprocess, sys

OP_PARAM = {"allreduce": "allreduce", "reduce": "reduce", "allgather": "allgather", "bcast": "bcast",
            "reduce_scatter": "reduce_scatter_block", "reduce_scatterv": "reduce_scatter",
            "allgatherv": "allgatherv"}


def algorithms(param):
    """[(number, name)] of coll_tuned_<param>_algorithm from ompi_info, without 'ignore'."""
    out = subprocess.run(["ompi_info", "--param", "coll", "tuned", "--level", "9"], capture_output=True,
                         text=True).stdout
    m = re.search(r'"coll_tuned_%s_algorithm".*?Valid values: ([^\n]*)' % re.escape(param), out, re.S)
    if not m:
        return []
    return [(int(k), v) for k, v in re.findall(r'(\d+):"([^"]+)"', m.group(1)) if int(k) != 0]


def traffic(mpirun, np, pdl, op, size, mca):
    """{(src, dst): (bytes, msgs, histogram)} for one call, or None when the run failed."""
    cmd = mpirun + ["-np", str(np), "--mca", "pml_monitoring_enable", "1",
                    "--mca", "pml_monitoring_enable_output", "1"] + mca + \
        [pdl, "coll", "--op", op, "-m", str(size), "--probe", "1", "--timeout", "60"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    mat = {}
    for line in (p.stdout + p.stderr).splitlines():
        f = line.split("\t")
        if len(f) >= 5 and f[0] in ("E", "I") and f[1].isdigit():
            b = int(f[3].split()[0]); m = int(f[4].split()[0])
            key = (int(f[1]), int(f[2]))
            ob, om, oh = mat.get(key, (0, 0, ""))
            mat[key] = (ob + b, om + m, oh + (f[5] if len(f) > 5 else ""))
    return {k: v for k, v in mat.items() if v[1] > 0}


def describe(mat, np):
    """A short human summary: messages and bytes sent per rank, and to whom."""
    if not mat:
        return "no point-to-point traffic"
    per = {}
    for (s, d), (b, m, _) in sorted(mat.items()):
        per.setdefault(s, []).append("%d:%dx%s" % (d, m, human(b // m)))
    return "; ".join("r%d->%s" % (s, ",".join(v)) for s, v in sorted(per.items()))


def human(b):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d%s" % (b // div, unit)
    return "%dB" % b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdl", required=True)
    ap.add_argument("--op", required=True)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--json")
    ap.add_argument("mpirun", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    mpirun = [x for x in a.mpirun if x != "--"]
    param = OP_PARAM.get(a.op)
    rec = {"op": a.op, "ranks": a.np, "bytes_total": a.size, "component": "tuned?", "algorithm": None,
           "matches": [], "traffic": None}
    default = traffic(mpirun, a.np, a.pdl, a.op, a.size, [])
    if default is None:
        rec["note"] = "the monitored run failed (pml monitoring not available?)"
    else:
        rec["traffic"] = describe(default, a.np)
        cands = algorithms(param) if param else []
        if not cands:
            rec["note"] = "ompi_info lists no tuned algorithms for this op"
        for num, name in cands:
            forced = traffic(mpirun, a.np, a.pdl, a.op, a.size,
                             ["--mca", "coll_tuned_use_dynamic_rules", "1",
                              "--mca", "coll_tuned_%s_algorithm" % param, str(num)])
            if forced is not None and forced == default:
                rec["matches"].append(name)
        if len(rec["matches"]) == 1:
            rec["algorithm"] = rec["matches"][0]; rec["component"] = "tuned"
        elif rec["matches"]:
            rec["algorithm"] = " | ".join(rec["matches"]); rec["component"] = "tuned"
            rec["note"] = "these forced algorithms send identical traffic here"
        elif cands:
            rec["note"] = "no forced tuned algorithm reproduces the default traffic"
    line = "%-10s %d ranks %9d B: %s   [%s]" % (a.op, a.np, a.size, rec["algorithm"] or "unknown",
                                              rec.get("note") or rec["traffic"])
    print(line)
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    sys.exit(main())
