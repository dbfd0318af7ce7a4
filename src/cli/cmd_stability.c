/* cli/cmd_stability.c — `pdl stability`: round-robin stability of EASGD and ADMM on F(x) = x^2/2
 * (EASGD paper, Sec. 4, Fig. 1; result E1). Three modes:
 *   sweep   (default) spectral radius of the round map over an (eta, rho|alpha) grid -> JSONL
 *   --check the E1 check table (EASGD region vs the analytic condition, ADMM instability,
 *           divergence from x = 1000); exits 1 when a check fails
 *   --iterate one trajectory of the scalar updates from lam_i = 0, x_i = xc = X0 -> JSONL
 * Output files (--json/--results) are written to FILE.tmp and renamed over FILE when complete, so
 * a re-run replaces a grid instead of appending a second copy and an interrupted run leaves the
 * previous file intact. Maps and equations: src/analysis/stability.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analysis/stability.h"
#include "util/util.h"

static void usage(FILE *f) {
  fprintf(f,
"usage: pdl stability [--method easgd|admm] [--p P] [--eta SPEC] [--rho SPEC | --alpha SPEC]\n"
"                     [--json FILE]\n"
"       pdl stability --check [--grid N] [--band B] [--rounds R] [--json FILE]\n"
"       pdl stability --iterate --method easgd|admm [--p P] [--eta E] [--rho R | --alpha A]\n"
"                     [--x0 X] [--rounds R] [--json FILE]\n"
"\n"
"Round-robin stability of asynchronous EASGD (eq. 12-13) and ADMM (eq. 9-11) on F(x) = x^2/2\n"
"(Zhang, Choromanska, LeCun 2015, Sec. 4, Fig. 1). The round map F = F^p ... F^1 (one tick of\n"
"each of the p workers) is built as a dense matrix and its largest |eigenvalue| is computed with\n"
"LAPACKE_dgeev. Numerically stable means radius <= 1 + %g.\n"
"\n"
"sweep (default): the radius over a grid; prints a summary, writes one JSON line per point.\n"
"  --method M      easgd or admm (default admm)\n"
"  --p P           number of workers, 1..256 (default 3)\n"
"  --eta SPEC      learning rate grid (default admm 5e-5:0.00995:100, the cell centres of\n"
"                  (0, 1e-2); easgd -0.25:2.25:251)\n"
"  --rho SPEC      elastic/penalty coefficient grid (default admm 0.05:9.95:100, cell centres of\n"
"                  (0, 10)); for easgd alpha = eta*rho\n"
"  --alpha SPEC    easgd only: moving-rate grid instead of --rho (default -0.25:1.25:151)\n"
"                  SPEC is MIN:MAX:N (N evenly spaced points, both ends included) or one number\n"
"  --json FILE     JSONL output (alias --results): a config line, then one line per point\n"
"                  with eta, rho and/or alpha, radius, stable (and for easgd: analytic, gap)\n"
"\n"
"--check: prints the E1 table and exits 1 if a check fails:\n"
"  easgd region  p=3, 8: N x N grid over eta in [-0.25, 2.25], alpha in [-0.25, 1.25]; counts the\n"
"                points where numeric and analytic stability (0 <= eta <= 2,\n"
"                0 <= alpha <= (4-2eta)/(4-eta)) disagree, outside and inside the band\n"
"                gap < B (gap: smallest of |eta|, |eta-2|, |alpha|, |alpha - curve| for eta in\n"
"                [0, 2]); passes when none disagree outside the band\n"
"  easgd curve   p=2, 3, 4, 8: numeric critical alpha (bisection) at 99 etas in (0, 2) minus\n"
"                the analytic curve; passes when never below it (the condition is sufficient)\n"
"  admm region   p=3, 8: N x N cell centres of eta in (0, 1e-2), rho in (0, 10); max radius and\n"
"                the count above 1; passes when some but not all points exceed 1\n"
"  divergence    admm p=3, 8 at eta=0.001, rho=2.5 from lam=0, x_i=xc=1000 for R rounds; passes\n"
"                when max|s| grows more than 1000-fold; easgd at eta=0.001, alpha=0.0025\n"
"                (= eta*rho) from the same start passes when max|s| shrinks\n"
"  --grid N        grid points per axis, 11..2001 (default 301)\n"
"  --band B        boundary band half-width in eta/alpha units (default 0.005: wider than the\n"
"                  sliver beyond the curve where the composed map of an even p is still\n"
"                  stable, which the 'easgd curve' rows measure: 2.5e-3 at p=8)\n"
"  --rounds R      rounds for the divergence runs (default 20000)\n"
"  --json FILE     one JSON line per table row\n"
"\n"
"--iterate: runs the scalar updates (independent of the matrices) for R rounds from lam_i = 0,\n"
"  x_i = xc = X0 and reports max|s| and its per-round growth beside the spectral radius.\n"
"  Defaults are the paper's demo: eta 0.001, rho 2.5 (easgd: alpha = eta*rho = 0.0025), X0 1000.\n"
"  From that start ADMM first decays (p=3: to ~70 near round 2600) and then grows, so\n"
"  divergence shows only after a few thousand rounds.\n"
"  --x0 X          start value (default 1000)\n"
"  --rounds R      rounds of p ticks (default 20000)\n"
"  --json FILE     trajectory (max|s| and xc at log-spaced rounds: every round up to\n"
"                  32, then ~3%% apart) + a summary line\n"
"\n"
"exit status: 0 ok, 1 a --check check failed or a file/LAPACK error, 2 bad flags\n",
          PDL_STAB_TOL);
}

/* ---- grid specs ------------------------------------------------------------------------------ */
typedef struct { double lo, hi; long n; int set; } range_t;

