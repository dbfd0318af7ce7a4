#!/usr/bin/env python3
"""bench/verdict.py — the one verdict engine for every paper of the suite (issue 31).

The rules live in the claims registry, bench/claims/<paper>.toml (read with Python's own tomllib),
written before the results; a rule changed after results keeps its old form in the claim's history.
The summarizers (bench/*/summarize.py, bench/easgd/e23.py, bench/collectives/summary.py) only
reduce the raw results (results/<paper>/**/*.jsonl) to named metrics, one set per seed, and hand
them to this engine; no summarizer decides a verdict itself (tests/t_verdict.sh greps for that).

  python3 bench/verdict.py --paper gossip [--results DIR] [--format md|json|tsv]
  python3 bench/verdict.py --all [--results-root DIR] --format json
  python3 bench/verdict.py --check-registry      parse every bench/claims/*.toml, exit 1 on an error

--results DIR defaults to results/<paper>. The engine reads DIR/measurements.jsonl (the metrics the
summarizer wrote: one JSON object per claim and seed) and checks every *.jsonl under DIR: a line that
is not JSON gives a one-line error naming the file and line (on stderr, and as an error row), exit
status 1, never a traceback; a claim with no measurement gives the verdict `no results`.

Registry (bench/claims/<paper>.toml):
  paper = "gossip"; title = "..."
  [[claim]]
  id         "G2" (sub-claims are separate ids: H3a, H3b, ...)
  label      the table's first cell when the summarizer gives none
  statement  the paper's sentence; source: figure / table / equation
  kind       reproduction | consistency (true by our construction: `construction` says why) |
             observation | beyond
  metrics    the metric names the rule reads; results: the raw files (globs under DIR) they come from
  value      optional expression: the headline number (its per-seed values give mean, min, max)
  rule       boolean expression over the metrics (and `tol`, `value`); empty: nothing to judge (shown)
  tolerance  number, `tol` in the expressions; paper_value: the paper's figure, as text
  seeds      seeds the full bench needs (>= 3 where stochastic); seeds_quick (QUICK); stochastic
  aggregate  "mlperf" for time to accuracy: with >= 5 seeds the rule judges the element-wise mean
             of the metrics without the fastest and slowest seed, and more than one seed that never
             reaches a target (a time >= 1e300) makes it inconclusive; below 5 seeds, per seed
  not_comparable  a reason: the verdict is `not comparable` whatever the rule says (it is still
             evaluated and shown in the reason)
  simulated  true when the evidence is SIMULATED (SimGrid); fixed_at: the commit that fixed the rule
  [[claim.history]] date, rule (the old expression), value, reason, verdict (recorded under it)

Verdicts (one vocabulary): agrees, disagrees, inconclusive (the seeds disagree: their spread
straddles the rule's threshold), not comparable (with the reason), consistency check (kind
consistency; the reason says whether it held), observation (kind observation), shown (no rule:
a figure or a beyond-the-paper row with nothing to judge; a beyond row with a rule, e.g. the
suite's own targets, is judged agrees / disagrees like a reproduction), no results.

Expressions are Python expressions evaluated with no builtins except: all any abs min max len sum
sorted zip range round float int mean isfinite inf nan nonincreasing(xs, slack) nondecreasing(xs,
slack) ratio(a, b); attribute access and names starting with '_' are refused.

JSON row format (--format json; one list of rows; --all gives every paper's rows):
  {"paper": str, "id": str, "label": str, "statement": str, "source": str, "kind": str,
   "rule": str, "tolerance": number|null, "fixed_at": str,
   "history": [{"date": str, "rule": str, "reason": str, "verdict": str (recorded then),
                "verdict_now": str (the old rule on these results)}],
   "seeds": [{"seed": int|str, "value": number|null, "holds": bool|null, "metrics": {...}}],
   "mean": number|null, "min": number|null, "max": number|null, "paper_value": str|null,
   "ours": str, "verdict": str, "reason": str, "simulated": bool, "mode": str, "data_set": str,
   "plot": str|null (a path under plots/out), "error": str|null}
An error row (a malformed results file) has id "error", verdict "no results" and the one-line
message in reason and error. A claim measured at several settings (per method, per p) gives one
row per instance, its id followed by the instance ("E3-vs-p EAMSGD"). "history" entries, "date" is
the day the old rule was last in force. Values that were infinite ("never reached") are stored as
1e308.

From a summarizer (bench/gossip/summarize.py is the model):
  V = verdict.Session("gossip", RES, quick=QUICK)
  cell = V.claim("G2-faster", [metrics_seed1, metrics_seed2, ...], seeds=[1, 2, ...], mode=..., data_set=...)
  V.describe(label, ours, data_set, mode)   # the table row just built (row() helpers call it)
  V.write()     # RES/measurements.jsonl, RES/verdicts.json, RES/verdicts.md; V.errors afterwards
`cell` is the table's verdict cell. Stdlib only.
"""
import argparse
import ast
import fnmatch
import glob
import json
import math
import os
import sys

