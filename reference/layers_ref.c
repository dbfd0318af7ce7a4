/* layers_ref.c — the oracle: every layer of contract/layers.h as naive loops, one output element at a
 * time, sums in double. No OpenMP, no BLAS, no cleverness; speed does not matter here, obvious
 * correctness does. Conventions are those of layers.h: NCHW float32, param grads accumulated
 * (+=), input grads overwritten (=), din may be NULL, scratch ignored. */
#include <math.h>
#include "reference/ref.h"
#include "util/util.h"

/* Pooled extent along one axis: floor or ceil of n / s. */
static int pool_out(int n, int s, int ceil_mode) { return ceil_mode ? (n + s - 1) / s : n / s; }

/* The stride-1 conv is the strided oracle at st = 1 (layers_fullnet_ref.c): the same loops, sums and
 * rounding, so one copy of the arithmetic serves both. */
void ref_conv_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H,
                      int W, int Co, int k, int pad, float *scratch) {
  /* in [B][Ci][H][W], w [Co][Ci][k][k], b [Co], out [B][Co][Ho][Wo] */
  ref_conv_s_forward(out, in, w, b, B, Ci, H, W, Co, k, pad, 1, scratch);
}

void ref_conv_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                       int B, int Ci, int H, int W, int Co, int k, int pad, float *scratch) {
  /* dout [B][Co][Ho][Wo]; dw [Co][Ci][k][k] +=; db [Co] +=; din [B][Ci][H][W] = */
  ref_conv_s_backward(din, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, 1, scratch);
}

void ref_fc_forward(float *out, const float *in, const float *w, const float *b, int B, int M, int N) {
  /* in [B][M], w [N][M], b [N], out [B][N] */
  SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  for (int i = 0; i < B; i++)
    for (int j = 0; j < N; j++) {
      double s = b[j];
      for (int m = 0; m < M; m++) s += (double)in[(size_t)i * M + m] * (double)w[(size_t)j * M + m];
      out[(size_t)i * N + j] = (float)s;
    }
}

void ref_fc_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                     int B, int M, int N) {
  /* dout [B][N]; dw [N][M] +=; db [N] +=; din [B][M] = */
  SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  for (int j = 0; j < N; j++) {
    double s = 0;
    for (int i = 0; i < B; i++) s += dout[(size_t)i * N + j];
    db[j] += (float)s;
    for (int m = 0; m < M; m++) {
      double t = 0;
      for (int i = 0; i < B; i++) t += (double)dout[(size_t)i * N + j] * (double)in[(size_t)i * M + m];
      dw[(size_t)j * M + m] += (float)t;
    }
  }
  if (!din) return;
  for (int i = 0; i < B; i++)
    for (int m = 0; m < M; m++) {
      double s = 0;
      for (int j = 0; j < N; j++) s += (double)dout[(size_t)i * N + j] * (double)w[(size_t)j * M + m];
      din[(size_t)i * M + m] = (float)s;
    }
}

/* Index (into one H x W plane) of the first maximum of window (oh, ow), scanning row-major. */
static size_t window_argmax(const float *plane, int H, int W, int s, int oh, int ow) {
  int h0 = oh * s, w0 = ow * s;
  int h1 = h0 + s < H ? h0 + s : H, w1 = w0 + s < W ? w0 + s : W;
  size_t best = (size_t)h0 * W + w0;
  for (int h = h0; h < h1; h++)
    for (int x = w0; x < w1; x++)
      if (plane[(size_t)h * W + x] > plane[best]) best = (size_t)h * W + x;
  return best;
}

void ref_maxpool_forward(float *out, const float *in, int B, int C, int H, int W, int s, int ceil_mode) {
  /* in [B][C][H][W], out [B][C][Ho][Wo] */
  SHAPE_ASSERT(B > 0 && C > 0 && s > 0);
  int Ho = pool_out(H, s, ceil_mode), Wo = pool_out(W, s, ceil_mode);
  SHAPE_ASSERT(Ho > 0 && Wo > 0);
  for (size_t pl = 0; pl < (size_t)B * C; pl++) {
    const float *plane = in + pl * H * W;
    for (int oh = 0; oh < Ho; oh++)
      for (int ow = 0; ow < Wo; ow++)
        out[(pl * Ho + oh) * Wo + ow] = plane[window_argmax(plane, H, W, s, oh, ow)];
  }
}

