#!/usr/bin/env python3
"""ci/layering.py — the layering of the source tree, checked file by file (tests/t_layering.sh runs
it in `make test`):

1. the allowed-include matrix between the source folders, against every #include "..." in base/,
   kernels/, reference/ and src/. The top-level folders stand on floors, base/ (the contracts and
   util) the ground, then kernels/ and reference/, then src/: the matrix itself may not let a
   folder include one on a higher floor.
2. one place names a backend: outside kernels/, the backend registry (REGISTRY: kernels_for) and
   the NCCL collective backend (NCCL_BACKEND), no file includes a CUDA, cuDNN, cuBLAS, cuSOLVER or
   NCCL header (<cuda_runtime.h>, <nccl.h>, ... or kernels/cuda/...) or names a symbol of theirs
   (cudaMalloc, ncclComm_t, CUBLAS_STATUS_SUCCESS, ... and calls of the CUDA backend's own
   functions, cuda_free(...)), comments and strings aside; and outside the registry and the
   backends' own folders no file names a kernel table (kernels_cpu, kernels_ref, kernels_cuda).

KNOWN lists the wrong-way includes that exist today, each with the debt it stands for
(docs/DESIGN.md, "Known structural debts"); PENDING_CUDA the files that still name CUDA while
another branch moves those calls behind the registry. Both are tolerated one by one, and an entry
that no longer occurs is an error too, so the lists only shrink. Anything else fails, naming the
file, the line and the rule.

usage: python3 ci/layering.py [--root DIR] [--list]   (--list: the folder graph as it is)
"""
import os
import re
import sys

# top-level folder -> floor (1 = the ground); no folder may include one on a higher floor
FLOORS = {"base": 1, "kernels": 2, "reference": 2, "src": 3}
BASE = {"base/util", "base/contract"}

# folder -> folders it may include (its own always; the intended layering, lowest first); the
# ground floor (BASE) is open to every folder above it
ALLOWED = {
    # the ground floor: util (die/alloc, JSON lines, options, rng, vectors) and the backend contract
    # (kernels_t, kernels_for, the layer/update and inversion contracts); they include nothing of
    # the project
    "base/util": set(),
    "base/contract": set(),
    "reference": BASE,
    "kernels/cpu": BASE,
    "kernels/cuda": BASE,
    "kernels/phantom": BASE,
    "src/core": BASE | {"src/optim", "kernels/cpu", "kernels/phantom", "reference"},
    "src/optim": BASE,
    "src/kfac": BASE | {"src/core", "kernels/cpu"},
    # the collective layer (MPI helpers, the MPI/NCCL backends, the training seam) sits under the
    # runtime: rt_real.c's collectives call coll_seam_t, and coll knows nothing above the ground floor
    "src/coll": BASE,
    "src/rt": BASE | {"src/coll"},
    "src/sim": BASE | {"src/rt"},
    # the algorithm layer reaches MPI only through the runtime (rt_real_init, rt_real_node, ...)
    "src/algo": BASE | {"src/core", "src/optim", "src/kfac", "src/rt"},
    "src/analysis": BASE | {"src/core", "src/optim", "src/rt", "src/algo"},
    "src/cli": BASE | {"src/core", "src/optim", "src/kfac", "src/rt", "src/algo", "src/analysis",
                       "src/coll", "kernels/cpu", "reference"},
}

# the files besides kernels/ that may name CUDA: the backend registry (kernels_for, which hands out
# the CUDA table) and the NCCL collective backend
REGISTRY = {"src/core/backend.c"}
NCCL_BACKEND = {"src/coll/coll_nccl.c"}

# (including file, included header): the debt it stands for
KNOWN = {
    ("src/kfac/kfac.c", "reference/ref.h"): "backend chosen in kfac.c (--kfac-inverse ref, eig: the oracle's inversions)",
}

# Files that still name CUDA (a CUDA header, kernels/cuda, a CUDA symbol) outside the places above:
# being moved by the device branch; the lead empties this at merge. Not counted toward KNOWN.
PENDING_CUDA = {}   # emptied at the device branch's merge: no file outside the allowed places names CUDA

INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
INC_SYS = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
CUDA_HEADER = re.compile(r'(?:cuda|cudnn|cublas|cusolver|cusparse|curand|cufft|nccl|nvrtc|nvml|nvtx)\w*\.h$')
# library API (cudaMalloc, cudnnHandle_t, ncclAllReduce, CUDNN_STATUS_SUCCESS, NCCL_VERSION) and the
# CUDA backend's own functions when called or its types (cuda_free(...), cuda_counters_t)
CUDA_SYM = re.compile(r'\b(?:(?:cuda|cudnn|cublas|cusolver|nccl)[A-Z]\w*'
                      r'|(?:CUDA|CUDNN|CUBLAS|CUSOLVER|NCCL)_\w+'
                      r'|(?:cuda|cudnn|cublas|cusolver|nccl)_\w+(?=\s*\()'
                      r'|(?:cuda|cudnn|cublas|cusolver|nccl)_\w+_t)\b')
