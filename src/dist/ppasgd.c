/* ppasgd.c — ASGD with allreduce (the PP-ASGD paper's Algorithms 1-3) with and without the
 * linear parameter prediction f_S (eq. 2), on the seam; and the same under emulated staleness.
 *
 * Node program (ppasgd_node): the node's main role is the update thread, G grad roles run on the
 * node's devices.
 *   grad role g:  loop while running { lock(W); w_l = w_hat; unlock(W);
 *                   gradient of a sub-batch of b at w_l (randpick: with replacement);
 *                   lock(D_g); D_g += grad; n_g++; unlock(D_g) }
 *   update role:  loop t { for g: lock(D_g); D_L += D_g; D_g = 0; unlock(D_g);
 *                   D_A = allreduce(D_L); M = mu M - lr D_A; w += M;
 *                   lock(W); w_hat = f_S(w, M) (ppasgd) or w (asgd-dist); unlock(W) }
 * Mutexes only where the paper needs them: one per D_g (grad role vs update role) and one for
 * w_hat; w and M belong to the update role alone. The allreduce buffer carries three extra floats
 * (sub-batches gathered, loss sum, stop flag) so every node agrees on progress and on stopping.
 * Staleness: S_bar = 1 + F_U/F_G (eq. 1) = 1 + updates / (sub-batch gradients per grad role),
 * measured online on each node; --staleness auto uses S = floor(S_bar), recomputed every update
 * from the running counts; --staleness N fixes S. F_U, F_G, S_bar and B_bar (sub-batches per
 * update, all nodes) go into every eval line and the summary.
 * The run ends after --steps updates, or when the sub-batches gathered reach --epochs of data.
 *
 * pp_emulate: one process, deterministic. The gradient applied at update t is taken at the
 * w_hat published after update t-S (f_S(w, M) for ppasgd, w for asgd-dist), S fixed. S = 0 is
 * bit-identical to SSGD with one worker (f_0 = NAG). */
#include <math.h>
#include <string.h>
#include "comm/watchdog.h"
#include "dist/dist_internal.h"
#include "dist/pp.h"

typedef struct {
  replica_t rep;
  float *wl, *gbuf, *D;      /* [n] each: local copy of w_hat, this sub-batch's gradient, D_g */
  void *mD;                  /* guards D, cnt, lossacc */
  long cnt; double lossacc;  /* sub-batches and loss sum in D since the update role last took it */
  float *const *what; void *mW;   /* *what: the published w_hat (swapped by the update role) */
  volatile int *running;
  float scale;
} pp_role_t;

static void pp_grad_role(rt_t *rt, void *arg) {
  pp_role_t *g = arg;
  size_t n = g->rep.net->nparams;
  while (__atomic_load_n(g->running, __ATOMIC_ACQUIRE)) {
    rt->ops->mutex_lock(rt, g->mW);
    vec_copy(g->wl, *g->what, n);
    rt->ops->mutex_unlock(rt, g->mW);
    vec_zero(g->gbuf, n);
    double loss = replica_grad(&g->rep, rt, g->wl, g->gbuf, g->scale);
    rt->ops->mutex_lock(rt, g->mD);
    vec_add(g->D, g->gbuf, n);
    __atomic_store_n(&g->cnt, g->cnt + 1, __ATOMIC_RELEASE); g->lossacc += loss;
    rt->ops->mutex_unlock(rt, g->mD);
  }
}

