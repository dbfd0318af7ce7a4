/* easgd.c — the EASGD paper's parallel methods (Zhang, Choromanska, LeCun 2015; docs/PAPERS.md §2) as
 * node programs on the seam (rt.h), with a parameter server (ps.h) holding the center x~:
 * node 0 is the server, nodes 1..p are the workers (p = nodes - 1); all start from the same
 * parameters (net_init_params with the run's seed). Every worker computes its mini-batch
 * gradients on its device (a device role per step, so the sim charges them there) and walks
 * its own slice of the same shuffled stream of global batches of b*p examples (or its own
 * random picks with --with-replacement). eta = --lr, tau = --tau, alpha = --alpha (default
 * beta/p), delta = --delta, l2 = --wd; t_i is worker i's clock (local steps done).
 *
 *   easgd        Alg. 1: if tau | t_i { x~ pulled; d = alpha (x_i - x~); x_i -= d; master
 *                x~ += d (PUSH) }; x_i -= eta (g(x_i) + l2 x_i); t_i++.
 *   eamsgd       Alg. 2: the same elastic step, then the core's Nesterov step with mu = delta:
 *                v = delta v - eta g(x_i + delta v); x_i += v.
 *   easgd-sync   eq. 5-6 with period tau, through collectives (bcast x~, reduce the d_i): every
 *                tau steps x_i -= eta g(x_i) + alpha (x_i - x~) (both at the old x_i) and
 *                x~ += alpha sum_i (x_i - x~) = (1 - beta) x~ + beta mean_i x_i, beta = p alpha.
 *   downpour     as in the authors' mpiT code: x_i -= eta g; a_i -= eta g (accumulated); when
 *                tau | t_i the worker sends a_i, the master adds it (x~ += a_i), the worker
 *                takes x~ back (PUSH_PULL) and zeroes a_i. tau = 1, p = 1 is SGD, bit for bit.
 *   mdownpour    DOWNPOUR with Nesterov momentum on the master: v = delta v + a_i; x~ += v;
 *                a pull hands out x~ + delta v, so for tau = 1 a_i = -eta g(x~ + delta v) and
 *                the master does v = delta v - eta g(x~ + delta v), x~ += v. For tau > 1 the
 *                paper says it is unclear how to apply momentum; we feed the accumulated a_i
 *                to the same rule (our extension, labelled so in the bench).
 *   adownpour    DOWNPOUR; the master also keeps z_{t+1} = (1 - 1/(t+1)) z_t + x~_t/(t+1)
 *                (t = master clock, one tick per commit, z_0 = x~_0); evaluated at z.
 *   mvadownpour  the same with z_{t+1} = (1 - a) z_t + a x~_t, a = 0.001; evaluated at z.
 *                The three share the center trajectory: a server of any of them keeps both
 *                averages and also evaluates the other two points ("views" in eval lines).
 *   seq-<opt>    the sequential comparators (p = 1, one node, no server): the core's optimizer
 *                <opt> in sgd msgd nag asgd mvasgd on the seam, so their time is simulated the
 *                same way and they are evaluated like the center (a run with --threads 1 and a
 *                net without dropout equals `pdl train --algo <opt>` bit for bit).
 *
 * Stopping: each worker makes K local steps (--steps K, or --epochs E: K = E n / (b p), so
 * the workers together see E epochs). Divergence: a worker whose mini-batch loss is NaN/Inf or
 * above --diverge-loss reports it at once and leaves; the server records "diverged at step
 * t_i" (run_check_diverged), as it does when the center's train loss is non-finite or above
 * the bound at an evaluation, and every later reply tells the workers to stop.
 * Evaluation (server, or the seq node): at the start, every --eval-every N local steps summed
 * over workers (default: each epoch) and at the end: test error and loss of the center (or z) on the test
 * set, and its train loss on the first min(train, test) training examples ("train_loss"), as
 * the paper plots them for the center; "worker_loss" is the workers' mean mini-batch loss since
 * the previous evaluation. "updates" counts local steps summed over workers; "master_clock"
 * counts commits. Time: simulated on the sim runtime; wall minus evaluation on the real one
 * (there the server also pauses serving while it evaluates). */
