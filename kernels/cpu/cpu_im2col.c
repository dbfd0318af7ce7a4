/* cpu_im2col.c — im2col / col2im for stride-1, zero-padded square kernels, one image at a time.
 * col [C*k*k][Ho*Wo] with row r = (ci*k + kh)*k + kw and column oh*Wo + ow; entry =
 * img[ci][oh+kh-pad][ow+kw-pad], 0 outside the image.
 * "Same" convolutions (k == 2*pad + 1, so Ho == H and Wo == W), the nets' usual case, take a fast
 * path: a col row is then the whole image plane shifted by d = (kh-pad)*W + (kw-pad), so it is one
 * long vectorised copy (im2col) or add (col2im), plus zeroing the rows that fall outside the image
 * and the kw-pad columns per row that wrap around to the neighbouring image row. Other shapes copy
 * W-long runs. Per-image buffers stay in L2 between im2col and the GEMM that consumes them. */
#include <string.h>
#include "kernels/cpu/cpu.h"

static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int imin(int a, int b) { return a < b ? a : b; }

/* Same-conv geometry of tap (kh, kw): image rows [oh0, oh1) are valid, dx = kw - pad. */
typedef struct { int oh0, oh1, dx; long d; } tap_t;
static inline tap_t same_tap(int H, int W, int k, int pad, int kh, int kw) {
  (void)k;
  tap_t t;
  const int dy = kh - pad;
  t.dx = kw - pad;
  t.oh0 = imax(0, -dy); t.oh1 = imin(H, H - dy);
  t.d = (long)dy * W + t.dx;
  return t;
}

/* Inline loops, not libc calls: rows are short (P = 49 floats for a 7x7 map) and a memset/memcpy
 * call per row costs more than the row; GCC would otherwise turn the loops back into calls. */
#define NO_LIBC_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))

NO_LIBC_LOOPS void cpu_im2col(float *col, size_t ld, const float *img, int C, int H, int W, int k, int pad, int c0,
                              int c1, int p0, int p1) {
  (void)C;
  const int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1, K = (c1 - c0) * k * k;
  const size_t P = (size_t)Ho * Wo;
  int ci = c0, kh = 0, kw = 0; /* advanced with r: no divisions per row */
  if (k == 2 * pad + 1) {
    const int ohA = p0 / W, ohB = (p1 + W - 1) / W; /* image rows touched by [p0, p1) */
    for (int r = 0; r < K; r++, kw = kw + 1 < k ? kw + 1 : 0, kh = kw ? kh : (kh + 1 < k ? kh + 1 : 0),
             ci = kw || kh ? ci : ci + 1) {
      const tap_t t = same_tap(H, W, k, pad, kh, kw);
      const float *src = img + (size_t)ci * P;
      float *dst = col + (size_t)r * ld; /* dst[p - p0] for p in [p0, p1) */
      /* copy range: valid rows, minus the |dx| wrap positions at its ends so no read leaves the
       * plane (they are zeroed with the other wrap positions below) */
      long a = (long)t.oh0 * W + (t.dx < 0 ? -t.dx : 0), e = (long)t.oh1 * W - (t.dx > 0 ? t.dx : 0);
      if (t.oh1 <= t.oh0) a = e = p0;
      const long lo = a < p0 ? p0 : a > p1 ? p1 : a, hi = e < lo ? lo : e > p1 ? p1 : e;
      for (long p = p0; p < lo; p++) dst[p - p0] = 0.0f;
      for (long p = lo; p < hi; p++) dst[p - p0] = src[p + t.d];
      for (long p = hi; p < p1; p++) dst[p - p0] = 0.0f;
      if (t.dx == 0) continue;
      const int c0 = t.dx < 0 ? 0 : imax(0, W - t.dx), c1 = t.dx < 0 ? imin(W, -t.dx) : W;
      for (int oh = imax(t.oh0, ohA); oh < imin(t.oh1, ohB); oh++)
        for (int c = c0; c < c1; c++) {
          const long p = (long)oh * W + c;
          if (p >= p0 && p < p1) dst[p - p0] = 0.0f;
        }
    }
    return;
  }
  const int ohA = p0 / Wo, ohB = (p1 + Wo - 1) / Wo;
  for (int r = 0; r < K; r++, kw = kw + 1 < k ? kw + 1 : 0, kh = kw ? kh : (kh + 1 < k ? kh + 1 : 0),
           ci = kw || kh ? ci : ci + 1) {
    const float *src = img + (size_t)ci * H * W;
    float *dst = col + (size_t)r * ld;
    /* valid output columns: 0 <= ow + kw - pad < W */
    const int ow0 = imin(Wo, imax(0, pad - kw)), ow1 = imax(ow0, imin(Wo, W + pad - kw));
    const int off = kw - pad;
    for (int oh = ohA; oh < ohB; oh++) {
      const int ih = oh + kh - pad;
      const int owa = imax(0, p0 - oh * Wo), owb = imin(Wo, p1 - oh * Wo); /* this row's part of [p0, p1) */
      const long db = (long)oh * Wo - p0, sb = (long)ih * W + off; /* dst[db + ow] <- src[sb + ow] */
      if (ih < 0 || ih >= H) { for (int ow = owa; ow < owb; ow++) dst[db + ow] = 0.0f; continue; }
      for (int ow = owa; ow < imin(ow0, owb); ow++) dst[db + ow] = 0.0f;
      for (int ow = imax(ow0, owa); ow < imin(ow1, owb); ow++) dst[db + ow] = src[sb + ow];
      for (int ow = imax(ow1, owa); ow < owb; ow++) dst[db + ow] = 0.0f;
    }
  }
}

