/* test_cuda_net.c — whole training steps on the GPU (kernels_cuda, kernels/cuda/cuda_table.c)
 * against the CPU from the same weights and batches: net_forward + net_backward_step with momentum
 * SGD, parameters, gradients and momentum in device memory; then every optimizer (sgd, msgd, nag,
 * adam, asgd, mvasgd) through the table: its updates on the device against optim_step on the CPU
 * (test_optim_updates), and pdl train --device's step (train_state_step, core/run.h) against the
 * CPU's (test_optim_train); resident batches and the evaluation on the device against the same
 * table's host-fed path (test_resident_steps, test_eval_ws). Without a CUDA build or a usable
 * device each test prints "skip - <test>: skipped: no CUDA device (...)" and the binary exits 0.
 * kernels/cuda/emu/run.sh runs it on the CPU emulator (a small net, few steps, kernels_ref as the
 * CPU side); on a GPU it runs ppasgd-cifar (kernels_cpu as the CPU side).
 *
 * Tolerances. The two sides sum every conv/fc dot product in a different order (cuBLAS vs
 * OpenBLAS/Winograd, or the double reference), so each gradient element differs by up to
 * ~n eps sum|terms| (n to 1152 x batch); the update itself is the same expression on both sides
 * (cuda_sgd_step rounds each operation like cpu_sgd_step). Checked:
 *   one step and two steps (the second adds the momentum term): max |W_gpu - W_cpu| <= 1e-3 of
 *     max |W_cpu - W0|, and every loss within 1e-5 relative: orders of magnitude above
 *     reordering (measured 7e-7 on an H100), orders below a wrong index, a missing term or TF32
 *     (~1e-3 relative per product);
 *   100 steps (5 under the emulator), a new random batch each. Training amplifies rounding
 *     differences step by step, at a rate set by the run itself (on an H100, ppasgd-cifar ended
 *     0.04 apart of the distance moved, losses 1.2% apart, although one step agreed to 7e-7). So
 *     the bound is the CPU's own spread on the same run: the CPU trained twice, with im2col and
 *     with Winograd convolutions (two summation orders, both tested against the reference), and
 *     the GPU must stay within 4x that distance from the CPU's im2col run (the GPU's conv,
 *     cuDNN's implicit GEMM or im2col + GEMM, is a third order) and its losses within 4x the CPU runs' loss difference (plus 1e-5).
 *     A systematic error (a dropped momentum term, a gradient scaled by 1.01: both tried)
 *     moves far more than rounding does. Under the emulator (kernels_ref as the CPU side, no
 *     Winograd) the bounds are fixed: 2e-2 of the distance moved, losses 1e-3.
 *   the optimizers' updates alone (test_optim_updates): the same inputs on both sides, and the
 *     contract's expressions rounded operation by operation on both (contract/layers.h): the
 *     parameters and every state vector must be the same bits after 3 steps, for every kind,
 *     with and without weight decay.
 *   every optimizer trained by train_state_step (test_optim_train, 5 steps on the emulator and on
 *     a GPU): as in the emulator's many-steps check above, the gradients differ by the summation
 *     order only, so its fixed bounds (2e-2 of the distance moved, losses 1e-3; measured under the
 *     emulator: 5e-7 to 4e-6, losses 2e-7) hold for the momentum family and the averages;
 *     Adam divides by sqrt(v) + eps, which sends a gradient element near 0 to a step of about
 *     a g / eps, so an element whose gradient is within rounding of 0 can move by a visible part
 *     of its (tiny) step on one side only: its bound is 5x (measured: 6e-6), still far below what
 *     a wrong bias correction (a factor 1/(1 - b1) = 10 at step 1) or a missing term gives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/model.h"
#include "util/rng.h"
#include "core/run.h"
#include "kernels/cpu/cpu_layers.h"
#include "optim/optim.h"
#include "reference/ref.h"
#include "tests/harness.h"
#ifdef PDL_HAVE_CUDA
#include "kernels/cuda/cuda_layers.h"
#include "kernels/cuda/cuda_table.h"
#include "tests/gpu_check.h"
#ifndef PDL_CUDA_EMU
#include "kernels/cpu/cpu.h"
#endif
#endif

#define NET_TESTS(X) X(test_one_step) X(test_two_steps) X(test_many_steps) X(test_optim_updates) X(test_optim_train) \
  X(test_step_counts) X(test_graph_step) X(test_resident_steps) X(test_eval_ws) X(test_graph_stale) X(test_bn_net) \
  X(test_strided_net)

#ifdef PDL_HAVE_CUDA
static int g_ndev;
#define NEED_GPU() do { if (g_ndev <= 0) SKIP_NO_GPU("skipped: no CUDA device (%s)", cuda_no_device_reason()); } while (0)

#ifdef PDL_CUDA_EMU /* the emulator: every launch runs its threads on the host */
#define NET_SPEC "leaky C4 P C6k3p0 Pc F12 D0.25 S5"
#define IN_C 2
#define IN_H 11
#define IN_W 9
#define BATCH 3
#define STEPS 5
#define CPU_KERNELS kernels_ref
#else
#define NET_SPEC "ppasgd-cifar"
#define IN_C 1
#define IN_H 28
#define IN_W 28
#define BATCH 16
#define STEPS 100
#define CPU_KERNELS kernels_cpu
#endif
/* test_bn_net (issue 51): batch norm after convs and an fc, an overlapping pool, global average pooling */
#ifdef PDL_CUDA_EMU
#define BN_SPEC "relu C4b P3s2 C6b G F8b S5"
#else
#define BN_SPEC "relu C32b C32b P C64b C64b P3s2 C128b G F64b S10"
#endif
/* test_strided_net (issue 51): strided convs (a 5x5 stride-2 stem, a 3x3 stride 2 with batch norm, a 1x1
 * stride 2), as ResNet's and AlexNet's ImageNet nets have them */
