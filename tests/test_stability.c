/* test_stability.c — the round-robin maps of EASGD/ADMM (src/analysis/stability.c, EASGD paper Sec. 4):
 * the stage matrices against the paper's printed p = 2 matrices, EASGD symmetry, the round map
 * against the scalar updates and against a dense product, the dgeev spectral radius against the
 * 2x2 closed form, a Gelfand-formula estimate (repeated squaring) and the growth of iterated
 * scalar updates, and the analytic EASGD condition on a few points. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "analysis/stability.h"
#include "tests/harness.h"
#include "util/util.h"

#define MAXN 33 /* 2p+1 for p <= 16 */

static double max_abs_diff(int n, const double *A, const double *B) {
  double m = 0.0;
  for (int k = 0; k < n * n; k++) m = fmax(m, fabs(A[k] - B[k]));
  return m;
}

/* The paper's F11, F21, F31 for p = 2, i = 1, state (lam1, x1, lam2, x2, xc). */
static void test_admm_stage_maps_match_paper_p2(void) {
  const double eta = 0.003, rho = 4.0, d = 1.0 + eta * rho;
  const double F11[25] = { 1, -1, 0, 0, 1,
                           0,  1, 0, 0, 0,
                           0,  0, 1, 0, 0,
                           0,  0, 0, 1, 0,
                           0,  0, 0, 0, 1 };
  const double F21[25] = { 1, 0, 0, 0, 0,
                           eta * rho / d, (1 - eta) / d, 0, 0, eta * rho / d,
                           0, 0, 1, 0, 0,
                           0, 0, 0, 1, 0,
                           0, 0, 0, 0, 1 };
  const double F31[25] = { 1, 0, 0, 0, 0,
                           0, 1, 0, 0, 0,
                           0, 0, 1, 0, 0,
                           0, 0, 0, 1, 0,
                           -0.5, 0.5, -0.5, 0.5, 0 };
  double F[25];
  pdl_admm_stage_map(2, 1, 1, eta, rho, F);
  EXPECT(max_abs_diff(5, F, F11) == 0.0);
  pdl_admm_stage_map(2, 1, 2, eta, rho, F);
  EXPECT(max_abs_diff(5, F, F21) == 0.0);
  pdl_admm_stage_map(2, 1, 3, eta, rho, F);
  EXPECT(max_abs_diff(5, F, F31) == 0.0);
  /* worker 2 acts on (lam2, x2) at indices 2, 3 */
  pdl_admm_stage_map(2, 2, 1, eta, rho, F);
  EXPECT(F[2 * 5 + 2] == 1.0 && F[2 * 5 + 3] == -1.0 && F[2 * 5 + 4] == 1.0 && F[0] == 1.0 && F[1] == 0.0);
}

/* The paper's F^1, F^2 for p = 2, state (x1, x2, xc); every F^i symmetric for any p. */
static void test_easgd_maps_paper_and_symmetric(void) {
  const double eta = 0.3, a = 0.2;
  const double F1[9] = { 1 - eta - a, 0, a,
                         0, 1, 0,
                         a, 0, 1 - a };
  const double F2[9] = { 1, 0, 0,
                         0, 1 - eta - a, a,
                         0, a, 1 - a };
  double F[MAXN * MAXN];
  pdl_easgd_worker_map(2, 1, eta, a, F);
  EXPECT(max_abs_diff(3, F, F1) == 0.0);
  pdl_easgd_worker_map(2, 2, eta, a, F);
  EXPECT(max_abs_diff(3, F, F2) == 0.0);
  const int ps[] = { 1, 3, 8, 16 };
  for (int q = 0; q < 4; q++) {
    int p = ps[q], n = p + 1;
    for (int i = 1; i <= p; i++) {
      pdl_easgd_worker_map(p, i, 0.1 + 0.05 * i, 0.7 - 0.02 * i, F);
      for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) EXPECT(F[r * n + c] == F[c * n + r]);
    }
  }
  /* the ADMM maps are not symmetric (the paper's contrast) */
  pdl_stab_worker_map(PDL_STAB_ADMM, 2, 1, 0.001, 2.5, F);
  EXPECT(F[0 * 5 + 1] != F[1 * 5 + 0]);
}

