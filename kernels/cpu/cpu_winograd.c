/* cpu_winograd.c — 3x3 stride-1 convolution (any zero padding) by Winograd F(2x2,3x3), forward
 * and backward, OpenBLAS sgemm + OpenMP. cpu_conv.c calls it for the shapes cpu_conv_winograd()
 * accepts; the layer semantics (and the fused activation) are those of core/layers.h.
 *
 * Math. The padded input is cut into 4x4 tiles d at stride 2 (tile (ty, tx) covers padded rows
 * 2ty..2ty+3 and columns 2tx..2tx+3, padded row pr = image row pr - pad, zero outside the image)
 * that give 2x2 output tiles; th x tw = ceil(Ho/2) x ceil(Wo/2) tiles per image, outputs past
 * Ho/Wo are cropped. With the standard matrices (1-D: BT d = (d0-d2, d1+d2, d2-d1, d1-d3),
 * G g = (g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2), AT m = (m0+m1+m2, m1-m2-m3)), per tile
 *     Y = AT [ (G g GT) . (BT d B) ] A,
 * i.e. 16 GEMMs, one per xi = 4a+b of the 4x4 transform domain (a: row, b: column), over
 * (co, ci, tile):
 *     forward   M_xi[Co][T]  = U_xi[Co][Ci] x V_xi[Ci][T]           U = G g GT,  V = BT d B
 *     backward  dM = A dY AT per output tile (dY = 0 past the edge)
 *               dV_xi[Ci][T] = U_xi^T x dM_xi,  din = sum over tiles of B dV BT (windows overlap;
 *                                                  padding entries are dropped)
 *               dU_xi[Co][Ci] = dM_xi x V_xi^T, dw += GT dU G
 * Every backward transform is the exact adjoint of its forward one (1-D: A y = (y0, y0+y1,
 * y0-y1, -y1), B v = (v0, v1-v2+v3, -v0+v1+v2, -v3), GT u = (u0+(u1+u2)/2, (u1-u2)/2,
 * (u1+u2)/2+u3)), so the gradients are the exact gradients of this forward, up to rounding.
 *
 * Layout. V, M (and dM, dV) are [16][C][T] with T = the tiles of a group of images (image-major,
 * then tile row, then tile column), so each GEMM is one contiguous call; a group holds as many
 * images as keep V + M within WINO_GROUP_BYTES (L2). U is [16][Co][Ci] (GEMM A operand, lda Ci).
 * The 16 planes of each are an odd number of cache lines apart (wp()).
 * Each transform is one flat loop over all tiles of an image (or group), vectorised over the
 * tile index: image rows hold only 4-14 tiles in the nets here, too short for vectors (a loop per
 * tile row ran 2-3x slower). To make a tile's 16 inputs linear in its index, the padded rows are
 * first copied as two windows, padded columns [0, 2tw) and [2, 2tw+2), rows ordered by parity
 * (wino_input; wino_outgrad and wino_ingrad use the same layout and its adjoint).
 *
 * Threading (static partitions, so results are bit-identical for a given thread count).
 * B >= threads (as cpu_conv.c): each thread takes a contiguous block of images (in groups) with
 * private V/M/dU; U is computed once per call, output channels split over the team, then one
 * barrier. Backward: dU partials of all threads are summed in thread order (output channels
 * split over the team, after one barrier) and transformed into dw; db as cpu_conv.c (thread 0
 * in place, partials added in thread order).
 * B < threads (batch 1): the team shares each image. Transforms are split by channels (input
 * transform and din by input channel; pre-activation gradient, db, dM and the output transform
 * by output channel) and the 16 GEMMs by xi, so every GEMM is a whole-image one as on one
 * thread and nothing is computed twice; V, M/dM and dU are shared (thread 0's), and two barriers
 * per image separate the phases. (Splitting input channels in the backward instead, with dM
 * computed by every thread, and tile rows in the forward, scaled 1.1x and 1.4x on two threads.)
 * Fused activation: forward applies bias then act to each output as it is formed; backward first
 * forms g = act'(out) * dout for the image (the expression of cpu_act_backward) and then runs
 * exactly the unfused code on g, so fused == unfused bit for bit.
 * Scratch: U [16][Co][Ci] shared, then per thread V [16][Ci][T], M [16][Co][T], dU [16][Co][Ci],
 * db [Co], g [Co][Ho*Wo], and transform temporaries. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include "core/layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

/* Short zero/copy loops stay inline: a memset/memcpy call per 8-28-float row costs more. */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

/* V + M of one group of images stay below this (L2 is 2 MiB per core on the machines we tune on;
 * 1 and 2 MiB ran alike on the reference net at batch 128, 256 KiB slower) */
#ifndef WINO_GROUP_BYTES
#define WINO_GROUP_BYTES ((size_t)1 << 20)
#endif

typedef struct {
  int B, Ci, H, W, Co, pad, Ho, Wo, P;
  int th, tw, tpi, nb; /* tile rows, tile columns, tiles per image, images per group */
  int act;
  float slope;
  int pool;            /* 0, or fused 2x2 max-pool: 1 floor mode, 2 ceil mode (tiles = pool windows) */
  size_t on;           /* output floats per image: Co*P, or Co*tpi pooled */
  uint8_t *idx;        /* pool: argmax of each window, [B][Co][tpi] (written forward, read backward) */
  size_t u_n, v_n, m_n, du_n, db_n, g_n, tmp_n, per_thread;
} wino_t;

/* Stride between the 16 xi planes of an n-float matrix: whole 64-byte lines, an odd number of
 * them, so the 16 streams of a transform fall into 16 different cache sets (the power-of-two
 * stride of a 128x64 U put them all into one L1 set: its transform then took ~5x its 16 GEMMs). */
static inline size_t wp(size_t n) {
  n = cpu_round16(n);
  return (n / 16) % 2 ? n : n + 16;
}

