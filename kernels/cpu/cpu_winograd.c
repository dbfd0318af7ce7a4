/* cpu_winograd.c — 3x3 stride-1 convolution (any zero padding) by Winograd F(2x2,3x3) or
 * F(4x4,3x3), forward and backward, optionally fused with the activation and a 2x2 max-pool,
 * OpenBLAS sgemm + OpenMP. cpu_conv.c calls it for the shapes cpu_conv_winograd() accepts; the
 * layer semantics (and the fused activation / pool) are those of contract/layers.h and cpu_layers.h.
 *
 * Two tile sizes share everything below but the transforms: wino_shape() sets m (output tile
 * m x m, input tile (m+2) x (m+2) at stride m, nx = (m+2)^2 transform planes, one GEMM each) and
 * binds the transforms of that m (wino_bind). wino_m() picks m (F(4x4) where its GEMMs get enough
 * tiles, see there). The F(2x2) description follows; F(4x4) is the same with the matrices given at
 * its transforms, stride 4, four row phases instead of two and windows shifted by 4 columns.
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
 * Fused 2x2 max-pool (pool != 0): the tiles are cut so that pool windows never straddle them (an
 * F(2x2) tile is one window, an F(4x4) tile 2x2 windows); the forward keeps only each window's
 * first maximum and its position (idx), the full-size activation is never stored; the backward
 * builds dY from the pooled gradient, out and idx (zero but at each argmax), and tiles holding no
 * window (floor mode) are not computed at all.
 * Scratch: U [16][Co][Ci] shared, then per thread V [16][Ci][T], M [16][Co][T], dU [16][Co][Ci],
 * db [Co], g [Co][Ho*Wo], and transform temporaries. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

/* Short zero/copy loops stay inline: a memset/memcpy call per 8-28-float row costs more. */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

/* V + M of one group of images stay below this (L2 is 2 MiB per core on the machines we tune on;
 * 1 and 2 MiB ran alike on the reference net at batch 128, 256 KiB slower) */
#ifndef WINO_GROUP_BYTES
#define WINO_GROUP_BYTES ((size_t)1 << 20)
#endif

typedef struct wino wino_t;
struct wino {
  int B, Ci, H, W, Co, pad, Ho, Wo, P;
  int m, nx;           /* output tile m x m (2: F(2x2,3x3), 4: F(4x4,3x3)); nx = (m+2)^2 transform planes */
  int th, tw, tpi, nb; /* tile rows, tile columns, tiles per image, images per group */
  int act;
  float slope;
  int pool;            /* 0, or fused 2x2 max-pool: 1 floor mode, 2 ceil mode */
  int Hp, Wp;          /* pool: the pooled map (F(2x2): one window per tile; F(4x4): 2x2 per tile) */
  size_t on;           /* output floats per image: Co*P, or Co*Hp*Wp pooled */
  uint8_t *idx;        /* pool: argmax of each window, [B][Co][Hp][Wp] (written forward, read backward) */
  float *kU, *kV;      /* the layer's keep (cpu_conv_keep_floats), or NULL: U there (the forward writes it,
                        * the backward reads it instead of transforming w again), and at batch 1 V too */
  size_t u_n, v_n, m_n, du_n, db_n, g_n, tmp_n, vt_n, pt_n, dbb_n, per_thread;
  /* the transforms of this m (the bodies below are shared) */
  void (*weights)(float *, size_t, const float *, int, int, int);
  void (*wgrad)(float *, const float *, size_t, int, int, int);
  void (*input)(const wino_t *, float *, size_t, size_t, size_t, const float *, int, int, float *);
  void (*output)(const wino_t *, float *, const float *, size_t, size_t, int, const float *, int, int, float *);
  void (*output_pool)(const wino_t *, float *, uint8_t *, const float *, size_t, size_t, int, const float *, int, int,
                      float *);
  void (*outgrad)(const wino_t *, float *, size_t, size_t, size_t, const float *, int, int, float *);
  void (*outgrad_pool)(const wino_t *, float *, size_t, size_t, size_t, const float *, const float *, const uint8_t *,
                       int, int, float *, int, float *);
  void (*ingrad)(const wino_t *, float *, const float *, size_t, size_t, size_t, int, int, float *);
};
static void wino_bind(wino_t *s);

/* Stride between the 16 xi planes of an n-float matrix: whole 64-byte lines, an odd number of
 * them, so the 16 streams of a transform fall into 16 different cache sets (the power-of-two
 * stride of a 128x64 U put them all into one L1 set: its transform then took ~5x its 16 GEMMs). */
static inline size_t wp(size_t n) {
  n = cpu_round16(n);
  return (n / 16) % 2 ? n : n + 16;
}

/* Geometry and scratch of one call. m = 2 or 4 (the output tile). pool = 0: the conv's own tiling
 * (th x tw = ceil(Ho/m) x ceil(Wo/m)); pool = 1/2 (floor/ceil): only the tiles that hold 2x2 pool
 * windows of the pooled map Hp x Wp (m = 2: one window per tile; m = 4: 2x2 windows per tile,
 * for floor mode or even Ho, Wo only, where every window lies inside Ho x Wo). Scratch sizes are
 * those of the unpooled shape (the pooled groups are capped at its tiles per GEMM, and its tiles
 * are never fewer), so cpu_conv_scratch_floats covers both. */
static wino_t wino_shape(int B, int Ci, int H, int W, int Co, int pad, int pool, int m) {
  wino_t s;
  SHAPE_ASSERT(B > 0 && Ci > 0 && H > 0 && W > 0 && Co > 0 && pad >= 0 && (m == 2 || m == 4));
  s.B = B; s.Ci = Ci; s.H = H; s.W = W; s.Co = Co; s.pad = pad;
  s.Ho = H + 2 * pad - 2; s.Wo = W + 2 * pad - 2;
  SHAPE_ASSERT(s.Ho > 0 && s.Wo > 0);
  s.P = s.Ho * s.Wo;
  s.m = m; s.nx = (m + 2) * (m + 2);
  s.th = (s.Ho + m - 1) / m; s.tw = (s.Wo + m - 1) / m; s.tpi = s.th * s.tw;
  const size_t nx = (size_t)s.nx, img_bytes = nx * (Ci + Co) * s.tpi * sizeof(float);
  size_t nb = WINO_GROUP_BYTES / img_bytes;
  if (nb < 1) nb = 1;
  if (nb > (size_t)B) nb = (size_t)B;
  s.nb = (int)nb;
  s.act = 0; s.slope = 0.0f;
  const size_t T = (size_t)s.nb * s.tpi, tpi = (size_t)s.tpi, rows = (size_t)(s.th + 1) * s.tw;
  s.u_n = nx * wp((size_t)Co * Ci);
  s.v_n = nx * wp((size_t)Ci * T);
  s.m_n = nx * wp((size_t)Co * T);
  s.du_n = nx * wp((size_t)Co * Ci);
  s.db_n = cpu_round16((size_t)Co);
  s.g_n = cpu_round16((size_t)Co * s.P);
  /* the largest of the transforms' temporaries; m = 2: input 8 rows (rows = (th + 1) tw),
   * output / pooled output 4T, outgrad 4 tpi, ingrad 8 rows + 8 tpi; m = 4: input 32 rows,
   * output 16T, pooled output 8T, outgrad 16 tpi, pooled outgrad 12 tpi, ingrad 32 rows + 16 tpi */
  size_t t = m == 2 ? 8 * rows + 8 * tpi : 32 * rows + 16 * tpi;
  if ((m == 2 ? 4 : 16) * T > t) t = (m == 2 ? 4 : 16) * T;
  s.tmp_n = cpu_round16(t);
  s.vt_n = cpu_round16((size_t)Ci * T); /* one plane of V, transposed, for the dU GEMM (gemm_wgrad) */
  s.pt_n = cpu_round16((size_t)Co * Ci); /* one group's dU plane (gemm_wgrad's blocked summation) */
  s.dbb_n = cpu_round16((size_t)Co);    /* the bias gradient's block partial (CPU_DB_BLOCK images) */
  s.per_thread = s.v_n + s.m_n + s.du_n + s.db_n + s.g_n + s.tmp_n + s.vt_n + s.pt_n + s.dbb_n;
  s.pool = pool; s.idx = NULL;
  s.kU = s.kV = NULL;
  s.Hp = s.Wp = 0;
  s.on = (size_t)Co * s.P;
  if (pool) {
    s.Hp = pool == 2 ? (s.Ho + 1) / 2 : s.Ho / 2;
    s.Wp = pool == 2 ? (s.Wo + 1) / 2 : s.Wo / 2;
    SHAPE_ASSERT(s.Hp > 0 && s.Wp > 0);
    SHAPE_ASSERT(m == 2 || pool == 1 || (s.Ho % 2 == 0 && s.Wo % 2 == 0));
    s.th = m == 2 ? s.Hp : (s.Hp + 1) / 2;
    s.tw = m == 2 ? s.Wp : (s.Wp + 1) / 2;
    s.tpi = s.th * s.tw;
    size_t nbp = T / (size_t)s.tpi; /* no more tiles per GEMM than the unpooled shape's */
    if (nbp < 1) nbp = 1;
    if (nbp > (size_t)B) nbp = (size_t)B;
    s.nb = (int)nbp;
    s.on = (size_t)Co * s.Hp * s.Wp;
  }
  wino_bind(&s);
  return s;
}

