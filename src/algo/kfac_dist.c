/* kfac.c — K-FAC, sequential and distributed (Tsuji, Osawa, Yokota, Matsuoka; docs/PAPERS.md §3,
 * the optimizer in src/kfac/kfac.h). One node program; per update, as the paper's Fig. 3:
 *
 *   1-2  every process: forward and backward of its b examples (its slice of the global batch
 *        of R·b, so R processes see what one process with batch R·b sees), then the bundle
 *        [∇W | A | G] of every layer from that same mini-batch, scaled by 1/R (--kfac-fisher
 *        sampled: G from a second backward, of labels drawn from the model; sample_labels);
 *   3    Reduce + Scatterv: the bundles summed over processes to each layer's owner
 *        (--kfac-comm reduce-scatterv: one MPI_Reduce_scatter over a buffer ordered by owner;
 *        allreduce: every process gets every sum, as with NCCL, which has no Scatterv);
 *   4-5  each owner: damped inverses of its layers' A and G, ΔW = G⁻¹ ∇W A⁻¹;
 *   6    Allgather of the ΔW (allgatherv; or an allreduce of a buffer zero outside the
 *        process's own layers, which sums to the same bits);
 *   7    every process: momentum SGD with the ΔW, the same on all of them (--momentum 0: the
 *        paper's w <- w - η Δw, its Algorithm 1 line 7).
 *
 * Owners (--kfac-assign): `layer`, the paper's one layer per process in turn (layer l to process
 * l mod R; past R = layers the extra processes own nothing); `lpt`, ours (the paper's named
 * future work, load balance): layers by their inversion cost da³ + dg³, largest first, each to
 * the least-loaded process.
 * The loss and the stop/signal flags ride on step 6: each process appends its control floats
 * (ctl_pack, algo.h) to its part, and every process merges the R records (ctl_merge).
 * On the sim runtime the factor, inversion and preconditioning flops are charged per kind: at
 * the rates that `pdl calibrate` measured for each kind relative to the training step (the
 * calibration file's kfac_rel_* figures, the inversions scaled to the calibration's own K-FAC step
 * (load_rates); with no calibration, at the device's training rate, and the summary says so).
 * The summary gives node 0's time per update phase by phase on either runtime (kfac_summary). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "algo/algo.h"
#include "util/env.h"
#include "algo/kfac_split.h"
#include "kfac/kfac.h"
#include "rt/watchdog.h"

typedef struct {
  double fb, factors, comm1, own, comm2, update;   /* seconds, this node, summed over updates (the runtime's clock) */
  double inv, pre;                                   /* the owner phase's inversions and preconditioning (inside own) */
  double owner_max, owner_mean;                      /* owner seconds over nodes (summary) */
  int N, nl, comm_allreduce, assign_lpt, fisher_sampled;
  int owner[NET_MAX_LAYERS];
  double *load;                                      /* [N] inversion cost owned by each node */
  const char *rates;
  const char *on;                                    /* where the K-FAC work runs: host, or the table's name (kfac_place) */
  double inv_scale;                                  /* sim: the calibrated scale of the inversion charges */
  kfac_t *k;
  double msg1_bytes, msg2_bytes;                     /* floats sent per update in steps 3 and 6, x4 */
} kstats_t;

/* Relative rates of the K-FAC kinds against the training step, for the sim's charges: a kind's
 * flops are charged as flops / rel (so a kind that runs at half the training rate costs twice). */
typedef struct { double factors, precond, inv_n[4], inv_rel[4], inv_scale; int calibrated; } krates_t;

static double inv_rel(const krates_t *kr, int n) {   /* log-linear in n between the measured sizes */
  if (!kr->calibrated) return 1.0;
  double x = log((double)n);
  if (n <= kr->inv_n[0]) return kr->inv_rel[0];
  for (int i = 1; i < 4; i++)
    if (n <= kr->inv_n[i]) {
      double x0 = log(kr->inv_n[i - 1]), x1 = log(kr->inv_n[i]), f = (x - x0) / (x1 - x0);
      return exp((1 - f) * log(kr->inv_rel[i - 1]) + f * log(kr->inv_rel[i]));
    }
  return kr->inv_rel[3];
}

/* The kfac_rel_* figures of the calibration file for this net (pdl calibrate), if it has them.
 * The inversion rates are measured on random SPD matrices at n = 16, 64, 256, 1024 and
 * interpolated; summed over this net's factors they can miss the inversions of the calibration's
 * own K-FAC step (kfac_inverse_ms: 103 ms predicted against 85 measured for vgg-small at 1
 * thread, issue 33). When the file was calibrated on this net (its net_spec), inv_scale =
 * measured / predicted scales every inversion charge, so that one process's inversion phase is
 * the measured one and the sizes only share it out among the owners. */
