#!/usr/bin/env python3
"""tests/verdict_fuzz.py — a property-based fuzz of the verdict engine's input readers (issue 46
item 9, the Python counterpart of the libFuzzer targets): mutated results files
(measurements.jsonl) and mutated claims registries, fed to bench/verdict.py's rows_for and
load_registry. The properties, for every input:
  - nothing escapes but verdict.VerdictError (a one-line message naming the file), never a traceback;
  - every error row and every VerdictError is one line;
  - each call ends within LIMIT_S seconds (a rule like 9 ** 9 ** 9 must be bounded, not hang).

  python3 tests/verdict_fuzz.py [N [SEED]]     N inputs of each kind (default 400), seed (default 1)

Exit 1 naming the first input that breaks a property (written to $TMPDIR for a rerun). Stdlib only."""
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import verdict  # noqa: E402

LIMIT_S = 10   # a call's bound: the engine's own per-rule limit is 5 s (verdict.evaluate)

BASE_TOML = '''paper = "fz"
title = "fuzz paper"
order = 1
bench = "make bench-fz"
doc_title = "## fuzz"
paper_ids = ["F1"]

[[claim]]
id = "F1"
label = "F1 a claim"
statement = "x beats y"
quote = "x beats y."
source = "Fig. 1, sec. 2, p. 3"
strength = "faithful"
kind = "reproduction"
metrics = ["x", "y"]
results = ["runs-*.jsonl"]
value = "x / y"
rule = "x > y * tol"
tolerance = 1.0
seeds = 3
fixed_at = "abc1234"

[[claim.history]]
date = "2026-01-01"
rule = "x > y"
tolerance = 0.5
reason = "older"
verdict = "agrees"
'''

GOOD_MEAS = {"id": "F1", "instance": None, "seed": 1, "paper": "fz", "metrics": {"x": 2.0, "y": 1.0},
             "label": "F1 a claim", "ours": "2 vs 1", "data_set": "synthetic", "mode": "real", "plot": None,
             "flags": [], "simulated": False, "quick": False}

RULES = ["x > y", "9 ** 9 ** 9", "x ** 1e9", "[0] * 10 ** 12", "sum(range(10 ** 12))", "1 << 10 ** 9",
         "(lambda: 1)()", "x.__class__", "_x", "open('/etc/passwd')", "max([])", "x / 0", "mean([])",
         "all(a > b for a, b in zip(x, y))", "nonincreasing(x, 'a')", "'a' * 10 ** 9", "x +", "",
         "len(x) > 2", "isfinite(x) and x < inf", "[i for i in range(10 ** 7)]", "ratio(x, y) > tol"]


