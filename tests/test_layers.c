/* test_layers.c — every layer of the CPU path (kernels/cpu) against the reference oracle
 * (reference/layers_ref.c) over odd shapes, batch 1 and batch > threads, 1-3 threads, din NULL
 * and not, += semantics of parameter gradients onto nonzero buffers, overwrite semantics of din
 * (buffers pre-filled with NaN), scratch bounds (canary past cpu_conv_scratch_floats), bit-identical
 * repeats, concurrent callers, fused conv + activation == unfused bit for bit; the conv tests run
 * on each algorithm (im2col, Winograd forced for every 3x3, and the automatic choice), and the
 * Winograd path has its own sweep of odd shapes; and finite differences (double, central) on the
 * reference itself, so the oracle is checked against calculus rather than against another
 * implementation.
 * pdl-test: cpu=10 (tests/run.sh: its place in make test's pool, costliest first) */
#include <pthread.h>
#include <cblas.h>
#include <stdint.h>
#include "kernels/cpu/cpu_layers.h"
#include "reference/ref.h"
#include "util/rng.h"
#include "kernels/cpu/cpu.h"
#include "tests/harness.h"
#include "util/util.h"

/* float32 GEMM sums of up to a few hundred O(1) products against double sums: the expected
 * error is ~sqrt(terms) * 2^-24 * magnitude, i.e. 1e-6 relative; 1e-4 leaves a wide margin while
 * any indexing or semantics bug gives O(1). */
#define TOL_SUM 1e-4
#define TOL_SUM_WHY "float32 accumulation of <= ~500 O(1) products vs the double reference"

static rng_t R;

static float *fa(size_t n) { return xmalloc((n ? n : 1) * sizeof(float)); }
static void fill(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)rng_uniform(&R);
}
static void fill_nan(float *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = NAN; }
static float *dup(const float *x, size_t n) { float *y = fa(n); memcpy(y, x, n * sizeof(float)); return y; }
static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }
static int all_zero(const float *a, size_t n) {
  for (size_t i = 0; i < n; i++) if (a[i] != 0.0f) return 0;
  return 1;
}

/* ---------------------------------------------------------------- conv vs reference */

#define CANARY 64
static const uint32_t canary_bits = 0x7fc0dead;

static float *scratch_with_canary(size_t n) {
  float *s = fa(n + CANARY);
  fill(s, n, -1, 1);
  for (int i = 0; i < CANARY; i++) memcpy(s + n + i, &canary_bits, 4);
  return s;
}
static int canary_ok(const float *s, size_t n) {
  for (int i = 0; i < CANARY; i++) if (memcmp(s + n + i, &canary_bits, 4)) return 0;
  return 1;
}

/* One conv configuration, cpu vs ref, forward and backward (din NULL and not). */
static void conv_case(int B, int Ci, int H, int W, int Co, int k, int pad, int T) {
  int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  if (Ho <= 0 || Wo <= 0) return;
  size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * Ho * Wo, nw = (size_t)Co * Ci * k * k;
  float *in = fa(nin), *w = fa(nw), *b = fa(Co), *dout = fa(nout);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(dout, nout, -1, 1);
  cpu_set_threads(T);
  size_t ns = cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, T);
  float *scratch = scratch_with_canary(ns);

  float *o_ref = fa(nout), *o_cpu = fa(nout);
  fill_nan(o_cpu, nout);
  ref_conv_forward(o_ref, in, w, b, B, Ci, H, W, Co, k, pad, NULL);
  cpu_conv_forward(o_cpu, in, w, b, B, Ci, H, W, Co, k, pad, scratch);
  double e = max_rel_err(o_cpu, o_ref, nout, 1.0);
  EXPECT_MSG(e <= TOL_SUM, "conv fwd B=%d Ci=%d H=%d W=%d Co=%d k=%d pad=%d T=%d err %.3g", B, Ci, H, W, Co, k, pad,
             T, e);

  /* nonzero initial parameter grads: both must add onto them */
  float *dw0 = fa(nw), *db0 = fa(Co);
  fill(dw0, nw, -2, 2); fill(db0, Co, -2, 2);
  float *dw_ref = dup(dw0, nw), *db_ref = dup(db0, Co), *din_ref = fa(nin);
  ref_conv_backward(din_ref, dw_ref, db_ref, dout, in, w, B, Ci, H, W, Co, k, pad, NULL);
  for (int with_din = 0; with_din < 2; with_din++) {
    float *dw = dup(dw0, nw), *db = dup(db0, Co), *din = fa(nin);
    fill_nan(din, nin);
    cpu_conv_backward(with_din ? din : NULL, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
    double ew = max_rel_err(dw, dw_ref, nw, 1.0), eb = max_rel_err(db, db_ref, Co, 1.0);
    double ed = with_din ? max_rel_err(din, din_ref, nin, 1.0) : 0.0;
    EXPECT_MSG(ew <= TOL_SUM && eb <= TOL_SUM && ed <= TOL_SUM,
               "conv bwd B=%d Ci=%d H=%d W=%d Co=%d k=%d pad=%d T=%d din=%d: dw %.3g db %.3g din %.3g (%s)", B, Ci,
               H, W, Co, k, pad, T, with_din, ew, eb, ed, TOL_SUM_WHY);
    free(dw); free(db); free(din);
  }
  EXPECT_MSG(canary_ok(scratch, ns), "conv scratch overrun B=%d Ci=%d k=%d pad=%d T=%d", B, Ci, k, pad, T);
  free(in); free(w); free(b); free(dout); free(scratch); free(o_ref); free(o_cpu);
  free(dw0); free(db0); free(dw_ref); free(db_ref); free(din_ref);
}

static void test_conv_vs_ref(void) {
  static const int ks[] = {1, 3, 5}, pads[] = {0, 1, 2}, Bs[] = {1, 3, 5}, Ts[] = {1, 2, 3};
  for (int a = 0; a < 3; a++)
    for (int p = 0; p < 3; p++)
      for (int bi = 0; bi < 3; bi++)
        for (int ti = 0; ti < 3; ti++) conv_case(Bs[bi], 3, 7, 5, 5, ks[a], pads[p], Ts[ti]);
  /* single input channel (first layer), even kernel, Co < threads, wider image */
  for (int ti = 0; ti < 3; ti++) {
    conv_case(2, 1, 6, 9, 4, 3, 1, Ts[ti]);
    conv_case(1, 2, 5, 6, 2, 2, 1, Ts[ti]);
    conv_case(4, 4, 9, 11, 7, 3, 1, Ts[ti]);
    conv_case(1, 5, 4, 4, 3, 1, 0, Ts[ti]);
    conv_case(1, 3, 1, 1, 4, 3, 1, Ts[ti]); /* fewer output positions than threads */
    conv_case(1, 2, 1, 2, 3, 1, 0, Ts[ti]);
  }
}