static void load_rates(const run_t *r, const kfac_t *k, krates_t *kr) {
  memset(kr, 0, sizeof *kr);
  kr->factors = kr->precond = kr->inv_scale = 1;
  char path[1200];
  if (!algo_calibration_path(&r->cfg, &r->net, path, sizeof path)) return;
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[8192] = "";
  if (!fgets(line, sizeof line, f)) line[0] = 0;
  fclose(f);
  const char *p = strstr(line, "\"kfac_rel_factors\":"), *q = strstr(line, "\"kfac_rel_precond\":"),
             *n = strstr(line, "\"kfac_inv_n\":["), *v = strstr(line, "\"kfac_rel_inverse\":[");
  if (!p || !q || !n || !v) return;
  kr->factors = atof(p + 19); kr->precond = atof(q + 19);
  n += 14; v += 20;
  for (int i = 0; i < 4; i++) {
    kr->inv_n[i] = strtod(n, (char **)&n); kr->inv_rel[i] = strtod(v, (char **)&v);
    if (*n == ',') n++;
    if (*v == ',') v++;
  }
  kr->calibrated = kr->factors > 0 && kr->precond > 0 && kr->inv_rel[0] > 0 && kr->inv_rel[3] > 0;
  if (!kr->calibrated) { kr->factors = kr->precond = 1; return; }
  const char *spec = strstr(line, "\"net_spec\":\""), *ms = strstr(line, "\"kfac_inverse_ms\":"), *gf = strstr(line, "\"gflops\":");
  size_t sl = strlen(r->net.spec);
  if (!spec || !ms || !gf || strncmp(spec + 12, r->net.spec, sl) || spec[12 + sl] != '"') return;
  double pred = 0, meas = atof(ms + 18) * 1e-3, rate = atof(gf + 9) * 1e9;
  for (int l = 0; l < k->nl; l++) {
    double da = k->L[l].da, dg = k->L[l].dg;
    pred += (da * da * da / inv_rel(kr, k->L[l].da) + dg * dg * dg / inv_rel(kr, k->L[l].dg)) / rate;
  }
  if (pred > 0 && meas > 0 && rate > 0) kr->inv_scale = meas / pred;
}

/* Owners of the layers: the paper's round robin, or longest-processing-time first; load[r]
 * receives the inversion cost node r owns. */
