# hermans-staleness.gp — Hermans H1: the staleness of every commit (server updates between a
# worker's pull and its commit), homogeneous workers. Reads resdir/hermans/h1-staleness.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/hermans/h1-staleness.dat'

fh = resdir.'/hermans/h1-staleness-het.dat'
hdr = system("head -1 ".f." | sed 's/.*n = //'")
# x spans every bin of both files with a quarter bin of margin beyond the outer bins (histeps draws bin k over
# [k - 0.5, k + 0.5], so the last bin would sit on the right edge under autoscale); the key sits
# below the plot, off the bars.
xmax = system("cat ".f." ".fh." 2>/dev/null | awk '!/^#/ && NF {if ($1 + 0 > m) m = $1 + 0} END {print m + 0}'") + 0
set xlabel "staleness (server updates between pull and commit)"; set ylabel "fraction of commits"; set grid
set key below center horizontal maxcols 2 samplen 3 height 1 reverse Left; set xrange [-0.75:xmax + 0.75]; set yrange [0:*]
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,560 font ",10"; set output outdir.'/hermans-staleness.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.8in font ",8"; set output outdir.'/hermans-staleness.pdf' }
  set title "Hermans H1: staleness of AGN commits, n homogeneous workers (SIMULATED cluster, Fashion-MNIST)"
  plot for [i=1:words(hdr)] f using 1:(column(i+1)) with histeps lw 2 title sprintf("n = %s (n-1 = %d)", word(hdr, i), word(hdr, i) - 1), \
       fh using 1:2 with histeps lw 2 dt 2 lc rgb "black" title sprintf("n = %s, half the workers at 1/4 rate", word(hdr, 1))
  set output
}
