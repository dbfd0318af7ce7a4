# easgd-e2.gp — EASGD paper Fig. 2 (SIMULATED wall-clock): training loss, test loss and test error
# of the center variable vs simulated time, p = 4 workers, one row per communication period tau,
# every method at its picked learning rate (MSGD, p = 1, in every row). Runs that diverged end
# with a cross at the top of each panel and say "diverged at step N" in the key.
# Reads resdir/easgd/e2-<method>-tau<tau>.dat ("time_s train_loss test_loss test_err%", header =
# series title), e2-<method>-tau<tau>-div.dat (divergence marker, may be empty), e2-msgd.dat and
# e23-meta.txt (line 1 title note, line 2 taus, line 4 the parallel runs' time window), written by
# bench/easgd/run.sh (bench/easgd/e23.py).
# Run: gnuplot -e "resdir='results'; outdir='plots/out'" plots/easgd-e2.gp
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
meta = resdir.'/easgd/e23-meta.txt'
note = system("sed -n 1p ".meta)
taus = system("sed -n 2p ".meta)
tmax = real(system("sed -n 4p ".meta))
nt = words(taus)
f(m, t) = resdir.'/easgd/e2-'.m.'-tau'.t.'.dat'
fd(m, t) = resdir.'/easgd/e2-'.m.'-tau'.t.'-div.dat'
fm = resdir.'/easgd/e2-msgd.dat'
methods = "easgd eamsgd downpour mdownpour adownpour mvadownpour"
col(i) = word("#1f77b4 #d62728 #2ca02c #9467bd #8c564b #e377c2", i)
ylab(c) = c == 2 ? "training loss (nll)" : c == 3 ? "test loss (nll)" : "test error (%)"
ytop(c) = c == 4 ? 60 : 2.5
set grid
set xrange [0:tmax]
set datafile missing "NaN"
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1500,330*nt+60 font ",10"; set output outdir.'/easgd-e2.png' }
  if (t eq "pdf") { set terminal pdfcairo size 15in,(3.3*nt+0.6)*1in font ",8"; set output outdir.'/easgd-e2.pdf' }
  set multiplot layout nt,3 title "EASGD paper Fig. 2 (SIMULATED time): center variable, p = 4 workers, tau = ".taus."\n".note
  do for [i = 1:nt] {
    tau = word(taus, i)
    do for [c = 2:4] {
      set yrange [0:ytop(c)]
      set xlabel "simulated wall-clock time (s)"
      set ylabel ylab(c)
      set title "tau = ".tau
      if (c == 4) { set key bottom left Left reverse font ",7" opaque box } else { unset key }
      plot fm using 1:c with lines lw 2 lc rgb "black" dt 2 title columnheader(4), \
           for [k = 1:words(methods)] f(word(methods, k), tau) using 1:c with linespoints pt 7 ps 0.4 lw 1.5 lc rgb col(k) title columnheader(4), \
           for [k = 1:words(methods)] fd(word(methods, k), tau) using 1:(ytop(c) * 0.97) with points pt 2 ps 2 lw 2 lc rgb col(k) notitle
    }
  }
  unset multiplot
  set output
}