/* dw/db accumulate: two backward calls add twice the gradient onto the initial value. */
static void test_conv_accumulates(void) {
  int B = 3, Ci = 2, H = 6, W = 5, Co = 4, k = 3, pad = 1, T = 2;
  size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * H * W, nw = (size_t)Co * Ci * k * k;
  float *in = fa(nin), *w = fa(nw), *dout = fa(nout), *dw = fa(nw), *db = fa(Co), *g = fa(nw), *gb = fa(Co);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(dout, nout, -1, 1); fill(dw, nw, -3, 3); fill(db, Co, -3, 3);
  float *dw0 = dup(dw, nw), *db0 = dup(db, Co);
  memset(g, 0, nw * sizeof(float)); memset(gb, 0, Co * sizeof(float));
  ref_conv_backward(NULL, g, gb, dout, in, w, B, Ci, H, W, Co, k, pad, NULL);
  cpu_set_threads(T);
  float *scratch = fa(cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, T));
  cpu_conv_backward(NULL, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
  cpu_conv_backward(NULL, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
  for (size_t i = 0; i < nw; i++) EXPECT_NEAR(dw[i], dw0[i] + 2 * g[i], 1e-4 * (1 + fabs(g[i])), TOL_SUM_WHY);
  for (int i = 0; i < Co; i++) EXPECT_NEAR(db[i], db0[i] + 2 * gb[i], 1e-4 * (1 + fabs(gb[i])), TOL_SUM_WHY);
  free(in); free(w); free(dout); free(dw); free(db); free(g); free(gb); free(dw0); free(db0); free(scratch);
}

/* Same inputs, same thread count -> the same bits, for the image-parallel path (B >= T, partial
 * reduction) and the split-GEMM path (B < T); a realistic layer shape so GEMMs take their fast paths. */
static void test_conv_bit_identical_repeat(void) {
  static const int cases[][2] = {{8, 2}, {1, 2}, {6, 1}, {7, 3}}; /* {B, T} */
  int Ci = 8, H = 12, W = 12, Co = 16, k = 3, pad = 1;
  for (int c = 0; c < 4; c++) {
    int B = cases[c][0], T = cases[c][1];
    size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * H * W, nw = (size_t)Co * Ci * k * k;
    float *in = fa(nin), *w = fa(nw), *b = fa(Co), *dout = fa(nout);
    fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(dout, nout, -1, 1);
    cpu_set_threads(T);
    float *scratch = fa(cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, T));
    float *o[2], *dw[2], *db[2], *din[2];
    for (int r = 0; r < 2; r++) {
      o[r] = fa(nout); dw[r] = fa(nw); db[r] = fa(Co); din[r] = fa(nin);
      for (size_t i = 0; i < nw; i++) dw[r][i] = 0.25f * (float)(i % 7);
      for (int i = 0; i < Co; i++) db[r][i] = 0.5f;
      cpu_conv_forward(o[r], in, w, b, B, Ci, H, W, Co, k, pad, scratch);
      cpu_conv_backward(din[r], dw[r], db[r], dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
    }
    EXPECT_MSG(same_bits(o[0], o[1], nout) && same_bits(dw[0], dw[1], nw) && same_bits(db[0], db[1], Co) &&
                   same_bits(din[0], din[1], nin),
               "conv repeat not bit-identical B=%d T=%d", B, T);
    for (int r = 0; r < 2; r++) { free(o[r]); free(dw[r]); free(db[r]); free(din[r]); }
    free(in); free(w); free(b); free(dout); free(scratch);
  }
}

/* The fused conv + activation kernels give exactly the bits of the unfused sequence (same float
 * operations on the same values), on every path: image-parallel, split GEMM, k == 1 direct. */
static void test_conv_act_fused_matches_unfused(void) {
  static const int shapes[][3] = {{3, 1}, {1, 0}, {3, 0}}; /* {k, pad} */
  static const int bt[][2] = {{1, 1}, {1, 2}, {5, 2}, {4, 3}, {2, 1}};
  int H = 7, W = 6, Co = 5;
  for (int Ci = 3; Ci >= 1; Ci -= 2) /* 3: im2col + sgemm (K = 27) or direct; 1: taps9_fwd (K = 9) */
  for (int sh = 0; sh < 3; sh++)
    for (int c = 0; c < 5; c++)
      for (int si = 0; si < 2; si++) {
        int k = shapes[sh][0], pad = shapes[sh][1], B = bt[c][0], T = bt[c][1];
        float slope = si ? 0.0f : 0.01f;
        int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
        size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * Ho * Wo, nw = (size_t)Co * Ci * k * k;
        float *in = fa(nin), *w = fa(nw), *b = fa(Co), *dout = fa(nout), *o1 = fa(nout), *o2 = fa(nout);
        fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(dout, nout, -1, 1);
        float *dout_copy = dup(dout, nout), *g = fa(nout);
        cpu_set_threads(T);
        size_t ns = cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, T);
        float *scratch = scratch_with_canary(ns);
        cpu_conv_forward(o1, in, w, b, B, Ci, H, W, Co, k, pad, scratch);
        cpu_act_forward(o1, o1, nout, slope);
        cpu_conv_act_forward(o2, in, w, b, B, Ci, H, W, Co, k, pad, slope, scratch, NULL);
        EXPECT_MSG(same_bits(o1, o2, nout), "fused fwd Ci=%d k=%d pad=%d B=%d T=%d slope=%g", Ci, k, pad, B, T, slope);
        for (int with_din = 0; with_din < 2; with_din++) {
          float *dw1 = fa(nw), *db1 = fa(Co), *din1 = fa(nin), *dw2 = fa(nw), *db2 = fa(Co), *din2 = fa(nin);
          fill(dw1, nw, -1, 1); fill(db1, Co, -1, 1);
          memcpy(dw2, dw1, nw * sizeof(float)); memcpy(db2, db1, Co * sizeof(float));
          fill_nan(din1, nin); fill_nan(din2, nin);
          cpu_act_backward(g, dout, o1, nout, slope);
          cpu_conv_backward(with_din ? din1 : NULL, dw1, db1, g, in, w, B, Ci, H, W, Co, k, pad, scratch);
          cpu_conv_act_backward(with_din ? din2 : NULL, dw2, db2, dout, o1, in, w, B, Ci, H, W, Co, k, pad, slope,
                                scratch, NULL);
          EXPECT_MSG(same_bits(dw1, dw2, nw) && same_bits(db1, db2, Co) && (!with_din || same_bits(din1, din2, nin)),
                     "fused bwd Ci=%d k=%d pad=%d B=%d T=%d slope=%g din=%d", Ci, k, pad, B, T, slope, with_din);
          free(dw1); free(db1); free(din1); free(dw2); free(db2); free(din2);
        }
        EXPECT_MSG(same_bits(dout, dout_copy, nout), "fused bwd modified dout");
        EXPECT_MSG(canary_ok(scratch, ns), "fused conv scratch overrun k=%d pad=%d B=%d T=%d", k, pad, B, T);
        free(in); free(w); free(b); free(dout); free(o1); free(o2); free(dout_copy); free(g); free(scratch);
      }
}

/* Two pthreads, each a "replica" with its own thread count, buffers and scratch, run conv
 * backward concurrently; each must match the same computation done alone (bit for bit). */
typedef struct {
  int T, B; const float *in, *w, *dout; float *dw, *db, *din, *scratch;
} replica_job_t;
enum { RJ_CI = 6, RJ_H = 10, RJ_W = 9, RJ_CO = 12, RJ_K = 3, RJ_PAD = 1 };
static void *replica_run(void *arg) {
  replica_job_t *j = arg;
  cpu_set_threads(j->T);
  for (int rep = 0; rep < 3; rep++) {
    memset(j->dw, 0, sizeof(float) * RJ_CO * RJ_CI * RJ_K * RJ_K);
    memset(j->db, 0, sizeof(float) * RJ_CO);
    cpu_conv_backward(j->din, j->dw, j->db, j->dout, j->in, j->w, j->B, RJ_CI, RJ_H, RJ_W, RJ_CO, RJ_K, RJ_PAD,
                      j->scratch);
  }
  return NULL;
}
static void test_conv_concurrent_replicas(void) {
  int B = 4;
  size_t nin = (size_t)B * RJ_CI * RJ_H * RJ_W, nout = (size_t)B * RJ_CO * RJ_H * RJ_W;
  size_t nw = (size_t)RJ_CO * RJ_CI * RJ_K * RJ_K;
  float *in = fa(nin), *w = fa(nw), *dout = fa(nout);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(dout, nout, -1, 1);
  replica_job_t solo[2], par[2];
  for (int r = 0; r < 2; r++) {
    replica_job_t *js[2] = {&solo[r], &par[r]};
    for (int q = 0; q < 2; q++) {
      replica_job_t *j = js[q];
      j->T = r + 1; j->B = B; j->in = in; j->w = w; j->dout = dout;
      j->dw = fa(nw); j->db = fa(RJ_CO); j->din = fa(nin);
      j->scratch = fa(cpu_conv_scratch_floats(B, RJ_CI, RJ_H, RJ_W, RJ_CO, RJ_K, RJ_PAD, j->T));
    }
    replica_run(&solo[r]);
  }
  pthread_t th[2];
  for (int r = 0; r < 2; r++) EXPECT(pthread_create(&th[r], NULL, replica_run, &par[r]) == 0);
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 2; r++) {
    EXPECT_MSG(same_bits(solo[r].dw, par[r].dw, nw) && same_bits(solo[r].db, par[r].db, RJ_CO) &&
                   same_bits(solo[r].din, par[r].din, nin),
               "replica with T=%d differs when run beside another", r + 1);
    replica_job_t *js[2] = {&solo[r], &par[r]};
    for (int q = 0; q < 2; q++) { free(js[q]->dw); free(js[q]->db); free(js[q]->din); free(js[q]->scratch); }
  }
  free(in); free(w); free(dout);
}

/* ---------------------------------------------------------------- Winograd F(2x2,3x3) */

/* scaled_err (tests/harness.h): max |got - ref| over max(max |ref|, 1) */
/* Measured: <= 6e-7 of the output scale on the cases below (im2col: <= 6e-7 too); the F(2,3)
 * transforms make intermediate terms up to ~16x the direct ones, so float rounding stays a few
 * 1e-6 at worst; an indexing, cropping or adjoint bug gives O(1). */
#define TOL_WINO 1e-5
#define TOL_WINO_WHY "float32 F(2x2,3x3) (intermediates <= ~16x the direct terms) vs double, of the output scale"

/* One shape on the forced Winograd path, every entry point against the reference:
 * forward, fused forward (== forward + act bit for bit), backward and fused backward (din NULL
 * and not; dw/db accumulate onto nonzero values; fused == act_backward + backward bit for bit,
 * and against the reference fed the same activation output), a repeat giving the same bits, and
 * the scratch canary. */
