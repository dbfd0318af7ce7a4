/* test_core.c — the training core above the kernels: spec parsing, whole-net gradients
 * (finite differences on the reference path and on the fast path with Winograd convs; fast
 * path against the reference), optimizer
 * steps against hand-computed values, and bit-identical repeat training steps. */
#include "harness.h"
#include "core/model.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_layers.h"
#include "reference/ref.h"
#include "optim/optim.h"
#include "util/vec.h"
#include "util/util.h"
#include "algo/algo.h"

static void fill(float *v, size_t n, uint64_t seed, float scale) {
  rng_t r; rng_seed(&r, seed, 3);
  for (size_t i = 0; i < n; i++) v[i] = scale * rng_normal(&r);
}

static void test_spec_parsing(void) {
  net_t n;
  net_build(&n, "C32 C32 P C64 P C128 P F256 F256 S10", 1, 28, 28);
  /* convs: 1*32*9+32, 32*32*9+32, 32*64*9+64, 64*128*9+128; fc 128*3*3 -> 256, 256 -> 256, 256 -> 10 */
  size_t want = (9 * 32 + 32) + (32 * 32 * 9 + 32) + (32 * 64 * 9 + 64) + (64 * 128 * 9 + 128) +
                (1152 * 256 + 256) + (256 * 256 + 256) + (256 * 10 + 10);
  EXPECT_MSG(n.nparams == want, "nparams %zu want %zu", n.nparams, want);
  EXPECT(n.classes == 10);
  net_build(&n, "easgd-cifar", 1, 28, 28);
  /* (3,28)C(64,24)P(64,12)C(128,8)P(128,4)C(64,2)D(256,1)S(10,1) with 1 input channel */
  int found = 0;
  for (int i = 0; i < n.nlayers; i++)
    if (n.L[i].type == L_CONV && n.L[i].k == 3) { EXPECT(n.L[i].oh == 2 && n.L[i].oc == 64); found = 1; }
  EXPECT(found);
  net_build(&n, "C8k5p0 Pc F16 S3", 2, 9, 7);  /* 9x7 -> 5x3 -> ceil 3x2 */
  EXPECT(n.L[2].oh == 3 && n.L[2].ow == 2);
  /* FLOPs of a single conv + fc: 2*MAC each */
  net_build(&n, "C4 S2", 1, 5, 5);
  double conv = 2.0 * 4 * 25 * 9, fc = 2.0 * 100 * 2;
  EXPECT_NEAR(n.flops_fwd, conv + fc, 1e-9, "integer flop counts");
}

/* Whole-net gradient check: central differences of the summed loss over every parameter
 * (sampled), with the given kernels and threads. */
static void net_gradient_fd(const char *spec, const kernels_t *k, int threads) {
  net_t n; net_build(&n, spec, 2, 7, 6);
  int B = 3;
  size_t np = n.nparams, img = 2 * 7 * 6;
  float *w = xmalloc(np * 4), *g = xcalloc(np, 4), *x = xmalloc(B * img * 4);
  int y[3] = {0, 2, 1};
  net_init_params(&n, w, 5);
  fill(w, np, 11, 0.3f);  /* nonzero biases too */
  fill(x, B * img, 12, 1.0f);
  workspace_t ws; ws_init(&ws, &n, B, threads, k, 1);
  net_forward(&ws, w, x, y, B, 1, NULL);
  net_backward(&ws, w, g, y, B, 1.0f);
  int checked = 0, bad = 0;
  for (size_t i = 0; i < np; i += 1 + np / 60) {
    float keep = w[i], h = 1e-3f;
    w[i] = keep + h; double lp = net_forward(&ws, w, x, y, B, 0, NULL);
    w[i] = keep - h; double lm = net_forward(&ws, w, x, y, B, 0, NULL);
    w[i] = keep;
    double fd = (lp - lm) / (2 * h);
    /* float32 loss (~1e-7 relative) over 2h = 2e-3 leaves ~1e-3 absolute noise; kinks of
     * leaky ReLU / max-pool inside [w-h, w+h] bend a few points by a few %, hence the count. */
    if (fabs(fd - g[i]) > 5e-3 + 3e-2 * fabs(fd)) bad++;
    checked++;
  }
  EXPECT_MSG(bad <= checked / 10, "%s (%s, %d threads): %d of %d parameters disagree with finite differences", spec,
             k->name, threads, bad, checked);
  ws_free(&ws); xfree(w); xfree(g); xfree(x);
}

