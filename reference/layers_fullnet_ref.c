/* layers_fullnet_ref.c — the oracle for the layers of the papers' full-size nets
 * (contract/layers.h, PDL_DECLARE_FULLNET_LAYERS): strided conv, max-pool with its own window and
 * stride, batch normalization, global average pooling. Naive loops, one output element at a time,
 * sums in double, each output rounded once; conventions of layers.h. */
#include <math.h>
#include "reference/ref.h"
#include "util/util.h"

static int conv_s_out(int n, int k, int pad, int st) { return (n + 2 * pad - k) / st + 1; }

void ref_conv_s_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                        int Co, int k, int pad, int st, float *scratch) {
  (void)scratch;
  SHAPE_ASSERT(B > 0 && Ci > 0 && Co > 0 && k > 0 && pad >= 0 && st >= 1 && H + 2 * pad >= k && W + 2 * pad >= k);
  const int Ho = conv_s_out(H, k, pad, st), Wo = conv_s_out(W, k, pad, st);
  for (int n = 0; n < B; n++)
    for (int co = 0; co < Co; co++)
      for (int oh = 0; oh < Ho; oh++)
        for (int ow = 0; ow < Wo; ow++) {
          double s = b[co];
          for (int ci = 0; ci < Ci; ci++)
            for (int kh = 0; kh < k; kh++)
              for (int kw = 0; kw < k; kw++) {
                const int ih = oh * st + kh - pad, iw = ow * st + kw - pad;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += (double)in[(((size_t)n * Ci + ci) * H + ih) * W + iw] *
                     (double)w[(((size_t)co * Ci + ci) * k + kh) * k + kw];
              }
          out[(((size_t)n * Co + co) * Ho + oh) * Wo + ow] = (float)s;
        }
}

void ref_conv_s_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                         int Ci, int H, int W, int Co, int k, int pad, int st, float *scratch) {
  (void)scratch;
  SHAPE_ASSERT(B > 0 && Ci > 0 && Co > 0 && k > 0 && pad >= 0 && st >= 1 && H + 2 * pad >= k && W + 2 * pad >= k);
  const int Ho = conv_s_out(H, k, pad, st), Wo = conv_s_out(W, k, pad, st);
  for (int co = 0; co < Co; co++) {
    double s = 0;
    for (int n = 0; n < B; n++)
      for (int p = 0; p < Ho * Wo; p++) s += dout[((size_t)n * Co + co) * Ho * Wo + p];
    db[co] += (float)s;
  }
  for (int co = 0; co < Co; co++)
    for (int ci = 0; ci < Ci; ci++)
      for (int kh = 0; kh < k; kh++)
        for (int kw = 0; kw < k; kw++) {
          double s = 0;
          for (int n = 0; n < B; n++)
            for (int oh = 0; oh < Ho; oh++)
              for (int ow = 0; ow < Wo; ow++) {
                const int ih = oh * st + kh - pad, iw = ow * st + kw - pad;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += (double)dout[(((size_t)n * Co + co) * Ho + oh) * Wo + ow] *
                     (double)in[(((size_t)n * Ci + ci) * H + ih) * W + iw];
              }
          dw[(((size_t)co * Ci + ci) * k + kh) * k + kw] += (float)s;
        }
  if (!din) return;
  for (int n = 0; n < B; n++)
    for (int ci = 0; ci < Ci; ci++)
      for (int ih = 0; ih < H; ih++)
        for (int iw = 0; iw < W; iw++) {
          double s = 0;
          for (int co = 0; co < Co; co++)
            for (int kh = 0; kh < k; kh++)
              for (int kw = 0; kw < k; kw++) {
                const int th = ih - kh + pad, tw = iw - kw + pad;   /* = oh*st, ow*st */
                if (th < 0 || tw < 0 || th % st || tw % st) continue;
                const int oh = th / st, ow = tw / st;
                if (oh >= Ho || ow >= Wo) continue;
                s += (double)dout[(((size_t)n * Co + co) * Ho + oh) * Wo + ow] *
                     (double)w[(((size_t)co * Ci + ci) * k + kh) * k + kw];
              }
          din[(((size_t)n * Ci + ci) * H + ih) * W + iw] = (float)s;
        }
}

/* Pooled extent along one axis of a k-window, stride-s pool (contract/layers.h). */
static int pool_out(int n, int k, int s, int ceil_mode) { return (n - k + (ceil_mode ? s - 1 : 0)) / s + 1; }

/* Index (into one H x W plane) of the first maximum of window (oh, ow), scanning row-major. */
static size_t window_argmax(const float *plane, int H, int W, int k, int s, int oh, int ow) {
  const int h0 = oh * s, w0 = ow * s, h1 = h0 + k < H ? h0 + k : H, w1 = w0 + k < W ? w0 + k : W;
  size_t best = (size_t)h0 * W + w0;
  for (int h = h0; h < h1; h++)
    for (int x = w0; x < w1; x++)
      if (plane[(size_t)h * W + x] > plane[best]) best = (size_t)h * W + x;
  return best;
}

