/* cpu_smm.c — the small GEMMs of the Winograd convolutions (cpu_winograd.c): per transform plane
 * a 32x32 to 128x64 matrix times 16 to 98 tiles, dozens of them per group of images.
 *
 * With libxsmm (built with PDL_HAVE_XSMM: Debian's libxsmm-dev, installed by ci/install-deps.sh)
 * each shape is a JIT-compiled kernel that reads its operands where they lie: no packing, no
 * dispatch per call beyond one lookup per plan. OpenBLAS packs both operands on every call; on
 * these shapes its Haswell kernels (AVX2) ran at 80-90 GFLOP/s where libxsmm's ran at 120-125,
 * and its SkylakeX small-matrix kernels (AVX-512) at 165-210 against libxsmm's 190-230 (one
 * Xeon, 1 thread, same run; docs/DESIGN.md, "small GEMMs"). Without libxsmm, or for a shape it
 * does not JIT, or with PDL_SMM=openblas, the plan falls back to cblas_sgemm; results then differ
 * from libxsmm's in rounding only (different summation order).
 *
 * The JIT targets the instruction set the build targets: a build without AVX-512 (-march=haswell,
 * or an AVX2-only machine) asks libxsmm for AVX2 code ("hsw") unless LIBXSMM_TARGET says
 * otherwise, so an AVX2 build on an AVX-512 machine measures AVX2 code throughout. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#ifdef PDL_HAVE_XSMM
#include <libxsmm.h>
#endif
#include "kernels/cpu/cpu.h"
#include "util/util.h"
#include "util/env.h"

static int smm_xsmm = -1; /* 1: libxsmm, 0: OpenBLAS; -1 until read from PDL_SMM */
static pthread_once_t smm_once = PTHREAD_ONCE_INIT;

static void smm_from_env(void) {
  const char *e = env_get("PDL_SMM");
#ifdef PDL_HAVE_XSMM
  const int have = 1;
#else
  const int have = 0;
#endif
  if (!e || !*e || !strcmp(e, "auto")) smm_xsmm = have;
  else if (!strcmp(e, "openblas")) smm_xsmm = 0;
  else if (!strcmp(e, "libxsmm")) {
    if (!have) die("PDL_SMM=libxsmm: this build has no libxsmm (install libxsmm-dev and rebuild)");
    smm_xsmm = 1;
  } else die("PDL_SMM='%s': expected auto, libxsmm or openblas", e);
#ifdef PDL_HAVE_XSMM
#if !defined(__AVX512F__) && defined(__AVX2__)
  if (smm_xsmm && !env_get("LIBXSMM_TARGET")) {
    libxsmm_init(); /* first: its initialisation sets the target from CPUID */
    libxsmm_set_target_arch("hsw");
  }
#endif
#endif
}

int cpu_smm_libxsmm(void) {
  pthread_once(&smm_once, smm_from_env);
  return smm_xsmm;
}

void cpu_smm_set_libxsmm(int on) {
  pthread_once(&smm_once, smm_from_env);
#ifdef PDL_HAVE_XSMM
  smm_xsmm = on != 0;
#else
  (void)on;
  smm_xsmm = 0;
#endif
}

const char *cpu_smm_name(void) { return cpu_smm_libxsmm() ? "libxsmm" : "openblas"; }

/* A transposed A (the data gradient, U^T dM) with few columns (the 7x7 layer's 9 pooled tiles at
 * batch 1) stays on sgemm: there libxsmm's kernel ran at 0.55-0.7x of sgemm's on both AVX2 and
 * AVX-512 (bench/core/smm_shapes.c). Untransposed, with those 9 columns, it was 0.8x on AVX2 and
 * 1.5x on AVX-512: left to libxsmm. */
#define SMM_MIN_N 16

/* Row-major C[m][n] (beta)= op(A) B, op(A) = A [m][k] (lda) or, transa, A^T with A stored [k][m];
 * B [k][n] (ldb). In libxsmm's column-major terms C^T (n x m) = B^T (n x k) op(A)^T (k x m): its
 * A operand is our B, its B operand our A, transposed (LIBXSMM_GEMM_FLAG_TRANS_B) when transa. */
void cpu_smm_plan(cpu_smm_t *p, int transa, int m, int n, int k, int lda, int ldb, int ldc, float beta) {
  p->transa = transa; p->m = m; p->n = n; p->k = k; p->lda = lda; p->ldb = ldb; p->ldc = ldc; p->beta = beta;
  p->fn = NULL;
#ifdef PDL_HAVE_XSMM
  if (cpu_smm_libxsmm() && (!transa || n >= SMM_MIN_N) && m > 0 && k > 0 && (beta == 0.0f || beta == 1.0f)) {
    const libxsmm_blasint xm = n, xn = m, xk = k, xlda = ldb, xldb = lda, xldc = ldc;
    const float alpha = 1.0f;
    const int flags = transa ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
    libxsmm_smmfunction f = libxsmm_smmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, &alpha, &beta, &flags, NULL);
    p->fn = (void *)f;
  }
#endif
  if (!p->fn) cpu_blas_init();
}

void cpu_smm(const cpu_smm_t *p, const float *A, const float *B, float *C) {
  if (p->m <= 0 || p->n <= 0) return;
#ifdef PDL_HAVE_XSMM
  if (p->fn) { ((libxsmm_smmfunction)p->fn)(B, A, C); return; }
#endif
  cblas_sgemm(CblasRowMajor, p->transa ? CblasTrans : CblasNoTrans, CblasNoTrans, p->m, p->n, p->k, 1.0f, A, p->lda, B,
              p->ldb, p->beta, C, p->ldc);
}