static void test_net_gradient_fd(void) {
  net_gradient_fd("leaky C3 P F6 S4", &kernels_ref, 1);
  net_gradient_fd("relu C2k3p0 Pc C3k1p0 F5 S3", &kernels_ref, 1);
}

/* The same check on the fast path with every 3x3 conv on Winograd F(2x2,3x3) (pad 1 and pad
 * 0, fused activations, odd map sizes), 1 and 2 threads: its gradients are those of its own
 * forward. */
static void test_net_gradient_fd_winograd(void) {
  cpu_conv_set_mode(CPU_CONV_WINOGRAD);
  for (int t = 1; t <= 2; t++) {
    net_gradient_fd("leaky C5 C9 P F6 S4", &kernels_cpu, t);
    net_gradient_fd("relu C4k3p0 C6 Pc F5 S3", &kernels_cpu, t);
  }
  cpu_conv_set_mode(CPU_CONV_AUTO);
}

/* The fast path's whole-net loss and gradients agree with the reference. */
static void test_net_cpu_vs_ref(void) {
  net_t n; net_build(&n, "leaky C8 C8 P C16 Pc F32 D0.3 S10", 1, 13, 11);
  int B = 5; size_t np = n.nparams, img = 13 * 11;
  float *w = xmalloc(np * 4), *gr = xcalloc(np, 4), *gc = xcalloc(np, 4), *x = xmalloc(B * img * 4);
  int y[5] = {1, 3, 5, 7, 9};
  net_init_params(&n, w, 3); fill(x, B * img, 4, 1.0f);
  for (int t = 1; t <= 2; t++) {
    workspace_t wr, wc;
    ws_init(&wr, &n, B, 1, &kernels_ref, 9); ws_init(&wc, &n, B, t, &kernels_cpu, 9);
    double lr_ = net_forward(&wr, w, x, y, B, 1, NULL), lc = net_forward(&wc, w, x, y, B, 1, NULL);
    net_backward(&wr, w, gr, y, B, 0.2f); net_backward(&wc, w, gc, y, B, 0.2f);
    /* float sums in different orders (GEMM blocking vs naive loops): ~1e-6 relative per op */
    EXPECT_NEAR(lc, lr_, 1e-4 * fabs(lr_), "summation order differs between GEMM and loops");
    double e = max_rel_err(gc, gr, np, 1e-3);
    EXPECT_MSG(e < 1e-3, "threads %d: max relative gradient error %g (float summation order)", t, e);
    ws_free(&wr); ws_free(&wc);
  }
  xfree(w); xfree(gr); xfree(gc); xfree(x);
}

/* The kernel table is the only door (issue 18): the fused entries are optional. Without the
 * conv + act + pool entries model.c takes conv + act, and without those the layers one by one:
 * conv + act gives the same bits as the pair (layers.h), conv + act + pool the same up to
 * rounding (its db sums only the pooled maxima). Every workspace buffer, the input upload, the
 * dropout masks and the argmax's download go through the table's memory entries. The counting backend below is the CPU table
 * with host_memory = 0 and memory entries that count (as a device backend would be driven). */
static long mem_live, mem_allocs, mem_up, mem_down;
static void *count_alloc(size_t n) { mem_live++; mem_allocs++; return host_alloc(n); }
static void count_release(void *p) { mem_live--; host_release(p); }
static void count_up(void *d, const void *s, size_t n) { mem_up += (long)n; host_copy(d, s, n); }
static void count_down(void *d, const void *s, size_t n) { mem_down += (long)n; host_copy(d, s, n); }

/* one training step; returns how many convs ran fused with their activation (1) or with act + pool (2), as 10 x
 * the latter + the former */
