# hermans-staleness.gp — Hermans H1: the staleness of every commit (server updates between a
# worker's pull and its commit), homogeneous workers. Reads resdir/hermans/h1-staleness.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/hermans/h1-staleness.dat'

hdr = system("head -1 ".f." | sed 's/.*n = //'")
set xlabel "staleness (server updates between pull and commit)"; set ylabel "fraction of commits"; set grid
set key top left; set xrange [-0.5:*]
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,500 font ",10"; set output outdir.'/hermans-staleness.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.4in font ",8"; set output outdir.'/hermans-staleness.pdf' }
  set title "Hermans H1: staleness of AGN commits, n homogeneous workers (SIMULATED cluster, Fashion-MNIST)"
  fh = resdir.'/hermans/h1-staleness-het.dat'
  plot for [i=1:words(hdr)] f using 1:(column(i+1)) with histeps lw 2 title sprintf("n = %s (n-1 = %d)", word(hdr, i), word(hdr, i) - 1), \
       fh using 1:2 with histeps lw 2 dt 2 lc rgb "black" title sprintf("n = %s, half the workers at 1/4 rate", word(hdr, 1))
  set output
}
