# hermans-throughput.gp — the parameter server's commits/s against workers on the REAL runtime (MPI
# ranks on this machine's cores): the tiny net and the thesis' MLP. Reads throughput-*.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
files = system("ls ".resdir."/hermans/throughput-*.dat 2>/dev/null")
set logscale xy 2; set logscale y2 2; set xlabel "workers n"; set ylabel "commits / s (server)"; set y2label "MB / s through the server (dashed)"
# The key sits below the plot (a corner key crossed the curves); each axis fits its data with a
# margin, so the end points are whole.
set ytics nomirror; set y2tics; set grid; set key below center horizontal maxcols 2 samplen 3 height 1 reverse Left
set autoscale xfix; set autoscale yfix; set offsets graph 0.04, graph 0.04, graph 0.08, graph 0.08
mb = strlen(files) == 0 ? "" : system("cat ".files." 2>/dev/null | awk '!/^#/ && NF >= 3 && $3 > 0 {if (!n++ || $3 < lo) lo = $3; if ($3 > hi) hi = $3} END {if (n) print lo, hi}'")
if (words(mb) == 2) { set y2range [word(mb, 1) / 1.25:word(mb, 2) * 1.25] }   # offsets act on y only
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,580 font ",10"; set output outdir.'/hermans-throughput.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.9in font ",8"; set output outdir.'/hermans-throughput.pdf' }
  set title "Parameter-server throughput, AGN lambda = 1 (REAL: MPI ranks on 2 cores, oversubscribed past 1 worker)"
  plot for [i=1:words(files)] word(files, i) using 1:2 with linespoints lw 2 pt 7 lc i title system("basename ".word(files, i)." .dat | sed 's/throughput-//'")." commits/s", \
       for [i=1:words(files)] word(files, i) using 1:3 axes x1y2 with linespoints lw 1 dt 2 pt 6 lc i title system("basename ".word(files, i)." .dat | sed 's/throughput-//'")." MB/s"
  set output
}