static int run_net(const net_t *n, const kernels_t *k, const float *w, const float *x, const int *y, int B, int T,
                   float *g, double *loss, int *hits) {
  workspace_t ws; ws_init(&ws, n, B, T, k, 9);
  *loss = net_forward(&ws, w, x, y, B, 1, hits);
  net_backward(&ws, w, g, y, B, 0.5f);
  int f = 0;
  for (int i = 0; i < n->nlayers; i++) f += ws.fused[i] == 2 ? 10 : ws.fused[i] == 1;
  ws_free(&ws);
  return f;
}

static void test_kernel_table_seam(void) {
  /* 28x28 so the 3x3 conv + act + pool takes Winograd and the fused pool entry; dropout too */
  net_t n; net_build(&n, "leaky C8 C8 P C16 P F32 D0.3 S10", 1, 28, 28);
  int B = 4; size_t np = n.nparams, img = 28 * 28;
  float *w = xmalloc(np * 4), *x = xmalloc(B * img * 4), *g1 = xcalloc(np, 4), *g2 = xcalloc(np, 4), *g3 = xcalloc(np, 4);
  float *g4 = xcalloc(np, 4);
  int drop = -1;
  for (int i = 0; i < n.nlayers; i++) if (n.L[i].type == L_DROPOUT) drop = i;
  EXPECT(drop >= 0);
  int y[4] = {1, 3, 5, 7};
  net_init_params(&n, w, 3); fill(x, B * img, 4, 1.0f);
  kernels_t nopool = kernels_cpu;
  nopool.name = "cpu without fused pools";
  nopool.conv_act_pool_fusable = NULL; nopool.conv_act_pool_forward = NULL; nopool.conv_act_pool_backward = NULL;
  kernels_t plain = nopool;
  plain.name = "cpu without fused entries";
  plain.conv_act_forward = NULL; plain.conv_act_backward = NULL;
  kernels_t counted = kernels_cpu;
  counted.name = "cpu through counted memory";
  counted.alloc = count_alloc; counted.release = count_release; counted.upload = count_up;
  counted.download = count_down; counted.host_memory = 0;
  for (int T = 1; T <= 2; T++) {
    double l1, l2, l3, l4; int h1, h2, h3, h4;
    memset(g1, 0, np * 4); memset(g2, 0, np * 4); memset(g3, 0, np * 4); memset(g4, 0, np * 4);
    mem_live = mem_allocs = mem_up = mem_down = 0;
    int f1 = run_net(&n, &kernels_cpu, w, x, y, B, T, g1, &l1, &h1);
    int f2 = run_net(&n, &plain, w, x, y, B, T, g2, &l2, &h2);
    run_net(&n, &counted, w, x, y, B, T, g3, &l3, &h3);
    int f4 = run_net(&n, &nopool, w, x, y, B, T, g4, &l4, &h4);
    /* C8 + act alone, C8 + act + pool, C16 + act + pool (14x14: Winograd) */
    EXPECT_MSG(f1 == 21 && f2 == 0 && f4 == 3, "T=%d: fused convs (10 x with pool + without) %d, %d, %d; want 21, 0, 3",
               T, f1, f2, f4);
    EXPECT_MSG(l4 == l2 && h4 == h2 && !memcmp(g4, g2, np * 4),
               "T=%d: fused conv + act differs from the unfused layers (loss %.9g vs %.9g)", T, l4, l2);
    double e = max_rel_err(g1, g2, np, 1e-3);
    EXPECT_MSG(fabs(l1 - l2) <= 1e-6 * fabs(l2) && h1 == h2 && e < 1e-4,
               "T=%d: fused conv + act + pool vs the unfused layers: loss %.9g vs %.9g, gradients %.2g (rounding only)",
               T, l1, l2, e);
    EXPECT_MSG(l1 == l3 && h1 == h3 && !memcmp(g1, g3, np * 4), "T=%d: the counted-memory backend differs", T);
    EXPECT_MSG(mem_allocs > 10 && mem_live == 0, "T=%d: %ld allocations through the table, %ld not released", T,
               mem_allocs, mem_live);
    /* the input batch and the dropout mask went up, the probabilities came down for the argmax */
    long want_up = drop < 0 ? -1 : (long)(B * img + (size_t)B * n.L[drop].c * n.L[drop].h * n.L[drop].w) * 4;
    EXPECT_MSG(mem_up == want_up, "T=%d: uploaded %ld bytes, want %ld", T, mem_up, want_up);
    EXPECT_MSG(mem_down == (long)B * n.classes * 4, "T=%d: downloaded %ld bytes, want %ld", T, mem_down,
               (long)B * n.classes * 4);
  }
  xfree(w); xfree(x); xfree(g1); xfree(g2); xfree(g3); xfree(g4);
}