size_t cpu_wino_scratch_floats(int B, int Ci, int H, int W, int Co, int pad, int nthreads) {
  const size_t T = nthreads < 1 ? 1 : (size_t)nthreads;
  size_t n = 0;
  for (int m = 2; m <= 4; m += 2) { /* either tile size may be taken */
    wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0, m);
    if (s.u_n + T * s.per_thread > n) n = s.u_n + T * s.per_thread;
  }
  return n;
}

/* The keep: U [nx][Co][Ci] of either tile size, then V of one image (unpooled tiles, never fewer
 * than the pooled ones). Independent of the batch: V is kept at batch 1 only (from batch 2 on V
 * outgrows L2 and the GEMMs dominate; recomputing it costs little there). */
size_t cpu_wino_keep_floats(int Ci, int H, int W, int Co, int pad) {
  size_t n = 0;
  for (int m = 2; m <= 4; m += 2) {
    wino_t s = wino_shape(1, Ci, H, W, Co, pad, 0, m);
    if (s.u_n + s.v_n > n) n = s.u_n + s.v_n;
  }
  return n;
}

static void wino_keep(wino_t *s, float *keep) {
  if (!keep) return;
  s->kU = keep;
  s->kV = s->B == 1 ? keep + s->u_n : NULL;
}

int cpu_wino_tiles(int B, int Ci, int H, int W, int Co, int pad) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0, 2);
  return s.nb * s.tpi;
}

/* ------------------------------------------------------------------------------- weights */

/* Filters are [9] taps each, so a loop over filters reads with stride 9 and would not
 * vectorise: both weight transforms move blocks of WB filters through a tap-major buffer
 * ([9][WB]) and transform them in a unit-stride vector loop. The moves in and out of that buffer
 * are transposes (taps_in, taps_out_add): 8 filters at a time by an 8x8 register transpose of
 * their taps 0-7 (unaligned row loads, 24 shuffles) and tap 8 apart. Element by element they had
 * taken ~3/4 of both transforms (perf, conv 64->128 at 7x7, batch 1: ~40 us of each ~50). */
#define WB 64

typedef float v8f __attribute__((vector_size(32), aligned(4), may_alias)); /* 8 floats at any float address */

/* rows r[0..7] <- their transpose (generic vectors: unpack, 2-lane shuffles, 128-bit halves;
 * __builtin_shufflevector: GCC >= 12 and clang) */
