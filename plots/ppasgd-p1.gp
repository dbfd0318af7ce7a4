# ppasgd-p1.gp — PP-ASGD paper Fig. 3 (right): prediction error ||w_{t+S0+1} - f_S(w_t)||_2 for
# S = 0..13 (0..S0+6 when the measured S0 is larger), mean of 100 measurements after one epoch; dashed line: plain ASGD (||w_{t+S0+1} - w_t||);
# circle: PP-ASGD at S = S0. (a) emulated S0 = 7, (b) real threaded run with measured S0.
# Reads resdir/ppasgd/p1{a,b}.dat, -asgd.dat, -point.dat (bench/ppasgd/summarize.py).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f(t, s) = resdir.'/ppasgd/'.t.s.'.dat'
have(t) = system('test -s '.f(t,'').' && grep -qv "^#" '.f(t,'').' && echo 1 || echo 0') + 0
set xlabel "S (staleness used in the prediction f_S)"
set ylabel "||w_{t+S_0+1} - f_S(w_t)||_2"
set grid
set key outside below horizontal
set offsets 0.5, 0.5, 0, 0
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1100,450 font ",10"; set output outdir.'/ppasgd-p1.png' }
  if (t eq "pdf") { set terminal pdfcairo size 8in,3.3in font ",8"; set output outdir.'/ppasgd-p1.pdf' }
  set multiplot layout 1,2 title "PP-ASGD paper Fig. 3 right (ours, Fashion-MNIST, PP-ASGD CIFAR net, real runs)"
  do for [tag in "p1a p1b"] {
    set title (tag eq "p1a" ? "(a) emulated staleness S_0 = 7" : "(b) threaded run, measured S_0")
    if (have(tag)) {
      plot f(tag,'') using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "f_S prediction", \
           f(tag,'-asgd') using 1:2 with lines dt 2 lw 2 lc rgb "black" title "ASGD (w_t)", \
           f(tag,'-point') using 1:2 with points pt 6 ps 3 lw 2 lc rgb "#d62728" title "PP-ASGD (S = S_0)"
    } else {
      set label 1 "no measurement in this run (see the table: probe skipped or not run)" at graph 0.5, 0.5 center
      set xrange [0:13]; set yrange [0:1]
      plot NaN notitle
      unset label 1; set autoscale xy
    }
  }
  unset multiplot
  set output
}
