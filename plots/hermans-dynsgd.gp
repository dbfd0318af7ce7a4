# hermans-dynsgd.gp — Hermans H3d, the thesis' DynSGD comparison of communication windows (Ch. 2,
# Figs. 2.14 / 2.15): the center's training accuracy against simulated time at n workers for
# (a) lambda = 1, (b) lambda = L on the same epochs, (c) lambda = L on more epochs; one panel each, on
# its own time axis, as the thesis draws them. Reads resdir/hermans/h3d-{l1,l10,fair}.dat (time_s
# train_acc test_acc epoch; one block per seed, seed 1 first) and h3d-panels.txt (the panel titles).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
d = resdir.'/hermans/'
panel(i) = system("sed -n ".i."p ".d."h3d-panels.txt")
files = "h3d-l1.dat h3d-l10.dat h3d-fair.dat"
set grid; set yrange [0:1]; set ylabel "accuracy"; set xlabel "SIMULATED time (s)"
# x fits each panel's run (no empty tail); the key sits below each panel, off the curves
set autoscale xfix; set offsets 0, graph 0.02, 0, 0
set key below center horizontal samplen 2 spacing 1
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1500,560 font ",10"; set output outdir.'/hermans-dynsgd.png' }
  if (t eq "pdf") { set terminal pdfcairo size 10in,3.8in font ",8"; set output outdir.'/hermans-dynsgd.pdf' }
  set multiplot layout 1,3 title "Hermans H3d: ".panel(4)
  do for [i=1:3] {
    f = d.word(files, i)
    stats f using 1 nooutput
    nb = STATS_blocks
    set title panel(i)
    if (nb > 1) {
      plot for [b=1:nb-1] f index b using 1:2 with lines lw 1 lc rgb "#9ecae1" notitle, \
           f index 0 using 1:2 with lines lw 2.5 lc rgb "#1f77b4" title "training accuracy (seed 1)", \
           f index 0 using 1:3 with lines lw 1.5 dt 2 lc rgb "#d62728" title "test accuracy (seed 1)", \
           NaN with lines lw 1 lc rgb "#9ecae1" title "training accuracy (other seeds)"
    } else {
      plot f index 0 using 1:2 with lines lw 2.5 lc rgb "#1f77b4" title "training accuracy (seed 1)", \
           f index 0 using 1:3 with lines lw 1.5 dt 2 lc rgb "#d62728" title "test accuracy (seed 1)"
    }
  }
  unset multiplot
  set output
}
