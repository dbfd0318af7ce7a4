/* cpu_conv.c — convolution forward/backward: im2col + OpenBLAS sgemm, OpenMP over images; 3x3
 * kernels on enough channels and tiles go to Winograd F(2x2,3x3) instead (cpu_winograd.c: about
 * half the GEMM FLOPs, the same semantics, threading and determinism rules as below).
 * Algorithm choice: environment variable PDL_CONV, read once per process —
 *   auto (default)  Winograd where it pays: k == 3, Ci >= 8, >= WINO_MIN_TILES tiles per GEMM
 *   im2col          never Winograd (the path before it; for comparisons: PDL_CONV=im2col pdl speed)
 *   winograd        Winograd for every k == 3 (tests)
 * cpu_conv_scratch_floats sizes scratch for both paths, so a workspace fits whichever a call takes.
 * im2col path, per image (K = Ci*k*k, P = Ho*Wo):  out_i[Co][P] = w[Co][K] x col_i[K][P] + b
 *                                     dw[Co][K] += dout_i[Co][P] x col_i^T,   db += row sums of dout_i
 *                                     dcol[K][P] = w^T x dout_i,   din_i = col2im(dcol)
 * Per-image GEMMs keep col_i in L2 and ran faster here than one whole-batch GEMM (docs/DESIGN.md §7), so
 * with B >= nthreads each thread takes a contiguous block of images with its own scratch slice.
 * dw/db: thread 0 accumulates in place, the others into private partials that are added to dw/db
 * at the end in thread order (fixed order -> bit-identical results for a given thread count).
 * With B < nthreads (batch 1) each image is split instead, so that no thread ever waits for
 * another: in the forward pass thread t owns output positions [p0, p1) (its own im2col columns,
 * GEMM columns and bias/activation); in the backward pass it owns input channels [c0, c1) (their
 * col rows, the matching dw columns, dcol rows and col2im) and output channels for db.
 * k == 1 && pad == 0 skips im2col/col2im (col_i is the input image itself, dcol is din_i).
 * Bias is fused: out rows are filled with b and the GEMM accumulates (beta = 1), which costs the
 * same as OpenBLAS's beta = 0 clearing pass. The fused cpu_conv_act_* apply the activation to
 * out_i (forward) or to dout_i (backward, into scratch) while that image is still in L2, saving a
 * full pass over the activations each way; results are bit-identical to the unfused sequence.
 * Scratch per thread: col [K][P], dw partial [Co][K], db partial [Co], masked dout [Co][P] (each
 * rounded to 64 bytes). */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

typedef struct {
  int B, Ci, H, W, Co, k, pad, Ho, Wo, P, K, direct;
  int act;     /* fused activation: forward applies it to out, backward to dout (using out) */
  float slope;
  size_t col_n, dw_n, db_n, g_n, dbb_n, per_thread; /* floats, each rounded; per_thread = their sum */
} conv_t;

static conv_t conv_shape(int B, int Ci, int H, int W, int Co, int k, int pad) {
  conv_t s;
  SHAPE_ASSERT(B > 0 && Ci > 0 && H > 0 && W > 0 && Co > 0 && k > 0 && pad >= 0);
  s.B = B; s.Ci = Ci; s.H = H; s.W = W; s.Co = Co; s.k = k; s.pad = pad;
  s.Ho = H + 2 * pad - k + 1; s.Wo = W + 2 * pad - k + 1;
  SHAPE_ASSERT(s.Ho > 0 && s.Wo > 0);
  s.P = s.Ho * s.Wo; s.K = Ci * k * k;
  s.direct = k == 1 && pad == 0;
  s.act = 0; s.slope = 0.0f;
  s.col_n = cpu_round16((size_t)s.K * s.P);
  s.dw_n = cpu_round16((size_t)Co * s.K);
  s.db_n = cpu_round16((size_t)Co);
  s.g_n = cpu_round16((size_t)Co * s.P);
  s.dbb_n = cpu_round16((size_t)Co); /* the bias gradient's block partial (CPU_DB_BLOCK images) */
  s.per_thread = s.col_n + s.dw_n + s.db_n + s.g_n + s.dbb_n;
  return s;
}

/* Batch 1 with several threads splits each image; otherwise threads take whole images. */
static int conv_split_gemm(int B, int nthreads) { return nthreads > 1 && B < nthreads; }

