#!/usr/bin/env python3
"""ci/regress.py — the comparison half of the CI regression gate (ci/regress.sh runs the probes).

Reads the measurements the probes wrote (JSON lines, see ci/README.md):
  {"metric": NAME, "value": V}              one sample; a name seen several times -> median
  {"skip": NAME, "reason": R}               NAME cannot be measured on this machine (e.g. no GPU)
  {"pending": NAME, "reason": R}            the feature is not in this build yet
  {"note": NAME, "text": T}                 how NAME was measured (shown if NAME fails)
  {"probe": P, "error": E}                  probe P failed to run
and the baselines (ci/baselines/*.json: a JSON list of records name, value, tolerance, direction,
unit, why [, kind]). tolerance is a number in the metric's unit, or a string "N%" of the baseline
value. direction: higher_is_better (fails below value - tol), lower_is_better (fails above
value + tol), exact (fails outside value +- tol; tol 0 = must be equal).

Throughput records carry "compare": "reference": their figure is a ratio measured in this run
on this machine, this tree against the build of the revision named in ci/perf-reference (see
ci/regress.sh, ab), so its value is 1 by construction and update never rewrites it; to lock in
a speed-up, point ci/perf-reference at a commit that has it.

compare: prints metric | baseline | now | delta | tolerance | verdict, one explicit line per
failure, appends the run to the history file and derives the .dat files plots/ci-history.gp
reads; exits 1 on any failure. update: rewrites the value fields from this run (policy fields are
kept), prints the diff, appends to history; exits 1 when something could not be measured.
clear --name N --value V: exits 0 when V passes N's record with at least half the tolerance to
spare (not for exact records or a null value): ci/regress.sh's ab stops taking pairs then.
Stdlib only."""
import argparse
import datetime
import difflib
import glob
import json
import math
import os
import socket
import statistics
import subprocess
import sys

DIRECTIONS = ("higher_is_better", "lower_is_better", "exact")
FIELDS = ("name", "value", "tolerance", "direction", "unit", "why")


def die(msg):
    print("regress: " + msg, file=sys.stderr)
    sys.exit(2)


def load_baselines(bdir):
    """-> (records by name in file order, {file: [names]})."""
    recs, files = {}, {}
    paths = sorted(glob.glob(os.path.join(bdir, "*.json")))
    if not paths:
        die("no baseline files in %s" % bdir)
    for path in paths:
        try:
            data = json.load(open(path))
        except (OSError, ValueError) as e:
            die("cannot read %s: %s" % (path, e))
        if not isinstance(data, list):
            die("%s: want a JSON list of records" % path)
        files[path] = []
        for r in data:
            miss = [f for f in FIELDS if f not in r]
            if miss:
                die("%s: record %s lacks %s" % (path, r.get("name", "?"), ", ".join(miss)))
            if r["direction"] not in DIRECTIONS:
                die("%s: %s: direction '%s' is not one of %s" % (path, r["name"], r["direction"], ", ".join(DIRECTIONS)))
            if not str(r["why"]).strip():
                die("%s: %s: 'why' is empty (every tolerance states its reason)" % (path, r["name"]))
            tol_abs(r, 1.0)  # validates the tolerance syntax
            if r.get("compare") not in (None, "reference"):
                die("%s: %s: compare '%s' is not 'reference'" % (path, r["name"], r["compare"]))
            if r.get("compare") == "reference" and (r["value"] != 1 or r["direction"] != "higher_is_better"):
                die("%s: %s: a compare=reference record is a speed ratio to the reference revision: "
                    "value 1, direction higher_is_better" % (path, r["name"]))
            if r["name"] in recs:
                die("%s: metric %s is also defined in another baseline file" % (path, r["name"]))
            r["_file"] = path
            recs[r["name"]] = r
            files[path].append(r["name"])
    return recs, files


def tol_abs(r, base):
    t = r["tolerance"]
    if isinstance(t, str) and t.endswith("%"):
        try:
            return abs(base) * float(t[:-1]) / 100.0
        except ValueError:
            pass
    elif isinstance(t, (int, float)) and not isinstance(t, bool) and t >= 0:
        return float(t)
    die("%s: tolerance %r is neither a number >= 0 nor 'N%%'" % (r["name"], t))


notes = {}   # metric -> how it was measured (a probe's `note`), printed with its failure


