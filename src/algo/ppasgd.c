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
 * Checkpoints: on a signal (carried in the allreduce like SSGD's: every node applies that update,
 * stops its grad roles and saves) and at the end; not at epoch ends, where the grad roles are
 * still computing. A node saves w, M, the published w_hat, the staleness counts, and per grad
 * role its D_g with the sub-batch count and loss sum it holds and its replica; the resumed run
 * continues the same trajectory statistically (the roles' interleaving is not reproducible).
 *
 * --device cuda (issue 50; --grad-threads 1): the grad role's replica on the node's device
 * (loop_device, its thread bound by loop_device_thread), its gradient staged (replica_grad_host: w_hat
 * up, the sub-batch's gradient down); w, M, w_hat and D_g stay on the host, where the update role
 * and the grad role share them under their mutexes and the allreduce reads them, and the reporter
 * evaluates w there. Likewise under --staleness emulate:S.
 *
 * pp_emulate: one process, deterministic. The gradient applied at update t is taken at the
 * w_hat published after update t-S (f_S(w, M) for ppasgd, w for asgd-dist), S fixed. S = 0 is
 * bit-identical to SSGD with one worker (f_0 = NAG). Its checkpoints (epoch ends, a signal) hold
 * w, M, the ring of w_hat and the replica, and a resumed run is bit-identical. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "algo/algo.h"
#include "util/env.h"
#include "algo/pp.h"
#include "algo/pp_probe.h"
#include "rt/watchdog.h"

enum { PP_PREDICT = 1, PP_PLAIN = 0 };   /* algo_t.variant: w_hat = f_S(w, M), or w_hat = w */

typedef struct {
  replica_t rep;
  float *wl, *gbuf, *D;      /* [n] each: local copy of w_hat, this sub-batch's gradient, D_g */
  void *mD;                  /* guards D, cnt, lossacc */
  long cnt; double lossacc;  /* sub-batches and loss sum in D since the update role last took it */
  float *const *what; void *mW;   /* *what: the published w_hat (swapped by the update role) */
  volatile int *running;
  float scale;
  const loop_t *L;           /* --device: the role binds its thread to the node's device (loop_device_thread) */
} pp_role_t;

/* grad thread g: loop { lock(W); w_l = w_hat; unlock(W); grad of a sub-batch at w_l;
 *                       lock(D_g); D_g += grad; unlock(D_g) } */
static void pp_grad_role(rt_t *rt, void *arg) {
  pp_role_t *g = arg;
  size_t n = g->rep.net->nparams;
  loop_device_thread(g->L);   /* this thread's context on the node's device, for the run */
  while (__atomic_load_n(g->running, __ATOMIC_ACQUIRE)) {
    rt->ops->mutex_lock(rt, g->mW);
    vec_copy(g->wl, *g->what, n);
    rt->ops->mutex_unlock(rt, g->mW);
    vec_zero(g->gbuf, n);
    double loss = replica_grad_host(&g->rep, rt, g->wl, g->gbuf, g->scale);   /* on the device with --device */
    rt->ops->mutex_lock(rt, g->mD);
    vec_add(g->D, g->gbuf, n);
    __atomic_store_n(&g->cnt, g->cnt + 1, __ATOMIC_RELEASE); g->lossacc += loss;
    rt->ops->mutex_unlock(rt, g->mD);
  }
}

/* Staleness bookkeeping of the update role (eq. 1): S_bar = 1 + F_U / F_G, F_G per grad role. */
typedef struct {
  int N, G, fixed, S;        /* fixed: --staleness N (else S = floor(S_bar), updated every update) */
  double S_bar, F_U, F_G, total_sub, local_sub;
  long t;                    /* updates done */
  double t0, win_t0, win_g0; long win_u0;   /* F_U, F_G over the window since the last eval */
  pp_probe_t probe; int probe_on, probe_skipped;
  int ph_on; double ph_t, ph[6];   /* PDL_PP_PHASES=1: the update role's time per phase (analysis) */
} pp_stats_t;

/* PDL_PP_PHASES=1 (an analysis, off by default: then one branch per phase and no clock read):
 * the update role's time (simulated on the sim runtime) is split into the phases below, summed
 * over updates; the summary prints their means per update as "update_phase_s". */
enum { PH_GATHER, PH_GATHER_WORK, PH_ALLREDUCE, PH_STEP, PH_STEP_WORK, PH_REST, PH_N };
static const char *const ph_name[PH_N] = {"gather_wait", "gather_work", "allreduce", "step_wait", "step_work", "rest"};
static void pp_phase(rt_t *rt, pp_stats_t *s, int k) {
  if (!s->ph_on) return;
  double t = rt->ops->now(rt);
  s->ph[k] += t - s->ph_t; s->ph_t = t;
}

static void pp_eval_json(json_t *j, const loop_t *L, void *arg) {
  pp_stats_t *s = arg;
  double now = L->rt->ops->now(L->rt), dt = now - s->win_t0;
  if (dt > 0) { s->F_U = (s->t - s->win_u0) / dt; s->F_G = (s->local_sub / s->G - s->win_g0) / dt; }
  s->win_t0 = now; s->win_u0 = s->t; s->win_g0 = s->local_sub / s->G;
  json_numf(j, "F_U", s->F_U, 6); json_numf(j, "F_G", s->F_G, 6); json_numf(j, "S_bar", s->S_bar, 6);
  json_int(j, "S", s->S); json_numf(j, "B_bar", s->t ? s->total_sub / s->t : 0.0, 6);
  json_numf(j, "sim_or_wall_s", now - s->t0, 6);
}

static void pp_summary_json(json_t *j, const loop_t *L, void *arg) {
  pp_stats_t *s = arg;
  double tt = L->t_end;
  if (tt > 0) { s->F_U = (double)s->t / tt; s->F_G = (s->local_sub / s->G) / tt; }
  json_int(j, "nodes", s->N); json_int(j, "grad_threads", s->G); json_int(j, "workers", s->N * s->G);
  json_str(j, "staleness_mode", s->fixed ? "fixed" : "auto");
  json_int(j, "S", s->S); json_numf(j, "S_bar", s->S_bar, 6);
  json_numf(j, "F_U", s->F_U, 6); json_numf(j, "F_G", s->F_G, 6);
  json_numf(j, "B_bar", s->t > 0 ? s->total_sub / s->t : 0.0, 6);
  json_num(j, "time_per_update_s", L->r->updates ? tt / (double)L->r->updates : 0.0);
  if (s->ph_on && s->t > 0) {
    char b[512]; int o = 0;
    for (int k = 0; k < PH_N; k++)
      o += snprintf(b + o, sizeof b - (size_t)o, "%s\"%s\":%.6g", k ? "," : "{", ph_name[k], s->ph[k] / (double)s->t);
    snprintf(b + o, sizeof b - (size_t)o, "}");
    json_raw(j, "update_phase_s", b);
  }
  if (s->probe_on) pp_probe_json(&s->probe, j);
  else {
    json_int(j, "pred_n", 0);
    if (s->probe_skipped >= 0) { json_int(j, "pred_S0", s->probe_skipped); json_str(j, "pred_skipped", "S0 above 100"); }
  }
}

/* P1 (an analysis): after one epoch, the probe measures how well f_S predicts w S0+1 updates on. */
static void pp_probe_update(pp_stats_t *s, const run_t *r, long t, const float *w, const float *M, float mu, int S) {
  const train_cfg_t *c = &r->cfg;
  if (!s->probe_on && s->probe_skipped < 0 && s->total_sub >= (double)r->data.train.n / c->batch) {
    int S0 = s->fixed ? s->S : S;
    if (S0 > PP_PROBE_MAX_S0) {   /* the ring of S0+2 snapshots would not be worth its memory */
      if (!c->quiet) fprintf(stderr, "pdl: probe skipped: measured S0 = %d > %d\n", S0, PP_PROBE_MAX_S0);
      s->probe_skipped = S0;
    } else {
      pp_probe_init(&s->probe, r->net.nparams, S0, c->probe, t + 1, mu);
      s->probe_on = 1;
    }
  }
  if (s->probe_on) pp_probe_step(&s->probe, t, w, M);
}

/* The grad roles (not started), their accumulators in the node's snapshot. */
static pp_role_t *pp_roles_init(rt_t *rt, job_t *job, int threads, float *const *what, void *mW, volatile int *running) {
  const run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes;
  size_t n = r->net.nparams;
  pp_role_t *roles = xcalloc((size_t)G, sizeof(pp_role_t));
  for (int g = 0; g < G; g++) {
    pp_role_t *R = &roles[g];
    replica_init(&R->rep, r, c->batch, threads, 0, 1, 1, (uint64_t)(me * G + g));
    R->wl = xmalloc(n * sizeof(float)); R->gbuf = xmalloc(n * sizeof(float)); R->D = xcalloc(n, sizeof(float));
    R->mD = rt->ops->mutex_new(rt); R->what = what; R->mW = mW; R->running = running;
    R->scale = 1.0f / (float)(c->batch * G * N);
    R->rep.overlap = 1;   /* sim: real gradients on the helper pool; safe, wl and gbuf are this role's own */
  }
  return roles;
}
/* The node's snapshot: w, w_hat, the momentum, the staleness counts, every grad role's D_g with
 * its count and loss sum, and its replica. */
static void pp_state(loop_t *L, pp_stats_t *st, float *w, float *what0, optim_t *o, pp_role_t *roles, int G, size_t n) {
  loop_state(L, "w", w, n * sizeof(float));
  loop_state(L, "w_hat", what0, n * sizeof(float));
  loop_state_optim(L, "msgd", o);
  loop_state(L, "S", &st->S, sizeof st->S); loop_state(L, "S_bar", &st->S_bar, sizeof st->S_bar);
  loop_state(L, "total_sub", &st->total_sub, sizeof st->total_sub);
  loop_state(L, "local_sub", &st->local_sub, sizeof st->local_sub); loop_state(L, "t", &st->t, sizeof st->t);
  for (int g = 0; g < G; g++) {
    pp_role_t *R = &roles[g]; char nm[32];
    snprintf(nm, sizeof nm, "role%d.D", g); loop_state(L, nm, R->D, n * sizeof(float));
    snprintf(nm, sizeof nm, "role%d.count", g); loop_state(L, nm, &R->cnt, sizeof R->cnt);
    snprintf(nm, sizeof nm, "role%d.loss", g); loop_state(L, nm, &R->lossacc, sizeof R->lossacc);
    snprintf(nm, sizeof nm, "role%d", g); loop_state_replica(L, nm, &R->rep);
  }
}
static void pp_roles_free(rt_t *rt, pp_role_t *roles, int G) {
  for (int g = 0; g < G; g++) {
    pp_role_t *R = &roles[g];
    replica_free(&R->rep); xfree(R->wl); xfree(R->gbuf); xfree(R->D); rt->ops->mutex_free(rt, R->mD);
  }
  xfree(roles);
}

/* D_L = sum_g D_g; D_g = 0 (into buf[0..n)); returns the sub-batches taken, their loss sum in *ls. */
static long pp_take(rt_t *rt, pp_role_t *roles, int G, float *buf, size_t n, double *ls) {
  long nsub = 0;
  *ls = 0;
  vec_zero(buf, n);
  for (int g = 0; g < G; g++) {
    pp_role_t *R = &roles[g];
    if (__atomic_load_n(&R->cnt, __ATOMIC_ACQUIRE) == 0) continue;  /* nothing new: leave D_g's lock alone */
    rt->ops->mutex_lock(rt, R->mD);
    vec_add(buf, R->D, n);
    vec_zero(R->D, n);
    nsub += R->cnt; *ls += R->lossacc; R->cnt = 0; R->lossacc = 0;
    rt->ops->mutex_unlock(rt, R->mD);
  }
  return nsub;
}

static void ppasgd_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes, predict = job->algo->variant == PP_PREDICT;
  size_t n = r->net.nparams;
  pp_stats_t st; memset(&st, 0, sizeof st);
  st.N = N; st.G = G; st.fixed = job->param >= 0; st.S = st.fixed ? (int)job->param : 0; st.S_bar = 1;
  st.probe_skipped = -1;
  { const char *e = env_get("PDL_PP_PHASES"); st.ph_on = e && *e && strcmp(e, "0"); }
  loop_t L; loop_init(&L, rt, job, LOOP_EXAMPLES, pp_eval_json, pp_summary_json, &st);
  int threads = loop_threads(&L, G + 1);
  float *w = xmalloc(n * sizeof(float)), *what = xmalloc(n * sizeof(float)), *wnext = xmalloc(n * sizeof(float));
  float *buf = xmalloc((n + 1 + CTL_F) * sizeof(float));   /* [n] D, sub-batches, control floats (loss sum, stop, signal) */
  net_init_params(&r->net, w, c->seed);
  vec_copy(what, w, n);
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  void *mW = rt->ops->mutex_new(rt);
  volatile int running = 1;
  pp_role_t *roles = pp_roles_init(rt, job, threads, &what, mW, &running);
  loop_device(&L, "gradients", 0);   /* --device: the grad roles' replicas there */
  for (int g = 0; g < G; g++) { roles[g].L = &L; loop_device_replica(&L, &roles[g].rep); }
  void **th = xmalloc((size_t)G * sizeof(void *));
  float *what0 = what;   /* the buffer the "w_hat" section names (what is swapped every update) */
  pp_state(&L, &st, w, what0, &o, roles, G, n);
  if (loop_resume(&L)) {   /* the saved staleness, range-checked as --staleness is (a crafted file) */
    if (st.S < 0 || st.S > 4096 || !(st.S_bar >= 0 && st.S_bar <= 4096) || !(st.total_sub >= 0 && st.total_sub < 1e18))
      die("checkpoint %s: PP-ASGD's fields 'S' %d, 'S_bar' %g or 'total_sub' %g are out of range ([0, 4096], [0, 4096], "
          "[0, 1e18)): a damaged or crafted file; start over without --resume", loop_node_file(&L), st.S, st.S_bar, st.total_sub);
    loop_check(&L, (double)st.t, 0, (double)(1L << 40), "t (updates done)");   /* the update numbers and S_bar (eq. 1) count from it */
    loop_check(&L, st.local_sub, 0, 1e18, "local_sub");
    for (int g = 0; g < G; g++) loop_check(&L, (double)roles[g].cnt, 0, (double)(1L << 40), "role%d.count", g);
    if (!st.fixed) st.S = (int)floor(st.S_bar);
  }
  for (int g = 0; g < G; g++) th[g] = rt->ops->thread_start(rt, g, pp_grad_role, &roles[g]);

  double need_sub = c->steps > 0 ? INFINITY : c->epochs * (double)r->data.train.n / c->batch;
  st.t0 = st.win_t0 = st.ph_t = rt->ops->now(rt);
  int finished = st.total_sub >= need_sub || (c->steps > 0 && st.t >= c->steps);
  for (long t = st.t; !finished && (c->steps <= 0 || t < c->steps); t++) {
    watchdog_context("%s update %ld on node %d", c->algo, t, me);
    double ls;
    long nsub = pp_take(rt, roles, G, buf, n, &ls);     /* D_L = sum_g D_g; D_g = 0 */
    st.local_sub += (double)nsub;
    buf[n] = (float)nsub; ctl_pack(buf + n + 1, ls, L.job->reached ? 1.0f : 0.0f);
    pp_phase(rt, &st, PH_GATHER);
    rt->ops->work(rt, 4.0 * n * (2 * G + 1));
    pp_phase(rt, &st, PH_GATHER_WORK);
    rt->ops->allreduce(rt, buf, n + 1 + CTL_F);         /* D_A = Allreduce(D_L) */
    pp_phase(rt, &st, PH_ALLREDUCE);
    ctl_t x = ctl_unpack(buf + n + 1);
    if (x.stop > 0) break;
    double gathered = buf[n];
    st.total_sub += gathered;
    long eq_step = (long)(st.total_sub / (G * N));      /* SSGD-equivalent steps, for the warm-up */
    /* the update role computes on its own share of the thread budget, not on whatever count this
     * thread last had (after an evaluation: all cores), which stalled every update ~10x; the
     * setting of the optimizer's backend (optim_t.k: the CPU's) */
    if (o.k->set_threads) o.k->set_threads(threads);
    optim_step(&o, w, buf, loop_lr(&L, eq_step));   /* M = mu M - lambda D_A; w += M */
    if (st.local_sub > 0) st.S_bar = 1.0 + (double)(t + 1) / (st.local_sub / G);   /* eq. 1 */
    if (!st.fixed) st.S = (int)floor(st.S_bar);
    /* w_hat = f_S(w, M) (eq. 2), built aside and published by a pointer swap under W */
    if (predict) pp_predict(wnext, w, o.M, pp_coef(c->momentum, st.S), n); else vec_copy(wnext, w, n);
    rt->ops->mutex_lock(rt, mW);
    float *tmp = what; what = wnext; wnext = tmp;
    rt->ops->mutex_unlock(rt, mW);
    pp_phase(rt, &st, PH_STEP);
    rt->ops->work(rt, 4.0 * n * 7);
    pp_phase(rt, &st, PH_STEP_WORK);
    st.t = t + 1;
    double loss = gathered > 0 ? x.loss / (gathered * c->batch) : 0;
    if (gathered > 0) loop_loss(&L, loss, 1);
    if (me == 0 && c->probe > 0) pp_probe_update(&st, r, t, w, o.M, c->momentum, st.S);
    int done = st.total_sub >= need_sub;
    if (gathered > 0 && loop_diverged(&L, loss, t)) break;   /* allreduced: all nodes agree */
    loop_progress(&L, w, t + 1, st.total_sub * c->batch, done);
    if (x.signal > 0) { loop_interrupted(x.signal); break; }   /* every node: this update done */
    pp_phase(rt, &st, PH_REST);
    if (done) break;
  }
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  for (int g = 0; g < G; g++) rt->ops->thread_join(rt, th[g]);
  if (what != what0) vec_copy(what0, what, n);   /* the roles are joined: D_g, w_hat and w are one cut */
  loop_checkpoint(&L, 1);
  loop_finish(&L, w, w);
  if (st.probe_on) pp_probe_free(&st.probe);
  pp_roles_free(rt, roles, G);
  rt->ops->mutex_free(rt, mW);
  optim_free(&o);
  xfree(w); xfree(what); xfree(wnext); xfree(buf); xfree(th);
}

/* ---- emulated staleness: one process, deterministic ------------------------------------------
 * The gradient applied at update t is taken at the w_hat published after update t-S (f_S(w, M)
 * for ppasgd, w for asgd-dist), S fixed. S = 0 is bit-identical to SSGD with one worker. */
typedef struct { int S; pp_probe_t probe; } emu_t;

static void emu_eval_json(json_t *j, const loop_t *L, void *arg) {
  (void)L; const emu_t *e = arg;
  json_str(j, "staleness_mode", "emulated"); json_int(j, "S", e->S); json_int(j, "S_bar", e->S);
}
static void emu_summary_json(json_t *j, const loop_t *L, void *arg) {
  emu_eval_json(j, L, arg);
  pp_probe_json(&((emu_t *)arg)->probe, j);
}

static int pp_emulate(job_t *job, int S, int predict) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  rt_real_clock_start();
  rt_t self = {rt_real_ops(), 0, 1, 0, 1, NULL};   /* one node; compute()/work() are no-ops in real */
  emu_t e; e.S = S;
  loop_t L; loop_init(&L, &self, job, LOOP_UPDATES, emu_eval_json, emu_summary_json, &e);
  float *w = xmalloc(n * sizeof(float)), *g = xcalloc(n, sizeof(float));  /* optim_step re-zeroes g */
  float *hist = xmalloc((size_t)(S + 1) * n * sizeof(float));   /* ring of the last S+1 w_hat */
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 1), 0, 1, 0, 0);
  loop_device(&L, "gradients", 0);   /* --device: the gradients there, w and M on the host */
  loop_device_replica(&L, &rep);
  net_init_params(&r->net, w, c->seed);
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  float coef = pp_coef(c->momentum, S);
  for (int k = 0; k <= S; k++) vec_copy(hist + (size_t)k * n, w, n);
  pp_probe_init(&e.probe, n, S, c->probe, r->steps_per_epoch, c->momentum);
  loop_state(&L, "w", w, n * sizeof(float));
  loop_state(&L, "w_hat_ring", hist, (size_t)(S + 1) * n * sizeof(float));
  loop_state_optim(&L, "msgd", &o);
  loop_state_replica(&L, "replica", &rep);
  long step = loop_resume(&L) ? L.updates : 0;
  install_stop_handlers();
  for (; step < r->total_steps && !pdl_stop_signal; step++) {
    /* slot (step+1) mod (S+1) holds the w_hat published after update step-S (or w_0) */
    float *slot = hist + (size_t)((step + 1) % (S + 1)) * n;
    double loss = replica_grad_host(&rep, &self, slot, g, 1.0f / (float)c->batch) / c->batch;
    optim_step(&o, w, g, loop_lr(&L, step));
    if (predict) pp_predict(slot, w, o.M, coef, n); else vec_copy(slot, w, n);
    pp_probe_step(&e.probe, step, w, o.M);
    loop_loss(&L, loss, 1);
    if (loop_diverged(&L, loss, step)) break;
    loop_progress(&L, w, step + 1, (double)(step + 1) * c->batch, step + 1 == r->total_steps);
    loop_checkpoint(&L, 0);   /* epoch ends */
  }
  loop_checkpoint(&L, 1);
  loop_finish(&L, w, w);
  pp_probe_free(&e.probe); replica_free(&rep); optim_free(&o); xfree(w); xfree(g); xfree(hist);
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}

