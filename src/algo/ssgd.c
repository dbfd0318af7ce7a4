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

typedef struct { int N, G; double t_grad, t_comm; } ssgd_stats_t;

static void ssgd_summary(json_t *j, const loop_t *L, void *arg) {
  const ssgd_stats_t *s = arg;
  double u = L->r->updates ? (double)L->r->updates : 1.0;
  json_int(j, "nodes", s->N); json_int(j, "grad_threads", s->G); json_int(j, "workers", s->N * s->G);
  json_num(j, "time_per_update_s", L->r->updates ? L->t_end / u : 0.0);
  json_num(j, "grad_s_per_update", s->t_grad / u);
  json_num(j, "allreduce_s_per_update", s->t_comm / u);
}

/* Placement (the node loop's: loop_place, replica_group_grad, loop_allreduce_ctl): w, NAG's state
 * and the gradient buffer D (with the control floats) live where the node trains. On the CPU the G
 * grad roles are threads, each summing into its own buffer, added into D; the allreduce is MPI's on
 * D. With --device cuda (issue 35 G) they live on this node's GPU (the registry's device for this
 * rank), the one grad role runs on the node's own thread (--grad-threads 1), its batch drawn on the
 * host and uploaded, into D there; D is summed on the device by NCCL on the compute stream
 * (rt->ops->allreduce_dev), or, with --coll mpi, downloaded, allreduced on the host and uploaded.
 * The reporter evaluates W where it is; w and NAG's state come to the host only when a snapshot is
 * saved and at the end. At one node the same steps, and the same evaluations, as --algo nag on the
 * same backend. */
static void ssgd_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes;
  size_t n = r->net.nparams;
  ssgd_stats_t st = {N, G, 0, 0};
  loop_t L; loop_init(&L, rt, job, LOOP_UPDATES, NULL, ssgd_summary, &st);
  int threads = loop_threads(&L, G);
  float *w = xmalloc(n * sizeof(float));
  replica_t *reps = xcalloc((size_t)G, sizeof(replica_t));
  for (int g = 0; g < G; g++) {
    replica_init(&reps[g], r, c->batch, threads, me * G + g, N * G, 0, (uint64_t)(me * G + g));
    reps[g].overlap = 1;   /* w_hat and D_g are untouched until every grad role is joined */
  }
  net_init_params(&r->net, w, c->seed);   /* every node starts from the same parameters */
  optim_t o; optim_init(&o, OPT_NAG, n, c->momentum, c->wd);
  loop_place_t P;
  const kernels_t *k = loop_place(&L, &P, "training", w, &o, n + CTL_F);   /* w, NAG's state, D [n + CTL_F] */
  for (int g = 0; g < G; g++) loop_device_replica(&L, &reps[g]);
  replica_group_t RG; replica_group_init(&RG, reps, G, 1.0f / (float)(c->batch * G * N));
  loop_state(&L, "w", w, n * sizeof(float));
  loop_state_optim(&L, "nag", &o);
  for (int g = 0; g < G; g++) { char nm[24]; snprintf(nm, sizeof nm, "role%d", g); loop_state_replica(&L, nm, &reps[g]); }
  long step = 0;
  if (loop_resume(&L)) { optim_refresh(&o, w); step = L.updates; }
  loop_place_upload(&P);
  for (; step < r->total_steps; step++) {
    watchdog_context("ssgd update %ld on node %d", step, me);
    const float *what = optim_grad_point(P.o, P.w);                   /* w_hat = w + mu M */
    double t0 = rt->ops->now(rt);
    const double ls = replica_group_grad(&RG, rt, what, P.x);        /* D_L = sum_g D_g; D_g = 0 */
    double t1 = rt->ops->now(rt);
    rt->ops->work(rt, 4.0 * n * (2 * G + 1));
    double t2 = rt->ops->now(rt);
    ctl_t x = loop_allreduce_ctl(rt, k, P.x, P.xh, n, ls, L.job->reached ? 1.0f : 0.0f);   /* D_A = Allreduce(D_L) */
    st.t_grad += t1 - t0; st.t_comm += rt->ops->now(rt) - t2;
    if (x.stop > 0) break;
    double loss = x.loss / (double)(c->batch * G * N);
    optim_step(P.o, P.w, P.x, loop_lr(&L, step));                     /* M = mu M - lambda D_A; w += M */
    rt->ops->work(rt, 4.0 * n * 6);
    loop_loss(&L, loss, 1);
    const int last = step + 1 == r->total_steps, diverged = loop_diverged(&L, loss, step);
    if (diverged) break;   /* the same allreduced loss on every node */
    loop_progress(&L, P.w, step + 1, (double)(step + 1) * c->batch * G * N, last);
    if (x.signal > 0) { loop_interrupted(x.signal); step++; break; }   /* every node: this update done */
    loop_checkpoint(&L, 0);                                           /* epoch ends */
  }
  loop_checkpoint(&L, pdl_stop_signal || step == r->total_steps);
  loop_finish(&L, P.w, w);
  replica_group_free(&RG);
  for (int g = 0; g < G; g++) replica_free(&reps[g]);
  loop_place_free(&P);
  optim_free(&o);
  xfree(w); xfree(reps);
}

static const optdef_t *const ssgd_opts[] = {ALGO_OPTS_DIST, &od_grad_threads, NULL};
const algo_t algo_ssgd = {
  .name = "ssgd", .shape = ALGO_PEERS, .momentum = 0.99f, .node = ssgd_node,
  .help = "synchronous data-parallel SGD with allreduce and NAG (PP-ASGD paper Alg. 4)",
  .opts = ssgd_opts, .checkpoint = 1, .device = 1,
};
