/* test_inv.c — the SPD inversions of contract/inv.h on the CPU: the double oracle (ref_spd_inverse)
 * against exact inverses, then the fast float path (cpu_spd_inverse) and the eigen variant
 * (ref_spd_inverse_eig) against the oracle, on A = Q diag(lambda) Q^T with kappa = 1, 1e2, 1e4,
 * 1e6 at n = 1, 33, 257, 1153 (the sizes straddle the fast path's base case and its splits), plus
 * a sweep of orders around the block boundaries, thread counts and bit-identical repeats, in-place
 * calls, and the refusals: an indefinite matrix and an exactly singular leading minor (info = the
 * minor's order, exactly), NaN and Inf (-1). Tolerances: tests/inv_check.h. Every (n, kappa) case
 * prints its measured errors in its ok line.
 * pdl-test: cpu=24 (tests/run.sh: its place in make test's pool, costliest first) */
#include <float.h>
#include "kernels/cpu/cpu_layers.h"
#include "reference/ref.h"
#include "kernels/cpu/cpu.h"
#include "tests/harness.h"
#include "tests/inv_check.h"


typedef int (*inv_fn)(float *, const float *, int, float *);

/* kappa of the test matrix: n = 1 is [1] whatever was asked. */
static double kappa_of(int n, double cond) { return n > 1 ? cond : 1.0; }

static float *scratch_for(int n) { return inv_alloc(cpu_spd_inverse_scratch_floats(n) * sizeof(float)); }

/* The oracle: its double core against the exact inverse at double precision, and its float
 * entry point against the same exact inverse (the float input's rounding moves the inverse by
 * kappa eps / 2, hence the float forward bound), plus the residual. */
static void test_oracle_vs_exact(void) {
  for (int si = 0; si < NSIZES; si++)
    for (int ci = 0; ci < NCONDS; ci++) {
      const int n = sizes[si];
      if (n == 1 && ci > 0) continue; /* [1] again */
      const double kap = kappa_of(n, conds[ci]);
      const size_t nn = (size_t)n * n;
      double *ad, *ie;
      float *a = inv_spd_float(n, conds[ci], SEED, &ad, &ie);
      double *xd = inv_alloc(nn * sizeof *xd);
      float *x = inv_alloc(nn * sizeof *x), *ief = inv_alloc(nn * sizeof *ief);
      const int i64 = ref_spd_inverse_f64(xd, ad, n), i32 = ref_spd_inverse(x, a, n, NULL);
      for (size_t i = 0; i < nn; i++) ief[i] = (float)ie[i];
      const double e64 = inv_fwd_err_d(xd, ie, nn), t64 = INV_C_FWD * kap * n * DBL_EPSILON;
      const double e32 = inv_fwd_err(x, ief, nn), t32 = inv_fwd_tol(kap, n);
      const double r = inv_resid(a, x, n), tr = inv_res_tol(n);
      CASE(i64 == 0 && i32 == 0 && e64 <= t64 && e32 <= t32 && r <= tr && inv_symmetric(x, n),
           "oracle n=%d kappa=%.0e: f64 vs exact %.2e <= %.2e, f32 vs exact %.2e <= %.2e, resid %.2e <= %.2e "
           "(info %d %d)", n, kap, e64, t64, e32, t32, r, tr, i64, i32);
      free(ad); free(ie); free(a); free(xd); free(x); free(ief);
    }
}

/* fn against the oracle on every (n, kappa) at T threads (the name says T where it matters). */
static void check_vs_ref(const char *name, inv_fn fn, int T) {
  cpu_set_threads(T);
  for (int si = 0; si < NSIZES; si++)
    for (int ci = 0; ci < NCONDS; ci++) {
      const int n = sizes[si];
      if (n == 1 && ci > 0) continue; /* [1] again */
      const double kap = kappa_of(n, conds[ci]);
      const size_t nn = (size_t)n * n;
      float *a = inv_spd_float(n, conds[ci], SEED, NULL, NULL), *a0 = inv_alloc(nn * sizeof *a0);
      memcpy(a0, a, nn * sizeof *a);
      float *ref = inv_alloc(nn * sizeof *ref), *x = inv_alloc(nn * sizeof *x), *s = scratch_for(n);
      const int ir = ref_spd_inverse(ref, a, n, NULL), ix = fn(x, a, n, s);
      const double e = inv_fwd_err(x, ref, nn), te = inv_fwd_tol(kap, n);
      const double r = inv_resid(a, x, n), tr = inv_res_tol(n);
      const int sym = inv_symmetric(x, n), kept = memcmp(a, a0, nn * sizeof *a) == 0;
      CASE(ir == 0 && ix == 0 && e <= te && r <= tr && sym && kept,
           "%s n=%d kappa=%.0e: fwd %.2e <= %.2e, resid %.2e <= %.2e%s%s (info %d)", name, n, kap, e, te, r,
           tr, sym ? "" : ", NOT SYMMETRIC", kept ? "" : ", INPUT MODIFIED", ix);
      free(a); free(a0); free(ref); free(x); free(s);
    }
}