static void wino_case(int B, int Ci, int H, int W, int Co, int pad, int T) {
  const int k = 3, Ho = H + 2 * pad - 2, Wo = W + 2 * pad - 2;
  const float slope = 0.01f;
  size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * Ho * Wo, nw = (size_t)Co * Ci * 9;
  cpu_set_threads(T);
  EXPECT_MSG(cpu_conv_winograd(B, Ci, H, W, Co, k, pad), "forced mode did not take Winograd");
  float *in = fa(nin), *w = fa(nw), *b = fa(Co), *dout = fa(nout);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(dout, nout, -1, 1);
  size_t ns = cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, T);
  float *scratch = scratch_with_canary(ns);
  char tag[160];
  snprintf(tag, sizeof tag, "B=%d Ci=%d H=%d W=%d Co=%d pad=%d T=%d", B, Ci, H, W, Co, pad, T);

  /* forward, plain and fused */
  /* outputs carry a canary too: a tile's rows/columns past an odd Ho/Wo must not be written */
  float *o_ref = fa(nout), *oa_ref = fa(nout), *o = scratch_with_canary(nout), *oa = scratch_with_canary(nout);
  float *o_act = fa(nout);
  ref_conv_forward(o_ref, in, w, b, B, Ci, H, W, Co, k, pad, NULL);
  ref_act_forward(oa_ref, o_ref, nout, slope);
  fill_nan(o, nout); fill_nan(oa, nout);
  cpu_conv_forward(o, in, w, b, B, Ci, H, W, Co, k, pad, scratch);
  cpu_conv_act_forward(oa, in, w, b, B, Ci, H, W, Co, k, pad, slope, scratch, NULL);
  cpu_act_forward(o_act, o, nout, slope);
  double e = scaled_err(o, o_ref, nout), ea = scaled_err(oa, oa_ref, nout);
  EXPECT_MSG(e <= TOL_WINO && ea <= TOL_WINO, "wino fwd %s: err %.3g, fused %.3g (%s)", tag, e, ea, TOL_WINO_WHY);
  EXPECT_MSG(same_bits(oa, o_act, nout), "wino fused fwd != fwd + act %s", tag);

  /* backward, plain and fused; the fused reference uses the cpu activation output so both
   * apply the same activation mask */
  float *g = fa(nout), *dw0 = fa(nw), *db0 = fa(Co);
  fill(dw0, nw, -2, 2); fill(db0, Co, -2, 2);
  cpu_act_backward(g, dout, oa, nout, slope);
  float *dw_ref = dup(dw0, nw), *db_ref = dup(db0, Co), *din_ref = fa(nin);
  float *dwa_ref = dup(dw0, nw), *dba_ref = dup(db0, Co), *dina_ref = fa(nin);
  ref_conv_backward(din_ref, dw_ref, db_ref, dout, in, w, B, Ci, H, W, Co, k, pad, NULL);
  ref_conv_backward(dina_ref, dwa_ref, dba_ref, g, in, w, B, Ci, H, W, Co, k, pad, NULL);
  float *first[3] = {NULL, NULL, NULL}; /* dw, db, din of the first plain call with din */
  for (int with_din = 0; with_din < 2; with_din++) {
    float *dw = dup(dw0, nw), *db = dup(db0, Co), *din = scratch_with_canary(nin);
    float *dwa = dup(dw0, nw), *dba = dup(db0, Co), *dina = fa(nin);
    float *dwu = dup(dw0, nw), *dbu = dup(db0, Co), *dinu = fa(nin);
    fill_nan(din, nin); fill_nan(dina, nin); fill_nan(dinu, nin);
    cpu_conv_backward(with_din ? din : NULL, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
    cpu_conv_act_backward(with_din ? dina : NULL, dwa, dba, dout, oa, in, w, B, Ci, H, W, Co, k, pad, slope, scratch,
                          NULL);
    cpu_conv_backward(with_din ? dinu : NULL, dwu, dbu, g, in, w, B, Ci, H, W, Co, k, pad, scratch);
    double ew = scaled_err(dw, dw_ref, nw), eb = scaled_err(db, db_ref, Co);
    double ed = with_din ? scaled_err(din, din_ref, nin) : 0.0;
    double ewa = scaled_err(dwa, dwa_ref, nw), eba = scaled_err(dba, dba_ref, Co);
    double eda = with_din ? scaled_err(dina, dina_ref, nin) : 0.0;
    EXPECT_MSG(ew <= TOL_WINO && eb <= TOL_WINO && ed <= TOL_WINO && ewa <= TOL_WINO && eba <= TOL_WINO &&
                   eda <= TOL_WINO,
               "wino bwd %s din=%d: dw %.3g db %.3g din %.3g, fused dw %.3g db %.3g din %.3g (%s)", tag, with_din, ew,
               eb, ed, ewa, eba, eda, TOL_WINO_WHY);
    EXPECT_MSG(same_bits(dwa, dwu, nw) && same_bits(dba, dbu, Co) && (!with_din || same_bits(dina, dinu, nin)),
               "wino fused bwd != act_backward + bwd %s din=%d", tag, with_din);
    if (!with_din) EXPECT_MSG(isnan(din[0]) && isnan(din[nin - 1]), "wino bwd wrote din=NULL's buffer? %s", tag);
    EXPECT_MSG(canary_ok(din, nin), "wino bwd wrote past din %s", tag);
    if (with_din) { first[0] = dw; first[1] = db; first[2] = din; }
    else { free(dw); free(db); free(din); }
    free(dwa); free(dba); free(dina); free(dwu); free(dbu); free(dinu);
  }

  /* the same call again: the same bits */
  float *o2 = fa(nout), *dw2 = dup(dw0, nw), *db2 = dup(db0, Co), *din2 = fa(nin);
  cpu_conv_forward(o2, in, w, b, B, Ci, H, W, Co, k, pad, scratch);
  cpu_conv_backward(din2, dw2, db2, dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
  EXPECT_MSG(same_bits(o, o2, nout) && same_bits(first[0], dw2, nw) && same_bits(first[1], db2, Co) &&
                 same_bits(first[2], din2, nin),
             "wino repeat not bit-identical %s", tag);
  /* the fused pair through a keep: the bits of the fused pair without one (fwd: oa; bwd: the
   * unkept call below, run between them on the same scratch, which the keep must not need) */
  const size_t nk = cpu_conv_keep_floats(Ci, H, W, Co, k, pad);
  float *keep = scratch_with_canary(nk), *ok = fa(nout);
  EXPECT_MSG(nk > 0, "no keep for a Winograd conv %s", tag);
  float *dwk = dup(dw0, nw), *dbk = dup(db0, Co), *dink = fa(nin), *dwn = dup(dw0, nw), *dbn = dup(db0, Co);
  float *dinn = fa(nin);
  cpu_conv_act_forward(ok, in, w, b, B, Ci, H, W, Co, k, pad, slope, scratch, keep);
  cpu_conv_act_backward(dinn, dwn, dbn, dout, oa, in, w, B, Ci, H, W, Co, k, pad, slope, scratch, NULL);
  cpu_conv_act_backward(dink, dwk, dbk, dout, ok, in, w, B, Ci, H, W, Co, k, pad, slope, scratch, keep);
  EXPECT_MSG(same_bits(ok, oa, nout) && same_bits(dwk, dwn, nw) && same_bits(dbk, dbn, Co) &&
                 same_bits(dink, dinn, nin),
             "wino fused pair with a keep != without %s", tag);
  /* the backward reads the keep: zeroed, the transformed weights give din = 0, and at batch 1 the
   * transformed input dw = its initial value */
  memset(keep, 0, nk * sizeof(float));
  memcpy(dwk, dw0, nw * sizeof(float));
  cpu_conv_act_backward(dink, dwk, dbk, dout, ok, in, w, B, Ci, H, W, Co, k, pad, slope, scratch, keep);
  EXPECT_MSG(all_zero(dink, nin), "wino bwd did not take U from its keep %s", tag);
  if (B == 1) EXPECT_MSG(same_bits(dwk, dw0, nw), "wino bwd at batch 1 did not take V from its keep %s", tag);
  EXPECT_MSG(canary_ok(keep, nk), "wino keep overrun %s", tag);
  free(keep); free(ok); free(dwk); free(dbk); free(dink); free(dwn); free(dbn); free(dinn);
  EXPECT_MSG(canary_ok(scratch, ns), "wino scratch overrun %s", tag);
  EXPECT_MSG(canary_ok(o, nout) && canary_ok(oa, nout), "wino fwd wrote past out %s", tag);
  free(in); free(w); free(b); free(dout); free(scratch); free(o_ref); free(oa_ref); free(o); free(oa); free(o_act);
  free(g); free(dw0); free(db0); free(dw_ref); free(db_ref); free(din_ref); free(dwa_ref); free(dba_ref);
  free(dina_ref); for (int i = 0; i < 3; i++) free(first[i]);
  free(o2); free(dw2); free(db2); free(din2);
}

/* Odd shapes: H, W in {1,2,3,5,7,8,13,28} (partial tile rows/columns, single-tile images),
 * channels 3/5/17/32, batch 1-9 with 1-3 threads (batch < threads: tile-row / channel splits,
 * with threads left idle; batch >= threads: image blocks, groups of several images), pad 0-2. */
static void test_winograd_vs_ref(void) {
  static const int cases[][7] = { /* B, Ci, H, W, Co, pad, T */
    {1, 3, 1, 1, 5, 1, 1},    {2, 17, 1, 1, 3, 1, 2},  {3, 5, 1, 1, 17, 1, 3},   {1, 5, 2, 3, 3, 1, 2},
    {9, 3, 2, 2, 5, 1, 3},    {3, 17, 3, 3, 5, 0, 1},  {2, 3, 3, 5, 17, 1, 3},   {1, 32, 5, 7, 17, 1, 1},
    {3, 5, 5, 5, 3, 0, 2},    {9, 17, 5, 3, 5, 1, 2},  {1, 17, 7, 7, 32, 1, 2},  {2, 32, 7, 7, 5, 0, 3},
    {9, 5, 7, 7, 3, 1, 1},    {3, 3, 7, 7, 17, 1, 3},  {2, 5, 8, 8, 17, 1, 1},   {9, 3, 8, 8, 5, 0, 2},
    {1, 32, 8, 8, 32, 1, 3},  {3, 17, 13, 13, 5, 1, 2}, {1, 5, 13, 8, 3, 0, 2},  {9, 32, 13, 13, 17, 1, 3},
    {1, 32, 28, 28, 32, 1, 1}, {2, 17, 28, 28, 5, 1, 2}, {9, 5, 28, 28, 3, 1, 3}, {3, 3, 28, 28, 17, 0, 2},
    {1, 5, 28, 13, 17, 1, 3}, {2, 5, 5, 6, 3, 2, 2},   {4, 17, 8, 2, 5, 2, 3},   {9, 32, 28, 28, 32, 1, 2},
  };
  for (int mode = CPU_CONV_WINOGRAD; mode <= CPU_CONV_WINOGRAD4; mode++) { /* F(2x2,3x3), F(4x4,3x3) */
    cpu_conv_set_mode(mode);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      wino_case(cases[c][0], cases[c][1], cases[c][2], cases[c][3], cases[c][4], cases[c][5], cases[c][6]);
  }
  cpu_conv_set_mode(CPU_CONV_AUTO);
}

/* Fused conv + act + 2x2 max-pool (cpu_conv_act_pool_*) on the Winograd path, one shape:
 * forward: every pooled output is within TOL_WINO of the reference pool of the reference conv +
 * act, and idx marks a window maximum (its value, in the reference activation, is the window's
 * maximum up to the same tolerance: Winograd and direct sums may order near-ties differently, so
 * the exact reference argmax is not required); positions past a clipped (ceil) window are never
 * chosen; nothing is written past out/idx. Backward: against the reference conv backward of the
 * gradient routed through the kernel's own argmax (so a near-tie cannot move it), dw/db
 * accumulating, din NULL and not, conv outputs no window covers (floor mode) getting none; a repeat
 * gives the same bits; scratch canary. */
static void wino_pool_case(int B, int Ci, int H, int W, int Co, int pad, int ceil_mode, int T) {
  const int k = 3, Ho = H + 2 * pad - 2, Wo = W + 2 * pad - 2;
  const int Hp = ceil_mode ? (Ho + 1) / 2 : Ho / 2, Wp = ceil_mode ? (Wo + 1) / 2 : Wo / 2;
  if (Ho < 1 || Wo < 1 || Hp < 1 || Wp < 1) return;
  const float slope = 0.01f;
  size_t nin = (size_t)B * Ci * H * W, nact = (size_t)B * Co * Ho * Wo, np = (size_t)B * Co * Hp * Wp;
  size_t nw = (size_t)Co * Ci * 9;
  cpu_set_threads(T);
  char tag[160];
  snprintf(tag, sizeof tag, "B=%d Ci=%d H=%d W=%d Co=%d pad=%d ceil=%d T=%d", B, Ci, H, W, Co, pad, ceil_mode, T);
  EXPECT_MSG(cpu_conv_act_pool_fusable(B, Ci, H, W, Co, k, pad, 2), "forced Winograd not fusable %s", tag);
  float *in = fa(nin), *w = fa(nw), *b = fa(Co), *dp = fa(np);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, Co, -1, 1); fill(dp, np, -1, 1);
  size_t ns = cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, T);
  float *scratch = scratch_with_canary(ns);

  /* reference: conv, act, pool */
  float *a_ref = fa(nact), *p_ref = fa(np);
  ref_conv_forward(a_ref, in, w, b, B, Ci, H, W, Co, k, pad, NULL);
  ref_act_forward(a_ref, a_ref, nact, slope);
  ref_maxpool_forward(p_ref, a_ref, B, Co, Ho, Wo, 2, ceil_mode);
  float *out = scratch_with_canary(np);
  uint8_t *idx = xmalloc(np + CANARY);
  memset(idx, 0xee, np + CANARY);
  fill_nan(out, np);
  cpu_conv_act_pool_forward(out, idx, in, w, b, B, Ci, H, W, Co, pad, slope, ceil_mode, scratch, NULL);
  double e = scaled_err(out, p_ref, np);
  EXPECT_MSG(e <= TOL_WINO, "pool fwd %s: err %.3g (%s)", tag, e, TOL_WINO_WHY);
  EXPECT_MSG(canary_ok(out, np), "pool fwd wrote past out %s", tag);
  int idx_bad = 0, past = 0;
  for (size_t j = 0; j < CANARY; j++) past |= idx[np + j] != 0xee;
  double amax = 1;
  for (size_t j = 0; j < nact; j++) amax = fabs(a_ref[j]) > amax ? fabs(a_ref[j]) : amax;
  /* the full-size gradient the kernel's argmax routes: zero but at each window's idx */
  float *dact = fa(nact);
  memset(dact, 0, nact * sizeof(float));
  for (size_t pl = 0; pl < (size_t)B * Co; pl++)
    for (int py = 0; py < Hp; py++)
      for (int px = 0; px < Wp; px++) {
        const size_t q = (pl * Hp + py) * Wp + px;
        const int ix = idx[q], oy = 2 * py + ix / 2, ox = 2 * px + ix % 2;
        if (ix > 3 || oy >= Ho || ox >= Wo) { idx_bad++; continue; }
        const float *a = a_ref + pl * Ho * Wo;
        float wmax = -INFINITY;
        for (int y = 2 * py; y < 2 * py + 2 && y < Ho; y++)
          for (int x = 2 * px; x < 2 * px + 2 && x < Wo; x++) wmax = a[y * Wo + x] > wmax ? a[y * Wo + x] : wmax;
        if (fabs((double)a[oy * Wo + ox] - wmax) > TOL_WINO * amax) idx_bad++;
        dact[pl * Ho * Wo + oy * Wo + ox] = out[q] > 0.0f ? dp[q] : slope * dp[q]; /* act' at the max */
      }
  EXPECT_MSG(idx_bad == 0, "pool fwd %s: %d windows' idx is not a maximum inside the window", tag, idx_bad);
  EXPECT_MSG(!past, "pool fwd wrote past idx %s", tag);

  float *dw0 = fa(nw), *db0 = fa(Co);
  fill(dw0, nw, -2, 2); fill(db0, Co, -2, 2);
  float *dw_ref = dup(dw0, nw), *db_ref = dup(db0, Co), *din_ref = fa(nin);
  ref_conv_backward(din_ref, dw_ref, db_ref, dact, in, w, B, Ci, H, W, Co, k, pad, NULL);
  float *first[3] = {NULL, NULL, NULL};
  for (int with_din = 0; with_din < 2; with_din++) {
    float *dw = dup(dw0, nw), *db = dup(db0, Co), *din = scratch_with_canary(nin);
    fill_nan(din, nin);
    cpu_conv_act_pool_backward(with_din ? din : NULL, dw, db, dp, out, idx, in, w, B, Ci, H, W, Co, pad, slope,
                               ceil_mode, scratch, NULL);
    double ew = scaled_err(dw, dw_ref, nw), eb = scaled_err(db, db_ref, Co);
    double ed = with_din ? scaled_err(din, din_ref, nin) : 0.0;
    EXPECT_MSG(ew <= TOL_WINO && eb <= TOL_WINO && ed <= TOL_WINO, "pool bwd %s din=%d: dw %.3g db %.3g din %.3g (%s)",
               tag, with_din, ew, eb, ed, TOL_WINO_WHY);
    if (!with_din) EXPECT_MSG(isnan(din[0]) && isnan(din[nin - 1]), "pool bwd wrote din=NULL's buffer? %s", tag);
    EXPECT_MSG(canary_ok(din, nin), "pool bwd wrote past din %s", tag);
    if (with_din) { first[0] = dw; first[1] = db; first[2] = din; }
    else { free(dw); free(db); free(din); }
  }
  /* the same call again, now through a keep (cpu_conv_keep_floats): the same bits; the keep holds
   * what the backward reads (zeroed, the transformed weights give din = 0); its canary holds */
  float *o2 = fa(np), *dw2 = dup(dw0, nw), *db2 = dup(db0, Co), *din2 = fa(nin);
  uint8_t *idx2 = xmalloc(np);
  const size_t nk = cpu_conv_keep_floats(Ci, H, W, Co, k, pad);
  float *keep = scratch_with_canary(nk);
  EXPECT_MSG(nk > 0, "no keep for a Winograd conv %s", tag);
  cpu_conv_act_pool_forward(o2, idx2, in, w, b, B, Ci, H, W, Co, pad, slope, ceil_mode, scratch, keep);
  cpu_conv_act_pool_backward(din2, dw2, db2, dp, o2, idx2, in, w, B, Ci, H, W, Co, pad, slope, ceil_mode, scratch,
                             keep);
  EXPECT_MSG(same_bits(out, o2, np) && !memcmp(idx, idx2, np) && same_bits(first[0], dw2, nw) &&
                 same_bits(first[1], db2, Co) && same_bits(first[2], din2, nin),
             "pool repeat (with a keep) not bit-identical %s", tag);
  memset(keep, 0, nk * sizeof(float));
  float *dw3 = dup(dw0, nw), *db3 = dup(db0, Co), *din3 = fa(nin);
  cpu_conv_act_pool_backward(din3, dw3, db3, dp, o2, idx2, in, w, B, Ci, H, W, Co, pad, slope, ceil_mode, scratch,
                             keep);
  EXPECT_MSG(all_zero(din3, nin), "pool bwd did not take U from its keep %s", tag);
  EXPECT_MSG(canary_ok(keep, nk), "pool keep overrun %s", tag);
  free(keep); free(dw3); free(db3); free(din3);
  EXPECT_MSG(canary_ok(scratch, ns), "pool scratch overrun %s", tag);
  free(in); free(w); free(b); free(dp); free(scratch); free(a_ref); free(p_ref); free(out); free(idx); free(dact);
  free(dw0); free(db0); free(dw_ref); free(db_ref); free(din_ref); for (int i = 0; i < 3; i++) free(first[i]);
  free(o2); free(dw2); free(db2); free(din2); free(idx2);
}

