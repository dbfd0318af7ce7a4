/* test_fullnet.c — the layers and nets of the papers' full-size nets (issue 51): the spec grammar's
 * b, G, s and P<k>s<s> (shapes, parameter counts, FLOPs, usage errors), every preset at its own
 * input; the CPU path of strided conv, overlapping max-pool, batch normalization and global
 * average pooling against the reference (kernels/cpu/cpu_fullnet.c vs
 * reference/layers_fullnet_ref.c) at realistic sizes, 1 and 2 threads, += of parameter gradients,
 * din NULL; finite differences on the reference; whole nets with batch norm, fast path against
 * the reference (train and eval mode), and VGG16 for CIFAR training a few steps.
 * `test_fullnet --bn-dump cpu|ref B C HW train seed` prints one batch norm forward (and backward
 * after a training forward) as text for tests/t_bn_outside.sh's float64 model. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "core/model.h"
#include "kernels/cpu/cpu_layers.h"
#include "reference/ref.h"
#include "util/rng.h"
#include "util/util.h"

static rng_t R;
static float *fa(size_t n) { return xmalloc((n ? n : 1) * sizeof(float)); }
static void fill(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)rng_uniform(&R);
}
static void fill_nan(float *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = NAN; }
static float *dup(const float *x, size_t n) { float *y = fa(n); memcpy(y, x, n * sizeof(float)); return y; }

/* scaled_err (tests/harness.h): max |got - ref| over max(max |ref|, 1) */

/* ---------------------------------------------------------------- the grammar */

static int parses(const char *spec, int c, int h, int w, char *err, size_t len) {
  static net_t n;
  return net_parse(&n, spec, c, h, w, err, len) == 0;
}

