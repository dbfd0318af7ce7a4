/* toy_async.c — the asynchronous parameter-server simulator of toy_async.h (rules, objectives,
 * staleness and the implicit-momentum slope are specified there).
 *
 * State: the center c[TOY_DIM]; per worker i: its copy x_i (downpour/agn/dynsgd/adag: the center
 * it last pulled, which is also adag's stale center; easgd: its local variable) and the commit
 * count at its last exchange. One loop iteration = one event = one commit:
 *   i = next worker (round-robin: t mod n; random: rng_below(n));
 *   tau = commits - last_i;
 *   compute the commit from x_i, apply it to c (scaled by the rule), pull (x_i = c) or exchange;
 *   commits++; record c; update the momentum sums.
 * The momentum sums keep only d_t = c_t - c_{t-1} of the previous commit, not the trajectory. */
#include "analysis/toy_async.h"
#include <math.h>
#include <string.h>
#include "util/rng.h"
#include "util/util.h"

static const char *const fn_names[] = { "booth", "quadratic" };
static const char *const rule_names[] = { "downpour", "agn", "dynsgd", "adag", "easgd" };
static const char *const order_names[] = { "round-robin", "random" };
#define NELEM(a) (int)(sizeof a / sizeof a[0])

static const double quad_a[TOY_DIM] = { 1.0, 0.1 };

void toy_defaults(toy_cfg_t *c) {
  memset(c, 0, sizeof *c);
  c->fn = TOY_BOOTH; c->rule = TOY_DOWNPOUR; c->order = TOY_ROUND_ROBIN;
  c->workers = 40; c->lambda = 1;
  c->lr = 0.01; c->gamma = 1e-4; c->alpha = 1.0;
  c->commits = 2000; c->seed = 1; c->traj = NULL;
}

const char *toy_fn_name(toy_fn f) { return (int)f >= 0 && (int)f < NELEM(fn_names) ? fn_names[f] : "?"; }
const char *toy_rule_name(toy_rule r) { return (int)r >= 0 && (int)r < NELEM(rule_names) ? rule_names[r] : "?"; }
const char *toy_order_name(toy_order o) { return (int)o >= 0 && (int)o < NELEM(order_names) ? order_names[o] : "?"; }

static int find(const char *const *names, int n, const char *s) {
  for (int i = 0; s && i < n; i++) if (!strcmp(names[i], s)) return i;
  return -1;
}
int toy_fn_parse(const char *s) { return find(fn_names, NELEM(fn_names), s); }
int toy_rule_parse(const char *s) { return find(rule_names, NELEM(rule_names), s); }
int toy_order_parse(const char *s) { return find(order_names, NELEM(order_names), s); }

double toy_value(toy_fn f, const double *x) {
  if (f == TOY_BOOTH) {
    double u = x[0] + 2 * x[1] - 7, v = 2 * x[0] + x[1] - 5;
    return u * u + v * v;
  }
  double s = 0;
  for (int k = 0; k < TOY_DIM; k++) s += 0.5 * quad_a[k] * x[k] * x[k];
  return s;
}

void toy_grad(toy_fn f, const double *x, double *g) {
  if (f == TOY_BOOTH) {
    g[0] = 10 * x[0] + 8 * x[1] - 34;
    g[1] = 8 * x[0] + 10 * x[1] - 38;
    return;
  }
  for (int k = 0; k < TOY_DIM; k++) g[k] = quad_a[k] * x[k];
}

void toy_start(toy_fn f, double *x) {
  for (int k = 0; k < TOY_DIM; k++) x[k] = f == TOY_BOOTH ? 90.0 : 1.0;
}

/* lambda plain SGD steps on w in place. */
static void sgd_steps(toy_fn f, double *w, int lambda, double lr) {
  double g[TOY_DIM];
  for (int s = 0; s < lambda; s++) {
    toy_grad(f, w, g);
    for (int k = 0; k < TOY_DIM; k++) w[k] -= lr * g[k];
  }
}