/* Odd and even conv outputs (whole, clipped and dropped last windows), pad 0-2, 1-3 threads with
 * batch below and above the thread count, floor and ceil pools; the reference net's three
 * conv + pool shapes. */
static void test_conv_act_pool_vs_ref(void) {
  static const int cases[][8] = { /* B, Ci, H, W, Co, pad, ceil, T */
    {1, 3, 2, 2, 5, 1, 0, 1},   {2, 3, 3, 3, 4, 0, 1, 2},    {3, 5, 4, 5, 3, 0, 0, 1},   {1, 17, 5, 5, 17, 1, 0, 2},
    {1, 17, 5, 5, 17, 1, 1, 2}, {9, 5, 7, 7, 3, 1, 0, 3},    {9, 5, 7, 7, 3, 1, 1, 3},   {2, 8, 9, 9, 6, 0, 0, 2},
    {2, 8, 9, 9, 6, 0, 1, 3},   {4, 3, 6, 11, 5, 2, 0, 2},   {4, 3, 6, 11, 5, 2, 1, 1},  {1, 32, 13, 13, 17, 1, 1, 3},
    {3, 17, 13, 8, 5, 1, 0, 2}, {1, 32, 28, 28, 32, 1, 0, 1}, {2, 32, 28, 28, 32, 1, 0, 2}, {5, 32, 14, 14, 64, 1, 0, 2},
    {3, 64, 7, 7, 128, 1, 0, 2}, {1, 64, 7, 7, 128, 1, 0, 3}, {16, 64, 7, 7, 128, 1, 0, 1}, {16, 64, 7, 7, 128, 1, 0, 2}, {9, 16, 28, 28, 8, 1, 0, 3}, {2, 5, 3, 8, 3, 2, 1, 2},
  };
  for (int mode = CPU_CONV_WINOGRAD; mode <= CPU_CONV_WINOGRAD4; mode++) { /* F(2x2,3x3), F(4x4,3x3) */
    cpu_conv_set_mode(mode);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      wino_pool_case(cases[c][0], cases[c][1], cases[c][2], cases[c][3], cases[c][4], cases[c][5], cases[c][6],
                     cases[c][7]);
  }
  cpu_conv_set_mode(CPU_CONV_AUTO);
}