static void test_grammar(void) {
  net_t n;
  char err[512];
  /* C16k3s2b on 3x32x32 -> 16x16x16 (pad 1), BN, act; P3s2 -> 7x7; G -> 16x1x1; F8b -> BN; S4 */
  EXPECT(net_parse(&n, "relu C16k3s2b P3s2 G F8b S4", 3, 32, 32, err, sizeof err) == 0);
  EXPECT_MSG(n.nlayers == 9, "%d layers", n.nlayers);
  EXPECT(n.L[0].type == L_CONV && n.L[0].s == 2 && n.L[0].oh == 16 && n.L[0].ow == 16 && n.L[0].n_b == 0);
  EXPECT(n.L[1].type == L_BN && n.L[1].oc == 16 && n.L[1].oh == 16 && n.L[1].n_w == 16 && n.L[1].n_b == 16);
  EXPECT(n.L[2].type == L_ACT);
  EXPECT(n.L[3].type == L_POOL && n.L[3].k == 3 && n.L[3].s == 2 && n.L[3].oh == 7 && n.L[3].ow == 7);
  EXPECT(n.L[4].type == L_GAP && n.L[4].oc == 16 && n.L[4].oh == 1);
  EXPECT(n.L[5].type == L_FC && n.L[5].n_b == 0 && n.L[6].type == L_BN && n.L[6].oc == 8 && n.L[7].type == L_ACT);
  EXPECT(n.L[8].type == L_SOFTMAX && n.classes == 4);
  const size_t want = 16 * 3 * 9 + 2 * 16 + 16 * 8 + 2 * 8 + 8 * 4 + 4;
  EXPECT_MSG(n.nparams == want, "nparams %zu want %zu", n.nparams, want);
  /* FLOPs: conv 2 mac (first layer: no input gradient), BN 8 + 10 per value, GAP 1 + 1, fc 2 mac */
  const double cm = 16.0 * 256 * 27, bn = 16.0 * 256, gp = 16.0 * 49, f1 = 16.0 * 8, f2 = 8.0 * 4;
  const double ff = 2 * cm + 8 * bn + gp + 2 * f1 + 8 * 8 + 2 * f2;
  const double ft = 4 * cm + 18 * bn + 2 * gp + 6 * f1 + 18 * 8 + 6 * f2;
  EXPECT_MSG(fabs(n.flops_fwd - ff) < 1e-6 * ff && fabs(n.flops_train - ft) < 1e-6 * ft, "flops %.0f %.0f want %.0f %.0f",
             n.flops_fwd, n.flops_train, ff, ft);
  /* ceil mode of an overlapping pool; stride with an explicit pad; P<s>s<s> == P<s> */
  EXPECT(net_parse(&n, "C4k5s3p0 P3s2c S2", 1, 20, 20, err, sizeof err) == 0);
  EXPECT_MSG(n.L[0].oh == 6 && n.L[2].oh == 3, "%d %d", n.L[0].oh, n.L[2].oh);   /* (20-5)/3+1 = 6; (6-3+1)/2+1 = 3 */
  EXPECT(net_parse(&n, "C4 P2s2 S2", 1, 9, 9, err, sizeof err) == 0 && n.L[2].oh == 4 && n.L[2].k == 2);
  /* a ceil-mode P<s>c still clips its window to a smaller input (ppasgd-imagenet32's 6th pool on 1x1) */
  EXPECT(net_parse(&n, "C4 Pc Pc S2", 1, 2, 2, err, sizeof err) == 0 && n.L[3].oh == 1 && n.L[3].ow == 1);
  /* the usage errors name the token */
  static const char *const bad[][2] = {
    {"C8bb S2", "C8bb"}, {"C8s0 S2", "C8s0"}, {"C8x S2", "C8x"}, {"F8 S2b", "S2b"}, {"P3s S2", "P3s"},
    {"Ps2 S2", "Ps2"}, {"G3 S2", "G3"}, {"F8bq S2", "F8bq"}, {"P9s2 S2", "P9s2"}, {"C8k9p0 S2", "C8k9p0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    const int ok = parses(bad[i][0], 1, 8, 8, err, sizeof err);
    EXPECT_MSG(!ok && strstr(err, bad[i][1]), "'%s' should be refused naming '%s': %s", bad[i][0], bad[i][1], err);
  }
}

/* Every preset builds at the input it is laid out for; the papers' nets have their sizes. */
static void test_presets(void) {
  static net_t n;
  char err[512];
  for (int i = 0; i < net_npresets; i++) {
    int c, h, w;
    EXPECT_MSG(net_presets[i].input && sscanf(net_presets[i].input, "%dx%dx%d", &c, &h, &w) == 3, "%s",
               net_presets[i].name);
    EXPECT_MSG(net_parse(&n, net_presets[i].name, c, h, w, err, sizeof err) == 0, "%s: %s", net_presets[i].name, err);
  }
  /* Chainer's VGG: 13 convs without bias, 13 + 1 BN (gamma, beta), fc 512x512 without bias, fc 512x10
   * (+ our 10 biases) */
  EXPECT(net_parse(&n, "vgg16-cifar10", 3, 32, 32, err, sizeof err) == 0);
  const size_t conv = 9 * (3 * 64 + 64 * 64 + 64 * 128 + 128 * 128 + 128 * 256 + 2 * 256 * 256 + 256 * 512 +
                           5 * (size_t)512 * 512);
  const size_t want = conv + 2 * (2 * 64 + 2 * 128 + 3 * 256 + 6 * 512) + 512 * 512 + 2 * 512 + 512 * 10 + 10;
  EXPECT_MSG(n.nparams == want && want == 14987210, "vgg16-cifar10 %zu parameters, want %zu", n.nparams, want);
  /* EASGD's 11 layers: (3,221)C(96,108)P(96,36)C(256,32)P(256,16)C(384,14)C(384,13)C(256,12)P(256,6)D D S */
  EXPECT(net_parse(&n, "easgd-imagenet-paper", 3, 221, 221, err, sizeof err) == 0);
  static const int sizes[] = {108, 36, 32, 16, 14, 13, 12, 6};
  int j = 0;
  for (int i = 0; i < n.nlayers && j < 8; i++)
    if (n.L[i].type == L_CONV || n.L[i].type == L_POOL) {
      EXPECT_MSG(n.L[i].oh == sizes[j] && n.L[i].ow == sizes[j], "easgd layer %d: %d, want %d", i, n.L[i].oh, sizes[j]);
      j++;
    }
  EXPECT(j == 8 && n.classes == 1000);
}

/* ---------------------------------------------------------------- layers against the reference */

/* float32 GEMM sums of K = Ci*k*k <= ~600 products of O(1) terms vs the double reference, as
 * test_layers: ~sqrt(K) 2^-24 of the output scale; 1e-5 leaves a wide margin, a bug gives O(1) */
#define TOL_CONV 1e-5
#define TOL_CONV_WHY "float32 sums of <= ~600 O(1) products (and the dw partials' chain over images) vs double"

static void conv_s_case(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int T) {
  if (H + 2 * pad < k || W + 2 * pad < k) return;
  const int Ho = (H + 2 * pad - k) / st + 1, Wo = (W + 2 * pad - k) / st + 1;
  const size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * Ho * Wo, nw = (size_t)Co * Ci * k * k;
  float *in = fa(nin), *w = fa(nw), *b = fa(Co), *dout = fa(nout), *o = fa(nout), *oref = fa(nout);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(dout, nout, -1, 1);
  cpu_set_threads(T);
  const size_t ns = cpu_conv_s_scratch_floats(B, Ci, H, W, Co, k, pad, st, T);
  float *scratch = fa(ns + 16);
  for (int i = 0; i < 16; i++) scratch[ns + i] = 12345.0f;
  ref_conv_s_forward(oref, in, w, b, B, Ci, H, W, Co, k, pad, st, NULL);
  fill_nan(o, nout);
  cpu_conv_s_forward(o, in, w, b, B, Ci, H, W, Co, k, pad, st, scratch);
  char tag[128];
  snprintf(tag, sizeof tag, "B=%d Ci=%d %dx%d Co=%d k=%d pad=%d st=%d T=%d", B, Ci, H, W, Co, k, pad, st, T);
  double e = scaled_err(o, oref, nout);
  EXPECT_MSG(e <= TOL_CONV, "conv_s fwd %s: %.3g (%s)", tag, e, TOL_CONV_WHY);
  float *dw0 = fa(nw), *db0 = fa(Co);
  fill(dw0, nw, -2, 2); fill(db0, Co, -2, 2);
  float *dwr = dup(dw0, nw), *dbr = dup(db0, Co), *dinr = fa(nin);
  ref_conv_s_backward(dinr, dwr, dbr, dout, in, w, B, Ci, H, W, Co, k, pad, st, NULL);
  for (int with_din = 0; with_din < 2; with_din++) {
    float *dw = dup(dw0, nw), *db = dup(db0, Co), *din = fa(nin);
    fill_nan(din, nin);
    cpu_conv_s_backward(with_din ? din : NULL, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, st, scratch);
    const double ew = scaled_err(dw, dwr, nw), eb = scaled_err(db, dbr, Co);
    const double ed = with_din ? scaled_err(din, dinr, nin) : 0;
    EXPECT_MSG(ew <= TOL_CONV && eb <= TOL_CONV && ed <= TOL_CONV, "conv_s bwd %s din=%d: dw %.3g db %.3g din %.3g (%s)",
               tag, with_din, ew, eb, ed, TOL_CONV_WHY);
    if (!with_din) EXPECT_MSG(isnan(din[0]), "conv_s bwd wrote the din it was not given %s", tag);
    free(dw); free(db); free(din);
  }
  for (int i = 0; i < 16; i++) EXPECT_MSG(scratch[ns + i] == 12345.0f, "conv_s scratch overrun %s", tag);
  free(in); free(w); free(b); free(dout); free(o); free(oref); free(scratch); free(dw0); free(db0); free(dwr);
  free(dbr); free(dinr);
}

static void test_conv_s_vs_ref(void) {
  for (int T = 1; T <= 2; T++) {
    conv_s_case(1, 3, 9, 7, 4, 3, 1, 2, T);
    conv_s_case(3, 2, 11, 11, 5, 5, 2, 3, T);
    conv_s_case(2, 3, 13, 10, 3, 7, 0, 2, T);    /* EASGD's first layer's kind: 7x7 stride 2, valid */
    conv_s_case(3, 2, 8, 8, 4, 1, 0, 2, T);      /* 1x1 stride 2 (a ResNet shortcut) */
    conv_s_case(2, 1, 12, 12, 2, 11, 2, 4, T);   /* AlexNet's 11x11 stride 4 */
    conv_s_case(5, 4, 6, 5, 3, 2, 0, 5, T);      /* stride past the kernel: gaps */
  }
  /* a realistic layer: 32 images of 32x16x16, 32 filters 3x3 stride 2 */
  conv_s_case(32, 32, 16, 16, 32, 3, 1, 2, 2);
}

static void pool_case(int B, int C, int H, int W, int k, int s, int cm, int T, int ties) {
  const int Ho = (H - k + (cm ? s - 1 : 0)) / s + 1, Wo = (W - k + (cm ? s - 1 : 0)) / s + 1;
  const size_t nin = (size_t)B * C * H * W, nout = (size_t)B * C * Ho * Wo;
  float *in = fa(nin), *o = fa(nout), *oref = fa(nout), *dout = fa(nout), *din = fa(nin), *dinr = fa(nin);
  fill(in, nin, -1, 1); fill(dout, nout, -1, 1);
  if (ties) for (size_t i = 0; i < nin; i++) in[i] = (float)(int)(3 * in[i]);   /* few values: ties in every window */
  cpu_set_threads(T);
  ref_pool_forward(oref, in, B, C, H, W, k, s, cm);
  cpu_pool_forward(o, in, B, C, H, W, k, s, cm);
  EXPECT_MSG(!memcmp(o, oref, nout * sizeof(float)), "pool fwd B=%d C=%d %dx%d k=%d s=%d c=%d T=%d", B, C, H, W, k, s,
             cm, T);
  ref_pool_backward(dinr, dout, in, oref, B, C, H, W, k, s, cm);
  fill_nan(din, nin);
  cpu_pool_backward(din, dout, in, o, B, C, H, W, k, s, cm);
  /* overlapping windows: up to ceil(k/s)^2 float additions onto one position against one double sum */
  const double e = scaled_err(din, dinr, nin);
  EXPECT_MSG(e <= 1e-6, "pool bwd B=%d C=%d %dx%d k=%d s=%d c=%d T=%d ties=%d: %.3g (a few float additions)", B, C, H,
             W, k, s, cm, T, ties, e);
  free(in); free(o); free(oref); free(dout); free(din); free(dinr);
}

static void test_pool_vs_ref(void) {
  static const int ks[][2] = {{3, 2}, {3, 1}, {2, 3}, {5, 2}, {3, 3}};
  for (int T = 1; T <= 2; T++)
    for (int i = 0; i < 5; i++)
      for (int cm = 0; cm < 2; cm++)
        for (int ties = 0; ties < 2; ties++) pool_case(3, 2, 11, 8, ks[i][0], ks[i][1], cm, T, ties);
  pool_case(32, 64, 16, 16, 3, 2, 0, 2, 0);   /* realistic: AlexNet's overlapping pool */
}

/* Batch norm, forward in both modes and backward, against the reference. Values: mean `off`, spread
 * ~1; the fast path sums in double and rounds a few times per value in float: ~1e-7 of the scale
 * (|off| / spread ~3 adds ~3 ulps through mean's rounding); 1e-5 leaves a margin, a bug gives O(1) */
#define TOL_BN 1e-5
#define TOL_BN_WHY "a few float32 roundings per value on normalised O(1) values (sums in double)"

static void bn_case(int B, int C, int HW, float off, int T) {
  const size_t n = (size_t)B * C * HW;
  float *in = fa(n), *dout = fa(n), *g = fa(C), *be = fa(C), *o = fa(n), *oref = fa(n);
  fill(in, n, off - 1.7f, off + 1.7f); fill(dout, n, -1, 1); fill(g, C, 0.5f, 1.5f); fill(be, C, -0.5f, 0.5f);
  float *rm = fa(C), *rv = fa(C);
  fill(rm, C, -0.2f, 0.2f); fill(rv, C, 0.5f, 2.0f);
  float *rm2 = dup(rm, C), *rv2 = dup(rv, C), *save = fa(2 * C), *saver = fa(2 * C);
  char tag[96];
  snprintf(tag, sizeof tag, "B=%d C=%d HW=%d off=%g T=%d", B, C, HW, off, T);
  cpu_set_threads(T);
  /* eval mode: the running statistics, nothing written but out */
  fill_nan(save, 2 * C);
  ref_bn_forward(oref, in, g, be, rm, rv, saver, B, C, HW, 0, 0.1f, 1e-5f);
  cpu_bn_forward(o, in, g, be, rm2, rv2, save, B, C, HW, 0, 0.1f, 1e-5f);
  double e = scaled_err(o, oref, n);
  EXPECT_MSG(e <= TOL_BN, "bn eval fwd %s: %.3g (%s)", tag, e, TOL_BN_WHY);
  EXPECT_MSG(!memcmp(rm, rm2, C * sizeof(float)) && !memcmp(rv, rv2, C * sizeof(float)) && isnan(save[0]),
             "bn eval fwd wrote its state %s", tag);
  /* train mode */
  ref_bn_forward(oref, in, g, be, rm, rv, saver, B, C, HW, 1, 0.1f, 1e-5f);
  cpu_bn_forward(o, in, g, be, rm2, rv2, save, B, C, HW, 1, 0.1f, 1e-5f);
  e = scaled_err(o, oref, n);
  const double er = fmax(scaled_err(rm2, rm, C), scaled_err(rv2, rv, C)), es = scaled_err(save, saver, 2 * C);
  EXPECT_MSG(e <= TOL_BN && er <= 1e-6 && es <= 1e-6, "bn train fwd %s: out %.3g running %.3g saved %.3g (%s)", tag, e,
             er, es, TOL_BN_WHY);
  float *dg0 = fa(C), *db0 = fa(C);
  fill(dg0, C, -1, 1); fill(db0, C, -1, 1);
  float *dgr = dup(dg0, C), *dbr = dup(db0, C), *dinr = fa(n);
  ref_bn_backward(dinr, dgr, dbr, dout, in, g, saver, B, C, HW);
  for (int with_din = 0; with_din < 2; with_din++) {
    float *dg = dup(dg0, C), *db = dup(db0, C), *din = fa(n);
    fill_nan(din, n);
    cpu_bn_backward(with_din ? din : NULL, dg, db, dout, in, g, save, B, C, HW);
    const double eg = scaled_err(dg, dgr, C), eb = scaled_err(db, dbr, C), ed = with_din ? scaled_err(din, dinr, n) : 0;
    EXPECT_MSG(eg <= TOL_BN && eb <= TOL_BN && ed <= TOL_BN, "bn bwd %s din=%d: dgamma %.3g dbeta %.3g din %.3g (%s)",
               tag, with_din, eg, eb, ed, TOL_BN_WHY);
    free(dg); free(db); free(din);
  }
  free(in); free(dout); free(g); free(be); free(o); free(oref); free(rm); free(rv); free(rm2); free(rv2);
  free(save); free(saver); free(dg0); free(db0); free(dgr); free(dbr); free(dinr);
}

static void test_bn_vs_ref(void) {
  for (int T = 1; T <= 2; T++) {
    bn_case(128, 64, 32 * 32, 0.0f, T);   /* the realistic case: batch 128, 64 channels of 32x32 */
    bn_case(128, 512, 1, 3.0f, T);        /* after an fc (VGG's bn_fc1), offset inputs */
    bn_case(1, 5, 7, -3.0f, T);
    bn_case(2, 3, 1, 0.5f, T);            /* N = 2 */
    bn_case(1, 4, 1, 0.0f, T);            /* N = 1: variance 0, out = beta, Chainer's max(N - 1, 1) */
  }
}

static void test_gap_vs_ref(void) {
  for (int T = 1; T <= 2; T++) {
    cpu_set_threads(T);
    const int B = 64, C = 128, HW = 64;
    const size_t n = (size_t)B * C * HW;
    float *in = fa(n), *o = fa((size_t)B * C), *oref = fa((size_t)B * C), *d = fa(n), *dref = fa(n);
    fill(in, n, -1, 1);
    ref_gap_forward(oref, in, B, C, HW);
    cpu_gap_forward(o, in, B, C, HW);
    ref_gap_backward(dref, oref, B, C, HW);
    fill_nan(d, n);
    cpu_gap_backward(d, oref, B, C, HW);
    /* sums in double on both sides, one rounding each */
    EXPECT_MSG(scaled_err(o, oref, (size_t)B * C) <= 1e-7 && !memcmp(d, dref, n * sizeof(float)), "gap T=%d", T);
    free(in); free(o); free(oref); free(d); free(dref);
  }
}

/* ---------------------------------------------------------------- finite differences on the reference */

/* the sum of r .* layer output, in double, as a function of one input or parameter value */
typedef struct { int B, C, HW; float *in, *g, *be, *r; } bnfd_t;
static double bn_loss(bnfd_t *c) {
  const size_t n = (size_t)c->B * c->C * c->HW;
  float *o = fa(n), rm[8] = {0}, rv[8] = {0}, sv[16];
  ref_bn_forward(o, c->in, c->g, c->be, rm, rv, sv, c->B, c->C, c->HW, 1, 0.1f, 1e-5f);
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)o[i] * c->r[i];
  free(o);
  return s;
}