try:
    import tomllib
except ImportError:   # python < 3.11
    tomllib = None

HERE = os.path.dirname(os.path.abspath(__file__))
CLAIMS_DIR = os.path.join(HERE, "claims")
PAPERS = ["ppasgd", "easgd", "collectives", "kfac", "hermans", "gossip"]
VERDICTS = ("agrees", "disagrees", "inconclusive", "not comparable", "consistency check", "observation", "shown",
            "no results")
KINDS = ("reproduction", "consistency", "observation", "beyond")
MEASUREMENTS = "measurements.jsonl"


class VerdictError(Exception):
    """One-line message naming the file or flag."""


# ---- expressions --------------------------------------------------------------------------------
def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def _nonincreasing(xs, slack=0.0):
    xs = list(xs)
    return all(b <= a * (1 + slack) for a, b in zip(xs, xs[1:]))


def _nondecreasing(xs, slack=0.0):
    xs = list(xs)
    return all(b >= a - slack for a, b in zip(xs, xs[1:]))


def _ratio(a, b):
    return a / b if b else float("nan")


HELPERS = {"all": all, "any": any, "abs": abs, "min": min, "max": max, "len": len, "sum": sum, "sorted": sorted,
           "zip": zip, "range": range, "round": round, "float": float, "int": int, "mean": _mean,
           "isfinite": lambda x: x is not None and math.isfinite(x), "inf": math.inf, "nan": math.nan,
           "nonincreasing": _nonincreasing, "nondecreasing": _nondecreasing, "ratio": _ratio,
           "True": True, "False": False, "None": None}


def compile_expr(expr, where):
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise VerdictError("%s: expression %r does not parse (%s)" % (where, expr, e.msg))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            raise VerdictError("%s: expression %r uses attribute access, which the engine refuses" % (where, expr))
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise VerdictError("%s: expression %r uses the name %s" % (where, expr, node.id))
    return compile(tree, where, "eval")


def evaluate(code, env):
    scope = dict(HELPERS)
    scope.update(env)
    scope["__builtins__"] = {}   # globals, so that comprehensions see the metrics too
    return eval(code, scope)     # noqa: S307 (no builtins, no attributes: see compile_expr)


