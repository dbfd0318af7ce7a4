/* test_cuda_layers.c — every cuda_* layer (kernels/cuda) forward and backward against the ref_*
 * oracle (reference/) on odd shapes. Without a CUDA build or without a usable device each test
 * prints "skip - <test>: skipped: no CUDA device (...)" and the binary exits 0.
 *
 * Tolerances. Selection / single-multiply layers (pool, act, dropout, softmax backward) must match
 * bit for bit. Sums (conv, fc) are checked against the classic float dot-product bound: computed in
 * any order with n terms, |fl(sum) - sum| <= gamma_n * sum|terms|, gamma_n ~ n*2^-24, and the oracle
 * (double sums rounded once) is within 2^-24 * sum|terms|. sum|terms| per element is obtained by
 * running the oracle on |inputs|. So |gpu - ref| <= (n + 2) * FLT_EPSILON * absref (FLT_EPSILON =
 * 2^-23 leaves a factor 2); TF32 or a wrong index breaks it by orders of magnitude.
 * Run on a GPU machine: make && build/tests/test_cuda_layers (CUDA_VISIBLE_DEVICES picks the device;
 * PDL_CUDA_SYNC=1 reports a faulting kernel at its launch). */
#include <float.h>
#include <pthread.h>
#include <stdint.h>
#include "reference/ref.h"
#include "util/rng.h"
#include "tests/harness.h"
#ifdef PDL_HAVE_CUDA
#include "kernels/cuda/cuda_layers.h"
#include "tests/gpu_check.h"
#endif

#define CUDA_TESTS(X) \
  X(test_conv_forward) X(test_conv_backward) X(test_conv_strided) X(test_conv_chunked) X(test_conv_bias_split) X(test_conv_act_fused) X(test_conv_act_pool_fused) X(test_conv_realistic) X(test_conv_impl_switch) \
  X(test_fc) X(test_maxpool) \
  X(test_act) X(test_act_large) X(test_dropout) X(test_softmax_xent) X(test_threads) X(test_dense_la) \
  X(test_fullnet_layers)

#ifdef PDL_HAVE_CUDA
static int g_ndev;
#define NEED_GPU() do { if (g_ndev <= 0) SKIP_NO_GPU("skipped: no CUDA device (%s)", cuda_no_device_reason()); } while (0)

static rng_t g_rng;

static float *hnew(size_t n) {
  float *p = calloc(n ? n : 1, sizeof(float));
  if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
  return p;
}
static void fill(float *v, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)rng_uniform(&g_rng);
}
static float *habs(const float *v, size_t n) {
  float *a = hnew(n);
  for (size_t i = 0; i < n; i++) a[i] = fabsf(v[i]);
  return a;
}
static float *dnew(const float *h, size_t n) { /* device copy of h[0..n) */
  float *d = cuda_alloc_floats(n);
  cuda_upload(d, h, n);
  return d;
}
static void dget(float *h, const float *d, size_t n) { cuda_download(h, d, n); }

/* max over i of |got - ref| / ((nterms + 2) * FLT_EPSILON * absref + FLT_MIN): <= 1 passes. */
static double bound_ratio(const float *got, const float *ref, const float *absref, size_t n, double nterms) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)ref[i]);
    if (isnan(d)) return INFINITY;
    double r = d / ((nterms + 2) * FLT_EPSILON * (double)absref[i] + FLT_MIN);
    if (r > worst) worst = r;
  }
  return worst;
}
#define EXPECT_DOT(got, ref, absref, n, nterms, what) \
  EXPECT_NEAR(bound_ratio(got, ref, absref, n, nterms), 0.0, 1.0, \
              what ": float sum of n terms in any order is within gamma_n*sum|terms| of the exact sum")

static size_t mismatches(const float *a, const float *b, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) m += memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return m;
}
#define EXPECT_SAME(got, ref, n, what) do { size_t m_ = mismatches(got, ref, n); \
  EXPECT_MSG(m_ == 0, "%s: %zu of %zu elements differ (must be bitwise equal: no rounding involved)", \
             what, m_, (size_t)(n)); } while (0)

/* ---- conv ---------------------------------------------------------------------------------- */
typedef struct { int B, Ci, H, W, Co, k, pad, st; } conv_case;   /* st 0: cuda_conv_*, else cuda_conv_s_* */
static const conv_case conv_cases[] = {
  {3, 3, 7, 5, 4, 3, 1, 0},  /* same padding, non-square */
  {2, 1, 6, 9, 5, 5, 2, 0},  /* k = 5, single input channel */
  {1, 2, 5, 5, 3, 1, 0, 0},  /* 1x1 conv */
  {4, 5, 8, 7, 6, 3, 0, 0},  /* valid conv */
  {2, 3, 3, 4, 2, 3, 2, 0},  /* padding > needed: output larger than input */
  {1, 1, 1, 1, 1, 1, 0, 0},  /* degenerate 1x1x1 */
};
#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

static int conv_st(const conv_case *c) { return c->st ? c->st : 1; }
static int conv_ho(const conv_case *c) { return (c->H + 2 * c->pad - c->k) / conv_st(c) + 1; }
static int conv_wo(const conv_case *c) { return (c->W + 2 * c->pad - c->k) / conv_st(c) + 1; }
static size_t conv_scratch(const conv_case *c) {
  return c->st ? cuda_conv_s_scratch_floats(c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, c->st, 1)
               : cuda_conv_scratch_floats(c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, 1);
}
static void conv_dims(const conv_case *c, size_t *nin, size_t *nw, size_t *nout) {
  int Ho = conv_ho(c), Wo = conv_wo(c);
  *nin = (size_t)c->B * c->Ci * c->H * c->W;
  *nw = (size_t)c->Co * c->Ci * c->k * c->k;
  *nout = (size_t)c->B * c->Co * Ho * Wo;
}

static void check_conv_forward(const conv_case *c) {
  size_t nin, nw, nout;
  conv_dims(c, &nin, &nw, &nout);
  float *in = hnew(nin), *w = hnew(nw), *b = hnew(c->Co), *ref = hnew(nout), *absref = hnew(nout), *got = hnew(nout);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, c->Co, -1, 1);
  ref_conv_s_forward(ref, in, w, b, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, conv_st(c), NULL);
  float *ain = habs(in, nin), *aw = habs(w, nw), *ab = habs(b, c->Co);
  ref_conv_s_forward(absref, ain, aw, ab, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, conv_st(c), NULL);
  size_t ns = conv_scratch(c);
  float *d_in = dnew(in, nin), *d_w = dnew(w, nw), *d_b = dnew(b, c->Co), *d_out = cuda_alloc_floats(nout);
  float *d_s = cuda_alloc_floats(ns);
  if (c->st) cuda_conv_s_forward(d_out, d_in, d_w, d_b, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, c->st, d_s);
  else cuda_conv_forward(d_out, d_in, d_w, d_b, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, d_s);
  dget(got, d_out, nout);
  printf("  # conv%s fwd B%d Ci%d %dx%d Co%d k%d pad%d st%d\n", c->st ? "_s" : "", c->B, c->Ci, c->H, c->W, c->Co,
         c->k, c->pad, conv_st(c));
  EXPECT_DOT(got, ref, absref, nout, (double)c->Ci * c->k * c->k + 1, "conv forward");
  cuda_free(d_in); cuda_free(d_w); cuda_free(d_b); cuda_free(d_out); cuda_free(d_s);
  free(in); free(w); free(b); free(ref); free(absref); free(got); free(ain); free(aw); free(ab);
}

