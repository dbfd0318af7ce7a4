/* stability.c — the linear maps of asynchronous EASGD and ADMM in the round-robin scheme on
 * F(x) = x^2/2 (so grad F(x) = x), their spectral radius (LAPACKE_dgeev) and their iteration.
 * EASGD paper (Zhang, Choromanska, LeCun 2015), Sec. 4, eq. 9-13, Fig. 1.
 *
 * Global clock t = 0, 1, 2, ...; at tick t exactly one worker is active: i with t mod p = i-1.
 * One round = p ticks, workers 1, 2, ..., p in that order.
 *
 * ADMM (eq. 9-11), state s = (lam_1, x_1, ..., lam_p, x_p, xc) in R^{2p+1}; lam_i is the Lagrange
 * multiplier already re-parametrised by the paper as lam_i <- lam_i / rho. At a tick where worker
 * i is active (the others' lam_j, x_j are unchanged):
 *   (9)  lam_i' = lam_i - (x_i - xc)
 *   (10) x_i'   = (x_i - eta*grad F(x_i) + eta*rho*(lam_i' + xc)) / (1 + eta*rho)
 *              = ((1 - eta) x_i + eta*rho*lam_i' + eta*rho*xc) / (1 + eta*rho)
 *   (11) xc'    = (1/p) sum_{j=1..p} (x_j' - lam_j')        (every tick, with the newest values)
 * Each equation changes one coordinate and is one matrix, applied in this order:
 *   F1i: identity except row lam_i = e_{lam_i} - e_{x_i} + e_xc
 *   F2i: identity except row x_i   = [eta*rho, 1 - eta, eta*rho] / (1 + eta*rho) on (lam_i, x_i, xc)
 *   F3i: identity except row xc    = -1/p on every lam_j, +1/p on every x_j, 0 on xc
 * so the tick map is F^i = F3i F2i F1i (for p = 2, i = 1 these are exactly the paper's matrices),
 * and the round map is F = F3p F2p F1p ... F31 F21 F11.
 *
 * EASGD (eq. 12-13), state s = (x_1, ..., x_p, xc) in R^{p+1}, alpha = eta*rho. At a tick where
 * worker i is active (the others' x_j are unchanged), both updates read the old values:
 *   (12) x_i' = x_i - eta*grad F(x_i) - alpha*(x_i - xc) = (1 - eta - alpha) x_i + alpha*xc
 *   (13) xc'  = xc + alpha*(x_i - xc)                    = alpha*x_i + (1 - alpha) xc
 * F^i is the identity except the 2x2 block [[1-eta-alpha, alpha], [alpha, 1-alpha]] on (x_i, xc),
 * which is symmetric; the round map is F = F^p ... F^1.
 *
 * Composition: F starts as the identity and each stage G (in time order) is applied as F <- G F.
 * pdl_mat_mul is a dense product; the stage matrices differ from the identity in one row (ADMM)
 * or two (EASGD), so pdl_stab_round_map copies the identity rows instead of multiplying them.
 * pdl_stab_tick implements the same updates as scalar code, independently of the matrices. */
#include "analysis/stability.h"
#include <lapacke.h>
#include <math.h>
#include <string.h>
#include "util/util.h"

const char *pdl_stab_method_name(pdl_stab_method m) { return m == PDL_STAB_EASGD ? "easgd" : "admm"; }

int pdl_stab_dim(pdl_stab_method m, int p) { return m == PDL_STAB_EASGD ? p + 1 : 2 * p + 1; }

static void identity(int n, double *F) {
  memset(F, 0, sizeof(double) * (size_t)n * (size_t)n);
  for (int k = 0; k < n; k++) F[(size_t)k * n + k] = 1.0;
}