static void assign(const kfac_t *k, int R, int lpt, int *owner, double *load) {
  for (int r = 0; r < R; r++) load[r] = 0;
  int order[NET_MAX_LAYERS];
  for (int l = 0; l < k->nl; l++) order[l] = l;
  for (int i = 1; lpt && i < k->nl; i++)   /* by cost, largest first; ties by layer index */
    for (int j = i; j > 0 && k->L[order[j]].cost > k->L[order[j - 1]].cost; j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
  for (int i = 0; i < k->nl; i++) {
    int l = order[i], o = i % R;
    if (lpt) { o = 0; for (int r = 1; r < R; r++) if (load[r] < load[o]) o = r; }
    owner[l] = o; load[o] += k->L[l].cost;
  }
}

/* The summary's per-phase times (issue 33: the real and the simulated step side by side) are this
 * node's (node 0 writes the line), per update, on the runtime's clock: wall seconds on real,
 * simulated seconds on sim. fb + factors (steps 1-2), comm1 (3, waiting for the slowest node
 * included), owner (4-5, of which inverse and precond; the rest is the damping and traces), comm2
 * (6, waiting for the slowest owner included) and update (7) add up to time_per_update but for
 * the loop's own bookkeeping. */
static void kfac_summary(json_t *j, const loop_t *L, void *arg) {
  const kstats_t *s = arg;
  const kfac_t *k = s->k;
  double u = L->r->updates ? (double)L->r->updates : 1.0;
  json_int(j, "nodes", s->N);
  json_num(j, "time_per_update_s", L->r->updates ? L->t_end / u : 0.0);
  json_num(j, "fb_s_per_update", s->fb / u);
  json_num(j, "factors_s_per_update", s->factors / u);
  json_num(j, "comm1_s_per_update", s->comm1 / u);
  json_num(j, "owner_s_per_update", s->own / u);
  json_num(j, "owner_max_s_per_update", s->owner_max / u);
  json_num(j, "owner_mean_s_per_update", s->owner_mean / u);
  json_num(j, "comm2_s_per_update", s->comm2 / u);
  json_num(j, "update_s_per_update", s->update / u);
  json_num(j, "inverse_s_per_update", s->inv / u);
  json_num(j, "precond_s_per_update", s->pre / u);
  json_int(j, "inversions", k->st.inversions);
  json_int(j, "inverse_retries", k->st.retries);
  json_num(j, "kfac_damping", k->cfg.damping);
  json_num(j, "kfac_stat_decay", k->cfg.stat_decay);
  json_int(j, "kfac_inv_every", k->cfg.inv_every);
  json_str(j, "kfac_inverse", kfac_inverse_name(k));
  json_str(j, "kfac_comm", s->comm_allreduce ? "allreduce" : "reduce-scatterv");
  json_str(j, "kfac_assign", s->assign_lpt ? "lpt" : "layer");
  json_str(j, "kfac_fisher", s->fisher_sampled ? "sampled" : "empirical");
  json_str(j, "kfac_sim_rates", s->rates);
  json_str(j, "kfac_on", s->on);
  if (s->inv_scale != 1) json_num(j, "kfac_sim_inv_scale", s->inv_scale);
  json_num(j, "msg1_bytes", s->msg1_bytes);
  json_num(j, "msg2_bytes", s->msg2_bytes);
  double mx = 0, tot = 0;
  for (int r = 0; r < s->N; r++) { tot += s->load[r]; if (s->load[r] > mx) mx = s->load[r]; }
  json_num(j, "inv_cost_max_over_mean", tot > 0 ? mx / (tot / s->N) : 0.0);
  char own[4 * NET_MAX_LAYERS + 8]; size_t o = 0;
  for (int l = 0; l < s->nl && o + 8 < sizeof own; l++) o += (size_t)snprintf(own + o, sizeof own - o, "%s%d", l ? "," : "", s->owner[l]);
  json_str(j, "owners", own);
  char dims[16 * NET_MAX_LAYERS]; o = 0;
  for (int l = 0; l < k->nl && o + 24 < sizeof dims; l++)
    o += (size_t)snprintf(dims + o, sizeof dims - o, "%s%dx%d", l ? "," : "", k->L[l].da, k->L[l].dg);
  json_str(j, "factor_dims", dims);
  ksplit_summary(j, k);
}

/* The two compute phases of an update run as a role on the node's device, so that the sim
 * runtime charges them at the device's rate (the main role lives on the node's CPU host); on the
 * real runtime they run inline. Their buffers (w, g, the bundles, the ΔW) are in the memory of
 * the node's table (loop_place: the host's own buffers on the CPU). */
typedef struct {
  kfac_t *k; replica_t *rep; const krates_t *kr; const int *owner;
  const float *w; float *g, *bund, *mine, *myupd;
  const size_t *off_b, *off_w; size_t my_b0, my_w0;
  int me, N, b; long step; double loss, t_fb, t_inv, t_pre;   /* t_*: this update's phases, the runtime's clock */
  /* --kfac-fisher sampled: labels drawn from the model, the sampled loss's gradient (discarded) */
  int sampled; uint64_t seed; int *ys; float *gs;
  float *probs_h;        /* sampled: the model's probabilities on the host, to draw from (loop_host_view) */
  const kernels_t *kt;   /* the node's table (loop_place) */
} phase_t;

/* --kfac-fisher sampled (Martens & Grosse 2015 §5): the label of each of this node's b examples
 * drawn from the model's own distribution, y ~ softmax(output), by inversion of one uniform from
 * a stream of its own: (--seed, the example's index in the run, update x global batch + its
 * place in the global batch). So the draws depend on nothing but the seed and the example's
 * place: not on the thread count, not on how R processes split the global batch, not on a
 * resume. */
static void sample_labels(const phase_t *p, const float *probs, int classes) {
  for (int i = 0; i < p->b; i++) {
    rng_t g;
    rng_seed(&g, p->seed ^ 0x4b46414346495348ULL,   /* "KFACFISH": apart from the run's other streams */
             (uint64_t)p->step * (uint64_t)p->b * (uint64_t)p->N + (uint64_t)p->me * p->b + (uint64_t)i);
    double u = rng_uniform(&g), cum = 0;
    const float *pr = probs + (size_t)i * classes;
    int y = classes - 1;
    for (int c = 0; c < classes - 1; c++) { cum += pr[c]; if (u < cum) { y = c; break; } }
    p->ys[i] = y;
  }
}

static void phase_grad(rt_t *rt, void *arg) {   /* steps 1-2 */
  phase_t *p = arg; kfac_t *k = p->k;
  double t0 = rt->ops->now(rt);
  loop_zero(p->kt, p->g, p->rep->net->nparams);   /* g = 0 */
  p->loss = replica_grad(p->rep, rt, p->w, p->g, 1.0f / (float)p->b);   /* the local mean gradient */
  double fl_sampled = 0;
  if (p->sampled) {   /* the G factors from the sampled labels' backward; Gw stays the data's */
    const net_t *net = p->rep->net;
    /* (a wait on a device: the labels are drawn on the host) */
    const float *probs = loop_host_view(p->kt, p->probs_h, p->rep->ws.probs, (size_t)p->b * net->classes);
    sample_labels(p, probs, net->classes);
    loop_zero(p->kt, p->gs, net->nparams);
    net_backward(&p->rep->ws, p->w, p->gs, p->ys, p->b, 1.0f / (float)p->b);   /* (host labels: the table uploads them) */
    fl_sampled = (net->flops_train - net->flops_fwd) * p->b;
  }
  p->t_fb = rt->ops->now(rt) - t0;
  double fl0 = k->st.fl_factors;
  for (int l = 0; l < k->nl; l++) {
    float *B = p->bund + p->off_b[l];
    kfac_bundle(k, l, &p->rep->ws, p->b, 1.0f / (float)p->b, p->g, B);   /* (kfac_place chose its code) */
    if (p->N > 1) loop_scale(p->kt, B, 1.0f / (float)p->N, k->L[l].bundle);
  }
  rt->ops->compute(rt, fl_sampled + (k->st.fl_factors - fl0) / p->kr->factors);
}

static void owner_one(void *arg, int l) {
  phase_t *p = arg;
  const float *bundle = p->mine + (p->off_b[l] - p->my_b0);
  float *dw = p->myupd + (p->off_w[l] - p->my_w0);
  kfac_owner_update(p->k, l, bundle, p->step, dw);
}
static double inv_rel_v(const void *kr, int n) { return inv_rel(kr, n); }
static void phase_owner(rt_t *rt, void *arg) {  /* steps 4-5 */
  phase_t *p = arg; kfac_t *k = p->k;
  double fp0 = k->st.fl_precond, ti0 = k->st.inverse, tp0 = k->st.precond, inv = 0;
  int split_done[NET_MAX_LAYERS] = {0};   /* --kfac-split: its layers first, all nodes (src/algo/kfac_split.c) */
  inv += ksplit_phase(k, rt, p->step, p->owner, owner_one, p, inv_rel_v, p->kr, split_done) * p->kr->inv_scale;
  for (int l = 0; l < k->nl; l++) {
    if (p->owner[l] != p->me || split_done[l]) continue;
    owner_one(p, l);
    if (k->inverted_at[l] == p->step) {   /* inverted now: each factor at its size's rate */
      double da = k->L[l].da, dg = k->L[l].dg;
      inv += (da * da * da / inv_rel(p->kr, k->L[l].da) + dg * dg * dg / inv_rel(p->kr, k->L[l].dg)) * p->kr->inv_scale;
    }
  }
  if (!rt->ops->simulated) {   /* the inversions' and the preconditioning's own wall time (kfac.c) */
    p->t_inv = k->st.inverse - ti0; p->t_pre = k->st.precond - tp0;
    return;
  }
  /* sim: the two kinds charged one after the other, each timed on the simulated clock */
  double t0 = rt->ops->now(rt);
  rt->ops->compute(rt, inv);
  double t1 = rt->ops->now(rt);
  rt->ops->compute(rt, (k->st.fl_precond - fp0) / p->kr->precond);
  p->t_inv = t1 - t0; p->t_pre = rt->ops->now(rt) - t1;
}

static void phase_run(rt_t *rt, rt_fn fn, void *arg) {
  if (!rt->ops->simulated) { fn(rt, arg); return; }
  rt->ops->thread_join(rt, rt->ops->thread_start(rt, 0, fn, arg));
}

/* kfac's own options (train_cfg_t.algo_opts; descriptors at the end of this file) */
typedef struct { float damping, stat_decay; int inv_every, inverse, comm_allreduce, assign_lpt, fisher_sampled, split; } kfac_opts_t;
_Static_assert(sizeof(kfac_opts_t) <= sizeof(((train_cfg_t *)0)->algo_opts), "kfac_opts_t fits algo_opts");

/* The buffers ordered by owner: step 3's bundles and step 6's ΔW (+ the CTL_F control floats per
 * node); share: the owner's parts live inside the full buffers (allreduce, or one node). */
typedef struct {
  size_t off_b[NET_MAX_LAYERS], off_w[NET_MAX_LAYERS], *cnt_b, *cnt_w, tot_b, tot_w, my_b0, my_w0;
  float *bund, *mine, *upd, *myupd;
  int share;
} kbuf_t;
static void kbuf_init(kbuf_t *B, const kfac_t *k, const int *owner, int N, int me, int share) {
  memset(B, 0, sizeof *B);
  B->cnt_b = xcalloc((size_t)N, sizeof(size_t)); B->cnt_w = xcalloc((size_t)N, sizeof(size_t)); B->share = share;
  for (int o = 0; o < N; o++) {
    for (int l = 0; l < k->nl; l++) {
      if (owner[l] != o) continue;
      B->off_b[l] = B->tot_b; B->tot_b += k->L[l].bundle; B->cnt_b[o] += k->L[l].bundle;
      size_t dw = (size_t)k->L[l].dg * k->L[l].da;
      B->off_w[l] = B->tot_w; B->tot_w += dw; B->cnt_w[o] += dw;
    }
    B->tot_w += CTL_F; B->cnt_w[o] += CTL_F;
  }
  for (int o = 0; o < me; o++) { B->my_b0 += B->cnt_b[o]; B->my_w0 += B->cnt_w[o]; }
  B->bund = xmalloc((B->tot_b ? B->tot_b : 1) * sizeof(float));
  B->mine = share ? B->bund + B->my_b0 : xmalloc((B->cnt_b[me] ? B->cnt_b[me] : 1) * sizeof(float));
  B->upd = xcalloc(B->tot_w, sizeof(float));
  B->myupd = share ? B->upd + B->my_w0 : xmalloc(B->cnt_w[me] * sizeof(float));
}
static void kbuf_free(kbuf_t *B) {
  if (!B->share) { xfree(B->myupd); xfree(B->mine); }
  xfree(B->bund); xfree(B->upd); xfree(B->cnt_b); xfree(B->cnt_w);
}

/* Where the node trains (loop_place): on the CPU the host buffers of kbuf_t and the node's own g
 * and dw; with --device cuda (issue 35 G) w, the momentum, the gradient, the bundles and the ΔW
 * live in the workspace memory of the rank's GPU (the registry's device for this rank, as ssgd),
 * and so do the owner's factors and inverses (kfac_place -> kfac_dev.c: cuBLAS factors and
 * preconditioning, cuSOLVER inversions). Steps 3 and 6 run there with NCCL on the compute stream
 * (allreduce_ws: rt->ops->allreduce_dev, --kfac-comm allreduce); with --coll mpi, or --kfac-comm
 * reduce-scatterv (NCCL has no Scatterv), they are staged through the host buffers (loop_twin_*:
 * nothing to stage on the CPU). The control floats (loss, flags) go up and come back as CTL_F floats
 * per node; with --kfac-fisher sampled the model's probabilities come down for the draws
 * (sample_labels). w, the momentum and the owner state come to the host only where a checkpoint
 * may be saved and at the end. PDL_KFAC_DEV=1 runs the table path (kfac_dev.c) with the CPU
 * backend's table (host memory): the test of its logic where no GPU is. */
typedef struct {
  const kernels_t *k;
  float *g, *dw, *bund, *mine, *upd, *myupd;   /* twins of the host buffers, in k's memory (loop_twin) */
} ktwin_t;
static void ktwin_init(ktwin_t *D, const kernels_t *kt, const kbuf_t *B, int me, size_t n, float *g, float *dw) {
  D->k = kt;
  D->g = loop_twin(kt, g, n); D->dw = loop_twin(kt, dw, n);
  D->bund = loop_twin(kt, B->bund, B->tot_b ? B->tot_b : 1);
  D->mine = B->share ? D->bund + B->my_b0 : loop_twin(kt, B->mine, B->cnt_b[me] ? B->cnt_b[me] : 1);
  D->upd = loop_twin(kt, B->upd, B->tot_w);
  D->myupd = B->share ? D->upd + B->my_w0 : loop_twin(kt, B->myupd, B->cnt_w[me]);
}
static void ktwin_free(ktwin_t *D, const kbuf_t *B, float *g, float *dw) {
  if (!B->share) { loop_twin_free(D->k, D->mine, B->mine); loop_twin_free(D->k, D->myupd, B->myupd); }
  loop_twin_free(D->k, D->g, g); loop_twin_free(D->k, D->dw, dw);
  loop_twin_free(D->k, D->bund, B->bund); loop_twin_free(D->k, D->upd, B->upd);
}
/* owner time over nodes, for the load-balance figures */
static void owner_times(rt_t *rt, kstats_t *st) {
  int N = rt->nnodes;
  float *ow = xcalloc((size_t)N, sizeof(float));
  ow[rt->node] = (float)st->own;
  if (N > 1) rt->ops->allreduce(rt, ow, (size_t)N);
  for (int q = 0; q < N; q++) { st->owner_mean += ow[q] / N; if (ow[q] > st->owner_max) st->owner_max = ow[q]; }
  xfree(ow);
}

/* The node's snapshot: w, the momentum, the replica, and the owner's state, so that a resume is
 * bit-identical with --kfac-stat-decay and --kfac-inv-every too: its layers' running factors and
 * held inverses, how many batches each has folded in and the update of its inverses (the refresh
 * schedule's other input, the update count, is the loop's); a node that owns no layer saves an
 * empty block. */
static void kfac_state(loop_t *L, kfac_t *k, const int *owner, int me, float *w, size_t n, optim_t *o, replica_t *rep) {
  loop_state(L, "w", w, n * sizeof(float));
  loop_state_optim(L, "msgd", o);
  loop_state_replica(L, "replica", rep);
  int owned[NET_MAX_LAYERS];
  for (int l = 0; l < k->nl; l++) owned[l] = owner[l] == me;
  kfac_own(k, owned);
  loop_state(L, "kfac.factors", k->own, k->own_n * sizeof(float));
  loop_state(L, "kfac.folded", k->folded, sizeof k->folded);
  loop_state(L, "kfac.inverted_at", k->inverted_at, sizeof k->inverted_at);
}

/* What the loop brings to the host before it saves a snapshot and at the end (loop_device_state):
 * w and the momentum (loop_place_download) and the owned layers' factors and inverses
 * (kfac_dev_state); nothing on the CPU's host path. */
typedef struct { loop_place_t *P; kfac_t *k; } kto_host_t;
static void kfac_to_host(void *arg) {
  kto_host_t *t = arg;
  loop_place_download(t->P);
  kfac_dev_state(t->k, 0);
}

/* PDL_KFAC_DEV=1: the table path (kfac_dev.c) with the CPU's table */
static int kfac_table_env(void) { const char *kd = env_get("PDL_KFAC_DEV"); return kd && !strcmp(kd, "1"); }

/* Before the runtime starts: the table path (a device backend, or PDL_KFAC_DEV=1) runs on the real
 * runtime only, and not with --kfac-split (ScaLAPACK on host memory). */
static int kfac_prepare(job_t *job) {
  const train_cfg_t *c = &job->r.cfg;
  const kfac_opts_t *ko = (const kfac_opts_t *)c->algo_opts;
  const int table = kfac_table_env(), host = kernels_device_is_host(&c->device);
  if (table && !strcmp(c->runtime, "sim"))
    die_usage("train: PDL_KFAC_DEV=1: the device path of --algo %s runs on --runtime real only", c->algo);
  if ((table || !host) && ko->split != KFAC_SPLIT_OFF)
    die_usage("train: --device %s: --kfac-split runs ScaLAPACK on host memory: drop --kfac-split, or drop --device",
              c->device.backend);
  return -1;
}

static void kfac_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int me = rt->node, N = rt->nnodes, b = c->batch;
  if (job->algo->shape == ALGO_ONE_NODE && N > 1)
    die_usage("train: --algo kfac is sequential (one process); use --algo kfac-dist with %d processes", N);
  size_t n = r->net.nparams;
  kstats_t st; memset(&st, 0, sizeof st);
  const kfac_opts_t *ko = (const kfac_opts_t *)c->algo_opts;
  st.N = N; st.comm_allreduce = ko->comm_allreduce; st.assign_lpt = ko->assign_lpt; st.fisher_sampled = ko->fisher_sampled;
  loop_t L; loop_init(&L, rt, job, LOOP_UPDATES, NULL, kfac_summary, &st);
  int threads = loop_threads(&L, 1);
  kfac_cfg_t kc = {ko->damping, ko->stat_decay, ko->inv_every, (kfac_inv_t)ko->inverse};
  kfac_t k; kfac_init(&k, &r->net, &kc, threads);
  st.k = &k; st.nl = k.nl; st.load = xcalloc((size_t)N, sizeof(double));
  ksplit_open(rt, &k, ko->split);   /* before the owners: it lowers the split layers' cost */
  assign(&k, N, st.assign_lpt, st.owner, st.load);
  krates_t kr; load_rates(r, &k, &kr);
  st.rates = !rt->ops->simulated ? "measured" : kr.calibrated ? "calibrated per kind" : "device rate (no kfac calibration)";
  st.inv_scale = rt->ops->simulated ? kr.inv_scale : 1;
  kbuf_t B; kbuf_init(&B, &k, st.owner, N, me, st.comm_allreduce || N == 1);
  size_t *cnt_b = B.cnt_b, *cnt_w = B.cnt_w, tot_b = B.tot_b, tot_w = B.tot_w;
  float *bund = B.bund, *mine = B.mine, *upd = B.upd, *myupd = B.myupd;
  st.msg1_bytes = 4.0 * (double)tot_b; st.msg2_bytes = 4.0 * (double)tot_w;
  replica_t rep;
  replica_init(&rep, r, b, threads, me, N, 0, (uint64_t)me);
  rep.overlap = 1;                        /* sim: w and g stay untouched until replica_grad returns */
  float *w = xmalloc(n * sizeof(float)), *g = xcalloc(n, sizeof(float)), *dw = xcalloc(n, sizeof(float));
  net_init_params(&r->net, w, c->seed);   /* every node starts from the same parameters */
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  loop_place_t P;
  const kernels_t *kt = loop_place(&L, &P, "K-FAC", w, &o, 0);   /* w and the momentum where the node trains */
  ktwin_t D; ktwin_init(&D, kt, &B, me, n, g, dw);                   /* the buffers there */
  loop_device_replica(&L, &rep);
  rep.ws.unfused = 1;                     /* the factors read every layer's pre-activation gradient */
  kfac_state(&L, &k, st.owner, me, w, n, &o, &rep);
  /* the K-FAC work there too: kfac.c's host code on the CPU, kfac_dev.c's on a device (the inversions then
   * kt->spd_inverse, whatever --kfac-inverse says) */
  st.on = kfac_place(&k, kt, b, kfac_table_env()) ? kt->name : "host";
  long step = 0;
  if (loop_resume(&L)) {
    step = L.updates;
    char why[400];   /* a crafted file: counts, update numbers and factor values within the run's */
    if (kfac_state_check(&k, step, why, sizeof why))
      die("checkpoint %s: %s: a damaged or crafted file; start over without --resume", loop_node_file(&L), why);
  }
  kto_host_t th = {&P, &k};
  loop_place_upload(&P); kfac_dev_state(&k, 1);
  loop_device_state(&L, kfac_to_host, &th);   /* w, the momentum and the owner's factors: to the host only to be saved */
  phase_t ph = {&k, &rep, &kr, st.owner, P.w, D.g, D.bund, D.mine, D.myupd, B.off_b, B.off_w, B.my_b0, B.my_w0, me, N, b, 0,
                0, 0, 0, 0, ko->fisher_sampled, c->seed, NULL, NULL, NULL, kt};
  if (ph.sampled) {
    ph.ys = xmalloc((size_t)b * sizeof(int));
    ph.gs = kt->alloc(n * sizeof(float));
    ph.probs_h = xmalloc((size_t)b * r->net.classes * sizeof(float));
  }
  for (; step < r->total_steps; step++) {
    watchdog_context("kfac update %ld on node %d", step, me);
    /* 1-2: gradient and factors of this node's b examples */
    double t0 = rt->ops->now(rt);
    ph.step = step;
    phase_run(rt, phase_grad, &ph);
    double t2 = rt->ops->now(rt), t1 = t0 + ph.t_fb;
    /* 3: Reduce + Scatterv (or Allreduce) of the bundles to their owners */
    if (N > 1) {
      if (st.comm_allreduce) allreduce_ws(rt, kt, D.bund, bund, tot_b);
      else {   /* NCCL has no Scatterv: staged through the host */
        loop_twin_down(kt, bund, D.bund, tot_b);
        rt->ops->reduce_scatterv(rt, bund, mine, cnt_b);
        loop_twin_up(kt, D.mine, mine, cnt_b[me]);
      }
    }
    double t3 = rt->ops->now(rt);
    /* 4-5: the owner's inversions and ΔW */
    if (st.comm_allreduce && N > 1) loop_zero(kt, D.upd, tot_w);
    phase_run(rt, phase_owner, &ph);
    double loss = ph.loss;
    ctl_pack(myupd + cnt_w[me] - CTL_F, loss, L.job->reached ? 1.0f : 0.0f);
    loop_twin_up(kt, D.myupd + cnt_w[me] - CTL_F, myupd + cnt_w[me] - CTL_F, CTL_F);
    double t4 = rt->ops->now(rt);
    /* 6: Allgather (or Allreduce) of the ΔW */
    if (N > 1) {
      if (st.comm_allreduce) allreduce_ws(rt, kt, D.upd, upd, tot_w);
      else {
        loop_twin_down(kt, myupd, D.myupd, cnt_w[me]);
        rt->ops->allgatherv(rt, myupd, upd, cnt_w);
        loop_twin_up(kt, D.upd, upd, tot_w);
      }
    }
    double t5 = rt->ops->now(rt);
    /* 7: the same momentum step on every node */
    ctl_t x = {0, 0, 0};
    for (int q = 0, at = 0; q < N; q++) {
      at += (int)cnt_w[q];
      loop_twin_down(kt, upd + at - CTL_F, D.upd + at - CTL_F, CTL_F);
      ctl_merge(&x, upd + at - CTL_F);
    }
    if (x.stop > 0) break;
    for (int l = 0; l < k.nl; l++) kfac_to_flat(&k, l, D.upd + B.off_w[l], D.dw);
    optim_step(P.o, P.w, D.dw, loop_lr(&L, step));   /* v = mu v - lr (ΔW + wd w); w += v */
    rt->ops->work(rt, 4.0 * n * 6);
    double t6 = rt->ops->now(rt);
    st.fb += t1 - t0; st.factors += t2 - t1; st.comm1 += t3 - t2; st.own += t4 - t3; st.comm2 += t5 - t4;
    st.update += t6 - t5; st.inv += ph.t_inv; st.pre += ph.t_pre;
    double mloss = x.loss / (double)(b * N);
    loop_loss(&L, mloss, 1);
    const int last = step + 1 == r->total_steps, diverged = loop_diverged(&L, mloss, step);
    if (diverged) break;
    loop_progress(&L, P.w, step + 1, (double)(step + 1) * b * N, last);
    if (x.signal > 0) { loop_interrupted(x.signal); step++; break; }
    loop_checkpoint(&L, 0);
  }
  loop_checkpoint(&L, pdl_stop_signal || step == r->total_steps);
  owner_times(rt, &st);
  loop_finish(&L, P.w, w);
  if (ph.gs) kt->release(ph.gs);
  ktwin_free(&D, &B, g, dw);
  loop_place_free(&P);
  replica_free(&rep); optim_free(&o); ksplit_close(&k); kfac_free(&k); kbuf_free(&B); xfree(ph.ys);
  xfree(ph.probs_h);
  xfree(w); xfree(g); xfree(dw); xfree(st.load);
}