/* Which path the automatic mode takes, and that its scratch fits both paths. */
static void test_conv_algorithm_choice(void) {
  cpu_conv_set_mode(CPU_CONV_AUTO);
  EXPECT(!cpu_conv_winograd(128, 1, 28, 28, 32, 3, 1));   /* first layer: one input channel */
  EXPECT(cpu_conv_winograd(1, 32, 28, 28, 32, 3, 1));
  EXPECT(cpu_conv_winograd(128, 32, 14, 14, 64, 3, 1));
  EXPECT(cpu_conv_winograd(1, 64, 7, 7, 128, 3, 1));      /* 16 tiles: the threshold */
  EXPECT(!cpu_conv_winograd(1, 64, 5, 5, 128, 3, 1));     /* 9 tiles: below it */
  EXPECT(cpu_conv_winograd(2, 64, 5, 5, 128, 3, 1));
  EXPECT(!cpu_conv_winograd(128, 64, 14, 14, 64, 5, 2));  /* not 3x3 */
  /* tile size: F(4x4) once a GEMM gets >= 48 tiles; ceil-mode pools on odd maps stay F(2x2) */
  EXPECT(cpu_wino_tile(128, 32, 28, 28, 32, 1, 1) == 4 && cpu_wino_tile(128, 32, 14, 14, 64, 1, 1) == 4);
  EXPECT(cpu_wino_tile(1, 32, 28, 28, 32, 1, 1) == 4 && cpu_wino_tile(1, 32, 14, 14, 64, 1, 1) == 2);
  EXPECT(cpu_wino_tile(128, 32, 13, 13, 32, 1, 2) == 2 && cpu_wino_tile(128, 32, 13, 13, 32, 1, 1) == 4);
  EXPECT(cpu_wino_tile(128, 32, 28, 28, 32, 1, 0) == 4 && cpu_wino_tile(128, 64, 7, 7, 128, 1, 0) == 2);
  EXPECT(!cpu_conv_winograd(128, 64, 14, 14, 64, 1, 0));
  size_t both = cpu_conv_scratch_floats(128, 64, 7, 7, 128, 3, 1, 2);
  EXPECT(both >= cpu_wino_scratch_floats(128, 64, 7, 7, 128, 1, 2));
  cpu_conv_set_mode(CPU_CONV_IM2COL);
  EXPECT(!cpu_conv_winograd(128, 32, 28, 28, 32, 3, 1));
  EXPECT(both >= cpu_conv_scratch_floats(128, 64, 7, 7, 128, 3, 1, 2)); /* >= the im2col need */
  cpu_conv_set_mode(CPU_CONV_WINOGRAD);
  EXPECT(cpu_wino_tile(128, 32, 28, 28, 32, 1, 1) == 2);
  cpu_conv_set_mode(CPU_CONV_WINOGRAD4);
  EXPECT(cpu_wino_tile(1, 32, 14, 14, 64, 1, 1) == 4 && cpu_wino_tile(1, 32, 13, 13, 64, 1, 2) == 2);
  cpu_conv_set_mode(CPU_CONV_WINOGRAD);
  EXPECT(cpu_conv_winograd(1, 1, 5, 5, 1, 3, 0));
  EXPECT(!cpu_conv_winograd(1, 8, 5, 5, 8, 5, 2));
  cpu_conv_set_mode(CPU_CONV_AUTO);
}

/* The generic conv tests above on each algorithm: im2col everywhere, Winograd for every 3x3. */
static void conv_tests_in_mode(int mode) {
  cpu_conv_set_mode(mode);
  test_conv_vs_ref();
  test_conv_accumulates();
  test_conv_bit_identical_repeat();
  test_conv_act_fused_matches_unfused();
  test_conv_concurrent_replicas();
  cpu_conv_set_mode(CPU_CONV_AUTO);
}
static void test_conv_generic_im2col(void) { conv_tests_in_mode(CPU_CONV_IM2COL); }
static void test_conv_generic_winograd(void) { conv_tests_in_mode(CPU_CONV_WINOGRAD); }
static void test_conv_generic_winograd4(void) { conv_tests_in_mode(CPU_CONV_WINOGRAD4); }
static void *get_threads_in_new_thread(void *arg) { *(int *)arg = cpu_get_threads(); cpu_set_threads(1); return NULL; }
/* The Winograd GEMM seam (cpu_smm.c) on its own: odd shapes, padded leading dimensions, op(A) = A
 * and A^T, beta 0, 1 and 0.5 (libxsmm takes 0 and 1; other betas fall back to sgemm), on each
 * path this build has, against double sums; C keeps NaN outside its m x n block. Built with
 * libxsmm, the shapes the reference net uses must JIT (a plan that silently fell back to sgemm
 * would still be right, and slow). */
static void smm_case(int transa, int m, int n, int k, float beta) {
  const int lda = (transa ? m : k) + 3, ldb = n + 5, ldc = n + 2, ar = transa ? k : m;
  float *A = fa((size_t)ar * lda), *B = fa((size_t)k * ldb), *C = fa((size_t)m * ldc), *C0 = fa((size_t)m * ldc);
  fill(A, (size_t)ar * lda, -1, 1); fill(B, (size_t)k * ldb, -1, 1);
  fill_nan(C0, (size_t)m * ldc);
  for (int i = 0; i < m; i++) fill(C0 + (size_t)i * ldc, (size_t)n, -1, 1);
  memcpy(C, C0, (size_t)m * ldc * sizeof(float));
  cpu_smm_t p;
  cpu_smm_plan(&p, transa, m, n, k, lda, ldb, ldc, beta);
  cpu_smm(&p, A, B, C);
  double worst = 0;
  int pad_ok = 1;
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++) {
      double acc = beta * (double)C0[(size_t)i * ldc + j];
      for (int q = 0; q < k; q++)
        acc += (double)(transa ? A[(size_t)q * lda + i] : A[(size_t)i * lda + q]) * B[(size_t)q * ldb + j];
      const double e = fabs(acc - C[(size_t)i * ldc + j]) / (1.0 + fabs(acc));
      if (!(e <= worst)) worst = e;
    }
    for (int j = n; j < ldc; j++) pad_ok &= isnan(C[(size_t)i * ldc + j]);
  }
  EXPECT_MSG(worst <= TOL_SUM, "%s transa %d m %d n %d k %d beta %g: rel err %.3g (%s)", cpu_smm_name(), transa, m, n,
             k, beta, worst, TOL_SUM_WHY);
  EXPECT_MSG(pad_ok, "%s m %d n %d: wrote past its n columns", cpu_smm_name(), m, n);
  free(A); free(B); free(C); free(C0);
}

static void test_smm_vs_double(void) {
  static const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 3, 5}, {32, 98, 32}, {64, 64, 32}, {128, 72, 64},
                                  {32, 49, 32}, {128, 9, 64}, {5, 98, 17}, {64, 32, 98}, {32, 32, 49}, {33, 17, 65}};
  const int had = cpu_smm_libxsmm();
  for (int path = had; path >= 0; path--) {
    cpu_smm_set_libxsmm(path);
    EXPECT(cpu_smm_libxsmm() == path);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
      for (int transa = 0; transa <= 1; transa++) {
        smm_case(transa, shapes[c][0], shapes[c][1], shapes[c][2], 0.0f);
        smm_case(transa, shapes[c][0], shapes[c][1], shapes[c][2], 1.0f);
        smm_case(transa, shapes[c][0], shapes[c][1], shapes[c][2], 0.5f);
      }
  }
  cpu_smm_set_libxsmm(had);
#ifdef PDL_HAVE_XSMM
  /* the three GEMMs of the reference net's 28x28 layer at batch 128 (F(4x4): T = 98 tiles) */
  if (had) {
    cpu_smm_t p;
    cpu_smm_plan(&p, 0, 32, 98, 32, 32, 98, 98, 0.0f);
    EXPECT_MSG(p.fn != NULL, "forward GEMM 32x98x32 did not JIT");
    cpu_smm_plan(&p, 1, 32, 98, 32, 32, 98, 98, 0.0f);
    EXPECT_MSG(p.fn != NULL, "data-gradient GEMM (A^T) did not JIT");
    cpu_smm_plan(&p, 0, 32, 32, 98, 98, 32, 32, 1.0f);
    EXPECT_MSG(p.fn != NULL, "weight-gradient GEMM (beta 1) did not JIT");
  }
#endif
}

/* The Winograd sweeps again on sgemm, when libxsmm is the default (both paths stay covered). */
static void test_winograd_openblas_gemms(void) {
  if (!cpu_smm_libxsmm()) SKIP("this build's Winograd GEMMs are sgemm already (no libxsmm): covered above");
  cpu_smm_set_libxsmm(0);
  test_winograd_vs_ref();
  test_conv_act_pool_vs_ref();
  cpu_smm_set_libxsmm(1);
}

/* ---------------------------------------------------------------- precision where it accumulates */

/* Root-mean-square of got - ref over the root-mean-square of ref: one figure for a whole
 * gradient, steadier than the worst element when comparing two summation orders. */
static double rms_err(const float *got, const float *ref, size_t n) {
  double e = 0, r = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = (double)got[i] - (double)ref[i];
    e += d * d;
    r += (double)ref[i] * (double)ref[i];
  }
  return r > 0 ? sqrt(e / r) : sqrt(e);
}

/* float32 pairwise (cascade) sum of x[0], x[s], ... x[(n-1)s]: how a good library reduces (the
 * level a chained bias-gradient sum is held to). */
static float pairwise_sum(const float *x, size_t n, size_t s) {
  if (n <= 8) {
    float a = 0.0f;
    for (size_t i = 0; i < n; i++) a += x[i * s];
    return a;
  }
  const size_t h = n / 2;
  return pairwise_sum(x, h, s) + pairwise_sum(x + h * s, n - h, s);
}

/* The weight gradient of one Winograd layer at a realistic batch, accumulated from zero, on one
 * thread (the longest chain: every group of images adds onto the same dU), against the double
 * reference, on the Winograd GEMMs of this build (libxsmm) and on sgemm. The sum runs over
 * B x Ho x Wo = up to 131072 products per weight: float32 error grows with the chain that
 * carries the running total. The bound is tied to what sgemm achieves on the same problem, the
 * same tile size and the same transforms: at most 2x its error (rms and worst element). A GEMM
 * that chains all groups through one float32 accumulator (libxsmm with beta = 1 loads C into
 * its registers) measured 3-7x sgemm's error here; blocked summation (each group's GEMM with
 * beta = 0 into a scratch plane, then added) is at sgemm's level. The inputs are non-negative
 * (an image, or a leaky-ReLU output), so the sums do not cancel. */