/* with_din: din requested (pre-filled with NaN on the device, so a skipped element shows). */
static void check_conv_backward(const conv_case *c, int with_din) {
  size_t nin, nw, nout;
  conv_dims(c, &nin, &nw, &nout);
  int Ho = conv_ho(c), Wo = conv_wo(c);
  float *in = hnew(nin), *w = hnew(nw), *dout = hnew(nout);
  float *dw0 = hnew(nw), *db0 = hnew(c->Co); /* non-zero starting grads: the layer must accumulate */
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(dout, nout, -1, 1); fill(dw0, nw, -1, 1); fill(db0, c->Co, -1, 1);
  float *rdin = hnew(nin), *rdw = hnew(nw), *rdb = hnew(c->Co);
  memcpy(rdw, dw0, nw * sizeof(float)); memcpy(rdb, db0, c->Co * sizeof(float));
  ref_conv_s_backward(with_din ? rdin : NULL, rdw, rdb, dout, in, w, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad,
                      conv_st(c), NULL);
  float *ain = habs(in, nin), *aw = habs(w, nw), *adout = habs(dout, nout);
  float *adin = hnew(nin), *adw = habs(dw0, nw), *adb = habs(db0, c->Co);
  ref_conv_s_backward(adin, adw, adb, adout, ain, aw, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, conv_st(c), NULL);

  float *nan = hnew(nin);
  for (size_t i = 0; i < nin; i++) nan[i] = NAN;
  size_t ns = conv_scratch(c);
  float *d_in = dnew(in, nin), *d_w = dnew(w, nw), *d_dout = dnew(dout, nout), *d_din = dnew(nan, nin);
  float *d_dw = dnew(dw0, nw), *d_db = dnew(db0, c->Co), *d_s = cuda_alloc_floats(ns);
  if (c->st)
    cuda_conv_s_backward(with_din ? d_din : NULL, d_dw, d_db, d_dout, d_in, d_w, c->B, c->Ci, c->H, c->W, c->Co, c->k,
                         c->pad, c->st, d_s);
  else
    cuda_conv_backward(with_din ? d_din : NULL, d_dw, d_db, d_dout, d_in, d_w, c->B, c->Ci, c->H, c->W, c->Co,
                       c->k, c->pad, d_s);
  float *gdin = hnew(nin), *gdw = hnew(nw), *gdb = hnew(c->Co);
  dget(gdin, d_din, nin); dget(gdw, d_dw, nw); dget(gdb, d_db, c->Co);
  printf("  # conv%s bwd B%d Ci%d %dx%d Co%d k%d pad%d st%d din=%s\n", c->st ? "_s" : "", c->B, c->Ci, c->H, c->W,
         c->Co, c->k, c->pad, conv_st(c), with_din ? "yes" : "NULL");
  /* dw: B*Ho*Wo products, + the old value, + one partial sum per batch chunk (<= B) */
  EXPECT_DOT(gdw, rdw, adw, nw, (double)c->B * Ho * Wo + c->B + 1, "conv dw");
  /* db: one double sum rounded to float, then += the old value */
  EXPECT_DOT(gdb, rdb, adb, c->Co, 2, "conv db");
  if (with_din) EXPECT_DOT(gdin, rdin, adin, nin, (double)c->Co + c->k * c->k, "conv din");
  else EXPECT_MSG(mismatches(gdin, nan, nin) == 0, "din == NULL but the device din buffer was written");
  cuda_free(d_in); cuda_free(d_w); cuda_free(d_dout); cuda_free(d_din); cuda_free(d_dw); cuda_free(d_db);
  cuda_free(d_s);
  free(in); free(w); free(dout); free(dw0); free(db0); free(rdin); free(rdw); free(rdb); free(ain); free(aw);
  free(adout); free(adin); free(adw); free(adb); free(nan); free(gdin); free(gdw); free(gdb);
}

/* The convolution implementations this build has (cuda_conv_set_impl): im2col always, cuDNN and
 * auto (per shape the faster of the two) where built with cuDNN. Each conv test runs on every one;
 * the default is restored after. */
#define NIMPL 3
static const char *const conv_impls[NIMPL] = {"im2col", "cudnn", "auto"};
static int use_impl(int i) {
  if (cuda_conv_set_impl(conv_impls[i]) != 0) return 0;
  printf("  # conv implementation: %s\n", conv_impls[i]);
  return 1;
}
static const char *g_default_impl;

static void test_conv_forward(void) {
  NEED_GPU();
  for (int m = 0; m < NIMPL; m++) {
    if (!use_impl(m)) continue;
    for (size_t i = 0; i < NCASES(conv_cases); i++) check_conv_forward(&conv_cases[i]);
  }
  cuda_conv_set_impl(g_default_impl);
}

static void test_conv_backward(void) {
  NEED_GPU();
  for (int m = 0; m < NIMPL; m++) {
    if (!use_impl(m)) continue;
    for (size_t i = 0; i < NCASES(conv_cases); i++) {
      check_conv_backward(&conv_cases[i], 1);
      check_conv_backward(&conv_cases[i], 0);
    }
  }
  cuda_conv_set_impl(g_default_impl);
}

/* The strided conv (cuda_conv_s_*; issue 51) on every implementation against ref_conv_s_*: strides 2-4,
 * sizes whose (H + 2 pad - k) is not a multiple of the stride (the last rows or columns of the input
 * are never read: their din is exactly 0), a window smaller than the stride (gaps: din 0 between
 * windows), 1x1 stride 2 (ResNet's projection shortcut), and stride 1 through the same entry. Then
 * the stems of the papers' ImageNet nets, where the sums are long: AlexNet's conv1 (11x11 stride 4
 * pad 2) and ResNet's 7x7 stride 2 pad 3 (emulator: a batch of 1 on a 67 x 67 and a 32 x 32 crop, as
 * test_conv_realistic shrinks its case; a GPU: 16 full-size images). */
static const conv_case conv_s_cases[] = {
  {3, 3, 7, 5, 4, 3, 1, 2},   /* same padding, stride 2, non-square */
  {2, 2, 9, 8, 3, 3, 0, 2},   /* valid; (8 - 3) = 5 is odd: the last column is never read */
  {2, 1, 10, 11, 2, 2, 0, 3}, /* window 2 < stride 3: gaps between windows */
  {2, 4, 8, 8, 5, 1, 0, 2},   /* 1x1 stride 2 */
  {1, 2, 12, 9, 3, 5, 2, 4},  /* k 5 stride 4 */
  {3, 3, 7, 5, 4, 3, 1, 1},   /* stride 1 through conv_s */
};
static void test_conv_strided(void) {
  NEED_GPU();
#ifdef PDL_CUDA_EMU
  const conv_case big[] = {{1, 3, 67, 67, 8, 11, 2, 4}, {1, 3, 32, 32, 8, 7, 3, 2}};
#else
  const conv_case big[] = {{16, 3, 227, 227, 96, 11, 2, 4}, {16, 3, 224, 224, 64, 7, 3, 2}};
#endif
  for (int m = 0; m < NIMPL; m++) {
    if (!use_impl(m)) continue;
    for (size_t i = 0; i < NCASES(conv_s_cases); i++) {
      check_conv_forward(&conv_s_cases[i]);
      check_conv_backward(&conv_s_cases[i], 1);
      check_conv_backward(&conv_s_cases[i], 0);
    }
    for (size_t i = 0; i < NCASES(big); i++) {
      check_conv_forward(&big[i]);
      check_conv_backward(&big[i], 1);
    }
  }
  char buf[4096];
  printf("  # cuDNN algorithms: %s\n", cuda_conv_algos(buf, sizeof buf));
  cuda_conv_set_impl(g_default_impl);
}

/* At a size where the sums are long: ppasgd-cifar's 28x28 32->32 layer (each dw element sums
 * B x 784 products; B = 32 on a GPU, 1 under the emulator, whose direct convolutions are slow), with
 * inputs whose low mantissa bits matter: a TF32 product (10-bit mantissa) misses the FP32 bound by
 * orders of magnitude, so this is also the tripwire for TF32 slipping in (cuDNN's default math
 * type allows it on Ampere and later; cuda_layers.cu sets CUDNN_FMA_MATH). The cuDNN algorithms
 * chosen are printed. */
static void test_conv_realistic(void) {
  NEED_GPU();
#ifdef PDL_CUDA_EMU
  const conv_case c = {1, 32, 28, 28, 32, 3, 1, 0};
#else
  const conv_case c = {32, 32, 28, 28, 32, 3, 1, 0};
#endif
  for (int m = 0; m < NIMPL; m++) {
    if (!use_impl(m)) continue;
    check_conv_forward(&c);
    check_conv_backward(&c, 1);
  }
  char buf[2048];
  printf("  # cuDNN algorithms: %s\n", cuda_conv_algos(buf, sizeof buf));
  cuda_conv_set_impl(g_default_impl);
}

