/* ssgd.c — synchronous data-parallel SGD, Algorithm 4 of the PP-ASGD paper, on the seam:
 * per update each of the G grad roles of a node computes one sub-batch gradient at
 * w_hat = w + mu M (NAG), the node sums them (D_L = sum_g D_g; D_g = 0), allreduce, then
 * M = mu M - lr D_A; w += M; w_hat = w + mu M. The update uses optim.c's NAG step, so one worker
 * is bit-identical to sequential `--algo nag`. The allreduce buffer carries two extra floats:
 * the summed loss and a stop flag, so every rank stops at the same update on SIGINT.
 * The summary splits node 0's time per update into grad_s_per_update (start of the grad roles
 * to the last join) and allreduce_s_per_update (waiting for the slowest node included), in wall
 * or simulated seconds: bench/runtimes/validate.sh compares them between the runtimes. */
#include <string.h>
#include "comm/watchdog.h"
#include "dist/dist_internal.h"

typedef struct {
  replica_t *rep; float *D; const float *what; double loss; float scale;
} ssgd_role_t;

static void ssgd_grad_role(rt_t *rt, void *arg) {
  ssgd_role_t *g = arg;
  g->loss = replica_grad(g->rep, rt, g->what, g->D, g->scale);
}

void ssgd_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes;
  size_t n = r->net.nparams;
  float *w = xmalloc(n * sizeof(float)), *buf = xmalloc((n + 2) * sizeof(float));   /* [n] grad, loss, stop */
  replica_t *rep = xmalloc((size_t)G * sizeof(replica_t));
  ssgd_role_t *roles = xcalloc((size_t)G, sizeof(ssgd_role_t));
  void **th = xmalloc((size_t)G * sizeof(void *));
  /* OpenMP threads per grad role from the USER's --threads (job->cfg; run_setup resolves r->cfg's
   * to all cores). Sim: 1 unless given -- actors run one at a time, and a team per batch-4 kernel
   * only spins (libgomp's spin-wait was 2/3 of a 64-worker run's CPU time). */
  int threads = dist_thread_budget(&job->cfg, G, rt->ops->simulated);
  if (me == 0) r->cfg.threads = threads;   /* the summary's "threads": what each grad role used */
  for (int g = 0; g < G; g++) {
    replica_init(&rep[g], r, c->batch, threads, me * G + g, N * G, 0, (uint64_t)(me * G + g));
    rep[g].overlap = 1;   /* w_hat and D_g are untouched until every grad role is joined */
    roles[g].rep = &rep[g]; roles[g].D = xcalloc(n, sizeof(float)); roles[g].scale = 1.0f / (float)(c->batch * G * N);
  }
  net_init_params(&r->net, w, c->seed);   /* every node starts from the same parameters */
  optim_t o; optim_init(&o, OPT_NAG, n, c->momentum, c->wd);
  double loss_acc = 0, t_grad = 0, t_comm = 0; long loss_n = 0, step;   /* t_*: node 0's time split */
  for (step = 0; step < r->total_steps; step++) {
    watchdog_context("ssgd update %ld on node %d", step, me);
    const float *what = optim_grad_point(&o, w);
    double t0 = rt->ops->now(rt);
    for (int g = 0; g < G; g++) { roles[g].what = what; th[g] = rt->ops->thread_start(rt, g, ssgd_grad_role, &roles[g]); }
    for (int g = 0; g < G; g++) rt->ops->thread_join(rt, th[g]);
    double t1 = rt->ops->now(rt);
    vec_copy(buf, roles[0].D, n); vec_zero(roles[0].D, n);
    double ls = roles[0].loss;
    for (int g = 1; g < G; g++) { vec_add(buf, roles[g].D, n); vec_zero(roles[g].D, n); ls += roles[g].loss; }
    buf[n] = (float)ls; buf[n + 1] = pdl_stop_signal || job->reached ? 1.0f : 0.0f;
    rt->ops->work(rt, 4.0 * n * (2 * G + 1));
    double t2 = rt->ops->now(rt);
    rt->ops->allreduce(rt, buf, n + 2);
    t_grad += t1 - t0; t_comm += rt->ops->now(rt) - t2;
    if (buf[n + 1] > 0) break;
    double loss = buf[n] / (double)(c->batch * G * N);
    optim_step(&o, w, buf, lr_at(c->lr, step, c->warmup));
    rt->ops->work(rt, 4.0 * n * 6);
    loss_acc += loss; loss_n++;
    if (dist_diverged(c, loss)) {   /* same allreduced loss on every node: all stop here */
      if (me == 0) { r->updates = step + 1; run_check_diverged(r, loss, step); }
      break;
    }
    if (me != 0) continue;
    r->updates = step + 1;
    r->epochs_done = (double)(step + 1) / (double)r->steps_per_epoch;
    int epoch_end = (step + 1) % r->steps_per_epoch == 0;
    if (!dist_maybe_eval(rt, job, w, step, epoch_end, step + 1 == r->total_steps, &loss_acc, &loss_n, NULL) && !c->quiet)
      progress("update %ld/%ld  epoch %.2f  loss %.4f", step + 1, r->total_steps, r->epochs_done, loss);
  }
  if (me == 0) {
    if (pdl_stop_signal || r->diverged) dist_maybe_eval(rt, job, w, step, 0, 1, &loss_acc, &loss_n, NULL);
    double tt = dist_time(rt, job);
    char extra[1024];
    double u = r->updates ? (double)r->updates : 1.0;
    int k = snprintf(extra, sizeof extra,
                     "\"nodes\":%d,\"grad_threads\":%d,\"workers\":%d,\"time_per_update_s\":%.9g,"
                     "\"grad_s_per_update\":%.9g,\"allreduce_s_per_update\":%.9g",
                     N, G, N * G, r->updates ? tt / u : 0.0, t_grad / u, t_comm / u);
    if (rt->ops->simulated)
      snprintf(extra + k, sizeof extra - (size_t)k, ",\"platform\":\"%s\",\"device_rate\":\"%s\"", c->platform,
               c->device_rate[0] ? c->device_rate : "platform default");
    run_summary(r, tt, extra);
    dist_dump_params(w, n);
  }
  for (int g = 0; g < G; g++) { replica_free(&rep[g]); xfree(roles[g].D); }
  optim_free(&o);
  xfree(w); xfree(buf); xfree(rep); xfree(roles); xfree(th);
}