static void test_optimizers(void) {
  float w[2], g[2];
  optim_t o;
  /* sgd with weight decay: w -= lr*(g + wd*w) */
  optim_init(&o, OPT_SGD, 2, 0, 0.1f); w[0] = 1; w[1] = -2; g[0] = 0.5f; g[1] = 1;
  optim_step(&o, w, g, 0.1f);
  EXPECT_NEAR(w[0], 1 - 0.1 * (0.5 + 0.1), 1e-7, "float rounding"); EXPECT_NEAR(w[1], -2 - 0.1 * (1 - 0.2), 1e-7, "float rounding");
  optim_free(&o);
  /* msgd: M = mu M - lr g; w += M, two steps */
  optim_init(&o, OPT_MSGD, 1, 0.9f, 0); w[0] = 1;
  g[0] = 1; optim_step(&o, w, g, 0.1f);  /* M=-0.1, w=0.9 */
  g[0] = 2; optim_step(&o, w, g, 0.1f);  /* M=-0.09-0.2=-0.29, w=0.61 */
  EXPECT_NEAR(w[0], 0.61, 1e-6, "float rounding"); EXPECT_NEAR(o.M[0], -0.29, 1e-6, "float rounding");
  optim_free(&o);
  /* nag: the gradient point is w + mu M */
  optim_init(&o, OPT_NAG, 1, 0.9f, 0); w[0] = 1;
  EXPECT(optim_grad_point(&o, w) == w);
  g[0] = 1; optim_step(&o, w, g, 0.1f);  /* M=-0.1, w=0.9, what = 0.9 - 0.09 = 0.81 */
  EXPECT_NEAR(optim_grad_point(&o, w)[0], 0.81, 1e-6, "float rounding");
  optim_free(&o);
  /* adam, one step: m = 0.1 g, v = 0.001 g^2, bias-corrected step = lr * g/|g| */
  optim_init(&o, OPT_ADAM, 1, 0, 0); w[0] = 1; g[0] = 4;
  optim_step(&o, w, g, 0.01f);
  EXPECT_NEAR(w[0], 1 - 0.01, 1e-6, "eps 1e-8 against |g| = 4");
  optim_free(&o);
  /* asgd: average of iterates 1-0.1, then -0.2 */
  optim_init(&o, OPT_ASGD, 1, 0, 0); w[0] = 1;
  g[0] = 1; optim_step(&o, w, g, 0.1f); g[0] = 2; optim_step(&o, w, g, 0.1f);  /* w: 0.9, 0.7 */
  EXPECT_NEAR(optim_eval_point(&o, w)[0], 0.8, 1e-6, "float rounding");
  optim_free(&o);
  optim_init(&o, OPT_MVASGD, 1, 0, 0); o.mvrate = 0.5f; w[0] = 1;
  g[0] = 1; optim_step(&o, w, g, 0.1f); g[0] = 2; optim_step(&o, w, g, 0.1f);  /* z: 0.9, 0.8 */
  EXPECT_NEAR(optim_eval_point(&o, w)[0], 0.8, 1e-6, "float rounding");
  optim_free(&o);
}