#include <math.h>
#include <string.h>
#include "comm/watchdog.h"
#include "dist/dist_internal.h"
#include "dist/ps.h"

typedef enum { K_EASGD, K_EASGD_SYNC, K_EAMSGD, K_DOWNPOUR, K_MDOWNPOUR, K_ADOWNPOUR, K_MVADOWNPOUR, K_SEQ } ea_kind_t;

#define MVADOWNPOUR_RATE 0.001f   /* the paper's constant moving rate (Sec. 5.2) */

typedef struct {
  ea_kind_t kind;
  opt_kind_t seq_opt;    /* K_SEQ: the core optimizer */
  int p, tau;
  float alpha, delta;
  long K;                /* local steps per worker */
  long eval_every;       /* local steps summed over workers */
} ea_t;

static ea_kind_t kind_of(const char *a, opt_kind_t *seq_opt) {
  static const struct { const char *name; ea_kind_t k; } names[] = {
    {"easgd", K_EASGD}, {"easgd-sync", K_EASGD_SYNC}, {"eamsgd", K_EAMSGD}, {"downpour", K_DOWNPOUR},
    {"mdownpour", K_MDOWNPOUR}, {"adownpour", K_ADOWNPOUR}, {"mvadownpour", K_MVADOWNPOUR}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) if (!strcmp(a, names[i].name)) return names[i].k;
  if (!strncmp(a, "seq-", 4) && optim_parse(a + 4, seq_opt) == 0 && *seq_opt != OPT_ADAM) return K_SEQ;
  die_usage("train: --algo '%s' is not an EASGD-paper method", a);
}
static int downpour_family(ea_kind_t k) { return k == K_DOWNPOUR || k == K_MDOWNPOUR || k == K_ADOWNPOUR || k == K_MVADOWNPOUR; }

static void ea_setup(ea_t *A, const job_t *job, int nnodes) {
  const run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  memset(A, 0, sizeof *A);
  A->kind = kind_of(c->algo, &A->seq_opt);
  A->p = A->kind == K_SEQ ? 1 : nnodes - 1;
  A->tau = c->tau;
  A->alpha = c->alpha >= 0 ? c->alpha : c->beta / (float)A->p;
  A->delta = c->delta;
  A->K = r->total_steps;
  A->eval_every = c->eval_every > 0 ? c->eval_every : r->steps_per_epoch * A->p;
}

/* %.9g, or null for NaN/Inf (JSON has no NaN). */
static const char *jnum(char *buf, double v) {
  if (isfinite(v)) snprintf(buf, 32, "%.9g", v); else snprintf(buf, 32, "null");
  return buf;
}

/* ---- gradients on the worker's device ------------------------------------------------------ */
typedef struct { replica_t rep; const float *at; float *g; double loss; } ea_grad_t;   /* g: [n] */

static void ea_grad_role(rt_t *rt, void *arg) {
  ea_grad_t *G = arg;
  G->loss = replica_grad(&G->rep, rt, G->at, G->g, 1.0f / (float)G->rep.b) / G->rep.b;
}

/* Mini-batch mean gradient at `at` into G->g (overwritten); returns the mean loss. */
static double ea_gradient(rt_t *rt, ea_grad_t *G, const float *at, size_t n) {
  vec_zero(G->g, n);
  G->at = at;
  rt->ops->thread_join(rt, rt->ops->thread_start(rt, 0, ea_grad_role, G));
  return G->loss;
}

static void ea_grad_init(ea_grad_t *G, const run_t *r, int slice, int nslices, int threads) {
  replica_init(&G->rep, r, r->cfg.batch, threads, slice, nslices, r->cfg.with_replacement, (uint64_t)slice);
  G->g = xmalloc(r->net.nparams * sizeof(float));
}
static void ea_grad_free(ea_grad_t *G) { replica_free(&G->rep); xfree(G->g); }

/* ---- evaluation and summary (server or seq node) ------------------------------------------- */
typedef struct { double wl; long wn; long total, master_clock, last_eval; } ea_progress_t;

/* DOWNPOUR, ADOWNPOUR and MVADOWNPOUR share one center trajectory (the averages only change the
 * point that is evaluated), so a server of any of the three keeps both averages, charges their
 * cost, and evaluates all three points: the run's own in the usual fields, the other two under
 * "views" (a DOWNPOUR-family run gives the curves of all three methods at its learning rate). */
