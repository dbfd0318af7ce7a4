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
 *                --worker-opt (easgd only; default sgd, Alg. 1 as above): the worker's own step
 *                between elastic steps is msgd / nag (mu = --momentum) or adam instead, as
 *                dist-keras' AEASGDWorker runs Keras' train_on_batch with the worker optimizer
 *                (Hermans' AEASGD: Adam, alpha = rho * learning_rate = 5 * 0.01). The elastic step
 *                is unchanged and the optimizer's state (momentum, Adam's moments and step count)
 *                is kept across it, as Keras' set_weights keeps it; NAG re-derives its look-ahead
 *                point from the moved x_i.
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
 * The p = 1 comparators (seq-sgd ...) are in src/algo/seq.c.
 *
 * Stopping: each worker makes K local steps (--steps K, or --epochs E: K = E n / (b p), so
 * the workers together see E epochs). Divergence: a worker whose mini-batch loss is NaN/Inf or
 * above --diverge-loss reports it at once and leaves; the server records "diverged at step
 * t_i", as it does when the center's train loss is non-finite or above the bound at an
 * evaluation, and every later reply tells the workers to stop.
 * Evaluation (the server, through the node loop's LOOP_CLOCK schedule): at the start, every
 * --eval-every N local steps summed over workers (default: each epoch) and at the end: the
 * center (or z) on the test set and on the first min(train, test) training examples; "updates"
 * counts local steps summed over workers, "master_clock" commits. Time: simulated on the sim
 * runtime; wall minus evaluation on the real one (the server pauses serving while it evaluates). */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "algo/algo.h"
#include "algo/ps.h"
#include "rt/watchdog.h"

typedef enum { K_EASGD, K_EASGD_SYNC, K_EAMSGD, K_DOWNPOUR, K_MDOWNPOUR, K_ADOWNPOUR, K_MVADOWNPOUR } ea_kind_t;

#define MVADOWNPOUR_RATE 0.001f   /* the paper's constant moving rate (Sec. 5.2) */

/* easgd's own option (OD_ALGO, in train_cfg_t.algo_opts): the workers' local optimizer. Its own
 * descriptor, not the shared od_worker_opt (opts.c): that one defaults to adam (agn's workers). */
typedef struct { char worker_opt[16]; } ea_opts_t;

typedef struct {
  ea_kind_t kind;
  opt_kind_t wopt;       /* the workers' local optimizer: sgd (Alg. 1), nag (EAMSGD), --worker-opt (easgd) */
  float wmu;             /* its momentum: delta (EAMSGD), --momentum (easgd with msgd / nag) */
  int p, tau;
  float alpha, delta;
  long K;                /* local steps per worker */
  long total, master_clock;   /* server: local steps summed over workers, commits */
  const char *views[2]; const float *view_w[2]; int nviews;   /* server: the other DOWNPOUR points */
} ea_t;

static int downpour_family(ea_kind_t k) { return k == K_DOWNPOUR || k == K_MDOWNPOUR || k == K_ADOWNPOUR || k == K_MVADOWNPOUR; }

static void ea_setup(ea_t *A, const job_t *job, int nnodes) {
  const run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  memset(A, 0, sizeof *A);
  A->kind = (ea_kind_t)job->algo->variant;
  A->p = nnodes - 1;
  A->tau = c->tau;
  A->alpha = c->alpha >= 0 ? c->alpha : c->beta / (float)A->p;   /* alpha = beta / p */
  A->delta = c->delta;
  A->K = r->total_steps;
  A->wopt = A->kind == K_EAMSGD ? OPT_NAG : OPT_SGD;
  A->wmu = A->delta;
  if (A->kind == K_EASGD) {
    const ea_opts_t *o = (const ea_opts_t *)c->algo_opts;
    if (optim_parse(o->worker_opt, &A->wopt)) die_usage("train: --worker-opt '%s'", o->worker_opt);
    if (A->wopt != OPT_SGD) A->wmu = c->momentum;
  }
}

/* ---- what the server adds to the eval lines and the summary ---------------------------------- */
static void ea_eval_json(json_t *j, const loop_t *L, void *arg) {
  const ea_t *A = arg; run_t *r = L->r;
  json_int(j, "master_clock", A->master_clock); json_int(j, "tau", A->tau); json_int(j, "workers", A->p);
  if (!A->nviews) return;
  /* DOWNPOUR, ADOWNPOUR and MVADOWNPOUR share one center trajectory: the other two points too */
  const dataset_t *tr = &r->data.train, *te = &r->data.test;
  int ntr = tr->n < te->n ? tr->n : te->n;
  json_t v; json_begin(&v);
  for (int i = 0; i < A->nviews; i++) {
    double ve, vl, vte, vtl;
    net_evaluate(&r->eval_ws, A->view_w[i], tr->x, tr->y, ntr, &ve, &vl);
    net_evaluate(&r->eval_ws, A->view_w[i], te->x, te->y, te->n, &vte, &vtl);
    json_t one; json_begin(&one);
    json_num(&one, "train_loss", vl); json_num(&one, "test_err", vte); json_num(&one, "test_loss", vtl);
    json_raw(&v, A->views[i], json_end(&one));
  }
  json_raw(j, "views", json_end(&v));
}

static void ea_summary_json(json_t *j, const loop_t *L, void *arg) {
  const ea_t *A = arg; const train_cfg_t *c = &L->r->cfg;
  double steps = (double)A->total / A->p;
  json_int(j, "nodes", L->rt->nnodes); json_int(j, "workers", A->p); json_int(j, "tau", A->tau);
  json_num(j, "alpha", A->alpha); json_num(j, "beta", A->p * A->alpha); json_num(j, "delta", A->delta);
  if (A->kind == K_EASGD) json_str(j, "worker_opt", optim_name(A->wopt));
  json_num(j, "steps_per_worker", steps); json_int(j, "master_clock", A->master_clock);
  json_num(j, "time_per_step_s", steps > 0 ? L->t_end / steps : 0.0);
  json_str(j, "eval_point", A->kind == K_ADOWNPOUR || A->kind == K_MVADOWNPOUR ? "average" : "center");
  json_str(j, "ps_order", c->ps_round_robin ? "round-robin" : "any");
}

/* A worker's header: its local steps and loss since the last one. Returns 1 if they diverged. */
static int ea_account(loop_t *L, ea_t *A, const ps_req_t *q) {
  if (q->steps <= 0) return 0;
  A->total += q->steps;
  loop_advance(L, A->total, (double)A->total * L->r->cfg.batch);
  loop_loss(L, q->loss_sum, q->steps);
  return loop_diverged(L, q->loss_sum / q->steps, (long)q->clock);
}

/* ---- asynchronous methods: server ----------------------------------------------------------- */
static void ea_server(rt_t *rt, job_t *job, ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int avg = A->kind == K_DOWNPOUR || A->kind == K_ADOWNPOUR || A->kind == K_MVADOWNPOUR;
  float *x = xmalloc(n * sizeof(float)), *v = NULL, *pt = NULL, *za = NULL, *zm = NULL;   /* [n] each */
  net_init_params(&r->net, x, c->seed);
  if (A->kind == K_MDOWNPOUR) { v = xcalloc(n, sizeof(float)); pt = xmalloc(n * sizeof(float)); }
  if (avg) { za = xmalloc(n * sizeof(float)); zm = xmalloc(n * sizeof(float)); vec_copy(za, x, n); vec_copy(zm, x, n); }
  const char *names[3] = {"downpour", "adownpour", "mvadownpour"};
  const float *points[3] = {x, za, zm}, *evalp = x;
  for (int i = 0; avg && i < 3; i++) {
    if (!strcmp(names[i], c->algo)) evalp = points[i];
    else { A->views[A->nviews] = names[i]; A->view_w[A->nviews++] = points[i]; }
  }
  loop_t L; loop_init(&L, rt, job, LOOP_CLOCK, ea_eval_json, ea_summary_json, A);
  loop_threads(&L, 1);   /* the workers' budget: the "threads" figure */
  ps_server_t s; ps_server_init(&s, rt, n, c->ps_round_robin);
  float delta = A->delta;
  loop_state(&L, "center", x, n * sizeof(float));
  if (v) loop_state(&L, "master_momentum", v, n * sizeof(float));
  if (avg) { loop_state(&L, "average", za, n * sizeof(float)); loop_state(&L, "moving_average", zm, n * sizeof(float)); }
  loop_state(&L, "local_steps", &A->total, sizeof A->total);
  loop_state(&L, "master_clock", &A->master_clock, sizeof A->master_clock);
  if (loop_resume(&L) && (A->total < 0 || A->master_clock < 0))   /* a crafted file */
    die("checkpoint %s: field 'local_steps' %ld or 'master_clock' %ld is negative: a damaged or crafted file; start over "
        "without --resume", loop_node_file(&L), A->total, A->master_clock);
  loop_begin(&L, evalp);     /* the common start point (step 0) */
  while (ps_server_active(&s)) {
    watchdog_context("%s server: %ld local steps, %ld commits", c->algo, A->total, A->master_clock);
    int src; ps_req_t q;
    int op = ps_server_next(&s, &src, &q);
    if (ea_account(&L, A, &q)) s.stop = 1;
    if (op == PS_PUSH || op == PS_PUSH_PULL) {
      const float *d = s.vec;
      if (avg) {   /* ADOWNPOUR / MVADOWNPOUR averages of x~_0..x~_t, before this commit moves x~ */
        float a = 1.0f / (float)(A->master_clock + 1), m = MVADOWNPOUR_RATE;
        for (size_t i = 0; i < n; i++) { za[i] = (1 - a) * za[i] + a * x[i]; zm[i] = (1 - m) * zm[i] + m * x[i]; }
      }
      if (v) { for (size_t i = 0; i < n; i++) { v[i] = delta * v[i] + d[i]; x[i] += v[i]; } }  /* MDOWNPOUR */
      else vec_add(x, d, n);                           /* x~ += d (EASGD) or x~ += a_i (DOWNPOUR) */
      A->master_clock++;
      rt->ops->work(rt, 4.0 * n * (3 + (v ? 3 : 0) + (avg ? 6 : 0)));
    }
    if (op == PS_PULL || op == PS_PUSH_PULL) {
      const float *point = x;
      if (v) { for (size_t i = 0; i < n; i++) pt[i] = x[i] + delta * v[i]; point = pt; rt->ops->work(rt, 12.0 * n); }
      ps_server_reply(&s, src, point);
    }
    if (pdl_stop_signal && !s.stop) s.stop = pdl_stop_signal;
    if (!s.stop && loop_progress(&L, evalp, A->total, (double)A->total * c->batch, 0)) s.stop = 1;
  }
  loop_checkpoint(&L, 1);    /* every worker has left: the center and clocks are final for this cut */
  loop_finish(&L, evalp, x);
  ps_server_free(&s);
  xfree(x); xfree(v); xfree(pt); xfree(za); xfree(zm);
}

/* ---- asynchronous methods: worker ------------------------------------------------------------ */
static void ea_worker(rt_t *rt, job_t *job, const ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int me = rt->node, dp = downpour_family(A->kind), tau = A->tau;
  float *x = xmalloc(n * sizeof(float)), *buf = xcalloc(n, sizeof(float));  /* [n]: x_i; d (easgd) or a_i (downpour) */
  float *g = xmalloc(n * sizeof(float));                                     /* [n] mini-batch gradient */
  net_init_params(&r->net, x, c->seed);
  loop_t L; loop_init(&L, rt, job, LOOP_CLOCK, NULL, NULL, NULL);
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 1), me - 1, A->p, c->with_replacement, (uint64_t)(me - 1));
  rep.overlap = 1;   /* sim: gradients on the helper pool; safe, nothing writes x or g while the role computes */
  loop_device(&L, "worker gradients", 0);   /* --device: the gradients there, x on the host */
  loop_device_replica(&L, &rep);
  optim_t o; optim_init(&o, A->wopt, n, A->wmu, c->wd);   /* SGD (Alg. 1), NAG (EAMSGD) or --worker-opt */
  ps_client_t pc; ps_client_init(&pc, rt, n);
  ps_req_t q; memset(&q, 0, sizeof q);
  double lsum = 0; int ls = 0, stop = 0, bad = 0, stopped = 0;
  loop_state(&L, "x", x, n * sizeof(float));
  loop_state(&L, dp ? "accumulated" : "elastic", buf, n * sizeof(float));
  loop_state_optim(&L, "optimizer", &o);
  loop_state_replica(&L, "worker", &rep);
  long t = loop_resume(&L) ? L.updates : 0;   /* L.updates: this worker's clock t_i */
  optim_refresh(&o, x);
  while (t < A->K) {
    watchdog_context("%s worker %d: step %ld of %ld", c->algo, me, t, A->K);
    if (pdl_stop_signal) { stopped = 1; break; }    /* a signal here: leave, telling the server */
    if (!dp && t % tau == 0) {                       /* elastic step (Alg. 1/2): if tau | t_i */
      q.steps = ls; q.loss_sum = lsum; q.clock = t; ls = 0; lsum = 0;
      if ((stop = ps_pull(&pc, &q))) break;          /* x = x~ */
      const float *xc = pc.reply;
      float alpha = A->alpha;
      for (size_t i = 0; i < n; i++) { buf[i] = alpha * (x[i] - xc[i]); x[i] -= buf[i]; }   /* x_i -= alpha (x_i - x) */
      if (o.kind == OPT_NAG) optim_refresh(&o, x);  /* the look-ahead from the moved x_i; other state kept */
      q.steps = 0; q.loss_sum = 0;
      ps_push(&pc, &q, buf);                         /* x~ += alpha (x_i - x) */
      rt->ops->work(rt, 4.0 * n * 5);
    }
    double loss = replica_grad_on_device(&rep, rt, 0, optim_grad_point(&o, x), g);
    float lr = loop_lr(&L, t);
    if (dp) {            /* x_i -= eta g; a_i -= eta g (the core's SGD step, accumulated) */
      if (c->wd != 0) vec_axpy(g, c->wd, x, n);
      vec_axpy(buf, -lr, g, n);
      vec_axpy(x, -lr, g, n);
    } else optim_step(&o, x, g, lr);                 /* x_i -= eta g(x_i), EAMSGD's Nesterov step, or --worker-opt's */
    rt->ops->work(rt, 4.0 * n * 6);
    t++; lsum += loss; ls++;
    loop_advance(&L, t, 0);
    if (!isfinite(loss) || loss > c->diverge_loss) { bad = 1; break; }
    if (dp && t % tau == 0) {                        /* DOWNPOUR: commit a_i, take x~ back */
      q.steps = ls; q.loss_sum = lsum; q.clock = t; ls = 0; lsum = 0;
      stop = ps_push_pull(&pc, &q, buf);
      vec_copy(x, pc.reply, n); vec_zero(buf, n);
      if (stop) break;
    }
  }
  if (dp && !stop && !bad && !stopped && t % tau != 0) {   /* commit the last partial period */
    q.steps = ls; q.loss_sum = lsum; q.clock = t; ls = 0; lsum = 0;
    ps_push(&pc, &q, buf);
    vec_zero(buf, n);
  }
  q.steps = ls; q.loss_sum = lsum; q.clock = t;
  if (stopped) ps_stopped(&pc, &q); else ps_done(&pc, &q);
  loop_checkpoint(&L, 1);   /* x, a_i, momentum, sampler at t_i; the server has its share */
  ps_client_free(&pc); optim_free(&o); replica_free(&rep);
  xfree(x); xfree(buf); xfree(g);
}