# ---- registry -----------------------------------------------------------------------------------
def load_registry(paper, claims_dir=CLAIMS_DIR):
    path = os.path.join(claims_dir, paper + ".toml")
    if tomllib is None:
        raise VerdictError("%s: python3 >= 3.11 is needed for tomllib" % path)
    try:
        with open(path, "rb") as f:
            reg = tomllib.load(f)
    except OSError as e:
        raise VerdictError("%s: cannot read (%s)" % (path, e.strerror))
    except tomllib.TOMLDecodeError as e:
        raise VerdictError("%s: not valid TOML (%s)" % (path, e))
    claims = reg.get("claim", [])
    seen = set()
    for c in claims:
        where = "%s claim %s" % (path, c.get("id", "?"))
        for k in ("id", "statement", "source", "kind", "fixed_at"):
            if not isinstance(c.get(k), str) or not c.get(k):
                raise VerdictError("%s: missing or empty field %r" % (where, k))
        if c["id"] in seen:
            raise VerdictError("%s: duplicate id" % where)
        seen.add(c["id"])
        if c["kind"] not in KINDS:
            raise VerdictError("%s: kind %r is not one of %s" % (where, c["kind"], ", ".join(KINDS)))
        if c["kind"] == "consistency" and not c.get("construction"):
            raise VerdictError("%s: a consistency claim must say what makes it true by construction" % where)
        c["_rule"] = compile_expr(c["rule"], where + " rule") if c.get("rule") else None
        c["_value"] = compile_expr(c["value"], where + " value") if c.get("value") else None
        for h in c.get("history", []):
            for k in ("date", "rule", "reason", "verdict"):
                if k not in h:
                    raise VerdictError("%s: a history entry lacks %r" % (where, k))
            h["_rule"] = compile_expr(h["rule"], where + " history rule") if h["rule"] else None
            h["_value"] = compile_expr(h["value"], where + " history value") if h.get("value") else None
    reg["_path"] = path
    reg["_by_id"] = {c["id"]: c for c in claims}
    return reg