typedef struct { const char *name; const float *w; } ea_view_t;

static int ea_train_n(const run_t *r) { return r->data.train.n < r->data.test.n ? r->data.train.n : r->data.test.n; }

/* Evaluates w (center or its average); returns 1 if its train loss says the run diverged. */
static int ea_eval(rt_t *rt, job_t *job, const ea_t *A, const float *w, ea_progress_t *P, const ea_view_t *views, int nviews) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  double t = dist_time(rt, job), t0 = now_s();
  const dataset_t *tr = &r->data.train, *te = &r->data.test;
  double terr, tloss;
  net_evaluate(&r->eval_ws, w, tr->x, tr->y, ea_train_n(r), &terr, &tloss);
  r->train_loss = tloss;
  r->updates = P->total;
  r->epochs_done = (double)P->total * c->batch / (double)tr->n;
  char extra[2048], a[32], b[32], d[32];
  int k = snprintf(extra, sizeof extra, "\"worker_loss\":%s,\"train_err\":%s,\"master_clock\":%ld,\"tau\":%d,\"workers\":%d",
                   jnum(a, P->wn ? P->wl / (double)P->wn : NAN), jnum(b, terr), P->master_clock, A->tau, A->p);
  for (int v = 0; v < nviews; v++) {
    double ve, vl, vte, vtl;
    net_evaluate(&r->eval_ws, views[v].w, tr->x, tr->y, ea_train_n(r), &ve, &vl);
    net_evaluate(&r->eval_ws, views[v].w, te->x, te->y, te->n, &vte, &vtl);
    k += snprintf(extra + k, sizeof extra - (size_t)k, "%s\"%s\":{\"train_loss\":%s,\"test_err\":%s,\"test_loss\":%s}",
                  v ? "," : ",\"views\":{", views[v].name, jnum(a, vl), jnum(b, vte), jnum(d, vtl));
    if (v == nviews - 1) k += snprintf(extra + k, sizeof extra - (size_t)k, "}");
  }
  P->wl = 0; P->wn = 0; P->last_eval = P->total;
  run_eval(r, w, t, extra);
  job->eval_time += now_s() - t0;
  return run_check_diverged(r, tloss, P->total / A->p);
}

static void ea_summary(rt_t *rt, job_t *job, const ea_t *A, const ea_progress_t *P, const float *w) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  double tt = dist_time(rt, job), steps = (double)P->total / A->p;
  char extra[1024];
  int k = snprintf(extra, sizeof extra,
                   "\"nodes\":%d,\"workers\":%d,\"tau\":%d,\"alpha\":%.9g,\"beta\":%.9g,\"delta\":%.9g,\"steps_per_worker\":%.9g,"
                   "\"master_clock\":%ld,\"time_per_step_s\":%.9g,\"eval_point\":\"%s\",\"ps_order\":\"%s\"",
                   rt->nnodes, A->p, A->tau, A->alpha, A->p * A->alpha, A->delta, steps, P->master_clock,
                   steps > 0 ? tt / steps : 0.0,
                   A->kind == K_ADOWNPOUR || A->kind == K_MVADOWNPOUR ||
                           (A->kind == K_SEQ && (A->seq_opt == OPT_ASGD || A->seq_opt == OPT_MVASGD))
                       ? "average" : A->kind == K_SEQ ? "iterate" : "center",
                   c->ps_round_robin ? "round-robin" : "any");
  if (rt->ops->simulated)
    snprintf(extra + k, sizeof extra - (size_t)k, ",\"platform\":\"%s\",\"device_rate\":\"%s\"", c->platform,
             c->device_rate[0] ? c->device_rate : "platform default");
  run_summary(r, tt, extra);
  dist_dump_params(w, r->net.nparams);
}

/* Progress accounting of a header; returns 1 if its loss says the run diverged. */
static int ea_account(run_t *r, ea_progress_t *P, const ps_req_t *q) {
  if (q->steps <= 0) return 0;
  P->total += q->steps; P->wl += q->loss_sum; P->wn += q->steps;
  return run_check_diverged(r, q->loss_sum / q->steps, (long)q->clock);
}