/* ---- synchronous EASGD (eq. 5-6) through collectives --------------------------------------- */
static void ea_sync(rt_t *rt, job_t *job, ea_t *A) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int me = rt->node, tau = A->tau;
  float *x = xmalloc(n * sizeof(float));              /* [n] x~ on the server, x_i on worker i */
  float *bb = xmalloc((n + 1) * sizeof(float));       /* [n + 1] x~, stop flag */
  float *rb = xmalloc((n + CTL_F) * sizeof(float));   /* [n] sum of d_i, control floats (loss sum, -, signals) */
  float *g = xmalloc(n * sizeof(float));
  net_init_params(&r->net, x, c->seed);
  loop_t L; loop_init(&L, rt, job, LOOP_CLOCK, ea_eval_json, ea_summary_json, A);
  int threads = loop_threads(&L, 1);
  replica_t rep; optim_t o; memset(&rep, 0, sizeof rep);
  if (me > 0) {
    replica_init(&rep, r, c->batch, threads, me - 1, A->p, c->with_replacement, (uint64_t)(me - 1));
    rep.overlap = 1;   /* sim: the helper pool, as in ea_worker */
    loop_device(&L, "worker gradients", 0);   /* --device: as in ea_worker */
    loop_device_replica(&L, &rep);
    optim_init(&o, OPT_SGD, n, 0, c->wd);
  }
  long rounds = (A->K + tau - 1) / tau, t = 0, k = 0;
  int stop = 0;
  loop_state(&L, me == 0 ? "center" : "x", x, n * sizeof(float));
  loop_state(&L, "round", &k, sizeof k);
  if (me == 0) {
    loop_state(&L, "local_steps", &A->total, sizeof A->total);
    loop_state(&L, "master_clock", &A->master_clock, sizeof A->master_clock);
  } else {
    loop_state(&L, "clock", &t, sizeof t);
    loop_state_optim(&L, "optimizer", &o);
    loop_state_replica(&L, "worker", &rep);
  }
  /* a crafted file: a negative round or clock would run on for as many rounds (past the run's end is the
   * loop's own refusal, "nothing to resume") */
  if (loop_resume(&L) && (k < 0 || t < 0 || A->total < 0 || A->master_clock < 0))
    die("checkpoint %s: field 'round' %ld, 'clock' %ld, 'local_steps' %ld or 'master_clock' %ld is negative: a damaged or "
        "crafted file; start over without --resume", loop_node_file(&L), k, t, A->total, A->master_clock);
  loop_begin(&L, x);
  for (; k < rounds; k++) {
    watchdog_context("easgd-sync node %d: round %ld of %ld", me, k, rounds);
    if (me == 0) { vec_copy(bb, x, n); bb[n] = stop ? (float)stop : loop_signal_flag(); }
    rt->ops->bcast(rt, bb, n + 1, 0);                 /* every worker gets x~ */
    if (bb[n] != 0) { loop_interrupted(bb[n]); break; }   /* before the round: every node's state is round k's start */
    vec_zero(rb, n + CTL_F);
    if (me > 0) {
      float *d = rb;
      for (size_t i = 0; i < n; i++) d[i] = A->alpha * (x[i] - bb[i]);   /* d_i = alpha (x_i - x~) */
      long steps = A->K - t < tau ? A->K - t : tau;
      double lsum = 0;
      for (long j = 0; j < steps; j++, t++) {         /* x_i -= eta g(x_i) + d_i (both at the old x_i) */
        double loss = replica_grad_on_device(&rep, rt, 0, x, g);
        optim_step(&o, x, g, loop_lr(&L, t));
        if (j == 0) for (size_t i = 0; i < n; i++) x[i] -= d[i];
        rt->ops->work(rt, 4.0 * n * (j == 0 ? 8 : 4));
        lsum += loss;
      }
      ctl_pack(rb + n, lsum, 0);                      /* (the server decides when to stop) */
    }
    rt->ops->reduce(rt, rb, n + CTL_F, 0);            /* x~ += sum_i d_i */
    if (me != 0) continue;
    vec_add(x, rb, n);
    A->master_clock++;
    ctl_t cx = ctl_unpack(rb + n);
    long steps = A->K - k * tau < tau ? A->K - k * tau : tau;   /* every worker's, this round */
    ps_req_t q = {0, (int32_t)(steps * A->p), (int64_t)((k + 1) * tau), cx.loss, 0, 0};
    if (q.clock > A->K) q.clock = A->K;
    if (ea_account(&L, A, &q)) stop = 1;
    if (!stop && cx.signal > 0) stop = cx.signal < 64 ? (int)cx.signal : 15;   /* a worker's signal */
    if (!stop && pdl_stop_signal) stop = pdl_stop_signal;
    if (!stop && loop_progress(&L, x, A->total, (double)A->total * c->batch, 0)) stop = 1;
  }
  if (k == rounds || pdl_stop_signal) loop_checkpoint(&L, 1);
  loop_finish(&L, x, x);
  if (me > 0) { optim_free(&o); replica_free(&rep); }
  xfree(x); xfree(bb); xfree(rb); xfree(g);
}