def load_measured(path):
    samples, skips, pend, errors = {}, {}, {}, []
    for ln, line in enumerate(open(path), 1):
        line = line.strip()
        if not line:
            continue
        try:
            o = json.loads(line)
        except ValueError:
            die("%s:%d: not JSON: %s" % (path, ln, line[:80]))
        if "metric" in o:
            v = o["value"]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                errors.append(("metric " + o["metric"], "non-numeric value %r" % (v,)))
            else:
                samples.setdefault(o["metric"], []).append(float(v))
        elif "skip" in o:
            skips[o["skip"]] = o.get("reason", "")
        elif "pending" in o:
            pend[o["pending"]] = o.get("reason", "")
        elif "note" in o:
            notes[o["note"]] = o.get("text", "")
        elif "probe" in o:
            errors.append(("probe " + o["probe"], o.get("error", "failed")))
    return samples, skips, pend, errors


def fmt(v):
    if v is None:
        return "-"
    if v == int(v) and abs(v) < 1e12:
        return "%d" % v
    return "%.6g" % v


def fmt_full(v):
    return "-" if v is None else "%.10g" % v


def judge(r, vals):
    """-> (verdict, failed, now, delta-string, note)."""
    base = r["value"]
    now = statistics.median(vals)
    if base is None:
        return "NO BASELINE", True, now, "", "record has value null: run make regress-update"
    tol = tol_abs(r, base)
    d = now - base
    delta = ("%+.4g" % d) + (" (%+.1f%%)" % (100.0 * d / base) if base else "")
    if r["direction"] == "exact":
        if len(set(vals)) > 1:
            return "NONDETERMINISTIC", True, now, delta, "repeats differ: %s" % ", ".join(fmt(v) for v in vals)
        if abs(d) > tol:
            return "CHANGED", True, now, delta, "must stay within +-%s" % fmt(tol)
        return "ok", False, now, delta, ""
    sign = 1.0 if r["direction"] == "higher_is_better" else -1.0
    if sign * d < -tol:
        return "REGRESSED", True, now, delta, "%s than the baseline by more than %s" % (
            "lower" if sign > 0 else "higher", fmt(tol))
    if sign * d > tol:
        if r.get("compare") == "reference":
            return "improved", False, now, delta, "faster than the reference revision: point ci/perf-reference at this commit to lock it in"
        return "improved", False, now, delta, "beyond tolerance: make regress-update to lock it in"
    return "ok", False, now, delta, ""


def tol_str(r):
    t = r["tolerance"]
    if r["direction"] == "exact":
        return "exact" if t in (0, "0%") else "+-%s" % (t if isinstance(t, str) else fmt(t))
    arrow = "-" if r["direction"] == "higher_is_better" else "+"
    return arrow + (t if isinstance(t, str) else fmt(t))


def git(*args):
    try:
        return subprocess.run(["git"] + list(args), capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_info():
    """-> (model name, widest x86 vector ISA) from /proc/cpuinfo, as pdl's results lines give them."""
    model, isa = "unknown", "unknown"
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return model, isa
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k.strip() == "model name" and model == "unknown":
            model = v.strip()
        elif k.strip() == "flags":
            flags = set(v.split())
            isa = next((f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in flags), "unknown")
            break
    return model, isa


def append_history(path, mode, ok, results, samples, elapsed, only, reference=""):
    if not path:
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    rev = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        rev += "-dirty"
    try:
        load = open("/proc/loadavg").read().split()[0]
    except OSError:
        load = None
    rec = {
        "event": "ci-regress", "mode": mode, "commit": rev,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(), "cpu": cpu_info()[0], "isa": cpu_info()[1],
        "reference": reference or None, "ncpu": os.cpu_count(), "loadavg_1m": float(load) if load else None,
        "elapsed_s": round(elapsed, 1), "ok": ok, "only": only or None,
        "figures": {n: statistics.median(v) for n, v in samples.items()},
        "spread": {n: [min(v), max(v), len(v)] for n, v in samples.items() if len(v) > 1},
        "verdicts": {n: res[0] for n, res in results.items()},
    }
    with open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    derive_dat(path)


def derive_dat(path):
    """history.jsonl -> history-throughput.dat and history-accuracy.dat (every other kind) beside
    it: one row per full (not --only) run, one column per metric with a non-zero baseline, the
    figure divided by the current baseline (curves sit at 1 while nothing moves; a deliberate
    change recorded by regress-update shows as a step). Columns: run date commit metric...;
    '?' where a run lacks the metric."""
    runs = []
    for line in open(path):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("event") == "ci-regress" and not o.get("only"):
            runs.append(o)
    base_dir = os.path.dirname(path) or "."
    try:
        recs, _ = load_baselines(os.environ.get("REGRESS_BASELINES", "ci/baselines"))
    except SystemExit:
        return
    for kind in ("accuracy", "throughput"):
        names = [n for n, r in recs.items() if (r.get("kind") == "throughput") == (kind == "throughput")
                 and isinstance(r["value"], (int, float)) and r["value"] != 0]
        with open(os.path.join(base_dir, "history-%s.dat.tmp" % kind), "w") as f:
            f.write("run date commit " + " ".join(names) + "\n")
            for i, o in enumerate(runs, 1):
                cells = []
                for n in names:
                    v = o["figures"].get(n)
                    cells.append("?" if v is None else "%.6g" % (v / recs[n]["value"]))
                f.write("%d %s %s %s\n" % (i, o["date"][:10], o["commit"], " ".join(cells)))
        os.replace(os.path.join(base_dir, "history-%s.dat.tmp" % kind), os.path.join(base_dir, "history-%s.dat" % kind))


def print_table(rows):
    head = ("metric", "baseline", "now", "delta", "tolerance", "verdict")
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) if rows else len(head[i]) for i in range(6)]
    line = " | ".join(h.ljust(w[i]) for i, h in enumerate(head))
    print(line)
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(" | ".join(c.ljust(w[i]) for i, c in enumerate(r)))


