/* inv_ref.c — the oracle of contract/inv.h: SPD inversion in double by LAPACKE (dpotrf + dpotri, and
 * dsyevd for the eigen variant), plus the SPD test matrices the tests and `pdl inverse` use.
 * Allocates per call; speed is not its job, but `pdl inverse` times it as the baseline, so it
 * calls LAPACK the plain way (column-major, no transposing copies) on as many OpenBLAS threads as
 * the process has set: one in pdl and the tests (cpu_blas_init), as for every kernel.
 * A row-major symmetric matrix is its own column-major transpose, so the column-major calls see
 * the same matrix; 'L' there is the row-major upper triangle. */
#include <lapacke.h>
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "util/rng.h"
#include "reference/ref.h"
#include "util/util.h"

/* Copy the column-major lower triangle (row-major upper) onto the other one. */
static void mirror_d(double *x, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) x[(size_t)j * n + i] = x[(size_t)i * n + j];
}

static int finite_f(const float *a, size_t nn) {
  for (size_t i = 0; i < nn; i++)
    if (!isfinite(a[i])) return 0;
  return 1;
}

int ref_spd_inverse_f64(double *inv, const double *a, int n) {
  SHAPE_ASSERT(n >= 1 && inv && a);
  const size_t nn = (size_t)n * n;
  for (size_t i = 0; i < nn; i++)
    if (!isfinite(a[i])) return -1;
  if (inv != a) memcpy(inv, a, nn * sizeof *inv);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, inv, n);
  if (info == 0) info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', n, inv, n);
  SHAPE_ASSERT(info >= 0); /* < 0 is a bad argument, a bug here */
  if (info == 0) mirror_d(inv, n);
  return (int)info;
}

int ref_spd_inverse(float *inv, const float *a, int n, float *scratch) {
  (void)scratch;
  SHAPE_ASSERT(n >= 1 && inv && a);
  const size_t nn = (size_t)n * n;
  if (!finite_f(a, nn)) return -1;
  double *d = xmalloc(nn * sizeof *d);
  for (size_t i = 0; i < nn; i++) d[i] = a[i];
  int info = ref_spd_inverse_f64(d, d, n);
  if (info == 0)
    for (size_t i = 0; i < nn; i++) inv[i] = (float)d[i];
  xfree(d);
  return info;
}

int ref_spd_inverse_eig(float *inv, const float *a, int n, float *scratch) {
  (void)scratch;
  SHAPE_ASSERT(n >= 1 && inv && a);
  const size_t nn = (size_t)n * n;
  if (!finite_f(a, nn)) return -1;
  double *v = xmalloc(nn * sizeof *v), *w = xmalloc((size_t)n * sizeof *w), *x = xmalloc(nn * sizeof *x);
  for (size_t i = 0; i < nn; i++) v[i] = a[i];
  /* Column-major: column j of v is the eigenvector of w[j], w ascending. */
  lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', n, v, n, w);
  SHAPE_ASSERT(info >= 0);
  int ret = info > 0 ? -2 : 0;
  for (int j = 0; ret == 0 && j < n && w[j] <= 0; j++) ret = j + 1;
  if (ret == 0) {
    /* Scale column j by 1/sqrt(w[j]); then inv = v v^T is symmetric by construction (dsyrk). */
    for (int j = 0; j < n; j++) {
      const double s = 1.0 / sqrt(w[j]);
      for (int i = 0; i < n; i++) v[(size_t)j * n + i] *= s;
    }
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, 1.0, v, n, 0.0, x, n);
    mirror_d(x, n);
    for (size_t i = 0; i < nn; i++) inv[i] = (float)x[i];
  }
  xfree(v); xfree(w); xfree(x);
  return ret;
}

void ref_spd_random(double *a, double *inv_exact, int n, double cond, uint64_t seed) {
  SHAPE_ASSERT(n >= 1 && a && cond >= 1);
  const size_t nn = (size_t)n * n;
  double *q = xmalloc(nn * sizeof *q), *tau = xmalloc((size_t)n * sizeof *tau), *d = xmalloc((size_t)n * sizeof *d);
  double *qs = xmalloc(nn * sizeof *qs);
  rng_t r;
  rng_seed(&r, seed, (uint64_t)n);
  for (size_t i = 0; i < nn; i++) q[i] = rng_normal(&r);
  /* Column-major QR. Q times diag(sign(R_jj)) is Haar-distributed (Mezzadri 2007); the sign is
   * read before dorgqr overwrites R. */
  CHECK(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, q, n, tau) == 0, "dgeqrf of a %dx%d Gaussian matrix", n, n);
  for (int j = 0; j < n; j++) d[j] = q[(size_t)j * n + j] < 0 ? -1.0 : 1.0;
  CHECK(LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, q, n, tau) == 0, "dorgqr of order %d", n);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) q[(size_t)j * n + i] *= d[j];
  for (int pass = 0; pass < (inv_exact ? 2 : 1); pass++) {
    double *out = pass ? inv_exact : a;
    /* qs = Q diag(sqrt(lambda)) (1/sqrt for the inverse), out = qs qs^T, exactly symmetric. */
    for (int j = 0; j < n; j++) {
      const double lam = n > 1 ? pow(cond, -(double)j / (n - 1)) : 1.0, s = sqrt(pass ? 1.0 / lam : lam);
      for (int i = 0; i < n; i++) qs[(size_t)j * n + i] = q[(size_t)j * n + i] * s;
    }
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, 1.0, qs, n, 0.0, out, n);
    mirror_d(out, n);
  }
  xfree(q); xfree(tau); xfree(d); xfree(qs);
}
