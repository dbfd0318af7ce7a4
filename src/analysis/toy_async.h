/* toy_async.h — a deterministic simulator of n asynchronous workers and one parameter server on a
 * toy objective (Hermans 2017, docs/PAPERS.md §4: DOWNPOUR/AGN/DynSGD/ADAG and the Booth script's
 * asynchronous EASGD), for `pdl toy` and tests/test_toy_async.c. Plain C, no threads: the
 * asynchrony is a schedule of "events", one worker at a time.
 *
 * Conventions:
 *   - The server holds the center; worker i holds its own copy x_i and the commit count at its
 *     last exchange with the server. Every worker starts with x_i = center = the start point,
 *     exchanged at commit 0.
 *   - One event of worker i = one commit: it computes its update from its own (stale) copy,
 *     commits it, and pulls the new center (EASGD: exchanges the elastic difference, see below).
 *     So "commits" counts events, and the center has one trajectory entry per commit.
 *   - Staleness of a commit = server commits since this worker's last exchange. With n workers in
 *     round-robin order every commit after the first n has staleness exactly n - 1 (Hermans' H1);
 *     with random order (worker drawn uniformly per event) it is geometric, P(k) = (1/n)(1-1/n)^k,
 *     mean n - 1. staleness_mean averages the commits after the first n (each worker's first
 *     commit in round-robin order only reflects its place in the start order).
 *   - Implicit momentum. Mitliagkas et al. (Hermans eq. 1.1) predict, for DOWNPOUR,
 *       E[d_{t+1}] = (1 - 1/n) E[d_t] - (lr/n) E grad(theta_t),   d_t = theta_t - theta_{t-1},
 *     with geometric staleness, i.e. RANDOM order (round-robin staleness is constant, not
 *     geometric). It is an expectation over the schedule, exact for an affine gradient (the
 *     quadratic; then it holds from the first commit), and it is measured that way by
 *     toy_momentum_ensemble below: many seeds, small lr, the quadratic.
 *     momentum_slope is the per-run statistic sum <d_{t+1}, d_t> / sum <d_t, d_t> over the center
 *     trajectory, pooled over coordinates and t >= K/10 (burn-in). It does NOT estimate 1 - 1/n:
 *     every commit is a fresh exact gradient, so consecutive steps are nearly equal and the slope
 *     follows the trajectory's slow decay (random order, lr 0.01, 20000 commits: 0.999 for
 *     n = 2..16). Measured numbers: tests/test_toy_async.c.
 *   - Deterministic: the same config gives bit-identical results (fixed operation order; random
 *     order draws from rng_t seeded with (seed, TOY_RNG_STREAM)).
 *   - Divergence: the run stops at the first commit after which f(center) is not finite (f
 *     overflows, or a coordinate is non-finite); diverged = 1 and commits = the commits made.
 *
 * Rules (lr = learning rate, lambda = local steps per commit, W = the worker's local iterate):
 *   downpour  W = pulled copy, lambda SGD steps; commit W - pulled (the un-normalised sum, as
 *             docs/PAPERS.md: lambda = 1 is plain DOWNPOUR, commit = -lr grad(copy));
 *             server: center += commit
 *   agn       as downpour, but commit (W - pulled) / lambda                      (Hermans eq. 4.1)
 *   dynsgd    as downpour, server: center += commit / (staleness + 1)          (Jiang et al.)
 *   adag      as agn, server per coordinate: center += Delta / (gamma^-1 (center - stale)^2 + 1),
 *             stale = the center this worker last pulled (Hermans Ch. 5, element-wise form)
 *   easgd     asynchronous EASGD with moving rate alpha (Booth script: rho = 100, lr 0.01, so
 *             alpha = 1): e = alpha (x_i - center) with the current center; x_i -= e;
 *             center += e; then lambda local SGD steps on x_i. With alpha = 1 the exchange swaps
 *             x_i and the center; in round-robin order from identical starts the center then
 *             takes one plain SGD step every n + 1 commits (tests/test_toy_async.c).
 *
 * Objectives (value and exact gradient):
 *   booth      f(x, y) = (x + 2y - 7)^2 + (2x + y - 5)^2, minimum 0 at (1, 3); start (90, 90).
 *              Hessian [[10, 8], [8, 10]], eigenvalues 18 and 2.
 *   quadratic  f(x) = 0.5 (a_1 x_1^2 + a_2 x_2^2), a = (1, 0.1), minimum 0 at 0; start (1, 1). */
