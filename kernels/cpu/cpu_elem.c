/* cpu_elem.c — the element-wise and small layers of the CPU path: max-pool, leaky ReLU, dropout,
 * softmax cross-entropy. Loops are written to vectorise (branch-free selects, unit stride where
 * the layout allows) and are spread over an OpenMP team only when there is enough work to pay for
 * waking it (CPU_PAR_MIN_ELEMS). Static partitions, no reductions across threads: results do
 * not depend on the thread count. Semantics match reference/layers_ref.c exactly (first maximum
 * of a window, out's sign for the activation backward). */
#include <math.h>
#include <omp.h>
#include <string.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

static inline int elem_threads(size_t n) { return n < CPU_PAR_MIN_ELEMS ? 1 : cpu_get_threads(); }
static int pool_out(int n, int s, int ceil_mode) { return ceil_mode ? (n + s - 1) / s : n / s; }

/* 2x2 windows along one pair of rows, written as float selects so GCC vectorises them (the
 * argmax of random data is unpredictable: a branchy version ran 10x slower than the forward). The
 * winner is the last element that beats the running maximum in row-major order, i.e. the first
 * maximum, exactly as in the generic loops and the reference. */
static inline void pool2_fwd_rows(float *restrict o, const float *restrict r0, const float *restrict r1, int n) {
  for (int ow = 0; ow < n; ow++) {
    const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1];
    const float m1 = b > a ? b : a, m2 = c > m1 ? c : m1;
    o[ow] = e > m2 ? e : m2;
  }
}
static inline void pool2_bwd_rows(float *restrict d0, float *restrict d1, const float *restrict r0,
                                  const float *restrict r1, const float *restrict g, int n) {
  for (int ow = 0; ow < n; ow++) {
    const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1], gv = g[ow];
    const float m1 = b > a ? b : a, m2 = c > m1 ? c : m1;
    const float ge = e > m2 ? gv : 0.0f, not_e = e > m2 ? 0.0f : gv;      /* e wins, or gv passes on */
    const float gc = c > m1 ? not_e : 0.0f, not_ce = c > m1 ? 0.0f : not_e;
    d1[2 * ow + 1] = ge;
    d1[2 * ow] = gc;
    d0[2 * ow + 1] = b > a ? not_ce : 0.0f;
    d0[2 * ow] = b > a ? 0.0f : not_ce;
  }
}

/* One H x W plane. s is a compile-time constant in the s == 2 instantiation, so the window loops
 * unroll. Windows are clipped at the border (ceil mode); a window's first element (row-major)
 * wins ties, as in the reference: v > m keeps the earlier maximum. */
static inline __attribute__((always_inline)) void pool_fwd_plane(float *o, const float *x, int H, int W, int Ho,
                                                                 int Wo, const int s) {
  for (int oh = 0; oh < Ho; oh++) {
    const int h0 = oh * s, hn = H - h0 < s ? H - h0 : s;
    const float *r = x + (size_t)h0 * W;
    float *orow = o + (size_t)oh * Wo;
    const int Wf = W / s < Wo ? W / s : Wo; /* windows that are s wide */
    if (s == 2 && hn == 2) {
      pool2_fwd_rows(orow, r, r + W, Wf);
    } else if (hn == s) {
      for (int ow = 0; ow < Wf; ow++) {
        const float *p = r + ow * s;
        float m = p[0];
        for (int dh = 0; dh < s; dh++)
          for (int dw = 0; dw < s; dw++) { float v = p[dh * W + dw]; m = v > m ? v : m; }
        orow[ow] = m;
      }
    } else {
      for (int ow = 0; ow < Wf; ow++) {
        const float *p = r + ow * s;
        float m = p[0];
        for (int dh = 0; dh < hn; dh++)
          for (int dw = 0; dw < s; dw++) { float v = p[dh * W + dw]; m = v > m ? v : m; }
        orow[ow] = m;
      }
    }
    for (int ow = Wf; ow < Wo; ow++) { /* clipped last column (ceil mode) */
      const int wn = W - ow * s;
      const float *p = r + ow * s;
      float m = p[0];
      for (int dh = 0; dh < hn; dh++)
        for (int dw = 0; dw < wn; dw++) { float v = p[dh * W + dw]; m = v > m ? v : m; }
      orow[ow] = m;
    }
  }
}

/* din plane = dout routed to the first maximum of each window, 0 elsewhere (every din element
 * is written exactly once: windows tile the covered area, floor-mode leftovers are zeroed).
 * Full windows use selects rather than branches: the argmax of random data is unpredictable and
 * mispredicted branches made this 10x slower than the forward pass. */
