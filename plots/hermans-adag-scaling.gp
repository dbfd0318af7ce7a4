# hermans-adag-scaling.gp — ADAG's per-weight scaling factor 1 / (gamma^-1 e^2 + 1) against the
# distance e = center - stale center of one weight, for gamma in {1e-3, 1e-4, 1e-5} (analytic).
if (!exists("outdir")) outdir = 'plots/out'
s(e, g) = 1.0 / (e * e / g + 1.0)
set logscale x; set xrange [1e-5:1]; set yrange [0:1.05]; set samples 400; set grid; set format x "10^{%L}"
set xlabel "|center - stale center| of a weight"; set ylabel "scaling factor"; set key bottom left
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,500 font ",10"; set output outdir.'/hermans-adag-scaling.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,3.4in font ",8"; set output outdir.'/hermans-adag-scaling.pdf' }
  set title "Hermans H3: ADAG's scaling factor (analytic)"
  plot s(x, 1e-3) lw 2 title "gamma = 1e-3", s(x, 1e-4) lw 2 title "gamma = 1e-4 (thesis)", s(x, 1e-5) lw 2 title "gamma = 1e-5"
  set output
}
