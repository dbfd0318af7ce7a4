# kfac-k2-paper.gp — issue 33 item 2. Left: K2 SIMULATED at the paper's compute-to-communication
# ratio (TSUBAME3.0's P100 against its 100 Gb/s Omni-Path per GPU; links derived in bench/kfac/run.sh):
# K-FAC with Allreduce for both steps (the paper's implementation) and with reduce-scatterv, and
# data-parallel SGD (--algo ssgd) on the same platform, beside the K2 sim (56 Gb/s). Right: the
# 2-rank step phase by phase, real (1 thread per rank) against the sim of this machine (machine:,
# calibrated per phase) and K2's cluster sim. Reads resdir/kfac/kfac-k2-paper.dat, kfac-k2.dat and
# kfac-k2-phases.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
set grid
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,600 font ",10"; set output outdir.'/kfac-k2-paper.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,4.2in font ",8"; set output outdir.'/kfac-k2-paper.pdf' }
  set multiplot layout 1,2 title "K-FAC K2 at the paper's compute-to-communication ratio, and the real 2-rank step per phase (vgg-small, Fashion-MNIST)"
  set title "speed-up over 1 device (weak scaling), SIMULATED"; set xlabel "devices"; set ylabel "speed-up"
  set logscale xy 2; set autoscale xy; set autoscale xfix; set autoscale yfix; set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05
  set key below center horizontal maxcols 3 samplen 2 height 1 reverse Left
  plot resdir.'/kfac/kfac-k2-paper.dat' using 1:5 with lines lw 1 dt 2 lc rgb "gray40" title "linear", \
       '' using 1:2 with linespoints lw 2 pt 7 title "K-FAC, paper's ratio, Allreduce both steps", \
       '' using 1:3 with linespoints lw 1 pt 5 title "K-FAC, paper's ratio, reduce-scatterv", \
       '' using 1:4 with linespoints lw 2 pt 9 title "data-parallel SGD, paper's ratio", \
       resdir.'/kfac/kfac-k2.dat' using 1:2 with linespoints lw 1 dt 3 pt 6 lc rgb "gray30" title "K-FAC, K2 sim (56 Gb/s)"
  unset logscale xy; set offsets 0, 0, 0, 0
  set title "2 ranks: ms per update by phase (node 0)"; set ylabel "ms per update"; set xlabel ""
  set autoscale xy; set yrange [0:*]; set xtics rotate by -30
  set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1; set boxwidth 0.9
  set key below center horizontal maxcols 3 samplen 2 height 1 reverse Left
  plot resdir.'/kfac/kfac-k2-phases.dat' every ::0::8 using 4:xtic(1) title "real, 2 ranks", \
       '' every ::0::8 using 5 title "sim of this machine", '' every ::0::8 using 6 title "K2 cluster sim (56 Gb/s)"
  unset multiplot
  set output
}
