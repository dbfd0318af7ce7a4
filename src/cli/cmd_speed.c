/* speed.c — `pdl speed` and `pdl calibrate`: training-step throughput of a net (forward +
 * backward + momentum update on random inputs) after warm-up, median over repeats, beside
 * OpenBLAS sgemm GFLOP/s measured in the same run with the same thread count.
 * GFLOP/s are nominal: images/s x the net's direct-convolution/FC FLOPs per image (pdl nets),
 * whatever algorithm ran; Winograd convs do about half of those conv FLOPs, so the nominal rate
 * can exceed sgemm's. The conv algorithm (PDL_CONV, kernels/cpu/cpu_conv.c) is recorded.
 * calibrate stores the figure as this machine's device rate for the sim runtime. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "core/model.h"
#include "core/run.h"
#include "cli/speed_data.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_layers.h"
#include "reference/ref.h"
#include "kfac/kfac.h"
#include "optim/optim.h"
#include "util/util.h"
#include "util/vec.h"

/* --input CxHxW: three positive integers (C <= 4096, H and W <= 65536), nothing else. */
static void parse_input(const char *v, int *c, int *h, int *w) {
  if (!v) die_usage("--input needs a value CxHxW");
  long d[3]; const char *p = v;
  for (int k = 0; k < 3; k++) {
    char *end; errno = 0;
    if (!isdigit((unsigned char)*p)) die_usage("--input '%s': want CxHxW of positive integers, e.g. 1x28x28", v);
    d[k] = strtol(p, &end, 10);
    if (errno || d[k] < 1 || d[k] > (k ? 65536 : 4096)) die_usage("--input '%s': %s out of range (C 1..4096, H and W 1..65536)", v, k ? (k == 1 ? "H" : "W") : "C");
    p = end;
    if (k < 2 && *p++ != 'x') die_usage("--input '%s': want CxHxW, e.g. 1x28x28", v);
  }
  if (*p) die_usage("--input '%s': want CxHxW, e.g. 1x28x28 (trailing '%s')", v, p);
  *c = (int)d[0]; *h = (int)d[1]; *w = (int)d[2];
}

/* Median GFLOP/s of an n x n x n sgemm on `threads` OpenBLAS threads. */
double measure_sgemm_gflops(int n, int threads, int repeats) {
  float *a = xmalloc((size_t)n * n * 4), *b = xmalloc((size_t)n * n * 4), *c = xmalloc((size_t)n * n * 4);
  for (size_t i = 0; i < (size_t)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; }
  openblas_set_num_threads(threads);
  double t[32]; if (repeats > 32) repeats = 32;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
  for (int r = 0; r < repeats; r++) {
    int reps = 0; double t0 = now_s(), el;
    do { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n); reps++; }
    while ((el = now_s() - t0) < 0.1);
    t[r] = 2.0 * n * n * (double)n * reps / el / 1e9;
  }
  openblas_set_num_threads(1);
  xfree(a); xfree(b); xfree(c);
  return median(t, repeats);
}

/* The memory bandwidth the update can hope for: GB/s of the momentum update itself (optim_step,
 * msgd: read w, g, M; write w, M, g = 0: 24 bytes per parameter) on fresh arrays of n floats, best
 * of 20 runs, each after a 16 MiB pass that evicts the arrays from L2 as a training step does (its
 * activations and the other layers' weights pass through). A plain STREAM triad of the same size
 * is printed beside it for reference. The calling thread's kernel thread count, as the step's. */
static void measure_update_bandwidth(size_t n, double *update_gbps, double *triad_gbps) {
  const size_t big = (size_t)4 << 20;
  optim_t o;
  optim_init(&o, OPT_MSGD, n, 0.9f, 0.0f);
  float *w = xcalloc(n, 4), *g = xcalloc(n, 4), *x = xcalloc(big, 4);
  double bu = 1e30, bt = 1e30;
  for (int r = 0; r < 20; r++) {
    for (size_t i = 0; i < big; i += 16) x[i] += 1.0f;
    double t0 = now_s();
    optim_step(&o, w, g, 1e-6f);
    double t = now_s() - t0;
    if (t < bu) bu = t;
    for (size_t i = 0; i < big; i += 16) x[i] += 1.0f;
    t0 = now_s();
#pragma omp simd
    for (size_t i = 0; i < n; i++) w[i] = o.M[i] + 0.5f * g[i];
    t = now_s() - t0;
    if (t < bt) bt = t;
  }
  *update_gbps = 24.0 * n / bu / 1e9; *triad_gbps = 12.0 * n / bt / 1e9;
  optim_free(&o); xfree(w); xfree(g); xfree(x);
}

typedef struct { double img_s, img_s_min, img_s_max, gflops; } speed_t;

/* The timed steps' input: B normal images and uniform labels from a fixed seed. */
static void random_batch(const net_t *net, int B, float *x, int *y) {
  size_t img = (size_t)net->in_c * net->in_h * net->in_w;
  rng_t r; rng_seed(&r, 7, 0);
  for (size_t i = 0; i < (size_t)B * img; i++) x[i] = rng_normal(&r);
  for (int i = 0; i < B; i++) y[i] = (int)rng_below(&r, (uint64_t)net->classes);
}

/* the device counters (kernels_t.counters) at the start and the end of measure_train_speed's timed
 * windows (device backends) */
static double g_counts0[4], g_counts1[4];
/* --graph: measure_train_speed captures one step as a graph (kernels_t.graph_*) after the warm-up
 * window and times its replays (the batch resident on the device, the loss left there); the last
 * replay's loss */
static double g_graph_loss;
static int g_graph;
/* --host-batch: a device's eager step takes its batch from the host and waits for its loss, every
 * step (pdl train with PDL_TRAIN_RESIDENT=0); without it, pdl train's resident step (the batch
 * gathered on the device from a resident copy, the loss left there: no upload, no wait) */