void toy_run(const toy_cfg_t *c, toy_result_t *r) {
  if (c->workers < 1 || c->workers > TOY_MAX_WORKERS) die("toy_run: workers %d out of [1, %d]", c->workers, TOY_MAX_WORKERS);
  if (c->lambda < 1) die("toy_run: lambda %d < 1", c->lambda);
  if (c->commits < 1) die("toy_run: commits %ld < 1", c->commits);
  if (toy_fn_name(c->fn)[0] == '?' || toy_rule_name(c->rule)[0] == '?' || toy_order_name(c->order)[0] == '?')
    die("toy_run: bad fn/rule/order");
  const int n = c->workers, D = TOY_DIM;
  double *x = xmalloc(sizeof(double) * (size_t)n * D);  /* worker copies */
  long *last = xmalloc(sizeof(long) * (size_t)n);        /* commit count at the last exchange */
  double cen[TOY_DIM], prev_d[TOY_DIM] = { 0 }, w[TOY_DIM];
  toy_start(c->fn, cen);
  for (int i = 0; i < n; i++) { memcpy(x + (size_t)i * D, cen, sizeof cen); last[i] = 0; }
  if (c->traj) memcpy(c->traj, cen, sizeof cen);
  rng_t rng; rng_seed(&rng, c->seed, TOY_RNG_STREAM);

  const long burn = c->commits / 10 > 1 ? c->commits / 10 : 1;  /* first pair: (d_burn, d_burn+1) */
  double num = 0, den = 0, stale_sum = 0;
  long stale_cnt = 0, stale_max = 0, t = 0;
  int diverged = 0;
  for (t = 0; t < c->commits; t++) {
    int i = c->order == TOY_ROUND_ROBIN ? (int)(t % n) : (int)rng_below(&rng, (uint64_t)n);
    double *xi = x + (size_t)i * D;
    long tau = t - last[i];
    if (t >= n || c->commits <= n) { stale_sum += (double)tau; stale_cnt++; }
    if (tau > stale_max) stale_max = tau;
    double old[TOY_DIM]; memcpy(old, cen, sizeof cen);

    if (c->rule == TOY_EASGD) {
      for (int k = 0; k < D; k++) {
        double e = c->alpha * (xi[k] - cen[k]);
        xi[k] -= e;
        cen[k] += e;
      }
      sgd_steps(c->fn, xi, c->lambda, c->lr);
    } else {
      memcpy(w, xi, sizeof w);
      sgd_steps(c->fn, w, c->lambda, c->lr);
      double delta[TOY_DIM];
      int normalise = c->rule == TOY_AGN || c->rule == TOY_ADAG;
      for (int k = 0; k < D; k++) delta[k] = normalise ? (w[k] - xi[k]) / c->lambda : w[k] - xi[k];
      for (int k = 0; k < D; k++) {
        double s = 1.0;
        if (c->rule == TOY_DYNSGD) s = 1.0 / ((double)tau + 1.0);
        else if (c->rule == TOY_ADAG) { double m = cen[k] - xi[k]; s = 1.0 / (m * m / c->gamma + 1.0); }
        cen[k] += delta[k] * s;
      }
      memcpy(xi, cen, sizeof cen);  /* pull */
    }
    last[i] = t + 1;

    if (!isfinite(toy_value(c->fn, cen))) { diverged = 1; t++; break; }  /* also a non-finite center */
    if (c->traj) memcpy(c->traj + (size_t)(t + 1) * D, cen, sizeof cen);
    /* d = c_{t+1} - c_t is d_{t+1}; pair it with d_t once t >= burn. */
    double d[TOY_DIM];
    for (int k = 0; k < D; k++) d[k] = cen[k] - old[k];
    if (t >= burn) for (int k = 0; k < D; k++) { num += d[k] * prev_d[k]; den += prev_d[k] * prev_d[k]; }
    memcpy(prev_d, d, sizeof d);
  }
  memcpy(r->x, cen, sizeof cen);
  r->f = toy_value(c->fn, cen);
  r->commits = t;
  r->staleness_mean = stale_cnt ? stale_sum / (double)stale_cnt : NAN;
  r->staleness_max = stale_max;
  r->momentum_slope = den > 0 && !diverged ? num / den : NAN;
  r->diverged = diverged;
  xfree(x); xfree(last);
}

/* ---- ensemble momentum fit ---------------------------------------------------------------------
 * For each t >= 1 and coordinate k, with half-means A and B of the center trajectories:
 *   y = dA_{t+1},  regressors X = (dA_t, gA_t),  instruments Z = (dB_t, gB_t),  g = grad at the
 *   half-mean (= the mean gradient for an affine gradient). IV estimate (mu, beta) = (Z'X)^-1 Z'y;
 * the reported value averages the A|B and B|A estimates. */
static void iv_fit(const double *y, const double *z, long K, toy_fn fn, double *mu, double *beta) {
  double M00 = 0, M01 = 0, M10 = 0, M11 = 0, v0 = 0, v1 = 0, gy[TOY_DIM], gz[TOY_DIM];
  for (long t = 1; t < K; t++) {
    toy_grad(fn, y + t * TOY_DIM, gy);
    toy_grad(fn, z + t * TOY_DIM, gz);
    for (int k = 0; k < TOY_DIM; k++) {
      double dy = y[t * TOY_DIM + k] - y[(t - 1) * TOY_DIM + k], dn = y[(t + 1) * TOY_DIM + k] - y[t * TOY_DIM + k];
      double dz = z[t * TOY_DIM + k] - z[(t - 1) * TOY_DIM + k];
      M00 += dz * dy; M01 += dz * gy[k]; M10 += gz[k] * dy; M11 += gz[k] * gy[k];
      v0 += dz * dn; v1 += gz[k] * dn;
    }
  }
  double det = M00 * M11 - M01 * M10;
  *mu = (v0 * M11 - M01 * v1) / det;
  *beta = (M00 * v1 - M10 * v0) / det;
}

void toy_momentum_ensemble(const toy_cfg_t *c, int seeds, toy_momentum_t *m) {
  if (seeds < 2 || seeds % 2) die("toy_momentum_ensemble: seeds %d is not even and >= 2", seeds);
  const size_t len = (size_t)(c->commits + 1) * TOY_DIM;
  double *traj = xmalloc(sizeof(double) * len), *half[2];
  for (int h = 0; h < 2; h++) half[h] = xcalloc(len, sizeof(double));
  toy_cfg_t run = *c;
  run.traj = traj;
  memset(m, 0, sizeof *m);
  m->seeds = seeds;
  for (int s = 0; s < seeds; s++) {
    run.seed = c->seed + (uint64_t)s;
    toy_result_t r;
    toy_run(&run, &r);
    if (r.diverged) { m->diverged++; continue; }
    m->slope_runs += r.momentum_slope / seeds;
    double *acc = half[s % 2];
    for (size_t i = 0; i < len; i++) acc[i] += traj[i] / (seeds / 2);
  }
  if (m->diverged || c->commits < 3) {
    m->mu = m->beta = m->slope_runs = NAN;
  } else {
    double mu1, b1, mu2, b2;
    iv_fit(half[0], half[1], c->commits, c->fn, &mu1, &b1);
    iv_fit(half[1], half[0], c->commits, c->fn, &mu2, &b2);
    m->mu = 0.5 * (mu1 + mu2);
    m->beta = 0.5 * (b1 + b2);
  }
  xfree(traj); xfree(half[0]); xfree(half[1]);
}