static void parse_range(const char *flag, const char *s, range_t *r) {
  if (!s) die_usage("%s needs a value (MIN:MAX:N or a number)", flag);
  const char *c1 = strchr(s, ':');
  if (!c1) {
    r->lo = r->hi = parse_double(flag, s, -1e6, 1e6);
    r->n = 1; r->set = 1;
    return;
  }
  const char *c2 = strchr(c1 + 1, ':');
  if (!c2 || strchr(c2 + 1, ':')) die_usage("%s: '%s' is not MIN:MAX:N", flag, s);
  char a[64], b[64];
  size_t la = (size_t)(c1 - s), lb = (size_t)(c2 - c1 - 1);
  if (la == 0 || lb == 0 || la >= sizeof a || lb >= sizeof b) die_usage("%s: '%s' is not MIN:MAX:N", flag, s);
  memcpy(a, s, la); a[la] = 0;
  memcpy(b, c1 + 1, lb); b[lb] = 0;
  r->lo = parse_double(flag, a, -1e6, 1e6);
  r->hi = parse_double(flag, b, -1e6, 1e6);
  r->n = parse_long(flag, c2 + 1, 1, 100000);
  if (r->hi < r->lo) die_usage("%s: MAX %g is below MIN %g", flag, r->hi, r->lo);
  if (r->n == 1 && r->hi != r->lo) die_usage("%s: N = 1 needs MIN = MAX", flag);
  r->set = 1;
}

static double range_at(const range_t *r, long k) {
  return r->n == 1 ? r->lo : r->lo + (r->hi - r->lo) * (double)k / (double)(r->n - 1);
}

/* ---- output file: FILE.tmp, renamed over FILE on commit ----------------------------------------- */
typedef struct { FILE *f; outfile_t of; } out_t;

static void out_open(out_t *o, const char *path) {
  o->f = NULL;
  if (!path) return;
  outfile_open(&o->of, path, "--json/--results file");
  o->f = o->of.f;
}

static void out_line(out_t *o, const char *line) {
  if (o->f && fprintf(o->f, "%s\n", line) < 0) die("cannot write %s: %s", o->of.tmp, strerror(errno));
}

static void out_commit(out_t *o) {
  if (!o->f) return;
  outfile_commit(&o->of); o->f = NULL;
}

static void out_abort_if_stopped(out_t *o) {
  if (!pdl_stop_signal) return;
  if (o->f) { outfile_abort(&o->of); o->f = NULL; }
  die("interrupted by signal %d; %s left unchanged", pdl_stop_signal, o->of.path[0] ? o->of.path : "(no file)");
}

static void json_head(json_t *j, const char *kind) {
  json_begin(j);
  json_str(j, "exp", "e1-stability");
  json_str(j, "kind", kind);
}