/* The learning-rate schedule (the node loop's loop_lr, the only one): a linear warm-up, then held. */
static float warm_lr(float lr, long step, long warmup) {   /* a loop's loop_lr at that --lr and --warmup */
  run_t r; memset(&r, 0, sizeof r); r.cfg.lr = lr; r.cfg.warmup = warmup;
  loop_t L; memset(&L, 0, sizeof L); L.r = &r;
  return loop_lr(&L, step);
}
static void test_lr_schedule(void) {
  EXPECT_NEAR(warm_lr(1.0f, 0, 4), 0.25, 0, "exact"); EXPECT_NEAR(warm_lr(1.0f, 3, 4), 1.0, 0, "exact");
  EXPECT_NEAR(warm_lr(1.0f, 9, 4), 1.0, 0, "exact"); EXPECT_NEAR(warm_lr(1.0f, 0, 0), 1.0, 0, "exact");
  EXPECT_NEAR(warm_lr(0.05f, 1, 3), 0.05f * 2.0f / 3.0f, 0, "exact: lr (step + 1) / warmup in float");
}

/* optim_step's results, hashed: every kind with and without weight decay, 5 steps of 1001
 * parameters (gradients of mixed scales, so Adam's sqrt(v) + eps sees both sides of eps), FNV-1a
 * over the bits of w, the evaluation point and every state vector. */
static uint64_t fnv_bits(uint64_t h, const float *v, size_t n) {
  if (!v) return h;
  const unsigned char *p = (const unsigned char *)v;
  for (size_t i = 0; i < n * sizeof(float); i++) { h ^= p[i]; h *= 1099511628211ull; }
  return h;
}
static uint64_t optim_hash(opt_kind_t kind, float wd) {
  enum { N = 1001 };
  static float w[N], g[N];
  fill(w, N, 11, 1.0f);
  optim_t o; optim_init(&o, kind, N, 0.9f, wd);
  o.mvrate = 0.25f;
  const float lr = kind == OPT_ADAM ? 1e-3f : 0.05f;
  for (int t = 0; t < 5; t++) {
    fill(g, N, 20 + t, t % 2 ? 1e-2f : 1e-7f);
    optim_step(&o, w, g, warm_lr(lr, t, 3));
  }
  uint64_t h = 1469598103934665603ull;
  h = fnv_bits(h, w, N); h = fnv_bits(h, optim_eval_point(&o, w), N); h = fnv_bits(h, optim_grad_point(&o, w), N);
  h = fnv_bits(h, o.M, N); h = fnv_bits(h, o.V, N); h = fnv_bits(h, o.Z, N);
  optim_free(&o);
  return h;
}
/* The hashes above as optim_step gave them before its updates moved behind the kernel table
 * (issue 36: cb3de49, the loops in optim.c; the table's cpu_*_step must give the same bits, and so
 * must every later change that does not mean to change the optimizers' numerics). Order: kinds as
 * opt_kind_t (sgd, msgd, nag, adam, asgd, mvasgd), each with wd 0 then 1e-3. */
static void test_optim_golden(void) {
  static const uint64_t golden[12] = {
    0x94f9475f86c7586cull, 0xb7e2c1a4293e6e72ull, 0x06dc3d055f2d6b96ull, 0x8f8cfe1965097542ull,
    0x001c59afd6940020ull, 0x5b4a42e20f5c26c6ull, 0x436b2db452459280ull, 0xe78f84a8345e424cull,
    0x94b773f5e0ae3b53ull, 0x2697b98e95a0d147ull, 0xede8d5c97ee99657ull, 0x59890acc36a253e7ull};
  for (int k = 0; k < 6; k++)
    for (int d = 0; d < 2; d++) {
      const uint64_t h = optim_hash((opt_kind_t)k, d ? 1e-3f : 0.0f);
      EXPECT_MSG(h == golden[2 * k + d], "%s, wd %g: optim_step's results hash to 0x%016llx, not the golden "
                 "0x%016llx: the update's arithmetic changed", optim_name((opt_kind_t)k), d ? 1e-3 : 0.0,
                 (unsigned long long)h, (unsigned long long)golden[2 * k + d]);
    }
}

/* nsteps training steps from the same start, the update either after the backward pass
 * (net_backward + optim_step: fused = 0) or inside it (optim_fused_step + net_backward_step);
 * w and the momentum (if any) are left in w and v; returns 1 if g was all zero after every step. */
