#!/usr/bin/env bash
# plots/render.sh — renders every plots/*.gp whose results exist. Scripts are called as
#   gnuplot -e "resdir='results'; outdir='plots/out'" plots/NAME.gp
# and write plots/out/NAME*.png (pngcairo) and .pdf (pdfcairo). They read the .dat files the
# bench drivers derive from results/*.jsonl and never re-run anything. A script without its data is
# skipped; one whose plot cannot be written (a read-only plots/out) makes the exit status 1.
set -u
cd "$(dirname "$0")/.."
mkdir -p plots/out
command -v gnuplot >/dev/null || { echo "gnuplot not found (make deps installs gnuplot-nox)" >&2; exit 1; }
rc=0
for gp in plots/*.gp; do
  [ -f "$gp" ] || continue
  if gnuplot -e "resdir='results'; outdir='plots/out'" "$gp" 2>/tmp/pdl-plot.err; then echo "rendered $gp"
  elif grep -q "cannot open file; output not changed" /tmp/pdl-plot.err; then   # a plot that cannot be written is an error
    echo "$gp: cannot write into plots/out: $(grep -m1 -o 'system error: .*' /tmp/pdl-plot.err)" >&2; rc=1
  else echo "skipped $gp: $(head -1 /tmp/pdl-plot.err)"; fi
done
exit $rc
