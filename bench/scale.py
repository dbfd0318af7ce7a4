#!/usr/bin/env python3
"""bench/scale.py — `SCALE=paper make bench-<paper>`: the paper's own experiments at the paper's size,
from the profile bench/<paper>/paper.toml (each value with its source or "ours" and why).

    python3 bench/scale.py PAPER          (bench/<paper>/run.sh execs this when SCALE=paper)

It prints the plan: per experiment every pdl command (mpirun -np W for the distributed algorithms,
through bench/launch.sh, so LAUNCH=slurm, HOSTFILE and DRY_RUN work as in every bench; --device cuda
where `pdl speed --device cuda` finds a device) and an estimate of the wall time on this machine:
the step time measured by `pdl speed` (per image at batch B, or at fewer so that a step is about 20
GFLOP, times B; K-FAC by its phases), times the steps, assuming ideal data-parallel scaling over the
devices of this host (the CPU counts as one device: pdl speed uses all its cores, so W workers share
them) and nothing for communication or evaluation. A plan over 24 h is refused (exit 2) unless
FORCE=1. Then it checks the data (CIFAR10_DIR, CIFAR100_DIR, IMAGENET_DIR, MNIST_DIR; exit 2 naming
the variable and the folder) and runs the plan; results in $PDL_RESULTS/<paper>/paper/ (default
results/), one RUN.jsonl + RUN.out per run, a run whose file has a summary from the same command is
kept unless FORCE=1.

Environment: QUICK=1 (the same profiles on synthetic data of the paper's shape: 2 steps a run and 8
test examples (1 and 2 at ImageNet size), one worker count (the largest, at most 2), each numeric
sweep cut to its first and last values, --tau capped at the 2 steps; results in .../paper/quick/), ONLY="id ..." (experiments
whose id starts so), FORCE=1, PLAN_ONLY=1 (print and exit 0), PDL (the binary), PDL_SCALE_STEP_S
(seconds per step for every run instead of pdl speed: tests), SCALE_LIMIT_H (the refusal's limit,
24), IMAGENET32_CLASSES (the 32-class list of PP-ASGD's ImageNet-32; default: 32 classes of
IMAGENET_DIR/train drawn with seed 1).

Profile schema: top-level `paper`, `title`; `[data.NAME]` tables (var, spec, c, h, w, classes,
train, each with its source); `[[exp]]` tables with id, claims, what, and the parameters launch
(single | mpirun | sim), data, net, algo, workers, batch, epochs or steps, and any pdl train flag in
`[exp.flags]`. Every parameter is {value = ..., source = "..."}; a list value is a sweep (runs are
the product of the sweeps); a table value is keyed by algorithm; `only = [algos]` limits a flag to
those algorithms; `[exp.quick]` overrides values under QUICK.
"""
import itertools
import json
import os
import random
import re
import shlex
import subprocess
import sys
import time
import tomllib

SEQUENTIAL = {"sgd", "msgd", "nag", "adam", "asgd", "mvasgd", "kfac"}
SERVER = {"easgd", "easgd-sync", "eamsgd", "downpour", "mdownpour", "adownpour", "mvadownpour", "agn",
          "downpour-lambda", "dynsgd", "adag", "adag-alg1", "adag-agn"}
SPECIAL = ("launch", "data", "net", "algo", "workers", "batch", "epochs", "steps")
QUICK_CAP = 2          # workers in QUICK
QUICK_STEPS = 2
LIMIT_H = float(os.environ.get("SCALE_LIMIT_H") or 24)


def die(msg, code=2):
    print("[scale] " + msg, file=sys.stderr)
    sys.exit(code)


def param(d, key, where):
    """value of a {value, source} parameter; exits naming it when malformed."""
    p = d.get(key)
    if not isinstance(p, dict) or "value" not in p or not str(p.get("source", "")).strip():
        die("%s: '%s' must be {value = ..., source = \"...\"} with a non-empty source" % (where, key))
    return p["value"]