static inline __attribute__((always_inline)) void tr8(v8f r[8]) {
#define LO(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 4, 12, 5, 13)
#define HI(a, b) __builtin_shufflevector(a, b, 2, 10, 3, 11, 6, 14, 7, 15)
#define S0(a, b) __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13)
#define S1(a, b) __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15)
#define H0(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11)
#define H1(a, b) __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15)
  v8f t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = LO(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = HI(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++) {
    u[4 * i] = S0(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = S1(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = S0(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = S1(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = H0(u[i], u[i + 4]);
    r[i + 4] = H1(u[i], u[i + 4]);
  }
#undef LO
#undef HI
#undef S0
#undef S1
#undef H0
#undef H1
}

/* gt[k][jj] = wb[9 jj + k], k < 9, jj < n <= WB */
static void taps_in(float gt[9][WB], const float *restrict wb, int n) {
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    v8f r[8];
    for (int i = 0; i < 8; i++) r[i] = *(const v8f *)(wb + 9 * (j + i));
    tr8(r);
    for (int k = 0; k < 8; k++) *(v8f *)&gt[k][j] = r[k];
    for (int i = 0; i < 8; i++) gt[8][j + i] = wb[9 * (j + i) + 8];
  }
  for (int k = 0; k < 9; k++)
    for (int jj = j; jj < n; jj++) gt[k][jj] = wb[jj * 9 + k];
}

/* db[9 jj + k] += dt[k][jj], k < 9, jj < n <= WB (the inverse move of taps_in, accumulating) */
static void taps_out_add(float *restrict db, float dt[9][WB], int n) {
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    v8f r[8];
    for (int k = 0; k < 8; k++) r[k] = *(const v8f *)&dt[k][j];
    tr8(r);
    /* filter j+i's taps 0-7, then its tap 8: in address order, as the rows overlap no other */
    for (int i = 0; i < 8; i++) {
      float *d = db + 9 * (j + i);
      *(v8f *)d = *(const v8f *)d + r[i];
      d[8] += dt[8][j + i];
    }
  }
  for (int k = 0; k < 9; k++)
    for (int jj = j; jj < n; jj++) db[jj * 9 + k] += dt[k][jj];
}

/* U[xi][co][ci] = (G g GT)[a][b] for output channels [co0, co1); g = w[co][ci] (3x3); xi stride xs. */
static void wino_weights(float *restrict U, size_t xs, const float *restrict w, int Ci, int co0, int co1) {
  const size_t j1 = (size_t)co1 * Ci;
  float gt[9][WB];
  for (size_t jb = (size_t)co0 * Ci; jb < j1; jb += WB) {
    const int n = j1 - jb < WB ? (int)(j1 - jb) : WB;
    const float *wb = w + jb * 9;
    taps_in(gt, wb, n);
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
    taps_out_add(dw + jb * 9, dt, n);
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

/* One F(2x2) tile's output (AT M A, before bias) from M[xi][co][t] (m points at channel co, xi
 * stride xs): y##00, y##01, y##10, y##11. AT down the columns (r0_j = m0j + m1j + m2j,
 * r1_j = m1j - m2j - m3j), then along the rows. */
#define ATCOL2(j, m, xs, t) const float m0##j = (m)[(size_t)(j) * (xs) + (t)], m1##j = (m)[(size_t)(4 + j) * (xs) + (t)], \
  m2##j = (m)[(size_t)(8 + j) * (xs) + (t)], m3##j = (m)[(size_t)(12 + j) * (xs) + (t)]; \
  const float r0##j = m0##j + m1##j + m2##j, r1##j = m1##j - m2##j - m3##j;
#define TILE2_OUT(y, m, xs, t) \
  ATCOL2(0, m, xs, t) ATCOL2(1, m, xs, t) ATCOL2(2, m, xs, t) ATCOL2(3, m, xs, t) \
  const float y##00 = r00 + r01 + r02, y##01 = r01 - r02 - r03, y##10 = r10 + r11 + r12, y##11 = r11 - r12 - r13;
/* dM[xi][..][t] = (A dY AT)[a][b] of one F(2x2) tile from its dY (y00, y01, y10, y11): A along the
 * rows, h_a = (y_a0, y_a0 + y_a1, y_a0 - y_a1, -y_a1), then down the columns. */
#define ACOL2(j, m, xs, t) (m)[(size_t)(j) * (xs) + (t)] = h0##j; (m)[(size_t)(4 + j) * (xs) + (t)] = h0##j + h1##j; \
  (m)[(size_t)(8 + j) * (xs) + (t)] = h0##j - h1##j; (m)[(size_t)(12 + j) * (xs) + (t)] = -h1##j;
#define TILE2_DM(m, xs, t, y00, y01, y10, y11) { \
  const float h00 = (y00), h01 = (y00) + (y01), h02 = (y00) - (y01), h03 = -(y01); \
  const float h10 = (y10), h11 = (y10) + (y11), h12 = (y10) - (y11), h13 = -(y11); \
  ACOL2(0, m, xs, t) ACOL2(1, m, xs, t) ACOL2(2, m, xs, t) ACOL2(3, m, xs, t) }
/* The pool's first maximum of a window's four values a, b, c, d (row-major; a later value wins
 * only if strictly greater, as the reference pool): v = the maximum, k = its position 0..3 as a
 * float. Float selects only: integer ones became branches (5 ns a window). */
#define FIRST_MAX4(v, k, a, b, c, d) \
  const float v##m1_ = (b) > (a) ? (b) : (a), v##k1_ = (b) > (a) ? 1.0f : 0.0f; \
  const float v##m2_ = (c) > v##m1_ ? (c) : v##m1_, v##k2_ = (c) > v##m1_ ? 2.0f : v##k1_; \
  const float v = (d) > v##m2_ ? (d) : v##m2_, k = (d) > v##m2_ ? 3.0f : v##k2_;

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
      TILE2_OUT(y, m, xs, t)
      float a00 = y00 + bv, a01 = y01 + bv, a10 = y10 + bv, a11 = y11 + bv;
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
      TILE2_OUT(y, m, xs, t)
      const float a00 = y00 + bv, a01 = y01 + bv, a10 = y10 + bv, a11 = y11 + bv;
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
      for (int t = 0; t < tpi; t++) {
        FIRST_MAX4(mx, kx, y0[t], y1[t], y2[t], y3[t])
        o[t] = mx; x[t] = (uint8_t)kx;
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
      TILE2_DM(m, xs, t, Ge[i], Ge[i + 1], Go[i], Go[i + 1])
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
                              int acc, float *tmp) {
  (void)tmp;
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
      TILE2_DM(m, xs, t, y00, y01, y10, y11)
    }
    db[co] = acc ? db[co] + sum : sum;
  }
}

/* The tail of both ingrad transforms, one channel: L/R hold the tiles' rows 0..m-1 (m phases of
 * th + 1 blocks of w = m tw floats, phase stride ps; block th is zeroed here), DL/DR their last two
 * rows (phases 0, 1 of th blocks, stride ds), which are added one block further down; then image row
 * ih of dc (= padded row pr = ih + pad, phase pr % m, block pr / m) is its L row plus its R row
 * shifted by m columns. Image columns [0, a) see only L (padded column < m), [a, e) both, [e, f)
 * only R (>= m tw), and [f, W) no tile (padded column >= m tw + 2: only with a fused floor-mode
 * pool, whose tiles stop at the last whole window; such inputs feed no pooled output, so their
 * gradient is 0; rows alike). Padding is dropped. */
static void ingrad_rows(const wino_t *s, float *dc, float *L, float *R, const float *DL, const float *DR, size_t ps,
                        size_t ds) {
  const int m = s->m, th = s->th, w = m * s->tw, H = s->H, W = s->W, pad = s->pad;
  for (int r = 0; r < m; r++) { row_zero(L + (size_t)r * ps + ds, w); row_zero(R + (size_t)r * ps + ds, w); }
  float *L0 = L, *L1 = L + ps, *R0 = R, *R1 = R + ps;
  const float *DL0 = DL, *DL1 = DL + ds, *DR0 = DR, *DR1 = DR + ds;
#pragma omp simd
  for (size_t j = 0; j < ds; j++) {
    L0[w + j] += DL0[j]; L1[w + j] += DL1[j]; R0[w + j] += DR0[j]; R1[w + j] += DR1[j];
  }
  int a = m - pad, e = w - pad, f = w + 2 - pad;
  a = a < 0 ? 0 : a > W ? W : a;
  e = e > W ? W : e < a ? a : e;
  f = f > W ? W : f < e ? e : f;
  for (int ih = 0; ih < H; ih++) {
    const int pr = ih + pad;
    float *d = dc + (size_t)ih * W;
    if (pr >= m * th + 2) { row_zero(d, W); continue; }
    const size_t o = (size_t)(pr % m) * ps + (size_t)(pr / m) * w;
    const float *lr = L + o + pad, *rr = R + o; /* padded column iw + pad: lr[iw], rr[iw + pad - m] */
    const int sh = pad - m;
    for (int iw = 0; iw < a; iw++) d[iw] = lr[iw];
#pragma omp simd
    for (int iw = a; iw < e; iw++) d[iw] = lr[iw] + rr[iw + sh];
    for (int iw = e; iw < f; iw++) d[iw] = rr[iw + sh];
    for (int iw = f; iw < W; iw++) d[iw] = 0.0f;
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
  const int tw = s->tw, w2 = 2 * tw, th = s->th, tpi = s->tpi, H = s->H, W = s->W;
  const size_t ps = (size_t)(th + 1) * w2, ds = 2 * (size_t)tpi;
  float *L = tmp, *R = L + 2 * ps, *DL = R + 2 * ps, *DR = DL + 2 * ds;
  float *L0 = L, *L1 = L + ps, *R0 = R, *R1 = R + ps, *DL0 = DL, *DL1 = DL + ds, *DR0 = DR, *DR1 = DR + ds;
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
    ingrad_rows(s, din + (size_t)c * H * W, L, R, DL, DR, ps, ds);
  }
}

/* ------------------------------------------------------------------------------- F(4x4,3x3) */

/* 1-D transforms of F(4x4,3x3) (the matrices of Lavin & Gray, points 0, +-1, +-2, inf; checked
 * against direct convolution in double to 4e-15), each on 6 (or 3, or 4) values:
 *   BT d = (4d0 - 5d2 + d4, (d4 - 4d2) + (d3 - 4d1), (d4 - 4d2) - (d3 - 4d1),
 *           (d4 - d2) + 2(d3 - d1), (d4 - d2) - 2(d3 - d1), 4d1 - 5d3 + d5)
 *   G g  = (g0/4, -(g0+g1+g2)/6, -(g0-g1+g2)/6, g0/24 + g1/12 + g2/6, g0/24 - g1/12 + g2/6, g2)
 *   AT m = (m0+m1+m2+m3+m4, (m1-m2) + 2(m3-m4), (m1+m2) + 4(m3+m4), (m1-m2) + 8(m3-m4) + m5)
 * and their adjoints, for the backward:
 *   A y  = (y0, y0+y1+y2+y3, y0-y1+y2-y3, y0+2y1+4y2+8y3, y0-2y1+4y2-8y3, y3)
 *   B v  = (4v0, -4v1+4v2-2v3+2v4+4v5, -5v0-4v1-4v2-v3-v4, v1-v2+2v3-2v4-5v5, v0+v1+v2+v3+v4, v5)
 *   GT u = (u0/4 - (u1+u2)/6 + (u3+u4)/24, (u2-u1)/6 + (u3-u4)/12, (u3+u4-u1-u2)/6 + u5)
 * The 2-D transforms apply them along columns, then rows. Tiles are 6x6 at stride 4 (4x4 output
 * tiles), 36 transform planes xi = 6a + b. */
/* The 1-D transforms as macros on token-pasted scalars (o##0 .. o##5 from d##0 .. d##5), so every
 * flat tile loop below is straight-line scalar code the vectoriser takes (small local arrays
 * were not scalarised in time: those loops stayed scalar and ran 1.7x slower than F(2x2)). */
#define BT6(o, d) \
  const float o##p_ = d##4 - 4.0f * d##2, o##q_ = d##3 - 4.0f * d##1, o##r_ = d##4 - d##2, o##s_ = 2.0f * (d##3 - d##1); \
  const float o##0 = 4.0f * d##0 - 5.0f * d##2 + d##4, o##1 = o##p_ + o##q_, o##2 = o##p_ - o##q_, o##3 = o##r_ + o##s_, \
              o##4 = o##r_ - o##s_, o##5 = 4.0f * d##1 - 5.0f * d##3 + d##5;
#define G6(o, g0, g1, g2) \
  const float o##a_ = (g0) + (g2), o##b_ = (g0) / 24.0f + (g2) / 6.0f; \
  const float o##0 = 0.25f * (g0), o##1 = -(o##a_ + (g1)) / 6.0f, o##2 = -(o##a_ - (g1)) / 6.0f, \
              o##3 = o##b_ + (g1) / 12.0f, o##4 = o##b_ - (g1) / 12.0f, o##5 = (g2);
#define AT4(o, m) \
  const float o##s12_ = m##1 + m##2, o##d12_ = m##1 - m##2, o##s34_ = m##3 + m##4, o##d34_ = m##3 - m##4; \
  const float o##0 = m##0 + o##s12_ + o##s34_, o##1 = o##d12_ + 2.0f * o##d34_, o##2 = o##s12_ + 4.0f * o##s34_, \
              o##3 = o##d12_ + 8.0f * o##d34_ + m##5;
#define A6(o, y) \
  const float o##s02_ = y##0 + y##2, o##s13_ = y##1 + y##3, o##e02_ = y##0 + 4.0f * y##2, o##e13_ = 2.0f * y##1 + 8.0f * y##3; \
  const float o##0 = y##0, o##1 = o##s02_ + o##s13_, o##2 = o##s02_ - o##s13_, o##3 = o##e02_ + o##e13_, \
              o##4 = o##e02_ - o##e13_, o##5 = y##3;
#define B6(o, v) \
  const float o##0 = 4.0f * v##0, o##1 = 4.0f * (v##2 - v##1) + 2.0f * (v##4 - v##3) + 4.0f * v##5, \
              o##2 = -5.0f * v##0 - 4.0f * (v##1 + v##2) - (v##3 + v##4), \
              o##3 = (v##1 - v##2) + 2.0f * (v##3 - v##4) - 5.0f * v##5, o##4 = v##0 + v##1 + v##2 + v##3 + v##4, \
              o##5 = v##5;
#define GT3(o, u) \
  const float o##s12_ = u##1 + u##2, o##s34_ = u##3 + u##4; \
  const float o##0 = 0.25f * u##0 - o##s12_ / 6.0f + o##s34_ / 24.0f, o##1 = (u##2 - u##1) / 6.0f + (u##3 - u##4) / 12.0f, \
              o##2 = (o##s34_ - o##s12_) / 6.0f + u##5;
/* column b (or row) of a 6x6 named x##r##c: c##r = x##r##b */
#define COL6(o, x, b) const float o##0 = x##0##b, o##1 = x##1##b, o##2 = x##2##b, o##3 = x##3##b, o##4 = x##4##b, o##5 = x##5##b;
#define COL4(o, x, b) const float o##0 = x##0##b, o##1 = x##1##b, o##2 = x##2##b, o##3 = x##3##b;
/* the 6 planes a = 0..5 of column b of M[xi][..][t] (xi = 6a + b, stride xs) */
#define LDCOL(o, m, xs, t, b) const float o##0 = (m)[(size_t)(b) * (xs) + (t)], o##1 = (m)[(size_t)(6 + b) * (xs) + (t)], \
  o##2 = (m)[(size_t)(12 + b) * (xs) + (t)], o##3 = (m)[(size_t)(18 + b) * (xs) + (t)], \
  o##4 = (m)[(size_t)(24 + b) * (xs) + (t)], o##5 = (m)[(size_t)(30 + b) * (xs) + (t)];
#define STCOL(m, xs, t, b, v) (m)[(size_t)(b) * (xs) + (t)] = v##0; (m)[(size_t)(6 + b) * (xs) + (t)] = v##1; \
  (m)[(size_t)(12 + b) * (xs) + (t)] = v##2; (m)[(size_t)(18 + b) * (xs) + (t)] = v##3; \
  (m)[(size_t)(24 + b) * (xs) + (t)] = v##4; (m)[(size_t)(30 + b) * (xs) + (t)] = v##5;
/* Y##r##c (4x4) = AT M A of one tile: AT down the 6 columns into c##b##r, then along the 4 rows */
#define TILE_OUT(Y, m, xs, t) \
  LDCOL(e0, m, xs, t, 0) AT4(c0, e0) LDCOL(e1, m, xs, t, 1) AT4(c1, e1) LDCOL(e2, m, xs, t, 2) AT4(c2, e2) \
  LDCOL(e3, m, xs, t, 3) AT4(c3, e3) LDCOL(e4, m, xs, t, 4) AT4(c4, e4) LDCOL(e5, m, xs, t, 5) AT4(c5, e5) \
  COL6(r0, c, 0) AT4(Y##0, r0) COL6(r1, c, 1) AT4(Y##1, r1) COL6(r2, c, 2) AT4(Y##2, r2) COL6(r3, c, 3) AT4(Y##3, r3)
/* dM (6x6) = A dY AT of one tile from Y##r##c: A along the 4 rows into h##r##b, then down the 6 columns */
#define TILE_DM(m, xs, t, Y) \
  A6(h0, Y##0) A6(h1, Y##1) A6(h2, Y##2) A6(h3, Y##3) \
  COL4(k0, h, 0) A6(q0, k0) STCOL(m, xs, t, 0, q0) COL4(k1, h, 1) A6(q1, k1) STCOL(m, xs, t, 1, q1) \
  COL4(k2, h, 2) A6(q2, k2) STCOL(m, xs, t, 2, q2) COL4(k3, h, 3) A6(q3, k3) STCOL(m, xs, t, 3, q3) \
  COL4(k4, h, 4) A6(q4, k4) STCOL(m, xs, t, 4, q4) COL4(k5, h, 5) A6(q5, k5) STCOL(m, xs, t, 5, q5)

/* U[xi][co][ci] = (G g GT)[a][b] for output channels [co0, co1), as wino_weights. */
static void wino4_weights(float *restrict U, size_t xs, const float *restrict w, int Ci, int co0, int co1) {
  const size_t j1 = (size_t)co1 * Ci;
  float gt[9][WB];
  for (size_t jb = (size_t)co0 * Ci; jb < j1; jb += WB) {
    const int n = j1 - jb < WB ? (int)(j1 - jb) : WB;
    const float *wb = w + jb * 9;
    taps_in(gt, wb, n);
    float *u = U + jb;
#pragma omp simd
    for (int jj = 0; jj < n; jj++) {
      /* G down each column q of g (c##q##a), then G along each row a */
      G6(c0, gt[0][jj], gt[3][jj], gt[6][jj]) G6(c1, gt[1][jj], gt[4][jj], gt[7][jj]) G6(c2, gt[2][jj], gt[5][jj], gt[8][jj])
#define UROW(a) { G6(r, c0##a, c1##a, c2##a) u[(size_t)(6 * a) * xs + jj] = r0; u[(size_t)(6 * a + 1) * xs + jj] = r1; \
      u[(size_t)(6 * a + 2) * xs + jj] = r2; u[(size_t)(6 * a + 3) * xs + jj] = r3; u[(size_t)(6 * a + 4) * xs + jj] = r4; \
      u[(size_t)(6 * a + 5) * xs + jj] = r5; }
      UROW(0) UROW(1) UROW(2) UROW(3) UROW(4) UROW(5)
#undef UROW
    }
  }
}

/* dw[co][ci] += GT dU G for output channels [co0, co1), as wino_wgrad. */
static void wino4_wgrad(float *restrict dw, const float *restrict dU, size_t xs, int Ci, int co0, int co1) {
  const size_t j1 = (size_t)co1 * Ci;
  float dt[9][WB];
  for (size_t jb = (size_t)co0 * Ci; jb < j1; jb += WB) {
    const int n = j1 - jb < WB ? (int)(j1 - jb) : WB;
    const float *u = dU + jb;
#pragma omp simd
    for (int jj = 0; jj < n; jj++) {
      /* GT down each column b (c##b##k), then GT along each row k */
      LDCOL(e0, u, xs, jj, 0) GT3(c0, e0) LDCOL(e1, u, xs, jj, 1) GT3(c1, e1) LDCOL(e2, u, xs, jj, 2) GT3(c2, e2)
      LDCOL(e3, u, xs, jj, 3) GT3(c3, e3) LDCOL(e4, u, xs, jj, 4) GT3(c4, e4) LDCOL(e5, u, xs, jj, 5) GT3(c5, e5)
#define WROW(k) { COL6(x, c, k) GT3(r, x) dt[3 * k][jj] = r0; dt[3 * k + 1][jj] = r1; dt[3 * k + 2][jj] = r2; }
      WROW(0) WROW(1) WROW(2)
#undef WROW
    }
    taps_out_add(dw + jb * 9, dt, n);
  }
}

/* V[xi][c - c0][col + t] = (BT d B)[a][b] for channels [c0, c1) of one image, as wino_input:
 * per channel every padded row pr = 4k + r (phase r = 0..3, block k = 0..th) is copied twice,
 * as its padded columns [0, 4tw) (L) and [4, 4tw+4) (R), ordered by phase then block; tile
 * t = ty tw + tx finds its rows 0..3 at phase r, block ty (offset 4t) and rows 4, 5 at phases 0, 1,
 * block ty + 1 (offset 4t + 4tw), columns 0..3 in L and 4, 5 in R. */
static void wino4_input(const wino_t *s, float *restrict V, size_t ldv, size_t xs, size_t col, const float *x, int c0,
                        int c1, float *tmp) {
  const int tw = s->tw, w4 = 4 * tw, H = s->H, W = s->W, pad = s->pad, nk = s->th + 1, nT = s->tpi;
  const size_t ps = (size_t)nk * w4;
  float *L = tmp, *R = tmp + 4 * ps;
  for (int c = c0; c < c1; c++) {
    const float *xc = x + (size_t)c * H * W;
    for (int k = 0; k < nk; k++)
      for (int r = 0; r < 4; r++) {
        const int ih = 4 * k + r - pad;
        float *lr = L + r * ps + (size_t)k * w4, *rr = R + r * ps + (size_t)k * w4;
        if (ih < 0 || ih >= H) { row_zero(lr, w4); row_zero(rr, w4); continue; }
        row_shift(lr, xc + (size_t)ih * W, W, -pad, w4);
        row_shift(rr, xc + (size_t)ih * W, W, 4 - pad, w4);
      }
    const float *L0 = L, *L1 = L + ps, *L2 = L + 2 * ps, *L3 = L + 3 * ps;
    const float *R0 = R, *R1 = R + ps, *R2 = R + 2 * ps, *R3 = R + 3 * ps;
    float *v = V + (size_t)(c - c0) * ldv + col;
#pragma omp simd
    for (int t = 0; t < nT; t++) {
      const size_t i = 4 * (size_t)t, j = i + w4;
      /* BT along each row r of the tile (h##r##0..5), then down each column b */
#define LDROW(d, Lp, Rp, o) const float d##0 = Lp[o], d##1 = Lp[o + 1], d##2 = Lp[o + 2], d##3 = Lp[o + 3], \
                                        d##4 = Rp[o], d##5 = Rp[o + 1];
      LDROW(d0, L0, R0, i) BT6(h0, d0) LDROW(d1, L1, R1, i) BT6(h1, d1) LDROW(d2, L2, R2, i) BT6(h2, d2)
      LDROW(d3, L3, R3, i) BT6(h3, d3) LDROW(d4, L0, R0, j) BT6(h4, d4) LDROW(d5, L1, R1, j) BT6(h5, d5)
#undef LDROW
#define VCOL(b) { COL6(e, h, b) BT6(o, e) STCOL(v, xs, t, b, o) }
      VCOL(0) VCOL(1) VCOL(2) VCOL(3) VCOL(4) VCOL(5)
#undef VCOL
    }
  }
}

/* out[co][4ty + r][4tx + c] = act((AT M A)[r][c] + bias[co]) (cropped), as wino_output: the flat
 * loop writes each tile row's four output rows into Yr[r] ([t][4]), then copied into out. */
static void wino4_output(const wino_t *s, float *out, const float *restrict M, size_t ldm, size_t xs, int nimg,
                         const float *bias, int co0, int co1, float *tmp) {
  const int tw = s->tw, Wo = s->Wo, tpi = s->tpi, T = nimg * tpi;
  const size_t out_n = (size_t)s->Co * s->P, T4 = 4 * (size_t)T;
  const float sl = s->act ? s->slope : 1.0f; /* a > 0 ? a : 1 * a == a: no activation */
  float *restrict Y0 = tmp, *restrict Y1 = tmp + T4, *restrict Y2 = tmp + 2 * T4, *restrict Y3 = tmp + 3 * T4;
  for (int co = co0; co < co1; co++) {
    const float bv = bias[co];
    const float *m = M + (size_t)co * ldm;
#pragma omp simd
    for (int t = 0; t < T; t++) {
      TILE_OUT(y, m, xs, t)
      const size_t o = 4 * (size_t)t;
#define ST4(Yp, r) { const float a0 = y##r##0 + bv, a1 = y##r##1 + bv, a2 = y##r##2 + bv, a3 = y##r##3 + bv; \
      Yp[o] = a0 > 0.0f ? a0 : sl * a0; Yp[o + 1] = a1 > 0.0f ? a1 : sl * a1; Yp[o + 2] = a2 > 0.0f ? a2 : sl * a2; \
      Yp[o + 3] = a3 > 0.0f ? a3 : sl * a3; }
      ST4(Y0, 0) ST4(Y1, 1) ST4(Y2, 2) ST4(Y3, 3)
#undef ST4
    }
    for (int i = 0; i < nimg; i++)
      for (int ty = 0; ty < s->th; ty++)
        for (int r = 0; r < 4 && 4 * ty + r < s->Ho; r++) {
          const float *y = tmp + (size_t)r * T4 + 4 * ((size_t)i * tpi + (size_t)ty * tw);
          float *o = out + i * out_n + (size_t)co * s->P + (size_t)(4 * ty + r) * Wo;
          for (int ow = 0; ow < Wo; ow++) o[ow] = y[ow];
        }
  }
}

/* Fused 2x2 max-pool on F(4x4) tiles (floor mode, or even Ho/Wo: every window that exists lies
 * inside Ho x Wo): tile t holds windows (2ty + a2, 2tx + b2); pooled[co][py][px] = the first maximum
 * (row-major) of the window's four activations, ix = its position 0..3; windows past Hp/Wp are
 * not written. The flat loop writes each tile row's two pooled rows into P0/P1 ([t][2]) with
 * argmaxes in I0/I1, then copied into out/ix ([Co][Hp][Wp] per image, stride s->on). */
static void wino4_output_pool(const wino_t *s, float *out, uint8_t *ix, const float *restrict M, size_t ldm,
                              size_t xs, int nimg, const float *bias, int co0, int co1, float *tmp) {
  const int tw = s->tw, tpi = s->tpi, T = nimg * tpi, Hp = s->Hp, Wp = s->Wp;
  const size_t T2 = 2 * (size_t)T;
  const float slope = s->slope;
  float *restrict P0 = tmp, *restrict P1 = tmp + T2, *restrict I0 = tmp + 2 * T2, *restrict I1 = tmp + 3 * T2;
  for (int co = co0; co < co1; co++) {
    const float bv = bias[co];
    const float *m = M + (size_t)co * ldm;
#pragma omp simd
    for (int t = 0; t < T; t++) {
      TILE_OUT(y, m, xs, t)
      /* window (a2, b2): y[2a2 + p/2][2b2 + p%2], p = 0..3 row-major; act, then the first maximum */
#define WIN(Pp, Ip, o, ra, rb, ca, cb) { \
        float v0 = y##ra##ca + bv, v1 = y##ra##cb + bv, v2 = y##rb##ca + bv, v3 = y##rb##cb + bv; \
        v0 = v0 > 0.0f ? v0 : slope * v0; v1 = v1 > 0.0f ? v1 : slope * v1; \
        v2 = v2 > 0.0f ? v2 : slope * v2; v3 = v3 > 0.0f ? v3 : slope * v3; \
        FIRST_MAX4(mx, kx, v0, v1, v2, v3) Pp[o] = mx; Ip[o] = kx; }
      const size_t o = 2 * (size_t)t;
      WIN(P0, I0, o, 0, 1, 0, 1) WIN(P0, I0, o + 1, 0, 1, 2, 3) WIN(P1, I1, o, 2, 3, 0, 1) WIN(P1, I1, o + 1, 2, 3, 2, 3)
#undef WIN
    }
    for (int i = 0; i < nimg; i++)
      for (int ty = 0; ty < s->th; ty++)
        for (int a2 = 0; a2 < 2 && 2 * ty + a2 < Hp; a2++) {
          const size_t src = (size_t)a2 * T2 + 2 * ((size_t)i * tpi + (size_t)ty * tw);
          const size_t dst = i * s->on + (size_t)co * Hp * Wp + (size_t)(2 * ty + a2) * Wp;
          const float *pp = P0 + src, *ip = I0 + src; /* P1 = P0 + T2, I1 = I0 + T2 */
          for (int px = 0; px < Wp; px++) { out[dst + px] = pp[px]; ix[dst + px] = (uint8_t)ip[px]; }
        }
  }
}

/* dM of one image from the gradient g [Co][Ho][Wo] (zero past the edge), as wino_outgrad: output
 * rows 4ty + r are copied (zero-extended to 4tw columns) into G##r so tile t finds them at 4t. */
static void wino4_outgrad(const wino_t *s, float *restrict dM, size_t ldm, size_t xs, size_t col, const float *g,
                          int co0, int co1, float *tmp) {
  const int tw = s->tw, w4 = 4 * tw, Wo = s->Wo, tpi = s->tpi;
  const size_t gs = (size_t)s->th * w4;
  const float *G0 = tmp, *G1 = tmp + gs, *G2 = tmp + 2 * gs, *G3 = tmp + 3 * gs;
  for (int co = co0; co < co1; co++) {
    const float *gc = g + (size_t)co * s->P;
    for (int ty = 0; ty < s->th; ty++)
      for (int r = 0; r < 4; r++) {
        float *dst = tmp + r * gs + (size_t)ty * w4;
        if (4 * ty + r < s->Ho) row_shift(dst, gc + (size_t)(4 * ty + r) * Wo, Wo, 0, w4);
        else row_zero(dst, w4);
      }
    float *m = dM + (size_t)co * ldm + col;
#pragma omp simd
    for (int t = 0; t < tpi; t++) {
      const size_t i = 4 * (size_t)t;
#define LD4(y, Gp) const float y##0 = Gp[i], y##1 = Gp[i + 1], y##2 = Gp[i + 2], y##3 = Gp[i + 3];
      LD4(y0, G0) LD4(y1, G1) LD4(y2, G2) LD4(y3, G3)
#undef LD4
      TILE_DM(m, xs, t, y)
    }
  }
}

/* Fused pool backward on F(4x4) tiles, one image: dY is zero but at each window's argmax, which
 * gets act'(out) * dout of its pooled output; windows past Hp/Wp have none. The pooled rows
 * 2ty + a2 of dout, out and ix are copied (zero-extended to 2tw) into D/O/I##a2 so tile t finds
 * its windows at 2t, 2t + 1; db[co] (+)= the sum of the gradients (acc = 0 overwrites). */
static void wino4_outgrad_pool(const wino_t *s, float *restrict dM, size_t ldm, size_t xs, size_t col,
                               const float *dout, const float *out, const uint8_t *ix, int co0, int co1, float *db,
                               int acc, float *tmp) {
  const int tw = s->tw, w2 = 2 * tw, tpi = s->tpi, Hp = s->Hp, Wp = s->Wp;
  const size_t rs = (size_t)s->th * w2, pn = (size_t)Hp * Wp;
  const float slope = s->slope;
  float *Dg = tmp, *Ov = tmp + 2 * rs, *Ix = tmp + 4 * rs; /* [2][rs] each */
  const float *D0 = Dg, *D1 = Dg + rs, *O0 = Ov, *O1 = Ov + rs, *I0 = Ix, *I1 = Ix + rs;
  for (int co = co0; co < co1; co++) {
    for (int ty = 0; ty < s->th; ty++)
      for (int a2 = 0; a2 < 2; a2++) {
        const size_t o = (size_t)a2 * rs + (size_t)ty * w2;
        const int py = 2 * ty + a2;
        int px = 0;
        if (py < Hp)
          for (; px < Wp; px++) {
            const size_t q = (size_t)co * pn + (size_t)py * Wp + px;
            Dg[o + px] = dout[q]; Ov[o + px] = out[q]; Ix[o + px] = (float)ix[q];
          }
        for (; px < w2; px++) { Dg[o + px] = 0.0f; Ov[o + px] = 0.0f; Ix[o + px] = -1.0f; }
      }
    float *m = dM + (size_t)co * ldm + col, sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int t = 0; t < tpi; t++) {
      const size_t i = 2 * (size_t)t;
      /* window (a2, b2) -> y[2a2 + p/2][2b2 + p%2] = g where p is its argmax */
#define WG(g, k, Dp, Op, Ip, o) const float g = Op[o] > 0.0f ? Dp[o] : slope * Dp[o], k = Ip[o];
      WG(g00, w00, D0, O0, I0, i) WG(g01, w01, D0, O0, I0, i + 1) WG(g10, w10, D1, O1, I1, i) WG(g11, w11, D1, O1, I1, i + 1)
#undef WG
      sum += (g00 + g01) + (g10 + g11);
#define P4(ra, rb, ca, cb, g, k) const float y##ra##ca = k == 0.0f ? g : 0.0f, y##ra##cb = k == 1.0f ? g : 0.0f, \
                                             y##rb##ca = k == 2.0f ? g : 0.0f, y##rb##cb = k == 3.0f ? g : 0.0f;
      P4(0, 1, 0, 1, g00, w00) P4(0, 1, 2, 3, g01, w01) P4(2, 3, 0, 1, g10, w10) P4(2, 3, 2, 3, g11, w11)
#undef P4
      TILE_DM(m, xs, t, y)
    }
    db[co] = acc ? db[co] + sum : sum;
  }
}