/* ---- algorithm choice (the mode: cpu_mode.c): im2col + sgemm, or Winograd (cpu_winograd.c) */
/* Shapes where Winograd pays (measured on the reference net's layers and neighbours, 1 thread):
 * Ci >= 8, and at least WINO_MIN_TILES tiles per GEMM (images per group x tiles per image).
 * Below that the per-call costs (weight transforms, 16 GEMM set-ups) dominate. A 7x7 map has 16
 * tiles: at batch 1 Winograd had taken 1.2-1.5x the time of im2col there while its weight
 * transforms moved taps one by one; with the register transposes (cpu_winograd.c taps_in) it
 * took, forward + backward, 0.90x (64->128), 0.89x (32->32) and 1.01x (128->128) of im2col on
 * 1 thread, 0.90x on 2 (Xeon, AVX-512; 64->128 with the pool fused 0.82x of im2col without it),
 * and 14x14 and 28x28 maps won at every batch (1.2-1.6x). */
#ifndef WINO_MIN_TILES
#define WINO_MIN_TILES 16
#endif
static int wino_pays(int B, int Ci, int H, int W, int Co, int pad) {
  return Ci >= 8 && cpu_wino_tiles(B, Ci, H, W, Co, pad) >= WINO_MIN_TILES;
}

int cpu_conv_winograd(int B, int Ci, int H, int W, int Co, int k, int pad) {
  const int mode = cpu_conv_get_mode();
  if (k != 3 || mode == CPU_CONV_IM2COL) return 0;
  return mode == CPU_CONV_WINOGRAD || mode == CPU_CONV_WINOGRAD4 || wino_pays(B, Ci, H, W, Co, pad);
}

size_t cpu_conv_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads) {
  conv_t s = conv_shape(B, Ci, H, W, Co, k, pad);
  size_t T = nthreads < 1 ? 1 : (size_t)nthreads, n = T * s.per_thread;
  /* the larger of both: a smaller batch than B may take the other path */
  if (k == 3 && cpu_conv_get_mode() != CPU_CONV_IM2COL) {
    const size_t nw = cpu_wino_scratch_floats(B, Ci, H, W, Co, pad, nthreads);
    if (nw > n) n = nw;
  }
  return n;
}

/* x[0..n) = leaky ReLU of itself */
static inline void act_inplace(float *x, size_t n, float slope) {
#pragma omp simd
  for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}

/* out_i[:, p0:p1) = act(w x col + b), col holding positions [p0, p1) with row stride ldc. */
static void fwd_block(const conv_t *s, float *out_i, const float *colp, size_t ldc, const float *w, const float *b,
                      int p0, int p1) {
  if (p1 <= p0) return;
  for (int co = 0; co < s->Co; co++) {
    float *o = out_i + (size_t)co * s->P;
    const float bv = b[co];
    for (int p = p0; p < p1; p++) o[p] = bv;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->Co, p1 - p0, s->K, 1.0f, w, s->K, colp, (int)ldc, 1.0f,
              out_i + p0, s->P);
  if (s->act)
    for (int co = 0; co < s->Co; co++) act_inplace(out_i + (size_t)co * s->P + p0, (size_t)(p1 - p0), s->slope);
}

/* Forward convolutions with 9 taps per output (K = Ci k k = 9: the one-channel 3x3 first layer)
 * skip OpenBLAS, whose K = 9 GEMM spends more on packing both operands than on 9 multiply-adds
 * per output: taps9_fwd runs over the im2col buffer directly, vectorised over positions
 * (ppasgd-cifar's first conv, 1 Xeon thread: 1.95 -> 1.4 ms forward at batch 128, 13 -> 8 us at
 * batch 1). Its backward keeps the GEMM: a dw kernel of the same kind (9 or 10 sums per output
 * channel in one pass, the activation's gradient formed on the fly) took 2.6-2.85 ms against
 * 2.4 at batch 128. */
static int taps9(const conv_t *s) { return s->K == 9 && !s->direct; }

/* out_i[co][p0:p1) = act(b[co] + w[co][0] col[0][p - p0] + ... + w[co][8] col[8][p - p0]), in
 * that order (col row stride ldc), the 9 taps in registers */