static int train_steps(const net_t *n, const kernels_t *k, opt_kind_t kind, float wd, int B, int T, int fused,
                       float *w, float *v) {
  size_t np = n->nparams, img = (size_t)n->in_c * n->in_h * n->in_w;
  float *g = xcalloc(np, 4), *x = xmalloc(B * img * 4); int y[8];
  net_init_params(n, w, 5);
  optim_t o; optim_init(&o, kind, np, 0.9f, wd);
  workspace_t ws; ws_init(&ws, n, B, T, k, 3);
  int zero = 1;
  for (int s = 0; s < 3; s++) {
    fill(x, B * img, 50 + s, 1.0f);
    for (int i = 0; i < B; i++) y[i] = (i * 3 + s) % n->classes;
    net_forward(&ws, w, x, y, B, 1, NULL);
    net_step_t st;
    if (fused) {
      EXPECT(optim_fused_step(&o, &st, 0.05f));
      net_backward_step(&ws, w, g, y, B, 1.0f / B, &st);
    } else {
      net_backward(&ws, w, g, y, B, 1.0f / B);
      optim_step(&o, w, g, 0.05f);
    }
    for (size_t i = 0; i < np; i++) zero &= g[i] == 0.0f;
  }
  if (v) memcpy(v, o.M, np * 4);
  EXPECT(o.t == 3);
  ws_free(&ws); optim_free(&o); xfree(g); xfree(x);
  return zero;
}