static void test_fd_bn_ref(void) {
  bnfd_t c = {3, 2, 5, NULL, NULL, NULL, NULL};
  const size_t n = (size_t)c.B * c.C * c.HW;
  c.in = fa(n); c.g = fa(2); c.be = fa(2); c.r = fa(n);
  fill(c.in, n, -1, 1); fill(c.g, 2, 0.5f, 1.5f); fill(c.be, 2, -1, 1); fill(c.r, n, -1, 1);
  float *o = fa(n), rm[2] = {0}, rv[2] = {0}, sv[4], *din = fa(n), dg[2] = {0}, db[2] = {0};
  ref_bn_forward(o, c.in, c.g, c.be, rm, rv, sv, c.B, c.C, c.HW, 1, 0.1f, 1e-5f);
  ref_bn_backward(din, dg, db, c.r, c.in, c.g, sv, c.B, c.C, c.HW);
  const float h = 1e-2f;
  int bad = 0;
  /* central differences of a float32 forward at h = 1e-2: ~1e-5 noise, curvature O(h^2) ~1e-4 */
  for (size_t i = 0; i < n; i++) {
    const float keep = c.in[i];
    c.in[i] = keep + h; const double lp = bn_loss(&c);
    c.in[i] = keep - h; const double lm = bn_loss(&c);
    c.in[i] = keep;
    const double fd = (lp - lm) / (2 * h);
    if (fabs(fd - din[i]) > 2e-3 * (1 + fabs(fd))) { bad++; printf("  din[%zu] %.6g vs fd %.6g\n", i, din[i], fd); }
  }
  float *ps[2] = {c.g, c.be}, *gs[2] = {dg, db};
  for (int q = 0; q < 2; q++)
    for (int j = 0; j < 2; j++) {
      const float keep = ps[q][j];
      ps[q][j] = keep + h; const double lp = bn_loss(&c);
      ps[q][j] = keep - h; const double lm = bn_loss(&c);
      ps[q][j] = keep;
      const double fd = (lp - lm) / (2 * h);
      if (fabs(fd - gs[q][j]) > 2e-3 * (1 + fabs(fd))) { bad++; printf("  %s[%d] %.6g vs fd %.6g\n", q ? "dbeta" : "dgamma", j, gs[q][j], fd); }
    }
  EXPECT_MSG(bad == 0, "%d batch norm gradients disagree with central differences (float32 loss, h = 1e-2)", bad);
  free(c.in); free(c.g); free(c.be); free(c.r); free(o); free(din);
}