/* Column j of the round map = one round of the scalar ticks applied to e_j. */
static void test_round_map_matches_scalar_ticks(void) {
  const int ps[] = { 1, 2, 3, 8, 16 };
  double F[MAXN * MAXN], s[MAXN];
  for (int mm = 0; mm < 2; mm++) {
    pdl_stab_method m = mm ? PDL_STAB_ADMM : PDL_STAB_EASGD;
    for (int q = 0; q < 5; q++) {
      int p = ps[q], n = pdl_stab_dim(m, p);
      double eta = m == PDL_STAB_ADMM ? 0.0037 : 0.61, coef = m == PDL_STAB_ADMM ? 3.3 : 0.42;
      pdl_stab_round_map(m, p, eta, coef, F);
      double err = 0.0;
      for (int j = 0; j < n; j++) {
        memset(s, 0, sizeof s);
        s[j] = 1.0;
        for (long t = 0; t < p; t++) pdl_stab_tick(m, p, t, eta, coef, s);
        for (int r = 0; r < n; r++) err = fmax(err, fabs(s[r] - F[r * n + j]));
      }
      /* same arithmetic in a different order: a few ulps of O(1) entries */
      EXPECT_NEAR(err, 0.0, 1e-13, "round map vs scalar eq. 9-13 updates");
    }
  }
}

/* The row-copy composition in pdl_stab_round_map equals the dense product F^p ... F^1. */
static void test_round_map_equals_dense_product(void) {
  double F[MAXN * MAXN], W[MAXN * MAXN], P[MAXN * MAXN], T[MAXN * MAXN];
  for (int mm = 0; mm < 2; mm++) {
    pdl_stab_method m = mm ? PDL_STAB_ADMM : PDL_STAB_EASGD;
    int p = 8, n = pdl_stab_dim(m, p);
    double eta = m == PDL_STAB_ADMM ? 0.001 : 1.2, coef = m == PDL_STAB_ADMM ? 2.5 : 0.3;
    memset(P, 0, sizeof P);
    for (int k = 0; k < n; k++) P[k * n + k] = 1.0;
    for (int i = 1; i <= p; i++) {
      if (m == PDL_STAB_ADMM) {
        for (int stage = 1; stage <= 3; stage++) {
          pdl_admm_stage_map(p, i, stage, eta, coef, W);
          pdl_mat_mul(n, W, P, T);
          memcpy(P, T, sizeof(double) * n * n);
        }
      } else {
        pdl_easgd_worker_map(p, i, eta, coef, W);
        pdl_mat_mul(n, W, P, T);
        memcpy(P, T, sizeof(double) * n * n);
      }
    }
    pdl_stab_round_map(m, p, eta, coef, F);
    /* skipping identity rows changes only the order of exact zero additions */
    EXPECT_NEAR(max_abs_diff(n, F, P), 0.0, 1e-14, "row-copy composition vs dense product");
  }
}

/* EASGD p = 1: the round map is the paper's 2x2 [[1-eta-alpha, alpha], [alpha, 1-alpha]], whose
 * eigenvalues solve (1-eta-alpha-l)(1-alpha-l) = alpha^2. Also a 2x2 with complex eigenvalues. */
