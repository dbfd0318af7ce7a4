/* cpu_fc.c — fully connected forward/backward with OpenBLAS sgemm, threads splitting outputs.
 *   out[B][N] = in[B][M] x w[N][M]^T + b     (bias fused: rows filled with b, GEMM with beta = 1)
 *   dw[N][M] += dout^T[N][B] x in[B][M],  db[N] += column sums of dout,  din[B][M] = dout x w
 * Each thread owns a contiguous block of output features (forward, dw, db) or of input features
 * (din), so there is no reduction and results are bit-identical for a given thread count.
 * Small layers (few flops) run on the calling thread only.
 * Batch 1 is memory-bound (each weight is used once): OpenBLAS 0.3.21's sgemm packs the whole
 * weight matrix even when one side is a vector, and its sgemv / sger streamed the 1152 x 256 fc
 * of the reference net at 30 / 46 GB/s on one Xeon thread, against 60 for the momentum update.
 * So batch 1 has its own loops: the forward takes 4 rows of w per pass over the input (4 dot
 * products), the backward on one thread is one pass over the rows (dw row += dout[n] in, din +=
 * dout[n] w row, 4 rows at a time), which reads w and dw once. On several threads each thread
 * takes a contiguous block of rows for everything (dw, or the fused update, and its rows' share
 * of din into a partial), and the partials are added in thread order: threads that wrote
 * interleaved parts of the same rows (din split by columns) ran 3-5x slower than one thread on
 * the Xeon (each core's prefetches pull in lines the other is writing); a partial is M floats
 * per extra thread, kept per calling thread (fc_parts). */
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define FC_PAR_MIN_MACS (1L << 16)

/* n floats for the din partials of batch 1 on several threads: one buffer per calling thread
 * (replicas train in their own pthreads), grown on demand, freed when that thread exits. */
typedef struct { float *p; size_t n; } parts_t;
static pthread_key_t parts_key;
static pthread_once_t parts_once = PTHREAD_ONCE_INIT;
static void parts_free(void *v) { parts_t *b = v; xfree(b->p); xfree(b); }
static void parts_init(void) {
  if (pthread_key_create(&parts_key, parts_free)) die("cpu_fc: pthread_key_create failed");
}
static float *fc_parts(size_t n) {
  pthread_once(&parts_once, parts_init);
  parts_t *b = pthread_getspecific(parts_key);
  if (!b) { b = xcalloc(1, sizeof *b); pthread_setspecific(parts_key, b); }
  if (b->n < n) { xfree(b->p); b->p = xmalloc((n ? n : 1) * sizeof(float)); b->n = n; }
  return b->p;
}

/* Thread t's partial of din at batch 1: din itself for thread 0, parts + (t - 1) M for the others
 * (NULL without din). */
static float *din_part(float *din, float *parts, int M, int t) {
  return !din ? NULL : t == 0 ? din : parts + (size_t)(t - 1) * M;
}

/* After every thread of the team wrote its partial: din = the sum of the nt partials in thread
 * order, each thread adding up its share of the columns. */
static void parts_reduce(float *restrict din, const float *restrict parts, int M, int t, int nt) {
  if (!din || nt < 2) return;
#pragma omp barrier
  int m0, m1;
  cpu_split(M, nt, t, &m0, &m1);
  for (int u = 1; u < nt; u++) {
    const float *q = parts + (size_t)(u - 1) * M;
#pragma omp simd
    for (int m = m0; m < m1; m++) din[m] += q[m];
  }
}

static int fc_threads(int B, int M, int N) {
  int T = cpu_get_threads();
  return (long)B * M * N < FC_PAR_MIN_MACS ? 1 : T;
}

/* out[n] += w[n][:] . x for n in [n0, n1): 4 rows per pass over x */
static void gemv_rows(float *restrict out, const float *restrict x, const float *restrict w, int M, int n0, int n1) {
  int n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float *w0 = w + (size_t)n * M, *w1 = w0 + M, *w2 = w1 + M, *w3 = w2 + M;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int m = 0; m < M; m++) {
      const float v = x[m];
      s0 += w0[m] * v; s1 += w1[m] * v; s2 += w2[m] * v; s3 += w3[m] * v;
    }
    out[n] += s0; out[n + 1] += s1; out[n + 2] += s2; out[n + 3] += s3;
  }
  for (; n < n1; n++) {
    const float *wr = w + (size_t)n * M;
    float s0 = 0;
#pragma omp simd reduction(+ : s0)
    for (int m = 0; m < M; m++) s0 += wr[m] * x[m];
    out[n] += s0;
  }
}