/* ---- sweep ----------------------------------------------------------------------------------- */
static int run_sweep(pdl_stab_method m, int p, range_t eta, range_t coef, int coef_is_alpha, const char *path) {
  out_t o; out_open(&o, path);
  const char *cname = coef_is_alpha ? "alpha" : "rho";
  json_t j;
  json_head(&j, "config");
  json_str(&j, "method", pdl_stab_method_name(m));
  json_int(&j, "p", p);
  json_str(&j, "objective", "F(x)=x^2/2");
  json_str(&j, "eigensolver", "LAPACKE_dgeev");
  json_num(&j, "eta_min", eta.lo); json_num(&j, "eta_max", eta.hi); json_int(&j, "eta_n", eta.n);
  json_str(&j, "coef", cname);
  json_num(&j, "coef_min", coef.lo); json_num(&j, "coef_max", coef.hi); json_int(&j, "coef_n", coef.n);
  json_num(&j, "tol", PDL_STAB_TOL);
  json_bool(&j, "simulated", 0);
  json_meta(&j);
  out_line(&o, json_end(&j));

  double t0 = now_s(), rmin = INFINITY, rmax = -INFINITY, at_eta = NAN, at_coef = NAN;
  long above = 0, disagree = 0, total = eta.n * coef.n;
  for (long a = 0; a < eta.n; a++) {
    out_abort_if_stopped(&o);
    progress("stability %s p=%d: row %ld/%ld", pdl_stab_method_name(m), p, a + 1, eta.n);
    for (long b = 0; b < coef.n; b++) {
      double e = range_at(&eta, a), c = range_at(&coef, b);
      double alpha = m == PDL_STAB_EASGD ? (coef_is_alpha ? c : e * c) : NAN;
      double r = pdl_stab_radius(m, p, e, m == PDL_STAB_EASGD ? alpha : c);
      int stable = r <= 1.0 + PDL_STAB_TOL;
      if (r < rmin) rmin = r;
      if (r > rmax) { rmax = r; at_eta = e; at_coef = c; }
      above += !stable;
      json_head(&j, "point");
      json_str(&j, "method", pdl_stab_method_name(m));
      json_int(&j, "p", p);
      json_num(&j, "eta", e);
      if (!coef_is_alpha) json_num(&j, "rho", c);
      if (m == PDL_STAB_EASGD) {
        int an = pdl_easgd_stable_analytic(e, alpha);
        disagree += an != stable;
        json_num(&j, "alpha", alpha);
        json_num(&j, "radius", r);
        json_bool(&j, "stable", stable);
        json_bool(&j, "analytic", an);
        json_num(&j, "gap", pdl_easgd_boundary_gap(e, alpha));
      } else {
        json_num(&j, "radius", r);
        json_bool(&j, "stable", stable);
      }
      json_bool(&j, "simulated", 0);
      out_line(&o, json_end(&j));
    }
  }
  progress_done();
  out_commit(&o);
  printf("pdl stability: %s p=%d, eta %g..%g (%ld), %s %g..%g (%ld): %ld points in %.2f s\n",
         pdl_stab_method_name(m), p, eta.lo, eta.hi, eta.n, cname, coef.lo, coef.hi, coef.n, total, now_s() - t0);
  printf("  spectral radius: min %.6f, max %.6f at eta=%g %s=%g; %ld points > 1 + %g\n",
         rmin, rmax, at_eta, cname, at_coef, above, PDL_STAB_TOL);
  if (m == PDL_STAB_EASGD)
    printf("  numeric vs analytic stability (0<=eta<=2, 0<=alpha<=(4-2eta)/(4-eta)): %ld of %ld disagree\n",
           disagree, total);
  if (path) printf("  wrote %s\n", path);
  return 0;
}

/* ---- iteration ------------------------------------------------------------------------------- */
typedef struct { double radius, norm0, norm_final, growth, norm_half; long rounds; } iter_result;

static double max_abs(const double *s, int n) {
  double m = 0.0;
  for (int k = 0; k < n; k++) m = fmax(m, fabs(s[k]));
  return m;
}

/* Runs `rounds` rounds of the scalar ticks from lam_i = 0, x_i = xc = x0. growth is the measured
 * per-round factor (max|s|(R) / max|s|(R/2))^(1/(R - R/2)); trajectory lines go to o. */
