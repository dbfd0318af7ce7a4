# hermans-throughput.gp — the parameter server's commits/s against workers on the REAL runtime (MPI
# ranks on this machine's cores): the tiny net and the thesis' MLP. Reads throughput-*.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
files = system("ls ".resdir."/hermans/throughput-*.dat 2>/dev/null")
set logscale xy 2; set logscale y2 2; set xlabel "workers n"; set ylabel "commits / s (server)"; set y2label "MB / s through the server (dashed)"
set ytics nomirror; set y2tics; set grid; set key bottom left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,500 font ",10"; set output outdir.'/hermans-throughput.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.4in font ",8"; set output outdir.'/hermans-throughput.pdf' }
  set title "Parameter-server throughput, AGN lambda = 1 (REAL: MPI ranks on 2 cores, oversubscribed past 1 worker)"
  plot for [i=1:words(files)] word(files, i) using 1:2 with linespoints lw 2 pt 7 lc i title system("basename ".word(files, i)." .dat | sed 's/throughput-//'")." commits/s", \
       for [i=1:words(files)] word(files, i) using 1:3 axes x1y2 with linespoints lw 1 dt 2 pt 6 lc i title system("basename ".word(files, i)." .dat | sed 's/throughput-//'")." MB/s"
  set output
}