static int g_host_batch;
/* --chunk K: pdl train's own resident loop (train_state_steps): chunks of K steps from one upload
 * of their indices and one read back of their losses, replayed as one CUDA graph each after the
 * first (sgd/msgd, no dropout) */
static int g_chunk;
static long g_chunk_graphs;   /* chunks that ran as a graph replay */

/* Median images/s of full training steps of net at batch B on `threads` threads, through backend k
 * (kernels_cpu, or kernels_cuda with the parameters, gradients and momentum on the device:
 * train_state_t; --update separate is the CPU's only). With prof != NULL
 * ([2 * NET_MAX_LAYERS + 2], zeroed by the caller) the timed windows also add each layer's forward
 * and backward seconds (workspace_t.prof), the update's (prof[2 * NET_MAX_LAYERS]) and the
 * windows' total (prof[2 * NET_MAX_LAYERS + 1]); *steps_out gets the number of timed steps. Each
 * window ends after the backend's queued work (k->sync). */
static speed_t measure_train_speed(const net_t *net, const kernels_t *k, int B, int threads, int repeats,
                                   double window_s, int fused, double *prof, long *steps_out) {
  size_t n = net->nparams, img = (size_t)net->in_c * net->in_h * net->in_w;
  float *w = xmalloc(n * 4), *g = xcalloc(n, 4), *x = xmalloc((size_t)B * img * 4);  /* optim_step re-zeroes g */
  int *y = xmalloc((size_t)B * sizeof(int));
  random_batch(net, B, x, y);
  net_init_params(net, w, 1);
  optim_t o; optim_init(&o, OPT_MSGD, n, 0.9f, 0);
  train_state_t d; train_state_init(&d, k, w, g, &o);
  train_state_upload(&d, w, &o);
  SHAPE_ASSERT(fused || !d.device);
  workspace_t ws; ws_init(&ws, net, B, threads, k, 1);
  float *xs = NULL; int *ys = NULL, *idx = NULL;   /* the resident copy of the batch and its rows */
  resident_set_t rs; memset(&rs, 0, sizeof rs);
  int *cidx = NULL; float *clr = NULL; double *closs = NULL;   /* --chunk: [K][B] rows, [K] lrs and losses */
  if (!k->host_memory && g_chunk > 0) {
    const dataset_t one = {.n = B, .c = net->in_c, .h = net->in_h, .w = net->in_w, .classes = net->classes, .x = x, .y = y};
    resident_set_init(&rs, k, &one);
    cidx = xmalloc((size_t)g_chunk * B * sizeof(int)); clr = xmalloc((size_t)g_chunk * sizeof(float));
    closs = xmalloc((size_t)g_chunk * sizeof(double));
    for (int j = 0; j < g_chunk; j++) { clr[j] = 1e-4f; for (int b = 0; b < B; b++) cidx[(size_t)j * B + b] = b; }
  } else if (!k->host_memory && !g_host_batch && !g_graph) {   /* --graph captures its own resident step */
    int *h = xmalloc((size_t)B * sizeof(int));
    for (int b = 0; b < B; b++) h[b] = b;
    xs = k->alloc((size_t)B * img * 4); ys = k->alloc((size_t)B * sizeof(int)); idx = k->alloc((size_t)B * sizeof(int));
    k->upload(xs, x, (size_t)B * img * 4); k->upload(ys, y, (size_t)B * sizeof(int)); k->upload(idx, h, (size_t)B * sizeof(int));
    xfree(h);
  }
  double v[64]; if (repeats > 64) repeats = 64;
  long timed = 0;
  void *graph = NULL;
  for (int rep = -1; rep < repeats; rep++) {  /* rep -1 is the warm-up window */
    if (rep == 0 && g_graph && !k->host_memory) {
      /* one step captured: x stays in the workspace's input buffer (the warm-up uploaded it), the
       * labels on the device (unchanged, so not uploaded again), the loss on the device */
      k->loss_defer(1);
      k->lr_resident(1);   /* the replays read the lr from the device, as a schedule would set it */
      k->graph_begin();
      net_forward(&ws, d.w, NULL, y, B, 1, NULL);
      net_step_t st;
      SHAPE_ASSERT(optim_fused_step(d.o, &st, 1e-4f));
      net_backward_step(&ws, d.w, d.g, y, B, 1.0f / B, &st);
      graph = k->graph_end();
    }
    if (k->counters && rep == 0) k->counters(g_counts0);
    int steps = 0; double t0 = now_s(), el;
    ws.prof = rep >= 0 ? prof : NULL;
    do {
      if (graph) { k->lr_set(1e-4f); k->graph_launch(graph); steps++; continue; }
      if (rs.k) { train_state_steps(&d, &ws, &rs, cidx, g_chunk, B, clr, closs); steps += g_chunk; continue; }
      if (xs) net_gather(&ws, xs, ys, idx, B);   /* resident: y NULL below, the loss into ws.acc */
      net_forward(&ws, d.w, xs ? NULL : x, xs ? NULL : y, B, 1, NULL);
      net_step_t st;
      if (fused && optim_fused_step(d.o, &st, 1e-4f)) {   /* as pdl train: the update inside the backward */
        net_backward_step(&ws, d.w, d.g, xs ? NULL : y, B, 1.0f / B, &st);
      } else {
        net_backward(&ws, w, g, y, B, 1.0f / B);
        const double tu = prof && rep >= 0 ? now_s() : 0.0;
        optim_step(&o, w, g, 1e-4f);
        if (prof && rep >= 0) prof[2 * NET_MAX_LAYERS] += now_s() - tu;
      }
      steps++;
    } while ((el = now_s() - t0) < window_s);
    if (k->sync) { k->sync(); el = now_s() - t0; }
    if (rep >= 0) { v[rep] = steps * (double)B / el; timed += steps; if (prof) prof[2 * NET_MAX_LAYERS + 1] += el; }
  }
  if (steps_out) *steps_out = timed;
  if (xs) { k->release(xs); k->release(ys); k->release(idx); }
  if (rs.k) { g_chunk_graphs = d.graph_launches; resident_set_free(&rs); xfree(cidx); xfree(clr); xfree(closs); }
  if (k->counters) k->counters(g_counts1);
  if (graph) {
    g_graph_loss = k->loss_last() / B;
    k->graph_free(graph); k->loss_defer(0); k->lr_resident(0);
  }
  speed_t s;
  double lo = v[0], hi = v[0];
  for (int i = 0; i < repeats; i++) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i]; }
  s.img_s = median(v, repeats); s.img_s_min = lo; s.img_s_max = hi;
  s.gflops = s.img_s * net->flops_train / 1e9;
  ws_free(&ws); train_state_free(&d); optim_free(&o); xfree(w); xfree(g); xfree(x); xfree(y);
  return s;
}

