# gpu-speed.gp — make bench-gpu (issue 35 H): img/s vs batch of pdl's training step on a CUDA device,
# eager and as one CUDA graph, beside PyTorch eager and CUDA-graphed, median with min-max bars, one
# run on one machine. Reads resdir/gpu/gpu-speed.dat (bench/gpu/summarize.py).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/gpu/gpu-speed.dat'
set grid; set logscale xy; set xlabel "batch"; set ylabel "training images / s"
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set key top left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,600 font ",10"; set output outdir.'/gpu-speed.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,4in font ",8"; set output outdir.'/gpu-speed.pdf' }
  set title "pdl vs PyTorch on a GPU (ppasgd-cifar, momentum SGD, FP32)"
  plot f using 1:2:3:4 with yerrorlines lw 2 pt 7 lc 1 title "pdl eager", \
       f using 1:5:6:7 with yerrorlines lw 2 pt 5 lc 2 title "pdl, one CUDA graph per step", \
       f using 1:8:9:10 with yerrorlines lw 2 pt 6 lc 3 dt 2 title "PyTorch eager", \
       f using 1:11:12:13 with yerrorlines lw 2 pt 4 lc 4 dt 2 title "PyTorch CUDA graph", \
       f using 1:14:15:16 with yerrorlines lw 2 pt 9 lc 7 title "pdl train, chunks of 64 steps as CUDA graphs"
  set output
}