/* --staleness auto | N | emulate:N. emulate runs here, in this process, instead of a runtime. */
static int pp_prepare(job_t *job) {
  train_cfg_t c = job->r.cfg;
  const char *s = c.staleness;
  int emulate = !strncmp(s, "emulate:", 8);
  if (emulate) s += 8;
  if (strcmp(s, "auto") || emulate) job->param = parse_long("--staleness", s, 0, 4096);
  if (c.checkpoint[0] && c.probe > 0)
    die_usage("train: --probe is an analysis of one uninterrupted run; it does not go with --checkpoint");
  if (!emulate) return -1;
  if (!strcmp(c.runtime, "sim")) die_usage("train: --staleness emulate runs in one process; drop --runtime sim");
  if (strcmp(c.coll, "mpi")) die_usage("train: --staleness emulate runs in one process, with no collectives; drop --coll %s", c.coll);
  run_setup(&job->r, &c, c.batch);
  int rc = pp_emulate(job, (int)job->param, job->algo->variant == PP_PREDICT);
  run_free(&job->r);
  return rc;
}

static const optdef_t *const pp_opts[] = {ALGO_OPTS_DIST, &od_grad_threads, &od_staleness, &od_probe, NULL};
const algo_t algo_ppasgd = {
  .name = "ppasgd", .shape = ALGO_PEERS, .momentum = 0.99f, .node = ppasgd_node, .prepare = pp_prepare,
  .variant = PP_PREDICT, .checkpoint = 1, .device = 1,
  .help = "asynchronous SGD with allreduce and parameter prediction f_S (PP-ASGD paper Alg. 1-3, eq. 2)",
  .opts = pp_opts,
};
const algo_t algo_asgd_dist = {
  .name = "asgd-dist", .shape = ALGO_PEERS, .momentum = 0.99f, .node = ppasgd_node, .prepare = pp_prepare,
  .variant = PP_PLAIN, .checkpoint = 1, .device = 1,
  .help = "asynchronous SGD with allreduce, no prediction (w_hat = w; PP-ASGD paper's ASGD)",
  .opts = pp_opts,
};
