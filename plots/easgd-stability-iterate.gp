# easgd-stability-iterate.gp — EASGD paper Sec. 4 / Fig. 1 caption: iterating the round-robin
# updates on F(x) = x^2/2 from lam_i = 0, x_i = xc = 1000 at eta = 0.001, rho = 2.5 (EASGD:
# alpha = eta*rho = 0.0025): max|s| per round, ADMM diverges, EASGD converges, for p = 3 and 8.
# Reads resdir/easgd/stability-iterate-{admm,easgd}-p{3,8}.dat ("round max|s| center"), written by
# bench/easgd/run.sh from the JSONL of `pdl stability --iterate`.
# Run: gnuplot -e "resdir='results'; outdir='plots/out'" plots/easgd-stability-iterate.gp
if (!exists("resdir")) resdir = 'results'
if (!exists("outdir")) outdir = 'plots/out'
f(m, p) = resdir.'/easgd/stability-iterate-'.m.'-p'.p.'.dat'
set logscale y
set format y "10^{%T}"
set xlabel "round (p ticks)"
set ylabel "max |s| over the state (lambda_{i}, x_{i}, center)"
set grid
set key left top opaque box
do for [t in "png pdf"] {
  if (t eq "png") { set terminal pngcairo size 900,600 font ",11"; set output outdir.'/easgd-stability-iterate.png' }
  if (t eq "pdf") { set terminal pdfcairo size 6in,4in font ",9"; set output outdir.'/easgd-stability-iterate.pdf' }
  set title "EASGD paper Sec. 4 (computed): round-robin iteration on F(x)=x^2/2 from x=1000, eta=0.001, rho=2.5"
  plot f('admm', 3) using 1:2 with lines lw 2 lc rgb "#d62728" title "ADMM p=3", \
       f('admm', 8) using 1:2 with lines lw 2 dt 2 lc rgb "#d62728" title "ADMM p=8", \
       f('easgd', 3) using 1:2 with lines lw 2 lc rgb "#1f77b4" title "EASGD p=3 (alpha=0.0025)", \
       f('easgd', 8) using 1:2 with lines lw 2 dt 2 lc rgb "#1f77b4" title "EASGD p=8 (alpha=0.0025)"
  set output
}