static void easgd_node(rt_t *rt, void *arg) {
  job_t *job = arg;
  ea_t A; ea_setup(&A, job, rt->nnodes);
  if (A.kind == K_EASGD_SYNC) ea_sync(rt, job, &A);
  else if (rt->node == 0) ea_server(rt, job, &A);
  else ea_worker(rt, job, &A);
}

#define EO(field) OD_ALGO, offsetof(ea_opts_t, field), sizeof(((ea_opts_t *)0)->field)
static const char *const ea_worker_opts[] = {"sgd", "msgd", "nag", "adam", NULL};
static const optdef_t od_ea_worker_opt = {"--worker-opt", OD_STR, 0, 0, ea_worker_opts, "sgd", "O",
  "easgd: the workers' own step between elastic steps: sgd (Alg. 1) | msgd | nag | adam (Hermans' AEASGD), its state kept across them",
  EO(worker_opt), 1, NULL};
#define EA_OPTS ALGO_OPTS_DIST, &od_tau, &od_with_replacement
static const optdef_t *const ea_opts[] = {EA_OPTS, &od_alpha, &od_beta, &od_ps_order, &od_ea_worker_opt, NULL};
static const optdef_t *const ea_sync_opts[] = {EA_OPTS, &od_alpha, &od_beta, NULL};
static const optdef_t *const eam_opts[] = {EA_OPTS, &od_alpha, &od_beta, &od_ps_order, &od_delta, NULL};
static const optdef_t *const dp_opts[] = {EA_OPTS, &od_ps_order, NULL};
static const optdef_t *const mdp_opts[] = {EA_OPTS, &od_ps_order, &od_delta, NULL};
#define EA_ALGO(cname, aname, kind, reads, text) \
  const algo_t algo_##cname = {.name = aname, .shape = ALGO_SERVER, .node = easgd_node, .variant = kind, .device = 1, \
                               .opts = reads, .help = text, .checkpoint = 1};