/* din[c][ih][iw] = sum over tiles of (B dV BT) at padded (ih + pad, iw + pad), channels [c0, c1)
 * of one image (overwritten), the adjoint of wino4_input's layout: the flat stage writes each
 * tile's rows 0..3 into L/R[phase r] at block ty (columns 0..3 at L 4t.., 4, 5 at R 4t, 4t + 1,
 * R 4t + 2, 4t + 3 zeroed) and rows 4, 5 into DL/DR[phase 0, 1], which a second flat pass adds one
 * block further down; a padded row is then its L row plus its R row shifted by four columns;
 * rows and columns no tile reaches (padded >= 4th + 2, 4tw + 2) get 0, padding is dropped. */
static void wino4_ingrad(const wino_t *s, float *din, const float *restrict dV, size_t ldv, size_t xs, size_t col,
                         int c0, int c1, float *tmp) {
  const int tw = s->tw, w4 = 4 * tw, th = s->th, tpi = s->tpi, H = s->H, W = s->W;
  const size_t ps = (size_t)(th + 1) * w4, ds = 4 * (size_t)tpi;
  float *L = tmp, *R = L + 4 * ps, *DL = R + 4 * ps, *DR = DL + 2 * ds;
  float *L0 = L, *L1 = L + ps, *L2 = L + 2 * ps, *L3 = L + 3 * ps, *R0 = R, *R1 = R + ps, *R2 = R + 2 * ps, *R3 = R + 3 * ps;
  float *DL0 = DL, *DL1 = DL + ds, *DR0 = DR, *DR1 = DR + ds;
  for (int c = c0; c < c1; c++) {
    const float *v = dV + (size_t)(c - c0) * ldv + col;
#pragma omp simd
    for (int t = 0; t < tpi; t++) {
      const size_t i = 4 * (size_t)t;
      /* B down each column b (q##b##r), then along each row r into its columns 0..5 */
      LDCOL(e0, v, xs, t, 0) B6(q0, e0) LDCOL(e1, v, xs, t, 1) B6(q1, e1) LDCOL(e2, v, xs, t, 2) B6(q2, e2)
      LDCOL(e3, v, xs, t, 3) B6(q3, e3) LDCOL(e4, v, xs, t, 4) B6(q4, e4) LDCOL(e5, v, xs, t, 5) B6(q5, e5)
#define DROW(r, Lp, Rp) { COL6(x, q, r) B6(z, x) Lp[i] = z0; Lp[i + 1] = z1; Lp[i + 2] = z2; Lp[i + 3] = z3; \
      Rp[i] = z4; Rp[i + 1] = z5; Rp[i + 2] = 0.0f; Rp[i + 3] = 0.0f; }
      DROW(0, L0, R0) DROW(1, L1, R1) DROW(2, L2, R2) DROW(3, L3, R3) DROW(4, DL0, DR0) DROW(5, DL1, DR1)
#undef DROW
    }
    ingrad_rows(s, din + (size_t)c * H * W, L, R, DL, DR, ps, ds);
  }
}