/* Batch 1: din[m0, m1) += sum over rows [n0, n1) of d[n] w[n][m0:m1], 4 rows at a time. */
static void din_rows(float *restrict din, const float *restrict d, const float *restrict w, int M, int n0, int n1,
                     int m0, int m1) {
  int n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float *w0 = w + (size_t)n * M, *w1 = w0 + M, *w2 = w1 + M, *w3 = w2 + M;
    const float d0 = d[n], d1 = d[n + 1], d2 = d[n + 2], d3 = d[n + 3];
#pragma omp simd
    for (int m = m0; m < m1; m++) din[m] += d0 * w0[m] + d1 * w1[m] + d2 * w2[m] + d3 * w3[m];
  }
  for (; n < n1; n++) {
    const float d0 = d[n], *w0 = w + (size_t)n * M;
#pragma omp simd
    for (int m = m0; m < m1; m++) din[m] += d0 * w0[m];
  }
}

/* Batch 1, rows [n0, n1): dw[n][:] += d[n] x, and with din (columns [m0, m1)) din += d[n] w[n][:]
 * for the same 4 rows while they are in cache; din must hold its starting value (0 for a fresh
 * gradient). */
static void outer_rows(float *restrict dw, float *restrict din, const float *restrict d, const float *restrict x,
                       const float *restrict w, int M, int n0, int n1, int m0, int m1) {
  int n = n0;
  for (; n + 4 <= n1; n += 4) {
    float *g0 = dw + (size_t)n * M, *g1 = g0 + M, *g2 = g1 + M, *g3 = g2 + M;
    const float d0 = d[n], d1 = d[n + 1], d2 = d[n + 2], d3 = d[n + 3];
#pragma omp simd
    for (int m = 0; m < M; m++) {
      const float v = x[m];
      g0[m] += d0 * v; g1[m] += d1 * v; g2[m] += d2 * v; g3[m] += d3 * v;
    }
    if (din) din_rows(din, d, w, M, n, n + 4, m0, m1);
  }
  for (; n < n1; n++) {
    float *g0 = dw + (size_t)n * M;
    const float d0 = d[n];
#pragma omp simd
    for (int m = 0; m < M; m++) g0[m] += d0 * x[m];
    if (din) din_rows(din, d, w, M, n, n + 1, m0, m1);
  }
}

static void fc_fwd_part(float *out, const float *in, const float *w, const float *b, int B, int M, int N, int t,
                        int nt) {
  int n0, n1;
  cpu_split(N, nt, t, &n0, &n1);
  if (n1 <= n0) return;
  for (int i = 0; i < B; i++)
    for (int j = n0; j < n1; j++) out[(size_t)i * N + j] = b[j];
  if (B == 1)
    gemv_rows(out, in, w, M, n0, n1);
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
                        int M, int N, int t, int nt, float *parts) {
  int n0, n1, m0, m1;
  cpu_split(N, nt, t, &n0, &n1);
  cpu_split(M, nt, t, &m0, &m1);
  if (B == 1) {   /* one pass over this thread's rows: dw and its partial of din together */
    float *dp = din_part(din, parts, M, t);
    if (dp) for (int m = 0; m < M; m++) dp[m] = 0.0f;
    outer_rows(dw, dp, dout, in, w, M, n0, n1, 0, M);
    for (int j = n0; j < n1; j++) db[j] += dout[j];
    parts_reduce(din, parts, M, t, nt);
    return;
  }
  if (n1 > n0) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n1 - n0, M, B, 1.0f, dout + n0, N, in, M, 1.0f,
                dw + (size_t)n0 * M, M);
    cpu_sum_rows_blocked(db, dout, B, N, n0, n1);
  }
  if (din && m1 > m0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, m1 - m0, N, 1.0f, dout, N, w + m0, M, 0.0f, din + m0, M);
}