void pdl_easgd_worker_map(int p, int i, double eta, double alpha, double *F) {
  SHAPE_ASSERT(p >= 1 && i >= 1 && i <= p);
  int n = p + 1, xi = i - 1, c = p;
  identity(n, F);
  F[(size_t)xi * n + xi] = 1.0 - eta - alpha;
  F[(size_t)xi * n + c] = alpha;
  F[(size_t)c * n + xi] = alpha;
  F[(size_t)c * n + c] = 1.0 - alpha;
}

void pdl_admm_stage_map(int p, int i, int stage, double eta, double rho, double *F) {
  SHAPE_ASSERT(p >= 1 && i >= 1 && i <= p && stage >= 1 && stage <= 3);
  int n = 2 * p + 1, li = 2 * (i - 1), xi = li + 1, c = 2 * p;
  identity(n, F);
  if (stage == 1) {                      /* eq. 9 */
    F[(size_t)li * n + xi] = -1.0;
    F[(size_t)li * n + c] = 1.0;
  } else if (stage == 2) {               /* eq. 10 */
    double d = 1.0 + eta * rho;
    F[(size_t)xi * n + li] = eta * rho / d;
    F[(size_t)xi * n + xi] = (1.0 - eta) / d;
    F[(size_t)xi * n + c] = eta * rho / d;
  } else {                               /* eq. 11 */
    for (int j = 0; j < p; j++) {
      F[(size_t)c * n + 2 * j] = -1.0 / p;
      F[(size_t)c * n + 2 * j + 1] = 1.0 / p;
    }
    F[(size_t)c * n + c] = 0.0;
  }
}

void pdl_mat_mul(int n, const double *A, const double *B, double *C) {
  SHAPE_ASSERT(C != A && C != B);
  for (int r = 0; r < n; r++) {
    double *crow = C + (size_t)r * n;
    memset(crow, 0, sizeof(double) * (size_t)n);
    for (int k = 0; k < n; k++) {
      double a = A[(size_t)r * n + k];
      if (a == 0.0) continue;
      const double *brow = B + (size_t)k * n;
      for (int j = 0; j < n; j++) crow[j] += a * brow[j];
    }
  }
}

/* F <- G F. Rows of G equal to the unit row e_r leave row r of F unchanged (exactly, as in a dense
 * product: 1*x + 0*y = x); the other rows are computed from the old F. tmp: [n][n]. */
static void apply_left(int n, const double *G, double *F, double *tmp) {
  memcpy(tmp, F, sizeof(double) * (size_t)n * (size_t)n);
  for (int r = 0; r < n; r++) {
    const double *g = G + (size_t)r * n;
    int unit = 1;
    for (int k = 0; k < n && unit; k++) unit = g[k] == (k == r ? 1.0 : 0.0);
    if (unit) continue;
    double *frow = F + (size_t)r * n;
    memset(frow, 0, sizeof(double) * (size_t)n);
    for (int k = 0; k < n; k++) {
      if (g[k] == 0.0) continue;
      const double *trow = tmp + (size_t)k * n;
      for (int j = 0; j < n; j++) frow[j] += g[k] * trow[j];
    }
  }
}

void pdl_stab_worker_map(pdl_stab_method m, int p, int i, double eta, double coef, double *F) {
  if (m == PDL_STAB_EASGD) { pdl_easgd_worker_map(p, i, eta, coef, F); return; }
  int n = 2 * p + 1;
  double *G = xmalloc(sizeof(double) * (size_t)n * n);   /* [n][n] stage matrix */
  double *tmp = xmalloc(sizeof(double) * (size_t)n * n); /* [n][n] */
  identity(n, F);
  for (int stage = 1; stage <= 3; stage++) {
    pdl_admm_stage_map(p, i, stage, eta, coef, G);
    apply_left(n, G, F, tmp);
  }
  xfree(G); xfree(tmp);
}

