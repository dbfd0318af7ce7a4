#!/usr/bin/env python3
"""bench/gpu/summarize.py RES — make bench-gpu's table (issue 35 H) from RES/speed.jsonl (bench/gpu/run.sh:
one JSON line per run, with "side" pdl|torch, "mode" eager|graph, "batch"). Writes RES/table.md and
RES/gpu-speed.dat (batch, then median, min and max img/s of pdl eager, pdl graph, PyTorch eager,
PyTorch graph; NaN where a run is missing or failed) for plots/gpu-speed.gp.

Issue 35's targets: pdl (its faster mode, the CUDA graph) at least PyTorch with CUDA graphs at batches
1, 16 and 128, and at least PyTorch eager at 512. A cell reads "met" when pdl's slowest window beats
the other side's fastest, "not met" when pdl's fastest is below the other's slowest, else "within
the noise" (the windows overlap). The roofline is cuBLAS SGEMM 4096^3 FP32 measured by pdl speed in
the same run. Exit 1 when RES/speed.jsonl is missing or holds no pdl result."""
import math, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict as engine  # noqa: E402  (the engine's one JSONL loader: engine.read_jsonl)

TARGET = {1: ("torch", "graph"), 16: ("torch", "graph"), 128: ("torch", "graph"), 512: ("torch", "eager")}
NAMES = {("pdl", "eager"): "pdl eager", ("pdl", "graph"): "pdl CUDA graph", ("torch", "eager"): "PyTorch eager",
         ("torch", "graph"): "PyTorch CUDA graph", ("pdl", "chunk"): "pdl train chunks"}
# the columns of gpu-speed.dat, 3 each (median, min, max) after the batch; "chunk" is pdl train's
# own resident loop (pdl speed --chunk 64: one upload and one read back per 64 steps, the chunk
# replayed as one CUDA graph), last so that older plots' columns stay where they were
COLS = (("pdl", "eager"), ("pdl", "graph"), ("torch", "eager"), ("torch", "graph"), ("pdl", "chunk"))


def load(path):
    runs = {}
    try:
        lines = engine.read_jsonl(path)
    except engine.VerdictError as e:
        sys.exit("summarize.py: %s" % e)
    for n, j in enumerate(lines, 1):
        key = (j.get("side"), j.get("mode"), j.get("batch"))
        if None in key:
            sys.exit("%s: run %d: no side, mode or batch" % (path, n))
        if not j.get("failed") and isinstance(j.get("img_per_s"), (int, float)):
            runs[key] = j
        else:
            runs.setdefault(key, None)
    return runs


def cell(j):
    if j is None:
        return "failed"
    return "%.0f (%.0f-%.0f)" % (j["img_per_s"], j["img_per_s_min"], j["img_per_s_max"])


