# hermans-efficiency.gp — Hermans H3: temporal efficiency of AGN over asynchronous EASGD (ratio of
# the areas under the center's training-accuracy-vs-time curves up to the shorter run; > 1: AGN ahead)
# over (n, lambda), ours (mean over the seeds) and, below it in brackets, the thesis' own figure for
# the cell where its table has one. Reads resdir/hermans/h3b-efficiency.dat (n lambda ratio thesis; thesis 0:
# not in its table). The grid is drawn as categories: one
# cell per measured n (x) and lambda (y), tics at the values measured, so the axes span exactly the
# grid (no negative workers or windows) whatever its size (QUICK 2 x 2, full 4 x 4, the thesis' 7 x 7).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/hermans/h3b-efficiency.dat'
ns = system("awk '!/^#/ && NF >= 3 {print $1 + 0}' ".f." | sort -g | uniq | tr '\\n' ' '")
ls = system("awk '!/^#/ && NF >= 3 {print $2 + 0}' ".f." | sort -g | uniq | tr '\\n' ' '")
if (words(ns) == 0 || words(ls) == 0) { print "no (n, lambda) cells in ".f; exit status 1 }
# position of value v in a list of distinct numbers (1-based; 0 when absent)
idx(v, list) = sum [i=1:words(list)] (abs(word(list, i) + 0 - v) < 1e-9 ? i : 0)
set xrange [0.5:words(ns) + 0.5]; set yrange [0.5:words(ls) + 0.5]
set xtics (); do for [i=1:words(ns)] { set xtics add (word(ns, i) i) }
set ytics (); do for [i=1:words(ls)] { set ytics add (word(ls, i) i) }
set xtics scale 0; set ytics scale 0; set mxtics 1; set mytics 1
set xlabel "workers n"; set ylabel "communication window lambda"; set cblabel "AGN / AEASGD temporal efficiency"
set palette defined (0 "#d62728", 1 "white", 2 "#1f77b4"); set cbrange [0.8:1.2]; set key off   # the thesis' ratios: 0.88-1.045
set style fill solid 1.0 border rgb "gray60"
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 800,600 font ",10"; set output outdir.'/hermans-efficiency.png' }
  if (t eq "pdf") { set terminal pdfcairo size 5.5in,4in font ",8"; set output outdir.'/hermans-efficiency.pdf' }
  set title "Hermans H3: AGN vs AEASGD (Adam workers), temporal efficiency on training accuracy\n(SIMULATED cluster, Fashion-MNIST; the thesis' figure in brackets)"
  plot f using (idx($1, ns)):(idx($2, ls)):(0.5):(0.5):3 with boxxyerror fc palette, \
       f using (idx($1, ns)):(idx($2, ls)):($4 > 0 ? sprintf("%.3f\n(thesis %.3f)", $3, $4) : sprintf("%.3f", $3)) with labels
  set output
}