static void test_cpu_vs_ref(void) { check_vs_ref("cpu_spd_inverse T=2", cpu_spd_inverse, 2); }
static void test_eig_vs_ref(void) { check_vs_ref("ref_spd_inverse_eig", ref_spd_inverse_eig, 1); }

/* Orders around the recursion's boundaries (base case 128, splits rounded to 16, triangle leaves
 * of 64), at kappa = 1e3 on 2 threads. */
static void test_cpu_order_sweep(void) {
  static const int ns[] = {2, 3, 15, 16, 17, 63, 64, 65, 127, 128, 129, 130, 143, 144, 145, 191, 200, 255, 256,
                           300, 383, 513, 640};
  cpu_set_threads(2);
  double worst_e = 0, worst_r = 0;
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    const int n = ns[k];
    const size_t nn = (size_t)n * n;
    float *a = inv_spd_float(n, 1e3, SEED + (uint64_t)n, NULL, NULL);
    float *ref = inv_alloc(nn * sizeof *ref), *x = inv_alloc(nn * sizeof *x), *s = scratch_for(n);
    const int ir = ref_spd_inverse(ref, a, n, NULL), ix = cpu_spd_inverse(x, a, n, s);
    const double e = inv_fwd_err(x, ref, nn), r = inv_resid(a, x, n);
    EXPECT_MSG(ir == 0 && ix == 0 && e <= inv_fwd_tol(1e3, n) && r <= inv_res_tol(n) && inv_symmetric(x, n),
               "n=%d: info %d/%d fwd %.2e (tol %.2e) resid %.2e (tol %.2e) symmetric %d", n, ir, ix, e,
               inv_fwd_tol(1e3, n), r, inv_res_tol(n), inv_symmetric(x, n));
    if (e / inv_fwd_tol(1e3, n) > worst_e) worst_e = e / inv_fwd_tol(1e3, n);
    if (r / inv_res_tol(n) > worst_r) worst_r = r / inv_res_tol(n);
    free(a); free(ref); free(x); free(s);
  }
  printf("  # orders 2..640 at kappa 1e3: worst fwd %.3f of its tolerance, worst resid %.3f\n", worst_e, worst_r);
}

/* 1, 2 and 3 threads: each within tolerance, each repeat bit-identical, scratch bounds kept. */
static void test_cpu_threads(void) {
  const int n = 700;
  const size_t nn = (size_t)n * n;
  float *a = inv_spd_float(n, 1e4, SEED + 1, NULL, NULL);
  float *ref = inv_alloc(nn * sizeof *ref), *x0 = inv_alloc(nn * sizeof *x0), *x1 = inv_alloc(nn * sizeof *x1);
  EXPECT(ref_spd_inverse(ref, a, n, NULL) == 0);
  const size_t ns = cpu_spd_inverse_scratch_floats(n);
  float *s = inv_alloc((ns + 64) * sizeof *s);
  for (int T = 1; T <= 3; T++) {
    cpu_set_threads(T);
    for (int i = 0; i < 64; i++) s[ns + i] = 1234.5f;
    EXPECT(cpu_spd_inverse(x0, a, n, s) == 0);
    EXPECT(cpu_spd_inverse(x1, a, n, s) == 0);
    EXPECT_MSG(memcmp(x0, x1, nn * sizeof *x0) == 0, "T=%d: repeat not bit-identical", T);
    EXPECT_MSG(inv_fwd_err(x0, ref, nn) <= inv_fwd_tol(1e4, n), "T=%d: fwd %.2e", T, inv_fwd_err(x0, ref, nn));
    int canary = 1;
    for (int i = 0; i < 64; i++) canary &= s[ns + i] == 1234.5f;
    EXPECT_MSG(canary, "T=%d: wrote past cpu_spd_inverse_scratch_floats(%d) = %zu", T, n, ns);
  }
  free(a); free(ref); free(x0); free(x1); free(s);
}

