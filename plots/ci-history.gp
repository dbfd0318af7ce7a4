# plots/ci-history.gp — trends of the CI regression gate (ci/regress.sh): every full gate run is a
# point, every metric a curve, drawn as figure / its baseline so all curves sit at 1 while nothing
# moves. Top: throughput ratios (to the in-run sgemm / memcpy references, noisy by nature); bottom:
# accuracy and simulated figures of the deterministic runs (flat unless the numerics changed).
# Reads resdir/ci/history-throughput.dat and history-accuracy.dat, which ci/regress.py derives
# from resdir/ci/history.jsonl after each run (columns: run date commit metric...; '?' = not
# measured in that run). Writes outdir/ci-history.png and .pdf.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
thr = resdir.'/ci/history-throughput.dat'
acc = resdir.'/ci/history-accuracy.dat'
if (system('test -s '.thr.' && test -s '.acc.' && echo y') ne "y") { print 'ci-history: no history (run make regress)'; exit }
ncol(f) = int(system('head -1 '.f.' | wc -w'))
nrun(f) = int(system('tail -n +2 '.f.' | wc -l'))
nt = ncol(thr); na = ncol(acc); nr = nrun(thr)
host = system('hostname')
set datafile missing '?'
do for [term in "png pdf"] {
  if (term eq 'png') { set terminal pngcairo size 1000,1100 font ',10' } else { set terminal pdfcairo size 7in,7.7in font ',7' }
  set output outdir.'/ci-history.'.term
  set multiplot layout 2,1 title sprintf("CI regression gate history (%s, %d runs, x = run labelled by commit; Fashion-MNIST, tiny / ppasgd-cifar nets): figure / baseline", host, nr)
  set grid ytics
  set key below font ',8' noenhanced maxrows 6
  unset xlabel
  set xrange [0.5:(nr < 2 ? 1.5 : nr + 0.5)]
  set xtics rotate by 45 right font ',8'
  set title 'throughput (ratios to sgemm / memcpy measured in the same run; median of repeats)'
  set ylabel 'now / baseline'
  set yrange [*<0.5:1.5<*]
  plot 1 with lines lc rgb 'gray40' dt 2 notitle, \
       for [i=4:nt] thr using 1:i:xtic(3) with linespoints pt 7 ps 0.7 title columnheader(i)
  set title 'accuracy, correctness counts and simulated time (deterministic runs)'
  set yrange [*<0.95:1.05<*]
  plot 1 with lines lc rgb 'gray40' dt 2 notitle, \
       for [i=4:na] acc using 1:i:xtic(3) with linespoints pt 7 ps 0.7 title columnheader(i)
  unset multiplot
  unset output
}