#ifdef PDL_CUDA_EMU
#define STRIDED_SPEC "relu C4k5s2p2 C6s2b C6k1s2 G F8 S5"
#else
#define STRIDED_SPEC "relu C64k7s2p3b P3s2 C64b C128s2b C128k1s2 G F64 S10"   /* C64b: a stride-1 conv, whose CPU algorithms (Winograd, im2col) set the tolerance */
#endif
static const char *g_spec = NET_SPEC;   /* the net setup() builds */
#define OPT_STEPS 5 /* test_optim_train: few enough that the fixed bounds hold on a GPU too */

typedef struct {
  net_t net;
  size_t n, img;
  float *w0, *x;
  int *y;
} setup_t;

static void setup(setup_t *s) {
  net_build(&s->net, g_spec, IN_C, IN_H, IN_W);
  s->n = s->net.nparams;
  s->img = (size_t)IN_C * IN_H * IN_W;
  s->w0 = malloc(s->n * sizeof(float));
  s->x = malloc((size_t)BATCH * s->img * sizeof(float));
  s->y = malloc(BATCH * sizeof(int));
  if (!s->w0 || !s->x || !s->y) { fprintf(stderr, "out of memory\n"); exit(1); }
  net_init_params(&s->net, s->w0, 42);
}
static void new_batch(setup_t *s, rng_t *r) {
  for (size_t i = 0; i < (size_t)BATCH * s->img; i++) s->x[i] = (float)rng_normal(r);
  for (int b = 0; b < BATCH; b++) s->y[b] = (int)rng_below(r, (uint64_t)s->net.classes);
}
static void teardown(setup_t *s) { free(s->w0); free(s->x); free(s->y); }

/* One side of the comparison: `steps` momentum-SGD steps from w0 (lr 0.01, mu 0.9), each on a new
 * batch drawn from the same seed (and the same dropout seed), the weights after them into w_out
 * and each step's loss into loss[]. */
static void train(setup_t *s, const kernels_t *k, int steps, float *w_out, double *loss) {
  const size_t bytes = s->n * sizeof(float);
  float *w = k->alloc(bytes), *g = k->alloc(bytes), *v = k->alloc(bytes);
  k->upload(w, s->w0, bytes);
  workspace_t ws;
  ws_init(&ws, &s->net, BATCH, 1, k, 7);
  const net_step_t st = {.lr = 0.01f, .mu = 0.9f, .wd = 0.0f, .v = v};
  rng_t r;
  rng_seed(&r, 99, 0);
  for (int t = 0; t < steps; t++) {
    new_batch(s, &r);
    loss[t] = net_forward(&ws, w, s->x, s->y, BATCH, 1, NULL) / BATCH;
    net_backward_step(&ws, w, g, s->y, BATCH, 1.0f / BATCH, &st);
  }
  k->download(w_out, w, bytes);
  ws_free(&ws);
  k->release(w); k->release(g); k->release(v);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)a[i] - (double)b[i]);
    if (isnan(d)) return INFINITY;
    if (d > m) m = d;
  }
  return m;
}

typedef struct { float *w; double *loss; } side_t;

static side_t run_on(setup_t *s, const kernels_t *k, int steps) {
  side_t r = {malloc(s->n * sizeof(float)), malloc(steps * sizeof(double))};
  if (!r.w || !r.loss) { fprintf(stderr, "out of memory\n"); exit(1); }
  train(s, k, steps, r.w, r.loss);
  return r;
}
static void side_free(side_t *r) { free(r->w); free(r->loss); }
static double worst_loss_diff(const side_t *a, const side_t *b, int steps) {
  double worst = 0;
  for (int t = 0; t < steps; t++) {
    const double d = fabs(a->loss[t] - b->loss[t]) / fabs(b->loss[t]);
    if (!(d <= worst)) worst = d; /* NaN sticks */
  }
  return worst;
}

/* GPU vs the CPU after `steps` steps. w_tol, loss_tol < 0: the bounds are 4x the CPU's own
 * spread (im2col against Winograd), see the top of the file. */
static void compare(int steps, double w_tol, double loss_tol) {
  setup_t s;
  setup(&s);
  const char *cpu_name = CPU_KERNELS.name;
  double cpu_spread = 0, cpu_loss_spread = 0;
#ifndef PDL_CUDA_EMU
  const int mode = cpu_conv_get_mode();
  side_t alt = {NULL, NULL};
  if (w_tol < 0) {
    alt = run_on(&s, &CPU_KERNELS, steps);      /* the default algorithm: Winograd where it pays */
    cpu_conv_set_mode(CPU_CONV_IM2COL);
    cpu_name = "cpu (im2col)";
  }
#endif
  side_t c = run_on(&s, &CPU_KERNELS, steps), g = run_on(&s, &kernels_cuda, steps);
#ifndef PDL_CUDA_EMU
  if (w_tol < 0) {
    cpu_conv_set_mode(mode);
    cpu_spread = max_abs_diff(alt.w, c.w, s.n);
    cpu_loss_spread = worst_loss_diff(&alt, &c, steps);
    w_tol = 4 * cpu_spread / max_abs_diff(c.w, s.w0, s.n);
    loss_tol = 4 * cpu_loss_spread + 1e-5;
    side_free(&alt);
  }
#endif
  const double moved = max_abs_diff(c.w, s.w0, s.n), apart = max_abs_diff(g.w, c.w, s.n);
  const double worst_loss = worst_loss_diff(&g, &c, steps);
  printf("  # %s, %d params, batch %d, %d step(s), GPU vs %s: parameters apart %.3g of the distance moved (%.3g), "
         "worst loss difference %.3g relative (loss %.5f -> %.5f)", s.net.name, (int)s.n, BATCH, steps, cpu_name,
         apart / moved, moved, worst_loss, c.loss[0], c.loss[steps - 1]);
  if (cpu_spread > 0) printf("; the CPU's own spread: %.3g, losses %.3g", cpu_spread / moved, cpu_loss_spread);
  printf("\n");
  EXPECT_MSG(moved > 0 && apart <= w_tol * moved, "GPU parameters %.3g apart from the CPU's after %d step(s), over "
             "%.3g of the %.3g they moved", apart, steps, w_tol, moved);
  EXPECT_MSG(worst_loss <= loss_tol, "a step's loss differs by %.3g relative, over %.3g", worst_loss, loss_tol);
  side_free(&c); side_free(&g);
  teardown(&s);
}