static void test_backward_step(void) {
  /* Winograd conv + act + pool, a conv + act alone, fc layers whose row counts (32, 7, 10) leave
   * remainders after the kernel's blocks of 4 rows, dropout */
  net_t n; net_build(&n, "leaky C8 C8 P C16 P F32 D0.3 F7 S10", 1, 28, 28);
  size_t np = n.nparams;
  float *w1 = xmalloc(np * 4), *w2 = xmalloc(np * 4), *v1 = xmalloc(np * 4), *v2 = xmalloc(np * 4);
  const struct { opt_kind_t kind; float wd; } opts[] = {{OPT_MSGD, 1e-3f}, {OPT_MSGD, 0}, {OPT_SGD, 1e-3f}, {OPT_SGD, 0}};
  for (int oi = 0; oi < 4; oi++)
    for (int B = 1; B <= 3; B += 2)
      for (int T = 1; T <= 2; T++) {
        const int mom = opts[oi].kind == OPT_MSGD;
        train_steps(&n, &kernels_cpu, opts[oi].kind, opts[oi].wd, B, T, 0, w1, mom ? v1 : NULL);
        int zero = train_steps(&n, &kernels_cpu, opts[oi].kind, opts[oi].wd, B, T, 1, w2, mom ? v2 : NULL);
        EXPECT_MSG(!memcmp(w1, w2, np * 4) && (!mom || !memcmp(v1, v2, np * 4)),
                   "%s wd %g B=%d T=%d: net_backward_step differs from net_backward + optim_step (max rel %.2g)",
                   optim_name(opts[oi].kind), opts[oi].wd, B, T, max_rel_err(w2, w1, np, 1e-3));
        EXPECT_MSG(zero, "%s B=%d T=%d: net_backward_step left a nonzero gradient", optim_name(opts[oi].kind), B, T);
      }
  /* the reference backend: no fused fc entry, its own sgd_step */
  train_steps(&n, &kernels_ref, OPT_MSGD, 1e-3f, 3, 1, 0, w1, v1);
  train_steps(&n, &kernels_ref, OPT_MSGD, 1e-3f, 3, 1, 1, w2, v2);
  EXPECT_MSG(!memcmp(w1, w2, np * 4) && !memcmp(v1, v2, np * 4), "kernels_ref: fused step differs (max rel %.2g)",
             max_rel_err(w2, w1, np, 1e-3));
  /* update_once (the CUDA backend's: one sgd_step over all the parameters after the pass) gives
   * the per-layer updates' values bit for bit, on the CPU table with the flag set */
  for (int oi = 0; oi < 4; oi++) {
    kernels_t once = kernels_cpu;
    once.update_once = 1;
    const int mom = opts[oi].kind == OPT_MSGD;
    train_steps(&n, &kernels_cpu, opts[oi].kind, opts[oi].wd, 3, 2, 1, w1, mom ? v1 : NULL);
    const int zero = train_steps(&n, &once, opts[oi].kind, opts[oi].wd, 3, 2, 1, w2, mom ? v2 : NULL);
    EXPECT_MSG(!memcmp(w1, w2, np * 4) && (!mom || !memcmp(v1, v2, np * 4)) && zero,
               "%s wd %g: update_once differs from the per-layer updates (max rel %.2g) or left a gradient",
               optim_name(opts[oi].kind), opts[oi].wd, max_rel_err(w2, w1, np, 1e-3));
  }
  xfree(w1); xfree(w2); xfree(v1); xfree(v2);

  /* cpu_fc_backward_sgd against the reference fc backward + update, odd shapes, batch 1 and 2 */
  for (int B = 1; B <= 2; B++) {
    const int M = 13, N = 9;
    float w[N * M], b[N], vw[N * M], vb[N], wr[N * M], br[N], vwr[N * M], vbr[N], dw[N * M], db[N], dwr[N * M], dbr[N];
    float in[2 * M], dout[2 * N], din[2 * M], dinr[2 * M];
    fill(w, N * M, 11, 0.5f); fill(b, N, 12, 0.5f); fill(vw, N * M, 13, 0.1f); fill(vb, N, 14, 0.1f);
    fill(in, 2 * M, 15, 1.0f); fill(dout, 2 * N, 16, 1.0f);
    memcpy(wr, w, sizeof w); memcpy(br, b, sizeof b); memcpy(vwr, vw, sizeof vw); memcpy(vbr, vb, sizeof vb);
    memset(dw, 0, sizeof dw); memset(db, 0, sizeof db); memset(dwr, 0, sizeof dwr); memset(dbr, 0, sizeof dbr);
    cpu_set_threads(1);
    cpu_fc_backward_sgd(din, w, b, dw, db, vw, vb, dout, in, B, M, N, 0.1f, 0.9f, 1e-2f);
    ref_fc_backward(dinr, dwr, dbr, dout, in, wr, B, M, N);
    ref_sgd_step(wr, dwr, vwr, (size_t)N * M, 0.1f, 0.9f, 1e-2f);
    ref_sgd_step(br, dbr, vbr, N, 0.1f, 0.9f, 1e-2f);
    double e = max_rel_err(w, wr, N * M, 1e-3), eb = max_rel_err(b, br, N, 1e-3), ed = max_rel_err(din, dinr, B * M, 1e-3);
    double ev = max_rel_err(vw, vwr, N * M, 1e-3);
    EXPECT_MSG(e < 1e-5 && eb < 1e-5 && ed < 1e-5 && ev < 1e-5,
               "B=%d: cpu_fc_backward_sgd vs reference: w %.2g b %.2g din %.2g v %.2g", B, e, eb, ed, ev);
    int zero = 1;
    for (int i = 0; i < N * M; i++) zero &= dw[i] == 0.0f;
    for (int i = 0; i < N; i++) zero &= db[i] == 0.0f;
    EXPECT_MSG(zero, "B=%d: cpu_fc_backward_sgd left a nonzero gradient", B);
  }

  /* batch 1 on 1-3 threads at a size where the fc kernels go parallel (the threads split the
   * columns): the bits of cpu_fc_backward + cpu_sgd_step on the same thread count, odd M, N */
  for (int T = 1; T <= 3; T++) {
    const int M = 301, N = 259;
    const size_t nw = (size_t)N * M;
    float *w = xmalloc(nw * 4), *vw = xmalloc(nw * 4), *wu = xmalloc(nw * 4), *vwu = xmalloc(nw * 4);
    float *dw = xcalloc(nw, 4), *dwu = xcalloc(nw, 4);
    float b[259], vb[259], bu[259], vbu[259], db[259], dbu[259], in[301], dout[259], din[301], dinu[301];
    fill(w, nw, 21, 0.5f); fill(vw, nw, 22, 0.1f); fill(b, N, 23, 0.5f); fill(vb, N, 24, 0.1f);
    fill(in, M, 25, 1.0f); fill(dout, N, 26, 1.0f);
    memcpy(wu, w, nw * 4); memcpy(vwu, vw, nw * 4); memcpy(bu, b, sizeof b); memcpy(vbu, vb, sizeof vb);
    memset(db, 0, sizeof db); memset(dbu, 0, sizeof dbu);
    cpu_set_threads(T);
    cpu_fc_backward_sgd(din, w, b, dw, db, vw, vb, dout, in, 1, M, N, 0.1f, 0.9f, 1e-2f);
    cpu_fc_backward(dinu, dwu, dbu, dout, in, wu, 1, M, N);
    cpu_sgd_step(wu, dwu, vwu, nw, 0.1f, 0.9f, 1e-2f);
    cpu_sgd_step(bu, dbu, vbu, N, 0.1f, 0.9f, 1e-2f);
    EXPECT_MSG(!memcmp(w, wu, nw * 4) && !memcmp(vw, vwu, nw * 4) && !memcmp(b, bu, sizeof b) &&
                   !memcmp(vb, vbu, sizeof vb) && !memcmp(din, dinu, sizeof din),
               "T=%d: cpu_fc_backward_sgd at batch 1 differs from cpu_fc_backward + cpu_sgd_step", T);
    int zero = 1;
    for (size_t i = 0; i < nw; i++) zero &= dw[i] == 0.0f;
    EXPECT_MSG(zero, "T=%d: cpu_fc_backward_sgd wrote dw", T);
    xfree(w); xfree(vw); xfree(wu); xfree(vwu); xfree(dw); xfree(dwu);
  }
  cpu_set_threads(1);
}

