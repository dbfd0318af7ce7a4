/* ssgd.c — synchronous data-parallel SGD, Algorithm 4 of the PP-ASGD paper (Sato et al. 2017):
 *   grad thread g:  D_g = sum_k grad J(x_k; w_hat)        (its sub-batch of b)
 *   update thread:  D_L = sum_g D_g; D_g = 0; D_A = Allreduce(D_L);
 *                   M = mu M - lambda D_A; w = w + M; w_hat = w + mu M   (NAG)
 * The update is optim.c's NAG step, so one worker is bit-identical to sequential `--algo nag`.
 * The allreduce buffer carries the control floats (ctl_pack, algo.h): the summed loss, a stop flag (--target-err
 * reached: stop before this update) and a signal flag (SIGINT/SIGTERM on any node: apply this
 * update, then every node saves its snapshot and stops), so every node stops at the same
 * update. Checkpoints: w, M and every grad role's sampler and dropout rng, saved by each node at
 * epoch ends and on a signal; a resumed run is bit-identical to an uninterrupted one (same
 * runtime, node count and thread count). The summary splits node 0's time per update into grad_s_per_update
 * (grad roles started .. last joined) and allreduce_s_per_update (waiting for the slowest node
 * included): bench/runtimes/validate.sh compares them between the runtimes. */
#include <string.h>
#include "algo/algo.h"
#include "rt/watchdog.h"

typedef struct { replica_t rep; float *D; const float *what; double loss; float scale; } ssgd_role_t;   /* D: [n] */

static void ssgd_grad_role(rt_t *rt, void *arg) {   /* D_g = sum_k grad J(x_k; w_hat) */
  ssgd_role_t *g = arg;
  g->loss = replica_grad(&g->rep, rt, g->what, g->D, g->scale);
}

typedef struct { int N, G; double t_grad, t_comm; } ssgd_stats_t;

static void ssgd_summary(json_t *j, const loop_t *L, void *arg) {
  const ssgd_stats_t *s = arg;
  double u = L->r->updates ? (double)L->r->updates : 1.0;
  json_int(j, "nodes", s->N); json_int(j, "grad_threads", s->G); json_int(j, "workers", s->N * s->G);
  json_num(j, "time_per_update_s", L->r->updates ? L->t_end / u : 0.0);
  json_num(j, "grad_s_per_update", s->t_grad / u);
  json_num(j, "allreduce_s_per_update", s->t_comm / u);
}

/* --device cuda (issue 35 G): w, NAG's state and the gradient buffer D (with the control floats)
 * live on this node's GPU (rt->ops->gpu: NCCL's device, else the rank's index on its host modulo
 * the devices), the one grad role runs on the node's own thread (--grad-threads 1: a started role
 * would be a new host thread, so a new CUDA context, every update), its batch drawn on the host
 * and uploaded; D is summed on the device by NCCL on the compute stream (rt->ops->allreduce_dev),
 * or, with --coll mpi, downloaded, allreduced on the host and uploaded. The reporter evaluates W
 * on the device (loop_on_device); w and NAG's state come to the host (train_state_download) only
 * where a checkpoint may be saved (--checkpoint: epoch ends, a signal) and at the end. At one node
 * the same steps, and the same evaluations, as --algo nag --device cuda. */
typedef struct { const kernels_t *k; train_state_t d; float *D; } ssgd_dev_t;   /* D: device [n + CTL_F] */

