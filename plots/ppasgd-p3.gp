# ppasgd-p3.gp — PP-ASGD paper Fig. 3 left: test error vs (SIMULATED) time of ASGD and PP-ASGD on
# 32 simulated devices (SimGrid, 4 nodes x 8; numerics real). Reads resdir/ppasgd/p3-*.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f(n) = resdir.'/ppasgd/'.n.'.dat'
set xlabel "simulated time (s)"
set ylabel "test error rate"
set yrange [0:1]
set grid
set key right top opaque box
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 800,500 font ",10"; set output outdir.'/ppasgd-p3.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.8in font ",8"; set output outdir.'/ppasgd-p3.pdf' }
  set title "PP-ASGD paper Fig. 3 left (ours: Fashion-MNIST subset, 32 SIMULATED devices, real numerics)"
  plot f('p3-asgd-dist') using 1:2 with linespoints lw 2 lc rgb "#1f77b4" title "ASGD", \
       f('p3-ppasgd') using 1:2 with linespoints lw 2 lc rgb "#d62728" title "PP-ASGD"
  set output
}