def load_profile(paper):
    path = "bench/%s/paper.toml" % paper
    try:
        with open(path, "rb") as f:
            prof = tomllib.load(f)
    except FileNotFoundError:
        die("%s: no profile for paper '%s' (SCALE=paper needs one)" % (path, paper))
    except tomllib.TOMLDecodeError as e:
        die("%s: %s" % (path, e), 1)
    check_sources(prof, path)
    return prof, path


def check_sources(prof, path):
    """every parameter of every data set and experiment is {value, source}; sources name a section,
    figure, table, equation, algorithm or footnote, or start with 'ours' and say why."""
    bad = []
    cite = re.compile(r"§|Figs?\.|Table|Alg\.|eq\.|Eq\.|footnote|Ch\.|p\. ?\d|Abstract|script|datasheet|docs/|README|https?://|format",
                      re.I)

    def chk(where, d, keys):
        for k in keys:
            p = d.get(k)
            if not isinstance(p, dict) or "value" not in p:
                bad.append("%s.%s: not {value, source}" % (where, k)); continue
            s = str(p.get("source", "")).strip()
            if not s:
                bad.append("%s.%s: no source" % (where, k))
            elif not (s.startswith("ours") and len(s) > 10) and not cite.search(s):
                bad.append("%s.%s: source '%s' names no section/figure/table (or 'ours: why')" % (where, k, s[:40]))
    for name, d in prof.get("data", {}).items():
        chk("data." + name, d, [k for k in d if k not in ("doc",)])
    if not prof.get("exp"):
        bad.append("no [[exp]]")
    for e in prof.get("exp", []):
        where = "exp " + e.get("id", "?")
        for k in ("id", "claims", "what"):
            if not isinstance(e.get(k), str) or not e[k]:
                bad.append("%s: '%s' missing" % (where, k))
        chk(where, e, [k for k in SPECIAL if k in e])
        for k in ("launch", "data", "net", "algo", "workers", "batch"):
            if k not in e:
                bad.append("%s: '%s' missing" % (where, k))
        if "epochs" not in e and "steps" not in e:
            bad.append("%s: neither epochs nor steps" % where)
        if e.get("data", {}).get("value") not in prof.get("data", {}):
            bad.append("%s: data '%s' not in [data]" % (where, e.get("data", {}).get("value")))
        chk(where + " flags", e.get("flags", {}), list(e.get("flags", {})))
        chk(where + " quick", e.get("quick", {}), list(e.get("quick", {})))
    if bad:
        die("%s: %d bad entr%s:\n  %s" % (path, len(bad), "y" if len(bad) == 1 else "ies", "\n  ".join(bad)), 1)


def by_algo(v, algo):
    if isinstance(v, dict):
        if algo not in v:
            die("a value keyed by algorithm has no entry for '%s': %s" % (algo, v))
        return v[algo]
    return v


def cut(v, quick):
    """a sweep; QUICK keeps the first and last values of a numeric sweep (every algorithm stays)."""
    v = v if isinstance(v, list) else [v]
    if quick and len(v) > 2:
        v = [v[0], v[-1]]
    return v


class Run:
    pass