/* ---- asynchronous methods: server ----------------------------------------------------------- */
static void ea_server(rt_t *rt, job_t *job, const ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int avg = A->kind == K_DOWNPOUR || A->kind == K_ADOWNPOUR || A->kind == K_MVADOWNPOUR;
  float *x = xmalloc(n * sizeof(float)), *v = NULL, *pt = NULL, *za = NULL, *zm = NULL;   /* [n] each */
  net_init_params(&r->net, x, c->seed);
  if (A->kind == K_MDOWNPOUR) { v = xcalloc(n, sizeof(float)); pt = xmalloc(n * sizeof(float)); }
  if (avg) { za = xmalloc(n * sizeof(float)); zm = xmalloc(n * sizeof(float)); vec_copy(za, x, n); vec_copy(zm, x, n); }
  ea_view_t all[3] = {{"downpour", x}, {"adownpour", za}, {"mvadownpour", zm}}, views[2];
  const float *evalp = x;
  int nviews = 0;
  for (int i = 0; avg && i < 3; i++) {
    if (!strcmp(all[i].name, c->algo)) evalp = all[i].w; else views[nviews++] = all[i];
  }
  ps_server_t s; ps_server_init(&s, rt, n, c->ps_round_robin);
  ea_progress_t P; memset(&P, 0, sizeof P);
  long next_eval = A->eval_every;
  float delta = A->delta;
  ea_eval(rt, job, A, evalp, &P, views, nviews);     /* the common start point (step 0) */
  while (ps_server_active(&s)) {
    watchdog_context("%s server: %ld local steps, %ld commits", c->algo, P.total, P.master_clock);
    int src; ps_req_t q;
    int op = ps_server_next(&s, &src, &q);
    if (ea_account(r, &P, &q)) s.stop = 1;
    if (op == PS_PUSH || op == PS_PUSH_PULL) {
      const float *d = s.vec;
      if (avg) {   /* averages of x~_0..x~_t, before this commit moves x~ */
        float a = 1.0f / (float)(P.master_clock + 1), m = MVADOWNPOUR_RATE;
        for (size_t i = 0; i < n; i++) { za[i] = (1 - a) * za[i] + a * x[i]; zm[i] = (1 - m) * zm[i] + m * x[i]; }
      }
      if (v) { for (size_t i = 0; i < n; i++) { v[i] = delta * v[i] + d[i]; x[i] += v[i]; } }
      else vec_add(x, d, n);
      P.master_clock++;
      rt->ops->work(rt, 4.0 * n * (3 + (v ? 3 : 0) + (avg ? 6 : 0)));
    }
    if (op == PS_PULL || op == PS_PUSH_PULL) {
      const float *point = x;
      if (v) { for (size_t i = 0; i < n; i++) pt[i] = x[i] + delta * v[i]; point = pt; rt->ops->work(rt, 12.0 * n); }
      ps_server_reply(&s, src, point);
    }
    if (pdl_stop_signal) s.stop = 1;
    if (!s.stop && P.total >= next_eval) {
      if (ea_eval(rt, job, A, evalp, &P, views, nviews)) s.stop = 1;
      next_eval = (P.total / A->eval_every + 1) * A->eval_every;
    } else if (!c->quiet)
      progress("%s: %ld local steps (%.1f per worker), %ld commits", c->algo, P.total, (double)P.total / A->p, P.master_clock);
  }
  if (P.total != P.last_eval) ea_eval(rt, job, A, evalp, &P, views, nviews);
  ea_summary(rt, job, A, &P, x);
  ps_server_free(&s);
  xfree(x); xfree(v); xfree(pt); xfree(za); xfree(zm);
}