static void test_radius_2x2_closed_form(void) {
  const double pts[][2] = { { 0.5, 0.3 }, { 1.9, 0.05 }, { 1.0, 0.7 }, { 2.2, 0.1 }, { 0.3, 1.1 } };
  double F[4];
  for (int k = 0; k < 5; k++) {
    double eta = pts[k][0], a = pts[k][1];
    pdl_stab_round_map(PDL_STAB_EASGD, 1, eta, a, F);
    double T = 2.0 - eta - 2.0 * a, D = (1.0 - eta - a) * (1.0 - a) - a * a;
    double disc = sqrt(T * T - 4.0 * D); /* >= 0: the matrix is symmetric */
    double l1 = 0.5 * (T + disc), l2 = 0.5 * (T - disc);
    EXPECT_NEAR((1 - eta - a - l1) * (1 - a - l1), a * a, 1e-12, "paper's eigenvalue equation, rounding");
    EXPECT_NEAR(pdl_spectral_radius(2, F), fmax(fabs(l1), fabs(l2)), 1e-13, "dgeev vs closed form, rounding");
  }
  const double R[4] = { 0.6, -0.9, 0.9, 0.6 }; /* eigenvalues 0.6 +- 0.9i */
  EXPECT_NEAR(pdl_spectral_radius(2, R), hypot(0.6, 0.9), 1e-14, "complex pair modulus, rounding");
}

/* Gelfand: rho(F) = lim ||F^k||^(1/k); k = 2^40 by normalised repeated squaring. */
static double gelfand_radius(int n, const double *F) {
  double A[MAXN * MAXN], B[MAXN * MAXN], L = 0.0; /* L = log ||F^(2^j)||_max */
  memcpy(A, F, sizeof(double) * n * n);
  const int J = 40;
  for (int j = 0; j <= J; j++) {
    double c = 0.0;
    for (int k = 0; k < n * n; k++) c = fmax(c, fabs(A[k]));
    for (int k = 0; k < n * n; k++) A[k] /= c;
    L += log(c) * ldexp(1.0, -j); /* log ||F^(2^j)|| / 2^j accumulated as a scaled sum */
    if (j == J) break;
    pdl_mat_mul(n, A, A, B);
    memcpy(A, B, sizeof(double) * n * n);
  }
  return exp(L);
}

static void test_radius_vs_gelfand(void) {
  const double pts[][3] = { { 3, 0.001, 2.5 }, { 8, 0.001, 2.5 }, { 3, 0.008, 0.5 }, { 8, 0.0002, 9.0 } };
  double F[MAXN * MAXN];
  for (int k = 0; k < 4; k++) {
    int p = (int)pts[k][0], n = 2 * p + 1;
    pdl_stab_round_map(PDL_STAB_ADMM, p, pts[k][1], pts[k][2], F);
    /* the estimate's error is log(C)/2^40 for the constant C in ||F^k|| <= C k^m rho^k */
    EXPECT_NEAR(pdl_spectral_radius(n, F), gelfand_radius(n, F), 1e-9, "Gelfand estimate at k = 2^40");
  }
  pdl_stab_round_map(PDL_STAB_EASGD, 8, 0.7, 0.79, F);
  EXPECT_NEAR(pdl_spectral_radius(9, F), gelfand_radius(9, F), 1e-9, "Gelfand estimate at k = 2^40");
}

/* Power iteration with the scalar updates: the per-round growth of max|s| tends to the radius. */
static void test_radius_vs_iterated_ticks(void) {
  const int ps[] = { 3, 8 };
  for (int q = 0; q < 2; q++) {
    int p = ps[q], n = 2 * p + 1;
    double s[MAXN], logn = 0.0;
    for (int k = 0; k < n; k++) s[k] = 1.0 + 0.1 * k;
    const long R = 40000;
    for (long r = 0; r < R; r++) {
      for (int k = 0; k < p; k++) pdl_stab_tick(PDL_STAB_ADMM, p, r * p + k, 0.001, 2.5, s);
      if (r == R / 2 - 1 || r == R - 1) {
        double m = 0.0;
        for (int k = 0; k < n; k++) m = fmax(m, fabs(s[k]));
        if (r == R - 1) logn = log(m); /* growth of max|s| from 1 at round R/2 */
        for (int k = 0; k < n; k++) s[k] /= m; /* keep the numbers finite */
      }
    }
    double growth = exp(logn / (R / 2));
    /* a complex dominant pair makes max|s| wobble by a bounded factor C: error ~ log(C)/20000 */
    EXPECT_NEAR(growth, pdl_stab_radius(PDL_STAB_ADMM, p, 0.001, 2.5), 1e-5, "growth over 20000 rounds");
    EXPECT(growth > 1.0);
  }
}