/* pool = 0: the conv's own tiling. pool = 1/2 (floor/ceil): only the tiles that are 2x2 pool
 * windows, th x tw = the pooled map; scratch sizes stay those of the unpooled shape (the pooled
 * groups are capped at its tiles per GEMM), so cpu_conv_scratch_floats covers both. */
static wino_t wino_shape(int B, int Ci, int H, int W, int Co, int pad, int pool) {
  wino_t s;
  SHAPE_ASSERT(B > 0 && Ci > 0 && H > 0 && W > 0 && Co > 0 && pad >= 0);
  s.B = B; s.Ci = Ci; s.H = H; s.W = W; s.Co = Co; s.pad = pad;
  s.Ho = H + 2 * pad - 2; s.Wo = W + 2 * pad - 2;
  SHAPE_ASSERT(s.Ho > 0 && s.Wo > 0);
  s.P = s.Ho * s.Wo;
  s.th = (s.Ho + 1) / 2; s.tw = (s.Wo + 1) / 2; s.tpi = s.th * s.tw;
  const size_t img_bytes = (size_t)16 * (Ci + Co) * s.tpi * sizeof(float);
  size_t nb = WINO_GROUP_BYTES / img_bytes;
  if (nb < 1) nb = 1;
  if (nb > (size_t)B) nb = (size_t)B;
  s.nb = (int)nb;
  s.act = 0; s.slope = 0.0f;
  const size_t T = (size_t)s.nb * s.tpi, rs = (size_t)(s.th + 1) * 2 * s.tw;
  s.u_n = 16 * wp((size_t)Co * Ci);
  s.v_n = 16 * wp((size_t)Ci * T);
  s.m_n = 16 * wp((size_t)Co * T);
  s.du_n = 16 * wp((size_t)Co * Ci);
  s.db_n = cpu_round16((size_t)Co);
  s.g_n = cpu_round16((size_t)Co * s.P);
  /* the largest of the transforms' temporaries: wino_input 4 rs, wino_output 4T, wino_outgrad
   * 4 tpi, wino_ingrad 4 rs + 8 tpi (rs = (th + 1) * 2tw) */
  size_t t = 4 * rs + 8 * (size_t)s.tpi;
  if (4 * T > t) t = 4 * T;
  s.tmp_n = cpu_round16(t);
  s.per_thread = s.v_n + s.m_n + s.du_n + s.db_n + s.g_n + s.tmp_n;
  s.pool = pool; s.idx = NULL;
  s.on = (size_t)Co * s.P;
  if (pool) {
    s.th = pool == 2 ? (s.Ho + 1) / 2 : s.Ho / 2;
    s.tw = pool == 2 ? (s.Wo + 1) / 2 : s.Wo / 2;
    SHAPE_ASSERT(s.th > 0 && s.tw > 0);
    s.tpi = s.th * s.tw;
    size_t nbp = T / (size_t)s.tpi; /* no more tiles per GEMM than the unpooled shape's */
    if (nbp < 1) nbp = 1;
    if (nbp > (size_t)B) nbp = (size_t)B;
    s.nb = (int)nbp;
    s.on = (size_t)Co * s.tpi;
  }
  return s;
}

size_t cpu_wino_scratch_floats(int B, int Ci, int H, int W, int Co, int pad, int nthreads) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0);
  size_t T = nthreads < 1 ? 1 : (size_t)nthreads;
  return s.u_n + T * s.per_thread;
}

int cpu_wino_tiles(int B, int Ci, int H, int W, int Co, int pad) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0);
  return s.nb * s.tpi;
}

/* ------------------------------------------------------------------------------- weights */

/* Filters are [9] taps each, so a loop over filters reads with stride 9 and would not
 * vectorise: both weight transforms move blocks of WB filters through a tap-major buffer
 * ([9][WB], plain copies) and transform them in a unit-stride vector loop. */
#define WB 64

