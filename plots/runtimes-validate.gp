# plots/runtimes-validate.gp — issue 3's sim validation: SSGD time per update on this machine
# measured with R = 1, 2, 4 real MPI ranks (median, min-max bar over repetitions) beside the sim
# runtime's prediction for machine:ranks=R (calibrated core rate X0, memory bandwidth, other
# users' load L) and the prediction of the idle model (calibrated X, no load). Reads
# resdir/runtimes/validate.dat written by bench/runtimes/validate.sh (columns: R measured_s
# simulated_s idle_model_s error error_idle min_measured max_measured). Writes
# outdir/runtimes-validate.png and .pdf.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/runtimes/validate.dat'
host = system('hostname')
do for [term in "png pdf"] {
  if (term eq 'png') { set terminal pngcairo size 960,640 font ',11' } else { set terminal pdfcairo size 6.4in,4.3in font ',9' }
  set output outdir.'/runtimes-validate.'.term
  set title sprintf("Sim runtime validation (issue 3): SSGD time per update, real vs simulated\n(%s, 2 shared cores; ppasgd-cifar net on Fashion-MNIST, batch 16 per rank)", host)
  set xlabel 'MPI ranks R (real) = nodes of machine:ranks=R (simulated)'
  set ylabel 'seconds per update'
  set logscale x 2
  set xrange [0.8:5]
  set xtics ('1' 1, '2' 2, '4' 4)
  set yrange [0:*]
  set offsets 0, 0, graph 0.1, 0
  set grid ytics
  set key top left
  plot f using 1:2:7:8 with yerrorbars pt 7 ps 1 lw 1.5 lc rgb '#1f77b4' title 'measured (real, median; bar: min-max)', \
       f using 1:2 with lines lw 1.5 lc rgb '#1f77b4' notitle, \
       f using 1:3 with linespoints pt 5 ps 1 lw 1.5 dt 2 lc rgb '#d62728' title 'simulated: machine:ranks=R,gflops=X0,load=L', \
       f using 1:4 with linespoints pt 9 ps 1 lw 1.2 dt 3 lc rgb '#7f7f7f' title 'simulated, idle model: gflops=X, no load', \
       f using 1:3:(sprintf('%+.0f%%', 100*$5)) with labels offset 0,1.2 tc rgb '#d62728' notitle
  unset output
}
