#!/usr/bin/env bash
# bench/core/run.sh — `make bench-core`: pdl speed beside the same net in Debian's PyTorch, at
# batch 1, 16, 128 and 1 and 2 threads, measured in one run (alternating, so both see the same
# machine state). Writes results/core/speed.jsonl and a table with the ratios and the targets of
# issue 19 (>= 2x PyTorch at batch 128 on 1 and 2 threads, >= 3x at batch 1 on 1 thread, >= 90% of
# the same run's sgemm GFLOP/s at batch 128), and a profiled batch-1 run whose time outside the
# convolutions bounds what any convolution speed-up could reach at batch 1.
#
# ISA=avx2 (make bench-core ISA=avx2) runs both sides as AVX2 code on whatever machine this is, to
# show that nothing AVX-512-specific is assumed: pdl is built with -march=haswell into build-avx2/,
# OpenBLAS runs its Haswell kernels (OPENBLAS_CORETYPE=Haswell) and PyTorch its AVX2 ones
# (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2); results go to results/core-avx2/. On an
# AVX-512 machine it emulates the ISA of an AVX2-only one, not its caches or its clock.
cd "$(dirname "$0")/../.."
source bench/lib.sh
ISA=${ISA:-native}
case $ISA in
  native) bench_init core ;;
  avx2)
    bench_init core-avx2
    echo "[core] ISA=avx2: building pdl with -march=haswell into build-avx2/" >&2
    make --no-print-directory -j"$(nproc)" BUILD=build-avx2 PDL=build-avx2/pdl OPT="-O3 -march=haswell" \
      build-avx2/pdl >&2 || { echo "[core] the -march=haswell build failed" >&2; exit 1; }
    PDL=build-avx2/pdl
    export OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ;;
  *) echo "bench/core/run.sh: ISA must be native or avx2, got '$ISA'" >&2; exit 2 ;;
esac
CPU_MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
echo "[core] $CPU_MODEL, ISA=$ISA" >&2
OUT=$RES/speed.jsonl
: > "$OUT.tmp"
REPEATS=${QUICK:+3}; REPEATS=${REPEATS:-7}
TORCH_PY=/usr/bin/python3
have_torch=0
if $TORCH_PY -c 'import torch' 2>/dev/null; then have_torch=1
elif [ "$(id -u)" = 0 ]; then
  echo "[core] installing python3-torch for the PyTorch side" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >&2 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >&2; }
  $TORCH_PY -c 'import torch' 2>/dev/null && have_torch=1