/* central differences of the strided conv reference's input and weight gradients */
static void test_fd_conv_s_ref(void) {
  const int B = 2, Ci = 2, H = 7, W = 6, Co = 3, k = 3, pad = 1, st = 2, Ho = 4, Wo = 3;
  const size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * Ho * Wo, nw = (size_t)Co * Ci * k * k;
  float *in = fa(nin), *w = fa(nw), *b = fa(Co), *r = fa(nout), *o = fa(nout), *din = fa(nin), *dw = fa(nw), *db = fa(Co);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(r, nout, -1, 1);
  memset(dw, 0, nw * sizeof(float)); memset(db, 0, Co * sizeof(float));
  ref_conv_s_backward(din, dw, db, r, in, w, B, Ci, H, W, Co, k, pad, st, NULL);
  int bad = 0;
  float *vs[2] = {in, w}, *gs[2] = {din, dw};
  const size_t ns[2] = {nin, nw};
  for (int q = 0; q < 2; q++)
    for (size_t i = 0; i < ns[q]; i++) {
      const float keep = vs[q][i], h = 1e-2f;
      double l[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        vs[q][i] = keep + (sgn ? -h : h);
        ref_conv_s_forward(o, in, w, b, B, Ci, H, W, Co, k, pad, st, NULL);
        l[sgn] = 0;
        for (size_t j = 0; j < nout; j++) l[sgn] += (double)o[j] * r[j];
      }
      vs[q][i] = keep;
      const double fd = (l[0] - l[1]) / (2 * h);   /* linear in each value: exact up to float rounding */
      if (fabs(fd - gs[q][i]) > 1e-3 * (1 + fabs(fd))) bad++;
    }
  EXPECT_MSG(bad == 0, "%d strided conv gradients disagree with central differences", bad);
  free(in); free(w); free(b); free(r); free(o); free(din); free(dw); free(db);
}