/* inv == a: the same bits as out of place, for every implementation. */
static void test_in_place(void) {
  static const struct { const char *name; inv_fn fn; } impls[] = {
    {"ref", ref_spd_inverse}, {"cpu", cpu_spd_inverse}, {"eig", ref_spd_inverse_eig}};
  cpu_set_threads(2);
  for (int si = 0; si < NSIZES; si++) {
    const int n = sizes[si];
    const size_t nn = (size_t)n * n;
    float *a = inv_spd_float(n, 1e2, SEED + 2, NULL, NULL), *x = inv_alloc(nn * sizeof *x);
    float *b = inv_alloc(nn * sizeof *b), *s = scratch_for(n);
    for (int k = 0; k < 3; k++) {
      memcpy(b, a, nn * sizeof *a);
      const int io = impls[k].fn(x, a, n, s), ii = impls[k].fn(b, b, n, s);
      EXPECT_MSG(io == 0 && ii == 0 && memcmp(x, b, nn * sizeof *x) == 0, "%s n=%d: in place differs (info %d %d)",
                 impls[k].name, n, io, ii);
    }
    free(a); free(x); free(b); free(s);
  }
}

/* The refusals, for every implementation and size: potrf's info exactly (the first non-PD leading
 * minor) from ref and cpu, the count of eigenvalues <= 0 from eig, -1 for NaN/Inf anywhere. */
static void test_not_spd(void) {
  cpu_set_threads(2);
  for (int si = 0; si < NSIZES; si++) {
    const int n = sizes[si];
    const size_t nn = (size_t)n * n;
    float *a = inv_alloc(nn * sizeof *a), *x = inv_alloc(nn * sizeof *x), *s = scratch_for(n);
    /* first minor, around the top split of the fast path (n/2 rounded down to 16, then the next),
     * inside the second half, the last */
    const int split = (n / 2) & ~15;
    const int k0s[] = {1, split > 0 ? split : 1, split + 1 <= n ? split + 1 : n, (3 * n + 3) / 4, n};
    int bad = 0;
    for (int k = 0; k < 5; k++) {
      const int k0 = k0s[k];
      inv_indefinite(a, n, k0, SEED + (uint64_t)k);
      const int ir = ref_spd_inverse(x, a, n, NULL), ic = cpu_spd_inverse(x, a, n, s);
      const int ie = ref_spd_inverse_eig(x, a, n, NULL);
      EXPECT_MSG(ir == k0 && ic == k0 && ie == 1, "indefinite n=%d k0=%d: ref %d cpu %d (want %d), eig %d (want 1)",
                 n, k0, ir, ic, k0, ie);
      bad += ir != k0 || ic != k0 || ie != 1;
      if (k0 < n || n == 1) {
        inv_zero_minor(a, n, k0);
        const int zr = ref_spd_inverse(x, a, n, NULL), zc = cpu_spd_inverse(x, a, n, s);
        const int ze = ref_spd_inverse_eig(x, a, n, NULL);
        EXPECT_MSG(zr == k0 && zc == k0 && ze >= 1, "zero minor n=%d k0=%d: ref %d cpu %d (want %d), eig %d (want >= 1)",
                   n, k0, zr, zc, k0, ze);
        bad += zr != k0 || zc != k0 || ze < 1;
      }
    }
    /* NaN in the lower triangle (never read by the factorizations), +Inf on the diagonal, -Inf in
     * the upper triangle */
    const size_t where[3] = {(size_t)(n - 1) * n, (size_t)(n / 2) * n + n / 2, (size_t)(n - 1)};
    const float what[3] = {NAN, INFINITY, -INFINITY};
    for (int w = 0; w < 3; w++) {
      float *g = inv_spd_float(n, 1e2, SEED, NULL, NULL);
      g[where[w]] = what[w];
      const int fr = ref_spd_inverse(x, g, n, NULL), fc = cpu_spd_inverse(x, g, n, s);
      const int fe = ref_spd_inverse_eig(x, g, n, NULL), fd = cpu_spd_inverse(g, g, n, s);
      EXPECT_MSG(fr == -1 && fc == -1 && fe == -1 && fd == -1, "%g at %zu, n=%d: ref %d cpu %d eig %d cpu in place %d",
                 (double)what[w], where[w], n, fr, fc, fe, fd);
      bad += fr != -1 || fc != -1 || fe != -1 || fd != -1;
      free(g);
    }
    CASE(!bad, "refusals n=%d: indefinite and zero leading minor of order %d, %d, %d, %d, %d give info = that "
               "order (ref, cpu) and eig >= 1; NaN, +Inf, -Inf give -1", n, k0s[0], k0s[1], k0s[2], k0s[3], k0s[4]);
    free(a); free(x); free(s);
  }
}

int main(void) {
  cpu_blas_init();
  RUN(test_oracle_vs_exact);
  RUN(test_cpu_vs_ref);
  RUN(test_eig_vs_ref);
  RUN(test_cpu_order_sweep);
  RUN(test_cpu_threads);
  RUN(test_in_place);
  RUN(test_not_spd);
  return harness_exit();
}