static void wino_bind(wino_t *s) {
  if (s->m == 4) {
    s->weights = wino4_weights; s->wgrad = wino4_wgrad; s->input = wino4_input; s->output = wino4_output;
    s->output_pool = wino4_output_pool; s->outgrad = wino4_outgrad; s->outgrad_pool = wino4_outgrad_pool;
    s->ingrad = wino4_ingrad;
  } else {
    s->weights = wino_weights; s->wgrad = wino_wgrad; s->input = wino_input; s->output = wino_output;
    s->output_pool = wino_output_pool; s->outgrad = wino_outgrad; s->outgrad_pool = wino_outgrad_pool;
    s->ingrad = wino_ingrad;
  }
}

/* ------------------------------------------------------------------------------- forward */

/* The output tile size. F(4x4,3x3) does 36 / 16 = 2.25 multiplies per output against F(2x2)'s 4
 * and moves 2.25 transformed values per output and channel against 4, but its transforms do more
 * arithmetic per value and its GEMMs are 36 thinner ones. Auto takes it when a GEMM gets at least
 * WINO4_MIN_TILES tiles (images per group x F(4x4) tiles per image). Measured on the reference
 * net, 1 thread: batch 128, the 28x28 and 14x14 layers (49 and 16 tiles an image) 1.16x and
 * 1.23x faster (whole step 1.12x); batch 1, 28x28 (49 tiles) level, 14x14 (16 tiles) 1.23x slower,
 * so it stays on F(2x2) there. Pools fused into F(4x4) tiles: floor mode or even maps only (ceil
 * mode on an odd map clips windows: F(2x2) does those). */