/* Each ADMM tick map has |eig| <= 1 at eta = 0.001, rho = 2.5, yet the composed round does not
 * (Sec. 4: "when these non-symmetric maps are composed ... F can become unstable"). */
static void test_admm_worker_maps_stable_round_not(void) {
  const int ps[] = { 3, 8 };
  double F[MAXN * MAXN];
  for (int q = 0; q < 2; q++) {
    int p = ps[q], n = 2 * p + 1;
    for (int i = 1; i <= p; i++) {
      pdl_stab_worker_map(PDL_STAB_ADMM, p, i, 0.001, 2.5, F);
      /* the untouched coordinates give eigenvalue 1 exactly; dgeev rounding on top */
      EXPECT(pdl_spectral_radius(n, F) <= 1.0 + 1e-12);
    }
    EXPECT(pdl_stab_radius(PDL_STAB_ADMM, p, 0.001, 2.5) > 1.0 + PDL_STAB_TOL);
  }
}

/* Analytic condition vs numeric radius on points well inside / outside (gap >= 0.03, wider than
 * the even-p sliver beyond the curve measured by --check: 2.5e-3 at p = 8). */
static void test_analytic_vs_numeric_points(void) {
  const struct { double eta, alpha; int stable; } pts[] = {
    { 0.5, 0.3, 1 }, { 1.0, 0.5, 1 }, { 1.9, 0.05, 1 }, { 0.05, 0.9, 1 }, { 1.5, 0.3, 1 },
    { 2.1, 0.1, 0 }, { 0.5, 0.9, 0 }, { 1.0, 0.7, 0 }, { -0.1, 0.3, 0 }, { 0.5, -0.05, 0 }, { 1.5, 0.45, 0 },
  };
  const int ps[] = { 1, 3, 8 };
  for (size_t k = 0; k < sizeof pts / sizeof pts[0]; k++) {
    EXPECT(pdl_easgd_stable_analytic(pts[k].eta, pts[k].alpha) == pts[k].stable);
    EXPECT(pdl_easgd_boundary_gap(pts[k].eta, pts[k].alpha) >= 0.03);
    for (int q = 0; q < 3; q++) {
      double r = pdl_stab_radius(PDL_STAB_EASGD, ps[q], pts[k].eta, pts[k].alpha);
      EXPECT_MSG((r <= 1.0 + PDL_STAB_TOL) == pts[k].stable, "p=%d eta=%g alpha=%g radius %.9f", ps[q],
                 pts[k].eta, pts[k].alpha, r);
    }
  }
  EXPECT_NEAR(pdl_easgd_alpha_max(0.0), 1.0, 0.0, "exact: 4/4");
  EXPECT_NEAR(pdl_easgd_alpha_max(2.0), 0.0, 0.0, "exact: 0/2");
  EXPECT_NEAR(pdl_easgd_boundary_gap(1.0, 0.6), 2.0 / 3.0 - 0.6, 1e-15, "vertical distance to the curve");
  EXPECT_NEAR(pdl_easgd_boundary_gap(2.3, 0.5), 0.3, 1e-15, "distance to eta = 2");
}

int main(void) {
  RUN(test_admm_stage_maps_match_paper_p2);
  RUN(test_easgd_maps_paper_and_symmetric);
  RUN(test_round_map_matches_scalar_ticks);
  RUN(test_round_map_equals_dense_product);
  RUN(test_radius_2x2_closed_form);
  RUN(test_radius_vs_gelfand);
  RUN(test_radius_vs_iterated_ticks);
  RUN(test_admm_worker_maps_stable_round_not);
  RUN(test_analytic_vs_numeric_points);
  return harness_exit();
}