static iter_result iterate(pdl_stab_method m, int p, double eta, double coef, double x0, long rounds, out_t *o) {
  int n = pdl_stab_dim(m, p);
  double *s = xcalloc((size_t)n, sizeof(double)); /* [n] state, layout in stability.h */
  for (int i = 0; i < p; i++) s[m == PDL_STAB_EASGD ? i : 2 * i + 1] = x0;
  s[pdl_stab_center(m, p)] = x0;
  iter_result res = { .radius = pdl_stab_radius(m, p, eta, coef), .norm0 = max_abs(s, n), .rounds = rounds };
  long half = rounds / 2, next = 1;
  res.norm_half = res.norm0;
  json_t j;
  for (long r = 1; r <= rounds; r++) {
    for (int k = 0; k < p; k++) pdl_stab_tick(m, p, (r - 1) * p + k, eta, coef, s);
    if (r == half) res.norm_half = max_abs(s, n);
    if (r == next || r == rounds) {
      json_head(&j, "trajectory");
      json_str(&j, "method", pdl_stab_method_name(m));
      json_int(&j, "p", p);
      json_int(&j, "round", r);
      json_num(&j, "norm", max_abs(s, n));
      json_num(&j, "center", s[pdl_stab_center(m, p)]);
      json_bool(&j, "simulated", 0);
      out_line(o, json_end(&j));
      long step = next / 32 > 1 ? next / 32 : 1;
      next += step;
    }
  }
  res.norm_final = max_abs(s, n);
  long span = rounds - half;
  res.growth = span > 0 && res.norm_half > 0 ? pow(res.norm_final / res.norm_half, 1.0 / (double)span) : NAN;
  xfree(s);
  return res;
}

static void iter_json(json_t *j, const char *kind, pdl_stab_method m, int p, double eta, double coef,
                      int coef_is_alpha, double x0, const iter_result *res) {
  json_head(j, kind);
  json_str(j, "method", pdl_stab_method_name(m));
  json_int(j, "p", p);
  json_num(j, "eta", eta);
  json_num(j, coef_is_alpha ? "alpha" : "rho", coef);
  json_num(j, "x0", x0);
  json_int(j, "rounds", res->rounds);
  json_num(j, "radius", res->radius);
  json_num(j, "growth_per_round", res->growth);
  json_num(j, "norm0", res->norm0);
  json_num(j, "norm_final", res->norm_final);
  json_bool(j, "simulated", 0);
}

static int run_iterate(pdl_stab_method m, int p, double eta, double coef_in, int coef_is_alpha, double x0,
                       long rounds, const char *path) {
  /* the map's second parameter: alpha for EASGD (given, or eta*rho), rho for ADMM */
  double coef = m == PDL_STAB_EASGD && !coef_is_alpha ? eta * coef_in : coef_in;
  out_t o; out_open(&o, path);
  iter_result res = iterate(m, p, eta, coef, x0, rounds, &o);
  json_t j;
  iter_json(&j, "iterate", m, p, eta, coef, m == PDL_STAB_EASGD, x0, &res);
  json_meta(&j);
  out_line(&o, json_end(&j));
  out_commit(&o);
  printf("pdl stability --iterate: %s p=%d eta=%g %s=%g from lam_i=0, x_i=xc=%g, %ld rounds\n",
         pdl_stab_method_name(m), p, eta, m == PDL_STAB_EASGD ? "alpha" : "rho", coef, x0, rounds);
  printf("  max|s|: %.6g -> %.6g (factor %.3g); growth per round (2nd half) %.9f; spectral radius %.9f\n",
         res.norm0, res.norm_final, res.norm_final / res.norm0, res.growth, res.radius);
  printf("  %s\n", res.norm_final > res.norm0 ? "diverges" : "converges");
  if (path) printf("  wrote %s\n", path);
  return 0;
}

/* ---- check ----------------------------------------------------------------------------------- */
typedef struct { int failed; out_t *o; } check_ctx;

static void row(check_ctx *cx, const char *name, int p, const char *ours, const char *paper, int pass, json_t *j) {
  printf("%-14s %2d  %-76s %-33s %s\n", name, p, ours, paper, pass ? "PASS" : "FAIL");
  cx->failed += !pass;
  json_bool(j, "pass", pass);
  json_bool(j, "simulated", 0);
  json_meta(j);
  out_line(cx->o, json_end(j));
}

