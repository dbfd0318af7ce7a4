# kfac-inverse.gp — the SPD inversions K-FAC uses: seconds per inversion against the order n, the
# LAPACKE double reference (dpotrf + dpotri) and our fast float path on 1 and on all threads,
# median of repeats in one run on this machine. Reads resdir/kfac/kfac-inverse.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
set grid; set logscale xy; set xlabel "order n"; set ylabel "seconds per inversion"; set key top left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 700,520 font ",10"; set output outdir.'/kfac-inverse.png' }
  if (t eq "pdf") { set terminal pdfcairo size 5in,3.6in font ",8"; set output outdir.'/kfac-inverse.pdf' }
  set title "SPD inversion: LAPACKE double vs fast float (real, this machine)"
  plot resdir.'/kfac/kfac-inverse.dat' using 1:2 with linespoints lw 2 pt 7 title "LAPACKE dpotrf+dpotri (double)", \
       '' using 1:3 with linespoints lw 2 pt 5 title "fast float, 1 thread", \
       '' using 1:4 with linespoints lw 2 pt 9 title "fast float, all threads"
  set output
}