/* A K-FAC step's parts, median ms per step over the timed windows, and the kinds' GFLOP/s
 * (flops as kfac.c counts them: ssyrk's m(m+1)T per image, n³ per inversion, 2 dg da (dg + da)
 * per preconditioned layer). */
typedef struct { double fb, factors, inverse, precond, update, step, gf_factors, gf_inverse, gf_precond; } kfac_speed_t;

static kfac_speed_t measure_kfac_speed(const net_t *net, int B, int threads, int repeats, double window_s) {
  size_t n = net->nparams, img = (size_t)net->in_c * net->in_h * net->in_w;
  float *w = xmalloc(n * 4), *g = xcalloc(n, 4), *dw = xcalloc(n, 4), *x = xmalloc((size_t)B * img * 4);
  int *y = xmalloc((size_t)B * sizeof(int));
  random_batch(net, B, x, y);
  net_init_params(net, w, 1);
  optim_t o; optim_init(&o, OPT_MSGD, n, 0.9f, 0);
  workspace_t ws; ws_init(&ws, net, B, threads, kernels_for(NULL, -1, NULL, NULL, 0), 1);
  ws.unfused = 1;
  kfac_cfg_t kc = {1e-3f, 0, 1, KFAC_INV_FAST};
  kfac_t k; kfac_init(&k, net, &kc, threads);
  size_t maxb = 0;
  for (int l = 0; l < k.nl; l++) if (k.L[l].bundle > maxb) maxb = k.L[l].bundle;
  float *bd = xmalloc(maxb * sizeof(float)), *m = xmalloc(maxb * sizeof(float));
  double v[6][64]; if (repeats > 64) repeats = 64;
  long step = 0;
  for (int rep = -1; rep < repeats; rep++) {
    double t[6] = {0}, t0 = now_s();
    kfac_stats_t s0 = k.st;
    int steps = 0;
    do {
      double a = now_s();
      net_forward(&ws, w, x, y, B, 1, NULL);
      net_backward(&ws, w, g, y, B, 1.0f / B);
      t[0] += now_s() - a;
      for (int l = 0; l < k.nl; l++) {
        kfac_bundle(&k, l, &ws, B, 1.0f / B, g, bd);
        kfac_owner_update(&k, l, bd, step, m);
        kfac_to_flat(&k, l, m, dw);
      }
      a = now_s();
      optim_step(&o, w, dw, 1e-4f);
      vec_zero(g, n);
      t[4] += now_s() - a;
      steps++; step++;
    } while (now_s() - t0 < window_s);
    if (rep < 0) continue;
    t[1] = k.st.factors - s0.factors; t[2] = k.st.inverse - s0.inverse; t[3] = k.st.precond - s0.precond;
    t[5] = now_s() - t0;
    for (int i = 0; i < 6; i++) v[i][rep] = 1e3 * t[i] / steps;
  }
  kfac_speed_t s;
  s.fb = median(v[0], repeats); s.factors = median(v[1], repeats); s.inverse = median(v[2], repeats);
  s.precond = median(v[3], repeats); s.update = median(v[4], repeats); s.step = median(v[5], repeats);
  /* flops per step are fixed for a net and batch: from the counters over all the steps run */
  double per = 1.0 / (double)step;
  s.gf_factors = k.st.fl_factors * per / (s.factors * 1e-3) / 1e9;
  s.gf_inverse = k.st.fl_inverse * per / (s.inverse * 1e-3) / 1e9;
  s.gf_precond = k.st.fl_precond * per / (s.precond * 1e-3) / 1e9;
  kfac_free(&k); ws_free(&ws); optim_free(&o);
  xfree(w); xfree(g); xfree(dw); xfree(x); xfree(y); xfree(bd); xfree(m);
  return s;
}

/* GFLOP/s (n³ flops) of cpu_spd_inverse at order n on `threads` threads, median of 5 windows. */
static double measure_inverse_gflops(int n, int threads) {
  float *a = xmalloc((size_t)n * n * 4), *inv = xmalloc((size_t)n * n * 4);
  float *sc = xmalloc((cpu_spd_inverse_scratch_floats(n) + 16) * 4);
  double *ad = xmalloc((size_t)n * n * 8);
  ref_spd_random(ad, NULL, n, 1e3, 5);
  for (size_t i = 0; i < (size_t)n * n; i++) a[i] = (float)ad[i];
  cpu_set_threads(threads);
  double v[5];
  cpu_spd_inverse(inv, a, n, sc);
  for (int r = 0; r < 5; r++) {
    int reps = 0; double t0 = now_s(), el;
    do { cpu_spd_inverse(inv, a, n, sc); reps++; } while ((el = now_s() - t0) < 0.05);
    v[r] = (double)n * n * n * reps / el / 1e9;
  }
  xfree(a); xfree(inv); xfree(sc); xfree(ad);
  return median(v, 5);
}