/* U[xi][co][ci] = (G g GT)[a][b] for output channels [co0, co1); g = w[co][ci] (3x3); xi stride xs. */
static void wino_weights(float *restrict U, size_t xs, const float *restrict w, int Ci, int co0, int co1) {
  const size_t j1 = (size_t)co1 * Ci;
  float gt[9][WB];
  for (size_t jb = (size_t)co0 * Ci; jb < j1; jb += WB) {
    const int n = j1 - jb < WB ? (int)(j1 - jb) : WB;
    const float *wb = w + jb * 9;
    for (int k = 0; k < 9; k++) /* tap-outer: 1.7x faster than filter-outer here */
      for (int jj = 0; jj < n; jj++) gt[k][jj] = wb[jj * 9 + k];
    float *u = U + jb;
#pragma omp simd
    for (int jj = 0; jj < n; jj++) {
      /* G over rows, per column c: t0 = g0, t1 = (g0+g1+g2)/2, t2 = (g0-g1+g2)/2, t3 = g2 */
#define GCOL(c) const float t0##c = gt[c][jj], t1##c = 0.5f * (gt[c][jj] + gt[3 + c][jj] + gt[6 + c][jj]), \
                            t2##c = 0.5f * (gt[c][jj] - gt[3 + c][jj] + gt[6 + c][jj]), t3##c = gt[6 + c][jj];
      GCOL(0) GCOL(1) GCOL(2)
#undef GCOL
      /* then over columns, per row a */
#define GROW(a) u[(size_t)(4 * a + 0) * xs + jj] = t##a##0; \
                u[(size_t)(4 * a + 1) * xs + jj] = 0.5f * (t##a##0 + t##a##1 + t##a##2); \
                u[(size_t)(4 * a + 2) * xs + jj] = 0.5f * (t##a##0 - t##a##1 + t##a##2); \
                u[(size_t)(4 * a + 3) * xs + jj] = t##a##2;
      GROW(0) GROW(1) GROW(2) GROW(3)
#undef GROW
    }
  }
}

/* dw[co][ci] += GT dU G for output channels [co0, co1); dU[xi][co][ci], xi stride xs. */
static void wino_wgrad(float *restrict dw, const float *restrict dU, size_t xs, int Ci, int co0, int co1) {
  const size_t j1 = (size_t)co1 * Ci;
  float dt[9][WB];
  for (size_t jb = (size_t)co0 * Ci; jb < j1; jb += WB) {
    const int n = j1 - jb < WB ? (int)(j1 - jb) : WB;
    const float *u = dU + jb;
#pragma omp simd
    for (int jj = 0; jj < n; jj++) {
      /* GT over rows, per column b: r0 = u0 + (u1+u2)/2, r1 = (u1-u2)/2, r2 = (u1+u2)/2 + u3 */
#define GTCOL(b) const float u0##b = u[(size_t)(b) * xs + jj], u1##b = u[(size_t)(4 + b) * xs + jj], \
                             u2##b = u[(size_t)(8 + b) * xs + jj], u3##b = u[(size_t)(12 + b) * xs + jj]; \
                 const float r0##b = u0##b + 0.5f * (u1##b + u2##b), r1##b = 0.5f * (u1##b - u2##b), \
                             r2##b = 0.5f * (u1##b + u2##b) + u3##b;
      GTCOL(0) GTCOL(1) GTCOL(2) GTCOL(3)
#undef GTCOL
#define GTROW(a) dt[3 * a + 0][jj] = r##a##0 + 0.5f * (r##a##1 + r##a##2); \
                 dt[3 * a + 1][jj] = 0.5f * (r##a##1 - r##a##2); \
                 dt[3 * a + 2][jj] = 0.5f * (r##a##1 + r##a##2) + r##a##3;
      GTROW(0) GTROW(1) GTROW(2)
#undef GTROW
    }
    float *db = dw + jb * 9;
    for (int k = 0; k < 9; k++)
      for (int jj = 0; jj < n; jj++) db[jj * 9 + k] += dt[k][jj];
  }
}

/* ------------------------------------------------------------------------------- transforms */

/* dst[j] = xr[j + off] where 0 <= j + off < W, else 0; j in [0, n). */
static inline void row_shift(float *restrict dst, const float *restrict xr, int W, int off, int n) {
  int a = -off, e = W - off;
  a = a < 0 ? 0 : a > n ? n : a;
  e = e > n ? n : e < a ? a : e;
  for (int j = 0; j < a; j++) dst[j] = 0.0f;
  for (int j = a; j < e; j++) dst[j] = xr[j + off];
  for (int j = e; j < n; j++) dst[j] = 0.0f;
}

static inline void row_zero(float *dst, int n) {
  for (int j = 0; j < n; j++) dst[j] = 0.0f;
}

/* V[xi][c - c0][col + ty*tw + tx] = (BT d B)[a][b] for channels [c0, c1) of one image
 * x [Ci][H][W]; ldv = V's row length, xs = its xi stride.
 * Per channel, every padded row pr = 2k + par is copied twice, as its padded columns [0, 2tw) (L)
 * and [2, 2tw+2) (R), rows ordered by parity then k; tile t = ty*tw + tx then finds its 4 rows
 * at L/R[par][ty or ty+1] offsets 2t, 2t+1, all linear in t. */
static void wino_input(const wino_t *s, float *restrict V, size_t ldv, size_t xs, size_t col, const float *x, int c0,
                       int c1, float *tmp) {
  const int tw = s->tw, w2 = 2 * tw, H = s->H, W = s->W, pad = s->pad, nk = s->th + 1, nT = s->tpi;
  const size_t ps = (size_t)nk * w2;
  float *L = tmp, *R = tmp + 2 * ps;
  for (int c = c0; c < c1; c++) {
    const float *xc = x + (size_t)c * H * W;
    for (int k = 0; k < nk; k++) /* image rows in order: the first touch of x streams from memory */
      for (int par = 0; par < 2; par++) {
        const int ih = 2 * k + par - pad;
        float *lr = L + par * ps + (size_t)k * w2, *rr = R + par * ps + (size_t)k * w2;
        if (ih < 0 || ih >= H) { row_zero(lr, w2); row_zero(rr, w2); continue; }
        row_shift(lr, xc + (size_t)ih * W, W, -pad, w2);
        row_shift(rr, xc + (size_t)ih * W, W, 2 - pad, w2);
      }
    const float *L0 = L, *L1 = L + ps, *R0 = R, *R1 = R + ps;
    float *v = V + (size_t)(c - c0) * ldv + col;
#pragma omp simd
    for (int t = 0; t < nT; t++) {
      const size_t i = 2 * (size_t)t, j = i + w2; /* rows 2ty, 2ty+1 at i; 2ty+2, 2ty+3 at j */
      /* BT along each row r: h_r = (d0 - d2, d1 + d2, d2 - d1, d1 - d3) of its 4 columns */
#define BTROW(r, Lp, Rp, o) const float d##r##0 = Lp[o], d##r##1 = Lp[o + 1], d##r##2 = Rp[o], d##r##3 = Rp[o + 1]; \
      const float h##r##0 = d##r##0 - d##r##2, h##r##1 = d##r##1 + d##r##2, h##r##2 = d##r##2 - d##r##1, \
                  h##r##3 = d##r##1 - d##r##3;
      BTROW(0, L0, R0, i) BTROW(1, L1, R1, i) BTROW(2, L0, R0, j) BTROW(3, L1, R1, j)
#undef BTROW
      /* then down each column b */
#define BTCOL(b) v[(size_t)(b) * xs + t] = h0##b - h2##b; v[(size_t)(4 + b) * xs + t] = h1##b + h2##b; \
      v[(size_t)(8 + b) * xs + t] = h2##b - h1##b; v[(size_t)(12 + b) * xs + t] = h1##b - h3##b;
      BTCOL(0) BTCOL(1) BTCOL(2) BTCOL(3)
#undef BTCOL
    }
  }
}

/* out[co][2ty + a][2tx + b] = act((AT M A)[a][b] + bias[co]) (cropped) for output channels
 * [co0, co1) and all tiles of nimg consecutive images (out: the first one's); M[xi][co][t] with t
 * running over those tiles (image-major), row length ldm, xi stride xs. The flat loop writes
 * each tile row's two output rows interleaved (Ye, Yo: [t][2]), then copied into out, cropped. */
static void wino_output(const wino_t *s, float *out, const float *restrict M, size_t ldm, size_t xs, int nimg,
                        const float *bias, int co0, int co1, float *tmp) {
  const int tw = s->tw, Wo = s->Wo, tpi = s->tpi, T = nimg * tpi, act = s->act;
  const size_t out_n = (size_t)s->Co * s->P;
  const float slope = s->slope;
  float *Ye = tmp, *Yo = tmp + 2 * (size_t)T;
  for (int co = co0; co < co1; co++) {
    const float bv = bias[co];
    const float *m = M + (size_t)co * ldm;
#pragma omp simd
    for (int t = 0; t < T; t++) {
      /* AT down the columns: r0_j = m0j + m1j + m2j, r1_j = m1j - m2j - m3j; then along rows */
#define ATCOL(j) const float m0##j = m[(size_t)(j) * xs + t], m1##j = m[(size_t)(4 + j) * xs + t], \
                             m2##j = m[(size_t)(8 + j) * xs + t], m3##j = m[(size_t)(12 + j) * xs + t]; \
                 const float r0##j = m0##j + m1##j + m2##j, r1##j = m1##j - m2##j - m3##j;
      ATCOL(0) ATCOL(1) ATCOL(2) ATCOL(3)
#undef ATCOL
      float a00 = (r00 + r01 + r02) + bv, a01 = (r01 - r02 - r03) + bv;
      float a10 = (r10 + r11 + r12) + bv, a11 = (r11 - r12 - r13) + bv;
      if (act) {
        a00 = a00 > 0.0f ? a00 : slope * a00; a01 = a01 > 0.0f ? a01 : slope * a01;
        a10 = a10 > 0.0f ? a10 : slope * a10; a11 = a11 > 0.0f ? a11 : slope * a11;
      }
      Ye[2 * (size_t)t] = a00; Ye[2 * (size_t)t + 1] = a01; Yo[2 * (size_t)t] = a10; Yo[2 * (size_t)t + 1] = a11;
    }
    for (int i = 0; i < nimg; i++)
      for (int ty = 0; ty < s->th; ty++) {
        const size_t t2 = 2 * ((size_t)i * tpi + (size_t)ty * tw);
        float *o0 = out + i * out_n + (size_t)co * s->P + (size_t)(2 * ty) * Wo;
        const float *ye = Ye + t2, *yo = Yo + t2;
        for (int ow = 0; ow < Wo; ow++) o0[ow] = ye[ow];
        if (2 * ty + 1 < s->Ho)
          for (int ow = 0; ow < Wo; ow++) o0[Wo + ow] = yo[ow];
      }
  }
}

/* Fused 2x2 max-pool (s->pool): each tile is one pool window. For output channels [co0, co1) and
 * all tiles of nimg consecutive images: pooled[co][t] = the first maximum (row-major, as the
 * reference pool over the activation output) of act((AT M A)[a][b] + bias[co]) over the window's
 * positions inside Ho x Wo, ix[co][t] = its position 2a + b; out/ix are the first image's
 * ([Co][tpi] per image, stride s->on). Stage 1, flat over the tiles: the four activations into
 * Y[4][T]; a ceil-mode window's positions past an odd Ho/Wo become -inf (never the maximum, as the
 * reference's clipped window skips them). Stage 2, flat per image: maximum and argmax. */
static void wino_output_pool(const wino_t *s, float *out, uint8_t *ix, const float *restrict M, size_t ldm, size_t xs,
                             int nimg, const float *bias, int co0, int co1, float *tmp) {
  const int tw = s->tw, th = s->th, tpi = s->tpi, T = nimg * tpi;
  const int crop_r = s->pool == 2 && (s->Ho & 1), crop_c = s->pool == 2 && (s->Wo & 1);
  const float slope = s->slope;
  float *restrict Y0 = tmp, *restrict Y1 = tmp + T, *restrict Y2 = tmp + 2 * (size_t)T, *restrict Y3 = tmp + 3 * (size_t)T;
  for (int co = co0; co < co1; co++) {
    const float bv = bias[co];
    const float *m = M + (size_t)co * ldm;
#pragma omp simd
    for (int t = 0; t < T; t++) {
#define ATCOL(j) const float m0##j = m[(size_t)(j) * xs + t], m1##j = m[(size_t)(4 + j) * xs + t], \
                             m2##j = m[(size_t)(8 + j) * xs + t], m3##j = m[(size_t)(12 + j) * xs + t]; \
                 const float r0##j = m0##j + m1##j + m2##j, r1##j = m1##j - m2##j - m3##j;
      ATCOL(0) ATCOL(1) ATCOL(2) ATCOL(3)
#undef ATCOL
      const float a00 = (r00 + r01 + r02) + bv, a01 = (r01 - r02 - r03) + bv;
      const float a10 = (r10 + r11 + r12) + bv, a11 = (r11 - r12 - r13) + bv;
      Y0[t] = a00 > 0.0f ? a00 : slope * a00; Y1[t] = a01 > 0.0f ? a01 : slope * a01;
      Y2[t] = a10 > 0.0f ? a10 : slope * a10; Y3[t] = a11 > 0.0f ? a11 : slope * a11;
    }
    for (int i = 0; i < nimg; i++) {
      if (crop_c)
        for (int ty = 0; ty < th; ty++) { const size_t t = (size_t)i * tpi + (size_t)ty * tw + tw - 1; Y1[t] = Y3[t] = -INFINITY; }
      if (crop_r)
        for (int tx = 0; tx < tw; tx++) { const size_t t = (size_t)i * tpi + (size_t)(th - 1) * tw + tx; Y2[t] = Y3[t] = -INFINITY; }
      float *restrict o = out + i * s->on + (size_t)co * tpi;
      uint8_t *restrict x = ix + i * s->on + (size_t)co * tpi;
      const float *y0 = Y0 + (size_t)i * tpi, *y1 = Y1 + (size_t)i * tpi, *y2 = Y2 + (size_t)i * tpi,
                  *y3 = Y3 + (size_t)i * tpi;
#pragma omp simd
      for (int t = 0; t < tpi; t++) { /* float selects only: integer ones became branches (5 ns a window) */
        const float a = y0[t], b = y1[t], c = y2[t], d = y3[t];
        const float m1 = b > a ? b : a, k1 = b > a ? 1.0f : 0.0f;
        const float m2 = c > m1 ? c : m1, k2 = c > m1 ? 2.0f : k1;
        o[t] = d > m2 ? d : m2;
        x[t] = (uint8_t)(d > m2 ? 3.0f : k2);
      }
    }
  }
}

/* dM[xi][co][col + t] = (A dY AT)[a][b] for output channels [co0, co1) and all tiles t of one
 * image, dY the 2x2 tiles of g [Co][Ho][Wo] (zero past the edge); row length ldm, xi stride xs.
 * The even and odd output rows are copied (zero-extended to 2tw columns) to Ge, Go so tile t
 * finds its dY at offsets 2t, 2t+1. */
static void wino_outgrad(const wino_t *s, float *restrict dM, size_t ldm, size_t xs, size_t col, const float *g,
                         int co0, int co1, float *tmp) {
  const int tw = s->tw, w2 = 2 * tw, Wo = s->Wo, tpi = s->tpi;
  float *Ge = tmp, *Go = tmp + 2 * (size_t)tpi;
  for (int co = co0; co < co1; co++) {
    const float *gc = g + (size_t)co * s->P;
    for (int ty = 0; ty < s->th; ty++) {
      row_shift(Ge + (size_t)ty * w2, gc + (size_t)(2 * ty) * Wo, Wo, 0, w2);
      if (2 * ty + 1 < s->Ho) row_shift(Go + (size_t)ty * w2, gc + (size_t)(2 * ty + 1) * Wo, Wo, 0, w2);
      else row_zero(Go + (size_t)ty * w2, w2);
    }
    float *m = dM + (size_t)co * ldm + col;
#pragma omp simd
    for (int t = 0; t < tpi; t++) {
      const size_t i = 2 * (size_t)t;
      const float y00 = Ge[i], y01 = Ge[i + 1], y10 = Go[i], y11 = Go[i + 1];
      /* A along rows: h_a = (y_a0, y_a0 + y_a1, y_a0 - y_a1, -y_a1); then down the columns */
      const float h00 = y00, h01 = y00 + y01, h02 = y00 - y01, h03 = -y01;
      const float h10 = y10, h11 = y10 + y11, h12 = y10 - y11, h13 = -y11;
#define ACOL(j) m[(size_t)(j) * xs + t] = h0##j; m[(size_t)(4 + j) * xs + t] = h0##j + h1##j; \
                m[(size_t)(8 + j) * xs + t] = h0##j - h1##j; m[(size_t)(12 + j) * xs + t] = -h1##j;
      ACOL(0) ACOL(1) ACOL(2) ACOL(3)
#undef ACOL
    }
  }
}

/* Fused pool backward, one image: in tile (= window) t, dY is zero but at the window's argmax
 * ix[co][t], which gets the pre-activation gradient act'(out) * dout of the pooled output (out is
 * the activation at the argmax; the expression of cpu_act_backward); dM[xi][co][col + t] =
 * (A dY AT)[a][b] as wino_outgrad; db[co] (+)= the sum of those gradients (acc = 0 overwrites).
 * dout, out, ix: this image's [Co][tpi]; output channels [co0, co1). */
static void wino_outgrad_pool(const wino_t *s, float *restrict dM, size_t ldm, size_t xs, size_t col,
                              const float *dout, const float *out, const uint8_t *ix, int co0, int co1, float *db,
                              int acc) {
  const int tpi = s->tpi;
  const float slope = s->slope;
  for (int co = co0; co < co1; co++) {
    const float *d = dout + (size_t)co * tpi, *o = out + (size_t)co * tpi;
    const uint8_t *x = ix + (size_t)co * tpi;
    float *m = dM + (size_t)co * ldm + col, sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int t = 0; t < tpi; t++) {
      const float gv = o[t] > 0.0f ? d[t] : slope * d[t];
      const int k = x[t];
      sum += gv;
      const float y00 = k == 0 ? gv : 0.0f, y01 = k == 1 ? gv : 0.0f, y10 = k == 2 ? gv : 0.0f, y11 = k == 3 ? gv : 0.0f;
      const float h00 = y00, h01 = y00 + y01, h02 = y00 - y01, h03 = -y01;
      const float h10 = y10, h11 = y10 + y11, h12 = y10 - y11, h13 = -y11;
#define ACOL(j) m[(size_t)(j) * xs + t] = h0##j; m[(size_t)(4 + j) * xs + t] = h0##j + h1##j; \
                m[(size_t)(8 + j) * xs + t] = h0##j - h1##j; m[(size_t)(12 + j) * xs + t] = -h1##j;
      ACOL(0) ACOL(1) ACOL(2) ACOL(3)
#undef ACOL
    }
    db[co] = acc ? db[co] + sum : sum;
  }
}

/* din[c][ih][iw] = sum over tiles of (B dV BT) at padded (ih + pad, iw + pad), channels [c0, c1)
 * of one image (overwritten); dV[xi][c - c0][col + t], row length ldv, xi stride xs.
 * The adjoint of wino_input's layout: the flat stage writes each tile's rows 0, 1 into L/R[par]
 * at tile row ty (padded columns [0, 2tw) and [2, 2tw+2), offsets 2t, 2t+1) and rows 2, 3 into
 * DL/DR, which a second flat pass adds one tile row further down; a padded row is then its L
 * row plus its R row shifted by two columns, with the padding dropped. */
static void wino_ingrad(const wino_t *s, float *din, const float *restrict dV, size_t ldv, size_t xs, size_t col,
                        int c0, int c1, float *tmp) {
  const int tw = s->tw, w2 = 2 * tw, th = s->th, tpi = s->tpi, H = s->H, W = s->W, pad = s->pad;
  const size_t ps = (size_t)(th + 1) * w2, ds = 2 * (size_t)tpi;
  float *L = tmp, *R = L + 2 * ps, *DL = R + 2 * ps, *DR = DL + 2 * ds;
  float *L0 = L, *L1 = L + ps, *R0 = R, *R1 = R + ps, *DL0 = DL, *DL1 = DL + ds, *DR0 = DR, *DR1 = DR + ds;
  /* image columns [0, a) see only L (padded column < 2), [a, e) both, [e, f) only R (>= 2tw), and
   * [f, W) no tile (padded column >= 2tw + 2: only with a fused floor-mode pool, whose tiles stop at
   * the last whole window; such inputs feed no pooled output, so their gradient is 0; rows alike) */
  int a = 2 - pad, e = w2 - pad, f = w2 + 2 - pad;
  a = a < 0 ? 0 : a > W ? W : a;
  e = e > W ? W : e < a ? a : e;
  f = f > W ? W : f < e ? e : f;
  for (int c = c0; c < c1; c++) {
    const float *v = dV + (size_t)(c - c0) * ldv + col;
#pragma omp simd
    for (int t = 0; t < tpi; t++) {
      const size_t i = 2 * (size_t)t;
      /* B down each column b: q_r = (v0, v1 - v2 + v3, -v0 + v1 + v2, -v3) */
#define BCOL(b) const float v0##b = v[(size_t)(b) * xs + t], v1##b = v[(size_t)(4 + b) * xs + t], \
                            v2##b = v[(size_t)(8 + b) * xs + t], v3##b = v[(size_t)(12 + b) * xs + t]; \
      const float q0##b = v0##b, q1##b = v1##b - v2##b + v3##b, q2##b = -v0##b + v1##b + v2##b, q3##b = -v3##b;
      BCOL(0) BCOL(1) BCOL(2) BCOL(3)
#undef BCOL
      /* then along each row r into its columns 0..3 */
#define BROW(r, Lp, Rp) Lp[i] = q##r##0; Lp[i + 1] = q##r##1 - q##r##2 + q##r##3; \
      Rp[i] = -q##r##0 + q##r##1 + q##r##2; Rp[i + 1] = -q##r##3;
      BROW(0, L0, R0) BROW(1, L1, R1) BROW(2, DL0, DR0) BROW(3, DL1, DR1)
#undef BROW
    }
    row_zero(L0 + ds, w2); row_zero(L1 + ds, w2); row_zero(R0 + ds, w2); row_zero(R1 + ds, w2);
#pragma omp simd
    for (size_t j = 0; j < ds; j++) {
      L0[w2 + j] += DL0[j]; L1[w2 + j] += DL1[j]; R0[w2 + j] += DR0[j]; R1[w2 + j] += DR1[j];
    }
    float *dc = din + (size_t)c * H * W;
    for (int ih = 0; ih < H; ih++) {
      const int pr = ih + pad;
      float *d = dc + (size_t)ih * W;
      if (pr >= 2 * th + 2) { row_zero(d, W); continue; }
      const size_t o = (size_t)(pr & 1) * ps + (size_t)(pr >> 1) * w2;
      const float *lr = L + o + pad, *rr = R + o; /* padded column iw + pad: lr[iw], rr[iw + pad - 2] */
      for (int iw = 0; iw < a; iw++) d[iw] = lr[iw];
#pragma omp simd
      for (int iw = a; iw < e; iw++) d[iw] = lr[iw] + rr[iw + pad - 2];
      for (int iw = e; iw < f; iw++) d[iw] = rr[iw + pad - 2];
      for (int iw = f; iw < W; iw++) d[iw] = 0.0f;
    }
  }
}

/* ------------------------------------------------------------------------------- forward */

/* GEMMs C_xi (beta)= op(A_xi) x op(B_xi) for xi in [x0, x1); strides between xi planes as, bs, cs. */
static void gemm_xi(int x0, int x1, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float *A,
                    int lda, size_t as, const float *Bm, int ldb, size_t bs, float beta, float *C, int ldc, size_t cs) {
  if (m <= 0 || n <= 0) return;
  for (int xi = x0; xi < x1; xi++)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, A + xi * as, lda, Bm + xi * bs, ldb, beta, C + xi * cs, ldc);
}

/* B < threads: the team shares each image. The input transform is split by input channels, the
 * 16 GEMMs by xi (whole-image GEMMs, as on one thread), the output transform by output channels;
 * V and M are shared (thread 0's), two barriers per image separate the phases. */
static void fwd_split(const wino_t *s, float *out, const float *in, const float *w, const float *b, float *scratch,
                      int t, int nt) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = s->on, us = wp((size_t)s->Co * s->Ci);
  const int T = s->tpi;
  const size_t vs = wp((size_t)s->Ci * T), ms = wp((size_t)s->Co * T);
  float *U = scratch, *V = scratch + s->u_n, *M = V + s->v_n;
  float *tmp = scratch + s->u_n + (size_t)t * s->per_thread + s->v_n + s->m_n + s->du_n + s->db_n + s->g_n;
  int c0, c1, co0, co1, x0, x1;
  cpu_split(s->Ci, nt, t, &c0, &c1);
  cpu_split(s->Co, nt, t, &co0, &co1);
  cpu_split(16, nt, t, &x0, &x1);
  wino_weights(U, us, w, s->Ci, co0, co1);
  for (int i = 0; i < s->B; i++) {
    wino_input(s, V + (size_t)c0 * T, (size_t)T, vs, 0, in + i * in_n, c0, c1, tmp);
#pragma omp barrier
    gemm_xi(x0, x1, CblasNoTrans, CblasNoTrans, s->Co, T, s->Ci, U, s->Ci, us, V, T, vs, 0.0f, M, T, ms);
#pragma omp barrier
    if (s->pool) wino_output_pool(s, out + i * out_n, s->idx + i * out_n, M, (size_t)T, ms, 1, b, co0, co1, tmp);
    else wino_output(s, out + i * out_n, M, (size_t)T, ms, 1, b, co0, co1, tmp);
  }
}

static void fwd_body(const wino_t *s, float *out, const float *in, const float *w, const float *b, float *scratch,
                     int t, int nt) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = s->on, us = wp((size_t)s->Co * s->Ci);
  float *U = scratch, *V = scratch + s->u_n + (size_t)t * s->per_thread, *M = V + s->v_n;
  float *tmp = M + s->m_n + s->du_n + s->db_n + s->g_n;
  int co0, co1, i0, i1;
  cpu_split(s->Co, nt, t, &co0, &co1);
  wino_weights(U, us, w, s->Ci, co0, co1);
  if (nt > 1) {
#pragma omp barrier
  }
  cpu_split(s->B, nt, t, &i0, &i1);
  for (int g0 = i0; g0 < i1; g0 += s->nb) {
    const int g1 = g0 + s->nb < i1 ? g0 + s->nb : i1, T = (g1 - g0) * s->tpi;
    const size_t vs = wp((size_t)s->Ci * T), ms = wp((size_t)s->Co * T);
    for (int i = g0; i < g1; i++)
      wino_input(s, V, (size_t)T, vs, (size_t)(i - g0) * s->tpi, in + i * in_n, 0, s->Ci, tmp);
    gemm_xi(0, 16, CblasNoTrans, CblasNoTrans, s->Co, T, s->Ci, U, s->Ci, us, V, T, vs, 0.0f, M, T, ms);
    if (s->pool) wino_output_pool(s, out + g0 * out_n, s->idx + g0 * out_n, M, (size_t)T, ms, g1 - g0, b, 0, s->Co, tmp);
    else wino_output(s, out + g0 * out_n, M, (size_t)T, ms, g1 - g0, b, 0, s->Co, tmp);
  }
}