void ppasgd_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes, predict = !strcmp(c->algo, "ppasgd");
  size_t n = r->net.nparams;
  float *w = xmalloc(n * sizeof(float)), *what = xmalloc(n * sizeof(float)), *wnext = xmalloc(n * sizeof(float));
  float *buf = xmalloc((n + 3) * sizeof(float));      /* [n] D, sub-batches, loss sum, stop */
  net_init_params(&r->net, w, c->seed);
  vec_copy(what, w, n);
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  void *mW = rt->ops->mutex_new(rt);
  volatile int running = 1;
  int threads = dist_thread_budget(&job->cfg, G + 1, rt->ops->simulated);
  pp_role_t *roles = xcalloc((size_t)G, sizeof(pp_role_t));
  void **th = xmalloc((size_t)G * sizeof(void *));
  for (int g = 0; g < G; g++) {
    pp_role_t *R = &roles[g];
    replica_init(&R->rep, r, c->batch, threads, 0, 1, 1, (uint64_t)(me * G + g));
    R->wl = xmalloc(n * sizeof(float)); R->gbuf = xmalloc(n * sizeof(float)); R->D = xcalloc(n, sizeof(float));
    R->mD = rt->ops->mutex_new(rt); R->what = &what; R->mW = mW; R->running = &running;
    R->scale = 1.0f / (float)(c->batch * G * N);
    R->rep.overlap = 1;   /* sim: real gradients on the helper pool; safe, wl and gbuf are this role's own */
  }
  for (int g = 0; g < G; g++) th[g] = rt->ops->thread_start(rt, g, pp_grad_role, &roles[g]);

  pp_probe_t probe;
  int probe_on = 0, c_probe_skipped = -1;
  double need_sub = c->steps > 0 ? INFINITY : c->epochs * (double)r->data.train.n / c->batch;
  double total_sub = 0, local_sub = 0, loss_acc = 0; long loss_n = 0, t;
  int S = job->staleness >= 0 ? job->staleness : 0;
  double t0 = rt->ops->now(rt), win_t0 = t0, S_bar = 1;
  long win_u0 = 0; double win_g0 = 0, F_U = 0, F_G = 0;
  long next_epoch = 1, last_eval = -1, next_eval_ex = c->eval_every_examples;
  for (t = 0; c->steps <= 0 || t < c->steps; t++) {
    watchdog_context("%s update %ld on node %d", c->algo, t, me);
    long nsub = 0; double ls = 0;
    vec_zero(buf, n);
    for (int g = 0; g < G; g++) {
      pp_role_t *R = &roles[g];
      if (__atomic_load_n(&R->cnt, __ATOMIC_ACQUIRE) == 0) continue;  /* nothing new: leave D_g's lock alone */
      rt->ops->mutex_lock(rt, R->mD);
      vec_add(buf, R->D, n);
      vec_zero(R->D, n);
      nsub += R->cnt; ls += R->lossacc; R->cnt = 0; R->lossacc = 0;
      rt->ops->mutex_unlock(rt, R->mD);
    }
    local_sub += (double)nsub;
    buf[n] = (float)nsub; buf[n + 1] = (float)ls; buf[n + 2] = pdl_stop_signal || job->reached ? 1.0f : 0.0f;
    rt->ops->work(rt, 4.0 * n * (2 * G + 1));
    rt->ops->allreduce(rt, buf, n + 3);
    if (buf[n + 2] > 0) break;
    double gathered = buf[n];
    total_sub += gathered;
    long eq_step = (long)(total_sub / (G * N));             /* SSGD-equivalent steps, for the warm-up */
    /* the update role's vector work on its own share of the thread budget: otherwise it takes
     * whatever count this thread last had (the process default, or after an evaluation the eval
     * workspace's: all cores), oversubscribing the cores the grad roles compute on (libgomp's
     * barrier spin then stalled every update ~10x) */
    cpu_set_threads(threads);
    optim_step(&o, w, buf, lr_at(c->lr, eq_step, c->warmup));
    /* staleness, eq. 1: S_bar = 1 + F_U / F_G with F_G per grad role */
    if (local_sub > 0) S_bar = 1.0 + (double)(t + 1) / (local_sub / G);
    if (job->staleness < 0) S = (int)floor(S_bar);
    /* w_hat = f_S(w, M) built aside, then published by a pointer swap: the lock is held for the
     * swap only, so the grad roles' copies are never starved by the incessant update loop */
    if (predict) pp_predict(wnext, w, o.M, pp_coef(c->momentum, S), n); else vec_copy(wnext, w, n);
    rt->ops->mutex_lock(rt, mW);
    float *tmp = what; what = wnext; wnext = tmp;
    rt->ops->mutex_unlock(rt, mW);
    rt->ops->work(rt, 4.0 * n * 7);
    if (gathered > 0) { loss_acc += buf[n + 1] / (gathered * c->batch); loss_n++; }
    if (me == 0 && c->probe > 0) {
      if (!probe_on && c_probe_skipped < 0 && total_sub >= (double)r->data.train.n / c->batch) {
        int S0 = job->staleness >= 0 ? job->staleness : S;   /* one epoch done: start measuring */
        if (S0 > PP_PROBE_MAX_S0) {   /* the ring of S0+2 snapshots would not be worth its memory */
          if (!c->quiet) fprintf(stderr, "pdl: probe skipped: measured S0 = %d > %d\n", S0, PP_PROBE_MAX_S0);
          c_probe_skipped = S0;
        } else {
          pp_probe_init(&probe, n, S0, c->probe, t + 1, c->momentum);
          probe_on = 1;
        }
      }
      if (probe_on) pp_probe_step(&probe, t, w, o.M);
    }
    int done = total_sub >= need_sub;
    if (gathered > 0 && dist_diverged(c, buf[n + 1] / (gathered * c->batch))) {  /* allreduced: all nodes agree */
      if (me == 0) { r->updates = t + 1; run_check_diverged(r, buf[n + 1] / (gathered * c->batch), t); }
      break;
    }
    if (me != 0) { if (done) break; else continue; }
    r->updates = t + 1;
    r->epochs_done = total_sub * c->batch / (double)r->data.train.n;
    int epoch_end = r->epochs_done >= (double)next_epoch;
    if (epoch_end) next_epoch = (long)floor(r->epochs_done) + 1;
    double now = rt->ops->now(rt);
    int ex_due = c->eval_every_examples > 0 && total_sub * c->batch >= (double)next_eval_ex;
    if (ex_due) next_eval_ex = ((long)(total_sub * c->batch) / c->eval_every_examples + 1) * c->eval_every_examples;
    if (epoch_end || done || ex_due || (c->eval_every_examples <= 0 && c->eval_every && (t + 1) % c->eval_every == 0)) {
      double dt = now - win_t0;
      if (dt > 0) { F_U = (t + 1 - win_u0) / dt; F_G = (local_sub / G - win_g0) / dt; }
      win_t0 = now; win_u0 = t + 1; win_g0 = local_sub / G;
      char extra[512];
      snprintf(extra, sizeof extra, "\"F_U\":%.6g,\"F_G\":%.6g,\"S_bar\":%.6g,\"S\":%d,\"B_bar\":%.6g,\"sim_or_wall_s\":%.6g",
               F_U, F_G, S_bar, S, total_sub / (t + 1), now - t0);
      dist_maybe_eval(rt, job, w, t, 1, 1, &loss_acc, &loss_n, extra);
      last_eval = t + 1;
    } else if (!c->quiet)
      progress("update %ld  epoch %.2f  S_bar %.2f  B_bar %.2f", t + 1, r->epochs_done, S_bar, total_sub / (t + 1));
    if (done) break;
  }
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  for (int g = 0; g < G; g++) rt->ops->thread_join(rt, th[g]);
  if (me == 0 && r->updates > 0 && r->updates != last_eval) {   /* ended by --steps, a signal or divergence */
    char extra[256];
    snprintf(extra, sizeof extra, "\"S_bar\":%.6g,\"S\":%d,\"B_bar\":%.6g", S_bar, S, total_sub / (double)r->updates);
    dist_maybe_eval(rt, job, w, t, 1, 1, &loss_acc, &loss_n, extra);
  }
  if (me == 0) {
    double tt = dist_time(rt, job);
    if (tt > 0) { F_U = (double)(t + 1) / tt; F_G = (local_sub / G) / tt; }
    char extra[2048], pj[1200] = "\"pred_n\":0";
    if (probe_on) pp_probe_json(&probe, pj, sizeof pj);
    else if (c_probe_skipped >= 0) snprintf(pj, sizeof pj, "\"pred_n\":0,\"pred_S0\":%d,\"pred_skipped\":\"S0 above %d\"",
                                           c_probe_skipped, PP_PROBE_MAX_S0);
    int k = snprintf(extra, sizeof extra,
                     "\"nodes\":%d,\"grad_threads\":%d,\"workers\":%d,\"staleness_mode\":\"%s\",\"S\":%d,\"S_bar\":%.6g,"
                     "\"F_U\":%.6g,\"F_G\":%.6g,\"B_bar\":%.6g,\"time_per_update_s\":%.9g,%s",
                     N, G, N * G, job->staleness < 0 ? "auto" : "fixed", S, S_bar, F_U, F_G,
                     t + 1 > 0 ? total_sub / (t + 1) : 0.0, r->updates ? tt / (double)r->updates : 0.0, pj);
    if (rt->ops->simulated)
      snprintf(extra + k, sizeof extra - (size_t)k, ",\"platform\":\"%s\",\"device_rate\":\"%s\"", c->platform,
               c->device_rate[0] ? c->device_rate : "platform default");
    run_summary(r, tt, extra);
    dist_dump_params(w, n);
  }
  if (probe_on) pp_probe_free(&probe);
  for (int g = 0; g < G; g++) {
    pp_role_t *R = &roles[g];
    replica_free(&R->rep); xfree(R->wl); xfree(R->gbuf); xfree(R->D); rt->ops->mutex_free(rt, R->mD);
  }
  rt->ops->mutex_free(rt, mW);
  optim_free(&o);
  xfree(w); xfree(what); xfree(wnext); xfree(buf); xfree(roles); xfree(th);
}

