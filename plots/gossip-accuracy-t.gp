# gossip-accuracy-t.gp — G3: final mean test accuracy by the communication period T (all narrow,
# Table 3) and by batch size (Table 2), ours beside the paper's (their data sets differ: the
# paper's CIFAR-10 / VGG16, ours as labelled). Reads resdir/gossip/accuracy-t.dat and batch.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
# Keys below the panels (off the points); axes fit the data with a margin so the end points are whole.
set grid; set key below center horizontal maxcols 2 samplen 3 height 1 reverse Left; set ylabel "final mean test accuracy (%)"
set autoscale xfix; set autoscale yfix; set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,580 font ",10"; set output outdir.'/gossip-accuracy-t.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,4in font ",8"; set output outdir.'/gossip-accuracy-t.pdf' }
  set multiplot layout 1,2 title "Gossip G3: accuracy by T and by batch size (ours SIMULATED case (b); paper CIFAR-10/VGG16)"
  set title "by T, all narrow (Table 3)"; set xlabel "communication period T"; set logscale x 2
  plot resdir.'/gossip/accuracy-t.dat' using 1:2 with linespoints lw 2 pt 7 title "ours", \
       '' using 1:3 with linespoints lw 2 pt 5 dt 2 title "paper"
  set title "by batch size, T = 1 (Table 2)"; set xlabel "batch size"
  plot resdir.'/gossip/batch.dat' using 1:2 with linespoints lw 2 pt 7 title "ours, 0 wide", '' using 1:3 with linespoints lw 2 pt 9 title "ours, 8 wide", \
       '' using 1:4 with linespoints lw 2 pt 5 dt 2 title "paper, 0 wide", '' using 1:5 with linespoints lw 2 pt 11 dt 2 title "paper, 8 wide"
  unset multiplot
  set output
}