static void wino_fwd(const wino_t *s, float *out, const float *in, const float *w, const float *b, float *scratch) {
  cpu_blas_init();
  const int T = cpu_get_threads(), split = T > 1 && s->B < T;
  if (T == 1) { fwd_body(s, out, in, w, b, scratch, 0, 1); return; }
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (split && nt > 1) fwd_split(s, out, in, w, b, scratch, t, nt);
    else fwd_body(s, out, in, w, b, scratch, t, nt);
  }
}

void cpu_wino_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                      int Co, int pad, int act, float slope, float *scratch) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0);
  s.act = act; s.slope = slope;
  wino_fwd(&s, out, in, w, b, scratch);
}

void cpu_wino_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B, int Ci,
                           int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, ceil_mode ? 2 : 1);
  s.act = 1; s.slope = slope; s.idx = idx;
  wino_fwd(&s, out, in, w, b, scratch);
}

/* ------------------------------------------------------------------------------- backward */

/* db[co] (+)= sum_p g_i[co][p] for co in [co0, co1); acc = 0 overwrites (as cpu_conv.c). */
static void bias_grad(float *db, const float *g_i, int P, int co0, int co1, int acc) {
  for (int co = co0; co < co1; co++) {
    const float *d = g_i + (size_t)co * P;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int p = 0; p < P; p++) sum += d[p];
    db[co] = acc ? db[co] + sum : sum;
  }
}

