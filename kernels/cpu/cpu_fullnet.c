/* cpu_fullnet.c — the fast CPU path of the layers of the papers' full-size nets
 * (contract/layers.h, PDL_DECLARE_FULLNET_LAYERS): strided conv (im2col + OpenBLAS sgemm per
 * image), max-pool with its own window and stride (overlapping, e.g. 3x3 stride 2), batch
 * normalization and global average pooling. Threading as the rest of kernels/cpu (cpu.h): one
 * OpenMP team of cpu_get_threads() per call, static index partitions, partial sums added in
 * thread order, so the same inputs and thread count give the same bits.
 * Strided conv, per image (K = Ci*k*k, P = Ho*Wo): out_i[Co][P] = w[Co][K] x col_i[K][P] + b,
 * dw[Co][K] += dout_i x col_i^T (a private partial per thread, added in thread order),
 * dcol = w^T x dout_i, din_i = col2im(dcol); db per output channel in double. Scratch per thread:
 * col [K][P] and the dw partial [Co][K].
 * Batch normalization: the statistics and the backward's two sums of each channel in double
 * (two passes: mean, then the squared deviations), a team split by channels; the per-element
 * arithmetic in float. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_layers.h"
#include "util/util.h"

static inline int team(size_t work, int parts) {
  int T = work < CPU_PAR_MIN_ELEMS ? 1 : cpu_get_threads();
  return T > parts ? (parts > 0 ? parts : 1) : T;
}

/* ---------------------------------------------------------------- strided conv */

static int conv_s_out(int n, int k, int pad, int st) { return (n + 2 * pad - k) / st + 1; }

/* col[(ci*k + kh)*k + kw][oh*Wo + ow] = img[ci][oh*st + kh - pad][ow*st + kw - pad], 0 outside */
static void im2col_s(float *restrict col, const float *restrict img, int C, int H, int W, int k, int pad, int st,
                     int Ho, int Wo) {
  const size_t P = (size_t)Ho * Wo;
  for (int ci = 0; ci < C; ci++)
    for (int kh = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++) {
        float *row = col + ((size_t)(ci * k + kh) * k + kw) * P;
        const float *plane = img + (size_t)ci * H * W;
        for (int oh = 0; oh < Ho; oh++) {
          const int ih = oh * st + kh - pad;
          float *r = row + (size_t)oh * Wo;
          if (ih < 0 || ih >= H) { for (int ow = 0; ow < Wo; ow++) r[ow] = 0.0f; continue; }
          const float *src = plane + (size_t)ih * W;
          for (int ow = 0; ow < Wo; ow++) {
            const int iw = ow * st + kw - pad;
            r[ow] = iw >= 0 && iw < W ? src[iw] : 0.0f;
          }
        }
      }
}

/* img = the sum of the col entries im2col_s copies from each position (img overwritten) */
static void col2im_s(float *restrict img, const float *restrict col, int C, int H, int W, int k, int pad, int st,
                     int Ho, int Wo) {
  const size_t P = (size_t)Ho * Wo;
  memset(img, 0, (size_t)C * H * W * sizeof(float));
  for (int ci = 0; ci < C; ci++)
    for (int kh = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++) {
        const float *row = col + ((size_t)(ci * k + kh) * k + kw) * P;
        float *plane = img + (size_t)ci * H * W;
        for (int oh = 0; oh < Ho; oh++) {
          const int ih = oh * st + kh - pad;
          if (ih < 0 || ih >= H) continue;
          float *dst = plane + (size_t)ih * W;
          const float *r = row + (size_t)oh * Wo;
          for (int ow = 0; ow < Wo; ow++) {
            const int iw = ow * st + kw - pad;
            if (iw >= 0 && iw < W) dst[iw] += r[ow];
          }
        }
      }
}

static size_t conv_s_per_thread(int Ci, int H, int W, int Co, int k, int pad, int st) {
  const size_t K = (size_t)Ci * k * k, P = (size_t)conv_s_out(H, k, pad, st) * conv_s_out(W, k, pad, st);
  return cpu_round16(K * P) + cpu_round16((size_t)Co * K);
}

size_t cpu_conv_s_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads) {
  (void)B;
  return (size_t)(nthreads < 1 ? 1 : nthreads) * conv_s_per_thread(Ci, H, W, Co, k, pad, st);
}