def verdict(ours, other):
    if ours is None or other is None:
        return "-"
    r = ours["img_per_s"] / other["img_per_s"]
    if ours["img_per_s_min"] >= other["img_per_s_max"]:
        v = "met"
    elif ours["img_per_s_max"] < other["img_per_s_min"]:
        v = "not met"
    else:
        v = "within the noise"
    return "%.2fx, %s" % (r, v)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/gpu/summarize.py RES  (RES/speed.jsonl from bench/gpu/run.sh)")
    res = sys.argv[1]
    path = os.path.join(res, "speed.jsonl")
    if not os.path.exists(path):
        sys.exit("bench/gpu/summarize.py: %s not found (run make bench-gpu on a machine with a CUDA device)" % path)
    runs = load(path)
    batches = sorted({k[2] for k in runs})
    pdl = [j for k, j in runs.items() if k[0] == "pdl" and j]
    if not pdl:
        sys.exit("bench/gpu/summarize.py: no pdl result in %s" % path)
    torch_seen = any(k[0] == "torch" for k in runs)
    gpu = pdl[0].get("gpu", "?")
    # what pdl's eager step did: runs before resident batches (and --host-batch) uploaded the batch
    eager = [r for r in pdl if r.get("mode") == "eager"]
    uploads = any(r.get("h2d_bytes_per_step", 0) > 0 for r in eager)
    eager_note = ("pdl uploads its batch and reads its loss back every eager step" if uploads else
                  "pdl's eager step is pdl train's resident one: the batch gathered on the device, the loss left there")
    lines = ["# make bench-gpu: pdl vs PyTorch on %s" % gpu, "",
             "ppasgd-cifar's training step (momentum SGD, FP32; PyTorch with TF32 off, cudnn.benchmark on, the "
             "batch on the device; %s). img/s, median of the windows "
             "(min-max), all from one run at %s. Target (issue 35): pdl's CUDA graph at least PyTorch's CUDA "
             "graph at batches 1, 16, 128; at least PyTorch eager at 512." % (eager_note, pdl[0].get("git", "?")), "",
             "| batch | pdl eager | pdl CUDA graph | PyTorch eager | PyTorch CUDA graph | pdl graph vs target | "
             "pdl graph / PyTorch graph | pdl eager / PyTorch eager | nominal GFLOP/s (pdl graph), % of SGEMM | "
             "pdl train chunks of 64 (graphs) | pdl train chunks / PyTorch graph |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    dat = ["# batch  pdl_eager(med min max)  pdl_graph  torch_eager  torch_graph  pdl_train_chunk  (img/s; nan = not run)"]
    for b in batches:
        g = lambda s, m: runs.get((s, m, b))
        row = ["%d" % b]
        for s, m in (("pdl", "eager"), ("pdl", "graph"), ("torch", "eager"), ("torch", "graph")):
            if (s, m, b) in runs:
                row.append(cell(g(s, m)))
            else:
                row.append("not run" + ("" if torch_seen or s == "pdl" else ": no PyTorch with CUDA"))
        tgt = TARGET.get(b)
        row.append(("%s: %s" % (NAMES[tgt], verdict(g("pdl", "graph"), g(*tgt)))) if tgt else "(no target)")
        row.append(verdict(g("pdl", "graph"), g("torch", "graph")).split(",")[0])
        row.append(verdict(g("pdl", "eager"), g("torch", "eager")).split(",")[0])
        pg = g("pdl", "graph")
        row.append("%.0f, %.1f%%" % (pg["gflops"], 100 * pg["ratio_to_sgemm"]) if pg and "gflops" in pg else "-")
        row.append(cell(g("pdl", "chunk")) if ("pdl", "chunk", b) in runs else "not run")
        row.append(verdict(g("pdl", "chunk"), g("torch", "graph")).split(",")[0])
        lines.append("| " + " | ".join(row) + " |")
        d = ["%d" % b]
        for s, m in COLS:
            j = g(s, m)
            d += ["%.6g" % j[k] for k in ("img_per_s", "img_per_s_min", "img_per_s_max")] if j else ["nan"] * 3
        dat.append(" ".join(d))
    sg = [j["sgemm_gflops"] for j in pdl if isinstance(j.get("sgemm_gflops"), (int, float))]
    if sg:
        lines += ["", "Roofline: cuBLAS SGEMM 4096^3 FP32 %.0f-%.0f GFLOP/s in this run (pdl speed's own measurement)."
                  % (min(sg), max(sg))]
    ops = ["batch %d: %s GPU ops and %s host waits per eager step" % (b, runs[("pdl", "eager", b)].get("gpu_ops_per_step"),
           "%.1f" % runs[("pdl", "eager", b)]["gpu_syncs_per_step"]) for b in batches
           if runs.get(("pdl", "eager", b)) and "gpu_syncs_per_step" in runs[("pdl", "eager", b)]]
    if ops:
        lines += ["", "Counters: " + "; ".join(ops) + "."]
    with open(os.path.join(res, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(res, "gpu-speed.dat"), "w") as f:
        f.write("\n".join(dat) + "\n")


if __name__ == "__main__":
    main()
