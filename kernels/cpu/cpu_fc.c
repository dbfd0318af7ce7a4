/* cpu_fc.c — fully connected forward/backward with OpenBLAS sgemm, threads splitting outputs.
 *   out[B][N] = in[B][M] x w[N][M]^T + b     (bias fused: rows filled with b, GEMM with beta = 1)
 *   dw[N][M] += dout^T[N][B] x in[B][M],  db[N] += column sums of dout,  din[B][M] = dout x w
 * Each thread owns a contiguous block of output features (forward, dw, db) or of input features
 * (din), so there is no reduction and results are bit-identical for a given thread count.
 * Small layers (few flops) run on the calling thread only. Batch 1 calls sgemv/sger: OpenBLAS
 * 0.3.21's sgemm packs the whole weight matrix even when one side is a vector, tripling the
 * traffic of what is a memory-bound product. */
#include <cblas.h>
#include <omp.h>
#include "core/layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define FC_PAR_MIN_MACS (1L << 16)

static int fc_threads(int B, int M, int N) {
  int T = cpu_get_threads();
  return (long)B * M * N < FC_PAR_MIN_MACS ? 1 : T;
}

static void fc_fwd_part(float *out, const float *in, const float *w, const float *b, int B, int M, int N, int t,
                        int nt) {
  int n0, n1;
  cpu_split(N, nt, t, &n0, &n1);
  if (n1 <= n0) return;
  for (int i = 0; i < B; i++)
    for (int j = n0; j < n1; j++) out[(size_t)i * N + j] = b[j];
  if (B == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n1 - n0, M, 1.0f, w + (size_t)n0 * M, M, in, 1, 1.0f, out + n0, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n1 - n0, M, 1.0f, in, M, w + (size_t)n0 * M, M, 1.0f,
                out + n0, N);
}

void cpu_fc_forward(float *out, const float *in, const float *w, const float *b, int B, int M, int N) {
  /* in [B][M], w [N][M], b [N], out [B][N] */
  SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  cpu_blas_init();
  const int T = fc_threads(B, M, N);
  if (T == 1) { fc_fwd_part(out, in, w, b, B, M, N, 0, 1); return; }
#pragma omp parallel num_threads(T)
  fc_fwd_part(out, in, w, b, B, M, N, omp_get_thread_num(), omp_get_num_threads());
}

static void fc_bwd_part(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                        int M, int N, int t, int nt) {
  int n0, n1, m0, m1;
  cpu_split(N, nt, t, &n0, &n1);
  cpu_split(M, nt, t, &m0, &m1);
  if (n1 > n0) {
    if (B == 1)
      cblas_sger(CblasRowMajor, n1 - n0, M, 1.0f, dout + n0, 1, in, 1, dw + (size_t)n0 * M, M);
    else
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n1 - n0, M, B, 1.0f, dout + n0, N, in, M, 1.0f,
                  dw + (size_t)n0 * M, M);
    for (int i = 0; i < B; i++) {
      const float *d = dout + (size_t)i * N;
#pragma omp simd
      for (int j = n0; j < n1; j++) db[j] += d[j];
    }
  }
  if (din && m1 > m0) {
    if (B == 1)
      cblas_sgemv(CblasRowMajor, CblasTrans, N, m1 - m0, 1.0f, w + m0, M, dout, 1, 0.0f, din + m0, 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, m1 - m0, N, 1.0f, dout, N, w + m0, M, 0.0f,
                  din + m0, M);
  }
}

void cpu_fc_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                     int M, int N) {
  /* dout [B][N], in/din [B][M], w/dw [N][M], db [N] */
  SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  cpu_blas_init();
  const int T = fc_threads(B, M, N);
  if (T == 1) { fc_bwd_part(din, dw, db, dout, in, w, B, M, N, 0, 1); return; }
#pragma omp parallel num_threads(T)
  fc_bwd_part(din, dw, db, dout, in, w, B, M, N, omp_get_thread_num(), omp_get_num_threads());
}