def write_baselines(files, recs, new_values):
    """Rewrite each file with new values; returns the unified diff text."""
    diff = []
    for path, names in files.items():
        old = open(path).read()
        out = []
        for n in names:
            r = {k: v for k, v in recs[n].items() if not k.startswith("_")}
            if n in new_values:
                r["value"] = new_values[n]
            out.append(r)
        text = json.dumps(out, indent=2, ensure_ascii=False) + "\n"
        if text != old:
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
            diff += difflib.unified_diff(old.splitlines(True), text.splitlines(True), path, path + " (new)")
    return "".join(diff)


def round_value(r, v):
    """Baselines of throughput metrics keep 4 significant digits (noise below that is not signal);
    deterministic metrics keep the value exactly as measured."""
    if r.get("kind") == "throughput" and v:
        return float("%.4g" % v)
    return int(v) if v == int(v) and r["direction"] == "exact" else v


def spread(recs, paths):
    """Run-to-run spread over several passes of the probes, beside each record's tolerance."""
    passes = [load_measured(p)[0] for p in paths]
    names = [n for n in recs if any(n in p for p in passes)] + sorted({n for p in passes for n in p} - set(recs))
    head = ("metric", "passes", "median", "pass medians vs median", "single samples vs median", "tolerance", "covered")
    rows = []
    for n in names:
        meds = [statistics.median(p[n]) for p in passes if n in p]
        singles = [v for p in passes for v in p.get(n, [])]
        m = statistics.median(meds)
        rel = lambda v: (100.0 * (v / m - 1)) if m else (0.0 if v == m else float("inf"))
        r = recs.get(n)
        if len(set(singles)) == 1:
            span_m = span_s = "identical"
        else:
            span_m = "%+.1f%% .. %+.1f%%" % (rel(min(meds)), rel(max(meds)))
            span_s = "%+.1f%% .. %+.1f%%" % (rel(min(singles)), rel(max(singles)))
        covered = "-"
        if r and r["value"] is not None:
            tol = tol_abs(r, r["value"])
            lo, hi = r["value"] - tol, r["value"] + tol
            if r["direction"] == "higher_is_better":
                hi = float("inf")
            elif r["direction"] == "lower_is_better":
                lo = -float("inf")
            covered = "yes" if all(lo <= v <= hi for v in meds) else "NO"
        rows.append((n, str(len(meds)), fmt(m), span_m, span_s, tol_str(r) if r else "-", covered))
    w = [max(len(head[i]), *(len(x[i]) for x in rows)) if rows else len(head[i]) for i in range(len(head))]
    print(" | ".join(h.ljust(w[i]) for i, h in enumerate(head)))
    print("-+-".join("-" * x for x in w))
    for x in rows:
        print(" | ".join(c.ljust(w[i]) for i, c in enumerate(x)))
    print("covered: every pass median lies within the baseline's tolerance (judged as the gate would)")
    return 0