def rand_value(rng, depth=0):
    k = rng.randrange(12)
    if k == 0: return None
    if k == 1: return rng.choice([True, False])
    if k == 2: return rng.randint(-10, 10)
    if k == 3: return int("9" * rng.choice([20, 400, 4000]))
    if k == 4: return rng.choice([0.0, -1.5, 1e308, 1e-308, 3.25])
    if k == 5: return rng.choice(["", "x", "\u00e9\u6f22", "a" * 1000, "1e999"])
    if k == 6 and depth < 3: return [rand_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if k == 7 and depth < 3: return {rng.choice(["x", "y", "id", ""]): rand_value(rng, depth + 1) for _ in range(rng.randrange(3))}
    if k == 8: return float("nan") if rng.random() < 0.5 else float("inf")
    if k == 9: return rng.choice(RULES)
    return rng.randint(-2 ** 40, 2 ** 40)


def mutate_meas(rng):
    m = json.loads(json.dumps(GOOD_MEAS))
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(5)
        key = rng.choice(list(m.keys()) + ["metrics"])
        if op == 0: m[key] = rand_value(rng)
        elif op == 1: m.pop(key, None)
        elif op == 2 and isinstance(m.get("metrics"), dict): m["metrics"][rng.choice(["x", "y", "z"])] = rand_value(rng)
        elif op == 3: m[rng.choice(["extra", "_line", "row"])] = rand_value(rng)
        else: m["metrics"] = rand_value(rng)
    text = json.dumps(m, allow_nan=True)
    lines = [text] * rng.randrange(1, 4)
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    r = rng.randrange(8)
    if r == 0: raw = raw[:rng.randrange(len(raw))]                         # torn
    elif r == 1: raw = raw.replace(b'"x"', b'"\xff\xfe"', 1)               # not UTF-8
    elif r == 2: raw = b"[1, 2]\n" + raw                                    # not an object
    elif r == 3:
        i = rng.randrange(len(raw)); raw = raw[:i] + bytes([rng.randrange(256)]) + raw[i + 1:]
    return raw


def mutate_toml(rng):
    lines = BASE_TOML.split("\n")
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(lines))
        if "=" not in lines[i]:
            continue
        key = lines[i].split("=")[0].strip()
        op = rng.randrange(6)
        if op == 0: lines[i] = "%s = %s" % (key, json.dumps(rand_value(rng)) if rng.random() < 0.7 else "nan")
        elif op == 1: lines[i] = ""
        elif op == 2: lines[i] = 'rule = %s' % json.dumps(rng.choice(RULES))
        elif op == 3: lines[i] = '%s = [1, "a", {x = 1}]' % key
        elif op == 4: lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
        else: lines[i] = 'history = [1]'
    raw = "\n".join(lines).encode("utf-8")
    if rng.random() < 0.1:
        raw = raw.replace(b"fuzz paper", b"fuzz \xff paper")
    return raw


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def one(kind, raw, root):
    """Runs the engine on one input; None, or what broke a property."""
    claims, res = os.path.join(root, "claims"), os.path.join(root, "res")
    os.makedirs(claims, exist_ok=True); os.makedirs(res, exist_ok=True)
    with open(os.path.join(claims, "fz.toml"), "wb") as f:
        f.write(raw if kind == "toml" else BASE_TOML.encode())
    with open(os.path.join(res, verdict.MEASUREMENTS), "wb") as f:
        f.write(raw if kind == "meas" else (json.dumps(GOOD_MEAS) + "\n").encode())
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    t0 = time.time()
    try:
        rows, errors = verdict.rows_for("fz", res, claims_dir=claims)
        for r in rows:
            for k in ("reason", "error"):
                if r.get(k) and "\n" in str(r[k]):
                    return "a %s with a newline: %r" % (k, r[k][:200])
        json.dumps(rows, default=str)   # the rows serialise (verdicts.json)
    except verdict.VerdictError as e:
        if "\n" in str(e):
            return "a VerdictError of several lines: %r" % str(e)[:300]
    except Timeout:
        return "no answer within %d s" % LIMIT_S
    except BaseException as e:   # noqa: BLE001 -- the property: nothing else escapes
        return "%s escaped: %s" % (type(e).__name__, str(e)[:300])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if time.time() - t0 > LIMIT_S:
        return "took %.1f s" % (time.time() - t0)
    return None


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix="pdl_vfuzz.")
    try:
        for kind, gen in (("meas", mutate_meas), ("toml", mutate_toml)):
            for i in range(n):
                raw = gen(rng)
                bad = one(kind, raw, root)
                if bad:
                    keep = os.path.join(tempfile.gettempdir(), "verdict_fuzz_%s_%d.bin" % (kind, i))
                    with open(keep, "wb") as f:
                        f.write(raw)
                    print("not ok - verdict engine, %s input %d (seed %d): %s (input kept in %s)" % (kind, i, seed, bad, keep))
                    return 1
            print("ok - verdict engine: %d mutated %s inputs, no traceback, one-line errors, each within %d s"
                  % (n, "results (measurements.jsonl)" if kind == "meas" else "claims registries", LIMIT_S))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
