# easgd-e3.gp — EASGD paper Fig. 3 (SIMULATED wall-clock): training loss, test loss and test error
# of the center variable vs simulated time for p = 4, 8, 16 workers (one row each; MSGD, p = 1,
# in every row), every method at its best (tau, eta) of E2 (p = 4; the key says which). The
# dotted line on the test-error panels is the E3 speed-up target (the lowest test error both MSGD
# and EAMSGD at the largest p reach, rounded up to 0.5%). Runs that diverged end with a cross.
# Reads resdir/easgd/e3-<method>-p<p>.dat (+ -div.dat), e3-msgd.dat, e3-target.dat and
# e23-meta.txt (line 1 title note, line 3 the p values, line 5 the time window), written by
# bench/easgd/run.sh (bench/easgd/e23.py).
# Run: gnuplot -e "resdir='results'; outdir='plots/out'" plots/easgd-e3.gp
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
meta = resdir.'/easgd/e23-meta.txt'
note = system("sed -n 1p ".meta)
ps = system("sed -n 3p ".meta)
tmax = real(system("sed -n 5p ".meta))
target = real(system("sed -n 2p ".resdir."/easgd/e3-target.dat"))
np = words(ps)
f(m, p) = resdir.'/easgd/e3-'.m.'-p'.p.'.dat'
fd(m, p) = resdir.'/easgd/e3-'.m.'-p'.p.'-div.dat'
fm = resdir.'/easgd/e3-msgd.dat'
methods = "easgd eamsgd downpour mdownpour adownpour mvadownpour"
col(i) = word("#1f77b4 #d62728 #2ca02c #9467bd #8c564b #e377c2", i)
ylab(c) = c == 2 ? "training loss (nll)" : c == 3 ? "test loss (nll)" : "test error (%)"
ytop(c) = c == 4 ? 60 : 2.5
set grid
set xrange [0:tmax]
set datafile missing "NaN"
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1500,330*np+60 font ",10"; set output outdir.'/easgd-e3.png' }
  if (t eq "pdf") { set terminal pdfcairo size 15in,(3.3*np+0.6)*1in font ",8"; set output outdir.'/easgd-e3.pdf' }
  set multiplot layout np,3 title "EASGD paper Fig. 3 (SIMULATED time): center variable vs p (MSGD: p = 1)\n".note
  do for [i = 1:np] {
    p = word(ps, i)
    do for [c = 2:4] {
      set yrange [0:ytop(c)]
      set xlabel "simulated wall-clock time (s)"
      set ylabel ylab(c)
      set title "p = ".p
      if (c == 4) { set key bottom left Left reverse font ",7" opaque box } else { unset key }
      plot fm using 1:c with lines lw 2 lc rgb "black" dt 2 title columnheader(4), \
           for [k = 1:words(methods)] f(word(methods, k), p) using 1:c with linespoints pt 7 ps 0.4 lw 1.5 lc rgb col(k) title columnheader(4), \
           for [k = 1:words(methods)] fd(word(methods, k), p) using 1:(ytop(c) * 0.97) with points pt 2 ps 2 lw 2 lc rgb col(k) notitle, \
           (c == 4 ? target : 1/0) with lines dt 3 lw 1.5 lc rgb "gray40" title (c == 4 ? sprintf("target %.1f%%", target) : "")
    }
  }
  unset multiplot
  set output
}