static inline __attribute__((always_inline)) void pool_bwd_plane(float *dx, const float *g, const float *x, int H,
                                                                 int W, int Ho, int Wo, const int s) {
  const int Hc = Ho * s < H ? Ho * s : H, Wc = Wo * s < W ? Wo * s : W; /* covered extent */
  const int Wf = W / s < Wo ? W / s : Wo;                                /* windows that are s wide */
  for (int oh = 0; oh < Ho; oh++) {
    const int h0 = oh * s, hn = H - h0 < s ? H - h0 : s;
    const float *r = x + (size_t)h0 * W;
    float *d = dx + (size_t)h0 * W;
    const float *grow = g + (size_t)oh * Wo;
    int ow = 0;
    if (s == 2 && hn == 2) { pool2_bwd_rows(d, d + W, r, r + W, grow, Wf); ow = Wf; }
    if (hn == s)
      for (; ow < Wf; ow++) {
        const float *p = r + ow * s;
        float *q = d + ow * s;
        float m = p[0];
        int best = 0;
        for (int dh = 0; dh < s; dh++)
          for (int dw = 0; dw < s; dw++) {
            const float v = p[dh * W + dw];
            const int c = v > m;
            m = c ? v : m;
            best = c ? dh * s + dw : best;
          }
        const float gv = grow[ow];
        for (int dh = 0; dh < s; dh++)
          for (int dw = 0; dw < s; dw++) q[dh * W + dw] = dh * s + dw == best ? gv : 0.0f;
      }
    for (; ow < Wo; ow++) { /* clipped windows (ceil mode) */
      const int wn = W - ow * s < s ? W - ow * s : s;
      const float *p = r + ow * s;
      float *q = d + ow * s;
      float m = p[0];
      int best = 0;
      for (int dh = 0; dh < hn; dh++)
        for (int dw = 0; dw < wn; dw++) {
          float v = p[dh * W + dw];
          if (v > m) { m = v; best = dh * W + dw; }
        }
      const float gv = grow[ow];
      for (int dh = 0; dh < hn; dh++)
        for (int dw = 0; dw < wn; dw++) q[dh * W + dw] = dh * W + dw == best ? gv : 0.0f;
    }
    if (Wc < W)
      for (int dh = 0; dh < hn; dh++) memset(d + (size_t)dh * W + Wc, 0, sizeof(float) * (W - Wc));
  }
  if (Hc < H) memset(dx + (size_t)Hc * W, 0, sizeof(float) * (size_t)(H - Hc) * W);
}

void cpu_maxpool_forward(float *out, const float *in, int B, int C, int H, int W, int s, int ceil_mode) {
  /* in [B][C][H][W], out [B][C][Ho][Wo] */
  SHAPE_ASSERT(B > 0 && C > 0 && s > 0);
  const int Ho = pool_out(H, s, ceil_mode), Wo = pool_out(W, s, ceil_mode);
  SHAPE_ASSERT(Ho > 0 && Wo > 0);
  const long planes = (long)B * C;
  const int T = elem_threads((size_t)planes * H * W);
#pragma omp parallel for num_threads(T) if (parallel : T > 1) schedule(static)
  for (long pl = 0; pl < planes; pl++) {
    float *o = out + (size_t)pl * Ho * Wo;
    const float *x = in + (size_t)pl * H * W;
    if (s == 2) pool_fwd_plane(o, x, H, W, Ho, Wo, 2);
    else pool_fwd_plane(o, x, H, W, Ho, Wo, s);
  }
}

void cpu_maxpool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H,
                          int W, int s, int ceil_mode) {
  /* dout, out [B][C][Ho][Wo]; in, din [B][C][H][W]; out unused (the argmax is recomputed from in) */
  (void)out;
  SHAPE_ASSERT(B > 0 && C > 0 && s > 0);
  const int Ho = pool_out(H, s, ceil_mode), Wo = pool_out(W, s, ceil_mode);
  SHAPE_ASSERT(Ho > 0 && Wo > 0);
  const long planes = (long)B * C;
  const int T = elem_threads((size_t)planes * H * W);
#pragma omp parallel for num_threads(T) if (parallel : T > 1) schedule(static)
  for (long pl = 0; pl < planes; pl++) {
    float *dx = din + (size_t)pl * H * W;
    const float *g = dout + (size_t)pl * Ho * Wo, *x = in + (size_t)pl * H * W;
    if (s == 2) pool_bwd_plane(dx, g, x, H, W, Ho, Wo, 2);
    else pool_bwd_plane(dx, g, x, H, W, Ho, Wo, s);
  }
}

void cpu_act_forward(float *out, const float *in, size_t n, float slope) {
  const int T = elem_threads(n);
#pragma omp parallel for simd num_threads(T) if (parallel : T > 1) schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : slope * in[i];
}

