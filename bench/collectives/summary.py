#!/usr/bin/env python3
"""summary.py RESDIR — turns the bench-collectives results into what a person reads.

Reads RESDIR/{mpi,nccl}-OP-npN.jsonl (pdl coll sweeps, one line per size and round),
RESDIR/osu-OP-npN.txt (the OSU-style loop, run right after each pdl round),
RESDIR/memcpy.jsonl, RESDIR/algorithms.jsonl, RESDIR/nccl-status.txt. Writes RESDIR/dat/*.dat
(gnuplot: bytes_total avg_us min_us max_us p50_us p99_us busbw_gbs rounds, one file per backend,
op and rank count; the best round per size, min/max over ranks and all rounds), RESDIR/summary.md (pdl beside the OSU-style loop at the same sizes, busbw against
memcpy, the algorithms, the closing note) and RESDIR/k1.txt / k1-verdict.txt for the K1 row.
Rows are matched on OSU's size convention: allreduce/reduce size = our bytes_total, allgather
size = our bytes_per_rank. Exit 1 when any row has wrong elements or an input is missing.
The K1 verdict comes from bench/verdict.py (bench/claims/collectives.toml); this script derives
the metrics only.
"""
import glob, os, re, statistics, sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
res = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402
out = []
ok = True


def load(path):
    """path's JSON lines through the engine's one loader (verdict.read_jsonl); exit 1 naming the
    file and line of a bad one (a torn last line is skipped with a warning)."""
    try:
        return verdict.read_jsonl(path)
    except verdict.VerdictError as e:
        print("summary.py: %s" % e, file=sys.stderr)
        sys.exit(1)