static void check_easgd_region(check_ctx *cx, int p, long N, double band) {
  const range_t eta = { -0.25, 2.25, N, 1 }, al = { -0.25, 1.25, N, 1 };
  long in_band = 0, dis_out = 0, dis_in = 0;
  double worst_eta = NAN, worst_alpha = NAN, worst_r = NAN;
  for (long a = 0; a < N; a++) {
    progress("check easgd p=%d: row %ld/%ld", p, a + 1, N);
    for (long b = 0; b < N; b++) {
      double e = range_at(&eta, a), x = range_at(&al, b);
      double r = pdl_stab_radius(PDL_STAB_EASGD, p, e, x);
      int dis = (r <= 1.0 + PDL_STAB_TOL) != pdl_easgd_stable_analytic(e, x);
      if (pdl_easgd_boundary_gap(e, x) < band) { in_band++; dis_in += dis; }
      else if (dis) { if (!dis_out) { worst_eta = e; worst_alpha = x; worst_r = r; } dis_out++; }
    }
  }
  progress_done();
  char ours[160];
  if (dis_out)
    snprintf(ours, sizeof ours, "%ld of %ld disagree outside band %g (first eta=%g alpha=%g r=%.6f)",
             dis_out, N * N - in_band, band, worst_eta, worst_alpha, worst_r);
  else
    snprintf(ours, sizeof ours, "0 of %ld disagree outside band %g; %ld of %ld in band",
             N * N - in_band, band, dis_in, in_band);
  json_t j; json_head(&j, "check");
  json_str(&j, "check", "easgd-region"); json_int(&j, "p", p); json_int(&j, "grid", N); json_num(&j, "band", band);
  json_int(&j, "points", N * N); json_int(&j, "in_band", in_band);
  json_int(&j, "disagree_outside_band", dis_out); json_int(&j, "disagree_in_band", dis_in);
  row(cx, "easgd region", p, ours, "stable iff analytic condition", dis_out == 0, &j);
}

static void check_easgd_curve(check_ctx *cx, int p) {
  const int K = 99;
  double dev_min = INFINITY, dev_max = -INFINITY, eta_max = NAN;
  int bad_bracket = 0;
  for (int k = 1; k <= K; k++) {
    double e = 2.0 * k / (K + 1), amax = pdl_easgd_alpha_max(e);
    double lo = fmax(0.0, amax - 0.05), hi = amax + 0.25;
    if (pdl_stab_radius(PDL_STAB_EASGD, p, e, lo) > 1.0 + PDL_STAB_TOL ||
        pdl_stab_radius(PDL_STAB_EASGD, p, e, hi) <= 1.0 + PDL_STAB_TOL) { bad_bracket++; continue; }
    for (int it = 0; it < 60; it++) {
      double mid = 0.5 * (lo + hi);
      if (pdl_stab_radius(PDL_STAB_EASGD, p, e, mid) <= 1.0 + PDL_STAB_TOL) lo = mid; else hi = mid;
    }
    double dev = lo - amax;
    if (dev < dev_min) dev_min = dev;
    if (dev > dev_max) { dev_max = dev; eta_max = e; }
  }
  char ours[160];
  snprintf(ours, sizeof ours, "alpha_crit - curve in [%.2e, %.2e] (max at eta=%.2f)%s",
           dev_min, dev_max, eta_max, bad_bracket ? "; bracket failed" : "");
  json_t j; json_head(&j, "check");
  json_str(&j, "check", "easgd-curve"); json_int(&j, "p", p); json_int(&j, "etas", K);
  json_num(&j, "dev_min", dev_min); json_num(&j, "dev_max", dev_max); json_num(&j, "eta_at_dev_max", eta_max);
  json_int(&j, "bad_bracket", bad_bracket);
  /* -1e-7: 60 bisection steps and the 1e-9 radius tolerance locate alpha_crit to < 1e-8 */
  row(cx, "easgd curve", p, ours, "same condition for every p", dev_min >= -1e-7 && !bad_bracket, &j);
}