/* Per-step totals (ms) of a profiled run: the step (mean over the timed windows), convolutions
 * (with their fused activation/pool), fc layers, all layers, and the update. */
typedef struct { double step, conv, fc, layers, update; } prof_totals_t;

static prof_totals_t profile_totals(const net_t *net, const double *prof, long steps) {
  prof_totals_t p = {0, 0, 0, 0, 0};
  if (steps <= 0) return p;
  p.step = 1e3 * prof[2 * NET_MAX_LAYERS + 1] / steps;
  p.update = 1e3 * prof[2 * NET_MAX_LAYERS] / steps;
  for (int l = 0; l < net->nlayers; l++) {
    const double ms = 1e3 * (prof[l] + prof[NET_MAX_LAYERS + l]) / steps;
    p.layers += ms;
    if (net->L[l].type == L_CONV) p.conv += ms;
    else if (net->L[l].type == L_FC || net->L[l].type == L_SOFTMAX) p.fc += ms;
  }
  return p;
}

/* One stderr table: per layer, forward and backward milliseconds per step, share of the step and
 * nominal GFLOP/s (direct-convolution FLOPs, as pdl nets; "-" for layers without FLOPs). */
static void print_profile(const net_t *net, int B, int fused, const double *prof, long steps, const prof_totals_t *tot) {
  const double step_ms = tot->step;
  fprintf(stderr, "%-3s %-10s %-16s %9s %9s %7s %11s\n", "#", "layer", "shape (out)", "fwd ms", "bwd ms", "step%",
          "GFLOP/s");
  for (int l = 0; l < net->nlayers; l++) {
    const layer_t *L = &net->L[l];
    const double f = 1e3 * prof[l] / steps, b = 1e3 * prof[NET_MAX_LAYERS + l] / steps;
    if (L->type != L_CONV && f == 0 && b == 0) continue; /* ran inside a fused conv */
    static const char *const names[] = {"conv", "pool", "fc", "act", "dropout", "fc+softmax", "batchnorm", "gap"};
    char nm[16], shp[32], gf[16] = "-";
    if (L->type == L_CONV) snprintf(nm, sizeof nm, "conv%dx%d", L->k, L->k);
    else snprintf(nm, sizeof nm, "%s", names[L->type]);
    if (L->type == L_CONV && l + 1 < net->nlayers && net->L[l + 1].type == L_ACT && prof[l + 1] == 0) {
      const int pooled = l + 2 < net->nlayers && net->L[l + 2].type == L_POOL && prof[l + 2] == 0;
      snprintf(nm + strlen(nm), sizeof nm - strlen(nm), pooled ? "+a+p" : "+act");
    }
    snprintf(shp, sizeof shp, "%dx%dx%d", L->oc, L->oh, L->ow);
    double mac = 0;
    if (L->type == L_CONV) mac = (double)L->oc * L->oh * L->ow * L->c * L->k * L->k;
    if (L->type == L_FC || L->type == L_SOFTMAX) mac = (double)L->oc * L->c * L->h * L->w;
    if (mac > 0 && f + b > 0) /* forward 2 mac, backward 4 mac (2 without an input gradient) */
      snprintf(gf, sizeof gf, "%.1f", (2 * mac + (l == 0 ? 2 : 4) * mac) * B / ((f + b) * 1e-3) / 1e9);
    fprintf(stderr, "%-3d %-10s %-16s %9.3f %9.3f %6.1f%% %11s\n", l, nm, shp, f, b, 100 * (f + b) / step_ms, gf);
  }
  const double u = tot->update, r = step_ms - tot->layers - u;
  if (fused)
    fprintf(stderr, "    %-10s %-16s %9s %9s %7s   (fused: each layer's share is in its bwd ms)\n", "update",
            "(momentum)", "", "-", "-");
  else
    fprintf(stderr, "    %-10s %-16s %9s %9.3f %6.1f%%\n", "update", "(momentum)", "", u, 100 * u / step_ms);
  fprintf(stderr, "    %-10s %-16s %9s %9.3f %6.1f%%   (input copy, loop, timers)\n", "rest", "", "", r,
          100 * r / step_ms);
  fprintf(stderr, "    step %.3f ms at batch %d (mean of %ld timed steps)\n", step_ms, B, steps);
}

/* The device's SGEMM GFLOP/s at n^3 (through k's fc_forward: out = in w^T + b, whose bias pass is
 * n^2 beside 2 n^3; on CUDA cuBLAS's, FP32: no TF32), median of `reps` windows of 10. */
static double measure_device_gflops(const kernels_t *k, int n, int reps) {
  const size_t nn = (size_t)n * n;
  float *h = xmalloc(nn * sizeof *h);
  rng_t r; rng_seed(&r, 11, 0);
  for (size_t i = 0; i < nn; i++) h[i] = rng_normal(&r);
  float *a = k->alloc(nn * sizeof(float)), *b = k->alloc(nn * sizeof(float)), *c = k->alloc(nn * sizeof(float));
  float *bias = k->alloc((size_t)n * sizeof(float));   /* zero-filled */
  k->upload(a, h, nn * sizeof(float)); k->upload(b, h, nn * sizeof(float));
  for (int i = 0; i < 2; i++) k->fc_forward(c, a, b, bias, n, n, n);
  if (k->sync) k->sync();
  double v[16]; if (reps > 16) reps = 16;
  for (int rep = 0; rep < reps; rep++) {
    const double t0 = now_s();
    for (int i = 0; i < 10; i++) k->fc_forward(c, a, b, bias, n, n, n);
    if (k->sync) k->sync();
    v[rep] = 10 * 2.0 * n * (double)nn / (now_s() - t0) / 1e9;
  }
  k->release(a); k->release(b); k->release(c); k->release(bias); xfree(h);
  return median(v, reps);
}