void pdl_stab_round_map(pdl_stab_method m, int p, double eta, double coef, double *F) {
  SHAPE_ASSERT(p >= 1);
  int n = pdl_stab_dim(m, p);
  double *G = xmalloc(sizeof(double) * (size_t)n * n);   /* [n][n] stage matrix */
  double *tmp = xmalloc(sizeof(double) * (size_t)n * n); /* [n][n] */
  identity(n, F);
  for (int i = 1; i <= p; i++) {
    if (m == PDL_STAB_EASGD) {
      pdl_easgd_worker_map(p, i, eta, coef, G);
      apply_left(n, G, F, tmp);
    } else {
      for (int stage = 1; stage <= 3; stage++) {
        pdl_admm_stage_map(p, i, stage, eta, coef, G);
        apply_left(n, G, F, tmp);
      }
    }
  }
  xfree(G); xfree(tmp);
}

double pdl_spectral_radius(int n, const double *A) {
  SHAPE_ASSERT(n >= 1);
  double *a = xmalloc(sizeof(double) * (size_t)n * n); /* [n][n] copy: dgeev overwrites it */
  double *wr = xmalloc(sizeof(double) * (size_t)n);    /* [n] real parts */
  double *wi = xmalloc(sizeof(double) * (size_t)n);    /* [n] imaginary parts */
  memcpy(a, A, sizeof(double) * (size_t)n * n);
  lapack_int info = LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', 'N', n, a, n, wr, wi, NULL, 1, NULL, 1);
  if (info != 0) die("LAPACKE_dgeev failed (info %d) on a %dx%d matrix", (int)info, n, n);
  double r = 0.0;
  for (int k = 0; k < n; k++) {
    double mod = hypot(wr[k], wi[k]);
    if (mod > r || isnan(mod)) r = mod;
  }
  xfree(a); xfree(wr); xfree(wi);
  return r;
}

double pdl_stab_radius(pdl_stab_method m, int p, double eta, double coef) {
  int n = pdl_stab_dim(m, p);
  double *F = xmalloc(sizeof(double) * (size_t)n * n); /* [n][n] round map */
  pdl_stab_round_map(m, p, eta, coef, F);
  double r = pdl_spectral_radius(n, F);
  xfree(F);
  return r;
}

void pdl_stab_tick(pdl_stab_method m, int p, long t, double eta, double coef, double *s) {
  SHAPE_ASSERT(p >= 1 && t >= 0);
  int i0 = (int)(t % p); /* active worker i = i0 + 1 */
  if (m == PDL_STAB_EASGD) {
    double alpha = coef, xi = s[i0], xc = s[p];
    s[i0] = xi - eta * xi - alpha * (xi - xc); /* eq. 12, grad F(x) = x */
    s[p] = xc + alpha * (xi - xc);             /* eq. 13, reads the old x_i */
    return;
  }
  double rho = coef;
  double *lam = &s[2 * i0], *x = &s[2 * i0 + 1], *xc = &s[2 * p];
  *lam = *lam - (*x - *xc);                                            /* eq. 9 */
  *x = (*x - eta * *x + eta * rho * (*lam + *xc)) / (1.0 + eta * rho); /* eq. 10 */
  double sum = 0.0;                                                    /* eq. 11 */
  for (int j = 0; j < p; j++) sum += s[2 * j + 1] - s[2 * j];
  *xc = sum / p;
}

double pdl_easgd_alpha_max(double eta) { return (4.0 - 2.0 * eta) / (4.0 - eta); }

int pdl_easgd_stable_analytic(double eta, double alpha) {
  return eta >= 0.0 && eta <= 2.0 && alpha >= 0.0 && alpha <= pdl_easgd_alpha_max(eta);
}

double pdl_easgd_boundary_gap(double eta, double alpha) {
  double g = fmin(fabs(eta), fabs(eta - 2.0));
  g = fmin(g, fabs(alpha));
  if (eta >= 0.0 && eta <= 2.0) g = fmin(g, fabs(alpha - pdl_easgd_alpha_max(eta)));
  return g;
}
