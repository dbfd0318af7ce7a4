# kfac-k2.gp — K2 (the paper's Fig. 5): K-FAC weak-scaling speed-up against processes, SIMULATED on
# SimGrid with per-kind rates calibrated here (owners by layer, the paper's; by cost, ours; the
# NCCL-style allreduce scheme) and real on this 2-core machine; right: where the simulated time of
# an update goes (owners by layer). Keys sit below the panels, off the bars and curves. Reads resdir/kfac/kfac-k2.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
set grid
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,600 font ",10"; set output outdir.'/kfac-k2.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,4.2in font ",8"; set output outdir.'/kfac-k2.pdf' }
  set multiplot layout 1,2 title "K-FAC K2: speed-up vs processes (vgg-small, Fashion-MNIST; SIMULATED unless marked real)"
  set title "speed-up over 1 process (weak scaling)"; set xlabel "processes"; set ylabel "speed-up"
  set logscale xy 2; set autoscale xy; set autoscale xfix; set autoscale yfix; set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05; set key below center horizontal maxcols 3 samplen 2 height 1 reverse Left
  plot resdir.'/kfac/kfac-k2.dat' using 1:6 with lines lw 1 dt 2 lc rgb "gray40" title "linear", \
       '' using 1:2 with linespoints lw 2 pt 7 title "sim, owners by layer (paper)", \
       '' using 1:3 with linespoints lw 2 pt 5 title "sim, owners by cost (LPT, ours)", \
       '' using 1:4 with linespoints lw 1 pt 9 title "sim, allreduce both steps", \
       '' using 1:5 with linespoints lw 2 pt 13 title "real (2 cores)"
  unset logscale y; set logscale x 2
  set title "simulated time per update, owners by layer"; set ylabel "seconds"
  set offsets 0, 0, 0, 0; set autoscale xy; set yrange [0:*]; set key below center horizontal maxcols 3 samplen 2 height 1 reverse Left
  set style data histograms; set style histogram rowstacked; set style fill solid 0.8 border -1; set boxwidth 0.7
  unset logscale x; set xlabel "processes"
  plot resdir.'/kfac/kfac-k2.dat' using 9:xtic(1) title "forward/backward", '' using 10 title "factors", \
       '' using 11 title "reduce+scatterv", '' using 12 title "inversions (slowest owner)", '' using 13 title "allgather (+ waiting)"
  unset multiplot
  set output
}