/* pdl speed --device NAME[:N] (a device backend of the registry): measure_train_speed's step
 * (forward, then the backward with the momentum update fused, lr 1e-4, mu 0.9) through its table,
 * parameters, gradients and momentum in its memory; the batch gathered on the device from a
 * resident copy and the loss left there, as pdl train's resident steps (host_batch: uploaded, and
 * the loss waited for, every step) -- or, with graph, one captured step is replayed (the batch
 * resident, the loss left on the device). Beside the device's SGEMM (its fc_forward).
 * Prints the summary line on stderr and the JSON line on stdout. */
static int speed_device(const net_t *net, int B, int R, const device_spec_t *dv, int profile, int graph, int host_batch,
                        int chunk) {
  char desc[256];
  const int dev = kernels_device_index(dv, 0, "--device");
  const kernels_t *k = kernels_for(dv, dev, "--device", desc, sizeof desc);
  if (graph && !(k->graph_begin && k->loss_defer && k->lr_resident))
    die_usage("speed --graph: the %s backend has no graphs of a step", k->name);
  static double prof[2 * NET_MAX_LAYERS + 2];
  long timed = 0;
  g_graph = graph;
  g_host_batch = host_batch;
  g_chunk = chunk;
  const speed_t sp = measure_train_speed(net, k, B, 1, R, B >= 32 ? 0.5 : 0.25, 1, profile ? prof : NULL, &timed);
  const double img_s = sp.img_s, lo = sp.img_s_min, hi = sp.img_s_max, gflops = sp.gflops;
  const double sg = measure_device_gflops(k, 4096, 5);
  const char *impl = k->conv_impl ? k->conv_impl() : "";
  const char *conv = !strcmp(impl, "cudnn") ? "cuDNN (FP32, deterministic)"
                     : !strcmp(impl, "auto") ? "auto (the faster of cuDNN and im2col + cuBLAS per shape)" : "im2col + cuBLAS";
  const double per = timed > 0 ? 1.0 / (double)timed : 0.0;
  const double ops = (g_counts1[0] - g_counts0[0]) * per, syncs = (g_counts1[1] - g_counts0[1]) * per;
  const double h2d = (g_counts1[2] - g_counts0[2]) * per;
  fprintf(stderr, "%s batch %d on %s:%d (%s), conv %s, update fused: %.1f img/s (%.1f-%.1f), %.1f "
                  "nominal GFLOP/s = %.1f%% of cuBLAS SGEMM %.0f GFLOP/s (4096^3, FP32); per step %.1f GPU ops, "
                  "%.1f host waits, %.0f bytes up%s\n",
          net->name, B, dv->backend, dev, desc, conv, img_s, lo, hi, gflops, 100 * gflops / sg, sg, ops, syncs, h2d,
          graph ? "; each step one CUDA graph replay, the batch resident"
                : chunk ? "; pdl train's chunks of --chunk steps (train_state_steps)" : host_batch ? "; the batch uploaded and the loss read back every step" : "; the batch gathered on the device, the loss left there");
  char algos[4096] = "";
  if (k->conv_algos) k->conv_algos(algos, sizeof algos);
  const prof_totals_t tot = profile_totals(net, prof, profile ? timed : 0);
  if (profile) print_profile(net, B, 1, prof, timed, &tot);
  json_t j; json_begin(&j);
  json_str(&j, "event", "speed");
  json_str(&j, "net", net->name); json_str(&j, "net_spec", net->spec);
  json_str(&j, "device", dv->backend); json_int(&j, "cuda_device", dev);
  json_int(&j, "batch", B); json_int(&j, "repeats", R);
  json_num(&j, "img_per_s", img_s); json_num(&j, "img_per_s_min", lo); json_num(&j, "img_per_s_max", hi);
  json_num(&j, "gflops", gflops); json_num(&j, "sgemm_gflops", sg); json_num(&j, "ratio_to_sgemm", gflops / sg);
  json_str(&j, "sgemm", "cuBLAS SGEMM 4096^3 FP32");
  json_num(&j, "flops_train_per_img", net->flops_train);
  json_str(&j, "conv", !strcmp(impl, "im2col") ? "im2col+cublas" : impl); json_str(&j, "update", "fused");
  if (algos[0]) json_str(&j, "cudnn_algos", algos);
  json_num(&j, "gpu_ops_per_step", ops); json_num(&j, "gpu_syncs_per_step", syncs);
  json_num(&j, "h2d_bytes_per_step", h2d);
  json_str(&j, "step_as", graph ? "cuda-graph" : chunk ? "train-chunk" : host_batch ? "eager-host-batch" : "eager");
  if (chunk) { json_int(&j, "chunk", chunk); json_int(&j, "chunk_graph_replays", g_chunk_graphs); }
  if (graph) json_num(&j, "graph_last_loss", g_graph_loss);
  if (profile) {
    json_num(&j, "prof_step_ms", tot.step); json_num(&j, "prof_conv_ms", tot.conv); json_num(&j, "prof_fc_ms", tot.fc);
    json_num(&j, "prof_other_ms", tot.step - tot.conv - tot.fc);
  }
  json_meta(&j);
  printf("%s\n", json_end(&j));
  return 0;
}