TABLE_SYM = re.compile(r'\bkernels_(?:cpu|ref|cuda|phantom)\b')
ROOTS = ("base", "kernels", "reference", "src")


def folder_of(path):
    parts = path.split("/")
    if parts[0] in ("src", "kernels", "base") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def may_name_cuda(path):
    return path.startswith("kernels/") or path in REGISTRY or path in NCCL_BACKEND


def may_name_tables(path):
    return path.startswith(("kernels/", "reference/")) or path in REGISTRY


def resolve(root, src_file, inc):
    """the repository path of an include (the file's own folder, then -Isrc -Ibase -I.), or None"""
    for cand in (os.path.join(os.path.dirname(src_file), inc), os.path.join("src", inc),
                 os.path.join("base", inc), inc):
        if os.path.isfile(os.path.join(root, cand)):
            return os.path.normpath(cand)
    return None


def code_only(text):
    """text with comments, string and character literals blanked (lines kept)"""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            out.append(q + re.sub(r"[^\n]", " ", text[i + 1:j]) + text[j])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def scan(root):
    """(edges, cuda, tables): quoted includes inside the tree as (file, line, include, target);
    where a file names CUDA as (file, line, what); where it names a kernel table likewise"""
    edges, cuda, tables = [], [], []
    for top in ROOTS:
        for dirpath, _dirs, files in os.walk(os.path.join(root, top)):
            for fn in sorted(files):
                if not fn.endswith((".c", ".h", ".cu", ".def")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), root)
                try:
                    text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
                except OSError as e:
                    print(f"layering: cannot read {rel}: {e.strerror}", file=sys.stderr)
                    sys.exit(2)
                for no, line in enumerate(text.splitlines(), 1):
                    m = INC.match(line)
                    if m:
                        target = resolve(root, rel, m.group(1))
                        if target and target.split("/")[0] in ROOTS:
                            edges.append((rel, no, m.group(1), target))
                            if target.startswith("kernels/cuda/"):
                                cuda.append((rel, no, f'#include "{m.group(1)}"'))
                        continue
                    m = INC_SYS.match(line)
                    if m and CUDA_HEADER.search(m.group(1)):
                        cuda.append((rel, no, f"#include <{m.group(1)}>"))
                for no, line in enumerate(code_only(text).splitlines(), 1):
                    if line.lstrip().startswith("#") and re.match(r"\s*#\s*include\b", line):
                        continue
                    for m in CUDA_SYM.finditer(line):
                        cuda.append((rel, no, m.group(0)))
                    for m in TABLE_SYM.finditer(line):
                        tables.append((rel, no, m.group(0)))
    return edges, cuda, tables


def check_matrix():
    bad = []
    for a, bs in ALLOWED.items():
        for b in bs:
            if FLOORS[b.split("/")[0]] > FLOORS[a.split("/")[0]]:
                bad.append(f"ci/layering.py: ALLOWED lets {a} include {b}, a folder on a higher floor")
    return bad


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
    edges, cuda, tables = scan(root)
    if "--list" in argv:
        seen = {}
        for f, _no, _inc, t in edges:
            a, b = folder_of(f), folder_of(t)
            if a != b:
                seen[(a, b)] = seen.get((a, b), 0) + 1
        for (a, b), n in sorted(seen.items()):
            print(f"{a:14s} -> {b:14s} {n}")
        return 0
    bad, used, pending = check_matrix(), set(), set()
    for f, no, inc, t in edges:
        a, b = folder_of(f), folder_of(t)
        if a == b:
            continue
        if b == "kernels/cuda" and not a.startswith("kernels/"):
            continue   # naming the CUDA backend: rule 2 below
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
    for f, no, what in cuda:
        if may_name_cuda(f):
            continue
        if f in PENDING_CUDA:
            pending.add(f)
            continue
        bad.append(f"{f}:{no}: {what}: names CUDA outside kernels/, the registry "
                   f"({', '.join(sorted(REGISTRY))}) and the NCCL backend ({', '.join(sorted(NCCL_BACKEND))})")
    for f, no, what in tables:
        if not may_name_tables(f):
            bad.append(f"{f}:{no}: {what}: a kernel table named outside the registry "
                       f"({', '.join(sorted(REGISTRY))}); ask kernels_for")
    for k in sorted(set(KNOWN) - used):
        bad.append(f'ci/layering.py: KNOWN entry {k[0]} -> "{k[1]}" no longer occurs: remove it')
    for f in sorted(set(PENDING_CUDA) - pending):
        bad.append(f"ci/layering.py: PENDING_CUDA entry {f} names no CUDA any more: remove it")
    for b in bad:
        print(b)
    print(f"layering: {len(edges)} includes checked, {len(used)} known debts, "
          f"{len(pending)} files pending CUDA removal, {len(bad)} errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