#define KO(field) OD_ALGO, offsetof(kfac_opts_t, field), sizeof(((kfac_opts_t *)0)->field)
static const char *const inverses[] = {"fast", "ref", "eig", "cuda", NULL};   /* kfac_inv_t's order */
static const char *const comms[] = {"reduce-scatterv", "allreduce", NULL};
static const char *const assigns[] = {"layer", "lpt", NULL};
static const char *const fishers[] = {"empirical", "sampled", NULL};
static const optdef_t
  od_damping = {"--kfac-damping", OD_FLOAT, 1e-12, 1e6, NULL, "0.03", "D", "Tikhonov damping, split between A and G by pi", KO(damping), 1, NULL},
  od_stat_decay = {"--kfac-stat-decay", OD_FLOAT, 0, 0.999999, NULL, "0", "E", "running average of the factors (0: this batch only, the paper)", KO(stat_decay), 1, NULL},
  od_inv_every = {"--kfac-inv-every", OD_INT, 1, 1 << 30, NULL, "1", "N", "invert the factors every N updates (1: the paper)", KO(inv_every), 1, NULL},
  od_inverse = {"--kfac-inverse", OD_ENUM, 0, 0, inverses, "fast", "I", "fast (float, ours) | ref (LAPACKE double) | eig | cuda (cuSOLVER); with --device cuda the inversions are always cuSOLVER's on the device", KO(inverse), 1, NULL},
  od_comm = {"--kfac-comm", OD_ENUM, 0, 0, comms, "reduce-scatterv", "C", "reduce-scatterv (+ allgatherv) | allreduce (NCCL style)", KO(comm_allreduce), 1, NULL},
  od_assign = {"--kfac-assign", OD_ENUM, 0, 0, assigns, "layer", "A", "layer owners: layer (l mod R, the paper) | lpt (by cost)", KO(assign_lpt), 1, NULL},
  od_fisher = {"--kfac-fisher", OD_ENUM, 0, 0, fishers, "empirical", "F",
               "G factors from: empirical (the data's labels, the paper's eq. 4) | sampled (y ~ the model, Martens & Grosse)",
               KO(fisher_sampled), 1, NULL};