static void speed_usage(FILE *f, const char *cmd) {
  fprintf(f, "usage: pdl %s [--net N] [--batch B] [--threads T] [--repeats R] [--input CxHxW] [--profile]\n"
             "       [--update fused|separate] [--algo sgd|kfac] [--device cpu|cuda[:N]] [--graph] [--host-batch] [--chunk K]%s\n"
             "  training-step throughput (forward + backward + momentum update) of net N at batch B\n"
             "  on T OpenMP threads after a warm-up, median (min-max) of R timed windows, beside\n"
             "  OpenBLAS sgemm GFLOP/s (1024^3, T threads) measured in the same run.\n"
             "  --update fused (default, what pdl train does for sgd/msgd) runs each layer's momentum update\n"
             "  inside the backward pass right after that layer (net_backward_step; the fc layers' at batch 1\n"
             "  without storing their gradient); separate runs the backward, then the update over all\n"
             "  parameters (net_backward + optim_step). Both give the same parameters bit for bit.\n"
             "  GFLOP/s are nominal: img/s x the net's direct-convolution FLOPs (pdl nets), so with\n"
             "  Winograd convs (about half the conv FLOPs) they can exceed sgemm's.\n"
             "  PDL_CONV=auto|im2col|winograd|winograd4 picks the conv algorithm (default auto; im2col =\n"
             "  without Winograd, winograd = F(2x2,3x3) only, winograd4 = F(4x4,3x3) only, for comparisons).\n"
             "  PDL_SMM=auto|libxsmm|openblas picks what runs the Winograd GEMMs (default: libxsmm's JIT\n"
             "  kernels where the build has libxsmm, else sgemm); the JSON's wino_gemm says which ran.\n"
             "  --profile also prints, on stderr, each layer's forward and backward ms per step, its share\n"
             "  of the step and its nominal GFLOP/s (timers around every layer: a little slower), and\n"
             "  adds prof_step_ms, prof_conv_ms, prof_fc_ms, prof_update_ms, prof_other_ms to the JSON (fused:\n"
             "  each layer's update is in its own figure and prof_update_ms is 0); with --update separate, the\n"
             "  update's traffic (24 B per parameter: prof_update_bytes, prof_update_gbps); and in both the\n"
             "  separate update on fresh arrays after an L2-evicting pass (mem_update_gbps) and a STREAM triad\n"
             "  of that size (mem_triad_gbps).\n"
             "  --algo kfac also times a K-FAC step (kfac.h) on the same batch: forward/backward, factors,\n"
             "  inversions, preconditioning and update (kfac_*_ms), with the factor, inversion and\n"
             "  preconditioning GFLOP/s (kfac_factors_to_sgemm: the factor GEMMs against sgemm).\n"
             "  --device cuda[:N] times the same step on CUDA device N (kernels/cuda: conv = per shape the faster\n"
             "  of cuDNN (strict FP32, deterministic algorithms) and im2col + cuBLAS; PDL_CUDA_CONV=cudnn|im2col\n"
             "  forces one; fc = cuBLAS;\n"
             "  the fused conv + leaky ReLU; the JSON has the cuDNN algorithms and the GPU ops, host waits and bytes\n"
             "  uploaded per step), parameters, gradients and momentum on the device, and pdl train's resident\n"
             "  step: the batch gathered on the device from a resident copy, the loss left there (no upload,\n"
             "  no wait; --host-batch: uploaded and read back every step, as PDL_TRAIN_RESIDENT=0); beside\n"
             "  cuBLAS SGEMM (4096^3, FP32) measured in the same run.\n"
             "  With --profile each layer's timers wait for the device (a little slower). Not with --algo\n"
             "  kfac or --update separate yet (default cpu).\n"
             "  --graph (with --device cuda): after the warm-up, one step is captured as a CUDA graph and\n"
             "  the timed windows replay it: the batch stays on the device (uploaded by the warm-up), the\n"
             "  loss too (graph_last_loss in the JSON), so a step is one launch and no wait (not with\n"
             "  --profile, whose timers wait).\n"
             "  --chunk K (with --device cuda): pdl train's own resident loop, chunks of K steps each from one\n"
             "  upload of its indices and one read back of its losses, replayed as one CUDA graph after the\n"
             "  first (JSON: step_as train-chunk, chunk_graph_replays).\n"
             "  --data imagenet:DIR[,size=N][,classes=FILE][,aug=...] [--decoders D] (default D = 2): the lazy JPEG\n"
             "  path instead: images decoded per second by D decoder threads (prefetching, data_img.h), and the\n"
             "  share of the net's step (at --batch, --threads) spent waiting for data (cmd_speed_data.c).\n"
             "  Last stdout line: JSON with img_per_s, gflops (nominal), sgemm_gflops, ratio_to_sgemm, conv.\n",
          cmd, strcmp(cmd, "calibrate") ? "" : " [--out FILE]");
  if (!strcmp(cmd, "calibrate"))
    fprintf(f, "  calibrate also writes the figure (default results/calibration/<host>-<net>.json), which\n"
               "  the sim runtime uses with --device-rate calibrated; it always adds the K-FAC kinds' rates\n"
               "  (kfac_rel_*: factors, preconditioning, and inversions at n = 16..1024, each relative to the\n"
               "  training rate), which kfac-dist charges per kind on the sim runtime.\n");
}

