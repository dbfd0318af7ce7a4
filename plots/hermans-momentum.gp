# hermans-momentum.gp — Hermans H2 (Mitliagkas et al.): the momentum asynchrony induces, the slope of
# E[theta_t+1 - theta_t] on E[theta_t - theta_t-1] at the center, against 1 - 1/n.
# Reads resdir/hermans/h2-momentum.dat (n expected slope_net slope_quad min max).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/hermans/h2-momentum.dat'
set logscale x 2; set xlabel "workers n"; set ylabel "implicit momentum (regression slope)"; set grid
# The key sits below the plot (off the points); axes fit the data with a margin so the end points
# are whole, not cut by the border.
set autoscale xfix; set autoscale yfix; set offsets graph 0.04, graph 0.04, graph 0.08, graph 0.08
set key below center horizontal maxcols 2 samplen 3 height 1 reverse Left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,560 font ",10"; set output outdir.'/hermans-momentum.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.8in font ",8"; set output outdir.'/hermans-momentum.pdf' }
  set title "Hermans H2: implicit momentum of asynchronous DOWNPOUR (SIMULATED cluster; quadratic: host simulation)"
  plot f using 1:2 with lines lw 2 lc rgb "black" title "1 - 1/n (thesis, eq. 1.1)", \
       f using 1:4 with points pt 7 ps 1.5 lc rgb "#1f77b4" title "quadratic: ensemble fit over random worker orders", \
       f using 1:3 with linespoints pt 5 lw 2 lc rgb "#d62728" title "MLP: one run's lag-1 slope (not an estimate of mu)"
  set output
}