static void wgrad_precision_case(int B, int Ci, int H, int W, int Co, int mode, const char *what) {
  const int pad = 1, k = 3, Ho = H, Wo = W;
  const size_t nin = (size_t)B * Ci * H * W, nout = (size_t)B * Co * Ho * Wo, nw = (size_t)Co * Ci * 9;
  rng_seed(&R, 30, (uint64_t)(B * 1000 + Ci * 10 + mode)); /* this case's data, whatever ran before */
  float *in = fa(nin), *w = fa(nw), *dout = fa(nout), *dw_ref = fa(nw), *db_ref = fa(Co);
  fill(in, nin, 0, 1); fill(w, nw, -0.2f, 0.2f); fill(dout, nout, -1, 1);
  memset(dw_ref, 0, nw * sizeof(float)); memset(db_ref, 0, Co * sizeof(float));
  ref_conv_backward(NULL, dw_ref, db_ref, dout, in, w, B, Ci, H, W, Co, k, pad, NULL);
  cpu_set_threads(1);
  cpu_conv_set_mode(mode);
  const int had = cpu_smm_libxsmm();
  double rms[2] = {0, 0}, worst[2] = {0, 0}, db_err = 0;
  const size_t ns = cpu_conv_scratch_floats(B, Ci, H, W, Co, k, pad, 1);
  float *scratch = fa(ns), *dw = fa(nw), *db = fa(Co);
  for (int path = 0; path <= had; path++) { /* 0: sgemm, 1: libxsmm */
    cpu_smm_set_libxsmm(path);
    memset(dw, 0, nw * sizeof(float)); memset(db, 0, Co * sizeof(float));
    cpu_conv_backward(NULL, dw, db, dout, in, w, B, Ci, H, W, Co, k, pad, scratch);
    rms[path] = rms_err(dw, dw_ref, nw);
    worst[path] = scaled_err(dw, dw_ref, nw);
    if (!path) db_err = scaled_err(db, db_ref, Co);
  }
  cpu_smm_set_libxsmm(had);
  cpu_conv_set_mode(CPU_CONV_AUTO);
  /* db against a pairwise float32 sum of each channel's B x Ho x Wo terms */
  const size_t P = (size_t)Ho * Wo;
  float *chan = fa((size_t)B * P), *db_pw = fa(Co);
  for (int co = 0; co < Co; co++) {
    for (int i = 0; i < B; i++) memcpy(chan + i * P, dout + ((size_t)i * Co + co) * P, P * sizeof(float));
    db_pw[co] = pairwise_sum(chan, (size_t)B * P, 1);
  }
  const double db_pw_err = scaled_err(db_pw, db_ref, Co);
  free(chan); free(db_pw);
  printf("  # %s %s B=%d Ci=%d %dx%d Co=%d: dw rms err sgemm %.3g, worst %.3g; db %.3g (pairwise %.3g)", what,
         mode == CPU_CONV_WINOGRAD4 ? "F(4x4)" : mode == CPU_CONV_WINOGRAD ? "F(2x2)" : "im2col", B, Ci, H, W, Co, rms[0], worst[0], db_err, db_pw_err);
  if (had) printf("; libxsmm rms %.3g (%.2fx), worst %.3g (%.2fx)", rms[1], rms[1] / rms[0], worst[1], worst[1] / worst[0]);
  printf("\n");
  /* sgemm's own level: float32 sums of ~1e5 terms, the transforms' intermediates ~16x the terms */
  EXPECT_MSG(rms[0] <= 1e-5 && worst[0] <= 2e-5, "%s: sgemm path dw rms %.3g worst %.3g", what, rms[0], worst[0]);
  EXPECT_MSG(db_err <= 2 * db_pw_err + 6e-8, "%s: db err %.3g > 2x a pairwise float32 sum's %.3g", what, db_err,
             db_pw_err);
  if (had)
    EXPECT_MSG(rms[1] <= 2 * rms[0] && worst[1] <= 2 * worst[0],
               "%s: libxsmm path dw rms %.3g worst %.3g > 2x sgemm's %.3g / %.3g on the same problem", what, rms[1],
               worst[1], rms[0], worst[0]);
  free(in); free(w); free(dout); free(dw_ref); free(db_ref); free(scratch); free(dw); free(db);
}

/* The reference net's second layer (32 -> 32 on 28x28) and a CIFAR-style first layer (3 -> 32
 * on 32x32, libxsmm's n = 3 kernel), at batch 128, on both tile sizes and on im2col + sgemm (its
 * dw is sgemm's, the same on both GEMM paths; its db is summed as Winograd's). */
static void test_wgrad_precision_realistic(void) {
  static const int modes[] = {CPU_CONV_IM2COL, CPU_CONV_WINOGRAD, CPU_CONV_WINOGRAD4};
  for (int m = 0; m < 3; m++) {
    const int mode = modes[m];
    wgrad_precision_case(128, 32, 28, 28, 32, mode, "28x28 layer");
    wgrad_precision_case(128, 3, 32, 32, 32, mode, "3-channel first layer");
  }
}

/* The reference net's first fc layer (1152 -> 256) at batch 128, gradients from zero on 1 and 2
 * threads: dw (one sgemm over the batch, summed by OpenBLAS as it sums) against the double
 * reference within 2x of a plain cblas_sgemm of the same product; db (a chain over the batch's
 * rows) within 2x of a pairwise float32 sum of the same terms (one chain over the rows: 2.5x). */
static void test_fc_precision_realistic(void) {
  const int B = 128, M = 1152, N = 256;
  const size_t nin = (size_t)B * M, nout = (size_t)B * N, nw = (size_t)N * M;
  float *in = fa(nin), *w = fa(nw), *dout = fa(nout), *dw_ref = fa(nw), *db_ref = fa(N), *dw_blas = fa(nw);
  float *db_pw = fa(N);
  rng_seed(&R, 30, 1152);
  fill(in, nin, 0, 1); fill(w, nw, -0.05f, 0.05f); fill(dout, nout, -1, 1);
  memset(dw_ref, 0, nw * sizeof(float)); memset(db_ref, 0, N * sizeof(float));
  ref_fc_backward(NULL, dw_ref, db_ref, dout, in, w, B, M, N);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, M, B, 1.0f, dout, N, in, M, 0.0f, dw_blas, M);
  for (int j = 0; j < N; j++) db_pw[j] = pairwise_sum(dout + j, (size_t)B, (size_t)N);
  const double ew_blas = rms_err(dw_blas, dw_ref, nw), eb_pw = scaled_err(db_pw, db_ref, N);
  for (int T = 1; T <= 2; T++) {
    cpu_set_threads(T);
    float *dw = fa(nw), *db = fa(N);
    memset(dw, 0, nw * sizeof(float)); memset(db, 0, N * sizeof(float));
    cpu_fc_backward(NULL, dw, db, dout, in, w, B, M, N);
    const double ew = rms_err(dw, dw_ref, nw), eb = scaled_err(db, db_ref, N);
    printf("  # fc %d->%d B=%d T=%d: dw rms err %.3g (sgemm alone %.3g), db %.3g (pairwise %.3g)\n", M, N, B, T, ew,
           ew_blas, eb, eb_pw);
    EXPECT_MSG(ew <= 2 * ew_blas + 1e-7, "fc dw T=%d: rms err %.3g > 2x sgemm's %.3g", T, ew, ew_blas);
    /* no slack for a rounding here: the order of this sum does not depend on the ISA */
    EXPECT_MSG(eb <= 2 * eb_pw, "fc db T=%d: err %.3g > 2x a pairwise sum's %.3g", T, eb, eb_pw);
    free(dw); free(db);
  }
  cpu_set_threads(1);
  free(in); free(w); free(dout); free(dw_ref); free(db_ref); free(dw_blas); free(db_pw);
}

static void test_thread_count_is_per_thread(void) {
  cpu_set_threads(3);
  EXPECT(cpu_get_threads() == 3);
  int other = -1;
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, get_threads_in_new_thread, &other) == 0);
  pthread_join(th, NULL);
  EXPECT_MSG(other >= 1, "new thread saw %d", other);
  EXPECT_MSG(cpu_get_threads() == 3, "another thread's cpu_set_threads(1) changed ours to %d", cpu_get_threads());
  cpu_set_threads(0);
  EXPECT(cpu_get_threads() == 1);
}

/* ---------------------------------------------------------------- fc vs reference */

static void fc_case(int B, int M, int N, int T) {
  size_t nin = (size_t)B * M, nout = (size_t)B * N, nw = (size_t)N * M;
  float *in = fa(nin), *w = fa(nw), *b = fa(N), *dout = fa(nout), *o_ref = fa(nout), *o_cpu = fa(nout);
  fill(in, nin, -1, 1); fill(w, nw, -1, 1); fill(b, N, -1, 1); fill(dout, nout, -1, 1); fill_nan(o_cpu, nout);
  cpu_set_threads(T);
  ref_fc_forward(o_ref, in, w, b, B, M, N);
  cpu_fc_forward(o_cpu, in, w, b, B, M, N);
  /* dot products of up to ~1200 terms here: error grows ~sqrt(M) */
  double tol = 1e-4 * (1 + sqrt(M / 100.0));
  double e = max_rel_err(o_cpu, o_ref, nout, 1.0);
  EXPECT_MSG(e <= tol, "fc fwd B=%d M=%d N=%d T=%d err %.3g", B, M, N, T, e);
  float *dw0 = fa(nw), *db0 = fa(N);
  fill(dw0, nw, -2, 2); fill(db0, N, -2, 2);
  float *dw_ref = dup(dw0, nw), *db_ref = dup(db0, N), *din_ref = fa(nin);
  ref_fc_backward(din_ref, dw_ref, db_ref, dout, in, w, B, M, N);
  for (int with_din = 0; with_din < 2; with_din++) {
    float *dw = dup(dw0, nw), *db = dup(db0, N), *din = fa(nin);
    fill_nan(din, nin);
    cpu_fc_backward(with_din ? din : NULL, dw, db, dout, in, w, B, M, N);
    double ew = max_rel_err(dw, dw_ref, nw, 1.0), eb = max_rel_err(db, db_ref, N, 1.0);
    double ed = with_din ? max_rel_err(din, din_ref, nin, 1.0) : 0.0;
    EXPECT_MSG(ew <= tol && eb <= tol && ed <= tol, "fc bwd B=%d M=%d N=%d T=%d din=%d: dw %.3g db %.3g din %.3g (%s)",
               B, M, N, T, with_din, ew, eb, ed, TOL_SUM_WHY);
    free(dw); free(db); free(din);
  }
  free(in); free(w); free(b); free(dout); free(o_ref); free(o_cpu); free(dw0); free(db0); free(dw_ref);
  free(db_ref); free(din_ref);
}