fi
[ $have_torch = 1 ] || echo "[core] python3-torch not available (needs root to install): PyTorch column skipped" >&2
printf '%-6s %-7s %12s %12s %8s %10s %10s %8s\n' batch threads pdl_img/s torch_img/s ratio pdl_GFLOP/s sgemm_GF/s %sgemm
for B in 1 16 128; do
  for T in 1 2; do
    p=$(OMP_NUM_THREADS=$T "$PDL" speed --batch "$B" --threads "$T" --repeats "$REPEATS" 2>/dev/null | tail -1) || { echo "pdl speed failed" >&2; exit 1; }
    t='{}'
    [ $have_torch = 1 ] && t=$(OMP_NUM_THREADS=$T $TORCH_PY bench/core/torch_speed.py "$B" "$T" "$REPEATS" 2>/dev/null | tail -1)
    p=$(echo "$p" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["bench_isa"]=sys.argv[1]; print(json.dumps(d))' "$ISA")
    echo "$p" >> "$OUT.tmp"; [ "$t" != '{}' ] && echo "$t" >> "$OUT.tmp"
    python3 - "$p" "$t" <<'PY'
import json, sys
p, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ti = t.get("img_per_s")
r = p["img_per_s"] / ti if ti else float("nan")
print("%-6d %-7d %12.1f %12s %8s %10.1f %10.1f %7.0f%%" % (p["batch"], p["threads"], p["img_per_s"],
      "%.1f" % ti if ti else "n/a", "%.2fx" % r if ti else "n/a", p["gflops"], p["sgemm_gflops"], 100 * p["ratio_to_sgemm"]))
PY
  done
done
# Where batch 1 on one thread goes: a profiled run (timers around every layer) splits the step
# into convolutions and the rest (update, fc, pools, ...); the rest bounds images/s even if every
# convolution took no time at all, which says whether the 10x target is reachable on this machine.
p=$(OMP_NUM_THREADS=1 "$PDL" speed --batch 1 --threads 1 --repeats "$REPEATS" --profile 2>/dev/null | tail -1) || { echo "pdl speed --profile failed" >&2; exit 1; }
echo "$p" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["event"]="speed-profile"; print(json.dumps(d))' >> "$OUT.tmp"
# The same step with the momentum update as a separate pass after the backward (net_backward +
# optim_step, 24 B per parameter) instead of fused into each layer's backward: what fusing gains.
p=$(OMP_NUM_THREADS=1 "$PDL" speed --batch 1 --threads 1 --repeats "$REPEATS" --update separate 2>/dev/null | tail -1) || { echo "pdl speed --update separate failed" >&2; exit 1; }
echo "$p" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["event"]="speed-separate-update"; print(json.dumps(d))' >> "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
python3 - "$OUT" "$TABLE.tmp" "$ISA" "$CPU_MODEL" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
isa, model = sys.argv[3], sys.argv[4]
tag = "" if isa == "native" else "-" + isa
data = "random 28x28x1; %s, %s" % (model, "native ISA" if isa == "native" else "AVX2 code on both sides")
pdl = {(r["batch"], r["threads"]): r for r in rows if r.get("event") == "speed" and r.get("impl", "pdl") == "pdl"}
tor = {(r["batch"], r["threads"]): r for r in rows if r.get("impl") == "pytorch"}
out = open(sys.argv[2], "a")
def row(*c): out.write("\t".join(str(x) for x in c) + "\n")
for T in (1, 2):
    for B, target in ((128, 2.0), (1, 3.0 if T == 1 else None)):
        p = pdl.get((B, T)); t = tor.get((B, T))
        if p and t:
            r = p["img_per_s"] / t["img_per_s"]
            # medians of timed windows; PyTorch's own windows spread widely at batch 1 on 2 threads
            # (30-358 img/s within one run here), so its range is shown and the verdict says so
            lo, hi = t.get("img_per_s_min", t["img_per_s"]), t.get("img_per_s_max", t["img_per_s"])
            unstable = hi > 1.5 * lo
            row("core-speed%s-b%d-t%d" % (tag, B, T), (">= %gx PyTorch (issue target)" % target) if target else "(no target)",
                "%.0f vs %.0f img/s = %.2fx (PyTorch's windows %.0f-%.0f, ours %.0f-%.0f)" % (
                    p["img_per_s"], t["img_per_s"], r, lo, hi, p["img_per_s_min"], p["img_per_s_max"]),
                data, "real",
                (("met" if r >= target else "NOT met") if target else "-")
                + (" (PyTorch unstable here: min-max %.1fx)" % (hi / lo) if unstable else ""))
    prof = [r for r in rows if r.get("event") == "speed-profile" and r["threads"] == T and r["batch"] == 1]
    t = tor.get((1, T))
    if prof and t:
        q = prof[-1]
        rest = q["prof_step_ms"] - q["prof_conv_ms"]
        bound = 1e3 / rest
        r = bound / t["img_per_s"]
        bw = ""
        if "prof_fc_gbps" in q:
            bw = ("; the fc layers move 20 B per parameter (%.1f MB: forward 4, backward with the update fused 16) "
                  "at %.1f GB/s; the separate update alone on fresh arrays gets %.1f GB/s" % (
                  q["prof_fc_bytes"] / 1e6, q["prof_fc_gbps"], q["mem_update_gbps"]))
        elif "prof_update_gbps" in q:
            bw = ("; the update moves 24 B per parameter (%.1f MB) at %.1f GB/s, %.0f%% of what the same loop gets "
                  "alone on fresh arrays (%.1f GB/s)" % (q["prof_update_bytes"] / 1e6, q["prof_update_gbps"],
                  100 * q["prof_update_gbps"] / q["mem_update_gbps"], q["mem_update_gbps"]))
        row("core-bound%s-b1-t%d" % (tag, T), ">= 3x PyTorch at batch 1: reachable here?",
            "outside the convolutions a step takes %.3f ms (%s, rest %.3f: memory-bound passes "
            "over the parameters and fc weights%s); even with free convolutions <= %.0f img/s = %.1fx PyTorch's %.0f"
            % (rest, ("fc with their update %.3f, the conv layers' update inside their figures" % q["prof_fc_ms"])
               if q.get("update") == "fused" else ("update %.3f, fc %.3f" % (q["prof_update_ms"], q["prof_fc_ms"])),
               q["prof_other_ms"], bw, bound, r, t["img_per_s"]),
            data, "real (profiled run)", "3x out of reach on this machine" if r < 3 else "reachable in principle")
    sep = [r for r in rows if r.get("event") == "speed-separate-update" and r["threads"] == T and r["batch"] == 1]
    p = pdl.get((1, T))
    if sep and p:
        q = sep[-1]
        row("core-fused-update%s-b1-t%d" % (tag, T), "(no target) the update fused into the backward pass",
            "%.0f img/s fused vs %.0f with the update as a separate pass (net_backward + optim_step) = %.2fx; "
            "same parameters bit for bit" % (p["img_per_s"], q["img_per_s"], p["img_per_s"] / q["img_per_s"]),
            data, "real", "-")
    p = pdl.get((128, T))
    if p:
        row("core-sgemm%s-b128-t%d" % (tag, T), ">= 90% of the same run's sgemm GFLOP/s (nominal)",
            "%.1f of %.1f GFLOP/s = %.0f%%" % (p["gflops"], p["sgemm_gflops"], 100 * p["ratio_to_sgemm"]),
            data, "real", "met" if p["ratio_to_sgemm"] >= 0.9 else "NOT met")
PY
table_print