static void test_one_step(void) {
  NEED_GPU();
  compare(1, 1e-3, 1e-5);
}
static void test_two_steps(void) {
  NEED_GPU();
  compare(2, 1e-3, 1e-5);
}
/* the same comparisons on a net with batch norm (training mode: batch statistics; the running
 * statistics move on both sides), its gamma and beta updated like every parameter */
/* compare() on another net: 2 steps at fixed bounds, then STEPS (on a GPU with the bounds from the
 * CPU's own spread between its conv algorithms) */
static void compare_net(const char *spec) {
  g_spec = spec;
  compare(2, 1e-3, 1e-5);
#ifdef PDL_CUDA_EMU
  compare(STEPS, 2e-2, 1e-3);
#else
  compare(STEPS, -1, -1);
#endif
  g_spec = NET_SPEC;
}
static void test_bn_net(void) { NEED_GPU(); compare_net(BN_SPEC); }
static void test_strided_net(void) { NEED_GPU(); compare_net(STRIDED_SPEC); }
static void test_many_steps(void) {
  NEED_GPU();
#ifdef PDL_CUDA_EMU
  compare(STEPS, 2e-2, 1e-3);
#else
  compare(STEPS, -1, -1);
#endif
}


/* ---- every optimizer through the table ---- */
static const opt_kind_t kinds[] = {OPT_SGD, OPT_MSGD, OPT_NAG, OPT_ADAM, OPT_ASGD, OPT_MVASGD};

/* a host optimizer's vector v (NULL: the kind has none) against another's: bit for bit */
static int same_bits(const float *a, const float *b, size_t n) { return (!a && !b) || (a && b && !memcmp(a, b, n * 4)); }

/* optim_step on the device (its state from optim_init_on(kernels_cuda)) against optim_step on the
 * CPU (optim_init: kernels_cpu) from the same w, g: three steps, each with a new g, then the
 * parameters and every state vector compared bit for bit. */
static void test_optim_updates(void) {
  NEED_GPU();
  const size_t n = 3000;   /* more than one block of threads, not a multiple of it */
  float *w0 = malloc(n * 4), *gs = malloc(3 * n * 4), *w = malloc(n * 4), *g = malloc(n * 4), *wd_ = malloc(n * 4);
  if (!w0 || !gs || !w || !g || !wd_) { fprintf(stderr, "out of memory\n"); exit(1); }
  rng_t r;
  rng_seed(&r, 5, 0);
  for (size_t i = 0; i < n; i++) w0[i] = (float)rng_normal(&r);
  for (size_t i = 0; i < 3 * n; i++) gs[i] = (float)(rng_normal(&r) * (i % 7 == 0 ? 1e-6 : 1e-2));
  const size_t bytes = n * sizeof(float);
  for (int wdi = 0; wdi < 2; wdi++)
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
      const float wd = wdi ? 1e-3f : 0.0f, lr = kinds[ki] == OPT_ADAM ? 1e-3f : 0.05f;
      optim_t oc, og, back;
      optim_init(&oc, kinds[ki], n, 0.9f, wd);
      optim_init_on(&og, kinds[ki], n, 0.9f, wd, &kernels_cuda);
      optim_init(&back, kinds[ki], n, 0.9f, wd);
      oc.mvrate = og.mvrate = 0.25f;   /* an average that visibly moves in 3 steps */
      float *dw = kernels_cuda.alloc(bytes), *dg = kernels_cuda.alloc(bytes);
      memcpy(w, w0, bytes);
      kernels_cuda.upload(dw, w0, bytes);
      for (int t = 0; t < 3; t++) {
        memcpy(g, gs + (size_t)t * n, bytes);
        kernels_cuda.upload(dg, g, bytes);
        optim_step(&oc, w, g, lr);
        optim_step(&og, dw, dg, lr);
      }
      kernels_cuda.download(wd_, dw, bytes);
      kernels_cuda.download(g, dg, bytes);
      optim_transfer(&back, &og);
      int zero = 1;
      for (size_t i = 0; i < n; i++) zero &= g[i] == 0.0f;
      EXPECT_MSG(same_bits(w, wd_, n) && same_bits(oc.M, back.M, n) && same_bits(oc.V, back.V, n) &&
                     same_bits(oc.Z, back.Z, n) && same_bits(oc.what, back.what, n) && back.t == oc.t && zero,
                 "%s (wd %g): the device's update is not the CPU's bit for bit (w %d, M %d, V %d, Z %d, what %d, "
                 "t %ld/%ld, g zeroed %d)", optim_name(kinds[ki]), wd, same_bits(w, wd_, n),
                 same_bits(oc.M, back.M, n), same_bits(oc.V, back.V, n), same_bits(oc.Z, back.Z, n),
                 same_bits(oc.what, back.what, n), back.t, oc.t, zero);
      kernels_cuda.release(dw); kernels_cuda.release(dg);
      optim_free(&oc); optim_free(&og); optim_free(&back);
    }
  printf("  # 6 optimizers x wd {0, 1e-3}, %zu parameters, 3 steps: device == CPU bit for bit\n", n);
  free(w0); free(gs); free(w); free(g); free(wd_);
}

