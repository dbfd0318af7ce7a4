/* test_cuda_inv.c — cuda_spd_inverse (kernels/cuda/cuda_inv.cu, cuSOLVER) against the double oracle
 * ref_spd_inverse on the matrices and with the tolerances of tests/test_inv.c (tests/inv_check.h):
 * kappa = 1, 1e2, 1e4, 1e6 at n = 1, 33, 257, 1153, each case's measured errors in its ok line;
 * in place; the refusals (indefinite, zero leading minor: info = that order; NaN/Inf: -1); a
 * context released and rebuilt between calls and two host threads inverting at once (each its own
 * stream and cuSOLVER handle). Without a CUDA build with cuSOLVER, or without a usable device, each
 * test prints "skip - <test>: skipped: no CUDA device (...)" and the binary exits 0.
 * kernels/cuda/emu/run.sh also runs it on the CPU emulator (cuSOLVER as LAPACK there).
 * Run on a GPU machine: make && build/tests/test_cuda_inv (PDL_CUDA_SYNC=1 reports a faulting kernel
 * at its launch). */
#include <pthread.h>
#include "tests/harness.h"
#include "tests/inv_check.h"
#if defined(PDL_HAVE_CUDA) && defined(PDL_HAVE_CUSOLVER)
#include "kernels/cuda/cuda_inv.h"
#include "kernels/cuda/cuda_layers.h"
#include "tests/gpu_check.h"
#endif

#define CUDA_INV_TESTS(X) X(test_cuda_vs_ref) X(test_cuda_in_place) X(test_cuda_not_spd) X(test_cuda_contexts)

#if defined(PDL_HAVE_CUDA) && defined(PDL_HAVE_CUSOLVER)
static int g_ndev;
#define NEED_GPU() do { if (g_ndev <= 0) SKIP_NO_GPU("skipped: no CUDA device (%s)", cuda_no_device_reason()); } while (0)


/* cuda_spd_inverse of the host matrix a into the host x; in_place runs it on one device buffer. */
static int cuda_inv_host(float *x, const float *a, int n, int in_place) {
  const size_t nn = (size_t)n * n;
  float *d_a = cuda_alloc_floats(nn), *d_x = in_place ? d_a : cuda_alloc_floats(nn);
  cuda_upload(d_a, a, nn);
  const int info = cuda_spd_inverse(d_x, d_a, n, NULL);
  cuda_download(x, d_x, nn);
  if (!in_place) {
    float *back = inv_alloc(nn * sizeof *back);
    cuda_download(back, d_a, nn);
    EXPECT_MSG(memcmp(back, a, nn * sizeof *a) == 0, "n=%d: cuda_spd_inverse modified its input", n);
    free(back);
    cuda_free(d_x);
  }
  cuda_free(d_a);
  return info;
}

static void test_cuda_vs_ref(void) {
  NEED_GPU();
  for (int si = 0; si < NSIZES; si++)
    for (int ci = 0; ci < NCONDS; ci++) {
      const int n = sizes[si];
      if (n == 1 && ci > 0) continue; /* [1] whatever cond was asked */
      const double kap = n > 1 ? conds[ci] : 1.0;
      const size_t nn = (size_t)n * n;
      float *a = inv_spd_float(n, conds[ci], SEED, NULL, NULL);
      float *ref = inv_alloc(nn * sizeof *ref), *x = inv_alloc(nn * sizeof *x);
      const int ir = ref_spd_inverse(ref, a, n, NULL), ix = cuda_inv_host(x, a, n, 0);
      const double e = inv_fwd_err(x, ref, nn), te = inv_fwd_tol(kap, n);
      const double r = inv_resid(a, x, n), tr = inv_res_tol(n);
      const int sym = inv_symmetric(x, n);
      CASE(ir == 0 && ix == 0 && e <= te && r <= tr && sym,
           "cuda_spd_inverse n=%d kappa=%.0e: fwd %.2e <= %.2e, resid %.2e <= %.2e%s (info %d)", n, kap, e, te, r, tr,
           sym ? "" : ", NOT SYMMETRIC", ix);
      free(a); free(ref); free(x);
    }
}

static void test_cuda_in_place(void) {
  NEED_GPU();
  for (int si = 0; si < NSIZES; si++) {
    const int n = sizes[si];
    const size_t nn = (size_t)n * n;
    float *a = inv_spd_float(n, 1e2, SEED + 2, NULL, NULL), *x = inv_alloc(nn * sizeof *x), *y = inv_alloc(nn * sizeof *y);
    const int io = cuda_inv_host(x, a, n, 0), ii = cuda_inv_host(y, a, n, 1);
    /* within the forward tolerance rather than bit for bit: cuSOLVER does not promise the same bits
     * across calls (its algorithm may depend on the workspace it gets), and a broken in-place path
     * gives O(1) */
    EXPECT_MSG(io == 0 && ii == 0 && inv_fwd_err(y, x, nn) <= inv_fwd_tol(1e2, n), "n=%d: in place differs by %.2e "
               "(info %d %d)", n, inv_fwd_err(y, x, nn), io, ii);
    free(a); free(x); free(y);
  }
}