def expand(prof, e, quick):
    """the runs of experiment e: the product of its sweeps."""
    q = e.get("quick", {}) if quick else {}
    val = lambda k: q[k]["value"] if k in q else e[k]["value"]
    flags = dict(e.get("flags", {}))
    flags.update({k: v for k, v in q.items() if k not in SPECIAL})
    algos = val("algo") if isinstance(val("algo"), list) else [val("algo")]
    runs = []
    for algo in algos:
        fl = [(k, p) for k, p in flags.items() if "only" not in p or algo in p["only"]]
        ws = by_algo(val("workers"), algo)
        ws = ws if isinstance(ws, list) else [ws]
        if quick:   # one worker count, the largest capped at QUICK_CAP
            ws = [min(max(ws), QUICK_CAP)]
        else:
            ws = cut(ws, False)
        bs = cut(by_algo(val("batch"), algo), quick)
        axes = [[("workers", w) for w in ws], [("batch", b) for b in bs]]
        for k, p in fl:
            vals = by_algo(q[k]["value"] if k in q else p["value"], algo)
            if vals is None:
                continue
            vals = cut(vals, quick)
            if quick and k == "tau":   # a communication period longer than QUICK's steps never communicates
                vals = [v for i, v in enumerate(vals) if min(v, QUICK_STEPS) not in [min(u, QUICK_STEPS) for u in vals[:i]]]
                vals = [min(v, QUICK_STEPS) for v in vals]
            axes.append([(k, x) for x in vals])
        for combo in itertools.product(*axes):
            r = Run()
            r.exp, r.algo = e["id"], algo
            d = dict(combo)
            r.workers = d.pop("workers")
            r.batch = d.pop("batch")
            r.flags = d
            r.launch = by_algo(val("launch"), algo)
            if algo in SEQUENTIAL:
                r.launch = "single"
            r.epochs = by_algo(val("epochs"), algo) if "epochs" in e or "epochs" in q else None
            r.steps = by_algo(val("steps"), algo) if "steps" in e or "steps" in q else None
            r.net = by_algo(val("net"), algo)
            r.data = by_algo(val("data"), algo)
            sweep = [(k, x) for k, x in combo if len(next(a for a in axes if a[0][0] == k)) > 1]
            r.name = "-".join([e["id"], algo] + ["%s%s" % ({"workers": "W", "batch": "B"}.get(k, k[:4]), str(x).replace(":", "")) for k, x in sweep])
            r.name = re.sub(r"[^A-Za-z0-9._-]", "_", r.name)
            runs.append(r)
    return runs


def ranks(r):
    if r.launch == "mpirun":
        return r.workers + 1 if r.algo in SERVER else r.workers
    return 1


def data_spec(prof, name, quick, outdir):
    d = prof["data"][name]
    g = lambda k: d[k]["value"] if k in d else None
    c, h, w, classes = g("c"), g("h"), g("w"), g("classes")
    if quick:
        n = 16 if h >= 128 else 256
        return "synthetic:n=%d,c=%d,h=%d,w=%d,classes=%d,seed=1" % (n, c, h, w, classes), None
    var = g("var")
    return d["spec"]["value"], var


def resolve_data(prof, name, outdir):
    """the real data set's --data spec: its folder from the variable, checked (exit 2 naming both)."""
    d = prof["data"][name]
    var, spec = d["var"]["value"], d["spec"]["value"]
    folder = os.environ.get(var, "")
    if not folder:
        die("data set %s: %s is not set: point it at the %s folder (%s)" % (name, var, name, d["var"]["source"]))
    if not os.path.isdir(folder):
        die("data set %s: %s=%s: no such directory" % (name, var, folder))
    spec = spec.replace("{dir}", folder)
    if "{classes}" in spec:
        spec = spec.replace("{classes}", classes_file(folder, int(d["classes"]["value"]), outdir))
    return spec


def classes_file(folder, k, outdir):
    f = os.environ.get("IMAGENET32_CLASSES", "")
    if f:
        if not os.path.isfile(f):
            die("IMAGENET32_CLASSES=%s: no such file" % f)
        return f
    train = os.path.join(folder, "train")
    if not os.path.isdir(train):
        die("IMAGENET_DIR=%s: no train/ folder (the ImageNet layout train/<wnid>/*.JPEG)" % folder)
    wnids = sorted(x for x in os.listdir(train) if os.path.isdir(os.path.join(train, x)))
    if len(wnids) < k:
        die("IMAGENET_DIR=%s: train/ has %d classes, fewer than %d" % (folder, len(wnids), k))
    pick = sorted(random.Random(1).sample(wnids, k))
    f = os.path.join(outdir, "imagenet%d-classes.txt" % k)
    with open(f, "w") as fp:
        fp.write("# %d classes of %s drawn with seed 1 (bench/scale.py; PP-ASGD's own 32 were not published)\n" % (k, train))
        fp.write("\n".join(pick) + "\n")
    return f


def shown_spec(prof, name):
    """the --data spec as the plan prints it: the folder as its variable"""
    d = prof["data"][name]
    return d["spec"]["value"].replace("{dir}", "$" + d["var"]["value"]).replace("{classes}", "$IMAGENET32_CLASSES")