/* `steps` steps of pdl train's loop body (train_state_step) with optimizer `kind` on backend k
 * from w0, each on a new batch from the same seed: the evaluation point after them (the average
 * for asgd/mvasgd) into w_out, each step's loss into loss[]. */
static void train_optim(setup_t *s, const kernels_t *k, opt_kind_t kind, int steps, float *w_out, double *loss) {
  float *w = malloc(s->n * 4), *g = calloc(s->n, 4);
  if (!w || !g) { fprintf(stderr, "out of memory\n"); exit(1); }
  memcpy(w, s->w0, s->n * 4);
  optim_t o;
  optim_init(&o, kind, s->n, 0.9f, 1e-4f);
  o.mvrate = 0.25f;
  train_state_t d;
  train_state_init(&d, k, w, g, &o);
  train_state_upload(&d, w, &o);
  workspace_t ws;
  ws_init(&ws, &s->net, BATCH, 1, k, 7);
  rng_t r;
  rng_seed(&r, 99, 0);
  for (int t = 0; t < steps; t++) {
    new_batch(s, &r);
    loss[t] = train_state_step(&d, &ws, s->x, s->y, BATCH, kind == OPT_ADAM ? 1e-3f : 0.01f);
  }
  train_state_download(&d, w, &o);
  memcpy(w_out, optim_eval_point(&o, w), s->n * 4);
  ws_free(&ws);
  train_state_free(&d);
  optim_free(&o);
  free(w); free(g);
}

static void test_optim_train(void) {
  NEED_GPU();
  setup_t s;
  setup(&s);
  for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
    const opt_kind_t kind = kinds[ki];
    side_t c = {malloc(s.n * 4), malloc(OPT_STEPS * sizeof(double))};
    side_t g = {malloc(s.n * 4), malloc(OPT_STEPS * sizeof(double))};
    if (!c.w || !c.loss || !g.w || !g.loss) { fprintf(stderr, "out of memory\n"); exit(1); }
    train_optim(&s, &CPU_KERNELS, kind, OPT_STEPS, c.w, c.loss);
    train_optim(&s, &kernels_cuda, kind, OPT_STEPS, g.w, g.loss);
    const double moved = max_abs_diff(c.w, s.w0, s.n), apart = max_abs_diff(g.w, c.w, s.n);
    const double worst_loss = worst_loss_diff(&g, &c, OPT_STEPS);
    const double w_tol = kind == OPT_ADAM ? 1e-1 : 2e-2, loss_tol = 1e-3;
    printf("  # %s: %d step(s), GPU vs %s: parameters apart %.3g of the distance moved (%.3g), worst loss "
           "difference %.3g relative\n", optim_name(kind), OPT_STEPS, CPU_KERNELS.name, apart / moved, moved, worst_loss);
    EXPECT_MSG(moved > 0 && apart <= w_tol * moved, "%s: GPU parameters %.3g apart from the CPU's, over %.3g of the "
               "%.3g they moved", optim_name(kind), apart, w_tol, moved);
    EXPECT_MSG(worst_loss <= loss_tol, "%s: a step's loss differs by %.3g relative, over %.3g", optim_name(kind),
               worst_loss, loss_tol);
    side_free(&c); side_free(&g);
  }
  teardown(&s);
}

/* What one training step (net_forward + net_backward_step, momentum SGD fused, after a warm-up
 * step) asks of the GPU (cuda_counters_t), on each convolution implementation: today the host
 * waits 3 times a step (the batch's upload, the labels' upload, the loss read back; the backward
 * reuses the uploaded labels), once more per dropout layer (its mask, drawn on the host), and
 * uploads exactly those; the ops stay within 8
 * per layer plus 8 (measured on the emulator's net and on ppasgd-cifar: printed). This is the
 * step with its batch from the host (pdl speed's eager step, PDL_TRAIN_RESIDENT=0): it pins those
 * counts, so that a new wait or upload inside the step is noticed. pdl train's resident steps
 * (2 waits per chunk of steps) are test_resident_steps below. */