/* The refusals of test_inv.c's test_not_spd: the same returns as the oracle. */
static void test_cuda_not_spd(void) {
  NEED_GPU();
  for (int si = 0; si < NSIZES; si++) {
    const int n = sizes[si];
    const size_t nn = (size_t)n * n;
    float *a = inv_alloc(nn * sizeof *a), *x = inv_alloc(nn * sizeof *x);
    const int half = (n / 2) & ~15;
    const int k0s[] = {1, half > 0 ? half : 1, half + 1 <= n ? half + 1 : n, (3 * n + 3) / 4, n};
    int bad = 0;
    for (int k = 0; k < 5; k++) {
      const int k0 = k0s[k];
      inv_indefinite(a, n, k0, SEED + (uint64_t)k);
      const int ic = cuda_inv_host(x, a, n, 0);
      EXPECT_MSG(ic == k0, "indefinite n=%d: cuda %d, want %d", n, ic, k0);
      bad += ic != k0;
      if (k0 < n || n == 1) {
        inv_zero_minor(a, n, k0);
        const int zc = cuda_inv_host(x, a, n, 0);
        EXPECT_MSG(zc == k0, "zero minor n=%d: cuda %d, want %d", n, zc, k0);
        bad += zc != k0;
      }
    }
    const size_t where[3] = {(size_t)(n - 1) * n, (size_t)(n / 2) * n + n / 2, (size_t)(n - 1)};
    const float what[3] = {NAN, INFINITY, -INFINITY};
    for (int w = 0; w < 3; w++) {
      float *g = inv_spd_float(n, 1e2, SEED, NULL, NULL);
      g[where[w]] = what[w];
      const int fc = cuda_inv_host(x, g, n, 0), fi = cuda_inv_host(x, g, n, 1);
      EXPECT_MSG(fc == -1 && fi == -1, "%g at %zu, n=%d: cuda %d, in place %d", (double)what[w], where[w], n, fc, fi);
      bad += fc != -1 || fi != -1;
      free(g);
    }
    CASE(!bad, "cuda refusals n=%d: indefinite and zero leading minor of order %d, %d, %d, %d, %d give info = that "
               "order; NaN, +Inf, -Inf give -1", n, k0s[0], k0s[1], k0s[2], k0s[3], k0s[4]);
    free(a); free(x);
  }
}

typedef struct { const float *a; float *x; int n, info; } inv_job_t;

static void *inv_job(void *p) {
  inv_job_t *j = p;
  cuda_set_device(0);
  j->info = cuda_inv_host(j->x, j->a, j->n, 0);
  cuda_thread_release();
  return NULL;
}

/* A released context is rebuilt with a fresh cuSOLVER handle; two host threads (each its own
 * stream and handle) agree with one thread (within the forward tolerance, as in test_cuda_in_place;
 * a handle on the wrong stream or a shared workspace gives O(1)). */
static void test_cuda_contexts(void) {
  NEED_GPU();
  const int n = 300;
  const size_t nn = (size_t)n * n;
  float *a = inv_spd_float(n, 1e3, SEED + 3, NULL, NULL), *b = inv_spd_float(n, 1e5, SEED + 4, NULL, NULL);
  float *xa = inv_alloc(nn * sizeof *xa), *xb = inv_alloc(nn * sizeof *xb), *y = inv_alloc(nn * sizeof *y);
  EXPECT(cuda_inv_host(xa, a, n, 0) == 0);
  cuda_thread_release();
  EXPECT(cuda_inv_host(xb, b, n, 0) == 0);
  EXPECT(cuda_inv_host(y, a, n, 0) == 0);
  EXPECT_MSG(inv_fwd_err(y, xa, nn) <= inv_fwd_tol(1e3, n), "after cuda_thread_release: differs by %.2e",
             inv_fwd_err(y, xa, nn));
  inv_job_t j[2] = {{a, inv_alloc(nn * sizeof(float)), n, -9}, {b, inv_alloc(nn * sizeof(float)), n, -9}};
  pthread_t th[2];
  for (int t = 0; t < 2; t++) EXPECT(pthread_create(&th[t], NULL, inv_job, &j[t]) == 0);
  for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
  EXPECT_MSG(j[0].info == 0 && j[1].info == 0, "threads: info %d %d", j[0].info, j[1].info);
  EXPECT_MSG(inv_fwd_err(j[0].x, xa, nn) <= inv_fwd_tol(1e3, n) && inv_fwd_err(j[1].x, xb, nn) <= inv_fwd_tol(1e5, n),
             "two host threads differ from one: %.2e %.2e", inv_fwd_err(j[0].x, xa, nn), inv_fwd_err(j[1].x, xb, nn));
  free(a); free(b); free(xa); free(xb); free(y); free(j[0].x); free(j[1].x);
}

#else /* built without CUDA or cuSOLVER */
#define DEFINE_SKIP(fn) static void fn(void) { SKIP_NO_GPU("skipped: no CUDA device (built without CUDA/cuSOLVER)"); }
CUDA_INV_TESTS(DEFINE_SKIP)
#endif

int main(void) {
#if defined(PDL_HAVE_CUDA) && defined(PDL_HAVE_CUSOLVER)
  g_ndev = gpu_test_devices();
#endif
  RUN(test_cuda_vs_ref);
  RUN(test_cuda_in_place);
  RUN(test_cuda_not_spd);
  RUN(test_cuda_contexts);
#if defined(PDL_HAVE_CUDA) && defined(PDL_HAVE_CUSOLVER)
  if (g_ndev > 0) cuda_thread_release();
#endif
  return harness_exit();
}
