#!/usr/bin/env bash
# tests/t_docs.sh — the repository stands alone and its front page cannot drift:
# README's status block equals what bench/status.py derives from docs/REPRODUCTION.md; nothing
# outside .ci/ points at ../shared (a clone does not have it); docs/PAPERS.md defines every claim
# id the issues, baselines and tables use; the files README links exist; no bytecode is tracked.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
expect "README status block matches docs/REPRODUCTION.md (bench/status.py --check)" python3 bench/status.py --check
# a sub-claim's row (K3a) counts for its claim (K3); K30 would not be K3
python3 -c 'import sys, tempfile; sys.path.insert(0, "bench"); import status
f = tempfile.NamedTemporaryFile("w", suffix=".md", delete=False); f.write("| K3a | x |\n| K30 | y |\n| E2-tau | z |\n"); f.close()
sys.exit(0 if status.present_ids(f.name) == {"K3", "E2"} else 1)' && ok "status: sub-claim rows (K3a, E2-tau) count for their claim" \
  || notok "status sub-claims" "present_ids misses K3a or counts K30"

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git grep -n '\.\./shared' -- . ':!.ci' ':!tests/t_docs.sh' 2>/dev/null)
  [ -z "$hits" ] && ok "no reference to ../shared outside .ci/" || notok "no reference to ../shared" "$hits"
  pyc=$(git ls-files | grep -E '(__pycache__/|\.pyc$)')
  [ -z "$pyc" ] && ok "no Python bytecode tracked" || notok "no Python bytecode tracked" "$pyc"
else
  echo "skip - git checks: not a git checkout"
fi

missing=()
for id in P1 P2 P3 P4 E1 E2 E3 K1 K2 K3 K4 H1 H2 H3 G1 G2 G3 G4; do
  grep -qE "^\| *$id *\|" docs/PAPERS.md || missing+=("$id")
done
[ ${#missing[@]} -eq 0 ] && ok "docs/PAPERS.md has a claim-table row for every id" \
  || notok "docs/PAPERS.md claim ids" "no table row for: ${missing[*]}"

dead=()
for f in $(grep -o '(\(docs\|ci\|bench\)/[^)#]*)' README.md | tr -d '()' | sort -u); do [ -e "$f" ] || dead+=("$f"); done
[ ${#dead[@]} -eq 0 ] && ok "README links resolve" || notok "README links resolve" "${dead[*]}"
# bench/reproduction.sh keeps what it does not generate: a hand-written section survives, and a
# paper table kept from a run before the claims registry is marked as such, once (run twice)
D=$(mktemp -d); mkdir -p "$D/bench" "$D/docs"
cp bench/reproduction.sh bench/status.py "$D/bench/"; cp -r bench/claims "$D/bench/"; cp docs/*.md "$D/docs/"; cp README.md "$D/"
printf '\n## A hand-written section\n\nkeep me\n' >> "$D/docs/REPRODUCTION.md"
# every paper's section now comes from the engine: make the copy's PP-ASGD section look as one
# written before the registry did (its table without the engine's "Rules and verdicts" part)
python3 - "$D/docs/REPRODUCTION.md" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
t = "## PP-ASGD, Sato et al. 2017 (bench-ppasgd)\n"
a = s.index(t) + len(t); b = s.index("\n## ", a)
sec = s[a:b]
cut = sec.find("Rules and verdicts (bench/verdict.py")
if cut >= 0:
    sec = sec[:cut].rstrip() + "\n"
s = s[:a] + re.sub(r"^_Kept from a run before.*\n", "", sec, flags=re.M) + s[b:]
open(p, "w").write(s)
PY
(cd "$D" && PDL_RESULTS="$D/none" bash bench/reproduction.sh >/dev/null 2>&1); m1=$(grep -c '^_Kept from a run before the claims registry' "$D/docs/REPRODUCTION.md")
(cd "$D" && PDL_RESULTS="$D/none" bash bench/reproduction.sh >/dev/null 2>&1); m2=$(grep -c '^_Kept from a run before the claims registry' "$D/docs/REPRODUCTION.md")
# a section with the engine's table (Rules and verdicts ...) must not carry the mark
both=$(awk '/^## /{if (k && e) print t; t=$0; k=0; e=0} /^_Kept from a run before the claims registry/{k=1} /Rules and verdicts \(bench\/verdict.py/{e=1} END{if (k && e) print t}' "$D/docs/REPRODUCTION.md")
if grep -q '^keep me$' "$D/docs/REPRODUCTION.md" && grep -q '^## Training core on a GPU' "$D/docs/REPRODUCTION.md" \
   && [ "$m1" -gt 0 ] && [ "$m1" -eq "$m2" ] && [ -z "$both" ]; then
  ok "reproduction.sh keeps hand-written sections and marks each pre-registry table once ($m1)"
else notok "reproduction.sh keeps sections" "marks $m1 then $m2; kept $(grep -c 'keep me' "$D/docs/REPRODUCTION.md"); marked engine sections: $both"; fi
rm -rf "$D"
finish