void cpu_fc_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                     int M, int N) {
  /* dout [B][N], in/din [B][M], w/dw [N][M], db [N] */
  SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  cpu_blas_init();
  const int T = fc_threads(B, M, N);
  if (T == 1) { fc_bwd_part(din, dw, db, dout, in, w, B, M, N, 0, 1, NULL); return; }
  float *parts = B == 1 && din ? fc_parts((size_t)(T - 1) * M) : NULL;
#pragma omp parallel num_threads(T)
  fc_bwd_part(din, dw, db, dout, in, w, B, M, N, omp_get_thread_num(), omp_get_num_threads(), parts);
}

/* Batch 1: one row of w updated from its gradient d x (never stored): the expressions of
 * outer_rows (gradient 0 + d x) and cpu_sgd_step, so the result is theirs bit for bit. */
#define ROW_LOOP(body) _Pragma("omp simd") for (int m = 0; m < M; m++) { const float g0 = 0.0f + d * x[m]; body; }
static void sgd_row(float *restrict w, float *restrict v, float d, const float *restrict x, int M, float lr, float mu,
                    float wd) {
  if (v && wd != 0) {
    ROW_LOOP(const float gi = g0 + wd * w[m]; v[m] = mu * v[m] - lr * gi; w[m] += v[m])
  } else if (v) {
    ROW_LOOP(v[m] = mu * v[m] - lr * g0; w[m] += v[m])
  } else if (wd != 0) {
    ROW_LOOP(const float gi = g0 + wd * w[m]; w[m] -= lr * gi)
  } else {
    ROW_LOOP(w[m] -= lr * g0)
  }
}
#undef ROW_LOOP

/* Batch 1, rows [n0, n1): dp (din's partial over these rows, or NULL) from the old rows, then
 * the rows of w (and v) updated, in the blocks of outer_rows (4, then single rows) so that the
 * partial rounds as fc_bwd_part's. */
static void sgd_rows(float *dp, float *w, float *vw, const float *dout, const float *in, int M, int n0, int n1,
                     float lr, float mu, float wd) {
  if (dp) for (int m = 0; m < M; m++) dp[m] = 0.0f;
  for (int n = n0; n < n1;) {
    const int nb = n + 4 <= n1 ? n + 4 : n + 1;
    if (dp) din_rows(dp, dout, w, M, n, nb, 0, M);   /* the old rows */
    for (; n < nb; n++) sgd_row(w + (size_t)n * M, vw ? vw + (size_t)n * M : NULL, dout[n], in, M, lr, mu, wd);
  }
}

void cpu_fc_backward_sgd(float *din, float *w, float *b, float *dw, float *db, float *vw, float *vb, const float *dout,
                         const float *in, int B, int M, int N, float lr, float mu, float wd) {
  SHAPE_ASSERT(B > 0 && M > 0 && N > 0 && !vw == !vb);
  if (B != 1) {
    cpu_fc_backward(din, dw, db, dout, in, w, B, M, N);
    cpu_sgd_step(w, dw, vw, (size_t)N * M, lr, mu, wd);
    cpu_sgd_step(b, db, vb, (size_t)N, lr, mu, wd);
    return;
  }
  const int T = fc_threads(B, M, N);
  if (T == 1) {
    sgd_rows(din, w, vw, dout, in, M, 0, N, lr, mu, wd);
  } else {   /* rows split as fc_bwd_part's, din's partials added in the same order */
    float *parts = din ? fc_parts((size_t)(T - 1) * M) : NULL;
#pragma omp parallel num_threads(T)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      int n0, n1;
      cpu_split(N, nt, t, &n0, &n1);
      sgd_rows(din_part(din, parts, M, t), w, vw, dout, in, M, n0, n1, lr, mu, wd);
      parts_reduce(din, parts, M, t, nt);
    }
  }
  for (int j = 0; j < N; j++) db[j] += dout[j];
  cpu_sgd_step(b, db, vb, (size_t)N, lr, mu, wd);
}