/* ---- asynchronous methods: worker ------------------------------------------------------------ */
static void ea_worker(rt_t *rt, job_t *job, const ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int me = rt->node, dp = downpour_family(A->kind), tau = A->tau;
  float *x = xmalloc(n * sizeof(float)), *buf = xcalloc(n, sizeof(float));  /* [n]: x_i; d (easgd) or a_i (downpour) */
  net_init_params(&r->net, x, c->seed);
  ea_grad_t G; ea_grad_init(&G, r, me - 1, A->p, dist_thread_budget(c, 1, rt->ops->simulated));
  optim_t o; optim_init(&o, A->kind == K_EAMSGD ? OPT_NAG : OPT_SGD, n, A->delta, c->wd);
  ps_client_t pc; ps_client_init(&pc, rt, n);
  ps_req_t q; memset(&q, 0, sizeof q);
  double lsum = 0; int ls = 0, stop = 0, bad = 0;
  long t = 0;
  while (t < A->K) {
    watchdog_context("%s worker %d: step %ld of %ld", c->algo, me, t, A->K);
    if (!dp && t % tau == 0) {                       /* elastic step (Alg. 1/2, step a-b) */
      q.steps = ls; q.loss_sum = lsum; q.clock = t; ls = 0; lsum = 0;
      if ((stop = ps_pull(&pc, &q))) break;
      const float *xc = pc.reply;
      float alpha = A->alpha;
      for (size_t i = 0; i < n; i++) { buf[i] = alpha * (x[i] - xc[i]); x[i] -= buf[i]; }
      if (A->kind == K_EAMSGD) optim_refresh(&o, x);
      q.steps = 0; q.loss_sum = 0;
      ps_push(&pc, &q, buf);
      rt->ops->work(rt, 4.0 * n * 5);
    }
    double loss = ea_gradient(rt, &G, optim_grad_point(&o, x), n);
    float lr = lr_at(c->lr, t, c->warmup);
    if (dp) {            /* the core's SGD step, with the step also accumulated in a_i */
      if (c->wd != 0) vec_axpy(G.g, c->wd, x, n);
      vec_axpy(buf, -lr, G.g, n);
      vec_axpy(x, -lr, G.g, n);
    } else optim_step(&o, x, G.g, lr);
    rt->ops->work(rt, 4.0 * n * 6);
    t++; lsum += loss; ls++;
    if (!isfinite(loss) || loss > c->diverge_loss) { bad = 1; break; }
    if (dp && t % tau == 0) {
      q.steps = ls; q.loss_sum = lsum; q.clock = t; ls = 0; lsum = 0;
      stop = ps_push_pull(&pc, &q, buf);
      vec_copy(x, pc.reply, n); vec_zero(buf, n);
      if (stop) break;
    }
  }
  if (dp && !stop && !bad && t % tau != 0) {         /* commit the last partial period */
    q.steps = ls; q.loss_sum = lsum; q.clock = t; ls = 0; lsum = 0;
    ps_push(&pc, &q, buf);
  }
  q.steps = ls; q.loss_sum = lsum; q.clock = t;
  ps_done(&pc, &q);
  ps_client_free(&pc); optim_free(&o); ea_grad_free(&G);
  xfree(x); xfree(buf);
}

