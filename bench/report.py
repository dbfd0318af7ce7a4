#!/usr/bin/env python3
"""bench/report.py — the one report page: every claim of every paper, its verdict, rule, rule
history, seeds and spread, and its plot, in one self-contained HTML file.

  python3 bench/report.py                          results/ -> results/report/index.html
  python3 bench/report.py --results DIR --out FILE
  python3 bench/report.py --rows ROWS.json         render rows given as a JSON file instead of
                                                   asking the verdict engine (tests, debugging)

The rows come from the one verdict engine, `python3 bench/verdict.py --all --format json` (per
paper, `--paper P`, when --all gives no rows, so one broken registry file leaves the others; a JSON
list of objects: paper, id, statement, source, kind, rule, tolerance, fixed_at, history, seeds,
mean, min, max, paper_value, ours, verdict, reason, simulated, data_set, plot); this script
decides no verdict of its own. It also reads every results/<paper>/**/*.jsonl line itself, for the
provenance of the results and so that a broken line shows as a visible error row even where the
engine says nothing about it. Plots are PNGs from plots/out (`make plots`), inlined as data URIs
(each once per paper; only for papers with results, and never beside a claim with no results, since
plots/out may hold another run's PNG or gnuplot's empty frame), so the page opens in a browser with no server; there is no external CSS, JS or font. An inline
script, after load, writes "images=N decoded=N claims=N errors=N" into the element #selfcheck
(tests/t_report.sh reads it from a headless browser's DOM).

Nothing here crashes on bad input: an engine that fails, prints bad JSON or is missing, a results
line that is not JSON, an unreadable or broken PNG, each becomes an error row naming the file.
`make report` runs plots/render.sh and bench/reproduction.sh (docs/REPRODUCTION.md) first, and
this script with --fail-on-errors: the page is written either way, and error rows make the exit 1.
Stdlib only."""
import argparse
import base64
import datetime
import html
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# (key, title, claim-id letter, bench targets, plot-file prefixes, results folders): one per group
# of bench/claims/*.toml (a registry file's `group`, e.g. collectives in kfac's), read by
# bench/verdict.py's papers(), the one place the list of papers is written
def registry_papers():
    """(PAPERS, error): the page's papers from the claims registry; a registry that cannot be read
    gives no papers and an error row, never a crash."""
    try:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import verdict
        ps = verdict.papers()
    except Exception as e:   # noqa: BLE001 (the page says what broke)
        return [], "bench/claims: the list of papers cannot be read: %s" % e
    groups = {}
    for p in ps:
        groups.setdefault(p["group"], []).append(p)
    out = []
    for key, members in groups.items():
        head = next((m for m in members if m["paper"] == key), members[0])
        ids = head["paper_ids"] or [i for m in members for i in m["paper_ids"]]
        out.append((key, head["title"], ids[0][:1] if ids else "", ["bench-" + m["paper"] for m in members],
                    [m["paper"] + "-" for m in members], [m["paper"] for m in members]))
    return out, None


PAPERS, PAPERS_ERROR = registry_papers()
OTHER = ("other", "Other rows and files", "", [], [], [])
VERDICT_CLASS = {
    "agrees": "v-agrees", "disagrees": "v-disagrees", "inconclusive": "v-inconclusive",
    "not comparable": "v-notcomparable", "consistency check": "v-consistency",
    "observation": "v-observation", "shown": "v-shown", "no results": "v-noresults",
    "error": "v-error",
}


GENERATED = ("docs/REPRODUCTION.md", "README.md")  # written by bench/reproduction.sh in make report


class Fatal(Exception):
    """A one-line error about the command line or an input file named there."""


class Usage(Exception):
    """Two flags that name one file (exit 2)."""


def rel(path):
    """path relative to the repository root when it lies inside it (for messages)."""
    try:
        r = os.path.relpath(path, ROOT)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def sh(cmd, timeout=20):
    """stdout of a command, stripped; None when it is missing or fails."""
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