void ref_pool_forward(float *out, const float *in, int B, int C, int H, int W, int k, int s, int ceil_mode) {
  SHAPE_ASSERT(B > 0 && C > 0 && k >= 1 && s >= 1 && H >= k && W >= k);
  const int Ho = pool_out(H, k, s, ceil_mode), Wo = pool_out(W, k, s, ceil_mode);
  for (size_t p = 0; p < (size_t)B * C; p++) {
    const float *plane = in + p * H * W;
    for (int oh = 0; oh < Ho; oh++)
      for (int ow = 0; ow < Wo; ow++) out[(p * Ho + oh) * Wo + ow] = plane[window_argmax(plane, H, W, k, s, oh, ow)];
  }
}

void ref_pool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H, int W,
                       int k, int s, int ceil_mode) {
  (void)out;
  SHAPE_ASSERT(B > 0 && C > 0 && k >= 1 && s >= 1 && H >= k && W >= k);
  const int Ho = pool_out(H, k, s, ceil_mode), Wo = pool_out(W, k, s, ceil_mode);
  for (size_t p = 0; p < (size_t)B * C; p++) {
    const float *plane = in + p * H * W;
    float *dplane = din + p * H * W;
    /* each input position: the sum, in double, of the windows whose first maximum it is */
    for (int h = 0; h < H; h++)
      for (int x = 0; x < W; x++) {
        double g = 0;
        for (int oh = 0; oh < Ho; oh++)
          for (int ow = 0; ow < Wo; ow++)
            if (window_argmax(plane, H, W, k, s, oh, ow) == (size_t)h * W + x) g += dout[(p * Ho + oh) * Wo + ow];
        dplane[(size_t)h * W + x] = (float)g;
      }
  }
}

/* mean and biased variance of channel c over the batch, in double, two passes */
static void bn_stats(const float *in, int B, int C, int HW, int c, double *mean, double *var) {
  const double N = (double)B * HW;
  double s = 0, q = 0;
  for (int n = 0; n < B; n++)
    for (int p = 0; p < HW; p++) s += in[((size_t)n * C + c) * HW + p];
  const double m = s / N;
  for (int n = 0; n < B; n++)
    for (int p = 0; p < HW; p++) {
      const double d = in[((size_t)n * C + c) * HW + p] - m;
      q += d * d;
    }
  *mean = m; *var = q / N;
}

void ref_bn_forward(float *out, const float *in, const float *gamma, const float *beta, float *rmean, float *rvar,
                    float *save, int B, int C, int HW, int train, float momentum, float eps) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0 && eps > 0);
  const double N = (double)B * HW;
  for (int c = 0; c < C; c++) {
    double mean, var;
    if (train) {
      bn_stats(in, B, C, HW, c, &mean, &var);
      save[c] = (float)mean;
      save[C + c] = (float)(1.0 / sqrt(var + (double)eps));
      rmean[c] = (float)((1.0 - (double)momentum) * rmean[c] + (double)momentum * mean);
      rvar[c] = (float)((1.0 - (double)momentum) * rvar[c] + (double)momentum * var * N / (N > 1 ? N - 1 : 1));
    } else {
      mean = rmean[c]; var = rvar[c];
    }
    const double inv = 1.0 / sqrt(var + (double)eps);
    for (int n = 0; n < B; n++)
      for (int p = 0; p < HW; p++) {
        const size_t i = ((size_t)n * C + c) * HW + p;
        out[i] = (float)((double)gamma[c] * ((in[i] - mean) * inv) + (double)beta[c]);
      }
  }
}

void ref_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in, const float *gamma,
                     const float *save, int B, int C, int HW) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  const double N = (double)B * HW;
  for (int c = 0; c < C; c++) {
    const double mean = save[c], inv = save[C + c];   /* the forward's, as the contract says */
    double sd = 0, sdx = 0;
    for (int n = 0; n < B; n++)
      for (int p = 0; p < HW; p++) {
        const size_t i = ((size_t)n * C + c) * HW + p;
        sd += dout[i];
        sdx += (double)dout[i] * ((in[i] - mean) * inv);
      }
    dbeta[c] += (float)sd;
    dgamma[c] += (float)sdx;
    if (!din) continue;
    const double a = (double)gamma[c] * inv / N;
    for (int n = 0; n < B; n++)
      for (int p = 0; p < HW; p++) {
        const size_t i = ((size_t)n * C + c) * HW + p;
        din[i] = (float)(a * (N * dout[i] - sd - ((in[i] - mean) * inv) * sdx));
      }
  }
}

void ref_gap_forward(float *out, const float *in, int B, int C, int HW) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  for (size_t p = 0; p < (size_t)B * C; p++) {
    double s = 0;
    for (int i = 0; i < HW; i++) s += in[p * HW + i];
    out[p] = (float)(s / HW);
  }
}

void ref_gap_backward(float *din, const float *dout, int B, int C, int HW) {
  SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  for (size_t p = 0; p < (size_t)B * C; p++)
    for (int i = 0; i < HW; i++) din[p * HW + i] = (float)((double)dout[p] / HW);
}
