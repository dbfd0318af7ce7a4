# gossip-beyond.gp — beyond the paper: heterogeneous compute (gossip, warm-up, warm-up sharing
# compute times) and non-IID shards (IID, non-IID, non-IID with warm-up), at K = 8 and the large
# K. Reads resdir/gossip/curves-beyond.dat (blocks in the order of beyond.txt).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
names = system("sed -n 1p ".resdir."/gossip/beyond.txt"); groups = system("sed -n 2p ".resdir."/gossip/beyond.txt")
set xlabel "SIMULATED time (s)"; set ylabel "mean test accuracy"; set grid; set key bottom right font ",8"
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1400,900 font ",10"; set output outdir.'/gossip-beyond.png' }
  if (t eq "pdf") { set terminal pdfcairo size 10in,6.4in font ",8"; set output outdir.'/gossip-beyond.pdf' }
  set multiplot layout 2,2 title "Gossip beyond the paper: heterogeneous compute and non-IID shards (SIMULATED, case (b))"
  do for [g=0:words(groups)-1] {
    set title word(groups, g+1) noenhanced
    plot for [i=1:3] resdir.'/gossip/curves-beyond.dat' index (3*g+i-1) using 1:2 with linespoints lw 2 title word(names, 3*g+i)
  }
  unset multiplot
  set output
}
