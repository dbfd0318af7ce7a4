# kfac-k3.gp — K3 (the paper's Fig. 6): one process, K-FAC vs Adam vs momentum SGD, each at its pick
# from the grid (issue 33), and K-FAC's variants (sampled Fisher; Algorithm 1), dashed: test accuracy
# by epoch (left) and by wall-clock second (right), real runs on this machine, seed 1. Reads
# resdir/kfac/kfac-k3-{kfac,adam,msgd,kfac-sampled,kfac-alg1}.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
# Keys below the panels (off the curves); axes fit the data with a margin so the end points are whole.
set grid; set key below center horizontal samplen 3 height 1 reverse Left; set ylabel "test accuracy (%)"
set autoscale xfix; set autoscale yfix; set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,580 font ",10"; set output outdir.'/kfac-k3.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,4in font ",8"; set output outdir.'/kfac-k3.pdf' }
  set multiplot layout 1,2 title "K-FAC K3: one process, each optimizer at its pick from the grid, seed 1 (vgg-small, Fashion-MNIST subset; real)"
  set title "by epoch"; set xlabel "epoch"
  plot for [o in "kfac adam msgd"] resdir.'/kfac/kfac-k3-'.o.'.dat' using 1:(100*$3) with linespoints lw 2 title o, \
       for [o in "kfac-sampled kfac-alg1"] resdir.'/kfac/kfac-k3-'.o.'.dat' using 1:(100*$3) with linespoints lw 1 dt 2 title o
  set title "by time"; set xlabel "seconds"
  plot for [o in "kfac adam msgd"] resdir.'/kfac/kfac-k3-'.o.'.dat' using 2:(100*$3) with linespoints lw 2 title o, \
       for [o in "kfac-sampled kfac-alg1"] resdir.'/kfac/kfac-k3-'.o.'.dat' using 2:(100*$3) with linespoints lw 1 dt 2 title o
  unset multiplot
  set output
}
