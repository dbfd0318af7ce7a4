# hermans-efficiency.gp — Hermans H3: temporal efficiency of AGN over asynchronous EASGD (ratio of
# the areas under the accuracy-vs-time curves up to the shorter run; > 1: AGN ahead) over (n, lambda).
# Reads resdir/hermans/h3b-efficiency.dat (n lambda ratio).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/hermans/h3b-efficiency.dat'
set xlabel "workers n"; set ylabel "communication window lambda"; set cblabel "AGN / AEASGD temporal efficiency"
set palette defined (0 "#d62728", 1 "white", 2 "#1f77b4"); set cbrange [0:2]; set key off
set offsets 5, 5, 5, 5
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 800,600 font ",10"; set output outdir.'/hermans-efficiency.png' }
  if (t eq "pdf") { set terminal pdfcairo size 5.5in,4in font ",8"; set output outdir.'/hermans-efficiency.pdf' }
  set title "Hermans H3: AGN vs AEASGD, temporal efficiency (SIMULATED cluster, Fashion-MNIST)"
  plot f using 1:2:3 with points pt 5 ps 6 palette, f using 1:2:(sprintf("%.2f", $3)) with labels
  set output
}
