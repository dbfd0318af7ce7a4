#!/usr/bin/env bash
# tests/t_docs.sh — the repository stands alone and its front page cannot drift:
# README's status block equals what bench/status.py derives from the results of record; nothing
# outside .ci/ points at ../shared (a clone does not have it); docs/PAPERS.md defines every claim
# id the issues, baselines and tables use; the files README links exist; no bytecode is tracked.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
expect "README status block matches the results of record (bench/status.py --check)" python3 bench/status.py --check
# the block has one row per paper of the registry (verdict.papers(): bench/claims/*.toml), with verdict counts
miss=$(python3 bench/verdict.py --list-papers | while IFS=$'\t' read -r _ title _; do
  grep -qF "| $title | " README.md || echo "$title"; done)
hdr=$(grep -c '^| paper | paper claims | record: runs.* commits | agrees | inconclusive | disagrees | not comparable | no results | consistency | observation | beyond | bench |$' README.md)
[ -z "$miss" ] && [ "$hdr" = 1 ] && ok "README's status block: verdict counts for every registry paper" \
  || notok "README status rows" "missing: $miss; header lines: $hdr"

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git grep -n '\.\./shared' -- . ':!.ci' ':!tests/t_docs.sh' 2>/dev/null)
  [ -z "$hits" ] && ok "no reference to ../shared outside .ci/" || notok "no reference to ../shared" "$hits"
  pyc=$(git ls-files | grep -E '(__pycache__/|\.pyc$)')
  [ -z "$pyc" ] && ok "no Python bytecode tracked" || notok "no Python bytecode tracked" "$pyc"
else
  echo "skip - git checks: not a git checkout"
fi

missing=()
for id in $(python3 bench/verdict.py --list-papers | cut -f6); do   # paper_ids of bench/claims/*.toml
  grep -qE "^\| *$id *\|" docs/PAPERS.md || missing+=("$id")
done
[ ${#missing[@]} -eq 0 ] && ok "docs/PAPERS.md has a claim-table row for every id" \
  || notok "docs/PAPERS.md claim ids" "no table row for: ${missing[*]}"

dead=()
for f in $(grep -o '(\(docs\|ci\|bench\)/[^)#]*)' README.md | tr -d '()' | sort -u); do [ -e "$f" ] || dead+=("$f"); done
[ ${#dead[@]} -eq 0 ] && ok "README links resolve" || notok "README links resolve" "${dead[*]}"
# bench/reproduction.sh keeps what it does not generate: a hand-written section survives, and a
# registry paper's section with no results of record is kept and marked as such, once (run twice)
D=$(mktemp -d); mkdir -p "$D/bench" "$D/docs"
cp bench/reproduction.sh bench/status.py bench/verdict.py bench/record.py "$D/bench/"; cp -r bench/claims "$D/bench/"; cp docs/*.md "$D/docs/"; cp README.md "$D/"
printf '\n## A hand-written section\n\nkeep me\n' >> "$D/docs/REPRODUCTION.md"
npap=$(python3 bench/verdict.py --list-papers | wc -l)
(cd "$D" && PDL_RESULTS="$D/none" bash bench/reproduction.sh >/dev/null 2>&1); m1=$(grep -c '^_No results of record yet' "$D/docs/REPRODUCTION.md")
(cd "$D" && PDL_RESULTS="$D/none" bash bench/reproduction.sh >/dev/null 2>&1); m2=$(grep -c '^_No results of record yet' "$D/docs/REPRODUCTION.md")
if grep -q '^keep me$' "$D/docs/REPRODUCTION.md" && grep -q '^## Training core on a GPU' "$D/docs/REPRODUCTION.md" \
   && [ "$m1" = "$npap" ] && [ "$m2" = "$npap" ]; then
  ok "reproduction.sh keeps hand-written sections and marks each paper without a record once ($m1)"
else notok "reproduction.sh keeps sections" "marks $m1 then $m2 (papers $npap); kept $(grep -c 'keep me' "$D/docs/REPRODUCTION.md")"; fi
rm -rf "$D"
finish
