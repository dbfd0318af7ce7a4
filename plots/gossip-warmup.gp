# gossip-warmup.gp — G4 (Figs. 5-7): warm-up (Alg. 2) vs normal pull gossip at T = 4 for each
# number of wide nodes: mean test accuracy against simulated time. Reads resdir/gossip/curves-G4.dat
# (blocks: normal, warm-up for each wide count in g4.txt).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
ws = system("cat ".resdir."/gossip/g4.txt")
set xlabel "SIMULATED time (s)"; set ylabel "mean test accuracy"; set grid; set key bottom right
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1400,480 font ",10"; set output outdir.'/gossip-warmup.png' }
  if (t eq "pdf") { set terminal pdfcairo size 10in,3.4in font ",8"; set output outdir.'/gossip-warmup.pdf' }
  set multiplot layout 1,words(ws) title "Gossip G4: warm-up vs normal (SIMULATED, case (b), T = 4)"
  do for [i=1:words(ws)] {
    set title word(ws, i)." wide nodes"
    plot resdir.'/gossip/curves-G4.dat' index (2*i-2) using 1:2 with linespoints lw 2 title "normal", \
         resdir.'/gossip/curves-G4.dat' index (2*i-1) using 1:2 with linespoints lw 2 title "warm-up"
  }
  unset multiplot
  set output
}