static void test_step_counts(void) {
  NEED_GPU();
  setup_t s;
  setup(&s);
  const kernels_t *k = &kernels_cuda;
  const size_t bytes = s.n * sizeof(float);
  float *w = k->alloc(bytes), *g = k->alloc(bytes), *v = k->alloc(bytes);
  k->upload(w, s.w0, bytes);
  const char *impl0 = cuda_conv_impl();
  static const char *const impls[] = {"im2col", "cudnn", "auto"};
  for (int m = 0; m < 3; m++) {
    if (cuda_conv_set_impl(impls[m]) != 0) continue;
    workspace_t ws;
    ws_init(&ws, &s.net, BATCH, 1, k, 7);
    const net_step_t st = {.lr = 0.01f, .mu = 0.9f, .wd = 0.0f, .v = v};
    rng_t r;
    rng_seed(&r, 5, 0);
    cuda_counters_t c0, c1;
    for (int t = 0; t < 2; t++) {
      new_batch(&s, &r);
      if (t == 1) { cuda_sync(); cuda_counters_get(&c0); }
      net_forward(&ws, w, s.x, s.y, BATCH, 1, NULL);
      net_backward_step(&ws, w, g, s.y, BATCH, 1.0f / BATCH, &st);
    }
    cuda_counters_get(&c1);
    const long ops = c1.ops - c0.ops, syncs = c1.syncs - c0.syncs;
    /* the batch, its labels, and each dropout layer's mask (drawn on the host) */
    size_t want_h2d = (size_t)BATCH * (s.img * sizeof(float) + sizeof(int));
    long want_syncs = 3;
    for (int l = 0; l < s.net.nlayers; l++)
      if (s.net.L[l].type == L_DROPOUT) {
        want_h2d += (size_t)BATCH * s.net.L[l].oc * s.net.L[l].oh * s.net.L[l].ow * sizeof(float);
        want_syncs++;
      }
    const size_t h2d = c1.h2d_bytes - c0.h2d_bytes;
    const long budget = 8L * s.net.nlayers + 8;
    printf("  # %s, conv %s: one step = %ld GPU ops (budget %ld for %d layers), %ld host waits, %zu bytes up, %zu down\n",
           s.net.name, impls[m], ops, budget, s.net.nlayers, syncs, h2d, c1.d2h_bytes - c0.d2h_bytes);
    EXPECT_MSG(syncs == want_syncs, "conv %s: %ld host waits in a step, want %ld (batch, labels, loss, masks)",
               impls[m], syncs, want_syncs);
    EXPECT_MSG(h2d == want_h2d, "conv %s: %zu bytes uploaded in a step, want %zu (the batch, its labels, the dropout "
               "masks)", impls[m], h2d, want_h2d);
    EXPECT_MSG(ops > 0 && ops <= budget, "conv %s: %ld GPU ops in a step, budget %ld", impls[m], ops, budget);
    ws_free(&ws);
  }
  cuda_conv_set_impl(impl0);
  k->release(w); k->release(g); k->release(v);
  teardown(&s);
}

/* One step captured as a CUDA graph and replayed (cuda_graph_*, as pdl speed --graph) against the
 * same steps run eagerly, from the same weights on the same batch (resident on the device after
 * the first, eager, step), with a learning rate that changes at every step (graph_lr: the graph
 * reads it from the device, cuda_lr_resident / cuda_lr_set): the parameters must be the same bits
 * after the last step, and the last loss (left on the device, cuda_loss_defer) the same.
 * A net without dropout (a mask drawn on the host would be uploaded, which a capture refuses). */
#ifdef PDL_CUDA_EMU
#define GRAPH_SPEC "leaky C4 P C6k3p0 Pc F12 S5"
#define GRAPH_STEPS 4
#else
#define GRAPH_SPEC "ppasgd-cifar"
#define GRAPH_STEPS 100
#endif
static float graph_lr(int t) { return 0.01f * (1.0f + 0.5f * (float)((t * 7) % 5 - 2) / 2.0f); } /* 0.005..0.015 */
static void graph_side(const net_t *net, const float *w0, const float *x, const int *y, int graph, float *w_out,
                       double *last_loss) {
  const kernels_t *k = &kernels_cuda;
  const size_t bytes = net->nparams * sizeof(float);
  float *w = k->alloc(bytes), *g = k->alloc(bytes), *v = k->alloc(bytes);
  k->upload(w, w0, bytes);
  workspace_t ws;
  ws_init(&ws, net, BATCH, 1, k, 7);
  net_step_t st = {.lr = graph_lr(0), .mu = 0.9f, .wd = 0.0f, .v = v};
  double loss = net_forward(&ws, w, x, y, BATCH, 1, NULL);   /* step 1 eager on both sides */
  net_backward_step(&ws, w, g, y, BATCH, 1.0f / BATCH, &st);
  void *gr = NULL;
  if (graph) {
    cuda_loss_defer(1);
    cuda_lr_resident(1);
    st.lr = 1e9f;   /* the value captured, never used: the replays read cuda_lr_set's */
    cuda_graph_begin();
    EXPECT(isnan(net_forward(&ws, w, NULL, y, BATCH, 1, NULL)));
    net_backward_step(&ws, w, g, y, BATCH, 1.0f / BATCH, &st);
    gr = cuda_graph_end();
  }
  for (int t = 1; t < GRAPH_STEPS; t++) {
    st.lr = graph_lr(t);
    if (gr) { cuda_lr_set(st.lr); cuda_graph_launch(gr); }
    else {
      loss = net_forward(&ws, w, NULL, y, BATCH, 1, NULL);
      net_backward_step(&ws, w, g, y, BATCH, 1.0f / BATCH, &st);
    }
  }
  if (gr) { loss = cuda_loss_last(); cuda_graph_free(gr); cuda_loss_defer(0); cuda_lr_resident(0); }
  *last_loss = loss;
  k->download(w_out, w, bytes);
  ws_free(&ws);
  k->release(w); k->release(g); k->release(v);
}
static void test_graph_step(void) {
  NEED_GPU();
  net_t net;
  net_build(&net, GRAPH_SPEC, IN_C, IN_H, IN_W);
  const size_t n = net.nparams, img = (size_t)IN_C * IN_H * IN_W;
  float *w0 = malloc(n * 4), *x = malloc(BATCH * img * 4), *we = malloc(n * 4), *wg = malloc(n * 4);
  int *y = malloc(BATCH * sizeof(int));
  if (!w0 || !x || !we || !wg || !y) { fprintf(stderr, "out of memory\n"); exit(1); }
  net_init_params(&net, w0, 3);
  rng_t r;
  rng_seed(&r, 11, 0);
  for (size_t i = 0; i < BATCH * img; i++) x[i] = (float)rng_normal(&r);
  for (int b = 0; b < BATCH; b++) y[b] = (int)rng_below(&r, (uint64_t)net.classes);
  double le, lg;
  cuda_counters_t c0, c1;
  graph_side(&net, w0, x, y, 0, we, &le);
  cuda_counters_get(&c0);
  graph_side(&net, w0, x, y, 1, wg, &lg);
  cuda_counters_get(&c1);
  size_t differ = 0;
  for (size_t i = 0; i < n; i++) differ += memcmp(&we[i], &wg[i], 4) != 0;
  printf("  # %s, %d steps (1 eager, then %s): %zu of %zu parameters differ from the eager run's, last loss %.9g "
         "(eager %.9g); %ld host waits in the graph side\n", net.name, GRAPH_STEPS, "graph replays, lr changing every step", differ, n,
         lg / BATCH, le / BATCH, c1.syncs - c0.syncs);
  EXPECT_MSG(differ == 0, "%zu of %zu parameters differ between the graph replays and the eager steps", differ, n);
  EXPECT_MSG(lg == le, "last loss %.17g from the graph, %.17g eager", lg, le);
  free(w0); free(x); free(we); free(wg); free(y);
}