int pp_emulate(job_t *job, int S, int predict) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  float *w = xmalloc(n * sizeof(float)), *g = xcalloc(n, sizeof(float));  /* optim_step re-zeroes g */
  float *hist = xmalloc((size_t)(S + 1) * n * sizeof(float));   /* ring of the last S+1 w_hat */
  int threads = dist_thread_budget(&job->cfg, 1, 0);
  replica_t rep; replica_init(&rep, r, c->batch, threads, 0, 1, 0, 0);
  net_init_params(&r->net, w, c->seed);
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  float coef = pp_coef(c->momentum, S);
  rt_t self = {rt_real_ops(), 0, 1, 0, 1, NULL};   /* compute()/work() are no-ops in real */
  for (int k = 0; k <= S; k++) vec_copy(hist + (size_t)k * n, w, n);
  pp_probe_t probe; pp_probe_init(&probe, n, S, c->probe, r->steps_per_epoch, c->momentum);
  install_stop_handlers();
  double loss_acc = 0; long loss_n = 0, step;
  double t_start = now_s();
  char extra[2048];
  snprintf(extra, sizeof extra, "\"staleness_mode\":\"emulated\",\"S\":%d,\"S_bar\":%d", S, S);
  for (step = 0; step < r->total_steps && !pdl_stop_signal; step++) {
    /* slot (step+1) mod (S+1) holds w_hat published after update step-S (or w_0) */
    float *slot = hist + (size_t)((step + 1) % (S + 1)) * n;
    double loss = replica_grad(&rep, &self, slot, g, 1.0f / (float)c->batch) / c->batch;
    optim_step(&o, w, g, lr_at(c->lr, step, c->warmup));
    if (predict) pp_predict(slot, w, o.M, coef, n); else vec_copy(slot, w, n);
    pp_probe_step(&probe, step, w, o.M);
    loss_acc += loss; loss_n++;
    r->updates = step + 1;
    r->epochs_done = (double)(step + 1) / (double)r->steps_per_epoch;
    if (run_check_diverged(r, loss, step)) break;
    int epoch_end = (step + 1) % r->steps_per_epoch == 0;
    if (epoch_end || (c->eval_every && (step + 1) % c->eval_every == 0) || step + 1 == r->total_steps) {
      r->train_loss = loss_acc / (double)loss_n; loss_acc = 0; loss_n = 0;
      run_eval(r, w, now_s() - t_start, extra);
    } else if (!c->quiet) progress("update %ld/%ld  epoch %.2f  loss %.4f", step + 1, r->total_steps, r->epochs_done, loss);
  }
  if (r->diverged && loss_n) { r->train_loss = loss_acc / (double)loss_n; run_eval(r, w, now_s() - t_start, extra); }
  size_t k = strlen(extra);
  extra[k++] = ','; pp_probe_json(&probe, extra + k, sizeof extra - k);
  run_summary(r, now_s() - t_start, extra);
  dist_dump_params(w, n);
  pp_probe_free(&probe); replica_free(&rep); optim_free(&o); xfree(w); xfree(g); xfree(hist);
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}
