/* bench/core/smm_shapes.c — OpenBLAS vs libxsmm on the Winograd GEMMs of the reference net, one
 * thread (issue 19: "tile-GEMM shapes where OpenBLAS's Haswell/Zen kernels are weak"). Each row
 * is one layer's GEMMs for a whole batch as cpu_winograd.c runs them: nx transform planes per
 * group of images, groups x planes calls, operands in the planes' layout (odd-line strides):
 *   fwd    M[Co][T]  = U[Co][Ci] V[Ci][T]                       (NN)
 *   dV     dV[Ci][T] = U^T M                                    (A transposed)
 *   dU NT  dU[Co][Ci] += M[Co][T] V[Ci][T]^T                    (the former weight-gradient call)
 *   dU NN  dU[Co][Ci] += M[Co][T] Vt[T][Ci]                     (now: V transposed first, not timed here)
 * Build and run (libxsmm-dev; -march=haswell with OPENBLAS_CORETYPE=Haswell LIBXSMM_TARGET=hsw for
 * the AVX2 kernels of both):
 *   gcc -O2 -march=native bench/core/smm_shapes.c -o /tmp/smm_shapes -lxsmm -lopenblas -lm -ldl -lpthread
 *   OPENBLAS_NUM_THREADS=1 /tmp/smm_shapes
 * Best of 7 passes, ms per batch and GFLOP/s. Results and the decision: docs/DESIGN.md ("small
 * GEMMs"). */
#include <cblas.h>
#include <libxsmm.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static size_t wp(size_t n) { /* as cpu_winograd.c: whole lines, an odd number of them */
  n = (n + 15) / 16 * 16;
  return (n / 16) % 2 ? n : n + 16;
}
static float *rnd(size_t n) {
  float *x = aligned_alloc(64, (n * 4 + 63) / 64 * 64);
  for (size_t i = 0; i < n; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
  return x;
}
/* row-major C[m][n] (beta)= op(A) B through libxsmm (column-major: C^T = B^T op(A)^T) */
static libxsmm_smmfunction xs(int transa, int m, int n, int k, int lda, int ldb, int ldc, float beta) {
  const libxsmm_blasint xm = n, xn = m, xk = k, xa = ldb, xb = lda, xc = ldc;
  const float alpha = 1;
  const int fl = transa ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  return libxsmm_smmdispatch(xm, xn, xk, &xa, &xb, &xc, &alpha, &beta, &fl, NULL);
}

static void layer(const char *name, int nx, int Co, int Ci, int T, int G) {
  const size_t us = wp((size_t)Co * Ci), vs = wp((size_t)Ci * T), ms = wp((size_t)Co * T);
  float *U = rnd(nx * us), *V = rnd(nx * vs), *M = rnd(nx * ms), *dU = rnd(nx * us), *X = rnd(nx * (vs > ms ? vs : ms));
  libxsmm_smmfunction ffwd = xs(0, Co, T, Ci, Ci, T, T, 0), fdv = xs(1, Ci, T, Co, Ci, T, T, 0),
                      fdu = xs(0, Co, Ci, T, T, Ci, Ci, 1);
  double best[7];
  for (int i = 0; i < 7; i++) best[i] = 1e30;
  for (int rep = 0; rep < 7; rep++) {
    double t[8];
    t[0] = now();
    for (int g = 0; g < G; g++)
      for (int x = 0; x < nx; x++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Co, T, Ci, 1, U + x * us, Ci, V + x * vs, T, 0, X + x * ms, T);
    t[1] = now();
    for (int g = 0; g < G; g++)
      for (int x = 0; x < nx; x++) ffwd(V + x * vs, U + x * us, X + x * ms);
    t[2] = now();
    for (int g = 0; g < G; g++)
      for (int x = 0; x < nx; x++)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Ci, T, Co, 1, U + x * us, Ci, M + x * ms, T, 0, X + x * vs, T);
    t[3] = now();
    for (int g = 0; g < G; g++)
      for (int x = 0; x < nx; x++) fdv(M + x * ms, U + x * us, X + x * vs);
    t[4] = now();
    for (int g = 0; g < G; g++)
      for (int x = 0; x < nx; x++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Co, Ci, T, 1, M + x * ms, T, V + x * vs, T, 1, dU + x * us, Ci);
    t[5] = now();
    for (int g = 0; g < G; g++) /* V stands in for Vt: same size, the layout only changes ldb */
      for (int x = 0; x < nx; x++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Co, Ci, T, 1, M + x * ms, T, V + x * vs, Ci, 1, dU + x * us, Ci);
    t[6] = now();
    for (int g = 0; g < G; g++)
      for (int x = 0; x < nx; x++) fdu(V + x * vs, M + x * ms, dU + x * us);
    t[7] = now();
    for (int i = 0; i < 7; i++)
      if (t[i + 1] - t[i] < best[i]) best[i] = t[i + 1] - t[i];
  }
  const double gf = 2.0 * Co * Ci * T * nx * G / 1e9;
  printf("%-22s fwd %6.2f %6.2f | dV %6.2f %6.2f | dU NT %6.2f, NN %6.2f %6.2f ms   GFLOP/s: fwd %3.0f %3.0f dV %3.0f %3.0f dU %3.0f, %3.0f %3.0f\n",
         name, best[0] * 1e3, best[1] * 1e3, best[2] * 1e3, best[3] * 1e3, best[4] * 1e3, best[5] * 1e3, best[6] * 1e3,
         gf / best[0], gf / best[1], gf / best[2], gf / best[3], gf / best[4], gf / best[5], gf / best[6]);
  free(U); free(V); free(M); free(dU); free(X);
}

int main(void) {
  libxsmm_init();
  printf("per layer and batch: OpenBLAS, libxsmm (dU: OpenBLAS NT, then NN OpenBLAS, libxsmm)\n");
  /* the reference net (ppasgd-cifar on 28x28x1): planes, Co, Ci, tiles per GEMM, GEMM groups */
  layer("conv2 F(4x4) b128", 36, 32, 32, 98, 64);
  layer("conv3 F(4x4) b128", 36, 64, 32, 64, 32);
  layer("conv4 F(2x2)+pool b128", 16, 128, 64, 72, 16);
  layer("conv2 F(4x4) b1", 36, 32, 32, 49, 1);
  layer("conv3 F(2x2) b1", 16, 64, 32, 49, 1);
  layer("conv4 F(2x2)+pool b1", 16, 128, 64, 9, 1);
  return 0;
}
