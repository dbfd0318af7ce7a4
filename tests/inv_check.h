/* inv_check.h — what tests/test_inv.c and tests/test_cuda_inv.c share about SPD inverses
 * (contract/inv.h): the test matrices, the two error measures and their stated tolerances, and the
 * matrices that must be refused. Static functions; include after tests/harness.h.
 *
 * Tolerances (eps = FLT_EPSILON = 2^-23, kappa = cond_2(A), X the computed inverse):
 *   forward   ||X - Xref||_max / ||Xref||_max               <= INV_C_FWD * kappa * n * eps
 *             The classic first-order bound for any backward-stable inversion in float (the
 *             float input's own rounding, eps/2 relative, moves the exact inverse by as much).
 *             Xref is the double oracle's inverse of the same float matrix.
 *   residual  ||A X - I||_max / (||A||_max ||X||_max)         <= INV_C_RES * n * eps
 *             For an inverse from a backward-stable Cholesky (potrf + potri, or the same steps
 *             by blocks) |A X - I| is of order n eps |A| |X| whatever kappa is, so this stays
 *             meaningful where the forward bound is vacuous (kappa n eps > 1 at kappa = 1e6,
 *             n = 1153). Computed in double (dgemm) from the float A and X.
 * The constants leave a margin over what the fast paths reach (printed by the tests and quoted in
 * contract/inv.h); a wrong block, triangle or index gives O(1) in both measures. */
#ifndef PDL_TESTS_INV_CHECK_H
#define PDL_TESTS_INV_CHECK_H
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/rng.h"
#include "reference/ref.h"

/* The cases both test files run: sizes x condition numbers, from one seed. */
static const int sizes[] = {1, 33, 257, 1153};
static const double conds[] = {1.0, 1e2, 1e4, 1e6};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
#define NCONDS (int)(sizeof conds / sizeof conds[0])
#define SEED 20250611u

/* One case line: "ok - ..." or "not ok - ..." (the enclosing test then fails too). */
#define CASE(pass, ...) do { int p_ = (pass); printf("%s - ", p_ ? "ok" : "not ok"); printf(__VA_ARGS__); \
  printf("\n"); if (!p_) h_cur_failed++; } while (0)

#define INV_C_FWD 2.0
#define INV_C_RES 1.0

static inline double inv_fwd_tol(double kappa, int n) { return INV_C_FWD * kappa * n * FLT_EPSILON; }
static inline double inv_res_tol(int n) { return INV_C_RES * n * FLT_EPSILON; }

static inline void *inv_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", bytes); exit(1); }
  return p;
}

/* The test matrix of (n, cond, seed) rounded to float (ref_spd_random); with inv_exact != NULL
 * also its double form and exact inverse (caller frees). The float matrices are kept (a copy is
 * returned): the tests ask for the same (n, cond, seed) several times (test_inv: 4 to 5 times each at
 * n = 1153, whose QR and products were ~40% of its CPU time), and ref_spd_random is a pure function
 * of them, so a kept copy is the same bits as a new one. */
struct inv_memo { int n; double cond; uint64_t seed; float *a; };
static struct inv_memo inv_memo_tab[64];
static inline float *inv_spd_float(int n, double cond, uint64_t seed, double **a_d, double **inv_exact) {
  const size_t nn = (size_t)n * n;
  float *a = inv_alloc(nn * sizeof *a);
  if (!a_d && !inv_exact)
    for (int i = 0; i < 64 && inv_memo_tab[i].a; i++)
      if (inv_memo_tab[i].n == n && inv_memo_tab[i].cond == cond && inv_memo_tab[i].seed == seed) {
        memcpy(a, inv_memo_tab[i].a, nn * sizeof *a);
        return a;
      }
  double *ad = inv_alloc(nn * sizeof *ad), *ie = inv_exact ? inv_alloc(nn * sizeof *ie) : NULL;
  ref_spd_random(ad, ie, n, cond, seed);
  for (size_t i = 0; i < nn; i++) a[i] = (float)ad[i];
  if (a_d) *a_d = ad; else free(ad);
  if (inv_exact) *inv_exact = ie;
  int slot = 0;   /* the first free slot, else the oldest entry's (round robin) */
  static int next;
  while (slot < 64 && inv_memo_tab[slot].a && !(inv_memo_tab[slot].n == n && inv_memo_tab[slot].cond == cond
                                                && inv_memo_tab[slot].seed == seed)) slot++;
  if (slot == 64) { slot = next; next = (next + 1) % 64; }
  free(inv_memo_tab[slot].a);
  inv_memo_tab[slot] = (struct inv_memo){n, cond, seed, inv_alloc(nn * sizeof *a)};
  memcpy(inv_memo_tab[slot].a, a, nn * sizeof *a);
  return a;
}