/* The bias gradient of a layer with many (b, p) per channel is summed in S > 1 fixed ranges per
 * channel (k_channel_partial, k_channel_finish): 16 x 784 per channel (S = 3, ranges that split an
 * image: 12544 / 3 is not whole) and 256 x 49 (S = 3; a block's stride of 256 elements wraps an
 * image 5 times with 11 left, the index stepping's carry). Checked by check_conv_backward's db bound
 * (one double sum rounded once) like every other case; im2col only (the bias path is the same). */
static void test_conv_bias_split(void) {
  NEED_GPU();
  cuda_conv_set_impl("im2col");
  const conv_case cs[] = {{16, 1, 28, 28, 4, 3, 1, 0}, {256, 1, 7, 7, 2, 3, 1, 0}};
  for (size_t i = 0; i < NCASES(cs); i++) {
    check_conv_backward(&cs[i], 0);
    check_conv_backward(&cs[i], 1);
  }
  cuda_conv_set_impl(g_default_impl);
}

/* The fused conv + leaky ReLU (cuda_conv_act_forward/backward, issue 35 D) against the unfused
 * sequence on the same device and convolution path: conv, act in place; act backward in place, conv
 * backward. Out, din, dw and db must be the same bits, and dout must hold what the unfused sequence
 * leaves there (the gradient at the activation's input). On each path (im2col, cuDNN), with and
 * without din, on a small case (one block per channel for the bias gradient) and on one whose bias
 * gradient takes the split (16 x 784 per channel), with slope 0.01 and 0 (ReLU). */
static void conv_act_case(const conv_case *c, int with_din, float slope) {
  const int Ho = c->H + 2 * c->pad - c->k + 1, Wo = c->W + 2 * c->pad - c->k + 1;
  const size_t nin = (size_t)c->B * c->Ci * c->H * c->W, nw = (size_t)c->Co * c->Ci * c->k * c->k;
  const size_t nout = (size_t)c->B * c->Co * Ho * Wo;
  const size_t nsc = cuda_conv_scratch_floats(c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, 1);
  float *x = hnew(nin), *w = hnew(nw), *b = hnew(c->Co), *g = hnew(nout), *dw0 = hnew(nw), *db0 = hnew(c->Co);
  fill(x, nin, -1, 1); fill(w, nw, -0.5f, 0.5f); fill(b, c->Co, -0.2f, 0.2f); fill(g, nout, -1, 1);
  fill(dw0, nw, -0.1f, 0.1f); fill(db0, c->Co, -0.1f, 0.1f);   /* the gradients accumulate (+=) */
  float *dx = dnew(x, nin), *dwt = dnew(w, nw), *dbias = dnew(b, c->Co), *sc = cuda_alloc_floats(nsc);
  float *h[2][5];   /* per side: out, dout after, din, dw, db */
  for (int side = 0; side < 2; side++) {
    float *out = cuda_alloc_floats(nout), *dout = dnew(g, nout), *din = with_din ? cuda_alloc_floats(nin) : NULL;
    float *dw = dnew(dw0, nw), *db = dnew(db0, c->Co);
    if (side == 0) {
      cuda_conv_forward(out, dx, dwt, dbias, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, sc);
      cuda_act_forward(out, out, nout, slope);
      cuda_act_backward(dout, dout, out, nout, slope);
      cuda_conv_backward(din, dw, db, dout, dx, dwt, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, sc);
    } else {
      cuda_conv_act_forward(out, dx, dwt, dbias, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, slope, sc, NULL);
      cuda_conv_act_backward(din, dw, db, dout, out, dx, dwt, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, slope, sc,
                             NULL);
    }
    h[side][0] = hnew(nout); dget(h[side][0], out, nout);
    h[side][1] = hnew(nout); dget(h[side][1], dout, nout);
    h[side][2] = hnew(nin); if (with_din) dget(h[side][2], din, nin);
    h[side][3] = hnew(nw); dget(h[side][3], dw, nw);
    h[side][4] = hnew(c->Co); dget(h[side][4], db, c->Co);
    cuda_free(out); cuda_free(dout); cuda_free(din); cuda_free(dw); cuda_free(db);
  }
  char what[160];
  static const char *const names[] = {"out", "dout (the pre-activation gradient)", "din", "dw", "db"};
  const size_t ns[] = {nout, nout, nin, nw, (size_t)c->Co};
  for (int q = 0; q < 5; q++) {
    snprintf(what, sizeof what, "conv %s, %dx%dx%dx%d->%d k%d, din %d, slope %g: fused %s", cuda_conv_impl(), c->B,
             c->Ci, c->H, c->W, c->Co, c->k, with_din, slope, names[q]);
    EXPECT_SAME(h[1][q], h[0][q], ns[q], what);
  }
  for (int side = 0; side < 2; side++) for (int q = 0; q < 5; q++) free(h[side][q]);
  cuda_free(dx); cuda_free(dwt); cuda_free(dbias); cuda_free(sc);
  free(x); free(w); free(b); free(g); free(dw0); free(db0);
}
static void test_conv_act_fused(void) {
  NEED_GPU();
  static const char *const impls[] = {"im2col", "cudnn"};
  const conv_case cs[] = {{3, 3, 7, 5, 4, 3, 1, 0}, {16, 1, 28, 28, 4, 3, 1, 0}};
  for (int m = 0; m < 2; m++) {
    if (cuda_conv_set_impl(impls[m]) != 0) continue;   /* no cuDNN in this build */
    for (size_t i = 0; i < NCASES(cs); i++) {
      conv_act_case(&cs[i], 1, 0.01f);
      conv_act_case(&cs[i], 0, 0.0f);
    }
  }
  cuda_conv_set_impl(g_default_impl);
}

/* The fused conv + act + 2x2 max-pool (issue 35 D) against the GPU's own unfused sequence
 * (cuda_conv_act_forward + cuda_maxpool_forward; cuda_maxpool_backward + cuda_conv_act_backward):
 * pooled out, din, dw and db bit for bit, on both convolution paths, odd output sizes in floor and
 * ceil mode, with and without din, and a chunked im2col (a small scratch cap). */