/* ---------------------------------------------------------------- whole nets */

static void fill_normal(float *v, size_t n, uint64_t seed, float scale) {
  rng_t r; rng_seed(&r, seed, 3);
  for (size_t i = 0; i < n; i++) v[i] = scale * rng_normal(&r);
}

/* One net, fast path against the reference: a training step's loss and gradients, then the
 * evaluation-mode loss (running statistics moved by the training forwards), over two steps. */
static void net_case(const char *spec, int c, int h, int w, int B, int T) {
  net_t n; net_build(&n, spec, c, h, w);
  const size_t np = n.nparams, img = (size_t)c * h * w;
  float *p = xmalloc(np * 4), *gr = xcalloc(np, 4), *gc = xcalloc(np, 4), *x = xmalloc(B * img * 4);
  int *y = xmalloc(B * sizeof(int));
  for (int i = 0; i < B; i++) y[i] = i % n.classes;
  net_init_params(&n, p, 3);
  fill_normal(x, B * img, 4, 1.0f);
  workspace_t wr, wc;
  ws_init(&wr, &n, B, 1, &kernels_ref, 9); ws_init(&wc, &n, B, T, &kernels_cpu, 9);
  for (int step = 0; step < 2; step++) {
    const double lr_ = net_forward(&wr, p, x, y, B, 1, NULL), lc = net_forward(&wc, p, x, y, B, 1, NULL);
    net_backward(&wr, p, gr, y, B, 0.5f); net_backward(&wc, p, gc, y, B, 0.5f);
    /* float sums in other orders through a dozen layers: ~1e-6 relative per layer */
    EXPECT_MSG(fabs(lc - lr_) <= 1e-4 * fabs(lr_), "%s step %d T=%d: loss %.9g vs ref %.9g", spec, step, T, lc, lr_);
    /* each parameterised layer's gradient against its own scale (a deep batch norm net has gradient
     * values far below their layer's scale; a float sum's error follows the scale): measured <= 2e-5
     * for the VGG-structured net below, 1e-3 leaves a margin, a wrong index or term gives O(1) */
    double e = 0;
    for (int l = 0; l < n.nlayers; l++)
      if (n.L[l].n_w) e = fmax(e, scaled_err(gc + n.L[l].w_off, gr + n.L[l].w_off, n.L[l].n_w + n.L[l].n_b));
    EXPECT_MSG(e <= 1e-3, "%s step %d T=%d: gradient error %.3g of its layer's scale (float summation order)", spec, step,
               T, e);
    const double er = net_forward(&wr, p, x, y, B, 0, NULL), ec = net_forward(&wc, p, x, y, B, 0, NULL);
    EXPECT_MSG(fabs(ec - er) <= 1e-4 * fabs(er), "%s step %d T=%d: eval loss %.9g vs ref %.9g", spec, step, T, ec, er);
    for (size_t i = 0; i < np; i++) p[i] -= 0.01f * gr[i];
  }
  /* the running statistics moved alike, and are not the start's */
  const size_t ns = net_state_floats(&n);
  float *sr = fa(ns), *sc = fa(ns);
  ws_state_get(&wr, sr); ws_state_get(&wc, sc);
  const double es = scaled_err(sc, sr, ns);
  EXPECT_MSG(ns > 0 && es <= 1e-4 && sr[0] != 0.0f, "%s: running statistics %.3g apart of their scale", spec, es);
  ws_free(&wr); ws_free(&wc);
  free(p); free(gr); free(gc); free(x); free(y); free(sr); free(sc);
}

