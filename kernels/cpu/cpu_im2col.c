/* cpu_im2col.c — im2col / col2im for stride-1, zero-padded square kernels, one image at a time.
 * col [C*k*k][Ho*Wo] with row r = (ci*k + kh)*k + kw and column oh*Wo + ow; entry =
 * img[ci][oh+kh-pad][ow+kw-pad], 0 outside the image. Every col row is a set of contiguous runs of
 * an input row (stride 1), so both directions are straight copies/adds of W-long segments, and
 * the per-image buffers stay in L2 between im2col and the GEMM that consumes them. */
#include <string.h>
#include "kernels/cpu/cpu.h"

static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int imin(int a, int b) { return a < b ? a : b; }

void cpu_im2col(float *col, const float *img, int C, int H, int W, int k, int pad, int r0, int r1) {
  (void)C;
  const int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1, kk = k * k;
  for (int r = r0; r < r1; r++) {
    const int ci = r / kk, kh = (r / k) % k, kw = r % k;
    const float *src = img + (size_t)ci * H * W;
    float *dst = col + (size_t)r * Ho * Wo;
    /* valid output columns: 0 <= ow + kw - pad < W */
    const int ow0 = imin(Wo, imax(0, pad - kw)), ow1 = imax(ow0, imin(Wo, W + pad - kw));
    const int off = kw - pad;
    for (int oh = 0; oh < Ho; oh++) {
      const int ih = oh + kh - pad;
      float *d = dst + (size_t)oh * Wo;
      if (ih < 0 || ih >= H) { memset(d, 0, sizeof(float) * Wo); continue; }
      const float *s = src + (size_t)ih * W + off;
      for (int ow = 0; ow < ow0; ow++) d[ow] = 0.0f;
      for (int ow = ow0; ow < ow1; ow++) d[ow] = s[ow];
      for (int ow = ow1; ow < Wo; ow++) d[ow] = 0.0f;
    }
  }
}

void cpu_col2im(float *img, const float *col, int C, int H, int W, int k, int pad, int c0, int c1) {
  (void)C;
  const int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  memset(img + (size_t)c0 * H * W, 0, sizeof(float) * (size_t)(c1 - c0) * H * W);
  for (int ci = c0; ci < c1; ci++) {
    float *dst = img + (size_t)ci * H * W;
    for (int kh = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++) {
        const float *src = col + ((size_t)(ci * k + kh) * k + kw) * Ho * Wo;
        const int ow0 = imin(Wo, imax(0, pad - kw)), ow1 = imax(ow0, imin(Wo, W + pad - kw));
        const int oh0 = imin(Ho, imax(0, pad - kh)), oh1 = imax(oh0, imin(Ho, H + pad - kh));
        const int off = kw - pad;
        for (int oh = oh0; oh < oh1; oh++) {
          float *d = dst + (size_t)(oh + kh - pad) * W + off;
          const float *s = src + (size_t)oh * Wo;
          for (int ow = ow0; ow < ow1; ow++) d[ow] += s[ow];
        }
      }
  }
}
