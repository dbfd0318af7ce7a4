# ppasgd-p4.gp — PP-ASGD paper Fig. 4 (b): speed to a target test error relative to SSGD on one
# device, vs devices (log-log), with the ideal line; SIMULATED cluster time (SimGrid), real numerics.
# Reads resdir/ppasgd/p4-speedup.dat ("devices speedup_ssgd speedup_ppasgd ideal").
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/ppasgd/p4-speedup.dat'
set logscale xy 2
set xlabel "devices (simulated)"
set ylabel "relative speed to target error"
set grid
set key left top opaque box
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 800,550 font ",10"; set output outdir.'/ppasgd-p4.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,4.1in font ",8"; set output outdir.'/ppasgd-p4.pdf' }
  set title "PP-ASGD paper Fig. 4b (ours: Fashion-MNIST subset, SIMULATED cluster, real numerics)"
  plot f using 1:4 with lines dt 2 lw 2 lc rgb "black" title "ideal", \
       f using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "SSGD", \
       f using 1:3 with linespoints lw 2 pt 5 lc rgb "#d62728" title "PP-ASGD"
  set output
}