static void conv_act_pool_case(const conv_case *c, int ceil_mode, int with_din, float slope) {
  const int Ho = c->H + 2 * c->pad - 2, Wo = c->W + 2 * c->pad - 2;
  const int Hp = ceil_mode ? (Ho + 1) / 2 : Ho / 2, Wp = ceil_mode ? (Wo + 1) / 2 : Wo / 2;
  const size_t nin = (size_t)c->B * c->Ci * c->H * c->W, nw = (size_t)c->Co * c->Ci * 9, nact = (size_t)c->B * c->Co * Ho * Wo;
  const size_t np = (size_t)c->B * c->Co * Hp * Wp;
  const size_t nsc = cuda_conv_scratch_floats(c->B, c->Ci, c->H, c->W, c->Co, 3, c->pad, 1);
  float *x = hnew(nin), *w = hnew(nw), *b = hnew(c->Co), *g = hnew(np), *dw0 = hnew(nw), *db0 = hnew(c->Co);
  fill(x, nin, -1, 1); fill(w, nw, -0.5f, 0.5f); fill(b, c->Co, -0.2f, 0.2f); fill(g, np, -1, 1);
  fill(dw0, nw, -0.1f, 0.1f); fill(db0, c->Co, -0.1f, 0.1f);
  for (size_t i = 0; i < nin; i += 7) x[i] = x[i + 1 < nin ? i + 1 : i];   /* ties in some windows */
  float *dx = dnew(x, nin), *dwt = dnew(w, nw), *dbias = dnew(b, c->Co), *sc = cuda_alloc_floats(nsc);
  uint8_t *idx = (uint8_t *)cuda_alloc_floats((np + 3) / 4 / 4 + 1);
  float *h[2][4];   /* per side: pooled out, din, dw, db */
  for (int side = 0; side < 2; side++) {
    float *out = cuda_alloc_floats(np), *dout = dnew(g, np), *din = with_din ? cuda_alloc_floats(nin) : NULL;
    float *dw = dnew(dw0, nw), *db = dnew(db0, c->Co);
    if (side == 0) {
      float *act = cuda_alloc_floats(nact), *dact = cuda_alloc_floats(nact);
      cuda_conv_act_forward(act, dx, dwt, dbias, c->B, c->Ci, c->H, c->W, c->Co, 3, c->pad, slope, sc, NULL);
      cuda_maxpool_forward(out, act, c->B, c->Co, Ho, Wo, 2, ceil_mode);
      cuda_maxpool_backward(dact, dout, act, out, c->B, c->Co, Ho, Wo, 2, ceil_mode);
      cuda_conv_act_backward(din, dw, db, dact, act, dx, dwt, c->B, c->Ci, c->H, c->W, c->Co, 3, c->pad, slope, sc, NULL);
      cuda_free(act); cuda_free(dact);
    } else {
      EXPECT(cuda_conv_act_pool_fusable(c->B, c->Ci, c->H, c->W, c->Co, 3, c->pad, 2));
      cuda_conv_act_pool_forward(out, idx, dx, dwt, dbias, c->B, c->Ci, c->H, c->W, c->Co, c->pad, slope, ceil_mode, sc, NULL);
      cuda_conv_act_pool_backward(din, dw, db, dout, out, idx, dx, dwt, c->B, c->Ci, c->H, c->W, c->Co, c->pad, slope,
                                  ceil_mode, sc, NULL);
    }
    h[side][0] = hnew(np); dget(h[side][0], out, np);
    h[side][1] = hnew(nin); if (with_din) dget(h[side][1], din, nin);
    h[side][2] = hnew(nw); dget(h[side][2], dw, nw);
    h[side][3] = hnew(c->Co); dget(h[side][3], db, c->Co);
    cuda_free(out); cuda_free(dout); cuda_free(din); cuda_free(dw); cuda_free(db);
  }
  char what[160];
  static const char *const names[] = {"pooled out", "din", "dw", "db"};
  const size_t ns[] = {np, nin, nw, (size_t)c->Co};
  for (int q = 0; q < 4; q++) {
    snprintf(what, sizeof what, "conv+act+pool %s, %dx%dx%dx%d->%d pad %d ceil %d, din %d: fused %s", cuda_conv_impl(),
             c->B, c->Ci, c->H, c->W, c->Co, c->pad, ceil_mode, with_din, names[q]);
    EXPECT_SAME(h[1][q], h[0][q], ns[q], what);
  }
  for (int side = 0; side < 2; side++) for (int q = 0; q < 4; q++) free(h[side][q]);
  cuda_free(dx); cuda_free(dwt); cuda_free(dbias); cuda_free(sc); cuda_free(idx);
  free(x); free(w); free(b); free(g); free(dw0); free(db0);
}
static void test_conv_act_pool_fused(void) {
  NEED_GPU();
  static const char *const impls[] = {"im2col", "cudnn"};
  const conv_case cs[] = {{3, 2, 7, 6, 5, 3, 1, 0}, {2, 3, 8, 9, 4, 3, 0, 0}, {16, 1, 28, 28, 4, 3, 1, 0}};
  for (int m = 0; m < 2; m++) {
    if (cuda_conv_set_impl(impls[m]) != 0) continue;   /* no cuDNN in this build */
    for (size_t i = 0; i < NCASES(cs); i++)
      for (int ceil_mode = 0; ceil_mode < 2; ceil_mode++) conv_act_pool_case(&cs[i], ceil_mode, ceil_mode, 0.01f);
  }
  cuda_conv_set_impl("im2col");   /* chunks of 2 images on B = 5 */
  const size_t old = cuda_conv_get_scratch_cap();
  const conv_case ch = {5, 3, 6, 7, 4, 3, 1, 0};
  cuda_conv_set_scratch_cap(2 * (size_t)(27 + 4) * 6 * 7 + 10);
  conv_act_pool_case(&ch, 1, 1, 0.0f);
  cuda_conv_set_scratch_cap(old);
  cuda_conv_set_impl(g_default_impl);
}

/* A small scratch cap forces 2 images per chunk on B = 5 (chunks 2, 2, 1): the im2col path's. */
static void test_conv_chunked(void) {
  NEED_GPU();
  cuda_conv_set_impl("im2col");
  const conv_case c = {5, 3, 6, 7, 4, 3, 1, 0};
  size_t old = cuda_conv_get_scratch_cap();
  /* (k = 3: the scratch also holds the fused pool's full activation, B x Co x Ho x Wo) */
  const size_t act = (size_t)c.B * c.Co * (c.H + 2 * c.pad - 2) * (c.W + 2 * c.pad - 2);
  size_t full = cuda_conv_scratch_floats(c.B, c.Ci, c.H, c.W, c.Co, c.k, c.pad, 1);
  size_t per_image = (full - act) / c.B;
  cuda_conv_set_scratch_cap(2 * per_image + per_image / 2);
  size_t chunked = cuda_conv_scratch_floats(c.B, c.Ci, c.H, c.W, c.Co, c.k, c.pad, 1);
  EXPECT_MSG(chunked == 2 * per_image + act, "scratch %zu floats, expected 2 images x %zu + %zu", chunked, per_image, act);
  check_conv_forward(&c);
  check_conv_backward(&c, 1);
  cuda_conv_set_scratch_cap(1); /* below one image: still one image per chunk */
  EXPECT(cuda_conv_scratch_floats(c.B, c.Ci, c.H, c.W, c.Co, c.k, c.pad, 1) == per_image + act);
  check_conv_forward(&c);
  check_conv_backward(&c, 1);
  cuda_conv_set_scratch_cap(old);
  cuda_conv_set_impl(g_default_impl);
}

/* cuda_conv_set_impl: the names it takes, and cuda_conv_impl's answer */
static void test_conv_impl_switch(void) {
  NEED_GPU();
  EXPECT(cuda_conv_set_impl("bogus") == -1);
  EXPECT(strcmp(cuda_conv_impl(), g_default_impl) == 0);
  EXPECT(cuda_conv_set_impl("im2col") == 0 && strcmp(cuda_conv_impl(), "im2col") == 0);
#ifdef PDL_HAVE_CUDNN
  EXPECT(cuda_conv_set_impl("cudnn") == 0 && strcmp(cuda_conv_impl(), "cudnn") == 0);
  EXPECT(cuda_conv_set_impl("auto") == 0 && strcmp(cuda_conv_impl(), "auto") == 0);
  EXPECT(strcmp(g_default_impl, "auto") == 0);
#else
  EXPECT(cuda_conv_set_impl("cudnn") == -1);
  EXPECT(cuda_conv_set_impl("auto") == -1);
#endif
  cuda_conv_set_impl(g_default_impl);
}