static void test_fc_vs_ref(void) {
  static const int Bs[] = {1, 3, 7}, Ms[] = {1, 13, 37}, Ns[] = {1, 11, 29};
  for (int T = 1; T <= 3; T++) {
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        for (int l = 0; l < 3; l++) fc_case(Bs[i], Ms[j], Ns[l], T);
    fc_case(5, 301, 67, T);  /* large enough to be threaded */
    fc_case(1, 1153, 97, T); /* batch 1, threaded */
    fc_case(9, 257, 3, T);   /* fewer outputs than... a few threads */
  }
}

/* ---------------------------------------------------------------- max-pool vs reference */

static void pool_case(int B, int C, int H, int W, int s, int ceil_mode, int T, int ties) {
  int Ho = ceil_mode ? (H + s - 1) / s : H / s, Wo = ceil_mode ? (W + s - 1) / s : W / s;
  if (Ho <= 0 || Wo <= 0) return;
  size_t nin = (size_t)B * C * H * W, nout = (size_t)B * C * Ho * Wo;
  float *in = fa(nin), *o_ref = fa(nout), *o_cpu = fa(nout), *dout = fa(nout), *d_ref = fa(nin), *d_cpu = fa(nin);
  fill(in, nin, -1, 1);
  if (ties) /* few distinct values, including both zeros: the first maximum must win */
    for (size_t i = 0; i < nin; i++) { int q = (int)(rng_uniform(&R) * 4); in[i] = q == 0 ? -0.0f : (float)(q - 1); }
  fill(dout, nout, -1, 1); fill_nan(o_cpu, nout); fill_nan(d_cpu, nin);
  cpu_set_threads(T);
  ref_maxpool_forward(o_ref, in, B, C, H, W, s, ceil_mode);
  cpu_maxpool_forward(o_cpu, in, B, C, H, W, s, ceil_mode);
  ref_maxpool_backward(d_ref, dout, in, o_ref, B, C, H, W, s, ceil_mode);
  cpu_maxpool_backward(d_cpu, dout, in, o_cpu, B, C, H, W, s, ceil_mode);
  /* exact: a max and a routing are selections, no arithmetic */
  EXPECT_MSG(same_bits(o_cpu, o_ref, nout), "pool fwd B=%d C=%d H=%d W=%d s=%d ceil=%d T=%d ties=%d", B, C, H, W, s,
             ceil_mode, T, ties);
  EXPECT_MSG(same_bits(d_cpu, d_ref, nin), "pool bwd B=%d C=%d H=%d W=%d s=%d ceil=%d T=%d ties=%d", B, C, H, W, s,
             ceil_mode, T, ties);
  free(in); free(o_ref); free(o_cpu); free(dout); free(d_ref); free(d_cpu);
}

static void test_maxpool_vs_ref(void) {
  static const int Hs[] = {7, 8, 5, 2}, Ws[] = {5, 9, 6, 3};
  for (int T = 1; T <= 2; T++)
    for (int s = 2; s <= 3; s++)
      for (int cm = 0; cm < 2; cm++)
        for (int ties = 0; ties < 2; ties++) {
          for (int h = 0; h < 4; h++)
            for (int w = 0; w < 4; w++) pool_case(2, 3, Hs[h], Ws[w], s, cm, T, ties);
          pool_case(4, 16, 29, 31, s, cm, T, ties); /* above the threading threshold */
        }
  pool_case(1, 2, 9, 9, 4, 1, 2, 0);
  pool_case(1, 2, 9, 9, 1, 0, 2, 1);
}

/* ---------------------------------------------------------------- element-wise vs reference */

static void test_act_dropout_vs_ref(void) {
  static const size_t ns[] = {1, 17, 1000, 100003};
  static const float slopes[] = {0.01f, 0.0f};
  for (int T = 1; T <= 2; T++)
    for (int a = 0; a < 4; a++)
      for (int si = 0; si < 2; si++) {
        size_t n = ns[a];
        float sl = slopes[si];
        float *x = fa(n), *g = fa(n), *o_ref = fa(n), *o_cpu = fa(n), *d_ref = fa(n), *d_cpu = fa(n), *m = fa(n);
        fill(x, n, -1, 1); fill(g, n, -1, 1);
        for (size_t i = 0; i < n; i++) m[i] = rng_uniform(&R) < 0.3 ? 0.0f : 1.0f / 0.7f;
        if (n > 3) x[0] = 0.0f, x[1] = -0.0f;
        cpu_set_threads(T);
        ref_act_forward(o_ref, x, n, sl);
        memcpy(o_cpu, x, n * sizeof(float));
        cpu_act_forward(o_cpu, o_cpu, n, sl); /* in place, as model.c runs it */
        ref_act_backward(d_ref, g, o_ref, n, sl);
        memcpy(d_cpu, g, n * sizeof(float));
        cpu_act_backward(d_cpu, d_cpu, o_cpu, n, sl);
        /* exact: one multiply per element in both */
        EXPECT_MSG(same_bits(o_cpu, o_ref, n) && same_bits(d_cpu, d_ref, n), "act n=%zu slope=%g T=%d", n, sl, T);
        ref_dropout_forward(o_ref, x, m, n);
        cpu_dropout_forward(o_cpu, x, m, n);
        ref_dropout_backward(d_ref, g, m, n);
        cpu_dropout_backward(d_cpu, g, m, n);
        EXPECT_MSG(same_bits(o_cpu, o_ref, n) && same_bits(d_cpu, d_ref, n), "dropout n=%zu T=%d", n, T);
        free(x); free(g); free(o_ref); free(o_cpu); free(d_ref); free(d_cpu); free(m);
      }
}

static void test_softmax_xent_vs_ref(void) {
  static const int Bs[] = {1, 3, 64}, Ns[] = {1, 2, 10, 37};
  for (int bi = 0; bi < 3; bi++)
    for (int ni = 0; ni < 4; ni++)
      for (int big = 0; big < 2; big++) {
        int B = Bs[bi], N = Ns[ni];
        size_t n = (size_t)B * N;
        float *z = fa(n), *p_ref = fa(n), *p_cpu = fa(n), *d_ref = fa(n), *d_cpu = fa(n);
        int *y = malloc(sizeof(int) * B);
        fill(z, n, big ? -300.0f : -3.0f, big ? 300.0f : 3.0f); /* big: exp overflows without the max shift */
        for (int i = 0; i < B; i++) y[i] = (int)rng_below(&R, (uint64_t)N);
        double l_ref = ref_softmax_xent_forward(p_ref, z, y, B, N);
        double l_cpu = cpu_softmax_xent_forward(p_cpu, z, y, B, N);
        EXPECT_MSG(isfinite(l_ref) && l_ref >= 0, "ref loss %g", l_ref);
        /* both sum in double; only the order of the last roundings may differ */
        EXPECT_NEAR(l_cpu, l_ref, 1e-9 * (1 + fabs(l_ref)), "double sums of the same terms");
        EXPECT_MSG(max_rel_err(p_cpu, p_ref, n, 1e-30) <= 1e-6, "probs B=%d N=%d big=%d (float rounding of a double)",
                   B, N, big);
        ref_softmax_xent_backward(d_ref, p_ref, y, B, N, 0.125f);
        cpu_softmax_xent_backward(d_cpu, p_ref, y, B, N, 0.125f);
        EXPECT_MSG(max_rel_err(d_cpu, d_ref, n, 1e-6) <= 1e-6, "softmax bwd B=%d N=%d (p - 1 in float vs double)", B,
                   N);
        free(z); free(p_ref); free(p_cpu); free(d_ref); free(d_cpu); free(y);
      }
}

/* ---------------------------------------------------------------- finite differences on the reference */

/* L = sum_i r_i * out_i in double. For layers linear in the perturbed variable (conv, fc) the
 * central difference is exact up to rounding, so a large step keeps rounding noise small. */
static double dotd(const float *a, const float *r, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)r[i];
  return s;
}

/* Central difference of f at x[i] with step h, using the float values actually stored. */
typedef double (*lossfn_t)(void *ctx);
static double central(lossfn_t f, void *ctx, float *x, size_t i, float h) {
  float x0 = x[i], xp = x0 + h, xm = x0 - h;
  x[i] = xp; double lp = f(ctx);
  x[i] = xm; double lm = f(ctx);
  x[i] = x0;
  return (lp - lm) / ((double)xp - (double)xm);
}

typedef struct { int B, Ci, H, W, Co, k, pad; float *in, *w, *b, *out, *r; size_t nout; } conv_fd_t;
static double conv_loss(void *c) {
  conv_fd_t *p = c;
  ref_conv_forward(p->out, p->in, p->w, p->b, p->B, p->Ci, p->H, p->W, p->Co, p->k, p->pad, NULL);
  return dotd(p->out, p->r, p->nout);
}

/* finite-difference tolerance: |out| ~ 10, float outputs rounded at 2^-24, step 0.5 -> noise
 * ~ sqrt(#outputs) * 10 * 6e-8 / 1 ~ 1e-5 absolute; 1e-3 relative to max(|g|, 1) is generous */
#define FD_TOL 1e-3
#define FD_WHY "central difference of a linear map in float, step 0.5"