#ifndef WINO4_MIN_TILES
#define WINO4_MIN_TILES 48
#endif
static int wino_m(int B, int Ci, int H, int W, int Co, int pad, int pool) {
  const int mode = cpu_conv_get_mode(), Ho = H + 2 * pad - 2, Wo = W + 2 * pad - 2;
  if (pool == 2 && (Ho % 2 || Wo % 2)) return 2;
  if (mode == CPU_CONV_WINOGRAD) return 2;
  if (mode == CPU_CONV_WINOGRAD4) return 4;
  wino_t s4 = wino_shape(B, Ci, H, W, Co, pad, pool, 4);
  return s4.nb * s4.tpi >= WINO4_MIN_TILES ? 4 : 2;
}

int cpu_wino_tile(int B, int Ci, int H, int W, int Co, int pad, int pool) { return wino_m(B, Ci, H, W, Co, pad, pool); }

/* GEMMs C_xi (beta)= op(A_xi) x B_xi for xi in [x0, x1), op(A) = A or (transa) A^T; strides
 * between xi planes as, bs, cs. One plan (cpu_smm.c: libxsmm or sgemm) serves all the planes. */
static void gemm_xi(int x0, int x1, int transa, int m, int n, int k, const float *A, int lda, size_t as,
                    const float *Bm, int ldb, size_t bs, float beta, float *C, int ldc, size_t cs) {
  if (m <= 0 || n <= 0 || x1 <= x0) return;
  cpu_smm_t p;
  cpu_smm_plan(&p, transa, m, n, k, lda, ldb, ldc, beta);
  for (int xi = x0; xi < x1; xi++) cpu_smm(&p, A + xi * as, Bm + xi * bs, C + xi * cs);
}