/* Pre-activation gradient, the expression of cpu_act_backward. */
static void act_grad(float *g, const float *dout_i, const float *out_i, size_t n, float slope) {
#pragma omp simd
  for (size_t j = 0; j < n; j++) g[j] = out_i[j] > 0.0f ? dout_i[j] : slope * dout_i[j];
}

/* B < threads: the team shares each image, as fwd_split: the pre-activation gradient, db and the
 * dM transform are split by output channels, the input transform and din by input channels, the
 * GEMMs by xi (dU of xi accumulates over the images in its thread's GEMMs); dM, V (then dV) and dU
 * are shared (thread 0's); two barriers per image; dw last, split by output channels. */
static void bwd_split(const wino_t *s, float *din, float *dw, float *db, const float *dout, const float *out,
                      const float *in, const float *w, float *scratch, int t, int nt) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = s->on, us = wp((size_t)s->Co * s->Ci);
  const int T = s->tpi, P = s->P;
  const size_t vs = wp((size_t)s->Ci * T), ms = wp((size_t)s->Co * T);
  float *U = scratch, *V = scratch + s->u_n, *M = V + s->v_n, *dU = M + s->m_n;
  float *g = scratch + s->u_n + (size_t)t * s->per_thread + s->v_n + s->m_n + s->du_n + s->db_n, *tmp = g + s->g_n;
  int c0, c1, co0, co1, x0, x1;
  cpu_split(s->Ci, nt, t, &c0, &c1);
  cpu_split(s->Co, nt, t, &co0, &co1);
  cpu_split(16, nt, t, &x0, &x1);
  if (din) wino_weights(U, us, w, s->Ci, co0, co1);
  for (int i = 0; i < s->B; i++) {
    const float *g_i = dout + i * out_n;
    if (s->pool) {
      wino_outgrad_pool(s, M, (size_t)T, ms, 0, g_i, out + i * out_n, s->idx + i * out_n, co0, co1, db, 1);
    } else {
      if (s->act) {
        const size_t o = (size_t)co0 * P; /* rows [co0, co1) of g are this thread's */
        act_grad(g + o, g_i + o, out + i * out_n + o, (size_t)(co1 - co0) * P, s->slope);
        g_i = g;
      }
      bias_grad(db, g_i, P, co0, co1, 1);
      wino_outgrad(s, M, (size_t)T, ms, 0, g_i, co0, co1, tmp);
    }
    wino_input(s, V + (size_t)c0 * T, (size_t)T, vs, 0, in + i * in_n, c0, c1, tmp);
#pragma omp barrier
    gemm_xi(x0, x1, CblasNoTrans, CblasTrans, s->Co, s->Ci, T, M, T, ms, V, T, vs, i ? 1.0f : 0.0f, dU, s->Ci, us);
    if (din) /* dV (into V: this xi's V is no longer needed) = U^T x dM */
      gemm_xi(x0, x1, CblasTrans, CblasNoTrans, s->Ci, T, s->Co, U, s->Ci, us, M, T, ms, 0.0f, V, T, vs);
#pragma omp barrier
    if (din) wino_ingrad(s, din + i * in_n, V + (size_t)c0 * T, (size_t)T, vs, 0, c0, c1, tmp);
  }
  wino_wgrad(dw, dU, us, s->Ci, co0, co1);
}