void cpu_conv_s_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                        int Co, int k, int pad, int st, float *scratch) {
  SHAPE_ASSERT(B > 0 && Ci > 0 && Co > 0 && k > 0 && pad >= 0 && st >= 1 && H + 2 * pad >= k && W + 2 * pad >= k);
  cpu_blas_init();
  const int Ho = conv_s_out(H, k, pad, st), Wo = conv_s_out(W, k, pad, st), K = Ci * k * k, P = Ho * Wo;
  const size_t per = conv_s_per_thread(Ci, H, W, Co, k, pad, st);
  const int T = cpu_get_threads() < B ? cpu_get_threads() : B;
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int i0, i1;
    cpu_split(B, nt, t, &i0, &i1);
    float *col = scratch + (size_t)t * per;
    for (int i = i0; i < i1; i++) {
      float *o = out + (size_t)i * Co * P;
      for (int co = 0; co < Co; co++)
        for (int p = 0; p < P; p++) o[(size_t)co * P + p] = b[co];
      im2col_s(col, in + (size_t)i * Ci * H * W, Ci, H, W, k, pad, st, Ho, Wo);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Co, P, K, 1.0f, w, K, col, P, 1.0f, o, P);
    }
  }
}

void cpu_conv_s_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                         int Ci, int H, int W, int Co, int k, int pad, int st, float *scratch) {
  SHAPE_ASSERT(B > 0 && Ci > 0 && Co > 0 && k > 0 && pad >= 0 && st >= 1 && H + 2 * pad >= k && W + 2 * pad >= k);
  cpu_blas_init();
  const int Ho = conv_s_out(H, k, pad, st), Wo = conv_s_out(W, k, pad, st), K = Ci * k * k, P = Ho * Wo;
  const size_t per = conv_s_per_thread(Ci, H, W, Co, k, pad, st), nw = (size_t)Co * K;
  const int T = cpu_get_threads() < B ? cpu_get_threads() : B;
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int i0, i1;
    cpu_split(B, nt, t, &i0, &i1);
    float *col = scratch + (size_t)t * per, *dwp = col + cpu_round16((size_t)K * P);
    memset(dwp, 0, nw * sizeof(float));
    for (int i = i0; i < i1; i++) {
      const float *g = dout + (size_t)i * Co * P;
      im2col_s(col, in + (size_t)i * Ci * H * W, Ci, H, W, k, pad, st, Ho, Wo);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Co, K, P, 1.0f, g, P, col, P, 1.0f, dwp, K);
      if (din) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, P, Co, 1.0f, w, K, g, P, 0.0f, col, P);
        col2im_s(din + (size_t)i * Ci * H * W, col, Ci, H, W, k, pad, st, Ho, Wo);
      }
    }
#pragma omp barrier
    /* the partials added in thread order; output channels split for db */
    int j0, j1;
    cpu_split((int)nw, nt, t, &j0, &j1);
    for (int j = j0; j < j1; j++) {
      float s = 0.0f;
      for (int u = 0; u < nt; u++) s += scratch[(size_t)u * per + cpu_round16((size_t)K * P) + j];
      dw[j] += s;
    }
    int c0, c1;
    cpu_split(Co, nt, t, &c0, &c1);
    for (int co = c0; co < c1; co++) {
      double s = 0;
      for (int i = 0; i < B; i++) s += cpu_sum_blocked(dout + ((size_t)i * Co + co) * P, P);
      db[co] += (float)s;
    }
  }
}

/* ---------------------------------------------------------------- max-pool, k x k window, stride s */

static int pool_out(int n, int k, int s, int ceil_mode) { return (n - k + (ceil_mode ? s - 1 : 0)) / s + 1; }

/* first maximum (row-major) of window (oh, ow) of a plane: its index, and its value in *m */
static inline size_t win_argmax(const float *x, int H, int W, int k, int s, int oh, int ow, float *m) {
  const int h0 = oh * s, w0 = ow * s, h1 = h0 + k < H ? h0 + k : H, w1 = w0 + k < W ? w0 + k : W;
  size_t best = (size_t)h0 * W + w0;
  float v = x[best];
  for (int h = h0; h < h1; h++)
    for (int c = w0; c < w1; c++)
      if (x[(size_t)h * W + c] > v) { v = x[(size_t)h * W + c]; best = (size_t)h * W + c; }
  *m = v;
  return best;
}

void cpu_pool_forward(float *out, const float *in, int B, int C, int H, int W, int k, int s, int ceil_mode) {
  SHAPE_ASSERT(B > 0 && C > 0 && k >= 1 && s >= 1 && H >= k && W >= k);
  const int Ho = pool_out(H, k, s, ceil_mode), Wo = pool_out(W, k, s, ceil_mode), n = B * C;
#pragma omp parallel for schedule(static) num_threads(team((size_t)n * H * W, n))
  for (int p = 0; p < n; p++) {
    const float *x = in + (size_t)p * H * W;
    float *o = out + (size_t)p * Ho * Wo;
    for (int oh = 0; oh < Ho; oh++)
      for (int ow = 0; ow < Wo; ow++) win_argmax(x, H, W, k, s, oh, ow, &o[(size_t)oh * Wo + ow]);
  }
}