# ---- provenance of this page ----------------------------------------------------------------------
def provenance():
    rev = sh(["git", "rev-parse", "--short", "HEAD"]) or "unknown (not a git checkout)"
    if rev and not rev.startswith("unknown"):
        # make report rewrites docs/REPRODUCTION.md and README.md's status block just before this
        # page: those alone do not make the tree dirty
        changed = [f for f in (sh(["git", "diff", "--name-only", "HEAD", "--"]) or "").splitlines()
                   if f and f not in GENERATED]
        if changed:
            rev += " dirty (%d file%s changed: %s%s)" % (len(changed), "" if len(changed) == 1 else "s",
                                                       ", ".join(changed[:5]), ", ..." if len(changed) > 5 else "")
    cpu, flags = "unknown", ""
    out = sh(["lscpu"])
    if out:
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name" and cpu == "unknown":
                cpu = v.strip()
            elif k.strip() == "Flags":
                flags = v
    if not flags:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("flags"):
                        flags = line.partition(":")[2]
                        break
                    if line.startswith("model name") and cpu == "unknown":
                        cpu = line.partition(":")[2].strip()
        except OSError:
            pass
    fl = set(flags.split())
    isa = "AVX-512" if "avx512f" in fl else "AVX2" if "avx2" in fl else ("no AVX2" if fl else "unknown")
    gpu = "none"
    if shutil.which("nvidia-smi"):
        g = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        gpu = "; ".join(x.strip() for x in g.splitlines() if x.strip()) if g else "none (nvidia-smi found no device)"
    return {
        "commit": rev,
        "cpu": cpu,
        "isa": isa,
        "cores": str(os.cpu_count() or "?"),
        "gpu": gpu,
        "host": os.uname().nodename,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


# ---- results files: provenance and broken lines ---------------------------------------------------
def scan_results(resdir):
    """Per results folder (results/<paper>, its sub-folders included): the files, lines, provenance
    values seen; and error rows for every file that cannot be read or has a line that is not a JSON
    object."""
    info, errors = {}, []
    if not os.path.isdir(resdir):
        return info, errors
    for d in sorted(os.listdir(resdir)):
        full = os.path.join(resdir, d)
        if not os.path.isdir(full) or d == "report":
            continue
        rec = {"files": 0, "lines": 0, "git": set(), "host": set(), "cpu": set(), "isa": set(),
               "gpu": set(), "simulated": set()}
        paths = sorted(os.path.join(dp, n) for dp, _, names in os.walk(full) for n in names
                       if n.endswith(".jsonl"))
        for path in paths:
            rec["files"] += 1
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                errors.append(error_row(d, path, "cannot be read: %s" % (e.strerror or e)))
                continue
            bad = []
            for no, raw in enumerate(data.split(b"\n"), 1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    bad.append((no, "not JSON (%s)" % str(e).split(":")[0]))
                    continue
                if not isinstance(obj, dict):
                    bad.append((no, "not a JSON object"))
                    continue
                rec["lines"] += 1
                for k in ("git", "host", "cpu", "isa", "gpu"):
                    v = obj.get(k)
                    if isinstance(v, str) and v:
                        rec[k].add(v)
                if isinstance(obj.get("simulated"), bool):
                    rec["simulated"].add(obj["simulated"])
            if bad:
                more = " (and %d more bad lines)" % (len(bad) - 1) if len(bad) > 1 else ""
                errors.append(error_row(d, path, "line %d: %s%s; the claims that read this file "
                                        "cannot be trusted until it is fixed or re-run"
                                        % (bad[0][0], bad[0][1], more)))
        info[d] = rec
    return info, errors


def error_row(folder, path, what):
    return {"paper": paper_of_folder(folder), "id": "error", "verdict": "error",
            "reason": "%s: %s" % (rel(path), what), "file": rel(path)}


def tail(path):
    """folder/name of a path: how error messages from different tools can be matched."""
    return "/".join(path.replace(os.sep, "/").split("/")[-2:])


def paper_of_folder(folder):
    for p in PAPERS:
        if folder in p[5]:
            return p[0]
    return "other"


# ---- rows from the verdict engine -----------------------------------------------------------------
ENGINE_PAPERS = [f for p in PAPERS for f in p[5]]  # bench/verdict.py --paper, each registry file


def run_engine(eng, args, resdir, paper):
    """(rows or None, error rows) of one engine call; paper: where its error rows go."""
    name = rel(eng)
    what = "%s %s" % (name, " ".join(rel(a) if a.startswith("/") else a for a in args))
    env = dict(os.environ)
    env["PDL_RESULTS"] = os.path.abspath(resdir)
    try:
        p = subprocess.run([sys.executable, eng] + args, cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, [{"paper": paper, "id": "error", "verdict": "error",
                       "reason": "%s: gave no answer in 300 s" % what}]
    except OSError as e:
        return None, [{"paper": paper, "id": "error", "verdict": "error",
                       "reason": "%s: cannot be run: %s" % (what, e)}]
    errs = []
    try:
        rows = json.loads(p.stdout)
    except ValueError as e:
        rows = None
        if p.returncode == 0 or p.stdout.strip():  # a failure that printed nothing: its exit row says it
            errs.append({"paper": paper, "id": "error", "verdict": "error",
                         "reason": "%s printed no valid JSON (%s)" % (what, str(e).split(":")[0])})
    named = isinstance(rows, list) and any(isinstance(r, dict) and (is_error(r) or r.get("error"))
                                           for r in rows)
    if p.returncode != 0 and not named:
        last = [l for l in p.stderr.strip().splitlines() if l.strip()]
        errs.append({"paper": paper, "id": "error", "verdict": "error",
                     "reason": "%s exited with status %d%s"
                               % (what, p.returncode, (": " + last[-1].strip()) if last else "")})
    if rows is None:
        return None, errs
    rows, errs = check_rows(rows, what, errs)
    return rows, errs


def engine_rows(eng, resdir):
    """The engine's rows plus error rows for whatever went wrong calling it. One call for every
    paper; when that gives no rows at all (one broken registry file stops it), one call per paper,
    so the other papers still have their rows."""
    if not os.path.isfile(eng):
        return [], [{"paper": "other", "id": "error", "verdict": "error",
                     "reason": "%s: the verdict engine is missing, so no claim has a verdict on this "
                               "page" % rel(eng)}]
    root = os.path.abspath(resdir)
    rows, errs = run_engine(eng, ["--all", "--results-root", root, "--format", "json"], resdir, "other")
    if rows is not None:
        return rows, errs
    rows = []
    for paper in ENGINE_PAPERS:
        r, e = run_engine(eng, ["--paper", paper, "--results", os.path.join(root, paper), "--format", "json"],
                          resdir, paper_of_folder(paper))
        rows += r or []
        errs += e
    return rows, errs


def rows_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)
    except OSError as e:
        raise Fatal("%s: cannot be read: %s" % (path, e.strerror or e))
    except (UnicodeDecodeError, ValueError) as e:
        raise Fatal("%s: not a JSON list of rows (%s)" % (path, str(e).split(":")[0]))
    return check_rows(rows, path, [])


def is_error(r):
    """An error row of the engine (id "error"). A claim's row with its "error" set stays a claim
    row (its id must be on the page), drawn as an error."""
    return str(r.get("id")) == "error"


def check_rows(rows, where, errs):
    if not isinstance(rows, list):
        errs.append({"paper": "other", "id": "error", "verdict": "error",
                     "reason": "%s: wanted a JSON list of rows, got %s" % (where, type(rows).__name__)})
        return [], errs
    good = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not r.get("id"):
            errs.append({"paper": "other", "id": "error", "verdict": "error",
                         "reason": "%s: row %d is not an object with an id" % (where, i + 1)})
            continue
        if is_error(r):
            errs.append({"paper": paper_of_row(r), "id": "error", "verdict": "error",
                         "reason": fmt(r.get("error") or r.get("reason"))})
            continue
        good.append(r)
    return good, errs


def paper_of_row(r):
    p = str(r.get("paper") or "").lower()
    for k in PAPERS:
        if p == k[0] or p in k[5] or (p and p == k[1].lower()):
            return k[0]
    cid = str(r.get("id") or "")
    for k in PAPERS:
        if cid[:1].upper() == k[2]:
            return k[0]
    return "other"


def bench_of_row(r):
    p = str(r.get("paper") or "")
    if any(p in k[5] for k in PAPERS):   # the registry file's own bench (collectives: bench-collectives)
        return "bench-" + p
    for k in PAPERS:
        if k[0] == paper_of_row(r):
            return k[3][-1]
    return None


# ---- plots ---------------------------------------------------------------------------------------
def png_check(data):
    """None when data is a whole PNG (signature, every chunk's CRC, IHDR first, IEND last, the image
    data inflates), else what is wrong."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return "not a PNG (bad signature)"
    pos, first, idat, end = 8, True, [], False
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = data[pos + 8 + n:pos + 12 + n]
        if len(body) < n or len(crc) < 4:
            return "truncated PNG (chunk %s cut off)" % kind.decode("latin-1")
        if struct.unpack(">I", crc)[0] != zlib.crc32(kind + body) & 0xffffffff:
            return "broken PNG (bad CRC in chunk %s)" % kind.decode("latin-1")
        if first:
            if kind != b"IHDR" or n < 8:
                return "broken PNG (no IHDR first)"
            w, h = struct.unpack(">II", body[:8])
            if w == 0 or h == 0:
                return "empty PNG (0 pixels)"
            first = False
        if kind == b"IDAT":
            idat.append(body)
        if kind == b"IEND":
            end = True
            break
        pos += 12 + n
    if not end:
        return "truncated PNG (no IEND)"
    try:
        zlib.decompress(b"".join(idat))
    except zlib.error:
        return "broken PNG (image data does not inflate)"
    return None


class Plots:
    def __init__(self, plotdir):
        self.dir = plotdir
        self.cache = {}

    def resolve(self, plot):
        """The file a row's plot names: as given (absolute or from the repository root), else its
        name in the plots folder."""
        plot = str(plot)
        for cand in (plot if os.path.isabs(plot) else os.path.join(ROOT, plot),
                     os.path.join(self.dir, os.path.basename(plot))):
            if os.path.isfile(cand):
                return cand
        return os.path.join(self.dir, os.path.basename(plot))

    def load(self, path):
        """(data URI, None) or (None, why not)."""
        if path in self.cache:
            return self.cache[path]
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            res = (None, "missing")  # an empty file: gnuplot opened it, then found no data
        else:
            try:
                with open(path, "rb") as f:
                    data = f.read()
                bad = png_check(data)
                res = (None, bad) if bad else \
                    ("data:image/png;base64," + base64.b64encode(data).decode("ascii"), None)
            except OSError as e:
                res = (None, "cannot be read: %s" % (e.strerror or e))
        self.cache[path] = res
        return res

    def of_paper(self, key):
        prefixes = next((p[4] for p in PAPERS if p[0] == key), [])
        if not prefixes or not os.path.isdir(self.dir):
            return []
        return [os.path.join(self.dir, n) for n in sorted(os.listdir(self.dir))
                if n.endswith(".png") and any(n.startswith(x) for x in prefixes)]


# ---- HTML ----------------------------------------------------------------------------------------
E = html.escape

CSS = """
body{font-family:sans-serif;margin:1.2em 2em;color:#222;max-width:1500px}
h1{margin-bottom:.2em} h2{border-bottom:2px solid #999;padding-bottom:.2em;margin-top:1.6em}
table.prov td{padding:.1em .8em .1em 0;vertical-align:top} table.prov td:first-child{font-weight:bold}
.note{background:#fff7d6;border:1px solid #e0c060;padding:.5em .8em;margin:.6em 0}
.claim{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1em;border:1px solid #ccc;
  border-left:8px solid #ccc;padding:.6em .8em;margin:.8em 0;background:#fff}
.claim.v-agrees{border-left-color:#2e7d32} .claim.v-disagrees{border-left-color:#c62828}
.claim.v-inconclusive{border-left-color:#ef8f00} .claim.v-notcomparable{border-left-color:#6a4c93}
.claim.v-consistency{border-left-color:#1565c0} .claim.v-observation{border-left-color:#546e7a}
.claim.v-shown{border-left-color:#00838f} .claim.v-noresults{border-left-color:#bbb}
.claim.v-error{border-left-color:#8b0000;background:#fdecea}
.verdict{display:inline-block;white-space:nowrap;padding:.1em .6em;border-radius:.3em;font-weight:bold;color:#fff;background:#777}
.verdict.v-agrees{background:#2e7d32} .verdict.v-disagrees{background:#c62828}
.verdict.v-inconclusive{background:#ef8f00} .verdict.v-notcomparable{background:#6a4c93}
.verdict.v-consistency{background:#1565c0} .verdict.v-observation{background:#546e7a}
.verdict.v-shown{background:#00838f} .verdict.v-noresults{background:#e0e0e0;color:#333}
.verdict.v-error{background:#8b0000}
.sim{display:inline-block;padding:.1em .5em;border:2px solid #d35400;color:#d35400;font-weight:bold;letter-spacing:.05em}
.real{display:inline-block;padding:.1em .5em;border:1px solid #2e7d32;color:#2e7d32}
.kind{display:inline-block;padding:.1em .5em;background:#eef;border-radius:.3em}
.cid{font-size:1.2em;font-weight:bold;margin-right:.4em}
.statement{font-style:italic;margin:.3em 0} .label{font-weight:bold;margin:.2em 0}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.15em .8em;margin:.4em 0}
dt{font-weight:bold;color:#444} dd{margin:0}
.history{grid-column:1/-1} .history .verdict{white-space:normal} table.hist{border-collapse:collapse;font-size:.9em;margin-top:.3em;width:100%} table.hist td,table.hist th{border:1px solid #ccc;padding:.15em .4em;text-align:left}
table.summary{border-collapse:collapse} table.summary td,table.summary th{border:1px solid #ccc;padding:.2em .6em}
.plot img,.gallery img{max-width:100%;height:auto;border:1px solid #ddd}
.plot .missing{color:#777;font-style:italic}
.gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:1em}
.gallery figure{margin:0} figcaption{font-size:.85em;color:#555}
code{background:#f3f3f3;padding:0 .2em}
#selfcheck{color:#888;font-size:.8em}
"""

SELFCHECK_JS = """
window.addEventListener('load', function () {
  var im = document.images, ok = 0, bad = [];
  for (var i = 0; i < im.length; i++) {
    if (im[i].complete && im[i].naturalWidth > 0) ok++; else bad.push(im[i].getAttribute('alt'));
  }
  var claims = document.querySelectorAll('[data-claim]').length;
  var errors = document.querySelectorAll('[data-error]').length;
  var s = document.getElementById('selfcheck');
  s.textContent = 'images=' + im.length + ' decoded=' + ok + ' claims=' + claims + ' errors=' + errors +
    (bad.length ? ' undecoded: ' + bad.join(', ') : '');
});
"""


def fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            return str(v)
        if isinstance(v, int):
            return str(v)
        return "%.4g" % v
    if v is None:
        return "—"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def verdict_html(v):
    v = str(v or "no verdict")
    return '<span class="verdict %s">%s</span>' % (VERDICT_CLASS.get(v, ""), E(v))


def sim_html(s):
    if s is True:
        return '<span class="sim">SIMULATED</span>'
    if s is False:
        return '<span class="real">real</span>'
    return '<span class="kind">real or SIMULATED: not known</span>'


def seeds_html(r):
    seeds = r.get("seeds")
    if not isinstance(seeds, list):
        seeds = [] if seeds is None else [seeds]
    if not seeds and r.get("mean") is None:
        return "no seeds"
    n = len(seeds)
    per = []
    for x in seeds:
        if isinstance(x, dict):
            t = "%s%s" % ("seed %s: " % fmt(x["seed"]) if x.get("seed") is not None else "", fmt(x.get("value")))
            if x.get("holds") is not None:
                t += " (rule %s)" % ("holds" if x.get("holds") else "fails")
            per.append(t)
        else:
            per.append(fmt(x))
    parts = []
    if r.get("mean") is not None:
        parts.append("mean %s" % fmt(r.get("mean")))
    if r.get("min") is not None or r.get("max") is not None:
        parts.append("min-max %s-%s" % (fmt(r.get("min")), fmt(r.get("max"))))
    parts.append("n = %d" % n)
    s = ", ".join(parts)
    if seeds:
        s += "; per seed: %s" % "; ".join(per)
    if n == 1:
        s += "; one seed: its noise is not known"
    return E(s)


def history_html(r):
    hist = r.get("history")
    if not hist:
        return "unchanged since it was fixed"
    if not isinstance(hist, list):
        return E(fmt(hist))
    out = ['<table class="hist"><tr><th>date</th><th>old rule</th><th>why it changed</th>'
           '<th>verdict under the old rule, then</th><th>old rule on these results</th></tr>']
    for h in hist:
        if not isinstance(h, dict):
            out.append('<tr><td colspan="5">%s</td></tr>' % E(fmt(h)))
            continue
        out.append("<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>"
                   % (E(fmt(h.get("date"))), E(fmt(h.get("rule"))), E(fmt(h.get("reason"))),
                      verdict_html(h.get("verdict")) if h.get("verdict") else "—",
                      verdict_html(h.get("verdict_now")) if h.get("verdict_now") else "—"))
    out.append("</table>")
    return "".join(out)


def anchor(cid):
    return "claim-" + re.sub(r"[^A-Za-z0-9_-]", "_", str(cid))


def claim_html(r, plots, shown, errors, have_results):
    v = str(r.get("verdict") or "no verdict")
    cid = str(r.get("id"))
    left = ['<div class="text"><span class="cid">%s</span> %s%s %s %s'
            % (E(cid), verdict_html(v), " " + verdict_html("error") if r.get("error") else "",
               sim_html(r.get("simulated")),
               '<span class="kind">%s</span>' % E(fmt(r.get("kind"))) if r.get("kind") else "")]
    if r.get("label") and str(r.get("label")) != cid:
        left.append('<div class="label">%s</div>' % E(fmt(r.get("label"))))
    if r.get("quote"):   # the paper's own words (issue 45); the statement is our summary
        left.append('<div class="statement">%s&ldquo;%s&rdquo;%s</div>' % (
            "[%s] " % E(fmt(r.get("half"))) if r.get("half") else "", E(fmt(r.get("quote"))),
            " (%s)" % E(fmt(r.get("quote_ja"))) if r.get("quote_ja") else ""))
    elif r.get("statement"):
        left.append('<div class="statement">&ldquo;%s&rdquo;</div>' % E(fmt(r.get("statement"))))
    dl = []

    def item(k, val_html):
        dl.append("<dt>%s</dt><dd>%s</dd>" % (E(k), val_html))
    if r.get("source"):
        item("where in the paper", E(fmt(r.get("source"))))
    if r.get("quote") and r.get("statement"):
        item("claim", E(fmt(r.get("statement"))))
    if r.get("strength"):
        item("rule vs the paper", E(fmt(r.get("strength"))) + (": " + E(fmt(r.get("why")))
                                                               if r.get("why") and r.get("strength") != "faithful" else ""))
    if r.get("paper_value") is not None:
        item("paper", E(fmt(r.get("paper_value"))))
    empty = v == "no results"  # nothing measured: ours, seeds, data set would all read "none"
    if not empty:
        item("ours", E(fmt(r.get("ours"))) if r.get("ours") not in (None, "") else "—")
        item("seeds and spread", seeds_html(r))
        if r.get("data_set") not in (None, "", "-"):
            item("data set", E(fmt(r.get("data_set"))))
    if r.get("mode") not in (None, "", "-", "real", "SIMULATED"):
        item("run", E(fmt(r.get("mode"))))
    rule = fmt(r.get("rule"))
    if not r.get("rule"):
        rule_h = "none: nothing to judge, the row shows our figure"
    elif r.get("tolerance") is not None:
        rule_h = "<code>%s</code>, tolerance %s" % (E(rule), E(fmt(r.get("tolerance"))))
    else:
        rule_h = "<code>%s</code>" % E(rule)
    if r.get("construction"):
        item("true by construction", E(fmt(r.get("construction"))))
    item("rule", rule_h)
    if r.get("fixed_at"):
        item("rule fixed at", "<code>%s</code>" % E(fmt(r.get("fixed_at"))))
    hist = r.get("history")
    if hist:
        item("rule history", "changed after results: the table below")
    else:
        item("rule history", history_html(r))
    reason = r.get("reason")
    if v == "no results":
        b = bench_of_row(r)
        hint = (" Run <code>make %s</code> (<code>QUICK=1</code> for a one-minute check)." % E(b)) if b else ""
        item("why", E(fmt(reason) if reason else "no results for this claim") + hint)
    elif reason:
        item("why", E(fmt(reason)))
    if r.get("error") and str(r.get("error")) != str(reason):
        item("error", E(fmt(r.get("error"))))
    left.append("<dl>%s</dl></div>" % "".join(dl))
    right = ['<div class="plot">']
    plot = r.get("plot")
    if v == "no results" or not have_results:
        # a PNG left in plots/out would be another run's, or gnuplot's empty frame
        right.append('<p class="missing">no plot: nothing measured for this claim here</p>')
    elif plot:
        path = plots.resolve(plot)
        uri, why = plots.load(path)
        if uri and path in shown:
            right.append('<p class="missing">plot: the one shown with <a href="#%s">%s</a></p>'
                         % (anchor(shown[path]), E(shown[path])))
        elif uri:
            shown[path] = cid
            right.append('<img src="%s" alt="%s">' % (uri, E(os.path.basename(path))))
        elif why == "missing":
            right.append('<p class="missing">plot %s not rendered yet: <code>make plots</code> '
                         '(after the bench) makes it</p>' % E(rel(path)))
        else:
            errors.append({"paper": paper_of_row(r), "id": "error", "verdict": "error",
                           "reason": "%s: %s (plot of %s)" % (rel(path), why, cid)})
            right.append('<p class="missing">plot %s: %s</p>' % (E(rel(path)), E(why)))
    else:
        right.append('<p class="missing">no plot for this claim</p>')
    right.append("</div>")
    below = '<div class="history"><b>Rule history of %s</b> %s</div>' % (E(cid), history_html(r)) if hist else ""
    return '<div class="claim %s" id="%s" data-claim="%s">%s%s%s</div>' % (
        "v-error" if r.get("error") else VERDICT_CLASS.get(v, ""), anchor(cid), E(cid), "".join(left), "".join(right), below)


def error_html(e):
    return ('<div class="claim v-error" data-error="1"><div class="text"><span class="cid">ERROR</span> %s'
            '<dl><dt>what</dt><dd>%s</dd></dl></div><div class="plot"></div></div>'
            % (verdict_html("error"), E(fmt(e.get("reason")))))


def results_prov_html(key, info):
    folders = next((p[5] for p in PAPERS if p[0] == key), [key])
    out = []
    for d in folders:
        rec = info.get(d)
        if not rec or not rec["files"]:
            out.append("<li><code>results/%s</code>: no results files</li>" % E(d))
            continue
        parts = ["%d files, %d lines" % (rec["files"], rec["lines"])]
        for k, label in (("git", "commit"), ("host", "host"), ("cpu", "CPU"), ("isa", "ISA"), ("gpu", "GPU")):
            if rec[k]:
                vals = sorted(rec[k])
                parts.append("%s %s" % (label, ", ".join(vals[:4]) + (" and %d more" % (len(vals) - 4)
                                                                       if len(vals) > 4 else "")))
        if rec["simulated"]:
            parts.append("runs: " + " and ".join(
                "SIMULATED" if s else "real" for s in sorted(rec["simulated"], reverse=True)))
        out.append("<li><code>results/%s</code>: %s</li>" % (E(d), E("; ".join(parts))))
    return "<ul>%s</ul>" % "".join(out)


def render(rows, errors, info, prov, plots, resdir):
    by = {p[0]: [] for p in PAPERS + [OTHER]}
    for r in rows:
        by[paper_of_row(r)].append(r)
    have_results = any(rec["files"] for rec in info.values())
    nsim = sum(1 for r in rows if r.get("simulated") is True)
    nreal = sum(1 for r in rows if r.get("simulated") is False)
    counts = {}
    for r in rows:
        v = str(r.get("verdict") or "no verdict")
        counts[v] = counts.get(v, 0) + 1

    body = []
    for p in PAPERS + [OTHER]:
        key, title = p[0], p[1]
        sec_rows = by[key]
        plot_errors = []
        shown = {}
        have = any(info.get(d, {}).get("files") for d in p[5])
        claims = [claim_html(r, plots, shown, plot_errors, have) for r in sec_rows]
        gallery = []
        for path in (plots.of_paper(key) if have else []):
            if path in shown:
                continue
            uri, why = plots.load(path)
            if uri:
                gallery.append('<figure><img src="%s" alt="%s"><figcaption>%s</figcaption></figure>'
                               % (uri, E(os.path.basename(path)), E(os.path.basename(path))))
            elif why != "missing":
                plot_errors.append({"paper": key, "id": "error", "verdict": "error",
                                    "reason": "%s: %s" % (rel(path), why)})
        sec_errors = [e for e in errors if e.get("paper") == key] + plot_errors
        if key == "other" and not sec_rows and not sec_errors and not gallery:
            continue
        body.append('<section id="paper-%s"><h2>%s</h2>' % (E(key), E(title)))
        if key != "other":
            body.append("<p>Results read: %s</p>" % results_prov_html(key, info))
        if sec_rows and all(str(r.get("verdict")) == "no results" for r in sec_rows):
            body.append('<p class="note">No results for this paper yet: run %s (about 45 min each; '
                        '<code>QUICK=1</code> for a one-minute check), then <code>make plots report</code>.</p>'
                        % " and ".join("<code>make %s</code>" % E(b) for b in p[3]))
        if not sec_rows and key != "other":
            body.append('<p class="note">The verdict engine gave no rows for this paper.</p>')
        body.extend(error_html(e) for e in sec_errors)
        body.extend(claims)
        if gallery:
            body.append("<h3>More plots of this paper</h3><div class=\"gallery\">%s</div>" % "".join(gallery))
        body.append("</section>")

    top = ["<h1>pdlbench: reproduction report</h1>",
           '<table class="prov">',
           "<tr><td>commit</td><td><code>%s</code></td></tr>" % E(prov["commit"]),
           "<tr><td>CPU</td><td>%s, %s cores, ISA %s</td></tr>" % (E(prov["cpu"]), E(prov["cores"]), E(prov["isa"])),
           "<tr><td>GPU</td><td>%s</td></tr>" % E(prov["gpu"]),
           "<tr><td>host</td><td>%s</td></tr>" % E(prov["host"]),
           "<tr><td>date</td><td>%s</td></tr>" % E(prov["date"]),
           "<tr><td>results</td><td><code>%s</code></td></tr>" % E(rel(os.path.abspath(resdir))),
           "<tr><td>rows</td><td>%d claims: %d %s, %d real, %d not known</td></tr>"
           % (len(rows), nsim, '<span class="sim">SIMULATED</span>', nreal, len(rows) - nsim - nreal),
           "</table>",
           "<p>The commit, CPU and GPU above are this page's; each paper's section lists the commits and "
           "machines its results were written by. Every verdict comes from <code>bench/verdict.py</code>; "
           "a SIMULATED row's times come from SimGrid (real numerics, modelled time).</p>"]
    if counts:
        top.append('<table class="summary"><tr><th>verdict</th><th>rows</th></tr>%s</table>' % "".join(
            "<tr><td>%s</td><td>%d</td></tr>" % (verdict_html(v), n) for v, n in sorted(counts.items())))
    nerr = sum(b.count('data-error="1"') for b in body)
    if nerr:
        top.append('<p class="note"><b>%d error%s</b> reading the inputs: see the rows marked ERROR below.</p>'
                   % (nerr, "" if nerr == 1 else "s"))
    if not have_results:
        top.append('<p class="note"><b>No results at all</b> under <code>%s</code>: every claim reads '
                   '&ldquo;no results&rdquo;. Run the benches (%s; <code>QUICK=1</code> for a one-minute '
                   'check each), then <code>make plots report</code>.</p>'
                   % (E(rel(os.path.abspath(resdir))),
                      ", ".join("<code>make %s</code>" % b for p in PAPERS for b in p[3])))
    if rows:
        ov = ['<details open><summary><b>All claims at a glance</b> (each links to its row)</summary>'
              '<table class="summary"><tr><th>paper</th><th>claim</th><th>what</th><th>verdict</th>'
              '<th>real or SIMULATED</th><th>kind</th></tr>']
        for p in PAPERS + [OTHER]:
            for r in by[p[0]]:
                ov.append('<tr><td>%s</td><td><a href="#%s">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>'
                          % (E(p[0]), anchor(r.get("id")), E(str(r.get("id"))), E(fmt(r.get("label") or "")),
                             verdict_html(r.get("verdict")), sim_html(r.get("simulated")), E(fmt(r.get("kind") or ""))))
        ov.append("</table></details>")
        top.append("".join(ov))
    top.append('<p id="selfcheck">self-check: not run (the page\'s script did not run)</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>pdlbench reproduction report</title><style>%s</style></head><body>\n%s\n%s\n"
            "<script>%s</script></body></html>\n" % (CSS, "\n".join(top), "\n".join(body), SELFCHECK_JS))


def check_out(out, a):
    """The page must not land on one of the report's own inputs (issue 46, item 1): the rows file,
    the engine, a rendered plot, or a results file. Exit 2 naming both flags."""
    real = os.path.realpath(out)
    for flag, path in (("--rows", a.rows), ("--engine", a.engine)):
        if path and os.path.realpath(path) == real:
            raise Usage("--out %s and %s %s are the same file: the page would replace its own input" % (out, flag, path))
    for flag, folder in (("--plots", a.plots), ("--results", a.results)):
        top = os.path.realpath(folder)
        if real.startswith(top + os.sep) and (os.path.dirname(real) == top or
                                              os.path.splitext(real)[1] in (".png", ".jsonl", ".json", ".gz", ".md", ".tsv")):
            raise Usage("--out %s lies among %s %s's files (an input of the page); write it elsewhere"
                        % (out, flag, folder))


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="bench/report.py",
        description="Writes the one self-contained HTML report page (claims, verdicts, rules and their "
                    "history, seeds and spread, plots, provenance) from the verdict engine's rows and the "
                    "results files. `make report` runs it after plots/render.sh and bench/reproduction.sh.")
    ap.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR",
                    help="results folder with <paper>/*.jsonl (default: results)")
    ap.add_argument("--out", default=None, metavar="FILE",
                    help="page to write (default: results/report/index.html)")
    ap.add_argument("--plots", default=os.path.join(ROOT, "plots", "out"), metavar="DIR",
                    help="folder of rendered PNG plots (default: plots/out; `make plots` fills it)")
    ap.add_argument("--rows", default=None, metavar="FILE",
                    help="render the rows of this JSON file (the engine's --format json output) "
                         "instead of running bench/verdict.py")
    ap.add_argument("--engine", default=os.path.join(ROOT, "bench", "verdict.py"), metavar="FILE",
                    help="the verdict engine to run (default: bench/verdict.py; tests give a broken one)")
    ap.add_argument("--fail-on-errors", action="store_true",
                    help="exit 1 when the page has error rows (it is still written); `make report` uses it")
    a = ap.parse_args(argv)
    out = a.out or os.path.join(ROOT, "results", "report", "index.html")
    rc = 0
    try:
        check_out(out, a)
        if os.path.exists(a.results) and not os.path.isdir(a.results):
            raise Fatal("--results %s: not a folder" % a.results)
        if os.path.exists(a.plots) and not os.path.isdir(a.plots):
            raise Fatal("--plots %s: not a folder" % a.plots)
        if a.rows:
            rows, errors = rows_file(a.rows)
        else:
            rows, errors = engine_rows(a.engine, a.results)
        if PAPERS_ERROR:
            errors.append({"paper": "other", "id": "error", "verdict": "error", "reason": PAPERS_ERROR})
        try:
            info, res_errors = scan_results(a.results)
            res_errors = [e for e in res_errors
                          if not any(tail(e["file"]) in str(x.get("reason")) for x in errors)]
            page = render(rows, res_errors + errors, info, provenance(), Plots(a.plots), a.results)
        except Exception as e:  # a bug here must still leave a page that says so, not a blank one
            rc = 1
            page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pdlbench report: error"
                    "</title></head><body><h1>pdlbench report</h1><div class=\"claim v-error\" data-error=\"1\">"
                    "ERROR: bench/report.py failed while rendering: %s: %s</div></body></html>\n"
                    % (type(e).__name__, E(str(e))))
            print("bench/report.py: failed while rendering: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        try:
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
            tmp = out + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(page)
            os.replace(tmp, out)
        except OSError as e:
            raise Fatal("--out %s: cannot be written: %s" % (out, e.strerror or e))
    except Fatal as e:
        print("bench/report.py: %s" % e, file=sys.stderr)
        return 1
    except Usage as e:
        print("bench/report.py: %s" % e, file=sys.stderr)
        return 2
    nerr = page.count('data-error="1"')
    print("wrote %s (%d claims, %d error rows)" % (rel(os.path.abspath(out)), len(rows), nerr))
    if a.fail_on_errors and nerr:
        print("bench/report.py: %s has %d error row%s (each names its file); exit 1"
              % (rel(os.path.abspath(out)), nerr, "" if nerr == 1 else "s"), file=sys.stderr)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