static void bwd_body(const wino_t *s, float *din, float *dw, float *db, const float *dout, const float *out,
                     const float *in, const float *w, float *scratch, int t, int nt) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = s->on, us = wp((size_t)s->Co * s->Ci);
  float *U = scratch, *V = scratch + s->u_n + (size_t)t * s->per_thread, *M = V + s->v_n, *dU = M + s->m_n;
  float *dbp = dU + s->du_n, *g = dbp + s->db_n, *tmp = g + s->g_n;
  if (din) {
    int co0, co1;
    cpu_split(s->Co, nt, t, &co0, &co1);
    wino_weights(U, us, w, s->Ci, co0, co1);
    if (nt > 1) {
#pragma omp barrier
    }
  }
  if (t == 0) dbp = db; /* thread 0 adds onto db directly */
  int i0, i1;
  cpu_split(s->B, nt, t, &i0, &i1);
  for (int g0 = i0; g0 < i1; g0 += s->nb) {
    const int g1 = g0 + s->nb < i1 ? g0 + s->nb : i1, T = (g1 - g0) * s->tpi;
    const size_t vs = wp((size_t)s->Ci * T), ms = wp((size_t)s->Co * T);
    for (int i = g0; i < g1; i++) {
      const float *g_i = dout + i * out_n;
      if (s->pool) {
        wino_outgrad_pool(s, M, (size_t)T, ms, (size_t)(i - g0) * s->tpi, g_i, out + i * out_n, s->idx + i * out_n, 0,
                          s->Co, dbp, t == 0 || i > i0);
      } else {
        if (s->act) { act_grad(g, g_i, out + i * out_n, out_n, s->slope); g_i = g; }
        bias_grad(dbp, g_i, s->P, 0, s->Co, t == 0 || i > i0);
        wino_outgrad(s, M, (size_t)T, ms, (size_t)(i - g0) * s->tpi, g_i, 0, s->Co, tmp);
      }
      wino_input(s, V, (size_t)T, vs, (size_t)(i - g0) * s->tpi, in + i * in_n, 0, s->Ci, tmp);
    }
    gemm_xi(0, 16, CblasNoTrans, CblasTrans, s->Co, s->Ci, T, M, T, ms, V, T, vs, g0 > i0 ? 1.0f : 0.0f, dU, s->Ci, us);
    if (!din) continue;
    gemm_xi(0, 16, CblasTrans, CblasNoTrans, s->Ci, T, s->Co, U, s->Ci, us, M, T, ms, 0.0f, V, T, vs);
    for (int i = g0; i < g1; i++)
      wino_ingrad(s, din + i * in_n, V, (size_t)T, vs, (size_t)(i - g0) * s->tpi, 0, s->Ci, tmp);
  }
  if (nt == 1) { wino_wgrad(dw, dU, us, s->Ci, 0, s->Co); return; }
