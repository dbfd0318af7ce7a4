# gossip-curves.gp — G1 (Fig. 1b) and G2 (Fig. 3b): mean test accuracy over the nodes against
# simulated time, for each number of wide nodes, at T = 1 and T = 4 (case (b)).
# Reads resdir/gossip/curves-T1.dat, curves-T4.dat (one block per run) and wides.txt.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
w1 = system("sed -n 1p ".resdir."/gossip/wides.txt"); w4 = system("sed -n 2p ".resdir."/gossip/wides.txt")
set xlabel "SIMULATED time (s)"; set ylabel "mean test accuracy over the nodes"; set grid; set key bottom right
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,520 font ",10"; set output outdir.'/gossip-curves.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,3.6in font ",8"; set output outdir.'/gossip-curves.pdf' }
  set multiplot layout 1,2 title "Gossip G1/G2: learning curves by the number of wide nodes (SIMULATED, case (b))"
  set title "T = 1 (G1)"
  plot for [i=1:words(w1)] resdir.'/gossip/curves-T1.dat' index (i-1) using 1:2 with linespoints lw 2 title word(w1, i)." wide"
  set title "T = 4 (G2)"
  plot for [i=1:words(w4)] resdir.'/gossip/curves-T4.dat' index (i-1) using 1:2 with linespoints lw 2 title word(w4, i)." wide"
  unset multiplot
  set output
}
