#!/usr/bin/env python3
"""ci/layering.py — the allowed-include matrix between the source folders, checked against every
#include "..." in src/, kernels/ and reference/ (tests/t_layering.sh runs it in `make test`).

ALLOWED says which folders a folder may include (its own always). KNOWN lists the wrong-way
includes that exist today, each with the debt it stands for (docs/DESIGN.md, "Known structural
debts"): they are tolerated one by one, file by file, and a KNOWN entry that no longer occurs is an
error too, so the list only shrinks. Anything else fails, naming the file, the line and the
include.

usage: python3 ci/layering.py [--root DIR] [--list]   (--list: the folder graph as it is)
"""
import os
import re
import sys

# folder -> folders it may include (the intended layering, lowest first)
ALLOWED = {
    "src/util": set(),
    # the backend contract (kernels_t, kernels_for, the layer/update and inversion contracts):
    # below both the core and the kernels, it includes nothing of the project
    "src/contract": set(),
    "reference": {"src/util", "src/contract"},
    "kernels/cpu": {"src/util", "src/contract"},
    "kernels/cuda": {"src/util", "src/contract"},
    "src/core": {"src/util", "src/contract", "src/optim", "kernels/cpu", "reference"},
    "src/optim": {"src/util", "src/contract"},
    "src/kfac": {"src/util", "src/contract", "src/core", "kernels/cpu"},
    # the collective layer (MPI helpers, the MPI/NCCL backends, the training seam) sits under the
    # runtime: rt_real.c's collectives call coll_seam_t, and coll knows nothing above util
    "src/coll": {"src/util"},
    "src/rt": {"src/util", "src/coll"},
    "src/sim": {"src/util", "src/rt"},
    "src/algo": {"src/util", "src/contract", "src/core", "src/optim", "src/kfac", "src/rt"},
    "src/analysis": {"src/util", "src/contract", "src/core", "src/optim", "src/rt", "src/algo"},
    "src/cli": {"src/util", "src/contract", "src/core", "src/optim", "src/kfac", "src/rt", "src/algo", "src/analysis",
                "src/coll", "kernels/cpu", "kernels/cuda", "reference"},
}

# (including file, included header): the debt it stands for
KNOWN = {
    ("reference/inv_ref.c", "core/rng.h"): "the reference inversions' test matrices use core's rng",
    # the registry itself: kernels_for (src/core/backend.c) is the one file that names the CUDA
    # backend; no other file of src/core may include kernels/cuda
    ("src/core/backend.c", "kernels/cuda/cuda_table.h"): "the registry (kernels_for) names the CUDA backend",
    # a backend named outside the registry
    ("src/coll/mpi_util.c", "kernels/cuda/cuda_layers.h"): "the CUDA failure handler in the MPI helpers",
    ("src/kfac/kfac.c", "kernels/cuda/cuda_inv.h"): "backend chosen in kfac.c (--kfac-inverse cuda)",
    ("src/kfac/kfac.c", "kernels/cuda/cuda_layers.h"): "backend chosen in kfac.c (--kfac-inverse cuda)",
    ("src/kfac/kfac.c", "reference/ref.h"): "backend chosen in kfac.c (--kfac-inverse ref, eig: the oracle's inversions)",
    # optim <-> core
    ("src/optim/optim.c", "core/model.h"): "optim's fused step reads net_step_t from core",
}

INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ROOTS = ("src", "kernels", "reference")


def folder_of(path):
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return "/".join(parts[:2])
    if parts[0] == "kernels" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def resolve(root, src_file, inc):
    """the repository path of an include (-Isrc -I. and the file's own folder), or None"""
    for cand in (os.path.join(os.path.dirname(src_file), inc), os.path.join("src", inc), inc):
        if os.path.isfile(os.path.join(root, cand)):
            return os.path.normpath(cand)
    return None


def scan(root):
    edges = []
    for top in ROOTS:
        for dirpath, _dirs, files in os.walk(os.path.join(root, top)):
            for fn in sorted(files):
                if not fn.endswith((".c", ".h", ".cu")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), root)
                try:
                    lines = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read().splitlines()
                except OSError as e:
                    print(f"layering: cannot read {rel}: {e.strerror}", file=sys.stderr)
                    sys.exit(2)
                for no, line in enumerate(lines, 1):
                    m = INC.match(line)
                    if not m:
                        continue
                    target = resolve(root, rel, m.group(1))
                    if target and target.split("/")[0] in ROOTS:
                        edges.append((rel, no, m.group(1), target))
    return edges


def main(argv):
    root = "."
    if "--help" in argv or "-h" in argv:
        print(__doc__.strip())
        return 0
    if "--root" in argv:
        i = argv.index("--root")
        if i + 1 >= len(argv):
            print("layering: --root needs a folder", file=sys.stderr)
            return 2
        root = argv[i + 1]
    edges = scan(root)
    if "--list" in argv:
        seen = {}
        for f, _no, _inc, t in edges:
            a, b = folder_of(f), folder_of(t)
            if a != b:
                seen[(a, b)] = seen.get((a, b), 0) + 1
        for (a, b), n in sorted(seen.items()):
            print(f"{a:14s} -> {b:14s} {n}")
        return 0
    bad, used = [], set()
    for f, no, inc, t in edges:
        a, b = folder_of(f), folder_of(t)
        if a == b:
            continue
        if a not in ALLOWED:
            bad.append(f"{f}:{no}: folder {a} is not in ci/layering.py's ALLOWED matrix")
            continue
        if b in ALLOWED[a]:
            continue
        if (f, inc) in KNOWN:
            used.add((f, inc))
            continue
        bad.append(f'{f}:{no}: #include "{inc}": {a} may not include {b} '
                   f'(allowed: {", ".join(sorted(ALLOWED[a])) or "nothing"})')
    for k in sorted(set(KNOWN) - used):
        bad.append(f'ci/layering.py: KNOWN entry {k[0]} -> "{k[1]}" no longer occurs: remove it')
    for b in bad:
        print(b)
    print(f"layering: {len(edges)} includes checked, {len(used)} known debts, {len(bad)} errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
