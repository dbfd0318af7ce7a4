# gossip-timeline.gp — G1/G2 (Fig. 1a / 3a): every pull of the 6-wide + 2-narrow setting, case (b),
# as a bar from its request to its reply, on the requester's row; red: served by a narrow node.
# Reads resdir/gossip/timeline-T1.dat and timeline-T4.dat (requester start end narrow peer).
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f1 = resdir.'/gossip/timeline-T1.dat'; f4 = resdir.'/gossip/timeline-T4.dat'
tmax = 30
set xlabel "SIMULATED time (s)"; set ylabel "requesting node (0-5 wide, 6-7 narrow)"; set yrange [-0.7:7.7]; set ytics 1
set xrange [0:tmax]; set grid x; set key outside top center horizontal
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1300,700 font ",10"; set output outdir.'/gossip-timeline.png' }
  if (t eq "pdf") { set terminal pdfcairo size 9in,5in font ",8"; set output outdir.'/gossip-timeline.pdf' }
  set multiplot layout 2,1 title "Gossip G1/G2: pulls over time, 6 wide + 2 narrow (SIMULATED, case (b): 54 MiB model timing)"
  set title "T = 1, the first 30 s: pulls from the narrow nodes queue (congestion)"
  plot f1 using 2:($1+($4>0.5?0.15:-0.15)):($3-$2):(0):($4>0.5?1:2) with vectors nohead lw 3 lc variable notitle, \
       NaN with lines lw 3 lc 1 title "served by a narrow node", NaN with lines lw 3 lc 2 title "served by a wide node"
  set title "T = 4, the first 30 s: no queue"
  plot f4 using 2:($1+($4>0.5?0.15:-0.15)):($3-$2):(0):($4>0.5?1:2) with vectors nohead lw 3 lc variable notitle, \
       NaN with lines lw 3 lc 1 title "served by a narrow node", NaN with lines lw 3 lc 2 title "served by a wide node"
  unset multiplot
  set output
}