# ---- results ------------------------------------------------------------------------------------
def check_jsonl(path):
    """None when every non-empty line of path is JSON, else the one-line error naming the file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        json.loads(line)
                    except ValueError as e:
                        return "%s line %d: not JSON (%s)" % (path, n, str(e).split(":")[0])
    except OSError as e:
        return "%s: cannot read (%s)" % (path, e.strerror)
    return None


def scan_results(res):
    """One-line errors for every malformed *.jsonl under res."""
    errs = []
    for p in sorted(glob.glob(os.path.join(res, "**", "*.jsonl"), recursive=True)):
        e = check_jsonl(p)
        if e:
            errs.append((p, e))
    return errs


def read_measurements(res):
    """{id: [measurement, ...]} from res/measurements.jsonl; raises VerdictError naming the file."""
    path = os.path.join(res, MEASUREMENTS)
    if not os.path.exists(path):
        return {}
    e = check_jsonl(path)
    if e:
        raise VerdictError(e)
    out = {}
    for line in open(path, encoding="utf-8"):
        if line.strip():
            m = json.loads(line)
            if not isinstance(m, dict) or "id" not in m:
                raise VerdictError("%s: a line without an id: %s" % (path, line.strip()[:80]))
            out.setdefault(m["id"], []).append(m)
    return out


def by_instance(ms):
    """[(instance, measurements)] in first-seen order (a claim measured at several settings, e.g.
    per method or per p, gives one row per instance)."""
    out = {}
    for m in ms:
        out.setdefault(m.get("instance"), []).append(m)
    return list(out.items()) or [(None, [])]


# ---- judging ------------------------------------------------------------------------------------
def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _seed_outcomes(rule, value, seeds, tol, params):
    """[(value, holds)] per seed; holds None with the error when the metrics do not let it evaluate."""
    out, errs = [], []
    for s in seeds:
        env = dict(params)
        env.update(s.get("metrics") or {})
        env["tol"] = tol
        v = h = None
        try:
            if value is not None:
                v = evaluate(value, env)
                env["value"] = v
            if rule is not None:
                h = bool(evaluate(rule, env))
        except Exception as e:   # a missing metric or a bad value: named in the row, never a traceback
            errs.append("seed %s: %s: %s" % (s.get("seed"), type(e).__name__, e))
        out.append((float(v) if _num(v) else None, h))
    return out, errs


NEVER = 1e300   # a time at or above this is "never reached" (measurements store inf as 1e308)


def _trimmed(xs):
    """The mean of xs without its smallest and largest value (MLPerf training's rule for 5 runs)."""
    xs = sorted(xs)
    return sum(xs[1:-1]) / (len(xs) - 2)


def _aggregate(ms):
    """Element-wise MLPerf aggregate of per-seed metrics (same shape in every seed): numbers are
    trimmed means, booleans need every seed, anything else is taken from the first seed."""
    a = ms[0]
    if isinstance(a, bool):
        return all(ms)
    if isinstance(a, (int, float)) and all(isinstance(m, (int, float)) for m in ms):
        return _trimmed([float(m) for m in ms])
    if isinstance(a, dict):
        return {k: _aggregate([m.get(k) for m in ms]) for k in a}
    if isinstance(a, list) and all(isinstance(m, list) and len(m) == len(a) for m in ms):
        return [_aggregate([m[i] for m in ms]) for i in range(len(a))]
    return a


def _never(m):
    if isinstance(m, dict):
        return any(_never(v) for v in m.values())
    if isinstance(m, list):
        return any(_never(v) for v in m)
    return isinstance(m, float) and m >= NEVER


def _outcome(holds):
    hs = [h for h in holds if h is not None]
    if not hs or len(hs) < len(holds):
        return None
    if all(hs):
        return "agrees"
    if not any(hs):
        return "disagrees"
    return "inconclusive"


def judge(paper, claim, meas, quick=False, error=None):
    """One row (the JSON row format above) for claim from its measurements (one per seed)."""
    seeds = [m for m in meas if m.get("metrics") is not None]
    last = meas[-1] if meas else {}
    tol = claim.get("tolerance")
    params = claim.get("params", {})
    inst = last.get("instance")
    row = {"paper": paper, "id": claim["id"] + (" " + inst if inst else ""), "label": last.get("label") or claim.get("label") or claim["id"],
           "statement": claim["statement"], "source": claim["source"], "kind": claim["kind"],
           "rule": claim.get("rule", ""), "tolerance": tol, "fixed_at": claim["fixed_at"],
           "history": [], "seeds": [], "mean": None, "min": None, "max": None,
           "paper_value": claim.get("paper_value"), "ours": last.get("ours") or "not run",
           "verdict": "no results", "reason": "", "simulated": bool(last.get("simulated", claim.get("simulated", False))),
           "mode": last.get("mode") or ("SIMULATED" if claim.get("simulated") else "real"),
           "data_set": last.get("data_set") or "-", "plot": last.get("plot") or claim.get("plot"), "error": error}
    if row["simulated"] and "SIMULATED" not in row["mode"]:
        row["mode"] = "SIMULATED: " + row["mode"]
    if error:
        row["reason"] = error
        return row
    if not seeds:
        row["reason"] = last.get("why") or "no measurement in the results (the bench has not run this experiment)"
        return row
    res, errs = _seed_outcomes(claim.get("_rule"), claim.get("_value"), seeds, tol, params)
    row["seeds"] = [{"seed": s.get("seed"), "value": v, "holds": h, "metrics": s.get("metrics")}
                    for s, (v, h) in zip(seeds, res)]
    vals = [v for v, _ in res if v is not None]
    if vals:
        row["mean"], row["min"], row["max"] = sum(vals) / len(vals), min(vals), max(vals)
    outcome = _outcome([h for _, h in res]) if claim.get("_rule") is not None else None
    notes = []
    if errs:
        notes.append("the rule cannot be evaluated: " + "; ".join(errs))
    if claim.get("aggregate") == "mlperf" and claim.get("_rule") is not None and not errs:
        # time to accuracy, MLPerf training style: with 5 or more seeds, drop the fastest and the
        # slowest, judge the mean of the rest; at most one seed may never reach a target
        if len(seeds) >= 5:
            failed = sum(1 for s in seeds if _never(s.get("metrics")))
            agg = _aggregate([s["metrics"] for s in seeds])
            if failed > 1:
                outcome = "inconclusive"
                notes.append("%d seeds never reached a target (MLPerf allows one)" % failed)
            else:
                (_, h), = _seed_outcomes(claim["_rule"], None, [{"seed": "trimmed mean", "metrics": agg}], tol, params)[0]
                per = outcome
                outcome = "agrees" if h else "disagrees"
                notes.append("MLPerf rule: %d seeds, fastest and slowest dropped, the mean of the rest judged "
                             "(per seed: %s)" % (len(seeds), per))
        elif len(seeds) > 1:
            notes.append("judged per seed: the MLPerf rule (drop the fastest and slowest of 5) needs 5 seeds")
    if claim.get("_rule") is not None and outcome == "inconclusive" and not any("MLPerf allows" in n for n in notes):
        notes.append("the rule holds on %d of %d seeds: their spread straddles the threshold"
                     % (sum(1 for _, h in res if h), len(res)))
    kind = claim["kind"]
    if claim.get("not_comparable"):
        verdict = "not comparable"
        notes.insert(0, claim["not_comparable"] + ("; the rule alone would read %s" % outcome if outcome else ""))
    elif errs:
        verdict = "no results"
    elif kind == "consistency":
        verdict = "consistency check"
        notes.insert(0, "true by construction: %s; the rule %s" % (
            claim["construction"], {"agrees": "holds", "disagrees": "FAILS", "inconclusive": "holds on some seeds only"}
            .get(outcome, "was not evaluated")))
    elif kind == "observation":
        verdict = "observation"
        if claim.get("observation"):
            notes.insert(0, claim["observation"])
        if outcome:
            notes.append("the rule %s" % {"agrees": "holds", "disagrees": "does not hold",
                                          "inconclusive": "holds on some seeds only"}[outcome])
    elif claim.get("_rule") is None:   # nothing to judge (beyond the paper, or a figure shown)
        verdict = "shown"
        if claim.get("shown"):
            notes.insert(0, claim["shown"])
    else:
        verdict = outcome
    for m in meas:
        for f in m.get("flags") or []:
            if f not in notes:
                notes.append(f)
    need = claim.get("seeds_quick" if quick else "seeds", 1)
    if claim.get("stochastic", True) and len(seeds) < need:
        notes.append("%d seed%s of the %d the registry asks for%s: the noise is unknown" % (
            len(seeds), "" if len(seeds) == 1 else "s", need, " (QUICK)" if quick else ""))
    if verdict not in VERDICTS:   # the one vocabulary: a rule that yields anything else is a bug here
        raise VerdictError("%s: claim %s gave the verdict %r" % (paper, claim["id"], verdict))
    row["verdict"] = verdict
    row["reason"] = "; ".join(notes)
    for h in claim.get("history", []):
        now = "not evaluable"
        if h.get("_rule") is not None:
            hr, herr = _seed_outcomes(h["_rule"], h.get("_value"), seeds, tol, {**params, **h.get("params", {})})
            now = _outcome([x for _, x in hr]) if not herr else "not evaluable (%s)" % herr[0]
        row["history"].append({"date": h["date"], "rule": h["rule"], "reason": h["reason"], "verdict": h["verdict"],
                               "verdict_now": now or "not evaluable"})
    return row


def rows_for(paper, res, quick=None, claims_dir=CLAIMS_DIR):
    """(rows, errors) for paper from the results directory res."""
    reg = load_registry(paper, claims_dir)
    errors = [e for _, e in scan_results(res)] if os.path.isdir(res) else []
    meas_err = None
    try:
        meas = read_measurements(res)
    except VerdictError as e:
        meas, meas_err = {}, str(e)
        if str(e) not in errors:
            errors.append(str(e))
    if quick is None:
        q = [m.get("quick") for ms in meas.values() for m in ms]
        quick = bool(q and q[-1])
    rows = []
    for c in reg["claim"]:
        bad = meas_err
        if not bad:
            for p, e in scan_results(res) if errors else []:
                rel = os.path.relpath(p, res)
                if any(fnmatch.fnmatch(rel, g) for g in c.get("results", [])):
                    bad = e
                    break
        for _, ms in by_instance(meas.get(c["id"], [])):
            rows.append(judge(paper, c, ms, quick, bad))
    for e in errors:
        rows.append(error_row(paper, e))
    return rows, errors


def error_row(paper, msg):
    return {"paper": paper, "id": "error", "label": "error", "statement": "-", "source": "-", "kind": "-", "rule": "",
            "tolerance": None, "fixed_at": "-", "history": [], "seeds": [], "mean": None, "min": None, "max": None,
            "paper_value": None, "ours": "-", "verdict": "no results", "reason": msg, "simulated": False,
            "mode": "-", "data_set": "-", "plot": None, "error": msg}


# ---- the summarizers' side ----------------------------------------------------------------------
class Session:
    """What a summarizer uses: claim() records the metrics of one claim (one dict per seed) and
    returns the table's verdict cell, decided by the engine; write() stores RES/measurements.jsonl,
    RES/verdicts.json and RES/verdicts.md (every registry claim, with rule, seeds and history)."""

    def __init__(self, paper, res, quick=False, claims_dir=CLAIMS_DIR, keep=False):
        """keep: start from the measurements already in res (a second step of the same bench
        adds its claims to the first's); otherwise only what this session records is written."""
        self.paper, self.res, self.quick = paper, res, bool(quick)
        self.reg = load_registry(paper, claims_dir)
        self.meas = []
        self.errors = []   # after write(): one line per malformed results file (each also an error row)
        if keep:
            try:
                self.meas = [m for ms in read_measurements(res).values() for m in ms]
            except VerdictError:
                self.meas = []

    def claim(self, cid, metrics=None, ours="", data_set="-", mode=None, label=None, plot=None, flags=None,
              why=None, seeds=None, simulated=None, instance=None):
        """metrics: a dict (one seed) or a list of dicts (one per seed; `seeds` names them); None
        when the experiment has no results (`why` says so). Returns the verdict cell."""
        c = self.reg["_by_id"].get(cid)
        if c is None:
            raise VerdictError("%s: no claim %r (a summarizer asked for it)" % (self.reg["_path"], cid))
        per = [] if metrics is None else (metrics if isinstance(metrics, list) else [metrics])
        names = seeds or [m.pop("_seed", i + 1) if isinstance(m, dict) else i + 1 for i, m in enumerate(per)]
        sim = c.get("simulated", False) if simulated is None else simulated
        base = {"paper": self.paper, "id": cid, "ours": ours, "data_set": data_set, "mode": mode, "label": label,
                "plot": plot, "flags": flags or [], "simulated": sim, "quick": self.quick, "instance": instance}
        ms = [dict(base, seed=s, metrics=_plain(m)) for s, m in zip(names, per)] or [dict(base, seed=None, metrics=None,
                                                                                          why=why)]
        self.meas = [m for m in self.meas if (m["id"], m.get("instance")) != (cid, instance)] + ms
        self._last = (cid, instance)
        r = judge(self.paper, c, ms, self.quick)
        return cell(r)

    def describe(self, label, ours, data_set=None, mode=None):
        """The table row just built from the last claim() call: its label and text (ours, data
        set, mode) go into that claim's rows, where claim() was given none."""
        key = getattr(self, "_last", None)
        if key is None:
            return
        self._last = None
        for m in self.meas:
            if (m["id"], m.get("instance")) == key:
                m["label"] = m.get("label") or label
                m["ours"] = m.get("ours") or ours
                if data_set and m.get("data_set") in (None, "", "-"):
                    m["data_set"] = data_set
                if mode and not m.get("mode"):
                    m["mode"] = mode

    def write(self):
        with open(os.path.join(self.res, MEASUREMENTS + ".tmp"), "w") as f:
            for m in self.meas:
                f.write(json.dumps(m) + "\n")
        os.replace(os.path.join(self.res, MEASUREMENTS + ".tmp"), os.path.join(self.res, MEASUREMENTS))
        rows, errors = rows_for(self.paper, self.res, self.quick)
        self.errors = errors
        for e in errors:
            print("verdict: %s" % e, file=sys.stderr)
        with open(os.path.join(self.res, "verdicts.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(os.path.join(self.res, "verdicts.md"), "w") as f:
            f.write(markdown(rows))
        return rows


def _plain(m):
    """JSON-safe metrics: tuples to lists, non-finite floats to None; dict keys to strings."""
    if isinstance(m, dict):
        return {str(k): _plain(v) for k, v in m.items()}
    if isinstance(m, (list, tuple)):
        return [_plain(v) for v in m]
    if isinstance(m, float) and not math.isfinite(m):
        return None if math.isnan(m) else (1e308 if m > 0 else -1e308)
    return m


def cell(r):
    """The table's verdict cell: the verdict; its reason unless it agrees plainly; with several
    seeds, their number and the headline value's mean and range."""
    v = r["verdict"]
    short = "; ".join(p for p in r["reason"].split("; ") if p and "the noise is unknown" not in p)
    parts = [short] if short and v != "agrees" else []
    parts += [p.replace(" the registry asks for", "") for p in r["reason"].split("; ") if "the noise is unknown" in p]
    if len(r["seeds"]) > 1:
        parts.append("value %s" % spread(r) if r["mean"] is not None else "%d seeds" % len(r["seeds"]))
    return v + (" (%s)" % "; ".join(parts) if parts else "")


# ---- output -------------------------------------------------------------------------------------
def fmt(x):
    return "-" if x is None else ("%.4g" % x if isinstance(x, float) else str(x))


def spread(r):
    if r["mean"] is None:
        return "-"
    n = len([s for s in r["seeds"] if s["value"] is not None])
    return fmt(r["mean"]) if n < 2 else "%s (%s to %s, %d seeds)" % (fmt(r["mean"]), fmt(r["min"]), fmt(r["max"]), n)


def esc(s):
    return str(s).replace("|", "/").replace("\n", " ")


def markdown(rows):
    out = ["| id | kind | rule (tolerance) | fixed at | seeds | value: mean (min-max) | paper | verdict |",
           "|---|---|---|---|---|---|---|---|"]
    hist = []
    for r in rows:
        out.append("| %s | %s | `%s`%s | %s | %d | %s | %s | %s%s |" % (
            esc(r["id"]), r["kind"], esc(r["rule"] or "-"), " (%s)" % fmt(r["tolerance"]) if r["tolerance"] is not None else "",
            r["fixed_at"], len(r["seeds"]), spread(r), esc(r["paper_value"] or "-"), r["verdict"],
            ": " + esc(r["reason"]) if r["reason"] else ""))
        for h in r["history"]:
            hist.append("- **%s**, until %s: `%s` — %s. Verdict then: %s; the old rule on these results: %s." % (
                r["id"], h["date"], esc(h["rule"]), esc(h["reason"]), esc(h["verdict"]), esc(h["verdict_now"])))
    text = "\n".join(out) + "\n"
    if hist:
        text += "\nRule histories (a rule changed after results keeps its old form):\n\n" + "\n".join(hist) + "\n"
    return text


def tsv(rows):
    return "".join("\t".join(esc(x) for x in (r["label"], r["statement"], r["ours"], r["data_set"], r["mode"], cell(r)))
                   + "\n" for r in rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description="The suite's one verdict engine: the claims registry "
                                             "(bench/claims/*.toml) applied to results/<paper>/.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--paper", choices=PAPERS, help="one paper")
    g.add_argument("--all", action="store_true", help="every paper")
    g.add_argument("--check-registry", action="store_true", help="parse every registry file and exit")
    ap.add_argument("--results", help="results directory of --paper (default results/<paper>)")
    ap.add_argument("--results-root", default=os.environ.get("PDL_RESULTS", "results"),
                    help="root of the results (default $PDL_RESULTS or results)")
    ap.add_argument("--claims", default=CLAIMS_DIR, help="registry directory (default bench/claims)")
    ap.add_argument("--format", choices=("md", "json", "tsv"), default="md")
    a = ap.parse_args(argv)
    try:
        if a.check_registry:
            n = 0
            for p in PAPERS:
                n += len(load_registry(p, a.claims)["claim"])
            print("verdict: %d claims in %d registry files parse" % (n, len(PAPERS)))
            return 0
        papers = PAPERS if a.all else [a.paper]
        rows, errors = [], []
        for p in papers:
            res = a.results if (a.results and not a.all) else os.path.join(a.results_root, p)
            r, e = rows_for(p, res, claims_dir=a.claims)
            rows += r
            errors += e
    except VerdictError as e:
        print("verdict: %s" % e, file=sys.stderr)
        return 1
    if a.format == "json":
        print(json.dumps(rows, indent=1))
    elif a.format == "tsv":
        sys.stdout.write(tsv(rows))
    else:
        sys.stdout.write(markdown(rows))
    for e in errors:
        print("verdict: %s" % e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
