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
  python3 bench/verdict.py --list-papers         the papers (bench/claims/*.toml), one tab-separated line each
  --lenient (or PDL_CLAIMS_REQUIRE_QUOTES=0): do not require quote / quote_ja / strength / why

--results DIR defaults to results/<paper> (DIR/record/, the committed results of record, when DIR has
no measurements.jsonl: a fresh clone). The engine reads DIR/measurements.jsonl (the metrics the
summarizer wrote: one JSON object per claim and seed) and checks every *.jsonl under DIR: a line that
is not JSON gives a one-line error naming the file and line (on stderr, and as an error row), exit
status 1, never a traceback; a claim with no measurement gives the verdict `no results`. A
measurement line is typed: id a non-empty string, instance a string or null, seed an integer, a
string or null, metrics an object or null, label / ours / data_set / mode / why strings or null,
flags a list, quick / simulated booleans; a wrong type is a one-line error naming file, line and
field. Metric values are numbers, (nested) lists of numbers, or null: a boolean or a string gives
the claim an error row naming the claim, seed and metric (the rule in the TOML decides, not a
boolean computed in a summarizer). DIR may be a results of record, results/<paper>/record/
(bench/record.py: measurements.jsonl, runs.jsonl.gz, verdicts.json, manifest.json; tests/t_record.sh
re-derives docs/REPRODUCTION.md, README's status block and verdicts.json from it).

read_jsonl(path): the one JSONL loader of the bench scripts (summarizers import it): a list of
dicts; a torn last line is skipped with a one-line warning naming file and line; any other bad
line raises VerdictError naming file and line.

Registry (bench/claims/<paper>.toml; every error is one line naming the file, the claim and the field):
  paper = "gossip"; title = "..."     (top-level keys, read by papers(): the one list of papers)
  order = 6; bench = "make bench-gossip"; doc_title = "## ... (bench-gossip)" (its section in
  docs/REPRODUCTION.md); paper_ids = ["G1", ...] (docs/PAPERS.md's ids); group = "kfac" (a file
  shown under another paper on the report page); language = "ja" (claims need quote_ja)
  [[claim]]
  id         "G2" (sub-claims are separate ids: H3a, H3b, ...)
  label      the table's first cell when the summarizer gives none
  statement  our one-line summary of the claim
  quote      the paper's own sentence(s), verbatim (a Japanese paper: a faithful English
             translation); quote_ja: the original, verbatim (language = "ja")
  source     figure / table / equation, section and page: "Fig. 3 (right), §3.1, p. 5"
  strength   faithful | weaker | stronger | different: the rule against the quote; why: what
             differs and why (required unless faithful); half: which half of a split claim
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
  [[claim.history]] date (YYYY-MM-DD, the last day the old form was in force), rule (the old
             expression, "" if none), tolerance (the old one; omitted: the old rule had none), value,
             kind (the old kind), reason, verdict (recorded under it; "unknown"), commit. The old rule
             is re-evaluated on today's results with its own tolerance (verdict_now).
The issue-45 fields (quote, strength, why, and quote_ja for language = "ja") are required unless
PDL_CLAIMS_REQUIRE_QUOTES=0 or --lenient (a switch for registries being rewritten).

Verdicts (one vocabulary): agrees, disagrees, inconclusive (the seeds disagree: their spread
straddles the rule's threshold), not comparable (with the reason), consistency check (kind
consistency; the reason says whether it held), observation (kind observation), shown (no rule:
a figure or a beyond-the-paper row with nothing to judge; a beyond row with a rule, e.g. the
suite's own targets, is judged agrees / disagrees like a reproduction), no results.

Expressions are Python expressions evaluated with no builtins except: all any abs min max len sum
sorted zip range round float int mean isfinite inf nan nonincreasing(xs, slack) nondecreasing(xs,
slack) ratio(a, b); attribute access, lambdas and names starting with '_' are refused. They are
bounded: integer constants up to 1e12 (write larger ones as floats), a ** b refused for an integer
exponent above 64 or a result above 2**1024, sequence repetition refused, range() at most 1e6
elements, 5 s per evaluation (SIGALRM, main thread): a rule past a bound gives its row a reason,
never a hang or a traceback.

JSON row format (--format json; one list of rows; --all gives every paper's rows):
  {"paper": str, "id": str, "label": str, "statement": str, "source": str, "kind": str,
   "rule": str, "tolerance": number|null, "fixed_at": str,
   "history": [{"date": str, "rule": str, "tolerance": number|null, "kind": str|null, "commit": str|null,
                "reason": str, "verdict": str (recorded then), "verdict_now": str (the old rule, with
                its own tolerance, on these results)}],
   "seeds": [{"seed": int|str, "value": number|null, "holds": bool|null, "metrics": {...}}],
   "mean": number|null, "min": number|null, "max": number|null, "paper_value": str|null,
   "ours": str, "verdict": str, "reason": str, "simulated": bool, "mode": str, "data_set": str,
   "plot": str|null (a path under plots/out), "error": str|null, "quote": str, "quote_ja": str,
   "strength": str, "why": str, "half": str}
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
import signal
import sys
import threading

try:
    import tomllib
except ImportError:   # python < 3.11
    tomllib = None

HERE = os.path.dirname(os.path.abspath(__file__))
CLAIMS_DIR = os.path.join(HERE, "claims")
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


MAX_INT = 10 ** 12      # the largest integer constant an expression may write (floats are free)
MAX_POW = 64            # the largest integer exponent (a**b with |b| above it is refused)
MAX_SEQ = 10 ** 6       # the longest range() an expression may make
MAX_SECONDS = 5.0       # one expression's evaluation time (main thread: SIGALRM)


class ExprLimit(Exception):
    """An expression went past one of the bounds above."""


def _range(*a):
    r = range(*a)
    if len(r) > MAX_SEQ:
        raise ExprLimit("range of %d elements (at most %d)" % (len(r), MAX_SEQ))
    return r


def _safe_mul(a, b):
    if isinstance(a, (str, bytes, list, tuple)) or isinstance(b, (str, bytes, list, tuple)):
        raise ExprLimit("sequence repetition (%s * %s)" % (type(a).__name__, type(b).__name__))
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > 256:
        raise ExprLimit("integer product above 2**256")
    return a * b


def _safe_pow(a, b):
    if isinstance(b, (int, float)) and abs(b) > MAX_POW and isinstance(a, int) and abs(a) > 1:
        raise ExprLimit("integer power with exponent %s (at most %d)" % (b, MAX_POW))
    if isinstance(a, int) and isinstance(b, int) and b > 0 and a.bit_length() * b > 1024:
        raise ExprLimit("integer power above 2**1024")
    return a ** b


def _safe_shift(a, b):
    if isinstance(b, int) and b > MAX_POW:
        raise ExprLimit("shift by %d (at most %d)" % (b, MAX_POW))
    return a << b


HELPERS = {"all": all, "any": any, "abs": abs, "min": min, "max": max, "len": len, "sum": sum, "sorted": sorted,
           "zip": zip, "range": _range, "round": round, "float": float, "int": int, "mean": _mean,
           "isfinite": lambda x: x is not None and math.isfinite(x), "inf": math.inf, "nan": math.nan,
           "nonincreasing": _nonincreasing, "nondecreasing": _nondecreasing, "ratio": _ratio,
           "True": True, "False": False, "None": None,
           "_safe_mul": _safe_mul, "_safe_pow": _safe_pow, "_safe_shift": _safe_shift}


class _Bound(ast.NodeTransformer):
    """a * b, a ** b and a << b become calls of the bounded helpers above (inserted after the
    check of the user's text, which refuses names starting with '_')."""
    OPS = {ast.Mult: "_safe_mul", ast.Pow: "_safe_pow", ast.LShift: "_safe_shift"}

    def visit_BinOp(self, node):
        self.generic_visit(node)
        f = self.OPS.get(type(node.op))
        if f is None:
            return node
        return ast.copy_location(ast.Call(func=ast.Name(id=f, ctx=ast.Load()), args=[node.left, node.right],
                                          keywords=[]), node)


def compile_expr(expr, where):
    if not isinstance(expr, str):
        raise VerdictError("%s: expression must be a string, got %s" % (where, type(expr).__name__))
    if len(expr) > 2000:
        raise VerdictError("%s: expression of %d characters (at most 2000)" % (where, len(expr)))
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise VerdictError("%s: expression %r does not parse (%s)" % (where, expr, e.msg))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            raise VerdictError("%s: expression %r uses attribute access, which the engine refuses" % (where, expr))
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise VerdictError("%s: expression %r uses the name %s" % (where, expr, node.id))
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool) \
                and abs(node.value) > MAX_INT:
            raise VerdictError("%s: expression %r has the integer %d (at most %d; write a float)" % (
                where, expr, node.value, MAX_INT))
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) > 200:
            raise VerdictError("%s: expression %r has a string constant of %d characters" % (where, expr, len(node.value)))
        if isinstance(node, ast.Lambda):
            raise VerdictError("%s: expression %r defines a lambda, which the engine refuses" % (where, expr))
    tree = ast.fix_missing_locations(_Bound().visit(tree))
    return compile(tree, where, "eval")


def _alarm(signum, frame):
    raise ExprLimit("took longer than %g s" % MAX_SECONDS)


def evaluate(code, env):
    scope = dict(HELPERS)
    scope.update(env)
    scope.update({k: v for k, v in HELPERS.items() if k.startswith("_")})   # a metric cannot unbind a bound
    scope["__builtins__"] = {}   # globals, so that comprehensions see the metrics too
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if timed:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, MAX_SECONDS)
    try:
        return eval(code, scope)     # noqa: S307 (no builtins, no attributes, bounded: see compile_expr)
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


# ---- registry -----------------------------------------------------------------------------------
STRENGTHS = ("faithful", "weaker", "stronger", "different")
# The issue-45 fields (quote, quote_ja for a paper with language = "ja", strength, why) are required
# unless PDL_CLAIMS_REQUIRE_QUOTES=0 (or --lenient): the switch exists only for registries that
# are being rewritten; make test runs with it on.
REQUIRE_QUOTES = os.environ.get("PDL_CLAIMS_REQUIRE_QUOTES", "1") != "0"
# Top-level keys of a registry file (bench/claims/<paper>.toml) besides its claims: the one place
# the list of papers lives (papers() below); status.py, report.py, reproduction.sh and lib.sh read it.
TOP_KEYS = {"paper": str, "title": str, "order": int, "bench": str, "doc_title": str, "paper_ids": list,
            "group": str, "language": str, "claim": list}
_HIST_TYPES = {"date": str, "rule": str, "reason": str, "verdict": str, "value": str, "kind": str, "commit": str,
               "params": dict}


def _typed(where, k, v, t):
    if t is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    else:
        ok = isinstance(v, t) and not (t is int and isinstance(v, bool))
    if not ok:
        raise VerdictError("%s: field %r must be %s, got %s" % (
            where, k, {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "a table"}[t],
            type(v).__name__))


def load_registry(paper, claims_dir=CLAIMS_DIR, require=None):
    """The parsed registry of paper; every error is one line naming the file, claim and field.
    require: the issue-45 fields are required (default REQUIRE_QUOTES)."""
    require = REQUIRE_QUOTES if require is None else require
    path = os.path.join(claims_dir, paper + ".toml")
    if tomllib is None:
        raise VerdictError("%s: python3 >= 3.11 is needed for tomllib" % path)
    try:
        with open(path, "rb") as f:
            reg = tomllib.load(f)
    except OSError as e:
        raise VerdictError("%s: cannot read (%s)" % (path, e.strerror))
    except tomllib.TOMLDecodeError as e:
        raise VerdictError("%s: not valid TOML (%s)" % (path, str(e).splitlines()[0] if str(e) else "?"))
    except UnicodeDecodeError as e:
        raise VerdictError("%s: not UTF-8 (byte %d)" % (path, e.start + 1))
    for k, t in TOP_KEYS.items():
        if k in reg:
            _typed(path, k, reg[k], t)
    if reg.get("paper") != paper:
        raise VerdictError("%s: field 'paper' is %r, not the file's name %r" % (path, reg.get("paper"), paper))
    if not reg.get("title"):
        raise VerdictError("%s: missing or empty field 'title'" % path)
    ja = reg.get("language") == "ja"
    claims = reg.get("claim", [])
    seen = set()
    for c in claims:
        if not isinstance(c, dict):
            raise VerdictError("%s: a [[claim]] that is not a table" % path)
        where = "%s claim %s" % (path, c.get("id", "?"))
        for k in ("id", "statement", "source", "kind", "fixed_at") + (("quote", "strength") if require else ()) \
                + (("quote_ja",) if require and ja else ()):
            if not isinstance(c.get(k), str) or not c.get(k).strip():
                raise VerdictError("%s: missing or empty field %r" % (where, k))
        for k in ("label", "rule", "value", "quote", "quote_ja", "strength", "why", "half", "construction",
                  "not_comparable", "observation", "shown", "paper_value", "plot", "aggregate"):
            if k in c:
                _typed(where, k, c[k], str)
        for k in ("tolerance",):
            if k in c:
                _typed(where, k, c[k], float)
        for k in ("seeds", "seeds_quick"):
            if k in c:
                _typed(where, k, c[k], int)
        for k in ("metrics", "results"):
            if k in c:
                _typed(where, k, c[k], list)
        if "strength" in c and c["strength"] not in STRENGTHS:
            raise VerdictError("%s: field 'strength' is %r, not one of %s" % (where, c["strength"], ", ".join(STRENGTHS)))
        if require and c.get("strength", "faithful") != "faithful" and not str(c.get("why", "")).strip():
            raise VerdictError("%s: missing or empty field 'why' (strength is %s)" % (where, c["strength"]))
        if c["id"] in seen:
            raise VerdictError("%s: duplicate id" % where)
        seen.add(c["id"])
        if c["kind"] not in KINDS:
            raise VerdictError("%s: kind %r is not one of %s" % (where, c["kind"], ", ".join(KINDS)))
        if c["kind"] == "consistency" and not c.get("construction"):
            raise VerdictError("%s: a consistency claim must say what makes it true by construction" % where)
        c["_rule"] = compile_expr(c["rule"], where + " rule") if c.get("rule") else None
        c["_value"] = compile_expr(c["value"], where + " value") if c.get("value") else None
        hist = c.get("history", [])
        if not isinstance(hist, list):
            raise VerdictError("%s: field 'history' must be a list of [[claim.history]] tables" % where)
        for i, h in enumerate(hist, 1):
            hw = "%s history entry %d" % (where, i)
            if not isinstance(h, dict):
                raise VerdictError("%s: not a table" % hw)
            for k in ("date", "rule", "reason", "verdict"):
                if k not in h:
                    raise VerdictError("%s: missing field %r" % (hw, k))
            for k, t in _HIST_TYPES.items():
                if k in h:
                    _typed(hw, k, h[k], t)
            if "tolerance" in h:
                _typed(hw, "tolerance", h["tolerance"], float)
            if "kind" in h and h["kind"] not in KINDS:
                raise VerdictError("%s: field 'kind' is %r, not one of %s" % (hw, h["kind"], ", ".join(KINDS)))
            if len(h["date"]) != 10 or h["date"][4] != "-" or h["date"][7] != "-":
                raise VerdictError("%s: field 'date' is %r, not YYYY-MM-DD" % (hw, h["date"]))
            h["_rule"] = compile_expr(h["rule"], hw + " rule") if h["rule"] else None
            h["_value"] = compile_expr(h["value"], hw + " value") if h.get("value") else None
    reg["_path"] = path
    reg["_by_id"] = {c["id"]: c for c in claims}
    return reg


def papers(claims_dir=CLAIMS_DIR):
    """The suite's papers, read from the top-level keys of bench/claims/*.toml, in their `order`
    (then by name): a list of dicts {paper, title, order, bench, doc_title, paper_ids, group,
    language}. The one place the list of papers is written (issue 50, item 5); the claims are
    not validated here (load_registry does that)."""
    out = []
    for path in sorted(glob.glob(os.path.join(claims_dir, "*.toml"))):
        name = os.path.basename(path)[:-5]
        try:
            with open(path, "rb") as f:
                reg = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise VerdictError("%s: cannot read its top-level keys (%s)" % (path, str(e).splitlines()[0] if str(e) else "?"))
        for k, t in TOP_KEYS.items():
            if k in reg and k != "claim":
                _typed(path, k, reg[k], t)
        out.append({"paper": reg.get("paper", name), "title": reg.get("title", name), "order": reg.get("order", 99),
                    "bench": reg.get("bench", "make bench-%s" % name),
                    "doc_title": reg.get("doc_title", "## %s (bench-%s)" % (reg.get("title", name), name)),
                    "paper_ids": list(reg.get("paper_ids", [])), "group": reg.get("group", name),
                    "language": reg.get("language", "en")})
    out.sort(key=lambda p: (p["order"], p["paper"]))
    return out


def paper_names(claims_dir=CLAIMS_DIR):
    return [p["paper"] for p in papers(claims_dir)]


# ---- results ------------------------------------------------------------------------------------
def read_jsonl(path):
    """Every JSON line of path (blank lines skipped) as a list of dicts: the one JSONL loader of the
    bench scripts. A torn last line (a run cut short while writing it) is skipped with a one-line
    warning on stderr naming the file and line; any other line that is not a JSON object raises
    VerdictError naming the file and line; a file that cannot be read raises VerdictError too."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise VerdictError("%s: cannot read (%s)" % (path, e.strerror or e))
    last = max((i for i, l in enumerate(lines) if l.strip()), default=-1)
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            if i == last:
                print("verdict: warning: %s line %d: torn last line skipped (%s)" % (path, i + 1, str(e).split(":")[0]),
                      file=sys.stderr)
                continue
            raise VerdictError("%s line %d: not JSON (%s)" % (path, i + 1, str(e).split(":")[0]))
        if not isinstance(obj, dict):
            raise VerdictError("%s line %d: a JSON %s, not an object" % (path, i + 1, type(obj).__name__))
        out.append(obj)
    return out


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


# the fields of a measurement line and their types (None: null allowed); metrics: see metric_error
_MEAS_TYPES = {"id": (str,), "instance": (str, type(None)), "seed": (int, str, type(None)),
               "metrics": (dict, type(None)), "paper": (str,), "label": (str, type(None)), "ours": (str, type(None)),
               "data_set": (str, type(None)), "mode": (str, type(None)), "plot": (str, type(None)),
               "flags": (list,), "why": (str, type(None)), "simulated": (bool,), "quick": (bool,),
               "row": (dict, type(None))}


def _type_name(ts):
    return " or ".join({str: "a string", int: "an integer", dict: "an object", list: "a list", bool: "a boolean",
                        type(None): "null"}[t] for t in ts)


def check_measurement(m, where):
    """None, or the one-line error naming where (file and line) and the field of a measurement
    line whose type is wrong (metric values are checked per claim: metric_error)."""
    if not isinstance(m, dict):
        return "%s: a JSON %s, not an object" % (where, type(m).__name__)
    if "id" not in m:
        return "%s: field 'id' is missing" % where
    for k, ts in _MEAS_TYPES.items():
        if k in m and (not isinstance(m[k], ts) or (isinstance(m[k], bool) and bool not in ts)):
            return "%s: field %r must be %s, got %s" % (where, k, _type_name(ts), type(m[k]).__name__)
    if not m["id"]:
        return "%s: field 'id' is empty" % where
    if any(not isinstance(x, str) for x in m.get("flags", [])):   # found by tests/verdict_fuzz.py
        return "%s: field 'flags' must be a list of strings" % where
    return None


def metric_error(metrics):
    """None when every metric is a number, a (nested) list of numbers or null; else what is wrong,
    naming the metric (booleans and strings are refused: the rule in the TOML decides)."""
    def bad(v):
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 1e308:
            return "an integer of %d digits (beyond a float's range)" % len(str(abs(v)))
        if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)):
            return None
        if isinstance(v, list):
            for x in v:
                b = bad(x)
                if b:
                    return b
            return None
        return "%s %s" % ("a boolean" if isinstance(v, bool) else "a " + type(v).__name__, json.dumps(v)[:40])
    if not isinstance(metrics, dict):
        return "metrics must be an object, got %s" % type(metrics).__name__
    for k, v in (metrics or {}).items():
        b = bad(v)
        if b:
            return "metric %r is %s: metrics are numbers, lists of numbers or null" % (k, b)
    return None


def read_measurements(res):
    """{id: [measurement, ...]} from res/measurements.jsonl; raises VerdictError naming the file,
    line and field of a line that is not a well-typed measurement."""
    path = os.path.join(res, MEASUREMENTS)
    if not os.path.exists(path):
        return {}
    e = check_jsonl(path)
    if e:
        raise VerdictError(e)
    out = {}
    with open(path, "rb") as f:
        raw = f.read().split(b"\n")
    for n, b in enumerate(raw, 1):
        try:
            line = b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise VerdictError("%s line %d: not UTF-8 (byte %d)" % (path, n, e.start + 1))
        if line.strip():
            m = json.loads(line)
            e = check_measurement(m, "%s line %d" % (path, n))
            if e:
                raise VerdictError(e)
            m["_line"], m["_file"] = n, path
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
    try:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    except OverflowError:   # an integer beyond a float's range
        return False


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
           "data_set": last.get("data_set") or "-", "plot": last.get("plot") or claim.get("plot"), "error": error,
           "quote": claim.get("quote", ""), "quote_ja": claim.get("quote_ja", ""),
           "strength": claim.get("strength", ""), "why": claim.get("why", ""), "half": claim.get("half", "")}
    if row["simulated"] and "SIMULATED" not in row["mode"]:
        row["mode"] = "SIMULATED: " + row["mode"]
    if not error:
        for s in seeds:
            e = metric_error(s.get("metrics"))
            if e:
                error = row["error"] = "%s: claim %s seed %s: %s" % (
                    paper if "_line" not in s else "%s line %d" % (s.get("_file", MEASUREMENTS), s["_line"]),
                    row["id"], s.get("seed"), e)
                break
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
        if h.get("_rule") is not None:   # the old rule with its own tolerance (none if it had none)
            hr, herr = _seed_outcomes(h["_rule"], h.get("_value"), seeds, h.get("tolerance"),
                                      {**params, **h.get("params", {})})
            now = _outcome([x for _, x in hr]) if not herr else "not evaluable (%s)" % herr[0]
        row["history"].append({"date": h["date"], "rule": h["rule"], "tolerance": h.get("tolerance"),
                               "kind": h.get("kind"), "commit": h.get("commit"), "reason": h["reason"],
                               "verdict": h["verdict"], "verdict_now": now or "not evaluable"})
    return row


def rows_for(paper, res, quick=None, claims_dir=CLAIMS_DIR):
    """(rows, errors) for paper from the results directory res (a fresh clone has no results but
    the committed results of record: then res/record/ is read)."""
    rec = os.path.join(res, "record")
    if not os.path.exists(os.path.join(res, MEASUREMENTS)) and os.path.exists(os.path.join(rec, MEASUREMENTS)):
        res = rec
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
            r = judge(paper, c, ms, quick, bad)
            rows.append(r)
            if r["error"] and not bad and r["error"] not in errors:   # a metric of the wrong type
                errors.append(r["error"])
    for e in errors:
        rows.append(error_row(paper, e))
    return rows, errors


def error_row(paper, msg):
    return {"paper": paper, "id": "error", "label": "error", "statement": "-", "source": "-", "kind": "-", "rule": "",
            "tolerance": None, "fixed_at": "-", "history": [], "seeds": [], "mean": None, "min": None, "max": None,
            "paper_value": None, "ours": "-", "verdict": "no results", "reason": msg, "simulated": False,
            "mode": "-", "data_set": "-", "plot": None, "error": msg, "quote": "", "quote_ja": "", "strength": "",
            "why": "", "half": ""}


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
                self.meas = [{k: v for k, v in m.items() if not k.startswith("_")}
                             for ms in read_measurements(res).values() for m in ms]
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


def quote_cell(r):
    """The paper's words and where they are: "quote" (source); a Japanese paper's original after
    the translation; the half of a split claim first."""
    q = r.get("quote") or r.get("statement") or "-"
    text = "\u201c%s\u201d" % q if r.get("quote") else q
    if r.get("quote_ja"):
        text += " (\u539f\u6587: %s)" % r["quote_ja"]
    if r.get("half"):
        text = "[%s] %s" % (r["half"], text)
    return esc("%s (%s)" % (text, r.get("source") or "-"))


def strength_cell(r):
    s = r.get("strength") or "-"
    return esc(s + (": " + r["why"] if r.get("why") and s != "faithful" else ""))


def markdown(rows):
    out = ["| id | the paper says (where) | kind | rule (tolerance) | strength | fixed at | seeds | "
           "value: mean (min-max) | paper | verdict |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    hist = []
    for r in rows:
        out.append("| %s | %s | %s | `%s`%s | %s | %s | %d | %s | %s | %s%s |" % (
            esc(r["id"]), quote_cell(r), r["kind"], esc(r["rule"] or "-"),
            " (%s)" % fmt(r["tolerance"]) if r["tolerance"] is not None else "", strength_cell(r),
            r["fixed_at"], len(r["seeds"]), spread(r), esc(r["paper_value"] or "-"), r["verdict"],
            ": " + esc(r["reason"]) if r["reason"] else ""))
        for h in r["history"]:
            extra = "".join([" (tolerance %s)" % fmt(h["tolerance"]) if h.get("tolerance") is not None else "",
                             ", kind %s" % h["kind"] if h.get("kind") else "",
                             ", at %s" % h["commit"] if h.get("commit") else ""])
            hist.append("- **%s**, until %s: `%s`%s — %s. Verdict then: %s; the old rule on these results: %s." % (
                r["id"], h["date"], esc(h["rule"] or "-"), extra, esc(h["reason"]), esc(h["verdict"]),
                esc(h["verdict_now"])))
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
    g.add_argument("--paper", help="one paper (the name of a bench/claims/*.toml)")
    g.add_argument("--all", action="store_true", help="every paper")
    g.add_argument("--check-registry", action="store_true", help="parse every registry file and exit")
    g.add_argument("--list-papers", action="store_true",
                   help="print the papers (bench/claims/*.toml, in their order): paper, title, bench, doc_title, "
                        "group, paper ids (space-separated), tab-separated, one line each")
    ap.add_argument("--results", help="results directory of --paper (default results/<paper>)")
    ap.add_argument("--results-root", default=os.environ.get("PDL_RESULTS", "results"),
                    help="root of the results (default $PDL_RESULTS or results)")
    ap.add_argument("--claims", default=CLAIMS_DIR, help="registry directory (default bench/claims)")
    ap.add_argument("--format", choices=("md", "json", "tsv"), default="md")
    ap.add_argument("--lenient", action="store_true",
                    help="do not require the issue-45 fields (quote, strength, why, quote_ja); also "
                         "PDL_CLAIMS_REQUIRE_QUOTES=0")
    a = ap.parse_args(argv)
    global REQUIRE_QUOTES
    if a.lenient:
        REQUIRE_QUOTES = False
    try:
        if a.list_papers:
            for p in papers(a.claims):
                print("\t".join([p["paper"], p["title"], p["bench"], p["doc_title"], p["group"], " ".join(p["paper_ids"])]))
            return 0
        names = paper_names(a.claims)
        if a.paper is not None and a.paper not in names:
            ap.error("argument --paper: %r is not one of %s (bench/claims/*.toml)" % (a.paper, ", ".join(names)))
        if a.check_registry:
            n = 0
            for p in names:
                n += len(load_registry(p, a.claims)["claim"])
            print("verdict: %d claims in %d registry files parse" % (n, len(names)))
            return 0
        papers_ = names if a.all else [a.paper]
        rows, errors = [], []
        for p in papers_:
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
    except VerdictError as e:
        print("verdict: %s" % e, file=sys.stderr)
        sys.exit(1)
    except Exception as e:   # noqa: BLE001 (the last guard: one line, never a traceback)
        print("verdict: internal error: %s: %s (please report it with the input that caused it)"
              % (type(e).__name__, str(e)[:200]), file=sys.stderr)
        sys.exit(1)
