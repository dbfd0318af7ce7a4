# ppasgd-p4t.gp — PP-ASGD paper Fig. 4 (b)'s shape at the paper's scale, TIMING ONLY: examples per
# simulated second of SSGD and PP-ASGD against K80 GPUs (1-256, TSUBAME-KFC/DL, the ImageNet-1000 net
# at 224x224), each over its own 1-GPU run, log-log with the ideal line; --device phantom (no
# numerics: the work-rate half of the speed-up, not time to accuracy).
# Reads resdir/ppasgd/p4t-speedup.dat ("GPUs speedup_ssgd speedup_ppasgd ideal"), bench/phantom/summarize.py's.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f = resdir.'/ppasgd/p4t-speedup.dat'
set logscale xy 2
set xlabel "GPUs (K80 dies, simulated)"
set ylabel "examples/s over 1 GPU"
set grid
set key left top opaque box
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 800,550 font ",10"; set output outdir.'/ppasgd-p4t.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,4.1in font ",8"; set output outdir.'/ppasgd-p4t.pdf' }
  set title "PP-ASGD paper Fig. 4b's shape at its scale (SIMULATED, timing only: --device phantom)"
  plot f using 1:4 with lines dt 2 lw 2 lc rgb "black" title "ideal", \
       f using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "SSGD", \
       f using 1:3 with linespoints lw 2 pt 5 lc rgb "#d62728" title "PP-ASGD"
  set output
}