/* ---- fc ------------------------------------------------------------------------------------ */
static void check_fc(int B, int M, int N) {
  size_t nin = (size_t)B * M, nw = (size_t)N * M, nout = (size_t)B * N;
  float *in = hnew(nin), *w = hnew(nw), *b = hnew(N), *dout = hnew(nout), *dw0 = hnew(nw), *db0 = hnew(N);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, N, -1, 1); fill(dout, nout, -1, 1);
  fill(dw0, nw, -1, 1); fill(db0, N, -1, 1);
  float *ain = habs(in, nin), *aw = habs(w, nw), *ab = habs(b, N), *adout = habs(dout, nout);
  float *rout = hnew(nout), *aout = hnew(nout), *rdin = hnew(nin), *adin = hnew(nin);
  float *rdw = hnew(nw), *adw = habs(dw0, nw), *rdb = hnew(N), *adb = habs(db0, N);
  memcpy(rdw, dw0, nw * sizeof(float)); memcpy(rdb, db0, N * sizeof(float));
  ref_fc_forward(rout, in, w, b, B, M, N);
  ref_fc_forward(aout, ain, aw, ab, B, M, N);
  ref_fc_backward(rdin, rdw, rdb, dout, in, w, B, M, N);
  ref_fc_backward(adin, adw, adb, adout, ain, aw, B, M, N);

  float *d_in = dnew(in, nin), *d_w = dnew(w, nw), *d_b = dnew(b, N), *d_out = cuda_alloc_floats(nout);
  float *d_dout = dnew(dout, nout), *d_dw = dnew(dw0, nw), *d_db = dnew(db0, N), *d_din = cuda_alloc_floats(nin);
  cuda_fc_forward(d_out, d_in, d_w, d_b, B, M, N);
  cuda_fc_backward(d_din, d_dw, d_db, d_dout, d_in, d_w, B, M, N);
  float *gout = hnew(nout), *gdin = hnew(nin), *gdw = hnew(nw), *gdb = hnew(N);
  dget(gout, d_out, nout); dget(gdin, d_din, nin); dget(gdw, d_dw, nw); dget(gdb, d_db, N);
  printf("  # fc B%d M%d N%d\n", B, M, N);
  EXPECT_DOT(gout, rout, aout, nout, M + 1, "fc forward");
  EXPECT_DOT(gdw, rdw, adw, nw, B + 1, "fc dw");
  EXPECT_DOT(gdb, rdb, adb, N, 2, "fc db");
  EXPECT_DOT(gdin, rdin, adin, nin, N, "fc din");
  /* din == NULL: grads accumulate a second time, nothing else is touched */
  cuda_fc_backward(NULL, d_dw, d_db, d_dout, d_in, d_w, B, M, N);
  ref_fc_backward(NULL, rdw, rdb, dout, in, w, B, M, N);
  ref_fc_backward(NULL, adw, adb, adout, ain, aw, B, M, N);
  dget(gdw, d_dw, nw); dget(gdb, d_db, N);
  EXPECT_DOT(gdw, rdw, adw, nw, 2 * (B + 1), "fc dw accumulated twice");
  EXPECT_DOT(gdb, rdb, adb, N, 4, "fc db accumulated twice");
  cuda_free(d_in); cuda_free(d_w); cuda_free(d_b); cuda_free(d_out); cuda_free(d_dout); cuda_free(d_dw);
  cuda_free(d_db); cuda_free(d_din);
  free(in); free(w); free(b); free(dout); free(dw0); free(db0); free(ain); free(aw); free(ab); free(adout);
  free(rout); free(aout); free(rdin); free(adin); free(rdw); free(adw); free(rdb); free(adb);
  free(gout); free(gdin); free(gdw); free(gdb);
}

static void test_fc(void) {
  NEED_GPU();
  check_fc(3, 7, 5);
  check_fc(1, 1, 1);
  check_fc(17, 33, 10);
  check_fc(5, 300, 129); /* long inner dimension, N past a warp multiple */
}

/* ---- maxpool ------------------------------------------------------------------------------- */
/* levels > 0 quantises inputs to that many values so windows hold ties (first maximum must win). */
static void check_maxpool(int B, int C, int H, int W, int s, int ceil_mode, int levels) {
  int Ho = ceil_mode ? (H + s - 1) / s : H / s, Wo = ceil_mode ? (W + s - 1) / s : W / s;
  size_t nin = (size_t)B * C * H * W, nout = (size_t)B * C * Ho * Wo;
  float *in = hnew(nin), *dout = hnew(nout), *rout = hnew(nout), *rdin = hnew(nin), *gout = hnew(nout);
  float *gdin = hnew(nin);
  fill(in, nin, -1, 1); fill(dout, nout, -1, 1);
  if (levels > 0)
    for (size_t i = 0; i < nin; i++) in[i] = floorf((in[i] + 1) * 0.5f * levels);
  ref_maxpool_forward(rout, in, B, C, H, W, s, ceil_mode);
  ref_maxpool_backward(rdin, dout, in, rout, B, C, H, W, s, ceil_mode);
  float *d_in = dnew(in, nin), *d_dout = dnew(dout, nout), *d_out = cuda_alloc_floats(nout);
  float *d_din = cuda_alloc_floats(nin);
  cuda_maxpool_forward(d_out, d_in, B, C, H, W, s, ceil_mode);
  cuda_maxpool_backward(d_din, d_dout, d_in, d_out, B, C, H, W, s, ceil_mode);
  dget(gout, d_out, nout); dget(gdin, d_din, nin);
  printf("  # maxpool B%d C%d %dx%d s%d %s levels%d\n", B, C, H, W, s, ceil_mode ? "ceil" : "floor", levels);
  EXPECT_SAME(gout, rout, nout, "maxpool forward");
  EXPECT_SAME(gdin, rdin, nin, "maxpool backward");
  cuda_free(d_in); cuda_free(d_dout); cuda_free(d_out); cuda_free(d_din);
  free(in); free(dout); free(rout); free(rdin); free(gout); free(gdin);
}

static void test_maxpool(void) {
  NEED_GPU();
  for (int ceil_mode = 0; ceil_mode <= 1; ceil_mode++) {
    check_maxpool(2, 3, 7, 9, 2, ceil_mode, 0);  /* odd sides: floor drops, ceil clips */
    check_maxpool(3, 2, 10, 8, 3, ceil_mode, 0);
    check_maxpool(2, 2, 7, 7, 2, ceil_mode, 3);  /* heavy ties */
    check_maxpool(1, 1, 5, 7, 5, ceil_mode, 0);  /* window as tall as the image */
    check_maxpool(2, 3, 6, 6, 1, ceil_mode, 2);  /* s = 1: identity */
  }
}

/* ---- element-wise -------------------------------------------------------------------------- */
static void check_act(size_t n, float slope) {
  float *in = hnew(n), *dout = hnew(n), *rout = hnew(n), *rdin = hnew(n), *gout = hnew(n), *gdin = hnew(n);
  fill(in, n, -2, 2); fill(dout, n, -1, 1);
  if (n > 3) { in[0] = 0.0f; in[1] = -0.0f; in[2] = 1e-30f; } /* sign edge cases */
  ref_act_forward(rout, in, n, slope);
  ref_act_backward(rdin, dout, rout, n, slope);
  float *d_in = dnew(in, n), *d_dout = dnew(dout, n), *d_out = cuda_alloc_floats(n), *d_din = cuda_alloc_floats(n);
  cuda_act_forward(d_out, d_in, n, slope);
  cuda_act_backward(d_din, d_dout, d_out, n, slope);
  dget(gout, d_out, n); dget(gdin, d_din, n);
  EXPECT_SAME(gout, rout, n, "act forward");
  EXPECT_SAME(gdin, rdin, n, "act backward");
  cuda_act_forward(d_in, d_in, n, slope); /* in place */
  dget(gout, d_in, n);
  EXPECT_SAME(gout, rout, n, "act forward in place");
  cuda_free(d_in); cuda_free(d_dout); cuda_free(d_out); cuda_free(d_din);
  free(in); free(dout); free(rout); free(rdin); free(gout); free(gdin);
}

static void test_act(void) {
  NEED_GPU();
  check_act(1, 0.01f);
  check_act(1001, 0.01f);
  check_act(1001, 0.0f);
  check_act(65537, 0.2f);
}

/* More elements than the capped grid has threads (65535 x 256): the grid-stride loop must cover
 * the tail. In place, two host buffers only (the tensor is 67 MB). */
static void test_act_large(void) {
  NEED_GPU();
  const size_t n = (size_t)65535 * 256 + 1001;
  const float slope = 0.01f;
  float *in = hnew(n), *got = hnew(n);
  fill(in, n, -2, 2);
  float *d = dnew(in, n);
  cuda_act_forward(d, d, n, slope);
  dget(got, d, n);
  ref_act_forward(in, in, n, slope);
  EXPECT_SAME(got, in, n, "act forward, n beyond one grid");
  cuda_free(d);
  free(in); free(got);
}