/* Resident batches (issue 35 B: train_state_steps, net_gather, softmax_xent_forward_acc): a data
 * set on the device, RES_K steps gathered there from one upload of their indices, the losses read
 * back once, against the same steps through train_state_step with each batch uploaded from the
 * host, on the same table: the parameters (and the optimizer's evaluation point) must be the same
 * bits and every step's loss the same double, for msgd (the update fused into the backward), nag
 * (a gradient point) and adam (an unfused update). And the chunk must ask for exactly one upload
 * (the indices and the zeroed loss slots) and one read back: 2 host waits for RES_K steps, where
 * the per-step path takes 3 a step. A net without dropout (its masks are drawn on the host). */
#define RES_N 23   /* examples in the resident set */
#define RES_K 6    /* steps in the chunk */
static void resident_side(const net_t *net, const float *w0, const dataset_t *ds, const int *idx, opt_kind_t kind,
                          int resident, float *w_out, double *loss, cuda_counters_t *dc) {
  const kernels_t *k = &kernels_cuda;
  const size_t n = net->nparams, img = (size_t)ds->c * ds->h * ds->w;
  float *w = malloc(n * 4), *g = calloc(n, 4), *x = malloc(BATCH * img * 4), lr[RES_K];
  int *y = malloc(BATCH * sizeof(int));
  if (!w || !g || !x || !y) { fprintf(stderr, "out of memory\n"); exit(1); }
  memcpy(w, w0, n * 4);
  optim_t o;
  optim_init(&o, kind, n, 0.9f, 1e-4f);
  train_state_t d;
  train_state_init(&d, k, w, g, &o);
  train_state_upload(&d, w, &o);
  workspace_t ws;
  ws_init(&ws, net, BATCH, 1, k, 7);
  resident_set_t rs;
  resident_set_init(&rs, k, ds);
  for (int j = 0; j < RES_K; j++) lr[j] = (kind == OPT_ADAM ? 1e-3f : 0.01f) * (1.0f + 0.1f * (float)j);
  cuda_counters_t c0, c1;
  cuda_sync();
  cuda_counters_get(&c0);
  if (resident) train_state_steps(&d, &ws, &rs, idx, RES_K, BATCH, lr, loss);
  else
    for (int j = 0; j < RES_K; j++) {
      for (int b = 0; b < BATCH; b++) {
        const int e = idx[j * BATCH + b];
        memcpy(x + (size_t)b * img, ds->x + (size_t)e * img, img * 4);
        y[b] = ds->y[e];
      }
      loss[j] = train_state_step(&d, &ws, x, y, BATCH, lr[j]);
    }
  cuda_counters_get(&c1);
  dc->ops = c1.ops - c0.ops; dc->syncs = c1.syncs - c0.syncs;
  dc->h2d_bytes = c1.h2d_bytes - c0.h2d_bytes; dc->d2h_bytes = c1.d2h_bytes - c0.d2h_bytes;
  train_state_download(&d, w, &o);
  memcpy(w_out, optim_eval_point(&o, w), n * 4);
  resident_set_free(&rs);
  ws_free(&ws);
  train_state_free(&d);
  optim_free(&o);
  free(w); free(g); free(x); free(y);
}
static void resident_data(const net_t *net, dataset_t *ds, int n, uint64_t seed) {
  memset(ds, 0, sizeof *ds);
  ds->n = n; ds->c = IN_C; ds->h = IN_H; ds->w = IN_W; ds->classes = net->classes;
  const size_t img = (size_t)IN_C * IN_H * IN_W;
  ds->x = malloc((size_t)n * img * 4); ds->y = malloc((size_t)n * sizeof(int));
  if (!ds->x || !ds->y) { fprintf(stderr, "out of memory\n"); exit(1); }
  rng_t r;
  rng_seed(&r, seed, 0);
  for (size_t i = 0; i < (size_t)n * img; i++) ds->x[i] = (float)rng_normal(&r);
  for (int i = 0; i < n; i++) ds->y[i] = (int)rng_below(&r, (uint64_t)net->classes);
}
static void test_resident_steps(void) {
  NEED_GPU();
  net_t net;
  net_build(&net, GRAPH_SPEC, IN_C, IN_H, IN_W);
  const size_t n = net.nparams;
  dataset_t ds;
  resident_data(&net, &ds, RES_N, 13);
  int idx[RES_K * BATCH];
  rng_t r;
  rng_seed(&r, 17, 0);
  for (int i = 0; i < RES_K * BATCH; i++) idx[i] = (int)rng_below(&r, RES_N);
  float *w0 = malloc(n * 4), *wh = malloc(n * 4), *wr = malloc(n * 4);
  if (!w0 || !wh || !wr) { fprintf(stderr, "out of memory\n"); exit(1); }
  net_init_params(&net, w0, 5);
  static const opt_kind_t rk[] = {OPT_MSGD, OPT_NAG, OPT_ADAM};
  for (int ki = 0; ki < 3; ki++) {
    double lh[RES_K], lr_[RES_K];
    cuda_counters_t ch, cr;
    resident_side(&net, w0, &ds, idx, rk[ki], 0, wh, lh, &ch);
    resident_side(&net, w0, &ds, idx, rk[ki], 1, wr, lr_, &cr);
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += memcmp(&wh[i], &wr[i], 4) != 0;
    int ldiff = 0;
    for (int j = 0; j < RES_K; j++) ldiff += memcmp(&lh[j], &lr_[j], sizeof(double)) != 0;
    const size_t want_h2d = (size_t)RES_K * (3 * sizeof(double) + BATCH * sizeof(int));
    printf("  # %s, %s, %d steps: %zu of %zu parameters and %d losses differ; per-step uploads: %ld waits, %zu bytes up, "
           "%ld ops; resident: %ld waits, %zu bytes up, %zu down, %ld ops\n", net.name, optim_name(rk[ki]), RES_K, differ,
           n, ldiff, ch.syncs, ch.h2d_bytes, ch.ops, cr.syncs, cr.h2d_bytes, cr.d2h_bytes, cr.ops);
    EXPECT_MSG(differ == 0, "%s: %zu of %zu parameters differ between resident and uploaded batches", optim_name(rk[ki]),
               differ, n);
    EXPECT_MSG(ldiff == 0, "%s: %d of %d step losses differ (resident %.17g, uploaded %.17g at the last)",
               optim_name(rk[ki]), ldiff, RES_K, lr_[RES_K - 1], lh[RES_K - 1]);
    EXPECT_MSG(cr.syncs == 2, "%s: %ld host waits for %d resident steps, want 2 (one upload, one read back)",
               optim_name(rk[ki]), cr.syncs, RES_K);
    EXPECT_MSG(cr.h2d_bytes == want_h2d, "%s: %zu bytes uploaded for %d resident steps, want %zu (indices, loss slots)",
               optim_name(rk[ki]), cr.h2d_bytes, RES_K, want_h2d);
    EXPECT_MSG(cr.d2h_bytes == (size_t)RES_K * 3 * sizeof(double), "%s: %zu bytes read back, want the %d loss slots",
               optim_name(rk[ki]), cr.d2h_bytes, RES_K);
  }
  free(w0); free(wh); free(wr); free(ds.x); free(ds.y);
}

