# easgd-stability-admm.gp — EASGD paper Fig. 1: largest |eigenvalue| of the ADMM round-robin map
# F = F3p F2p F1p ... F31 F21 F11 (eq. 9-11) on F(x) = x^2/2 over eta in (0, 1e-2) (y) and rho in
# (0, 10) (x), for p = 3 and p = 8 (eta axis in units of 1e-3 as in the paper), with the level-1 contour (inside it the map is unstable).
# Reads resdir/easgd/stability-admm-p{3,8}.dat ("rho eta radius", one block per eta), written by
# bench/easgd/run.sh from the JSONL of `pdl stability --method admm`.
# Run: gnuplot -e "resdir='results'; outdir='plots/out'" plots/easgd-stability-admm.gp
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f3 = resdir.'/easgd/stability-admm-p3.dat'
f8 = resdir.'/easgd/stability-admm-p8.dat'

# level-1 contours, computed once into data blocks
set contour base
set cntrparam levels discrete 1.0
unset surface
set table $c3
splot f3 using 1:($2*1000):3
unset table
set table $c8
splot f8 using 1:($2*1000):3
unset table
unset contour
set surface

stats f3 using 3 nooutput name "S3"
stats f8 using 3 nooutput name "S8"
cbmin = (S3_min < S8_min ? S3_min : S8_min)
cbmax = (S3_max > S8_max ? S3_max : S8_max)

set palette defined (0 "#000004", 0.25 "#3b0f70", 0.5 "#8c2981", 0.75 "#de4968", 0.9 "#fe9f6d", 1 "#fcfdbf")
set cbrange [cbmin:cbmax]
set cblabel "largest |eigenvalue| of F"
set xlabel "rho"
set ylabel "eta (x 10^{-3})"
set xrange [0:10]
set yrange [0:10]
set key below center horizontal samplen 3 height 1.5 reverse Left   # below the map, off the data

do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 1400,660 font ",11"; set output outdir.'/easgd-stability-admm.png' }
  if (t eq "pdf") { set terminal pdfcairo size 11in,5.2in font ",9"; set output outdir.'/easgd-stability-admm.pdf' }
  set multiplot layout 1,2 title "EASGD paper Fig. 1 (computed): ADMM round-robin map on F(x)=x^2/2, spectral radius by LAPACKE dgeev"
  set title sprintf("p = 3 (max %.5f)", S3_max)
  plot f3 using 1:($2*1000):3 with image notitle, $c3 using 1:2 with lines lw 2 lc rgb "#00c0ff" title "|eig| = 1"
  set title sprintf("p = 8 (max %.5f)", S8_max)
  plot f8 using 1:($2*1000):3 with image notitle, $c8 using 1:2 with lines lw 2 lc rgb "#00c0ff" title "|eig| = 1"
  unset multiplot
  set output
}