static void test_net_cpu_vs_ref(void) {
  for (int T = 1; T <= 2; T++) {
    net_case("relu C8k3s2b C8b P3s2 C12b G F10b S5", 3, 17, 15, 4, T);
    net_case("leaky C6k5s2p2b P3s2c F7b D0.3 S3", 2, 13, 13, 3, T);
  }
  /* VGG16-CIFAR's structure (Chainer's blocks, dropout, BN after the fc) at 1/8 of its widths */
  net_case("relu C8b D0.3 C8b P C16b D0.4 C16b P C32b D0.4 C32b D0.4 C32b P C64b D0.4 C64b D0.4 C64b P "
           "C64b D0.4 C64b D0.4 C64b P D0.5 F64b D0.5 S10", 3, 32, 32, 4, 2);
}

/* whole-net gradient of a batch-norm net against central differences, train mode on both sides
 * (the training forward's loss depends on the batch's statistics only) */
static void test_net_gradient_fd(void) {
  net_t n; net_build(&n, "relu C3s2b P3s2 F5b S3", 2, 9, 9);
  const int B = 4;
  const size_t np = n.nparams, img = 2 * 81;
  float *w = xmalloc(np * 4), *g = xcalloc(np, 4), *x = xmalloc(B * img * 4);
  int y[4] = {0, 2, 1, 2};
  net_init_params(&n, w, 5);
  fill_normal(x, B * img, 12, 1.0f);
  workspace_t ws; ws_init(&ws, &n, B, 1, &kernels_ref, 1);
  net_forward(&ws, w, x, y, B, 1, NULL);
  net_backward(&ws, w, g, y, B, 1.0f);
  int checked = 0, bad = 0;
  for (size_t i = 0; i < np; i++) {
    const float keep = w[i], h = 1e-3f;
    w[i] = keep + h; const double lp = net_forward(&ws, w, x, y, B, 1, NULL);
    w[i] = keep - h; const double lm = net_forward(&ws, w, x, y, B, 1, NULL);
    w[i] = keep;
    const double fd = (lp - lm) / (2 * h);
    /* as test_core: float32 loss over 2h leaves ~1e-3 noise; ReLU and max-pool kinks bend a few */
    if (fabs(fd - g[i]) > 5e-3 + 3e-2 * fabs(fd)) bad++;
    checked++;
  }
  EXPECT_MSG(bad <= checked / 10, "%d of %d parameters disagree with finite differences", bad, checked);
  ws_free(&ws); free(w); free(g); free(x);
}