def human(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d %s" % (b // div, unit)
    return "%d B" % b


def best_row(rs):
    """the round with the lowest mean time: on a shared machine the least disturbed one"""
    return min(rs, key=lambda x: x["avg_us"])


runs = {}   # (backend, op, ranks) -> {bytes_total: [rows of the rounds]}
for path in sorted(glob.glob(os.path.join(res, "*-*-np*.jsonl"))):
    m = re.match(r"(mpi|nccl)-(.+)-np(\d+)\.jsonl$", os.path.basename(path))
    if not m:
        continue
    by = {}
    for r in load(path):
        by.setdefault(r["bytes_total"], []).append(r)
        if r["wrong"]:
            ok = False
    runs[(m.group(1), m.group(2), int(m.group(3)))] = by
    os.makedirs(os.path.join(res, "dat"), exist_ok=True)
    with open(os.path.join(res, "dat", "%s-%s-np%s.dat" % (m.group(2), m.group(1), m.group(3))), "w") as f:
        f.write("# bytes_total avg_us min_us max_us p50_us p99_us busbw_gbs rounds  (%s %s, %s ranks; avg, p50, p99,"
                " busbw: the best round (lowest avg); min/max: over ranks and all rounds)\n" % m.groups())
        for size in sorted(by):
            rs = by[size]
            b = best_row(rs)
            f.write("%d %.4f %.4f %.4f %.4f %.4f %.6f %d\n" % (
                size, b["avg_us"], min(x["min_us"] for x in rs), max(x["max_us"] for x in rs), b["p50_us"],
                b["p99_us"], b["busbw_gbs"], len(rs)))
if not runs:
    print("summary.py: no pdl coll results in %s" % res, file=sys.stderr)
    sys.exit(1)


wrong = sum(r["wrong"] for by in runs.values() for rs in by.values() for r in rs)
out.append("## Collectives (K-FAC paper Fig. 4 analogue) — %s\n" % ("#wrong = 0 in every row" if not wrong else
                                                                    "**%d WRONG ELEMENTS**" % wrong))

# memcpy: the single-node limit
mem = {}
if os.path.exists(os.path.join(res, "memcpy.jsonl")):
    for r in load(os.path.join(res, "memcpy.jsonl")):
        mem[r["ranks"]] = r["algbw_gbs"]
if mem:
    parts = ["1 rank alone %.2f GB/s" % mem[1]] if 1 in mem else []
    for n in sorted(k for k in mem if k > 1):
        parts.append("%d ranks at once %.2f GB/s each (%.2f together)" % (n, mem[n], n * mem[n]))
    out.append("memcpy of 64 MiB (bytes copied / time, read + write not double-counted): " + "; ".join(parts) +
               ". This is the DRAM limit busbw is compared with below; messages that fit in the caches can "
               "beat it.\n")
limit = mem.get(2) or mem.get(1)

# pdl beside the OSU-style loop: the two alternated for REPS rounds; best (smallest) mean of each
ratios = []
out.append("pdl coll beside the OSU-style loop (bench/collectives/osu_loop.c), alternating rounds, best mean of "
           "each program per size:\n")
out.append("| op | ranks | OSU size | pdl bytes/rank | pdl total | pdl avg (us) | OSU-style avg (us) | pdl / OSU |"
           " rounds | pdl p50 / p99 (us) | pdl busbw (GB/s) |")
out.append("|---|---|---|---|---|---|---|---|---|---|---|")
for (backend, op, n), by in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
    if backend != "mpi":
        continue
    key = "bytes_per_rank" if op == "allgather" else "bytes_total"
    best = {}
    for rs in by.values():
        for r in rs:
            if r[key] not in best or r["avg_us"] < best[r[key]]["avg_us"]:
                best[r[key]] = r
    osu, rounds = {}, {}
    osu_path = os.path.join(res, "osu-%s-np%d.txt" % (op, n))
    if os.path.exists(osu_path):
        for line in open(osu_path):
            if line.startswith("#") or not line.strip():
                continue
            size, avg = int(line.split()[0]), float(line.split()[1])
            osu[size] = min(avg, osu.get(size, avg))
            rounds[size] = rounds.get(size, 0) + 1
    for size in sorted(osu):
        r = best.get(size)
        if not r:
            continue
        ratio = r["avg_us"] / osu[size] if osu[size] > 0 else float("nan")
        ratios.append((ratio, op, n, size))
        out.append("| %s | %d | %s | %s | %s | %.2f | %.2f | %.2f | %d | %.2f / %.2f | %.3f |" % (
            op, n, human(size), human(r["bytes_per_rank"]), human(r["bytes_total"]), r["avg_us"], osu[size], ratio,
            rounds[size], r["p50_us"], r["p99_us"], r["busbw_gbs"]))
out.append("")

# peak busbw per run
for (backend, op, n), by in sorted(runs.items()):
    best = max((best_row(rs) for rs in by.values()), key=lambda r: r["busbw_gbs"])
    out.append("- %s %s, %d ranks: peak busbw (best round) %.3f GB/s at %s%s" % (
        backend, op, n, best["busbw_gbs"], human(best["bytes_total"]),
        " = %.0f%% of the memcpy figure" % (100 * best["busbw_gbs"] / limit) if limit else ""))
out.append("")

# algorithms
alg_path = os.path.join(res, "algorithms.jsonl")
if os.path.exists(alg_path):
    out.append("Open MPI algorithm (traffic of one call matched against each forced tuned algorithm, algo.py):")
    for a in load(alg_path):
        out.append("- %s, %d ranks, %s: **%s**%s" % (a["op"], a["ranks"], human(a["bytes_total"]),
                                                     a["algorithm"] or "cannot tell",
                                                     " (%s)" % a["note"] if a.get("note") else ""))
    out.append("")

def readf(name):
    p = os.path.join(res, name)
    return open(p).read().strip() if os.path.exists(p) else None


load0, load1 = readf("load-start.txt"), readf("load-end.txt")
nccl = open(os.path.join(res, "nccl-status.txt")).read().strip() if os.path.exists(
    os.path.join(res, "nccl-status.txt")) else "not run"

# closing note
if ratios:
    rs = sorted(x[0] for x in ratios)
    med = statistics.median(rs)
    lo, hi = min(ratios), max(ratios)
    near = sum(1 for x in rs if 0.8 <= x <= 1.25)
    out.append("Closing note: pdl coll and the OSU-style loop time the same thing the same way (one call "
               "between barriers, per-rank mean, min/avg/max over ranks). Over %d sizes measured by both in "
               "this run (best of the alternating rounds), pdl time / OSU-style time has median %.2f; %d of %d "
               "are within 0.8-1.25; the "
               "extremes are %.2f (%s, %d ranks, %s) and %.2f (%s, %d ranks, %s). Load average (1/5/15 min) "
               "was %s at the start of the sweeps and %s at the end, on 2 cores; where the two disagree "
               "by more than that band, the p50/p99 columns of the pdl table show whether single calls "
               "were delayed (p99 >> p50) rather than the method differing." % (
                   len(rs), med, near, len(rs), lo[0], lo[1], lo[2], human(lo[3]), hi[0], hi[1], hi[2], human(hi[3]),
                   " ".join((load0 or "?").split()[:3]), " ".join((load1 or "?").split()[:3])))
out.append("NCCL: %s" % nccl)
with open(os.path.join(res, "summary.md"), "w") as f:
    f.write("\n".join(out) + "\n")

# K1 row
def at(backend, op, n, size):
    rs = (runs.get((backend, op, n)) or {}).get(size)
    return best_row(rs)["avg_us"] if rs else None

big = max(runs.get(("mpi", "reduce", 2), {}) or [0]) or None
k1 = "MPI 2 ranks"
if big:
    red, ag = at("mpi", "reduce", 2, big), at("mpi", "allgather", 2, big)
    k1 += " at %s: reduce %.0f us%s" % (human(big), red, ", allgather %.0f us" % ag if ag else "")
nccl_red = at("nccl", "reduce", 2, big) if big else None
# allgather at the same total bytes as the largest reduce (its sweep's sizes are totals too)
nccl_ag = at("nccl", "allgather", 2, big) if big else None
V = verdict.Session("collectives", res)
if ("nccl", "reduce", 2) in runs and nccl_red is not None:
    k1 += "; NCCL reduce %.0f us%s" % (nccl_red, ", allgather %.0f us" % nccl_ag if nccl_ag else "")
    cell = V.claim("K1", {"mpi_reduce_us": red, "nccl_reduce_us": nccl_red, "mpi_allgather_us": ag,
                          "nccl_allgather_us": nccl_ag}, ours=k1, data_set="synthetic validated buffers",
                   mode="real, one node", flags=["one node, not the paper's 2"], plot="plots/out/collectives-reduce.png")
else:
    if ("nccl", "reduce", 2) not in runs:
        k1 += "; NCCL %s" % nccl
    cell = V.claim("K1", None, ours=k1, data_set="synthetic validated buffers", mode="real",
                   why="MPI half only: " + ("no CUDA device here" if nccl.startswith("skipped") else "no NCCL reduce at the largest size"))
V.write()
open(os.path.join(res, "k1.txt"), "w").write(k1 + "\n")
open(os.path.join(res, "k1-verdict.txt"), "w").write(cell + "\n")
sys.exit(0 if ok else 1)