static void taps9_fwd(const conv_t *s, float *out_i, const float *restrict col, size_t ldc, const float *w,
                      const float *b, int p0, int p1) {
  const int n = p1 - p0;
  const float sl = s->act ? s->slope : 1.0f; /* a > 0 ? a : 1 * a == a: no activation */
  const float *c0 = col, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc, *c4 = c3 + ldc, *c5 = c4 + ldc,
              *c6 = c5 + ldc, *c7 = c6 + ldc, *c8 = c7 + ldc;
  for (int co = 0; co < s->Co; co++) {
    const float *wr = w + (size_t)co * 9, bv = b[co];
    const float w0 = wr[0], w1 = wr[1], w2 = wr[2], w3 = wr[3], w4 = wr[4], w5 = wr[5], w6 = wr[6], w7 = wr[7],
                w8 = wr[8];
    float *restrict o = out_i + (size_t)co * s->P + p0;
#pragma omp simd
    for (int p = 0; p < n; p++) {
      float a = bv;
      a += w0 * c0[p]; a += w1 * c1[p]; a += w2 * c2[p]; a += w3 * c3[p]; a += w4 * c4[p];
      a += w5 * c5[p]; a += w6 * c6[p]; a += w7 * c7[p]; a += w8 * c8[p];
      o[p] = a > 0.0f ? a : sl * a;
    }
  }
}

static void fwd_body(const conv_t *s, float *out, const float *in, const float *w, const float *b, float *scratch,
                     int t, int nt, int split) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = (size_t)s->Co * s->P;
  float *col = scratch + (size_t)t * s->per_thread;
  int i0 = 0, i1 = s->B, p0 = 0, p1 = s->P;
  if (split) cpu_split(s->P, nt, t, &p0, &p1);
  else cpu_split(s->B, nt, t, &i0, &i1);
  for (int i = i0; i < i1; i++) {
    const float *in_i = in + i * in_n;
    if (s->direct) { fwd_block(s, out + i * out_n, in_i + p0, (size_t)s->P, w, b, p0, p1); continue; }
    cpu_im2col(col, (size_t)(p1 - p0), in_i, s->Ci, s->H, s->W, s->k, s->pad, 0, s->Ci, p0, p1);
    if (taps9(s)) taps9_fwd(s, out + i * out_n, col, (size_t)(p1 - p0), w, b, p0, p1);
    else fwd_block(s, out + i * out_n, col, (size_t)(p1 - p0), w, b, p0, p1);
  }
}

static void conv_fwd(conv_t *s, float *out, const float *in, const float *w, const float *b, float *scratch) {
  cpu_blas_init();
  const int T = cpu_get_threads(), split = conv_split_gemm(s->B, T);
  if (T == 1) { fwd_body(s, out, in, w, b, scratch, 0, 1, 0); return; }
#pragma omp parallel num_threads(T)
  fwd_body(s, out, in, w, b, scratch, omp_get_thread_num(), omp_get_num_threads(), split && omp_get_num_threads() > 1);
}

void cpu_conv_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                      int Co, int k, int pad, float *scratch) {
  /* in [B][Ci][H][W], w [Co][Ci][k][k], b [Co], out [B][Co][Ho][Wo] */
  if (cpu_conv_winograd(B, Ci, H, W, Co, k, pad)) {
    cpu_wino_forward(out, in, w, b, B, Ci, H, W, Co, pad, 0, 0.0f, scratch, NULL);
    return;
  }
  conv_t s = conv_shape(B, Ci, H, W, Co, k, pad);
  conv_fwd(&s, out, in, w, b, scratch);
}

size_t cpu_conv_keep_floats(int Ci, int H, int W, int Co, int k, int pad) {
  return k == 3 && cpu_conv_get_mode() != CPU_CONV_IM2COL ? cpu_wino_keep_floats(Ci, H, W, Co, pad) : 0;
}

void cpu_conv_act_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                          int Co, int k, int pad, float slope, float *scratch, float *keep) {
  if (cpu_conv_winograd(B, Ci, H, W, Co, k, pad)) {
    cpu_wino_forward(out, in, w, b, B, Ci, H, W, Co, pad, 1, slope, scratch, keep);
    return;
  }
  conv_t s = conv_shape(B, Ci, H, W, Co, k, pad);
  s.act = 1; s.slope = slope;
  conv_fwd(&s, out, in, w, b, scratch);
}

/* db[co] (+)= sum_p g_i[co][p] for co in [co0, co1); acc = 0 overwrites. */
static void bias_grad(float *db, const float *g_i, int P, int co0, int co1, int acc) {
  for (int co = co0; co < co1; co++) {
    const float *d = g_i + (size_t)co * P;
    db[co] = acc ? db[co] + cpu_sum_blocked(d, P) : cpu_sum_blocked(d, P);
  }
}