#ifndef PDL_TOY_ASYNC_H
#define PDL_TOY_ASYNC_H
#include <stdint.h>

#define TOY_DIM 2            /* both objectives are 2-D */
#define TOY_MAX_WORKERS 4096
#define TOY_RNG_STREAM 0x746f79u

typedef enum { TOY_BOOTH = 0, TOY_QUADRATIC } toy_fn;
typedef enum { TOY_DOWNPOUR = 0, TOY_AGN, TOY_DYNSGD, TOY_ADAG, TOY_EASGD } toy_rule;
typedef enum { TOY_ROUND_ROBIN = 0, TOY_RANDOM } toy_order;

typedef struct {
  toy_fn fn;
  toy_rule rule;
  toy_order order;
  int workers;           /* 1..TOY_MAX_WORKERS */
  int lambda;            /* local steps per commit, >= 1 */
  double lr, gamma, alpha;
  long commits;          /* total commits (events), >= 1 */
  uint64_t seed;         /* used by TOY_RANDOM only */
  double *traj;          /* optional: (commits + 1) * TOY_DIM doubles, the center after each commit
                            (row 0 = start); rows after a divergence stop are left untouched */
} toy_cfg_t;

typedef struct {
  double x[TOY_DIM];     /* final center */
  double f;              /* f(final center) */
  long commits;          /* commits made (fewer than asked when diverged) */
  double staleness_mean; /* over commits after the first n (all commits if there are <= n) */
  long staleness_max;
  double momentum_slope; /* NaN when there are no pairs or sum <d_t, d_t> = 0 */
  int diverged;
} toy_result_t;

/* Defaults of `pdl toy`: booth, downpour, round-robin, 40 workers, lambda 1, lr 0.01,
 * gamma 1e-4, alpha 1, 2000 commits (the Booth script's stop), seed 1, no trajectory. */
void toy_defaults(toy_cfg_t *c);

const char *toy_fn_name(toy_fn f);
const char *toy_rule_name(toy_rule r);
const char *toy_order_name(toy_order o);
/* Name -> enum value, -1 for an unknown name. */
int toy_fn_parse(const char *s);
int toy_rule_parse(const char *s);
int toy_order_parse(const char *s);

double toy_value(toy_fn f, const double *x);
void toy_grad(toy_fn f, const double *x, double *g);
void toy_start(toy_fn f, double *x);

/* Runs c->commits events; dies on an invalid config. */
void toy_run(const toy_cfg_t *c, toy_result_t *r);

/* The implicit momentum of eq. 1.1 measured over the schedule's randomness: runs `seeds` (even,
 * >= 2) copies of c with seeds c->seed, c->seed + 1, ... (c->traj is ignored), averages the
 * center trajectories of the even and of the odd runs separately (half-means A and B), and fits
 *   d_{t+1} = mu d_t + beta grad(theta_t)      over t = 1 .. K-1, pooled over coordinates
 * on each half-mean with the other half-mean's (d_t, grad(theta_t)) as instruments (split-sample
 * IV: the schedule noise in A's regressors is independent of B, so the estimate has no errors-
 * in-variables bias; plain least squares on the mean is biased by O(1/seeds)). Expected for
 * DOWNPOUR (lambda = 1), random order, affine gradient: mu = 1 - 1/n, beta = -lr/n. No burn-in:
 * the expectation identity holds from the first commit (every copy starts at the start point),
 * and the early transient is what separates mu from the gradient term. */
typedef struct {
  double mu, beta;       /* NaN when a run diverged */
  double slope_runs;     /* mean over the runs of toy_result_t.momentum_slope, for comparison */
  int seeds, diverged;   /* runs, and how many of them diverged */
} toy_momentum_t;
void toy_momentum_ensemble(const toy_cfg_t *c, int seeds, toy_momentum_t *m);

#endif