/* VGG16 for CIFAR at full size trains on the fast path: a few SGD steps on one small batch bring
 * its training loss down (batch 4: about 10 GFLOP a step) */
static void test_vgg16_trains(void) {
  net_t n; net_build(&n, "vgg16-cifar10", 3, 32, 32);
  const int B = 4;
  const size_t np = n.nparams, img = 3 * 32 * 32;
  float *p = xmalloc(np * 4), *g = xcalloc(np, 4), *x = xmalloc(B * img * 4);
  int y[4] = {0, 1, 2, 3};
  net_init_params(&n, p, 1);
  fill_normal(x, B * img, 2, 1.0f);
  workspace_t ws; ws_init(&ws, &n, B, 2, &kernels_cpu, 3);
  double first = 0, last = 0;
  for (int step = 0; step < 4; step++) {
    memset(g, 0, np * 4);
    const double l = net_forward(&ws, p, x, y, B, 1, NULL) / B;
    net_backward(&ws, p, g, y, B, 1.0f / B);
    for (size_t i = 0; i < np; i++) p[i] -= 0.05f * g[i];
    if (step == 0) first = l;
    last = l;
  }
  double ev = net_forward(&ws, p, x, y, B, 0, NULL) / B;
  EXPECT_MSG(isfinite(first) && isfinite(last) && isfinite(ev) && last < first,
             "vgg16-cifar10: loss %.4f -> %.4f in 4 steps (eval %.4f)", first, last, ev);
  ws_free(&ws); free(p); free(g); free(x);
}