/* Pre-activation gradient of one image: g = dout where out > 0, slope * dout elsewhere. */
static void act_grad(float *g, const float *dout_i, const float *out_i, size_t n, float slope) {
#pragma omp simd
  for (size_t j = 0; j < n; j++) g[j] = out_i[j] > 0.0f ? dout_i[j] : slope * dout_i[j];
}

/* Input gradient of one image, input channels [c0, c1): dcol [(c1-c0)*k*k][P] = their w^T rows x g_i,
 * then col2im. */
static void din_channels(const conv_t *s, float *din_i, const float *g_i, const float *w, float *dcol, int c0,
                         int c1) {
  if (c1 <= c0) return;
  const int kk = s->k * s->k;
  if (s->direct) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c1 - c0, s->P, s->Co, 1.0f, w + c0, s->K, g_i, s->P, 0.0f,
                din_i + (size_t)c0 * s->P, s->P);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (c1 - c0) * kk, s->P, s->Co, 1.0f, w + (size_t)c0 * kk, s->K,
              g_i, s->P, 0.0f, dcol, s->P);
  cpu_col2im(din_i, dcol, s->Ci, s->H, s->W, s->k, s->pad, c0, c1);
}

/* Whole-image mode: a thread takes images [i0, i1) entirely; dw/db go to its partial.
 * Split mode (B < threads): every thread takes every image, but only input channels [c0, c1):
 * the col rows of those channels (its own im2col), dw's columns for them (M = Co, N = its rows,
 * K = P: no partial, no reduction), the same dcol rows and col2im channels; db rows are split by
 * output channel. No thread reads another's data, so there is no barrier at all. */
static void bwd_body(const conv_t *s, float *din, float *dw, float *db, const float *dout, const float *out,
                     const float *in, const float *w, float *scratch, int t, int nt, int split) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = (size_t)s->Co * s->P;
  const int kk = s->k * s->k;
  float *col = scratch + (size_t)t * s->per_thread, *dwp = col + s->col_n, *dbp = dwp + s->dw_n, *g = dbp + s->db_n;
  float *dbb = g + s->g_n;
  if (split) {
    int c0, c1, co0, co1;
    cpu_split(s->Ci, nt, t, &c0, &c1);
    cpu_split(s->Co, nt, t, &co0, &co1);
    const int r0 = c0 * kk, nr = (c1 - c0) * kk;
    for (int i = 0; i < s->B; i++) {
      const float *in_i = in + i * in_n, *g_i = dout + i * out_n;
      /* the activation's gradient over the whole image: dw and dcol need every output channel */
      if (s->act) { act_grad(g, g_i, out + i * out_n, out_n, s->slope); g_i = g; }
      bias_grad(db, g_i, s->P, co0, co1, 1);
      if (nr == 0) continue;
      const float *colp = in_i + (size_t)c0 * s->P; /* direct: col rows are input channels */
      if (!s->direct) { cpu_im2col(col, (size_t)s->P, in_i, s->Ci, s->H, s->W, s->k, s->pad, c0, c1, 0, s->P); colp = col; }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->Co, nr, s->P, 1.0f, g_i, s->P, colp, s->P, 1.0f, dw + r0,
                  s->K);
      if (din) din_channels(s, din + i * in_n, g_i, w, col, c0, c1);
    }
    return;
  }
  if (t == 0) { dwp = dw; dbp = db; } /* thread 0 adds onto dw/db directly */
  int i0, i1;
  cpu_split(s->B, nt, t, &i0, &i1);
  for (int i = i0; i < i1; i++) {
    const float *in_i = in + i * in_n, *g_i = dout + i * out_n, *colp = in_i;
    const int acc = t == 0 || i > i0; /* partials start at their first image */
    if (s->act) { act_grad(g, g_i, out + i * out_n, out_n, s->slope); g_i = g; }
    if (!s->direct) { cpu_im2col(col, (size_t)s->P, in_i, s->Ci, s->H, s->W, s->k, s->pad, 0, s->Ci, 0, s->P); colp = col; }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->Co, s->K, s->P, 1.0f, g_i, s->P, colp, s->P,
                acc ? 1.0f : 0.0f, dwp, s->K);
    bias_grad(dbb, g_i, s->P, 0, s->Co, !cpu_db_block_first(i, i0));
    if (cpu_db_block_last(i, i0, i1)) cpu_db_flush(dbp, dbb, s->Co, t == 0 || i - i0 >= CPU_DB_BLOCK);
    if (din) din_channels(s, din + i * in_n, g_i, w, col, 0, s->Ci);
  }
  if (nt == 1) return;