void ref_maxpool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C,
                          int H, int W, int s, int ceil_mode) {
  /* dout, out [B][C][Ho][Wo]; in, din [B][C][H][W]. out is unused: the argmax is recomputed. */
  (void)out;
  SHAPE_ASSERT(B > 0 && C > 0 && s > 0);
  int Ho = pool_out(H, s, ceil_mode), Wo = pool_out(W, s, ceil_mode);
  SHAPE_ASSERT(Ho > 0 && Wo > 0);
  for (size_t i = 0; i < (size_t)B * C * H * W; i++) din[i] = 0.0f;
  for (size_t pl = 0; pl < (size_t)B * C; pl++) {
    const float *plane = in + pl * H * W;
    for (int oh = 0; oh < Ho; oh++)
      for (int ow = 0; ow < Wo; ow++)
        din[pl * H * W + window_argmax(plane, H, W, s, oh, ow)] = dout[(pl * Ho + oh) * Wo + ow];
  }
}

void ref_act_forward(float *out, const float *in, size_t n, float slope) {
  for (size_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : slope * in[i];
}

void ref_act_backward(float *din, const float *dout, const float *out, size_t n, float slope) {
  for (size_t i = 0; i < n; i++) din[i] = out[i] > 0.0f ? dout[i] : slope * dout[i];
}

void ref_dropout_forward(float *out, const float *in, const float *mask, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = in[i] * mask[i];
}

void ref_dropout_backward(float *din, const float *dout, const float *mask, size_t n) {
  for (size_t i = 0; i < n; i++) din[i] = dout[i] * mask[i];
}

double ref_softmax_xent_forward(float *probs, const float *logits, const int *labels, int B, int N) {
  /* logits, probs [B][N]; labels [B] in [0, N) */
  SHAPE_ASSERT(B > 0 && N > 0);
  double loss = 0;
  for (int i = 0; i < B; i++) {
    const float *z = logits + (size_t)i * N;
    SHAPE_ASSERT(labels[i] >= 0 && labels[i] < N);
    double mx = z[0];
    for (int j = 1; j < N; j++) if (z[j] > mx) mx = z[j];
    double sum = 0;
    for (int j = 0; j < N; j++) sum += exp((double)z[j] - mx);
    for (int j = 0; j < N; j++) probs[(size_t)i * N + j] = (float)(exp((double)z[j] - mx) / sum);
    loss += log(sum) - ((double)z[labels[i]] - mx);
  }
  return loss;
}

void ref_softmax_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int N, float scale) {
  /* probs, dlogits [B][N] */
  SHAPE_ASSERT(B > 0 && N > 0);
  for (int i = 0; i < B; i++) {
    SHAPE_ASSERT(labels[i] >= 0 && labels[i] < N);
    for (int j = 0; j < N; j++) {
      double g = (double)probs[(size_t)i * N + j] - (j == labels[i] ? 1.0 : 0.0);
      dlogits[(size_t)i * N + j] = (float)(g * scale);
    }
  }
}

void ref_sgd_step(float *w, float *g, float *v, size_t n, float lr, float mu, float wd) {
  /* the update as optim.h states it, in float like the optimizers */
  for (size_t i = 0; i < n; i++) {
    float gi = g[i];
    if (wd != 0) gi = gi + wd * w[i];
    if (v) { v[i] = mu * v[i] - lr * gi; w[i] = w[i] + v[i]; }
    else w[i] = w[i] - lr * gi;
    g[i] = 0;
  }
}

/* The other updates of contract/layers.h, in float like the optimizers, each operation in the
 * contract's order. */
void ref_adam_step(float *w, float *g, float *m, float *v, size_t n, float a, float b1, float b2, float eps,
                   float wd) {
  for (size_t i = 0; i < n; i++) {
    float gi = g[i];
    if (wd != 0) gi = gi + wd * w[i];
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + ((1 - b2) * gi) * gi;
    w[i] = w[i] - (a * m[i]) / (sqrtf(v[i]) + eps);
    g[i] = 0;
  }
}
void ref_nag_point(float *what, const float *w, const float *m, size_t n, float mu) {
  for (size_t i = 0; i < n; i++) what[i] = w[i] + mu * m[i];
}
void ref_avg_step(float *z, const float *w, size_t n, float r, int ema) {
  for (size_t i = 0; i < n; i++) z[i] = ema ? (1 - r) * z[i] + r * w[i] : z[i] + r * (w[i] - z[i]);
}