/* Evaluation on the device (issue 35 F, net_evaluate_ws): a resident set of EVAL_N examples in
 * batches of EVAL_B (the last one short) against net_evaluate on a host copy through the same
 * table (probabilities downloaded, the argmax on the host): the same error and the same loss bits,
 * with one upload (the zeroed sums) and one read back, however many batches. Then one label made
 * bad: the evaluation must refuse it (checked on the host path here: die() ends the process, so
 * the device path's count is checked through the accumulator itself). */
#define EVAL_N 37
#define EVAL_B 8
static void test_eval_ws(void) {
  NEED_GPU();
  const kernels_t *k = &kernels_cuda;
  net_t net;
  net_build(&net, GRAPH_SPEC, IN_C, IN_H, IN_W);
  const size_t n = net.nparams;
  dataset_t ds;
  resident_data(&net, &ds, EVAL_N, 19);
  float *w0 = malloc(n * 4);
  if (!w0) { fprintf(stderr, "out of memory\n"); exit(1); }
  net_init_params(&net, w0, 8);
  float *w = k->alloc(n * 4);
  k->upload(w, w0, n * 4);
  workspace_t ws;
  ws_init(&ws, &net, EVAL_B, 1, k, 7);
  resident_set_t rs;
  resident_set_init(&rs, k, &ds);
  double eh, lh, er, lr_;
  net_evaluate(&ws, w, ds.x, ds.y, EVAL_N, &eh, &lh);
  cuda_counters_t c0, c1;
  cuda_sync();
  cuda_counters_get(&c0);
  net_evaluate_ws(&ws, w, rs.x, rs.y, EVAL_N, &er, &lr_);
  cuda_counters_get(&c1);
  printf("  # %s, %d examples in batches of %d: host argmax err %.17g loss %.17g; on the device err %.17g loss %.17g; "
         "%ld host waits, %zu bytes up\n", net.name, EVAL_N, EVAL_B, eh, lh, er, lr_, c1.syncs - c0.syncs,
         c1.h2d_bytes - c0.h2d_bytes);
  EXPECT_MSG(er == eh && lr_ == lh, "device evaluation err %.17g loss %.17g, host %.17g %.17g", er, lr_, eh, lh);
  EXPECT_MSG(c1.syncs - c0.syncs == 2, "%ld host waits in a device evaluation, want 2", c1.syncs - c0.syncs);
  /* a bad label: the accumulator's third sum counts it (net_evaluate_ws dies on it) */
  int bad = net.classes + 3;
  k->upload(rs.y + 4, &bad, sizeof bad);
  double h[3] = {0, 0, 0};
  k->upload(ws.acc, h, sizeof h);
  k->copy(ws.a[0], rs.x, (size_t)EVAL_B * IN_C * IN_H * IN_W * 4);
  k->copy(ws.ylab, rs.y, EVAL_B * sizeof(int));
  EXPECT(isnan(net_forward(&ws, w, NULL, NULL, EVAL_B, 0, NULL)));
  k->download(h, ws.acc, sizeof h);
  EXPECT_MSG(h[2] == 1 && isnan(h[0]), "a label outside [0, %d): counted %g, loss %g", net.classes, h[2], h[0]);
  resident_set_free(&rs);
  ws_free(&ws);
  k->release(w);
  free(w0); free(ds.x); free(ds.y);
}