static int speed_main(int argc, char **argv, int calibrate) {
  const char *netname = "ppasgd-cifar", *out = NULL, *out_flag = NULL;
  int B = 128, T = (int)sysconf(_SC_NPROCESSORS_ONLN), R = 5, c = 1, h = 28, w = 28, profile = 0, kfac = 0, fused = 1;
  device_spec_t device; parse_device("--device", "cpu", &device);   /* --device: the registry's backend */
  int graph = 0, host_batch = 0, chunk = 0, decoders = 2;
  const char *data = NULL;   /* --data: the lazy JPEG path's rates (cmd_speed_data.c) */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { speed_usage(stdout, argv[0]); return 0; }
    else if (!strcmp(a, "--net")) { if (!v) die_usage("%s needs a value", a); netname = v; i++; }
    else if (!strcmp(a, "--batch")) { B = (int)parse_long(a, v, 1, 1 << 16); i++; }
    else if (!strcmp(a, "--threads")) { T = (int)parse_long(a, v, 1, 1024); i++; }
    else if (!strcmp(a, "--repeats")) { R = (int)parse_long(a, v, 1, 64); i++; }
    else if (!strcmp(a, "--profile")) profile = 1;
    else if (!strcmp(a, "--graph")) graph = 1;
    else if (!strcmp(a, "--host-batch")) host_batch = 1;
    else if (!strcmp(a, "--data")) { if (!v) die_usage("%s needs a value", a); data = v; i++; }
    else if (!strcmp(a, "--decoders")) { decoders = (int)parse_long(a, v, 1, 256); i++; }
    else if (!strcmp(a, "--chunk")) { chunk = (int)parse_long(a, v, 1, 4096); i++; }
    else if (!strcmp(a, "--update")) {
      if (!v || (strcmp(v, "fused") && strcmp(v, "separate")))
        die_usage("--update must be fused or separate, not '%s'", v ? v : "");
      fused = !strcmp(v, "fused"); i++;
    }
    else if (!strcmp(a, "--algo")) {
      if (!v || (strcmp(v, "sgd") && strcmp(v, "kfac"))) die_usage("--algo must be sgd or kfac, not '%s'", v ? v : "");
      kfac = !strcmp(v, "kfac"); i++;
    }
    else if (!strcmp(a, "--input")) { parse_input(v, &c, &h, &w); i++; }
    else if (!strcmp(a, "--device")) {
      if (!v) die_usage("--device needs a value: %s", kernels_device_forms());
      parse_device(a, v, &device); i++;
      if (kernels_device_timing(&device))   /* nothing to time: it computes nothing */
        die_usage("%s --device %s: the timing-only backend computes nothing; it runs under pdl train --runtime sim only", argv[0], v);
    }
    else if (calibrate && !strcmp(a, "--out")) {
      if (!v) die_usage("--out needs a value");
      output_flag("calibrate", &out_flag, &out, a, v); i++;
    }
    else die_usage("%s: unknown flag '%s' (pdl %s --help)", argv[0], a, argv[0]);
  }
  if (data) {
    if (calibrate || !kernels_device_is_host(&device) || kfac || profile || graph || chunk)
      die_usage("%s --data: times the data pipeline beside a plain CPU step (no --device, --algo kfac, --profile, --graph, --chunk)", argv[0]);
    return speed_data(data, netname, B, T, decoders, B >= 32 ? 1.0 : 0.5);
  }
  net_t net; net_build(&net, netname, c, h, w);
  net_check_memory(&net, B);
  const int on_dev = !kernels_device_is_host(&device);
  if (graph && !on_dev) die_usage("%s --graph: CUDA graphs need --device cuda[:N]", argv[0]);
  if (host_batch && (!on_dev || graph))
    die_usage("%s --host-batch: a device's eager step (--device cuda[:N], not --graph)", argv[0]);
  if (chunk && (!on_dev || graph || host_batch || profile))
    die_usage("%s --chunk: pdl train's resident chunks on a device (--device cuda[:N]; not with --graph, --host-batch or "
              "--profile)", argv[0]);
  if (graph && profile) die_usage("%s --graph: not with --profile (its per-layer timers wait for the device)", argv[0]);
  if (on_dev) {
    if (calibrate || kfac || !fused)
      die_usage("%s --device cuda: only the plain training step (and --profile) is timed on a GPU yet (no --algo "
                "kfac, --update separate%s)", argv[0], calibrate ? " or calibrate" : "");
    return speed_device(&net, B, R, &device, profile, graph, host_batch, chunk);
  }
  char cal_path[1024];   /* calibrate: its file, checked before the measurement (minutes) rather than after */
  if (calibrate) {
    char host[256] = "host";
    gethostname(host, sizeof host);
    if (!out) { snprintf(cal_path, sizeof cal_path, "results/calibration/%s-%s.json", host, net.name); out = cal_path; }
    outfile_probe(out, out_flag ? "--out" : "calibration (default --out)");
  }
  double sg = measure_sgemm_gflops(1024, T, 5);
  static double prof[2 * NET_MAX_LAYERS + 2];
  long steps = 0;
  speed_t s = measure_train_speed(&net, kernels_for(NULL, -1, NULL, NULL, 0), B, T, R, B >= 32 ? 0.5 : 0.25, fused, profile ? prof : NULL, &steps);
  double sg2 = measure_sgemm_gflops(1024, T, 5);  /* again after: the machine is noisy */
  double sgm = sg > sg2 ? sg : sg2;
  static const char *const conv_names[] = {"im2col", "auto", "winograd", "winograd4"}; /* by CPU_CONV_* */
  const char *conv = conv_names[cpu_conv_get_mode()];
  fprintf(stderr,
          "%s batch %d threads %d conv %s (Winograd GEMMs: %s), update %s: %.1f img/s (%.1f-%.1f), %.1f nominal "
          "GFLOP/s = %.0f%% of sgemm %.1f GFLOP/s\n",
          net.name, B, T, conv, cpu_smm_name(), fused ? "fused" : "separate", s.img_s, s.img_s_min, s.img_s_max, s.gflops, 100 * s.gflops / sgm, sgm);
  const prof_totals_t tot = profile_totals(&net, prof, profile ? steps : 0);
  if (profile) print_profile(&net, B, fused, prof, steps, &tot);
  json_t j; json_begin(&j);
  json_str(&j, "event", calibrate ? "calibration" : "speed");
  json_str(&j, "net", net.name); json_str(&j, "net_spec", net.spec);
  json_int(&j, "batch", B); json_int(&j, "threads", T); json_int(&j, "repeats", R);
  json_num(&j, "img_per_s", s.img_s); json_num(&j, "img_per_s_min", s.img_s_min); json_num(&j, "img_per_s_max", s.img_s_max);
  json_num(&j, "gflops", s.gflops); json_num(&j, "sgemm_gflops", sgm);
  json_num(&j, "ratio_to_sgemm", s.gflops / sgm);
  json_num(&j, "flops_train_per_img", net.flops_train);
  json_str(&j, "flops_counted", "nominal direct convolution + fc (gflops = img_per_s x flops_train_per_img)");
  json_str(&j, "conv", conv);
  json_str(&j, "wino_gemm", cpu_smm_name());
  json_str(&j, "update", fused ? "fused" : "separate");
  if (kfac || calibrate) {
    /* K-FAC's step, and for the sim runtime its kinds' rates relative to the training step */
    kfac_speed_t ks = measure_kfac_speed(&net, B, T, R < 3 ? R : 3, B >= 32 ? 0.5 : 0.25);
    static const int inv_n[4] = {16, 64, 256, 1024};
    double inv_gf[4];
    for (int i = 0; i < 4; i++) inv_gf[i] = measure_inverse_gflops(inv_n[i], T);
    fprintf(stderr, "kfac step %.1f ms at batch %d: forward/backward %.1f, factors %.1f (%.1f GFLOP/s = %.0f%% of sgemm), "
                    "inversions %.1f (%.1f GFLOP/s), preconditioning %.1f (%.1f GFLOP/s), update %.1f\n",
            ks.step, B, ks.fb, ks.factors, ks.gf_factors, 100 * ks.gf_factors / sgm, ks.inverse, ks.gf_inverse, ks.precond,
            ks.gf_precond, ks.update);
    json_num(&j, "kfac_step_ms", ks.step); json_num(&j, "kfac_fb_ms", ks.fb); json_num(&j, "kfac_factors_ms", ks.factors);
    json_num(&j, "kfac_inverse_ms", ks.inverse); json_num(&j, "kfac_precond_ms", ks.precond);
    json_num(&j, "kfac_update_ms", ks.update);
    json_num(&j, "kfac_factors_gflops", ks.gf_factors); json_num(&j, "kfac_factors_to_sgemm", ks.gf_factors / sgm);
    json_num(&j, "kfac_inverse_gflops", ks.gf_inverse); json_num(&j, "kfac_precond_gflops", ks.gf_precond);
    json_num(&j, "kfac_rel_factors", ks.gf_factors / s.gflops);
    json_num(&j, "kfac_rel_precond", ks.gf_precond / s.gflops);
    double dn[4], rel[4];
    for (int i = 0; i < 4; i++) { dn[i] = inv_n[i]; rel[i] = inv_gf[i] / s.gflops; }
    json_num_array(&j, "kfac_inv_n", dn, 4, 6); json_num_array(&j, "kfac_rel_inverse", rel, 4, 5);
    json_num_array(&j, "kfac_inverse_gflops_by_n", inv_gf, 4, 5);
  }
  if (profile) {
    /* prof_other_ms: everything but convolutions, fc and the update (pools, activations, softmax,
     * input copy, loop) */
    json_num(&j, "prof_step_ms", tot.step); json_num(&j, "prof_conv_ms", tot.conv); json_num(&j, "prof_fc_ms", tot.fc);
    json_num(&j, "prof_update_ms", tot.update); json_num(&j, "prof_other_ms", tot.step - tot.conv - tot.fc - tot.update);
    /* the update's traffic against what the memory system gives that pattern on fresh arrays */
    double ubw, tbw;
    measure_update_bandwidth(net.nparams, &ubw, &tbw);
    if (!fused) {
      const double ugb = 24.0 * net.nparams / (tot.update * 1e-3) / 1e9;
      fprintf(stderr, "update: 24 B per parameter = %.2f MB per step at %.1f GB/s; the same update alone on fresh "
                      "arrays (after an L2-evicting pass) %.1f GB/s, a STREAM triad of that size %.1f GB/s\n",
              24.0 * net.nparams / 1e6, ugb, ubw, tbw);
      json_num(&j, "prof_update_bytes", 24.0 * net.nparams); json_num(&j, "prof_update_gbps", ugb);
    } else {
      fprintf(stderr, "update: fused into the layers' backward; the separate update (24 B per parameter, %.2f MB) "
                      "alone on fresh arrays runs at %.1f GB/s = %.3f ms, a STREAM triad of that size at %.1f GB/s\n",
              24.0 * net.nparams / 1e6, ubw, 24.0 * net.nparams / ubw / 1e6, tbw);
      if (B == 1) {
        /* batch 1: the forward reads each fc parameter (4 B) and the fused backward reads and
         * writes it and its momentum (16 B); the fc gradient is never stored */
        double nfc = 0;
        for (int l = 0; l < net.nlayers; l++)
          if (net.L[l].type == L_FC || net.L[l].type == L_SOFTMAX) nfc += (double)(net.L[l].n_w + net.L[l].n_b);
        const double fgb = 20.0 * nfc / (tot.fc * 1e-3) / 1e9;
        fprintf(stderr, "fc layers: 20 B per parameter (forward 4, fused backward + update 16) = %.2f MB per step at "
                        "%.1f GB/s\n", 20.0 * nfc / 1e6, fgb);
        json_num(&j, "prof_fc_bytes", 20.0 * nfc); json_num(&j, "prof_fc_gbps", fgb);
      }
    }
    json_num(&j, "mem_update_gbps", ubw); json_num(&j, "mem_triad_gbps", tbw);
  }
  json_meta(&j);
  const char *line = json_end(&j);
  if (calibrate) {
    outfile_t of; outfile_open(&of, out, "calibration");
    if (fprintf(of.f, "%s\n", line) < 0) { outfile_abort(&of); die("cannot write calibration %s", out); }
    outfile_commit(&of);
    fprintf(stderr, "calibration written to %s\n", out);
  }
  printf("%s\n", line);
  return 0;
}


int cmd_speed(int argc, char **argv) { return speed_main(argc, argv, 0); }
int cmd_calibrate(int argc, char **argv) { return speed_main(argc, argv, 1); }