#pragma omp barrier
  /* dw, db += partials of threads 1..nt-1 (those that had images), in thread order */
  const int nw = s->Co * s->K, nall = nw + s->Co;
  int j0, j1;
  cpu_split(nall, nt, t, &j0, &j1);
  for (int j = j0; j < j1; j++) {
    float *dst = j < nw ? dw + j : db + (j - nw);
    float v = *dst;
    for (int u = 1; u < nt; u++) {
      int u0, u1;
      cpu_split(s->B, nt, u, &u0, &u1);
      if (u1 <= u0) continue;
      const float *part = scratch + (size_t)u * s->per_thread + s->col_n;
      v += j < nw ? part[j] : part[s->dw_n + (j - nw)];
    }
    *dst = v;
  }
}

static void conv_bwd(conv_t *s, float *din, float *dw, float *db, const float *dout, const float *out,
                     const float *in, const float *w, float *scratch) {
  cpu_blas_init();
  const int T = cpu_get_threads(), split = conv_split_gemm(s->B, T);
  if (T == 1) { bwd_body(s, din, dw, db, dout, out, in, w, scratch, 0, 1, 0); return; }
#pragma omp parallel num_threads(T)
  bwd_body(s, din, dw, db, dout, out, in, w, scratch, omp_get_thread_num(), omp_get_num_threads(),
           split && omp_get_num_threads() > 1);
}

void cpu_conv_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                       int Ci, int H, int W, int Co, int k, int pad, float *scratch) {
  /* dout [B][Co][Ho][Wo], in/din [B][Ci][H][W], w/dw [Co][Ci][k][k], db [Co] */
  if (cpu_conv_winograd(B, Ci, H, W, Co, k, pad)) {
    cpu_wino_backward(din, dw, db, dout, NULL, in, w, B, Ci, H, W, Co, pad, 0, 0.0f, scratch, NULL);
    return;
  }
  conv_t s = conv_shape(B, Ci, H, W, Co, k, pad);
  conv_bwd(&s, din, dw, db, dout, NULL, in, w, scratch);
}

void cpu_conv_act_backward(float *din, float *dw, float *db, const float *dout, const float *out, const float *in,
                           const float *w, int B, int Ci, int H, int W, int Co, int k, int pad, float slope,
                           float *scratch, const float *keep) {
  /* dout, out [B][Co][Ho][Wo]: gradient w.r.t. and value of the activation output */
  if (cpu_conv_winograd(B, Ci, H, W, Co, k, pad)) {
    cpu_wino_backward(din, dw, db, dout, out, in, w, B, Ci, H, W, Co, pad, 1, slope, scratch, keep);
    return;
  }
  conv_t s = conv_shape(B, Ci, H, W, Co, k, pad);
  s.act = 1; s.slope = slope;
  conv_bwd(&s, din, dw, db, dout, out, in, w, scratch);
}

int cpu_conv_act_pool_fusable(int B, int Ci, int H, int W, int Co, int k, int pad, int pool_s) {
  return k == 3 && pool_s == 2 && cpu_conv_winograd(B, Ci, H, W, Co, k, pad);
}

void cpu_conv_act_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B, int Ci,
                               int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch, float *keep) {
  /* in [B][Ci][H][W]; out, idx [B][Co][Hp][Wp] (Hp = pool of Ho = H + 2 pad - 2) */
  SHAPE_ASSERT(cpu_conv_act_pool_fusable(B, Ci, H, W, Co, 3, pad, 2));
  cpu_wino_pool_forward(out, idx, in, w, b, B, Ci, H, W, Co, pad, slope, ceil_mode, scratch, keep);
}

void cpu_conv_act_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out,
                                const uint8_t *idx, const float *in, const float *w, int B, int Ci, int H, int W,
                                int Co, int pad, float slope, int ceil_mode, float *scratch, const float *keep) {
  SHAPE_ASSERT(cpu_conv_act_pool_fusable(B, Ci, H, W, Co, 3, pad, 2));
  cpu_wino_pool_backward(din, dw, db, dout, out, idx, in, w, B, Ci, H, W, Co, pad, slope, ceil_mode, scratch, keep);
}