static void test_fd_conv_ref(void) {
  static const int cfg[][7] = {{2, 3, 5, 4, 2, 3, 1}, {1, 2, 4, 5, 3, 2, 0}, {2, 2, 3, 3, 2, 3, 2}};
  for (int c = 0; c < 3; c++) {
    conv_fd_t p = {cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3], cfg[c][4], cfg[c][5], cfg[c][6],
                   NULL, NULL, NULL, NULL, NULL, 0};
    int Ho = p.H + 2 * p.pad - p.k + 1, Wo = p.W + 2 * p.pad - p.k + 1;
    size_t nin = (size_t)p.B * p.Ci * p.H * p.W, nw = (size_t)p.Co * p.Ci * p.k * p.k;
    p.nout = (size_t)p.B * p.Co * Ho * Wo;
    p.in = fa(nin); p.w = fa(nw); p.b = fa(p.Co); p.out = fa(p.nout); p.r = fa(p.nout);
    fill(p.in, nin, -1, 1); fill(p.w, nw, -1, 1); fill(p.b, p.Co, -1, 1); fill(p.r, p.nout, -1, 1);
    float *dw = fa(nw), *db = fa(p.Co), *din = fa(nin);
    memset(dw, 0, nw * sizeof(float)); memset(db, 0, p.Co * sizeof(float));
    ref_conv_backward(din, dw, db, p.r, p.in, p.w, p.B, p.Ci, p.H, p.W, p.Co, p.k, p.pad, NULL);
    for (size_t i = 0; i < nw; i++)
      EXPECT_NEAR(dw[i], central(conv_loss, &p, p.w, i, 0.5f), FD_TOL * fmax(1, fabs(dw[i])), FD_WHY);
    for (int i = 0; i < p.Co; i++)
      EXPECT_NEAR(db[i], central(conv_loss, &p, p.b, i, 0.5f), FD_TOL * fmax(1, fabs(db[i])), FD_WHY);
    for (size_t i = 0; i < nin; i++)
      EXPECT_NEAR(din[i], central(conv_loss, &p, p.in, i, 0.5f), FD_TOL * fmax(1, fabs(din[i])), FD_WHY);
    free(p.in); free(p.w); free(p.b); free(p.out); free(p.r); free(dw); free(db); free(din);
  }
}

typedef struct { int B, M, N; float *in, *w, *b, *out, *r; } fc_fd_t;
static double fc_loss(void *c) {
  fc_fd_t *p = c;
  ref_fc_forward(p->out, p->in, p->w, p->b, p->B, p->M, p->N);
  return dotd(p->out, p->r, (size_t)p->B * p->N);
}
static void test_fd_fc_ref(void) {
  fc_fd_t p = {3, 7, 5, NULL, NULL, NULL, NULL, NULL};
  size_t nin = (size_t)p.B * p.M, nw = (size_t)p.N * p.M, nout = (size_t)p.B * p.N;
  p.in = fa(nin); p.w = fa(nw); p.b = fa(p.N); p.out = fa(nout); p.r = fa(nout);
  fill(p.in, nin, -1, 1); fill(p.w, nw, -1, 1); fill(p.b, p.N, -1, 1); fill(p.r, nout, -1, 1);
  float *dw = fa(nw), *db = fa(p.N), *din = fa(nin);
  memset(dw, 0, nw * sizeof(float)); memset(db, 0, p.N * sizeof(float));
  ref_fc_backward(din, dw, db, p.r, p.in, p.w, p.B, p.M, p.N);
  for (size_t i = 0; i < nw; i++) EXPECT_NEAR(dw[i], central(fc_loss, &p, p.w, i, 0.5f), FD_TOL * fmax(1, fabs(dw[i])), FD_WHY);
  for (int i = 0; i < p.N; i++) EXPECT_NEAR(db[i], central(fc_loss, &p, p.b, i, 0.5f), FD_TOL * fmax(1, fabs(db[i])), FD_WHY);
  for (size_t i = 0; i < nin; i++)
    EXPECT_NEAR(din[i], central(fc_loss, &p, p.in, i, 0.5f), FD_TOL * fmax(1, fabs(din[i])), FD_WHY);
  free(p.in); free(p.w); free(p.b); free(p.out); free(p.r); free(dw); free(db); free(din);
}

typedef struct { int B, C, H, W, s, cm; float *in, *out, *r; size_t nout; } pool_fd_t;
static double pool_loss(void *c) {
  pool_fd_t *p = c;
  ref_maxpool_forward(p->out, p->in, p->B, p->C, p->H, p->W, p->s, p->cm);
  return dotd(p->out, p->r, p->nout);
}
/* Piecewise linear: inputs are a shuffled grid spaced 0.1 apart, so a 0.01 step never changes
 * which element is the maximum and the difference is exact up to rounding. */
static void test_fd_pool_ref(void) {
  for (int cm = 0; cm < 2; cm++) {
    pool_fd_t p = {2, 2, 5, 7, 2, cm, NULL, NULL, NULL, 0};
    int Ho = cm ? 3 : 2, Wo = cm ? 4 : 3;
    size_t nin = (size_t)p.B * p.C * p.H * p.W;
    p.nout = (size_t)p.B * p.C * Ho * Wo;
    p.in = fa(nin); p.out = fa(p.nout); p.r = fa(p.nout);
    int *perm = malloc(sizeof(int) * nin);
    for (size_t i = 0; i < nin; i++) perm[i] = (int)i;
    rng_shuffle(&R, perm, (int)nin);
    for (size_t i = 0; i < nin; i++) p.in[i] = 0.1f * (float)perm[i] - 5.0f;
    fill(p.r, p.nout, -1, 1);
    float *din = fa(nin), *o = fa(p.nout);
    ref_maxpool_forward(o, p.in, p.B, p.C, p.H, p.W, p.s, cm);
    ref_maxpool_backward(din, p.r, p.in, o, p.B, p.C, p.H, p.W, p.s, cm);
    for (size_t i = 0; i < nin; i++)
      EXPECT_NEAR(din[i], central(pool_loss, &p, p.in, i, 0.01f), 1e-4, "piecewise linear, step below the value gap");
    free(p.in); free(p.out); free(p.r); free(perm); free(din); free(o);
  }
}

typedef struct { size_t n; float slope; float *in, *out, *r; } act_fd_t;
static double act_loss(void *c) {
  act_fd_t *p = c;
  ref_act_forward(p->out, p->in, p->n, p->slope);
  return dotd(p->out, p->r, p->n);
}
static void test_fd_act_ref(void) {
  for (int si = 0; si < 2; si++) {
    act_fd_t p = {40, si ? 0.0f : 0.01f, NULL, NULL, NULL};
    p.in = fa(p.n); p.out = fa(p.n); p.r = fa(p.n);
    fill(p.in, p.n, 0.1f, 1.0f);
    for (size_t i = 0; i < p.n; i += 2) p.in[i] = -p.in[i]; /* |x| >= 0.1: a 0.01 step stays on one side */
    fill(p.r, p.n, -1, 1);
    float *din = fa(p.n);
    ref_act_forward(p.out, p.in, p.n, p.slope);
    ref_act_backward(din, p.r, p.out, p.n, p.slope);
    for (size_t i = 0; i < p.n; i++)
      EXPECT_NEAR(din[i], central(act_loss, &p, p.in, i, 0.01f), 1e-5, "linear on each side of 0, float rounding");
    free(p.in); free(p.out); free(p.r); free(din);
  }
}

typedef struct { int B, N; float *z, *p; int *y; } sm_fd_t;
static double sm_loss(void *c) {
  sm_fd_t *p = c;
  return ref_softmax_xent_forward(p->p, p->z, p->y, p->B, p->N);
}
static void test_fd_softmax_xent_ref(void) {
  sm_fd_t p = {3, 6, NULL, NULL, NULL};
  size_t n = (size_t)p.B * p.N;
  p.z = fa(n); p.p = fa(n); p.y = malloc(sizeof(int) * p.B);
  fill(p.z, n, -2, 2);
  for (int i = 0; i < p.B; i++) p.y[i] = (int)rng_below(&R, (uint64_t)p.N);
  float *d = fa(n);
  ref_softmax_xent_forward(p.p, p.z, p.y, p.B, p.N);
  ref_softmax_xent_backward(d, p.p, p.y, p.B, p.N, 1.0f);
  for (size_t i = 0; i < n; i++)
    EXPECT_NEAR(d[i], central(sm_loss, &p, p.z, i, 1e-3f), 1e-5, "smooth loss, O(h^2) truncation with h = 1e-3");
  /* scale multiplies the whole gradient (probs recomputed: the loop above left perturbed ones) */
  float *d2 = fa(n);
  ref_softmax_xent_forward(p.p, p.z, p.y, p.B, p.N);
  ref_softmax_xent_backward(d2, p.p, p.y, p.B, p.N, 0.5f);
  for (size_t i = 0; i < n; i++) EXPECT_NEAR(d2[i], 0.5 * d[i], 1e-7, "one float rounding");
  free(p.z); free(p.p); free(p.y); free(d); free(d2);
}

int main(void) {
  rng_seed(&R, 12345, 7);
  RUN(test_fd_conv_ref);
  RUN(test_fd_fc_ref);
  RUN(test_fd_pool_ref);
  RUN(test_fd_act_ref);
  RUN(test_fd_softmax_xent_ref);
  RUN(test_conv_vs_ref);
  RUN(test_conv_accumulates);
  RUN(test_conv_bit_identical_repeat);
  RUN(test_conv_act_fused_matches_unfused);
  RUN(test_conv_concurrent_replicas);
  RUN(test_conv_generic_im2col);
  RUN(test_conv_generic_winograd);
  RUN(test_conv_generic_winograd4);
  RUN(test_conv_algorithm_choice);
  RUN(test_winograd_vs_ref);
  RUN(test_conv_act_pool_vs_ref);
  RUN(test_smm_vs_double);
  RUN(test_winograd_openblas_gemms);
  RUN(test_wgrad_precision_realistic);
  RUN(test_fc_precision_realistic);
  RUN(test_thread_count_is_per_thread);
  RUN(test_fc_vs_ref);
  RUN(test_maxpool_vs_ref);
  RUN(test_act_dropout_vs_ref);
  RUN(test_softmax_xent_vs_ref);
  return harness_exit();
}