EA_ALGO(easgd, "easgd", K_EASGD, ea_opts,
        "asynchronous EASGD (EASGD paper Alg. 1): elastic pull/commit with the server every tau steps")
EA_ALGO(easgd_sync, "easgd-sync", K_EASGD_SYNC, ea_sync_opts,
        "synchronous EASGD (eq. 5-6) every tau steps: bcast the center, reduce the elastic differences")
EA_ALGO(eamsgd, "eamsgd", K_EAMSGD, eam_opts,
        "asynchronous EAMSGD (Alg. 2): EASGD with local Nesterov momentum delta")
EA_ALGO(downpour, "downpour", K_DOWNPOUR, dp_opts,
        "DOWNPOUR as in mpiT: local SGD, the accumulated step pushed and the center pulled every tau steps")
EA_ALGO(mdownpour, "mdownpour", K_MDOWNPOUR, mdp_opts,
        "DOWNPOUR with Nesterov momentum delta on the master")
EA_ALGO(adownpour, "adownpour", K_ADOWNPOUR, dp_opts,
        "DOWNPOUR; the master keeps the running average of the center (evaluated)")
EA_ALGO(mvadownpour, "mvadownpour", K_MVADOWNPOUR, dp_opts,
        "DOWNPOUR; the master keeps a moving average (rate 0.001) of the center (evaluated)")