void cpu_pool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H, int W,
                       int k, int s, int ceil_mode) {
  (void)out;
  SHAPE_ASSERT(B > 0 && C > 0 && k >= 1 && s >= 1 && H >= k && W >= k);
  const int Ho = pool_out(H, k, s, ceil_mode), Wo = pool_out(W, k, s, ceil_mode), n = B * C;
#pragma omp parallel for schedule(static) num_threads(team((size_t)n * H * W, n))
  for (int p = 0; p < n; p++) {
    const float *x = in + (size_t)p * H * W, *g = dout + (size_t)p * Ho * Wo;
    float *d = din + (size_t)p * H * W, m;
    memset(d, 0, (size_t)H * W * sizeof(float));
    for (int oh = 0; oh < Ho; oh++)
      for (int ow = 0; ow < Wo; ow++) d[win_argmax(x, H, W, k, s, oh, ow, &m)] += g[(size_t)oh * Wo + ow];
  }
}

/* ---------------------------------------------------------------- batch normalization */

void cpu_bn_forward(float *out, const float *in, const float *gamma, const float *beta, float *rmean, float *rvar,
                    float *save, int B, int C, int HW, int train, float momentum, float eps) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0 && eps > 0);
  const double N = (double)B * HW;
#pragma omp parallel for schedule(static) num_threads(team((size_t)B * C * HW, C))
  for (int c = 0; c < C; c++) {
    float mean, inv;
    if (train) {
      double s = 0, q = 0;
      for (int n = 0; n < B; n++) {
        const float *x = in + ((size_t)n * C + c) * HW;
#pragma omp simd reduction(+ : s)
        for (int p = 0; p < HW; p++) s += x[p];
      }
      const double m = s / N;
      for (int n = 0; n < B; n++) {
        const float *x = in + ((size_t)n * C + c) * HW;
#pragma omp simd reduction(+ : q)
        for (int p = 0; p < HW; p++) { const double d = x[p] - m; q += d * d; }
      }
      const double var = q / N;
      mean = (float)m;
      inv = (float)(1.0 / sqrt(var + (double)eps));
      save[c] = mean;
      save[C + c] = inv;
      rmean[c] = (float)((1.0 - (double)momentum) * rmean[c] + (double)momentum * m);
      rvar[c] = (float)((1.0 - (double)momentum) * rvar[c] + (double)momentum * var * N / (N > 1 ? N - 1 : 1));
    } else {
      mean = rmean[c];
      inv = (float)(1.0 / sqrt((double)rvar[c] + (double)eps));
    }
    const float a = gamma[c] * inv, b = beta[c];
    for (int n = 0; n < B; n++) {
      const float *x = in + ((size_t)n * C + c) * HW;
      float *o = out + ((size_t)n * C + c) * HW;
#pragma omp simd
      for (int p = 0; p < HW; p++) o[p] = (x[p] - mean) * a + b;
    }
  }
}

void cpu_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in, const float *gamma,
                     const float *save, int B, int C, int HW) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  const double N = (double)B * HW;
#pragma omp parallel for schedule(static) num_threads(team((size_t)B * C * HW, C))
  for (int c = 0; c < C; c++) {
    const float mean = save[c], inv = save[C + c];
    double sd = 0, sdx = 0;
    for (int n = 0; n < B; n++) {
      const float *x = in + ((size_t)n * C + c) * HW, *g = dout + ((size_t)n * C + c) * HW;
#pragma omp simd reduction(+ : sd, sdx)
      for (int p = 0; p < HW; p++) { sd += g[p]; sdx += (double)g[p] * (double)((x[p] - mean) * inv); }
    }
    dbeta[c] += (float)sd;
    dgamma[c] += (float)sdx;
    if (!din) continue;
    /* din = gamma inv (dout - sd / N - xhat sdx / N) */
    const float a = gamma[c] * inv, m1 = (float)(sd / N), m2 = (float)(sdx / N);
    for (int n = 0; n < B; n++) {
      const float *x = in + ((size_t)n * C + c) * HW, *g = dout + ((size_t)n * C + c) * HW;
      float *d = din + ((size_t)n * C + c) * HW;
#pragma omp simd
      for (int p = 0; p < HW; p++) d[p] = a * (g[p] - m1 - (x[p] - mean) * inv * m2);
    }
  }
}

/* ---------------------------------------------------------------- global average pooling */

void cpu_gap_forward(float *out, const float *in, int B, int C, int HW) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  const int n = B * C;
#pragma omp parallel for schedule(static) num_threads(team((size_t)n * HW, n))
  for (int p = 0; p < n; p++) {
    const float *x = in + (size_t)p * HW;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < HW; i++) s += x[i];
    out[p] = (float)(s / HW);
  }
}

void cpu_gap_backward(float *din, const float *dout, int B, int C, int HW) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  const int n = B * C;
#pragma omp parallel for schedule(static) num_threads(team((size_t)n * HW, n))
  for (int p = 0; p < n; p++) {
    const float g = (float)((double)dout[p] / HW);
    float *d = din + (size_t)p * HW;
    for (int i = 0; i < HW; i++) d[i] = g;
  }
}