def main():
    ap = argparse.ArgumentParser(description="compare CI measurements with ci/baselines")
    ap.add_argument("mode", choices=("compare", "update", "spread", "validate", "derive", "clear"))
    ap.add_argument("--measured", nargs="+", default=[], help="JSONL written by the probes (spread: one per pass)")
    ap.add_argument("--baselines", default="ci/baselines")
    ap.add_argument("--history", default="", help="append the run here ('' = do not)")
    ap.add_argument("--elapsed", type=float, default=0.0)
    ap.add_argument("--only", default="", help="probe filter used (partial run: unmeasured records are not judged)")
    ap.add_argument("--reference", default="", help="the throughput reference revision measured in this run")
    ap.add_argument("--name", default="", help="clear: the metric")
    ap.add_argument("--value", type=float, default=float("nan"), help="clear: the figure so far")
    a = ap.parse_args()
    os.environ["REGRESS_BASELINES"] = a.baselines
    recs, files = load_baselines(a.baselines)
    if a.mode == "validate":
        print("%d baseline records in %d files: ok" % (len(recs), len(files)))
        return 0
    if a.mode == "derive":
        derive_dat(a.history)
        return 0
    if a.mode == "clear":
        r = recs.get(a.name)
        if r is None or r["value"] is None or r["direction"] == "exact" or not math.isfinite(a.value):
            return 1
        sign = 1.0 if r["direction"] == "higher_is_better" else -1.0
        spare = sign * (a.value - r["value"]) + tol_abs(r, r["value"])
        return 0 if spare >= 0.5 * tol_abs(r, r["value"]) else 1
    if a.mode == "spread":
        return spread(recs, a.measured)
    samples, skips, pend, errors = load_measured(a.measured[0])

    rows, fails, results = [], [], {}
    for n, r in recs.items():
        if n in samples:
            v, failed, now, delta, note = judge(r, samples[n])
            if n in notes:
                note += " (measured: %s)" % notes[n]
            vals = samples[n]
            rng = " [%s..%s n=%d]" % (fmt(min(vals)), fmt(max(vals)), len(vals)) if len(vals) > 1 else ""
            nows, nowf = fmt(now) + rng, fmt_full(now) + rng
        elif n in skips:
            v, failed, nows, delta, note = "skip", False, "-", "", skips[n]
        elif n in pend and r["value"] is None:
            v, failed, nows, delta, note = "pending", False, "-", "", pend[n]
        elif n in pend:
            v, failed, nows, delta, note = "MISSING", True, "-", "", "had a baseline, now: " + pend[n]
        elif a.only:
            continue
        else:
            v, failed, nows, delta, note = "MISSING", True, "-", "", "not measured (its probe failed or no longer emits it)"
        if n not in samples:
            nowf = nows
        results[n] = (v, failed)
        rows.append((n, fmt(r["value"]), nows, delta, tol_str(r), v))
        if failed:
            fails.append((v, "FAIL %s: %s: baseline %s, now %s (%s, tolerance %s %s) — %s. Baseline reason: %s [%s]" % (
                n, v, fmt_full(r["value"]), nowf, r["direction"], tol_str(r), r["unit"], note, r["why"],
                os.path.relpath(r["_file"]))))
    for n in samples:
        if n not in recs:
            results[n] = ("NEW", True)
            rows.append((n, "-", fmt(statistics.median(samples[n])), "", "-", "NEW"))
            fails.append(("NEW", "FAIL %s: NEW: measured but has no record in %s: add one (name, value: null, "
                                 "tolerance, direction, unit, why), then make regress-update" % (n, a.baselines)))
    for what, err in errors:
        fails.append(("ERROR", "FAIL %s: %s" % (what, err)))

    if a.mode == "update":
        new = {n: round_value(recs[n], statistics.median(samples[n])) for n in samples
               if n in recs and results[n][0] != "NONDETERMINISTIC" and recs[n].get("compare") != "reference"}
        kept = [n for n in samples if n in recs and recs[n].get("compare") == "reference"]
        if kept:
            print("kept at 1: %s (ratios to the reference revision; to move it: edit ci/perf-reference)" % ", ".join(kept))
        diff = write_baselines(files, recs, new)
        print(diff if diff else "baselines unchanged: every value is as recorded")
        problems = [t for k, t in fails if k in ("MISSING", "NEW", "ERROR", "NONDETERMINISTIC")]
        for t in problems:
            print(t)
        ok = not problems
        append_history(a.history, "update", ok, results, samples, a.elapsed, a.only, a.reference)
        print("regress-update: %d values recorded%s" % (len(new), "" if ok else "; %d problems above (exit 1)" % len(problems)))
        return 0 if ok else 1

    print_table(rows)
    counts = {}
    for v, _ in results.values():
        counts[v] = counts.get(v, 0) + 1
    print()
    for n in sorted(skips):
        if n in recs and n not in samples and skips[n]:
            print("skip %s: %s" % (n, skips[n]))
    for _, t in fails:
        print(t)
    ok = not fails
    append_history(a.history, "compare", ok, results, samples, a.elapsed, a.only, a.reference)
    summary = ", ".join("%d %s" % (c, v) for v, c in sorted(counts.items()))
    print("regress: %d metrics: %s%s; %s (%.0f s)" % (len(results), summary,
          "; %d probe error(s)" % len(errors) if errors else "", "PASS" if ok else "FAIL", a.elapsed))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