static void ssgd_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes;
  size_t n = r->net.nparams;
  ssgd_stats_t st = {N, G, 0, 0};
  loop_t L; loop_init(&L, rt, job, LOOP_UPDATES, NULL, ssgd_summary, &st);
  int threads = loop_threads(&L, G);
  float *w = xmalloc(n * sizeof(float)), *buf = xmalloc((n + CTL_F) * sizeof(float));   /* [n] D_L, control floats */
  ssgd_role_t *roles = xcalloc((size_t)G, sizeof(ssgd_role_t));
  void **th = xmalloc((size_t)G * sizeof(void *));
  for (int g = 0; g < G; g++) {
    replica_init(&roles[g].rep, r, c->batch, threads, me * G + g, N * G, 0, (uint64_t)(me * G + g));
    roles[g].rep.overlap = 1;   /* w_hat and D_g are untouched until every grad role is joined */
    roles[g].D = xcalloc(n, sizeof(float)); roles[g].scale = 1.0f / (float)(c->batch * G * N);
  }
  net_init_params(&r->net, w, c->seed);   /* every node starts from the same parameters */
  optim_t o; optim_init(&o, OPT_NAG, n, c->momentum, c->wd);
  ssgd_dev_t dv; memset(&dv, 0, sizeof dv);
  if (c->cuda_device >= 0) {
    if (G != 1 || !rt->ops->gpu) die("internal: ssgd --device needs --grad-threads 1 on the real runtime");
    const int gpu = rt->ops->gpu(rt, kernels_device_count());
    char desc[256];
    dv.k = kernels_for(gpu, "--device", desc, sizeof desc);
    if (!c->quiet) fprintf(stderr, "pdl: rank %d of %d: training on cuda:%d (%s)\n", me, N, gpu, desc);
    train_state_init(&dv.d, dv.k, w, NULL, &o);
    dv.D = dv.k->alloc((n + CTL_F) * sizeof(float));   /* zero-filled, as replica_grad wants it */
    replica_on(&roles[0].rep, dv.k);
    loop_on_device(&L, dv.k);   /* the reporter evaluates W on the device */
  }
  loop_state(&L, "w", w, n * sizeof(float));
  loop_state_optim(&L, "nag", &o);
  for (int g = 0; g < G; g++) { char nm[24]; snprintf(nm, sizeof nm, "role%d", g); loop_state_replica(&L, nm, &roles[g].rep); }
  long step = 0;
  if (loop_resume(&L)) { optim_refresh(&o, w); step = L.updates; }
  if (dv.k) train_state_upload(&dv.d, w, &o);
  optim_t *const O = dv.k ? dv.d.o : &o;
  float *const W = dv.k ? dv.d.w : w, *const Dg = dv.k ? dv.D : buf;
  for (; step < r->total_steps; step++) {
    watchdog_context("ssgd update %ld on node %d", step, me);
    const float *what = optim_grad_point(O, W);                       /* w_hat = w + mu M */
    double t0 = rt->ops->now(rt), ls;
    if (dv.k) {   /* the one role, here, into D on the device */
      roles[0].what = what;
      roles[0].loss = replica_grad(&roles[0].rep, rt, what, dv.D, roles[0].scale);
    } else {
      for (int g = 0; g < G; g++) { roles[g].what = what; th[g] = rt->ops->thread_start(rt, g, ssgd_grad_role, &roles[g]); }
      for (int g = 0; g < G; g++) rt->ops->thread_join(rt, th[g]);
    }
    double t1 = rt->ops->now(rt);
    if (dv.k) {
      ls = roles[0].loss;
      ctl_pack(buf + n, ls, L.job->reached ? 1.0f : 0.0f);
      dv.k->upload(dv.D + n, buf + n, CTL_F * sizeof(float));
    } else {
      vec_copy(buf, roles[0].D, n); vec_zero(roles[0].D, n);           /* D_L = sum_g D_g; D_g = 0 */
      ls = roles[0].loss;
      for (int g = 1; g < G; g++) { vec_add(buf, roles[g].D, n); vec_zero(roles[g].D, n); ls += roles[g].loss; }
      ctl_pack(buf + n, ls, L.job->reached ? 1.0f : 0.0f);
    }
    rt->ops->work(rt, 4.0 * n * (2 * G + 1));
    double t2 = rt->ops->now(rt);
    if (dv.k) {
      allreduce_ws(rt, dv.k, dv.D, buf, n + CTL_F);                    /* D_A = Allreduce(D_L), on the device */
      dv.k->download(buf + n, dv.D + n, CTL_F * sizeof(float));       /* waits for it */
    } else {
      rt->ops->allreduce(rt, buf, n + CTL_F);                         /* D_A = Allreduce(D_L) */
    }
    st.t_grad += t1 - t0; st.t_comm += rt->ops->now(rt) - t2;
    ctl_t x = ctl_unpack(buf + n);
    if (x.stop > 0) break;
    double loss = x.loss / (double)(c->batch * G * N);
    optim_step(O, W, Dg, loop_lr(&L, step));              /* M = mu M - lambda D_A; w += M */
    rt->ops->work(rt, 4.0 * n * 6);
    loop_loss(&L, loss, 1);
    const int last = step + 1 == r->total_steps, diverged = loop_diverged(&L, loss, step);
    if (dv.k && loop_save_may_follow(&L, step + 1, last, x.signal > 0))
      train_state_download(&dv.d, w, &o);
    if (diverged) break;   /* the same allreduced loss on every node */
    loop_progress(&L, W, step + 1, (double)(step + 1) * c->batch * G * N, last);
    if (x.signal > 0) { loop_interrupted(x.signal); step++; break; }   /* every node: this update done */
    loop_checkpoint(&L, 0);                                           /* epoch ends */
  }
  if (dv.k) train_state_download(&dv.d, w, &o);
  loop_checkpoint(&L, pdl_stop_signal || step == r->total_steps);
  loop_finish(&L, W, w);
  for (int g = 0; g < G; g++) { replica_free(&roles[g].rep); xfree(roles[g].D); }
  if (dv.k) { dv.k->release(dv.D); train_state_free(&dv.d); }
  optim_free(&o);
  xfree(w); xfree(buf); xfree(roles); xfree(th);
}

static const optdef_t *const ssgd_opts[] = {ALGO_OPTS_DIST, &od_grad_threads, NULL};
const algo_t algo_ssgd = {
  .name = "ssgd", .shape = ALGO_PEERS, .momentum = 0.99f, .node = ssgd_node,
  .help = "synchronous data-parallel SGD with allreduce and NAG (PP-ASGD paper Alg. 4)",
  .opts = ssgd_opts, .checkpoint = 1, .device = 1,
};
