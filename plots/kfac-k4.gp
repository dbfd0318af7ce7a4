# kfac-k4.gp — K4 (the paper's Fig. 1): a fixed number of epochs at total batch sizes 32..; test
# accuracy (left) and log10 test loss (right), mean over seeds with min-max bands, momentum SGD
# and K-FAC. Real runs on this machine. Reads resdir/kfac/kfac-k4.dat (index 0 msgd, 1 kfac).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
set grid; set logscale x 2; set xlabel "total batch size"
# Keys below the panels (off the curves); axes fit the data with a margin so the end points are whole.
set autoscale xfix; set autoscale yfix; set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,580 font ",10"; set output outdir.'/kfac-k4.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,4in font ",8"; set output outdir.'/kfac-k4.pdf' }
  set multiplot layout 1,2 title "K-FAC K4: fixed epochs, growing batch (vgg-small, Fashion-MNIST subset; real)"
  set title "accuracy"; set ylabel "test accuracy (%)"; set key below center horizontal samplen 3 height 1 reverse Left
  plot resdir.'/kfac/kfac-k4.dat' index 0 using 2:(100*$4):(100*$5) with filledcurves fs transparent solid 0.25 lc 1 notitle, \
       '' index 0 using 2:(100*$3) with linespoints lw 2 pt 7 lc 1 title "momentum SGD", \
       '' index 1 using 2:(100*$4):(100*$5) with filledcurves fs transparent solid 0.25 lc 2 notitle, \
       '' index 1 using 2:(100*$3) with linespoints lw 2 pt 5 lc 2 title "K-FAC"
  set title "loss"; set ylabel "log10 test loss"; set key below center horizontal samplen 3 height 1 reverse Left
  plot resdir.'/kfac/kfac-k4.dat' index 0 using 2:(log10($7)):(log10($8)) with filledcurves fs transparent solid 0.25 lc 1 notitle, \
       '' index 0 using 2:(log10($6)) with linespoints lw 2 pt 7 lc 1 title "momentum SGD", \
       '' index 1 using 2:(log10($7)):(log10($8)) with filledcurves fs transparent solid 0.25 lc 2 notitle, \
       '' index 1 using 2:(log10($6)) with linespoints lw 2 pt 5 lc 2 title "K-FAC"
  unset multiplot
  set output
}
