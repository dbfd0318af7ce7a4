# easgd-stability-easgd.gp — EASGD paper Sec. 4: largest |eigenvalue| of the EASGD round-robin map
# F = F^p ... F^1 (eq. 12-13) on F(x) = x^2/2 over eta (x) and alpha = eta*rho (y), p = 3 and 8,
# with the paper's analytic stability region 0 <= eta <= 2, 0 <= alpha <= (4-2eta)/(4-eta)
# overlaid. Colour: blue = stable (radius < 1), white = 1, red = unstable (clipped at 1.5).
# Reads resdir/easgd/stability-easgd-p{3,8}.dat ("eta alpha radius", one block per eta), written
# by bench/easgd/run.sh from the JSONL of `pdl stability --method easgd`.
# Run: gnuplot -e "resdir='results'; outdir='plots/out'" plots/easgd-stability-easgd.gp
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f3 = resdir.'/easgd/stability-easgd-p3.dat'
f8 = resdir.'/easgd/stability-easgd-p8.dat'
stats f3 using 1:2 nooutput name "G"
clip(r) = (r > 1.5 ? 1.5 : r)
amax(e) = (4.0 - 2.0 * e) / (4.0 - e)

set palette defined (0.5 "#08306b", 0.8 "#2171b5", 0.95 "#9ecae1", 0.999 "#f7fbff", 1.001 "#fff5f0", 1.05 "#fcbba1", 1.2 "#ef3b2c", 1.5 "#67000d")
set cbrange [0.5:1.5]
set cblabel "largest |eigenvalue| of F (clipped at 1.5)"
set xlabel "eta"
set ylabel "alpha = eta * rho"
set xrange [G_min_x:G_max_x]
set yrange [G_min_y:G_max_y]
set samples 400
set key below center horizontal samplen 3 height 1.5 reverse Left   # below the map, off the data

do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1400,660 font ",11"; set output outdir.'/easgd-stability-easgd.png' }
  if (t eq "pdf") { set terminal pdfcairo size 11in,5.2in font ",9"; set output outdir.'/easgd-stability-easgd.pdf' }
  set multiplot layout 1,2 title "EASGD paper Sec. 4 (computed): EASGD round-robin map on F(x)=x^2/2, spectral radius by LAPACKE dgeev; line = analytic condition"
  do for [p in "3 8"] {
    set title "p = ".p
    plot resdir.'/easgd/stability-easgd-p'.p.'.dat' using 1:2:(clip($3)) with image notitle, \
         [0:2] amax(x) with lines lw 2 dt 2 lc rgb "black" title "analytic: 0<=eta<=2, 0<=alpha<=(4-2eta)/(4-eta)", \
         [0:2] 0 with lines lw 2 dt 2 lc rgb "black" notitle, \
         '+' using (0):(1.0*$0/99) every ::0::99 with lines lw 2 dt 2 lc rgb "black" notitle
  }
  unset multiplot
  set output
}