static void check_admm_region(check_ctx *cx, int p, long N) {
  double rmax = -INFINITY, rmin = INFINITY, at_eta = NAN, at_rho = NAN;
  long above = 0;
  for (long a = 0; a < N; a++) {
    progress("check admm p=%d: row %ld/%ld", p, a + 1, N);
    for (long b = 0; b < N; b++) {
      double e = 1e-2 * (a + 0.5) / N, rho = 10.0 * (b + 0.5) / N;
      double r = pdl_stab_radius(PDL_STAB_ADMM, p, e, rho);
      above += r > 1.0 + PDL_STAB_TOL;
      if (r < rmin) rmin = r;
      if (r > rmax) { rmax = r; at_eta = e; at_rho = rho; }
    }
  }
  progress_done();
  char ours[160];
  snprintf(ours, sizeof ours, "max %.6f at eta=%.3g rho=%.3g; %ld of %ld > 1; min %.4f",
           rmax, at_eta, at_rho, above, N * N, rmin);
  json_t j; json_head(&j, "check");
  json_str(&j, "check", "admm-region"); json_int(&j, "p", p); json_int(&j, "grid", N);
  json_num(&j, "max_radius", rmax); json_num(&j, "eta_at_max", at_eta); json_num(&j, "rho_at_max", at_rho);
  json_num(&j, "min_radius", rmin); json_int(&j, "points", N * N); json_int(&j, "above_1", above);
  row(cx, "admm region", p, ours, "max |eig| > 1 in parts (Fig. 1)", above > 0 && above < N * N, &j);
}

static void check_divergence(check_ctx *cx, pdl_stab_method m, int p, long rounds) {
  const double eta = 0.001, rho = 2.5, x0 = 1000.0;
  double coef = m == PDL_STAB_EASGD ? eta * rho : rho;
  out_t none = { 0 };
  iter_result res = iterate(m, p, eta, coef, x0, rounds, &none);
  double factor = res.norm_final / res.norm0;
  int pass = m == PDL_STAB_ADMM ? factor > 1e3 : factor < 1.0;
  char ours[160];
  snprintf(ours, sizeof ours, "max|s| 1000 -> %.3g in %ld rounds; growth %.6f/round, radius %.6f",
           res.norm_final, rounds, res.growth, res.radius);
  json_t j;
  iter_json(&j, "check", m, p, eta, coef, m == PDL_STAB_EASGD, x0, &res);
  json_str(&j, "check", m == PDL_STAB_ADMM ? "admm-diverge" : "easgd-converge");
  row(cx, m == PDL_STAB_ADMM ? "admm diverge" : "easgd converge", p, ours,
      m == PDL_STAB_ADMM ? "eta=.001 rho=2.5 diverges" : "stable (condition holds)", pass, &j);
}

static int run_check(long N, double band, long rounds, const char *path) {
  out_t o; out_open(&o, path);
  check_ctx cx = { 0, &o };
  double t0 = now_s();
  printf("E1 (EASGD paper Sec. 4, Fig. 1): round-robin stability on F(x)=x^2/2, radius by LAPACKE_dgeev, "
         "stable = radius <= 1 + %g\n", PDL_STAB_TOL);
  printf("%-14s %2s  %-76s %-33s %s\n", "check", "p", "ours", "paper", "verdict");
  check_easgd_region(&cx, 3, N, band);
  check_easgd_region(&cx, 8, N, band);
  for (int p = 2; p <= 8; p *= 2) {
    check_easgd_curve(&cx, p);
    if (p == 2) check_easgd_curve(&cx, 3);
  }
  check_admm_region(&cx, 3, N);
  check_admm_region(&cx, 8, N);
  check_divergence(&cx, PDL_STAB_ADMM, 3, rounds);
  check_divergence(&cx, PDL_STAB_ADMM, 8, rounds);
  check_divergence(&cx, PDL_STAB_EASGD, 3, rounds);
  check_divergence(&cx, PDL_STAB_EASGD, 8, rounds);
  out_commit(&o);
  printf("%d check(s) failed; %.1f s\n", cx.failed, now_s() - t0);
  if (path) printf("wrote %s\n", path);
  return cx.failed ? PDL_EXIT_ERROR : 0;
}