#pragma omp barrier
  /* dU of thread 0 += dU of threads 1..nt-1 in thread order, over this thread's share of output
   * channels, which it then transforms into dw; db += the db partials the same way */
  int co0, co1;
  cpu_split(s->Co, nt, t, &co0, &co1);
  float *dU0 = scratch + s->u_n + s->v_n + s->m_n;
  for (int u = 1; u < nt; u++) {
    int u0, u1;
    cpu_split(s->B, nt, u, &u0, &u1);
    if (u1 <= u0) continue;
    const float *dUu = scratch + s->u_n + (size_t)u * s->per_thread + s->v_n + s->m_n;
    for (int xi = 0; xi < 16; xi++) {
      float *dst = dU0 + xi * us + (size_t)co0 * s->Ci;
      const float *src = dUu + xi * us + (size_t)co0 * s->Ci;
      const size_t n = (size_t)(co1 - co0) * s->Ci;
#pragma omp simd
      for (size_t j = 0; j < n; j++) dst[j] += src[j];
    }
    const float *dbu = dUu + s->du_n;
    for (int co = co0; co < co1; co++) db[co] += dbu[co];
  }
  wino_wgrad(dw, dU0, us, s->Ci, co0, co1);
}

static void wino_bwd(const wino_t *s, float *din, float *dw, float *db, const float *dout, const float *out,
                     const float *in, const float *w, float *scratch) {
  cpu_blas_init();
  const int T = cpu_get_threads(), split = T > 1 && s->B < T;
  if (T == 1) { bwd_body(s, din, dw, db, dout, out, in, w, scratch, 0, 1); return; }
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (split && nt > 1) bwd_split(s, din, dw, db, dout, out, in, w, scratch, t, nt);
    else bwd_body(s, din, dw, db, dout, out, in, w, scratch, t, nt);
  }
}

void cpu_wino_backward(float *din, float *dw, float *db, const float *dout, const float *out, const float *in,
                       const float *w, int B, int Ci, int H, int W, int Co, int pad, int act, float slope,
                       float *scratch) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0);
  s.act = act; s.slope = slope;
  wino_bwd(&s, din, dw, db, dout, out, in, w, scratch);
}

void cpu_wino_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out, const uint8_t *idx,
                            const float *in, const float *w, int B, int Ci, int H, int W, int Co, int pad, float slope,
                            int ceil_mode, float *scratch) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, ceil_mode ? 2 : 1);
  s.act = 1; s.slope = slope; s.idx = (uint8_t *)idx; /* read only in the backward */
  wino_bwd(&s, din, dw, db, dout, out, in, w, scratch);
}
