# hermans-curves.gp — Hermans H3: test accuracy against simulated time for DOWNPOUR (n = 10, 20,
# larger lambda), AGN vs asynchronous EASGD (n = 20, lambda = 20) and AGN / ADAG / DynSGD at n = 30.
# Reads resdir/hermans/curve-*.dat (time_s test_acc epoch) listed in curves.txt.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
names = system("cat ".resdir."/hermans/curves.txt")
set xlabel "SIMULATED time (s)"; set ylabel "test accuracy"; set grid; set yrange [0:1]; set key outside right
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1200,550 font ",10"; set output outdir.'/hermans-curves.png' }
  if (t eq "pdf") { set terminal pdfcairo size 8in,3.6in font ",8"; set output outdir.'/hermans-curves.pdf' }
  set title "Hermans H3: accuracy vs time, DOWNPOUR / AGN / ADAG / DynSGD / AEASGD (SIMULATED cluster, Fashion-MNIST)"
  plot for [i=1:words(names)] resdir.'/hermans/curve-'.word(names, i).'.dat' using 1:2 with linespoints lw 2 title word(names, i)
  set output
}