/* ---------------------------------------------------------------- the outside check's dump */

static void put(const char *name, const float *v, size_t n) {
  printf("%s", name);
  for (size_t i = 0; i < n; i++) printf(" %.9g", v[i]);
  printf("\n");
}

/* one batch norm forward (and backward after a training forward) on seeded inputs, as text */
static int bn_dump(int argc, char **argv) {
  if (argc != 8 || (strcmp(argv[2], "cpu") && strcmp(argv[2], "ref"))) {
    fprintf(stderr, "usage: test_fullnet --bn-dump cpu|ref B C HW train seed\n");
    return 2;
  }
  const int B = atoi(argv[3]), C = atoi(argv[4]), HW = atoi(argv[5]), train = atoi(argv[6]);
  if (B < 1 || C < 1 || HW < 1) { fprintf(stderr, "test_fullnet --bn-dump: B, C, HW must be >= 1\n"); return 2; }
  rng_seed(&R, strtoull(argv[7], NULL, 10), 51);
  const int cpu = !strcmp(argv[2], "cpu");
  const size_t n = (size_t)B * C * HW;
  float *in = fa(n), *dout = fa(n), *g = fa(C), *be = fa(C), *rm = fa(C), *rv = fa(C), *o = fa(n), *save = fa(2 * C);
  float *din = fa(n), *dg = fa(C), *db = fa(C);
  fill(in, n, -2, 3); fill(dout, n, -1, 1); fill(g, C, 0.5f, 1.5f); fill(be, C, -0.5f, 0.5f);
  fill(rm, C, -0.3f, 0.3f); fill(rv, C, 0.5f, 2.0f);
  memset(dg, 0, C * sizeof(float)); memset(db, 0, C * sizeof(float));
  printf("shape %d %d %d %d %.9g %.9g\n", B, C, HW, train, (double)NET_BN_EPS, (double)NET_BN_MOMENTUM);
  put("x", in, n); put("gamma", g, C); put("beta", be, C); put("rmean0", rm, C); put("rvar0", rv, C); put("dy", dout, n);
  cpu_set_threads(2);
  (cpu ? cpu_bn_forward : ref_bn_forward)(o, in, g, be, rm, rv, save, B, C, HW, train, NET_BN_MOMENTUM, NET_BN_EPS);
  put("y", o, n); put("rmean", rm, C); put("rvar", rv, C);
  if (train) {
    (cpu ? cpu_bn_backward : ref_bn_backward)(din, dg, db, dout, in, g, save, B, C, HW);
    put("dx", din, n); put("dgamma", dg, C); put("dbeta", db, C);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--bn-dump")) return bn_dump(argc, argv);
  rng_seed(&R, 51, 1);
  RUN(test_grammar);
  RUN(test_presets);
  RUN(test_fd_bn_ref);
  RUN(test_fd_conv_s_ref);
  RUN(test_conv_s_vs_ref);
  RUN(test_pool_vs_ref);
  RUN(test_bn_vs_ref);
  RUN(test_gap_vs_ref);
  RUN(test_net_cpu_vs_ref);
  RUN(test_net_gradient_fd);
  RUN(test_vgg16_trains);
  return harness_exit();
}
