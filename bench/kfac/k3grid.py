#!/usr/bin/env python3
"""bench/kfac/k3grid.py — K3's grid (issue 33 item 3): which grid runs are still needed, and the picks.

  k3grid.py next RES [quick]    print one line "ALGO LR DAMP" (DAMP "-" for msgd and adam) per grid
                                run that the rule needs and RES lacks; nothing when the grid is done
  k3grid.py picks RES [quick]   write RES/k3-picks.json (each optimizer's pick, its score, the grid
                                with every run's score, the diverged runs, whether a pick stayed at
                                an edge) and print "ALGO LR DAMP" per optimizer

The plan and the rule were written before any grid run: docs/REPRODUCTION-kfac.md, "K3 judged
fairly". A grid run is RES/k3g-ALGO-lrLR[-dDAMP].jsonl, seed 1, evaluated on the validation split
(pdl train --val). Its score is the mean validation accuracy over the evaluations of the last epoch
(epoch > last epoch - 1); a diverged run has none. The pick is the best score; an exact tie goes to
the smaller lr, then the larger damping. A pick at the edge of an lr grid extends that grid once,
by the next value outward (EXTEND). K-FAC's grid is by coordinates: lr at DAMP0, then the other
dampings at the best lr. QUICK: one point per optimizer, no extension, no damping stage.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import verdict  # noqa: E402

LR = {"msgd": [0.003, 0.01, 0.03], "adam": [0.0003, 0.001, 0.003], "kfac": [0.001, 0.003, 0.01]}
EXTEND = {"msgd": (0.001, 0.1), "adam": (0.0001, 0.01), "kfac": (0.0003, 0.03)}
DAMP0, DAMPS = 0.03, [0.01, 0.1]
QUICK_LR = {"msgd": [0.01], "adam": [0.001], "kfac": [0.003]}


def name(o, lr, d):
    return "k3g-%s-lr%g%s.jsonl" % (o, lr, "" if d is None else "-d%g" % d)


def score(res, o, lr, d):
    """(state, score): state 'missing' | 'diverged' | 'ok'; score = mean last-epoch validation accuracy."""
    p = os.path.join(res, name(o, lr, d))
    if not os.path.exists(p):
        return "missing", None
    ev, summ = [], None
    try:
        rows = verdict.read_jsonl(p)   # the engine's one JSONL loader: a torn last line is skipped, any other bad line named
    except verdict.VerdictError as e:
        sys.exit("k3grid.py: %s" % e)
    for x in rows:
        if x.get("event") == "eval":
            ev.append(x)
        elif x.get("event") == "summary":
            summ = x
    if summ is None or summ.get("interrupted_by_signal"):
        return "missing", None
    if summ.get("eval_set") != "validation":
        sys.exit("k3grid.py: %s was not evaluated on the validation split (pdl train --val): a grid run never reads the test set" % p)
    if summ.get("diverged"):
        return "diverged", None
    last = max(x["epoch"] for x in ev)
    tail = [1 - x["test_err"] for x in ev if x["epoch"] > last - 1 + 1e-9]
    if not tail:
        return "diverged", None
    return "ok", sum(tail) / len(tail)


def best(cands):
    """cands: [(lr, d, score)] with score not None -> the pick (max score; ties: smaller lr, larger d)."""
    ok = [c for c in cands if c[2] is not None]
    if not ok:
        return None
    return sorted(ok, key=lambda c: (-c[2], c[0], -(c[1] or 0)))[0]


def lr_stage(res, o, d, quick):
    """(needed runs, done: bool, grid lrs) of one lr grid at damping d (None: not K-FAC)."""
    lrs = list((QUICK_LR if quick else LR)[o])
    st = {lr: score(res, o, lr, d) for lr in lrs}
    need = [lr for lr in lrs if st[lr][0] == "missing"]
    if need:
        return need, False, lrs
    if not quick:
        b = best([(lr, d, st[lr][1]) for lr in lrs])
        lo, hi = EXTEND[o]
        ext = lo if b and b[0] == lrs[0] else hi if b and b[0] == lrs[-1] else None
        if ext is not None:
            lrs = sorted(lrs + [ext])
            if score(res, o, ext, d)[0] == "missing":
                return [ext], False, lrs
    return [], True, lrs


def plan(res, quick):
    """(needed [(o, lr, d)], grid {o: [(lr, d)]} of every point the rule asks so far)."""
    need, grid = [], {}
    for o in ("kfac", "adam", "msgd"):
        d0 = DAMP0 if o == "kfac" else None
        n, done, lrs = lr_stage(res, o, d0, quick)
        need += [(o, lr, d0) for lr in n]
        grid[o] = [(lr, d0) for lr in lrs]
        if o == "kfac" and done and not quick:
            b = best([(lr, d0, score(res, o, lr, d0)[1]) for lr in lrs])
            if b:
                for d in DAMPS:
                    grid[o].append((b[0], d))
                    if score(res, o, b[0], d)[0] == "missing":
                        need.append((o, b[0], d))
    return need, grid


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("next", "picks"):
        sys.exit(__doc__)
    cmd, res = sys.argv[1], sys.argv[2]
    quick = len(sys.argv) > 3 and sys.argv[3] == "quick"
    need, grid = plan(res, quick)
    if cmd == "next":
        for o, lr, d in need:
            print(o, "%g" % lr, "-" if d is None else "%g" % d)
        return
    if need:
        sys.exit("k3grid.py picks: the grid is not complete (%d runs missing, first %s)" % (len(need), name(*need[0])))
    out = {"rule": "max mean validation accuracy over the last epoch's evaluations; ties: smaller lr, larger damping",
           "picks": {}, "grid": {}, "diverged": [], "at_edge": []}
    for o in ("kfac", "adam", "msgd"):
        rows = []
        for lr, d in grid[o]:
            st, sc = score(res, o, lr, d)
            rows.append({"lr": lr, "damping": d, "val_acc_last_epoch": sc, "state": st})
            if st == "diverged":
                out["diverged"].append(name(o, lr, d))
        out["grid"][o] = rows
        b = best([(r["lr"], r["damping"], r["val_acc_last_epoch"]) for r in rows])
        if b is None:
            sys.exit("k3grid.py picks: every %s grid run diverged" % o)
        out["picks"][o] = {"lr": b[0], "damping": b[1], "val_acc_last_epoch": b[2]}
        lrs = sorted({r["lr"] for r in rows})
        if not quick and len(lrs) > 1 and b[0] in (lrs[0], lrs[-1]):
            out["at_edge"].append(o)
        print(o, "%g" % b[0], "-" if b[1] is None else "%g" % b[1])
    tmp = os.path.join(res, "k3-picks.json.tmp")
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, os.path.join(res, "k3-picks.json"))


if __name__ == "__main__":
    main()