/* off | auto | S. "0" and "-1" are the documented numeric spellings of off and auto, accepted on the
 * command line too: the checkpoint header stores the option as an integer (optdef_format) and a resume
 * reads it back through this same setter, so refusing them here alone would take a second parser; every
 * other integer below 2 (-5, 1) is refused naming the flag and the three forms. */
static void set_split(const optdef_t *d, void *area, const char *v) {
  int *out = (int *)((char *)area + d->off);
  if (!v) die_usage("train: %s needs a value", d->name);
  if (!strcmp(v, "off") || !strcmp(v, "0")) { *out = KFAC_SPLIT_OFF; return; }
  if (!strcmp(v, "auto") || !strcmp(v, "-1")) { *out = KFAC_SPLIT_AUTO; return; }
  char *end; errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < 2 || x > (1 << 20))
    die_usage("train: %s: '%s': give off (or 0), auto (or -1) or a factor order S in [2, %d]", d->name, v, 1 << 20);
  *out = (int)x;
}
static const optdef_t od_split = {"--kfac-split", OD_INT, 2, 1 << 20, NULL, "off", "S",
  "split the inversion of factors of order >= S (auto: those whose n^3 exceeds the mean per process) over all processes: ScaLAPACK (real), cost model (sim); off = 0, auto = -1",
  KO(split), 1, set_split};