/* ||x - ref||_max / ||ref||_max (NaN anywhere gives Inf). */
static inline double inv_fwd_err(const float *x, const float *ref, size_t nn) {
  double d = 0, m = 0;
  for (size_t i = 0; i < nn; i++) {
    const double e = fabs((double)x[i] - (double)ref[i]);
    if (isnan(e)) return INFINITY;
    if (e > d) d = e;
    if (fabs((double)ref[i]) > m) m = fabs((double)ref[i]);
  }
  return d / m;
}
static inline double inv_fwd_err_d(const double *x, const double *ref, size_t nn) {
  double d = 0, m = 0;
  for (size_t i = 0; i < nn; i++) {
    const double e = fabs(x[i] - ref[i]);
    if (isnan(e)) return INFINITY;
    if (e > d) d = e;
    if (fabs(ref[i]) > m) m = fabs(ref[i]);
  }
  return d / m;
}

/* ||A X - I||_max / (||A||_max ||X||_max), in double. */
static inline double inv_resid(const float *a, const float *x, int n) {
  const size_t nn = (size_t)n * n;
  double *ad = inv_alloc(nn * sizeof *ad), *xd = inv_alloc(nn * sizeof *xd), *p = inv_alloc(nn * sizeof *p);
  double am = 0, xm = 0, r = 0;
  for (size_t i = 0; i < nn; i++) {
    ad[i] = a[i]; xd[i] = x[i];
    if (fabs(ad[i]) > am) am = fabs(ad[i]);
    if (fabs(xd[i]) > xm) xm = fabs(xd[i]);
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, ad, n, xd, n, 0.0, p, n);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      const double e = fabs(p[(size_t)i * n + j] - (i == j ? 1.0 : 0.0));
      if (isnan(e)) { r = INFINITY; break; }
      if (e > r) r = e;
    }
  free(ad); free(xd); free(p);
  return r / (am * xm);
}

/* 1 if x is exactly symmetric. */
static inline int inv_symmetric(const float *x, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (memcmp(&x[(size_t)i * n + j], &x[(size_t)j * n + i], sizeof(float))) return 0;
  return 1;
}

/* ---- matrices that must be refused -------------------------------------------------------------
 * An indefinite matrix whose first non-PD leading minor is exactly k0 (1 <= k0 <= n), with one
 * negative eigenvalue: A = D (I - 2 v v^T) D, D positive diagonal in [0.5, 2], v a unit vector with
 * v_k0^2 = 0.6 and the rest (0.4) spread randomly elsewhere. The leading k x k block of I - 2vv^T
 * has eigenvalues 1 and 1 - 2 ||v_1..k||^2, which is >= 0.2 for k < k0 (mass <= 0.4) and <= -0.2
 * from k0 on; congruence by D keeps each minor's inertia. So potrf's info is k0 in any precision,
 * with a margin of 0.2, and the eigen variant finds exactly one eigenvalue <= 0. */
static inline void inv_indefinite(float *a, int n, int k0, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed, (uint64_t)n * 7919 + (uint64_t)k0);
  double *v = inv_alloc((size_t)n * sizeof *v), *d = inv_alloc((size_t)n * sizeof *d), s = 0;
  for (int i = 0; i < n; i++) {
    v[i] = i == k0 - 1 ? 0.0 : rng_normal(&r);
    s += v[i] * v[i];
    d[i] = 0.5 + 1.5 * rng_uniform(&r);
  }
  for (int i = 0; i < n; i++) v[i] = i == k0 - 1 ? sqrt(0.6) : (s > 0 ? v[i] * sqrt(0.4 / s) : 0.0);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[(size_t)i * n + j] = (float)(d[i] * ((i == j ? 1.0 : 0.0) - 2.0 * v[i] * v[j]) * d[j]);
  free(v); free(d);
}

/* A symmetric matrix whose leading minor of order k0 is exactly singular, all smaller ones PD, and
 * which has a negative eigenvalue too (so every implementation must refuse it): A = L diag(d) L^T,
 * L unit lower bidiagonal with ones below the diagonal, d = 1 except d[k0-1] = 0 and d[n-1] = -1
 * (1 <= k0 < n; n = 1 gives [0]). A is tridiagonal with small integer entries, and every
 * intermediate of a Cholesky or Schur-complement recursion on it is an integer well below 2^24, so
 * float arithmetic meets the zero pivot at k0 exactly: info k0 everywhere. */
static inline void inv_zero_minor(float *a, int n, int k0) {
  const size_t nn = (size_t)n * n;
  memset(a, 0, nn * sizeof *a);
  for (int i = 0; i < n; i++) {
    const float di = i == k0 - 1 ? 0.0f : i == n - 1 && n > 1 ? -1.0f : 1.0f;
    const float dp = i == 0 ? 0.0f : i - 1 == k0 - 1 ? 0.0f : 1.0f; /* d[i-1] */
    a[(size_t)i * n + i] = di + dp;
    if (i > 0) a[(size_t)i * n + i - 1] = a[(size_t)(i - 1) * n + i] = dp;
  }
}

#endif