/* Resident chunks replayed as CUDA graphs (train_state_steps) when something between two chunks
 * replaces a buffer the graph addresses: here an evaluation at a batch large enough to grow the
 * context's scratch (the softmax's per-row losses), as pdl train's evaluation can. The graph must
 * be captured again (cuda_buffers_epoch), not replayed with the freed address: under the
 * emulator's ASan a replay would be a heap-use-after-free. Chunks: eager, captured, [evaluation],
 * re-captured; the parameters must equal those of the same chunks run eagerly (PDL_TRAIN_GRAPH=0). */
#define STALE_EVAL_N 700   /* rows: more than the context scratch's first 4096 bytes hold */
static void stale_side(const net_t *net, const float *w0, const dataset_t *ds, const dataset_t *big, const int *idx,
                       int graphs, float *w_out, long *launches) {
  const kernels_t *k = &kernels_cuda;
  const size_t n = net->nparams;
  float *w = malloc(n * 4), *g = calloc(n, 4), lr[RES_K];
  double loss[RES_K], err, el;
  if (!w || !g) { fprintf(stderr, "out of memory\n"); exit(1); }
  memcpy(w, w0, n * 4);
  optim_t o;
  optim_init(&o, OPT_MSGD, n, 0.9f, 0.0f);
  train_state_t d;
  train_state_init(&d, k, w, g, &o);
  train_state_upload(&d, w, &o);
  workspace_t ws, ews;
  ws_init(&ws, net, BATCH, 1, k, 7);
  ws_init(&ews, net, STALE_EVAL_N, 1, k, 7);
  resident_set_t rs, rb;
  resident_set_init(&rs, k, ds);
  resident_set_init(&rb, k, big);
  for (int j = 0; j < RES_K; j++) lr[j] = 0.01f;
  setenv("PDL_TRAIN_GRAPH", graphs ? "1" : "0", 1);
  for (int c = 0; c < 3; c++) {
    train_state_steps(&d, &ws, &rs, idx, RES_K, BATCH, lr, loss);
    if (c == 1) net_evaluate_ws(&ews, d.w, rb.x, rb.y, rb.n, &err, &el);   /* grows the scratch */
  }
  unsetenv("PDL_TRAIN_GRAPH");
  *launches = d.graph_launches;
  train_state_download(&d, w, &o);
  memcpy(w_out, w, n * 4);
  resident_set_free(&rs); resident_set_free(&rb);
  ws_free(&ws); ws_free(&ews);
  train_state_free(&d);
  optim_free(&o);
  free(w); free(g);
}
static void test_graph_stale(void) {
  NEED_GPU();
  net_t net;
  net_build(&net, GRAPH_SPEC, IN_C, IN_H, IN_W);
  const size_t n = net.nparams;
  dataset_t ds, big;
  resident_data(&net, &ds, RES_N, 13);
  resident_data(&net, &big, STALE_EVAL_N, 14);
  int idx[RES_K * BATCH];
  rng_t r;
  rng_seed(&r, 23, 0);
  for (int i = 0; i < RES_K * BATCH; i++) idx[i] = (int)rng_below(&r, RES_N);
  float *w0 = malloc(n * 4), *we = malloc(n * 4), *wg = malloc(n * 4);
  if (!w0 || !we || !wg) { fprintf(stderr, "out of memory\n"); exit(1); }
  net_init_params(&net, w0, 6);
  long le, lg;
  const long e0 = cuda_buffers_epoch();   /* the graph side first: its evaluation grows the scratch */
  stale_side(&net, w0, &ds, &big, idx, 1, wg, &lg);
  const long e1 = cuda_buffers_epoch();
  stale_side(&net, w0, &ds, &big, idx, 0, we, &le);
  size_t differ = 0;
  for (size_t i = 0; i < n; i++) differ += memcmp(&we[i], &wg[i], 4) != 0;
  printf("  # 3 chunks of %d steps, an evaluation of %d rows after the second: %ld graph launches (eager side %ld), "
         "buffers epoch %ld -> %ld -> %ld, %zu of %zu parameters differ from the eager chunks\n", RES_K, STALE_EVAL_N,
         lg, le, e0, e1, cuda_buffers_epoch(), differ, n);
  EXPECT_MSG(e1 > e0, "the evaluation of %d rows did not grow the context's buffers (epoch %ld -> %ld): the test "
             "checks nothing", STALE_EVAL_N, e0, e1);
  EXPECT_MSG(le == 0 && lg == 2, "graph launches: %ld with graphs (want 2: captured, then re-captured after the "
             "evaluation), %ld without", lg, le);
  EXPECT_MSG(differ == 0, "%zu of %zu parameters differ between graph and eager chunks", differ, n);
  free(w0); free(we); free(wg); free(ds.x); free(ds.y); free(big.x); free(big.y);
}

#else /* built without CUDA */
#define DEFINE_SKIP(fn) static void fn(void) { SKIP_NO_GPU("skipped: no CUDA device (built without CUDA)"); }
NET_TESTS(DEFINE_SKIP)
#endif

int main(void) {
#ifdef PDL_HAVE_CUDA
  g_ndev = gpu_test_devices();
#endif
  RUN(test_one_step);
  RUN(test_two_steps);
  RUN(test_many_steps);
  RUN(test_optim_updates);
  RUN(test_optim_train);
  RUN(test_step_counts);
  RUN(test_graph_step);
  RUN(test_resident_steps);
  RUN(test_eval_ws);
  RUN(test_graph_stale);
  RUN(test_bn_net);
  RUN(test_strided_net);
#ifdef PDL_HAVE_CUDA
  if (g_ndev > 0) cuda_thread_release();
#endif
  return harness_exit();
}