/* (new options go last: a checkpoint written before one existed is then refused naming it) */
static const optdef_t *const kfac_opts[] = {ALGO_OPTS_DIST, &od_damping, &od_stat_decay, &od_inv_every, &od_inverse,
                                            &od_fisher, NULL};
static const optdef_t *const kfac_dist_opts[] = {ALGO_OPTS_DIST, &od_damping, &od_stat_decay, &od_inv_every, &od_inverse,
                                                 &od_comm, &od_assign, &od_fisher, &od_split, NULL};
const algo_t algo_kfac = {
  .name = "kfac", .shape = ALGO_ONE_NODE, .momentum = 0.9f, .node = kfac_node, .prepare = kfac_prepare, .checkpoint = 1, .device = 1,
  .help = "K-FAC (Martens & Grosse; KFC convs): dW = G^-1 grad A^-1 with pi-split damping, then momentum SGD (--momentum 0: the paper's Alg. 1)",
  .opts = kfac_opts,
};
const algo_t algo_kfac_dist = {
  .name = "kfac-dist", .shape = ALGO_PEERS, .momentum = 0.9f, .node = kfac_node, .prepare = kfac_prepare, .checkpoint = 1, .device = 1,
  .help = "distributed K-FAC (Tsuji et al. Fig. 3): bundles reduced to layer owners, owners invert, allgather dW",
  .opts = kfac_dist_opts,
};
