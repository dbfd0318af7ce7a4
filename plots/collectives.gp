# plots/collectives.gp — the K-FAC paper's Fig. 4 analogue (K1): collective time vs message size,
# log-2 x, log y, one curve per backend and rank count (mean over ranks of the per-rank mean call
# time, best of the rounds) with the min-max band over ranks and all rounds, and the median call
# (p50 of the per-call slowest rank) dashed, which a few descheduled calls do not move. Reads resdir/collectives/dat/OP-BACKEND-npN.dat written
# by bench/collectives/summary.py (columns: bytes_total avg min max p50 p99 busbw). Writes
# outdir/collectives-OP.png and .pdf for reduce, allgather, allreduce.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
dir = resdir.'/collectives/dat'
lab(f) = system(sprintf("basename %s .dat | sed -e 's/^[a-z_]*-//' -e 's/-np\\([0-9]*\\)/, \\1 ranks/' -e 's/^mpi/MPI (Open MPI)/' -e 's/^nccl/NCCL/'", f))
nice(op) = op eq 'reduce' ? 'Reduce' : op eq 'allgather' ? 'Allgather' : 'Allreduce'
host = system('hostname')
# K-FAC's own message sizes per update (bench-kfac's results/kfac/kfac-msgs.dat, when present):
# step 3 (Reduce + Scatterv of the bundles) on the reduce and allreduce plots, step 6 (Allgather of
# the dW) on the allgather and allreduce plots
msgs = resdir.'/kfac/kfac-msgs.dat'
kb(s) = system(sprintf("awk '$1 == %d {print $2}' %s 2>/dev/null", s, msgs))
do for [op in "reduce allgather allreduce"] {
  files = system('ls '.dir.'/'.op.'-*.dat 2>/dev/null')
  if (strlen(files) > 0) {
    do for [term in "png pdf"] {
      if (term eq 'png') { set terminal pngcairo size 960,700 font ',11' } else { set terminal pdfcairo size 6.4in,4.7in font ',9' }
      set output outdir.'/collectives-'.op.'.'.term
      set title sprintf("K-FAC paper Fig. 4 analogue: %s time vs size\n(%s, one node, float sum, synthetic validated buffers)\nsolid = mean over ranks (best of the rounds), band = min-max over ranks and rounds, dashed = median call", nice(op), host)
      set xlabel 'size: full vector in bytes (nccl-tests convention; allgather = output buffer)'
      set ylabel 'time per call (us)'
      set logscale x 2
      set logscale y 10
      set format x '2^{%L}'
      set format y '10^{%L}'
      set grid xtics ytics
      set key below center horizontal samplen 3 height 1 reverse Left   # off the curves and the K-FAC step labels
      set autoscale xfix; set offsets graph 0.02, graph 0.02, 0, 0   # the end points whole
      unset arrow; unset label
      do for [s in "3 6"] {
        b = kb(int(s))
        if (strlen(b) > 0 && ((s eq "3" && op ne 'allgather') || (s eq "6" && op ne 'reduce'))) {
          set arrow from b+0, graph 0 to b+0, graph 1 nohead dt 3 lw 1.5 lc rgb 'black'
          set label sprintf("K-FAC step %s\n(vgg-small)", s) at b+0, graph 0.95 left offset 0.3,0 font ',8'
        }
      }
      plot for [i=1:words(files)] word(files, i) using 1:3:4 with filledcurves fs transparent solid 0.18 noborder lc i notitle, \
           for [i=1:words(files)] word(files, i) using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 lc i title lab(word(files, i)), \
           for [i=1:words(files)] word(files, i) using 1:5 with lines dt 2 lw 1 lc i notitle
      unset output
    }
  }
}