/* ---- synchronous EASGD (eq. 5-6) through collectives --------------------------------------- */
static void ea_sync(rt_t *rt, job_t *job, const ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int me = rt->node, tau = A->tau;
  float *x = xmalloc(n * sizeof(float));              /* [n] x~ on the server, x_i on worker i */
  float *bb = xmalloc((n + 1) * sizeof(float));       /* [n + 1] x~, stop flag */
  float *rb = xmalloc((n + 2) * sizeof(float));       /* [n + 2] sum of d_i, loss sum, steps */
  net_init_params(&r->net, x, c->seed);
  ea_grad_t G; optim_t o; memset(&G, 0, sizeof G);
  if (me > 0) {
    ea_grad_init(&G, r, me - 1, A->p, dist_thread_budget(c, 1, rt->ops->simulated));
    optim_init(&o, OPT_SGD, n, 0, c->wd);
  }
  ea_progress_t P; memset(&P, 0, sizeof P);
  long next_eval = A->eval_every, rounds = (A->K + tau - 1) / tau, t = 0;
  int stop = 0;
  if (me == 0) ea_eval(rt, job, A, x, &P, NULL, 0);
  for (long k = 0; k < rounds; k++) {
    watchdog_context("easgd-sync node %d: round %ld of %ld", me, k, rounds);
    if (me == 0) { vec_copy(bb, x, n); bb[n] = stop || pdl_stop_signal ? 1.0f : 0.0f; }
    rt->ops->bcast(rt, bb, n + 1, 0);
    if (bb[n] != 0) break;
    vec_zero(rb, n + 2);
    if (me > 0) {
      float *d = rb;
      for (size_t i = 0; i < n; i++) d[i] = A->alpha * (x[i] - bb[i]);
      long steps = A->K - t < tau ? A->K - t : tau;
      double lsum = 0;
      for (long j = 0; j < steps; j++, t++) {
        double loss = ea_gradient(rt, &G, x, n);
        optim_step(&o, x, G.g, lr_at(c->lr, t, c->warmup));
        if (j == 0) for (size_t i = 0; i < n; i++) x[i] -= d[i];
        rt->ops->work(rt, 4.0 * n * (j == 0 ? 8 : 4));
        lsum += loss;
      }
      rb[n] = (float)lsum; rb[n + 1] = (float)steps;
    }
    rt->ops->reduce(rt, rb, n + 2, 0);
    if (me != 0) continue;
    vec_add(x, rb, n);
    P.master_clock++;
    ps_req_t q = {0, (int32_t)rb[n + 1], (int64_t)((k + 1) * tau), rb[n]};
    if (q.clock > A->K) q.clock = A->K;
    if (ea_account(r, &P, &q)) stop = 1;
    if (pdl_stop_signal) stop = 1;
    if (!stop && P.total >= next_eval) {
      if (ea_eval(rt, job, A, x, &P, NULL, 0)) stop = 1;
      next_eval = (P.total / A->eval_every + 1) * A->eval_every;
    } else if (!c->quiet)
      progress("easgd-sync: round %ld of %ld", k + 1, rounds);
  }
  if (me == 0) {
    if (P.total != P.last_eval) ea_eval(rt, job, A, x, &P, NULL, 0);
    ea_summary(rt, job, A, &P, x);
  } else { optim_free(&o); ea_grad_free(&G); }
  xfree(x); xfree(bb); xfree(rb);
}

/* ---- sequential comparators on the seam ----------------------------------------------------- */
static void ea_seq(rt_t *rt, job_t *job, const ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  float *x = xmalloc(n * sizeof(float));   /* [n] */
  net_init_params(&r->net, x, c->seed);
  ea_grad_t G; ea_grad_init(&G, r, 0, 1, dist_thread_budget(c, 1, rt->ops->simulated));
  optim_t o; optim_init(&o, A->seq_opt, n, c->momentum, c->wd);
  ea_progress_t P; memset(&P, 0, sizeof P);
  long next_eval = A->eval_every;
  ea_eval(rt, job, A, x, &P, NULL, 0);
  for (long t = 0; t < A->K && !pdl_stop_signal; t++) {
    watchdog_context("%s: step %ld of %ld", c->algo, t, A->K);
    double loss = ea_gradient(rt, &G, optim_grad_point(&o, x), n);
    optim_step(&o, x, G.g, lr_at(c->lr, t, c->warmup));
    rt->ops->work(rt, 4.0 * n * 6);
    ps_req_t q = {0, 1, t + 1, loss};
    if (ea_account(r, &P, &q)) break;
    if (P.total >= next_eval) {
      if (ea_eval(rt, job, A, optim_eval_point(&o, x), &P, NULL, 0)) break;
      next_eval += A->eval_every;
    } else if (!c->quiet)
      progress("%s: step %ld of %ld  loss %.4f", c->algo, t + 1, A->K, loss);
  }
  if (P.total != P.last_eval) ea_eval(rt, job, A, optim_eval_point(&o, x), &P, NULL, 0);
  ea_summary(rt, job, A, &P, x);
  optim_free(&o); ea_grad_free(&G); xfree(x);
}

void easgd_node(rt_t *rt, void *arg) {
  job_t *job = arg;
  ea_t A; ea_setup(&A, job, rt->nnodes);
  if (A.kind == K_SEQ) {
    if (rt->nnodes != 1) die_usage("train: --algo %s runs on one node (no mpirun -np > 1; a sim platform of one node)", job->cfg.algo);
    ea_seq(rt, job, &A);
  } else if (A.kind == K_EASGD_SYNC) ea_sync(rt, job, &A);
  else if (rt->node == 0) ea_server(rt, job, &A);
  else ea_worker(rt, job, &A);
}
