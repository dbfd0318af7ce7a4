# ppasgd-p3.gp — PP-ASGD paper Fig. 3 left: test error vs (SIMULATED) time of ASGD and PP-ASGD on
# 32 simulated devices (SimGrid, 4 nodes x 8; numerics real). Reads resdir/ppasgd/p3-*.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f(n) = resdir.'/ppasgd/'.n.'.dat'
set xlabel "simulated time (s)"
set ylabel "test error rate"
# The key sits below the plot (the curves start high, where a corner key would cover them); x fits
# the data with a margin so the last point is whole; y is the error rate's whole range.
set yrange [0:1.02]; set ytics 0, 0.2, 1
set autoscale xfix; set offsets graph 0.02, graph 0.02, 0, 0
set grid
set key below center horizontal samplen 3 height 1 reverse Left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 800,560 font ",10"; set output outdir.'/ppasgd-p3.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,4.2in font ",8"; set output outdir.'/ppasgd-p3.pdf' }
  set title "PP-ASGD paper Fig. 3 left (ours: Fashion-MNIST subset, 32 SIMULATED devices, real numerics)"
  plot f('p3-asgd-dist') using 1:2 with linespoints lw 2 lc rgb "#1f77b4" title "ASGD", \
       f('p3-ppasgd') using 1:2 with linespoints lw 2 lc rgb "#d62728" title "PP-ASGD"
  set output
}
