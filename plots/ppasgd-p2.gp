# ppasgd-p2.gp — PP-ASGD paper Fig. 2: test error vs epoch (log x) of SSGD, ASGD and PP-ASGD under
# emulated staleness S = 3, 9, 27 (one process). Reads resdir/ppasgd/p2-*.dat ("epoch test_err updates").
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f(n) = resdir.'/ppasgd/'.n.'.dat'
set logscale x 2
set xtics 2; set format x "%g"
set xlabel "epoch (log scale)"
set ylabel "test error rate"
# The key sits below the plot (the curves start high, where a corner key would cover them); x fits
# the data with a margin so the last point is whole; y is the error rate's whole range.
set yrange [0:1.02]; set ytics 0, 0.2, 1
set autoscale xfix; set offsets graph 0.02, graph 0.02, 0, 0
set grid
set key below center horizontal samplen 3 height 1 reverse Left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1400,510 font ",10"; set output outdir.'/ppasgd-p2.png' }
  if (t eq "pdf") { set terminal pdfcairo size 10in,3.7in font ",8"; set output outdir.'/ppasgd-p2.pdf' }
  set multiplot layout 1,3 title "PP-ASGD paper Fig. 2 (ours: Fashion-MNIST subset, PP-ASGD CIFAR net, emulated staleness, real runs)"
  do for [S in "3 9 27"] {
    set title "(S = ".S.")"
    plot f('p2-ssgd') using 1:2 with lines lw 2 lc rgb "black" title "SSGD", \
         f('p2-asgd-dist-S'.S) using 1:2 with lines lw 2 lc rgb "#1f77b4" title "ASGD", \
         f('p2-ppasgd-S'.S) using 1:2 with lines lw 2 lc rgb "#d62728" title "PP-ASGD"
  }
  unset multiplot
  set output
}