/* ---- flags ----------------------------------------------------------------------------------- */
int cmd_stability(int argc, char **argv) {
  pdl_stab_method m = PDL_STAB_ADMM;
  int method_set = 0, check = 0, iter = 0, p_set = 0, grid_set = 0, band_set = 0, rounds_set = 0, x0_set = 0;
  long p = 3, grid = 301, rounds = 20000;
  double band = 0.005, x0 = 1000.0;
  range_t eta = { 0 }, rho = { 0 }, alpha = { 0 };
  const char *path = NULL, *path_flag = NULL;
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *a = argv[i], *val;
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    if (eq) {
      size_t l = (size_t)(eq - a);
      if (l >= sizeof flag) die_usage("unknown flag '%s'", a);
      memcpy(flag, a, l); flag[l] = 0; val = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", a);
      val = i + 1 < argc ? argv[i + 1] : NULL;
    }
    int takes = 1;
    if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) { usage(stdout); return 0; }
    else if (!strcmp(flag, "--check")) takes = 0, check = 1;
    else if (!strcmp(flag, "--iterate")) takes = 0, iter = 1;
    else if (!strcmp(flag, "--method")) {
      if (!val) die_usage("--method needs a value (easgd or admm)");
      if (!strcmp(val, "easgd")) m = PDL_STAB_EASGD;
      else if (!strcmp(val, "admm")) m = PDL_STAB_ADMM;
      else die_usage("--method: '%s' is not easgd or admm", val);
      method_set = 1;
    }
    else if (!strcmp(flag, "--p")) p = parse_long("--p", val, 1, 256), p_set = 1;
    else if (!strcmp(flag, "--eta")) parse_range("--eta", val, &eta);
    else if (!strcmp(flag, "--rho")) parse_range("--rho", val, &rho);
    else if (!strcmp(flag, "--alpha")) parse_range("--alpha", val, &alpha);
    else if (!strcmp(flag, "--json") || !strcmp(flag, "--results")) {
      if (!val || !*val) die_usage("%s needs a file name", flag);
      output_flag("stability", &path_flag, &path, strcmp(flag, "--json") ? "--results" : "--json", val);   /* (an alias) */
    }
    else if (!strcmp(flag, "--grid")) grid = parse_long("--grid", val, 11, 2001), grid_set = 1;
    else if (!strcmp(flag, "--band")) band = parse_double("--band", val, 0.0, 0.5), band_set = 1;
    else if (!strcmp(flag, "--rounds")) rounds = parse_long("--rounds", val, 2, 100000000), rounds_set = 1;
    else if (!strcmp(flag, "--x0")) x0 = parse_double("--x0", val, -1e12, 1e12), x0_set = 1;
    else die_usage("unknown flag '%s' (pdl stability --help)", a);
    if (takes && !eq) i++;
    if (!takes && eq) die_usage("%s takes no value", flag);
  }
  if (check && iter) die_usage("--check and --iterate are separate modes");
  if (alpha.set && rho.set) die_usage("--alpha and --rho are exclusive (alpha = eta*rho)");
  if (alpha.set && m != PDL_STAB_EASGD) die_usage("--alpha is for --method easgd (admm takes --rho)");
  if (!check && (grid_set || band_set)) die_usage("--grid and --band apply to --check only");
  if (!iter && x0_set) die_usage("--x0 applies to --iterate only");
  if (!check && !iter && rounds_set) die_usage("--rounds applies to --check and --iterate only");
  if (path) outfile_probe(path, path_flag);   /* before any work, naming the flag given */
  install_stop_handlers();

  if (check) {
    if (method_set || p_set || eta.set || rho.set || alpha.set)
      die_usage("--check uses its own grids; --method/--p/--eta/--rho/--alpha do not apply");
    return run_check(grid, band, rounds, path);
  }
  if (iter) {
    if (!method_set) die_usage("--iterate needs --method easgd|admm");
    if (eta.set && eta.n != 1) die_usage("--eta: --iterate needs a single value");
    const range_t *c = alpha.set ? &alpha : &rho;
    if (c->set && c->n != 1) die_usage("%s: --iterate needs a single value", alpha.set ? "--alpha" : "--rho");
    return run_iterate(m, (int)p, eta.set ? eta.lo : 0.001, c->set ? c->lo : 2.5, alpha.set, x0, rounds, path);
  }
  if (!eta.set) eta = m == PDL_STAB_ADMM ? (range_t){ 5e-5, 0.00995, 100, 1 } : (range_t){ -0.25, 2.25, 251, 1 };
  int coef_is_alpha = 0;
  range_t coef = rho;
  if (m == PDL_STAB_EASGD && !rho.set) { coef_is_alpha = 1; coef = alpha.set ? alpha : (range_t){ -0.25, 1.25, 151, 1 }; }
  if (m == PDL_STAB_ADMM && !rho.set) coef = (range_t){ 0.05, 9.95, 100, 1 };
  if (eta.n * coef.n > 10000000) die_usage("--eta/--rho/--alpha: %ld points is more than 1e7", eta.n * coef.n);
  return run_sweep(m, (int)p, eta, coef, coef_is_alpha, path);
}