def detect_cuda(pdl):
    """as bench/gpu/run.sh: pdl speed --device cuda either runs or says 'no CUDA device'."""
    try:
        p = subprocess.run([pdl, "speed", "--device", "cuda", "--net", "tiny", "--batch", "1", "--repeats", "1"],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return 0, "pdl speed --device cuda did not run (%s)" % ex
    if p.returncode != 0:
        m = re.search(r"no CUDA device.*", p.stderr + p.stdout)
        return 0, m.group(0) if m else "pdl speed --device cuda failed (exit %d)" % p.returncode
    try:
        n = len([l for l in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.splitlines()
                 if l.startswith("GPU")])
    except OSError:
        n = 1
    return max(n, 1), "CUDA: %d device(s) (nvidia-smi -L)" % max(n, 1)


def command(prof, r, spec, device, quick, outdir):
    big = prof["data"][r.data]["h"]["value"] >= 128   # ImageNet-size images: QUICK evaluates on 2
    c = [PDL, "train", "--algo", r.algo, "--data", spec, "--net", r.net, "--batch", str(r.batch)]
    if quick:
        n = 1 if big else QUICK_STEPS   # ImageNet-size nets (to 31 GFLOP a training image): one step
        c += ["--steps", str(r.steps if r.steps and r.steps <= n else n), "--test-subset", "2" if big else "8"]
    elif r.steps:
        c += ["--steps", str(r.steps)]
    else:
        c += ["--epochs", str(r.epochs)]
    for k, x in r.flags.items():
        if x is True:
            c.append("--" + k)
        elif x is not False:
            c += ["--" + k, str(x)]
    if r.launch == "sim":
        c += ["--runtime", "sim"]
    elif device:
        c += ["--device", "cuda"]
    c += ["--quiet", "--tag", r.name, "--results", os.path.join(outdir, r.name + ".jsonl")]
    if r.launch == "mpirun":
        c = ["mpirun_cmd", "-np", str(ranks(r))] + c
    return c


NET_FLOPS = {}


def speed_batch(r):
    """the batch pdl speed measures at: B, or fewer so that a step stays near 20 GFLOP (short on a CPU)"""
    if not NET_FLOPS:
        out = subprocess.run([PDL, "nets"], capture_output=True, text=True).stdout
        for l in out.splitlines():
            f = l.split()
            if len(f) >= 5 and re.match(r"^\d+x\d+x\d+$", f[1]):
                NET_FLOPS[f[0]] = float(f[4]) * 1e6   # train MFLOP per image at the preset's input
    fl = NET_FLOPS.get(r.net, 2e9)
    return max(1, min(r.batch, int(20e9 // fl)))


def speed_key(r, shape, device, kfac):
    return "%s|%s|%d|%s|%s" % (r.net, "x".join(map(str, shape)), speed_batch(r), "cuda" if device else "cpu", "kfac" if kfac else "sgd")


def step_time(r, shape, device, cache, cache_file):
    """seconds per step of run r on one device of this machine (PDL_SCALE_STEP_S fakes it)."""
    fake = os.environ.get("PDL_SCALE_STEP_S")
    if fake:
        return float(fake), "PDL_SCALE_STEP_S"
    kfac = r.algo in ("kfac", "kfac-dist")
    dev = device and r.launch != "sim"
    key = speed_key(r, shape, dev, kfac)
    if key not in cache:
        b = speed_batch(r)
        cmd = [PDL, "speed", "--net", r.net, "--input", "x".join(map(str, shape)), "--batch", str(b), "--repeats", "2"]
        if dev:
            cmd += ["--device", "cuda"]
        if kfac:
            cmd += ["--algo", "kfac"]
        print("[scale] measuring: %s" % " ".join(cmd), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        line = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not line:
            die("pdl speed failed (exit %d): %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1]), 1)
        j = json.loads(line[-1])
        cache[key] = {"b": b, "img_per_s": j["img_per_s"], **{k: j[k] for k in j if k.startswith("kfac_") and k.endswith("_ms")}}
        with open(cache_file, "w") as f:
            json.dump(cache, f, indent=1)
    m = cache[key]
    if kfac and "kfac_step_ms" in m:   # per image: forward/backward and factors; per step: inversions, preconditioning
        per_img = (m["kfac_fb_ms"] + m["kfac_factors_ms"]) / m["b"] / 1e3
        return per_img * r.batch + (m["kfac_inverse_ms"] + m["kfac_precond_ms"] + m["kfac_update_ms"]) / 1e3, "pdl speed --algo kfac"
    return r.batch / m["img_per_s"], "pdl speed"


def fmt_h(s):
    if s < 120:
        return "%.0f s" % s
    if s < 7200:
        return "%.1f min" % (s / 60)
    if s < 3 * 86400:
        return "%.1f h" % (s / 3600)
    return "%.1f days" % (s / 86400)


def main():
    global PDL
    sys.stdout.reconfigure(line_buffering=True)   # the plan and each run's line as they come, also through a pipe
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        die("usage: python3 bench/scale.py PAPER   (env: QUICK, FORCE, ONLY, PLAN_ONLY, LAUNCH, HOSTFILE, DRY_RUN)")
    paper = sys.argv[1]
    PDL = os.environ.get("PDL") or "bin/pdl"
    quick, force = bool(os.environ.get("QUICK")), bool(os.environ.get("FORCE"))
    only = os.environ.get("ONLY", "").split()
    prof, path = load_profile(paper)
    root = os.environ.get("PDL_RESULTS") or "results"
    outdir = os.path.join(root, paper, "paper", "quick" if quick else "")
    outdir = outdir.rstrip("/")
    exps = [e for e in prof["exp"] if not only or any(e["id"].startswith(o) for o in only)]
    if not exps:
        die("ONLY=%s matches no experiment of %s (%s)" % (" ".join(only), path, " ".join(e["id"] for e in prof["exp"])))
    if not (os.path.isfile(PDL) and os.access(PDL, os.X_OK)):
        die("%s: no pdl binary (make build, or PDL=...)" % PDL, 1)
    os.makedirs(outdir, exist_ok=True)
    if os.environ.get("PDL_SCALE_STEP_S"):
        ngpu, devwhy = 0, "device not probed (PDL_SCALE_STEP_S set)"
    else:
        ngpu, devwhy = detect_cuda(PDL)
    device = ngpu > 0
    cache_file = os.path.join(outdir, "speed.json")
    try:
        cache = json.load(open(cache_file))
    except (OSError, ValueError):
        cache = {}
    print("[scale] %s at the paper's scale: %s (%s)%s" % (paper, prof.get("title", ""), path,
          "\n[scale] QUICK: synthetic data of each data set's shape, %d steps a run (1 at ImageNet size), 8 test examples (2 at ImageNet size), one worker count: the largest, at most %d workers (%d ranks with a "
          "server), each numeric sweep cut to its first and last values, --tau capped at %d so that it communicates; not the paper's experiment, its code paths"
          % (QUICK_STEPS, QUICK_CAP, QUICK_CAP + 1, QUICK_STEPS) if quick else ""))
    print("[scale] device: %s; results in %s/" % ("cuda (%s)" % devwhy if device else "cpu (%s)" % devwhy, outdir))
    plan, total = [], 0.0
    for e in exps:
        runs = expand(prof, e, quick)
        dname = e["data"]["value"]
        d = prof["data"][dname]
        shape = (d["c"]["value"], d["h"]["value"], d["w"]["value"])
        ntrain = d["train"]["value"]
        spec, var = data_spec(prof, dname, quick, outdir)
        print("\n== %s (%s): %s" % (e["id"], e["claims"], e["what"]))
        print("   data %s (%s); net %s; %d run(s)%s" % (dname, spec if quick else "$" + var, e["net"]["value"], len(runs),
              "; mpirun is bench/launch.sh's mpirun_cmd (LAUNCH=slurm, HOSTFILE, DRY_RUN)" if any(r.launch == "mpirun" for r in runs) else ""))
        est = 0.0
        for r in runs:
            cmd = command(prof, r, spec if quick else "{" + dname + "}", device, quick, outdir)
            r.cmd = cmd
            t, how = step_time(r, shape, device, cache, cache_file) if not quick else (None, "")
            if t is not None:
                if r.steps:
                    steps = r.steps * r.workers
                else:
                    steps = r.epochs * ntrain / r.batch
                devs = min(r.workers, ngpu) if device and r.launch != "sim" else 1
                r.est = steps * t / devs
                est += r.est
            shown = [shown_spec(prof, dname) if x == "{" + dname + "}" else x for x in cmd]
            if shown[0] == "mpirun_cmd":
                shown[0] = "mpirun"
            print("   %s%s" % (" ".join('"%s"' % x if "$" in x else shlex.quote(x) for x in shown),
                                "   # ~%s" % fmt_h(r.est) if t is not None else ""))
            plan.append((r, dname))
        if not quick:
            print("   estimate %s: %s (step time from %s: per image at batch B, or fewer so that a step is ~20 GFLOP, x B; steps = epochs x %d / B "
                  "(or steps x workers); ideal data-parallel scaling over %s; no communication or evaluation time)"
                  % (e["id"], fmt_h(est), how, ntrain,
                     "%d GPU(s), workers beyond them sharing" % ngpu if device else "this CPU (all its cores one device: W workers share it)"))
        total += est
    if not quick:
        print("\n[scale] estimate of the whole plan on this machine: %s" % fmt_h(total))
        if total > LIMIT_H * 3600 and not force:
            die("the plan would take ~%s here, over %g h: not started. FORCE=1 runs it anyway; ONLY=\"id ...\" picks "
                "experiments; LAUNCH=slurm (bench/launch.sh) sends the runs to a cluster" % (fmt_h(total), LIMIT_H))
    if os.environ.get("PLAN_ONLY"):
        print("[scale] PLAN_ONLY: nothing run")
        return 0
    specs = {}
    for r, dname in plan:
        if dname not in specs:
            specs[dname] = data_spec(prof, dname, True, outdir)[0] if quick else resolve_data(prof, dname, outdir)
    fails = 0
    t0 = time.time()
    env = dict(os.environ, PAPER=paper, RES=outdir, PDL_NO_PROGRESS="1")
    for r, dname in plan:
        cmd = [specs[dname] if x == "{" + dname + "}" else x for x in r.cmd]
        res = os.path.join(outdir, r.name + ".jsonl")
        sig = json.dumps(cmd)
        if not force and open_or(res + ".sig") == sig and complete(res):
            print("[scale] %s: complete, kept (FORCE=1 re-runs)" % r.name); continue
        for f in (res, res + ".sig"):
            if os.path.exists(f):
                os.remove(f)
        t1 = time.time()
        with open(os.path.join(outdir, r.name + ".out"), "w") as out:
            if cmd[0] == "mpirun_cmd":
                full = ["bash", "-c", 'source bench/launch.sh; mpirun_cmd "$@"', "mpirun_cmd"] + cmd[1:]
                env["BENCH_STEP"] = r.name
            else:
                full = cmd
            rc = subprocess.run(full, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
        ok = rc == 0 and (complete(res) or os.environ.get("DRY_RUN"))
        print("[scale] %s: %s in %.0f s%s" % (r.name, ("DRY_RUN, not launched" if os.environ.get("DRY_RUN") else "done") if ok
                                             else "FAILED (exit %d)" % rc, time.time() - t1,
              "" if ok else ", see " + os.path.join(outdir, r.name + ".out")), flush=True)
        if ok and not os.environ.get("DRY_RUN"):
            with open(res + ".sig", "w") as f:
                f.write(sig)
        fails += not ok
    print("[scale] %s: %d run(s), %d failed, %.0f s" % (paper, len(plan), fails, time.time() - t0))
    return 1 if fails else 0


def open_or(f):
    try:
        return open(f).read()
    except OSError:
        return None


def complete(f):
    """pdl's results file has a summary line not cut short by a signal (as bench/lib.sh run_complete)."""
    try:
        lines = open(f).read().splitlines()
    except OSError:
        return False
    return any('"event":"summary"' in l and "interrupted_by_signal" not in l for l in lines)


if __name__ == "__main__":
    sys.exit(main())