static void check_dropout(size_t n) {
  float *in = hnew(n), *mask = hnew(n), *dout = hnew(n), *r = hnew(n), *g = hnew(n);
  fill(in, n, -1, 1); fill(dout, n, -1, 1);
  for (size_t i = 0; i < n; i++) mask[i] = rng_uniform(&g_rng) < 0.3 ? 0.0f : 1.0f / 0.7f;
  float *d_in = dnew(in, n), *d_mask = dnew(mask, n), *d_dout = dnew(dout, n), *d_x = cuda_alloc_floats(n);
  cuda_dropout_forward(d_x, d_in, d_mask, n);
  dget(g, d_x, n);
  ref_dropout_forward(r, in, mask, n);
  EXPECT_SAME(g, r, n, "dropout forward");
  cuda_dropout_backward(d_x, d_dout, d_mask, n);
  dget(g, d_x, n);
  ref_dropout_backward(r, dout, mask, n);
  EXPECT_SAME(g, r, n, "dropout backward");
  cuda_free(d_in); cuda_free(d_mask); cuda_free(d_dout); cuda_free(d_x);
  free(in); free(mask); free(dout); free(r); free(g);
}

static void test_dropout(void) {
  NEED_GPU();
  check_dropout(1);
  check_dropout(4099);
}

/* ---- softmax + cross-entropy --------------------------------------------------------------- */
static void check_softmax(int B, int N, float spread) {
  size_t n = (size_t)B * N;
  float *logits = hnew(n), *rprobs = hnew(n), *gprobs = hnew(n), *rd = hnew(n), *gd = hnew(n);
  int *labels = malloc((size_t)B * sizeof(int));
  if (!labels) exit(1);
  fill(logits, n, -spread, spread);
  for (int i = 0; i < B; i++) labels[i] = (int)rng_below(&g_rng, (uint64_t)N);
  double rloss = ref_softmax_xent_forward(rprobs, logits, labels, B, N);
  float *d_logits = dnew(logits, n), *d_probs = cuda_alloc_floats(n), *d_d = cuda_alloc_floats(n);
  int *d_labels = cuda_alloc_ints((size_t)B);
  cuda_upload_ints(d_labels, labels, (size_t)B);
  double gloss = cuda_softmax_xent_forward(d_probs, d_logits, d_labels, B, N);
  dget(gprobs, d_probs, n);
  printf("  # softmax B%d N%d spread %g: loss gpu %.12g ref %.12g\n", B, N, spread, gloss, rloss);
  EXPECT_NEAR(max_rel_err(gprobs, rprobs, n, FLT_MIN), 0.0, 2 * FLT_EPSILON,
              "probs computed in double on both sides; device vs host exp differ by ~1 double ulp, so the "
              "float results differ by at most one rounding step");
  EXPECT_NEAR(gloss, rloss, 1e-12 * (fabs(rloss) + 1),
              "double row losses, summed in a different order (tree vs sequential)");
  /* backward on identical probs: the same double arithmetic, so bitwise equal */
  const float scale = 1.0f / (float)B;
  cuda_upload(d_probs, rprobs, n);
  cuda_softmax_xent_backward(d_d, d_probs, d_labels, B, N, scale);
  ref_softmax_xent_backward(rd, rprobs, labels, B, N, scale);
  dget(gd, d_d, n);
  EXPECT_SAME(gd, rd, n, "softmax_xent backward");
  cuda_free(d_logits); cuda_free(d_probs); cuda_free(d_d); cuda_free(d_labels);
  free(logits); free(rprobs); free(gprobs); free(rd); free(gd); free(labels);
}

static void test_softmax_xent(void) {
  NEED_GPU();
  check_softmax(5, 7, 3);
  check_softmax(37, 10, 20);  /* B not a multiple of the 8 rows per block; large logits */
  check_softmax(3, 1000, 5);  /* rows wider than a warp */
  check_softmax(9, 1, 1);     /* one class: p = 1, loss 0 */
}

/* ---- several host threads: each gets its own stream + cuBLAS handle ------------------------- */
typedef struct {
  conv_case c;
  const float *in, *w, *b, *dout; /* host inputs */
  float *out, *dw, *db, *din;     /* host results (dw, db start at 0) */
} thread_job;

static void *thread_main(void *arg) {
  thread_job *j = arg;
  const conv_case *c = &j->c;
  size_t nin, nw, nout;
  conv_dims(c, &nin, &nw, &nout);
  cuda_set_device(0);
  size_t ns = cuda_conv_scratch_floats(c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, 1);
  float *d_in = dnew(j->in, nin), *d_w = dnew(j->w, nw), *d_b = dnew(j->b, c->Co), *d_dout = dnew(j->dout, nout);
  float *d_out = cuda_alloc_floats(nout), *d_din = cuda_alloc_floats(nin), *d_s = cuda_alloc_floats(ns);
  float *d_dw = cuda_alloc_floats(nw), *d_db = cuda_alloc_floats(c->Co);
  cuda_zero_floats(d_dw, nw);
  cuda_zero_floats(d_db, c->Co);
  for (int rep = 0; rep < 3; rep++) { /* several rounds so the two threads' work overlaps */
    cuda_conv_forward(d_out, d_in, d_w, d_b, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, d_s);
    cuda_conv_backward(d_din, d_dw, d_db, d_dout, d_in, d_w, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, d_s);
  }
  dget(j->out, d_out, nout); dget(j->din, d_din, nin); dget(j->dw, d_dw, nw); dget(j->db, d_db, c->Co);
  cuda_free(d_in); cuda_free(d_w); cuda_free(d_b); cuda_free(d_dout); cuda_free(d_out); cuda_free(d_din);
  cuda_free(d_s); cuda_free(d_dw); cuda_free(d_db);
  cuda_thread_release();
  return NULL;
}

static void test_threads(void) {
  NEED_GPU();
  enum { NT = 3 };
  const conv_case cases[NT] = {{4, 3, 9, 7, 5, 3, 1, 0}, {3, 2, 8, 8, 4, 5, 2, 0}, {6, 4, 5, 6, 3, 3, 0, 0}};
  thread_job jobs[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    const conv_case *c = &cases[t];
    size_t nin, nw, nout;
    conv_dims(c, &nin, &nw, &nout);
    float *in = hnew(nin), *w = hnew(nw), *b = hnew(c->Co), *dout = hnew(nout);
    fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, c->Co, -1, 1); fill(dout, nout, -1, 1);
    jobs[t] = (thread_job){*c, in, w, b, dout, hnew(nout), hnew(nw), hnew(c->Co), hnew(nin)};
  }
  for (int t = 0; t < NT; t++) EXPECT(pthread_create(&th[t], NULL, thread_main, &jobs[t]) == 0);
  for (int t = 0; t < NT; t++) EXPECT(pthread_join(th[t], NULL) == 0);
  for (int t = 0; t < NT; t++) {
    thread_job *j = &jobs[t];
    const conv_case *c = &j->c;
    size_t nin, nw, nout;
    conv_dims(c, &nin, &nw, &nout);
    int P = (c->H + 2 * c->pad - c->k + 1) * (c->W + 2 * c->pad - c->k + 1);
    float *rout = hnew(nout), *rdin = hnew(nin), *rdw = hnew(nw), *rdb = hnew(c->Co);
    float *aout = hnew(nout), *adin = hnew(nin), *adw = hnew(nw), *adb = hnew(c->Co);
    float *ain = habs(j->in, nin), *aw = habs(j->w, nw), *ab = habs(j->b, c->Co), *adout = habs(j->dout, nout);
    ref_conv_forward(rout, j->in, j->w, j->b, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, NULL);
    ref_conv_forward(aout, ain, aw, ab, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, NULL);
    for (int rep = 0; rep < 3; rep++) {
      ref_conv_backward(rdin, rdw, rdb, j->dout, j->in, j->w, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, NULL);
      ref_conv_backward(adin, adw, adb, adout, ain, aw, c->B, c->Ci, c->H, c->W, c->Co, c->k, c->pad, NULL);
    }
    printf("  # thread %d: conv B%d Ci%d %dx%d Co%d k%d pad%d, 3 rounds\n", t, c->B, c->Ci, c->H, c->W, c->Co,
           c->k, c->pad);
    EXPECT_DOT(j->out, rout, aout, nout, (double)c->Ci * c->k * c->k + 1, "threaded conv forward");
    EXPECT_DOT(j->din, rdin, adin, nin, (double)c->Co + c->k * c->k, "threaded conv din");
    EXPECT_DOT(j->dw, rdw, adw, nw, 3.0 * ((double)c->B * P + c->B + 1), "threaded conv dw, 3 accumulations");
    EXPECT_DOT(j->db, rdb, adb, c->Co, 6, "threaded conv db, 3 accumulations");
    free(rout); free(rdin); free(rdw); free(rdb); free(aout); free(adin); free(adw); free(adb);
    free(ain); free(aw); free(ab); free(adout);
    free((void *)j->in); free((void *)j->w); free((void *)j->b); free((void *)j->dout);
    free(j->out); free(j->dw); free(j->db); free(j->din);
  }
}