/* d[c][r] = s[r][c], r < R, c < C (8x8 blocks through tr8, the edges element by element) */
static void transpose(float *restrict d, const float *restrict s, int R, int C) {
  int r0 = 0;
  for (; r0 + 8 <= R; r0 += 8) {
    int c0 = 0;
    for (; c0 + 8 <= C; c0 += 8) {
      v8f x[8];
      for (int i = 0; i < 8; i++) x[i] = *(const v8f *)(s + (size_t)(r0 + i) * C + c0);
      tr8(x);
      for (int i = 0; i < 8; i++) *(v8f *)(d + (size_t)(c0 + i) * R + r0) = x[i];
    }
    for (; c0 < C; c0++)
      for (int i = 0; i < 8; i++) d[(size_t)c0 * R + r0 + i] = s[(size_t)(r0 + i) * C + c0];
  }
  for (; r0 < R; r0++)
    for (int c = 0; c < C; c++) d[(size_t)c * R + r0] = s[(size_t)r0 * C + c];
}

/* dU_xi[Co][Ci] (beta)= M_xi[Co][T] x V_xi[Ci][T]^T for xi in [x0, x1). Both operands run along
 * T, the GEMM's k; as one NT sgemm this ran at about half the GFLOP/s of the forward's NN GEMMs
 * (OpenBLAS, K = T = 49..98, 32x32 to 128x64 results; libxsmm does not JIT a transposed A), so
 * each V_xi is first transposed into vt ([T][Ci], in L1) and the GEMM is NN.
 *
 * Blocked summation: with beta = 1 (the second and later groups of images) the group's product
 * goes into part (one [Co][Ci] plane, beta = 0) and is then added to dU, on every GEMM path.
 * libxsmm with beta = 1 loads C into its accumulators, so all groups x tiles of a batch (up to
 * ~6000 products at batch 128) were summed in one float32 chain: 6-11x sgemm's error on the
 * weight gradient (test_layers: test_wgrad_precision_realistic). Blocked, each group's T products
 * are summed on their own and the running total takes one rounding per group, as sgemm does. */
static void gemm_wgrad(int x0, int x1, int Co, int Ci, int T, const float *M, size_t ms, const float *V, size_t vs,
                       float beta, float *dU, size_t us, float *vt, float *part) {
  if (x1 <= x0) return;
  cpu_smm_t p;
  const int blocked = beta != 0.0f;
  cpu_smm_plan(&p, 0, Co, Ci, T, T, Ci, Ci, 0.0f);
  const size_t n = (size_t)Co * Ci;
  for (int xi = x0; xi < x1; xi++) {
    transpose(vt, V + xi * vs, Ci, T);
    float *restrict du = dU + xi * us;
    if (!blocked) { cpu_smm(&p, M + xi * ms, vt, du); continue; }
    cpu_smm(&p, M + xi * ms, vt, part);
#pragma omp simd
    for (size_t j = 0; j < n; j++) du[j] += part[j];
  }
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
  if (s->kU) U = s->kU;
  if (s->kV) V = s->kV;
  int c0, c1, co0, co1, x0, x1;
  cpu_split(s->Ci, nt, t, &c0, &c1);
  cpu_split(s->Co, nt, t, &co0, &co1);
  cpu_split(s->nx, nt, t, &x0, &x1);
  s->weights(U, us, w, s->Ci, co0, co1);
  for (int i = 0; i < s->B; i++) {
    s->input(s, V + (size_t)c0 * T, (size_t)T, vs, 0, in + i * in_n, c0, c1, tmp);
#pragma omp barrier
    gemm_xi(x0, x1, 0, s->Co, T, s->Ci, U, s->Ci, us, V, T, vs, 0.0f, M, T, ms);
#pragma omp barrier
    if (s->pool) s->output_pool(s, out + i * out_n, s->idx + i * out_n, M, (size_t)T, ms, 1, b, co0, co1, tmp);
    else s->output(s, out + i * out_n, M, (size_t)T, ms, 1, b, co0, co1, tmp);
  }
}

static void fwd_body(const wino_t *s, float *out, const float *in, const float *w, const float *b, float *scratch,
                     int t, int nt) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = s->on, us = wp((size_t)s->Co * s->Ci);
  float *U = scratch, *V = scratch + s->u_n + (size_t)t * s->per_thread, *M = V + s->v_n;
  float *tmp = M + s->m_n + s->du_n + s->db_n + s->g_n;
  if (s->kU) U = s->kU;
  if (s->kV) V = s->kV; /* batch 1: one group, one thread */
  int co0, co1, i0, i1;
  cpu_split(s->Co, nt, t, &co0, &co1);
  s->weights(U, us, w, s->Ci, co0, co1);
  if (nt > 1) {
#pragma omp barrier
  }
  cpu_split(s->B, nt, t, &i0, &i1);
  for (int g0 = i0; g0 < i1; g0 += s->nb) {
    const int g1 = g0 + s->nb < i1 ? g0 + s->nb : i1, T = (g1 - g0) * s->tpi;
    const size_t vs = wp((size_t)s->Ci * T), ms = wp((size_t)s->Co * T);
    for (int i = g0; i < g1; i++)
      s->input(s, V, (size_t)T, vs, (size_t)(i - g0) * s->tpi, in + i * in_n, 0, s->Ci, tmp);
    gemm_xi(0, s->nx, 0, s->Co, T, s->Ci, U, s->Ci, us, V, T, vs, 0.0f, M, T, ms);
    if (s->pool) s->output_pool(s, out + g0 * out_n, s->idx + g0 * out_n, M, (size_t)T, ms, g1 - g0, b, 0, s->Co, tmp);
    else s->output(s, out + g0 * out_n, M, (size_t)T, ms, g1 - g0, b, 0, s->Co, tmp);
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
                      int Co, int pad, int act, float slope, float *scratch, float *keep) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0, wino_m(B, Ci, H, W, Co, pad, 0));
  s.act = act; s.slope = slope;
  wino_keep(&s, keep);
  wino_fwd(&s, out, in, w, b, scratch);
}