/* Same seed and thread count: bit-identical parameters after several steps. */
static void run_steps(float *w, int threads) {
  net_t n; net_build(&n, "leaky C8 P C16 P F32 D0.5 S10", 1, 28, 28);
  int B = 16; size_t np = n.nparams, img = 784;
  float *g = xmalloc(np * 4), *x = xmalloc(B * img * 4); int y[16];
  net_init_params(&n, w, 1);
  optim_t o; optim_init(&o, OPT_NAG, np, 0.9f, 1e-4f);
  workspace_t ws; ws_init(&ws, &n, B, threads, &kernels_cpu, 1);
  for (int s = 0; s < 5; s++) {
    fill(x, B * img, 100 + s, 1.0f);
    for (int i = 0; i < B; i++) y[i] = (i * 7 + s) % 10;
    vec_zero(g, np);
    const float *gp = optim_grad_point(&o, w);
    net_forward(&ws, gp, x, y, B, 1, NULL);
    net_backward(&ws, gp, g, y, B, 1.0f / B);
    optim_step(&o, w, g, 0.05f);
  }
  ws_free(&ws); optim_free(&o); xfree(g); xfree(x);
}
static void test_bit_identical(void) {
  net_t n; net_build(&n, "leaky C8 P C16 P F32 D0.5 S10", 1, 28, 28);
  for (int t = 1; t <= 2; t++) {
    float *a = xmalloc(n.nparams * 4), *b = xmalloc(n.nparams * 4);
    run_steps(a, t); run_steps(b, t);
    EXPECT_MSG(memcmp(a, b, n.nparams * 4) == 0, "threads %d: repeat runs differ", t);
    xfree(a); xfree(b);
  }
}

int main(void) {
  RUN(test_spec_parsing);
  RUN(test_net_gradient_fd);
  RUN(test_net_gradient_fd_winograd);
  RUN(test_net_cpu_vs_ref);
  RUN(test_kernel_table_seam);
  RUN(test_backward_step);
  RUN(test_optimizers);
  RUN(test_lr_schedule);
  RUN(test_optim_golden);
  RUN(test_bit_identical);
  return harness_exit();
}