/* kernels_t's dense linear algebra for K-FAC on the device (issue 35 G): cuda_gemm in its four
 * transpose cases against a double oracle within the dot-product bound (K up to 1568 = 32 images of
 * 7 x 7 positions, a conv factor's inner dimension at batch 32), with beta 0 and 1 and row strides
 * wider than the rows; cuda_im2col_batch, cuda_copy2d (with a source stride of 0) and cuda_axpby
 * (strides, incx 0, a == 0 never reading a NaN in y) exactly. */
static void check_gemm(int ta, int tb, int M, int N, int K, float alpha, float beta) {
  const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 1;
  const size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
  float *a = hnew(na), *b = hnew(nb), *c = hnew(nc), *ref = hnew(nc), *absref = hnew(nc), *got = hnew(nc);
  fill(a, na, -1, 1); fill(b, nb, -1, 1); fill(c, nc, -1, 1);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double sum = 0, sabs = 0;
      for (int k = 0; k < K; k++) {
        const double x = ta ? a[(size_t)k * lda + i] : a[(size_t)i * lda + k], y = tb ? b[(size_t)j * ldb + k] : b[(size_t)k * ldb + j];
        sum += x * y; sabs += fabs(x * y);
      }
      const size_t o = (size_t)i * ldc + j;
      ref[o] = (float)(alpha * sum + beta * (double)c[o]);
      absref[o] = (float)(fabs(alpha) * sabs + fabs(beta * (double)c[o]));
    }
  for (int i = 0; i < M; i++) for (int j = N; j < ldc; j++) ref[(size_t)i * ldc + j] = absref[(size_t)i * ldc + j] = c[(size_t)i * ldc + j];
  float *da = dnew(a, na), *db = dnew(b, nb), *dc = dnew(c, nc);
  cuda_gemm(ta, tb, M, N, K, alpha, da, lda, db, ldb, beta, dc, ldc);
  dget(got, dc, nc);
  char what[96];
  snprintf(what, sizeof what, "gemm ta=%d tb=%d %dx%dx%d beta %g", ta, tb, M, N, K, beta);
  EXPECT_DOT(got, ref, absref, nc, K + 1, "gemm");
  for (int i = 0; i < M; i++)   /* the padding between rows untouched */
    for (int j = N; j < ldc; j++) EXPECT_MSG(got[(size_t)i * ldc + j] == c[(size_t)i * ldc + j], "%s: wrote outside C", what);
  cuda_free(da); cuda_free(db); cuda_free(dc);
  free(a); free(b); free(c); free(ref); free(absref); free(got);
}
static void test_dense_la(void) {
  NEED_GPU();
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) { check_gemm(ta, tb, 37, 29, 301, 0.5f, 0.0f); check_gemm(ta, tb, 33, 33, 1568, 1.0f / 32, 1.0f); }
  /* im2col of 3 images 2 x 6 x 5, k 3, pad 1: col [2*9][3*30] */
  const int B = 3, C = 2, H = 6, W = 5, k = 3, pad = 1, Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1, T = Ho * Wo;
  const size_t nin = (size_t)B * C * H * W, ncol = (size_t)C * k * k * B * T;
  float *in = hnew(nin), *col = hnew(ncol), *want = hnew(ncol);
  fill(in, nin, -1, 1);
  for (int c = 0; c < C; c++) for (int kh = 0; kh < k; kh++) for (int kw = 0; kw < k; kw++)
    for (int b = 0; b < B; b++) for (int ho = 0; ho < Ho; ho++) for (int wo = 0; wo < Wo; wo++) {
      const int h = ho + kh - pad, x = wo + kw - pad;
      want[((size_t)(c * k + kh) * k + kw) * B * T + (size_t)b * T + ho * Wo + wo] =
        h >= 0 && h < H && x >= 0 && x < W ? in[(((size_t)b * C + c) * H + h) * W + x] : 0.0f;
    }
  float *din = dnew(in, nin), *dcol = dnew(col, ncol);
  cuda_im2col_batch(dcol, din, B, C, H, W, k, pad);
  dget(col, dcol, ncol);
  EXPECT_SAME(col, want, ncol, "im2col of a batch");
  /* copy2d: a 5 x 4 block out of rows of 9 into rows of 6; then one value into a column (lds 0) */
  float src[45], dst[30], dwant[30];
  fill(src, 45, -1, 1);
  for (int i = 0; i < 30; i++) dst[i] = dwant[i] = (float)i;
  for (int r = 0; r < 5; r++) for (int c = 0; c < 4; c++) dwant[r * 6 + c] = src[r * 9 + 1 + c];
  for (int r = 0; r < 5; r++) dwant[r * 6 + 5] = src[7];
  float *ds = dnew(src, 45), *dd = dnew(dst, 30);
  cuda_copy2d(dd, 6, ds + 1, 9, 5, 4);
  cuda_copy2d(dd + 5, 6, ds + 7, 0, 5, 1);
  dget(dst, dd, 30);
  EXPECT_SAME(dst, dwant, 30, "copy2d");
  /* axpby: y every 3rd of 12 (a NaN among them with a == 0), x one value (incx 0); then a, b general */
  float y[12], x[4], yw[12];
  fill(y, 12, -1, 1); fill(x, 4, -1, 1);
  y[3] = NAN;
  memcpy(yw, y, sizeof y);
  for (int i = 0; i < 4; i++) yw[i * 3] = 0.0f + 0.75f * x[0];
  float *dy = dnew(y, 12), *dx = dnew(x, 4);
  cuda_axpby(dy, 3, dx, 0, 4, 0.0f, 0.75f);
  dget(y, dy, 12);
  EXPECT_SAME(y, yw, 12, "axpby with a = 0 (y not read: the NaN is gone), incx 0");
  for (int i = 0; i < 4; i++) { volatile float u = -1.5f * yw[i * 3], v = 0.3f * x[i]; yw[i * 3] = u + v; }
  cuda_axpby(dy, 3, dx, 1, 4, -1.5f, 0.3f);
  dget(y, dy, 12);
  EXPECT_SAME(y, yw, 12, "axpby, each product and the sum rounded on its own");
  cuda_free(din); cuda_free(dcol); cuda_free(ds); cuda_free(dd); cuda_free(dy); cuda_free(dx);
  free(in); free(col); free(want);
}

/* ---- the full-size nets' layers (issue 51): overlapping max-pool, batch norm, global average pool --
 * against the reference. Errors relative to the output's scale (max(max |ref|, 1)): batch norm's
 * statistics and sums are in double on both sides, its values take a few float roundings (~1e-7 of
 * the scale; 1e-5 leaves a margin, a bug gives O(1)); a pool's overlapping windows add up to
 * ceil(k/s)^2 gradients in float (vs one double sum). scaled_err: tests/harness.h. */