/* col2im may modify col (the same-conv path zeroes the wrap positions before its shifted adds). */
NO_LIBC_LOOPS void cpu_col2im(float *img, float *col, int C, int H, int W, int k, int pad, int c0, int c1) {
  (void)C;
  const int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1, kk = k * k;
  const size_t P = (size_t)Ho * Wo;
  if (k == 2 * pad + 1) {
    for (int ci = c0; ci < c1; ci++) {
      float *dst = img + (size_t)ci * P;
      /* the centre tap covers the whole plane with no shift: it initialises din, the others add */
      const float *centre = col + ((size_t)(ci - c0) * kk + (size_t)pad * k + pad) * P;
      for (size_t p = 0; p < P; p++) dst[p] = centre[p];
      for (int kh = 0; kh < k; kh++)
        for (int kw = 0; kw < k; kw++) {
          if (kh == pad && kw == pad) continue;
          const tap_t t = same_tap(H, W, k, pad, kh, kw);
          if (t.oh1 <= t.oh0) continue;
          float *src = col + ((size_t)(ci - c0) * kk + (size_t)kh * k + kw) * P;
          if (t.dx < 0)
            for (int oh = t.oh0; oh < t.oh1; oh++)
              for (int c = 0; c < -t.dx && c < W; c++) src[(size_t)oh * W + c] = 0.0f;
          else if (t.dx > 0)
            for (int oh = t.oh0; oh < t.oh1; oh++)
              for (int c = imax(0, W - t.dx); c < W; c++) src[(size_t)oh * W + c] = 0.0f;
          const size_t p0 = (size_t)t.oh0 * W, p1 = (size_t)t.oh1 * W;
          const long q0 = (long)p0 + (t.dx < 0 ? -t.dx : 0), q1 = (long)p1 - (t.dx > 0 ? t.dx : 0);
          for (long p = q0; p < q1; p++) dst[p + t.d] += src[p];
        }
    }
    return;
  }
  memset(img + (size_t)c0 * H * W, 0, sizeof(float) * (size_t)(c1 - c0) * H * W);
  for (int ci = c0; ci < c1; ci++) {
    float *dst = img + (size_t)ci * H * W;
    for (int kh = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++) {
        const float *src = col + ((size_t)(ci - c0) * kk + (size_t)kh * k + kw) * P;
        const int ow0 = imin(Wo, imax(0, pad - kw)), ow1 = imax(ow0, imin(Wo, W + pad - kw));
        const int oh0 = imin(Ho, imax(0, pad - kh)), oh1 = imax(oh0, imin(Ho, H + pad - kh));
        const int off = kw - pad;
        for (int oh = oh0; oh < oh1; oh++) {
          const long db = (long)(oh + kh - pad) * W + off, sb = (long)oh * Wo; /* dst[db + ow] += src[sb + ow] */
          for (int ow = ow0; ow < ow1; ow++) dst[db + ow] += src[sb + ow];
        }
      }
  }
}