void cpu_wino_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B, int Ci,
                           int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch, float *keep) {
  const int pool = ceil_mode ? 2 : 1;
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, pool, wino_m(B, Ci, H, W, Co, pad, pool));
  s.act = 1; s.slope = slope; s.idx = idx;
  wino_keep(&s, keep);
  wino_fwd(&s, out, in, w, b, scratch);
}

/* ------------------------------------------------------------------------------- backward */

/* db[co] (+)= sum_p g_i[co][p] for co in [co0, co1); acc = 0 overwrites (as cpu_conv.c). */
static void bias_grad(float *db, const float *g_i, int P, int co0, int co1, int acc) {
  for (int co = co0; co < co1; co++) {
    const float *d = g_i + (size_t)co * P;
    db[co] = acc ? db[co] + cpu_sum_blocked(d, P) : cpu_sum_blocked(d, P);
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
  /* Vr: the V the dU GEMMs read (the forward's, kept, or transformed here into V); dV goes to V */
  const float *Vr = s->kV ? s->kV : V;
  int c0, c1, co0, co1, x0, x1;
  cpu_split(s->Ci, nt, t, &c0, &c1);
  cpu_split(s->Co, nt, t, &co0, &co1);
  cpu_split(s->nx, nt, t, &x0, &x1);
  if (s->kU) U = s->kU;
  else if (din) s->weights(U, us, w, s->Ci, co0, co1);
  for (int i = 0; i < s->B; i++) {
    const float *g_i = dout + i * out_n;
    if (s->pool) {
      s->outgrad_pool(s, M, (size_t)T, ms, 0, g_i, out + i * out_n, s->idx + i * out_n, co0, co1, db, 1, tmp);
    } else {
      if (s->act) {
        const size_t o = (size_t)co0 * P; /* rows [co0, co1) of g are this thread's */
        act_grad(g + o, g_i + o, out + i * out_n + o, (size_t)(co1 - co0) * P, s->slope);
        g_i = g;
      }
      bias_grad(db, g_i, P, co0, co1, 1);
      s->outgrad(s, M, (size_t)T, ms, 0, g_i, co0, co1, tmp);
    }
    if (!s->kV) s->input(s, V + (size_t)c0 * T, (size_t)T, vs, 0, in + i * in_n, c0, c1, tmp);
#pragma omp barrier
    gemm_wgrad(x0, x1, s->Co, s->Ci, T, M, ms, Vr, vs, i ? 1.0f : 0.0f, dU, us, tmp + s->tmp_n,
               tmp + s->tmp_n + s->vt_n);
    if (din) /* dV (into V: this xi's V is no longer needed) = U^T x dM */
      gemm_xi(x0, x1, 1, s->Ci, T, s->Co, U, s->Ci, us, M, T, ms, 0.0f, V, T, vs);
#pragma omp barrier
    if (din) s->ingrad(s, din + i * in_n, V + (size_t)c0 * T, (size_t)T, vs, 0, c0, c1, tmp);
  }
  s->wgrad(dw, dU, us, s->Ci, co0, co1);
}

static void bwd_body(const wino_t *s, float *din, float *dw, float *db, const float *dout, const float *out,
                     const float *in, const float *w, float *scratch, int t, int nt) {
  const size_t in_n = (size_t)s->Ci * s->H * s->W, out_n = s->on, us = wp((size_t)s->Co * s->Ci);
  float *U = scratch, *V = scratch + s->u_n + (size_t)t * s->per_thread, *M = V + s->v_n, *dU = M + s->m_n;
  float *dbp = dU + s->du_n, *g = dbp + s->db_n, *tmp = g + s->g_n, *dbb = tmp + s->tmp_n + s->vt_n + s->pt_n;
  const float *Vr = s->kV ? s->kV : V; /* as bwd_split */
  if (s->kU) U = s->kU;
  else if (din) {
    int co0, co1;
    cpu_split(s->Co, nt, t, &co0, &co1);
    s->weights(U, us, w, s->Ci, co0, co1);
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
      const int bfirst = cpu_db_block_first(i, i0);
      if (s->pool) {
        s->outgrad_pool(s, M, (size_t)T, ms, (size_t)(i - g0) * s->tpi, g_i, out + i * out_n, s->idx + i * out_n, 0,
                          s->Co, dbb, !bfirst, tmp);
      } else {
        if (s->act) { act_grad(g, g_i, out + i * out_n, out_n, s->slope); g_i = g; }
        bias_grad(dbb, g_i, s->P, 0, s->Co, !bfirst);
        s->outgrad(s, M, (size_t)T, ms, (size_t)(i - g0) * s->tpi, g_i, 0, s->Co, tmp);
      }
      /* the block's sums onto the thread's total (thread 0's is db itself; the others' start here) */
      if (cpu_db_block_last(i, i0, i1)) cpu_db_flush(dbp, dbb, s->Co, t == 0 || i - i0 >= CPU_DB_BLOCK);
      if (!s->kV) s->input(s, V, (size_t)T, vs, (size_t)(i - g0) * s->tpi, in + i * in_n, 0, s->Ci, tmp);
    }
    gemm_wgrad(0, s->nx, s->Co, s->Ci, T, M, ms, Vr, vs, g0 > i0 ? 1.0f : 0.0f, dU, us, tmp + s->tmp_n,
               tmp + s->tmp_n + s->vt_n);
    if (!din) continue;
    gemm_xi(0, s->nx, 1, s->Ci, T, s->Co, U, s->Ci, us, M, T, ms, 0.0f, V, T, vs);
    for (int i = g0; i < g1; i++)
      s->ingrad(s, din + i * in_n, V, (size_t)T, vs, (size_t)(i - g0) * s->tpi, 0, s->Ci, tmp);
  }
  if (nt == 1) { s->wgrad(dw, dU, us, s->Ci, 0, s->Co); return; }
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
    for (int xi = 0; xi < s->nx; xi++) {
      float *dst = dU0 + xi * us + (size_t)co0 * s->Ci;
      const float *src = dUu + xi * us + (size_t)co0 * s->Ci;
      const size_t n = (size_t)(co1 - co0) * s->Ci;
#pragma omp simd
      for (size_t j = 0; j < n; j++) dst[j] += src[j];
    }
    const float *dbu = dUu + s->du_n;
    for (int co = co0; co < co1; co++) db[co] += dbu[co];
  }
  s->wgrad(dw, dU0, us, s->Ci, co0, co1);
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
                       float *scratch, const float *keep) {
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, 0, wino_m(B, Ci, H, W, Co, pad, 0));
  s.act = act; s.slope = slope;
  wino_keep(&s, (float *)keep); /* read only in the backward */
  wino_bwd(&s, din, dw, db, dout, out, in, w, scratch);
}

void cpu_wino_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out, const uint8_t *idx,
                            const float *in, const float *w, int B, int Ci, int H, int W, int Co, int pad, float slope,
                            int ceil_mode, float *scratch, const float *keep) {
  const int pool = ceil_mode ? 2 : 1;
  wino_t s = wino_shape(B, Ci, H, W, Co, pad, pool, wino_m(B, Ci, H, W, Co, pad, pool));
  s.act = 1; s.slope = slope; s.idx = (uint8_t *)idx; /* read only in the backward */
  wino_keep(&s, (float *)keep);
  wino_bwd(&s, din, dw, db, dout, out, in, w, scratch);
}