static void check_bn(int B, int C, int HW) {
  const size_t n = (size_t)B * C * HW;
  float *in = hnew(n), *dout = hnew(n), *g = hnew(C), *be = hnew(C), *rm = hnew(C), *rv = hnew(C), *sv = hnew(2 * C);
  float *ro = hnew(n), *rdin = hnew(n), *rdg = hnew(C), *rdb = hnew(C), *eo = hnew(n);
  float *go = hnew(n), *gdin = hnew(n), *gdg = hnew(C), *gdb = hnew(C), *grm = hnew(C), *grv = hnew(C), *geo = hnew(n);
  fill(in, n, -1, 2); fill(dout, n, -1, 1); fill(g, C, 0.5f, 1.5f); fill(be, C, -0.5f, 0.5f);
  fill(rm, C, -0.2f, 0.2f); fill(rv, C, 0.5f, 2);
  float *d_in = dnew(in, n), *d_dout = dnew(dout, n), *d_g = dnew(g, C), *d_be = dnew(be, C), *d_rm = dnew(rm, C);
  float *d_rv = dnew(rv, C), *d_sv = cuda_alloc_floats(2 * C), *d_o = cuda_alloc_floats(n), *d_din = cuda_alloc_floats(n);
  float *d_dg = dnew(rdg, C), *d_db = dnew(rdb, C), *d_eo = cuda_alloc_floats(n);
  /* eval mode from the starting running statistics, then a training step */
  ref_bn_forward(eo, in, g, be, rm, rv, sv, B, C, HW, 0, 0.1f, 1e-5f);
  cuda_bn_forward(d_eo, d_in, d_g, d_be, d_rm, d_rv, d_sv, B, C, HW, 0, 0.1f, 1e-5f);
  ref_bn_forward(ro, in, g, be, rm, rv, sv, B, C, HW, 1, 0.1f, 1e-5f);
  ref_bn_backward(rdin, rdg, rdb, dout, in, g, sv, B, C, HW);
  cuda_bn_forward(d_o, d_in, d_g, d_be, d_rm, d_rv, d_sv, B, C, HW, 1, 0.1f, 1e-5f);
  cuda_bn_backward(d_din, d_dg, d_db, d_dout, d_in, d_g, d_sv, B, C, HW);
  dget(geo, d_eo, n); dget(go, d_o, n); dget(gdin, d_din, n); dget(gdg, d_dg, C); dget(gdb, d_db, C);
  dget(grm, d_rm, C); dget(grv, d_rv, C);
  const double e[7] = {scaled_err(geo, eo, n), scaled_err(go, ro, n), scaled_err(gdin, rdin, n),
                       scaled_err(gdg, rdg, C), scaled_err(gdb, rdb, C), scaled_err(grm, rm, C), scaled_err(grv, rv, C)};
  double w = 0;
  for (int i = 0; i < 7; i++) w = e[i] > w || isnan(e[i]) ? (isnan(e[i]) ? INFINITY : e[i]) : w;
  printf("  # bn B%d C%d HW%d: eval %.2g out %.2g din %.2g dgamma %.2g dbeta %.2g running %.2g %.2g\n", B, C, HW, e[0],
         e[1], e[2], e[3], e[4], e[5], e[6]);
  EXPECT_MSG(w <= 1e-5, "bn B=%d C=%d HW=%d: %.3g of the scale (a few float roundings, sums in double)", B, C, HW, w);
  cuda_free(d_in); cuda_free(d_dout); cuda_free(d_g); cuda_free(d_be); cuda_free(d_rm); cuda_free(d_rv); cuda_free(d_sv);
  cuda_free(d_o); cuda_free(d_din); cuda_free(d_dg); cuda_free(d_db); cuda_free(d_eo);
  free(in); free(dout); free(g); free(be); free(rm); free(rv); free(sv); free(ro); free(rdin); free(rdg); free(rdb);
  free(eo); free(go); free(gdin); free(gdg); free(gdb); free(grm); free(grv); free(geo);
}
static void check_pool_ks(int B, int C, int H, int W, int k, int s, int ceil_mode) {
  const int Ho = (H - k + (ceil_mode ? s - 1 : 0)) / s + 1, Wo = (W - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  const size_t nin = (size_t)B * C * H * W, nout = (size_t)B * C * Ho * Wo;
  float *in = hnew(nin), *dout = hnew(nout), *ro = hnew(nout), *rdin = hnew(nin), *go = hnew(nout), *gdin = hnew(nin);
  fill(in, nin, -1, 1); fill(dout, nout, -1, 1);
  ref_pool_forward(ro, in, B, C, H, W, k, s, ceil_mode);
  ref_pool_backward(rdin, dout, in, ro, B, C, H, W, k, s, ceil_mode);
  float *d_in = dnew(in, nin), *d_dout = dnew(dout, nout), *d_o = cuda_alloc_floats(nout), *d_din = cuda_alloc_floats(nin);
  cuda_pool_forward(d_o, d_in, B, C, H, W, k, s, ceil_mode);
  cuda_pool_backward(d_din, d_dout, d_in, d_o, B, C, H, W, k, s, ceil_mode);
  dget(go, d_o, nout); dget(gdin, d_din, nin);
  EXPECT_SAME(go, ro, nout, "pool k,s forward");
  const double e = scaled_err(gdin, rdin, nin);
  EXPECT_MSG(e <= 1e-6, "pool k%d s%d %s backward: %.3g (a few float additions vs one double sum)", k, s,
             ceil_mode ? "ceil" : "floor", e);
  cuda_free(d_in); cuda_free(d_dout); cuda_free(d_o); cuda_free(d_din);
  free(in); free(dout); free(ro); free(rdin); free(go); free(gdin);
}
static void test_fullnet_layers(void) {
  NEED_GPU();
  check_bn(8, 6, 49);     /* after a conv */
  check_bn(16, 40, 1);    /* after an fc */
  check_bn(1, 3, 1);      /* N = 1 */
  for (int cm = 0; cm <= 1; cm++) {
    check_pool_ks(2, 3, 11, 9, 3, 2, cm);
    check_pool_ks(2, 2, 8, 10, 2, 3, cm);
  }
  const int B = 3, C = 5, HW = 37;
  const size_t n = (size_t)B * C * HW;
  float *in = hnew(n), *ro = hnew(B * C), *rd = hnew(n), *go = hnew(B * C), *gd = hnew(n);
  fill(in, n, -1, 1);
  ref_gap_forward(ro, in, B, C, HW);
  ref_gap_backward(rd, ro, B, C, HW);
  float *d_in = dnew(in, n), *d_o = cuda_alloc_floats(B * C), *d_d = cuda_alloc_floats(n);
  cuda_gap_forward(d_o, d_in, B, C, HW);
  cuda_gap_backward(d_d, d_o, B, C, HW);
  dget(go, d_o, B * C); dget(gd, d_d, n);
  EXPECT_MSG(scaled_err(go, ro, B * C) <= 1e-7, "gap forward: a double sum each side, rounded once");
  EXPECT_SAME(gd, rd, n, "gap backward");
  cuda_free(d_in); cuda_free(d_o); cuda_free(d_d);
  free(in); free(ro); free(rd); free(go); free(gd);
}

#else /* built without CUDA */
#define DEFINE_SKIP(fn) static void fn(void) { SKIP_NO_GPU("skipped: no CUDA device (built without CUDA)"); }
CUDA_TESTS(DEFINE_SKIP)
#endif

int main(void) {
#ifdef PDL_HAVE_CUDA
  rng_seed(&g_rng, 20240607, 0);
  g_ndev = gpu_test_devices();
  g_default_impl = cuda_conv_impl();
#endif
  RUN(test_conv_forward);
  RUN(test_conv_backward);
  RUN(test_conv_strided);
  RUN(test_conv_chunked);
  RUN(test_conv_bias_split);
  RUN(test_conv_act_fused);
  RUN(test_conv_act_pool_fused);
  RUN(test_conv_realistic);
  RUN(test_conv_impl_switch);
  RUN(test_fc);
  RUN(test_maxpool);
  RUN(test_act);
  RUN(test_act_large);
  RUN(test_dropout);
  RUN(test_softmax_xent);
  RUN(test_threads);
  RUN(test_dense_la);
  RUN(test_fullnet_layers);
#ifdef PDL_HAVE_CUDA
  if (g_ndev > 0) cuda_thread_release();
#endif
  return harness_exit();
}
