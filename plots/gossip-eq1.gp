# gossip-eq1.gp — the eq. (1) check: for every node of every run, eq. (1)'s ratio (serve time /
# the mean interval between the others' requests; > 1 predicts congestion) against the measured
# ratio (mean wait of requests to the node / its serve time; > 1 is congestion). Agreement puts a
# point in the lower-left or upper-right quadrant. Reads resdir/gossip/eq1.dat.
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
# The key sits below the plot (its samples are not read as points); axes fit the data with a margin,
# so the nodes that never waited (the floor of the y axis) are whole, not cut by the border.
set logscale xy; set format xy "%g"; set grid; set key below center horizontal samplen 2 height 1 reverse Left
set autoscale xfix; set autoscale yfix; set offsets graph 0.03, graph 0.03, graph 0.04, graph 0.04
set xlabel "eq. (1): C_i / mean_{j!=i}(T G_j + C_j)   (> 1: congestion predicted)"
set ylabel "measured: mean wait at node i / its serve time   (> 1: congested)"
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2; set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,740 font ",10"; set output outdir.'/gossip-eq1.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,4.7in font ",8"; set output outdir.'/gossip-eq1.pdf' }
  set title "Gossip: eq. (1) predicate vs measured waiting, every node of every run (SIMULATED)"
  plot resdir.'/gossip/eq1.dat' using 1:($3==$4?$2:1/0) with points pt 7 ps 0.8 title "eq. (1) and measurement agree", \
       '' using 1:($3!=$4?$2:1/0) with points pt 6 ps 1.6 lw 2 title "disagree"
  set output
}