void cpu_act_backward(float *din, const float *dout, const float *out, size_t n, float slope) {
  const int T = elem_threads(n);
#pragma omp parallel for simd num_threads(T) if (parallel : T > 1) schedule(static)
  for (size_t i = 0; i < n; i++) din[i] = out[i] > 0.0f ? dout[i] : slope * dout[i];
}

void cpu_dropout_forward(float *out, const float *in, const float *mask, size_t n) {
  const int T = elem_threads(n);
#pragma omp parallel for simd num_threads(T) if (parallel : T > 1) schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = in[i] * mask[i];
}

void cpu_dropout_backward(float *din, const float *dout, const float *mask, size_t n) {
  const int T = elem_threads(n);
#pragma omp parallel for simd num_threads(T) if (parallel : T > 1) schedule(static)
  for (size_t i = 0; i < n; i++) din[i] = dout[i] * mask[i];
}

/* Softmax rows are short (classes) and few (batch): one thread, double inside each row so the
 * loss -log p = log(sum exp(z - max)) - (z[label] - max) is accurate even for tiny p. */
double cpu_softmax_xent_forward(float *probs, const float *logits, const int *labels, int B, int N) {
  /* logits, probs [B][N]; labels [B] in [0, N) */
  SHAPE_ASSERT(B > 0 && N > 0);
  double loss = 0;
  for (int i = 0; i < B; i++) {
    const float *z = logits + (size_t)i * N;
    float *p = probs + (size_t)i * N;
    SHAPE_ASSERT(labels[i] >= 0 && labels[i] < N);
    float mx = z[0];
    for (int j = 1; j < N; j++) mx = z[j] > mx ? z[j] : mx;
    double sum = 0;
    for (int j = 0; j < N; j++) sum += exp((double)z[j] - mx);
    const double inv = 1.0 / sum;
    for (int j = 0; j < N; j++) p[j] = (float)(exp((double)z[j] - mx) * inv);
    loss += log(sum) - ((double)z[labels[i]] - mx);
  }
  return loss;
}

void cpu_softmax_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int N, float scale) {
  /* probs, dlogits [B][N] */
  SHAPE_ASSERT(B > 0 && N > 0);
  for (int i = 0; i < B; i++) {
    SHAPE_ASSERT(labels[i] >= 0 && labels[i] < N);
    const float *p = probs + (size_t)i * N;
    float *d = dlogits + (size_t)i * N;
    for (int j = 0; j < N; j++) d[j] = p[j] * scale;
    d[labels[i]] = (p[labels[i]] - 1.0f) * scale;
  }
}

/* The sgd/msgd/nag update (contract/layers.h). Four loops so that each vectorises without a branch;
 * threads split the elements above 2^16 of them (an elementwise pass: the thread count does not
 * change the result). */
#define SGD_LOOP(body)                                                                                   \
  _Pragma("omp parallel for simd if(parallel: T > 1 && n > (1 << 16)) num_threads(T) schedule(static)") \
  for (size_t i = 0; i < n; i++) { body; g[i] = 0; }
void cpu_sgd_step(float *restrict w, float *restrict g, float *restrict v, size_t n, float lr, float mu, float wd) {
  const int T = cpu_get_threads();
  if (v && wd != 0) {
    SGD_LOOP(const float gi = g[i] + wd * w[i]; v[i] = mu * v[i] - lr * gi; w[i] += v[i])
  } else if (v) {
    SGD_LOOP(v[i] = mu * v[i] - lr * g[i]; w[i] += v[i])
  } else if (wd != 0) {
    SGD_LOOP(const float gi = g[i] + wd * w[i]; w[i] -= lr * gi)
  } else {
    SGD_LOOP(w[i] -= lr * g[i])
  }
}
#undef SGD_LOOP

/* The other optimizers' updates (contract/layers.h): the loops optim_step ran before they moved
 * behind the kernel table, unchanged (one thread, the weight decay added to g in a pass of its
 * own, as vec_axpy did), so that every optimizer's results are the bits they were. */
void cpu_adam_step(float *w, float *g, float *m, float *v, size_t n, float a, float b1, float b2, float eps,
                   float wd) {
  if (wd != 0) for (size_t i = 0; i < n; i++) g[i] += wd * w[i];
  for (size_t i = 0; i < n; i++) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    w[i] -= a * m[i] / (sqrtf(v[i]) + eps);
    g[i] = 0;
  }
}
void cpu_nag_point(float *what, const float *w, const float *m, size_t n, float mu) {
  for (size_t i = 0; i < n; i++) what[i] = w[i] + mu * m[i];
}
void cpu_avg_step(float *z, const float *w, size_t n, float r, int ema) {
  if (ema) for (size_t i = 0; i < n; i++) z[i] = (1 - r) * z[i] + r * w[i];
  else for (size_t i = 0; i < n; i++) z[i] += r * (w[i] - z[i]);
}
