/* agn.c — Hermans 2017 (docs/PAPERS.md §4): accumulated gradient normalisation and its
 * staleness-aware servers, on the parameter server of ps.h (node 0 the server, nodes 1..p the
 * workers). lambda = --tau (the communication window), gamma = --gamma, the workers' own
 * optimizer = --worker-opt (Adam in the thesis).
 *
 *   worker i:  loop { W = Pull(); W_pulled = W;
 *                     lambda local steps: W = opt(W, grad J(W; own mini-batch));
 *                     Delta = (W - W_pulled) / lambda;      (thesis eq. 4.1)
 *                     Commit(Delta) }
 *   agn        server: center += Delta
 *   downpour-lambda  the thesis' DOWNPOUR with window lambda: the same worker, but it commits the
 *              UN-normalised W - W_pulled; server: center += it (lambda = 1: classic DOWNPOUR)
 *   dynsgd     the thesis' Alg. DynSGDWorker / DynSGDParameterServer and dist-keras' DynSGDWorker
 *              (delta = W2 - W1): the worker commits the UN-normalised W - W_pulled, as
 *              downpour-lambda does; server: center += it / (staleness + 1). (Before issue 32 the
 *              worker divided by lambda first, a net 1 / (lambda (staleness + 1)) that neither the
 *              thesis nor its code has; `pdl toy --rule dynsgd` always had the thesis' form.)
 *   adag       server (the thesis' Alg. 2 placement; per weight, as its code and prose do, where
 *              the text writes a squared norm):
 *                center += Delta / (gamma^-1 (center - stale_center_i)^2 + 1)
 *              stale_center_i = the center worker i last pulled, which the server remembers:
 *              p x n floats on the server, n per commit on the wire
 *   adag-alg1  the same; the worker sends its stale center with Delta (Alg. 1): 2n per commit,
 *              no per-worker memory on the server
 *   adag-agn   the thesis' Alg. 3: the worker pulls the current center once per window, scales its
 *              Delta against it, commits, and goes on from that pulled center (which does not hold
 *              its own commit); the server adds: 2n per commit (pull, commit), no memory. (Before
 *              issue 32 it pulled a second time after the commit: 3n, and a base holding its commit.)
 * staleness = commits the server applied between worker i's pull and its commit. (DOWNPOUR with
 * window lambda with the EASGD paper's local SGD is `downpour --tau lambda` in easgd.c.)
 *
 * Measured on the server for the thesis' H1 and H2: the staleness of every commit (histogram and
 * mean; about p - 1 for homogeneous workers) and, for H2, the lag-1 slope of the center's
 * updates, sum <u_t+1, u_t> / sum <u_t, u_t> over the commits after the first 10% (u_t the update
 * commit t applied). That slope is what one run offers; it is NOT an estimate of the thesis'
 * 1 - 1/p, which is a statement about the expectation over worker orders (one run's slope also
 * follows the slow decay of the trajectory): the ensemble fit that does estimate it is in
 * src/analysis/toy_async.c, on a quadratic. */
#include <math.h>
#include <string.h>
#include "algo/algo.h"
#include "algo/ps.h"
#include "rt/watchdog.h"

enum { H_AGN, H_DOWNPOUR_LAMBDA, H_DYNSGD, H_ADAG, H_ADAG_ALG1, H_ADAG_AGN };
#define STALE_MAX 4096            /* histogram bins 0..STALE_MAX-1; the last holds everything above */

typedef struct {
  int variant, p, lambda;
  float gamma;
  long total, commits, expected_commits, pulls;   /* pulls: PULL and PUSH_PULL requests served */
  long *hist; double stale_sum;   /* staleness histogram [STALE_MAX] and sum */
  double stale_ss; long n_ss;     /* the same after the first p commits (steady state) */
  double uu, uv; float *u_prev;   /* H2: sum <u_t, u_t>, sum <u_{t+1}, u_t>; the previous update [n] */
  long mom_n;
} agn_t;

static void agn_eval_json(json_t *j, const loop_t *L, void *arg) {
  (void)L; const agn_t *H = arg;
  json_int(j, "master_clock", H->commits); json_int(j, "lambda", H->lambda); json_int(j, "workers", H->p);
  json_num(j, "staleness_mean", H->commits ? H->stale_sum / (double)H->commits : NAN);
}

static void agn_summary_json(json_t *j, const loop_t *L, void *arg) {
  const agn_t *H = arg; const train_cfg_t *c = &L->r->cfg;
  double steps = (double)H->total / H->p;
  json_int(j, "nodes", L->rt->nnodes); json_int(j, "workers", H->p); json_int(j, "lambda", H->lambda);
  json_int(j, "params", (long long)L->r->net.nparams);
  json_str(j, "worker_opt", c->worker_opt);
  if (H->variant >= H_ADAG) json_num(j, "gamma", H->gamma);
  json_num(j, "steps_per_worker", steps); json_int(j, "master_clock", H->commits); json_int(j, "pulls", H->pulls);
  json_num(j, "time_per_step_s", steps > 0 ? L->t_end / steps : 0.0);
  json_num(j, "staleness_mean", H->commits ? H->stale_sum / (double)H->commits : NAN);
  json_num(j, "staleness_mean_steady", H->n_ss ? H->stale_ss / (double)H->n_ss : NAN);
  int top = STALE_MAX;
  while (top > 1 && H->hist[top - 1] == 0) top--;
  double h[STALE_MAX];
  for (int i = 0; i < top; i++) h[i] = (double)H->hist[i];
  json_num_array(j, "staleness_hist", h, top, 12);
  json_num(j, "momentum_slope", H->uu > 0 ? H->uv / H->uu : NAN);
  json_num(j, "momentum_expected", 1.0 - 1.0 / H->p);
  json_int(j, "momentum_n", H->mom_n);
}

/* H2 bookkeeping for the update u that commit number H->commits applied. */
static void agn_momentum(agn_t *H, const float *u, size_t n) {
  if (H->commits >= H->expected_commits / 10) {   /* burn-in: the first 10% of the commits */
    if (H->mom_n > 0) {
      double uv = 0, uu = 0;
      for (size_t i = 0; i < n; i++) { uv += (double)u[i] * H->u_prev[i]; uu += (double)H->u_prev[i] * H->u_prev[i]; }
      H->uv += uv; H->uu += uu;
    }
    H->mom_n++;
  }
  memcpy(H->u_prev, u, n * sizeof(float));
}

/* The server's figures read from a checkpoint (issue 46), against each other and the loop's: every
 * commit added one count to the staleness histogram (bin min(s, STALE_MAX - 1)) and s to stale_sum,
 * s at most the commits before it; the steady-state and H2 counts are commits too. */
static void agn_resume_check(const loop_t *L, const agn_t *H) {
  const double c = (double)H->commits;
  loop_check(L, (double)H->total, (double)L->updates, (double)L->updates, "total (the workers' local steps; the loop's updates)");
  long sum = 0; double below = 0;   /* the histogram's count and its staleness sum below the last bin */
  for (int i = 0; i < STALE_MAX; i++) {
    loop_check(L, (double)H->hist[i], 0, c, "staleness_hist[%d]", i);
    if (H->hist[i] && (double)i >= c)   /* a staleness of i needs i commits before it */
      loop_check(L, (double)H->hist[i], 0, 0, "staleness_hist[%d] (a staleness above the commits)", i);
    sum += H->hist[i];
    if (i < STALE_MAX - 1) below += (double)i * (double)H->hist[i];
  }
  if (sum != H->commits)
    die("checkpoint %s: section 'staleness_hist' counts %ld commits, field 'commits' is %ld (every commit adds one): a "
        "damaged or crafted file; start over without --resume", loop_node_file(L), sum, H->commits);
  const double last = (double)H->hist[STALE_MAX - 1];   /* staleness >= STALE_MAX - 1, at most the commits */
  loop_check(L, H->stale_sum, below + last * (STALE_MAX - 1), last ? below + last * c : below,
             "stale_sum (the histogram's staleness sum)");
  loop_check(L, (double)H->n_ss, 0, c, "n_ss");
  loop_check(L, H->stale_ss, 0, H->stale_sum, "stale_ss");
  loop_check(L, (double)H->mom_n, 0, c, "mom_n");
  loop_check(L, (double)H->pulls, 0, 1e15, "pulls");
  loop_check(L, H->uu, 0, 1e300, "uu");
  loop_check(L, H->uv, -1e300, 1e300, "uv");
}

static void agn_server(rt_t *rt, job_t *job, agn_t *H) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int p = H->p;
  float *x = xmalloc(n * sizeof(float)), *u = xmalloc(n * sizeof(float));   /* [n] center, applied update */
  float *stale = H->variant == H_ADAG ? xmalloc((size_t)p * n * sizeof(float)) : NULL;  /* [p][n] Alg. 2 */
  long *pulled_at = xcalloc((size_t)p + 1, sizeof(long));   /* master clock at each worker's last pull */
  H->hist = xcalloc(STALE_MAX, sizeof(long)); H->u_prev = xcalloc(n, sizeof(float));
  net_init_params(&r->net, x, c->seed);
  for (int i = 0; stale && i < p; i++) memcpy(stale + (size_t)i * n, x, n * sizeof(float));
  loop_t L; loop_init(&L, rt, job, LOOP_CLOCK, agn_eval_json, agn_summary_json, H);
  loop_threads(&L, 1);
  ps_server_t s; ps_server_init(&s, rt, n, c->ps_round_robin);
  if (H->variant == H_ADAG_ALG1) ps_server_set_vec_len(&s, 2 * n);
  float ginv = 1.0f / H->gamma;
  loop_state(&L, "center", x, n * sizeof(float));
  if (stale) loop_state(&L, "stale_centers", stale, (size_t)p * n * sizeof(float));
  loop_state(&L, "pulled_at", pulled_at, ((size_t)p + 1) * sizeof(long));
  loop_state(&L, "staleness_hist", H->hist, STALE_MAX * sizeof(long));
  loop_state(&L, "previous_update", H->u_prev, n * sizeof(float));
#define STATE(f) loop_state(&L, #f, &H->f, sizeof H->f)
  STATE(total); STATE(commits); STATE(pulls); STATE(stale_sum); STATE(stale_ss); STATE(n_ss); STATE(uu); STATE(uv); STATE(mom_n);
#undef STATE
  if (loop_resume(&L)) {   /* a crafted pulled_at > commits would index the histogram below 0 */
    if (H->commits < 0 || H->total < 0 || H->pulls < 0)
      die("checkpoint %s: field 'commits', 'total' or 'pulls' is negative (%ld, %ld, %ld): a damaged or crafted file; "
          "start over without --resume", loop_node_file(&L), H->commits, H->total, H->pulls);
    for (int i = 0; i <= p; i++)
      if (pulled_at[i] < 0 || pulled_at[i] > H->commits)
        die("checkpoint %s: field 'pulled_at[%d]' is %ld, out of range [0, %ld] (the master clock): a damaged or crafted "
            "file; start over without --resume", loop_node_file(&L), i, pulled_at[i], H->commits);
    agn_resume_check(&L, H);
  }
  loop_begin(&L, x);
  while (ps_server_active(&s)) {
    watchdog_context("%s server: %ld local steps, %ld commits", c->algo, H->total, H->commits);
    int src; ps_req_t q;
    int op = ps_server_next(&s, &src, &q);
    if (q.steps > 0) {
      H->total += q.steps;
      loop_advance(&L, H->total, (double)H->total * c->batch);
      loop_loss(&L, q.loss_sum, q.steps);
      if (loop_diverged(&L, q.loss_sum / q.steps, (long)q.clock)) s.stop = 1;
    }
    if (op == PS_PUSH || op == PS_PUSH_PULL) {
      const float *d = s.vec;                              /* Delta (Alg. 1: then the stale center) */
      long st = H->commits - pulled_at[src];
      H->hist[st < STALE_MAX ? st : STALE_MAX - 1]++; H->stale_sum += (double)st;
      if (H->commits >= p) { H->stale_ss += (double)st; H->n_ss++; }
      switch (H->variant) {
        case H_DYNSGD: { float k = 1.0f / (float)(st + 1); for (size_t i = 0; i < n; i++) u[i] = k * d[i]; break; }
        case H_ADAG: case H_ADAG_ALG1: {
          const float *sc = H->variant == H_ADAG ? stale + (size_t)(src - 1) * n : d + n;
          for (size_t i = 0; i < n; i++) { float e = x[i] - sc[i]; u[i] = d[i] / (ginv * e * e + 1.0f); }
          break;
        }
        default: memcpy(u, d, n * sizeof(float));        /* agn, adag-agn (scaled by the worker) */
      }
      vec_add(x, u, n);                                    /* center += the update */
      agn_momentum(H, u, n);
      H->commits++;
      rt->ops->work(rt, 4.0 * n * (H->variant == H_AGN ? 5 : 8));
    }
    if (op == PS_PULL || op == PS_PUSH_PULL) {
      ps_server_reply(&s, src, x); H->pulls++;
      pulled_at[src] = H->commits;                     /* the worker's new base */
      if (stale) { memcpy(stale + (size_t)(src - 1) * n, x, n * sizeof(float)); rt->ops->work(rt, 8.0 * n); }
    }
    if (pdl_stop_signal && !s.stop) s.stop = pdl_stop_signal;
    if (!s.stop && loop_progress(&L, x, H->total, (double)H->total * c->batch, 0)) s.stop = 1;
  }
  loop_checkpoint(&L, 1);    /* every worker has left */
  loop_finish(&L, x, x);
  ps_server_free(&s);
  xfree(x); xfree(u); xfree(stale); xfree(pulled_at); xfree(H->hist); xfree(H->u_prev);
}

static void agn_worker(rt_t *rt, job_t *job, const agn_t *H) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  int me = rt->node, lambda = H->lambda;
  float *W = xmalloc(n * sizeof(float)), *W0 = xmalloc(n * sizeof(float)), *g = xmalloc(n * sizeof(float));
  float *msg = xmalloc((H->variant == H_ADAG_ALG1 ? 2 : 1) * n * sizeof(float));   /* Delta [, stale center] */
  loop_t L; loop_init(&L, rt, job, LOOP_CLOCK, NULL, NULL, NULL);
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 1), me - 1, H->p, c->with_replacement, (uint64_t)(me - 1));
  rep.overlap = 1;   /* sim: gradients on the helper pool; nothing writes W or g meanwhile */
  loop_device(&L, "worker gradients", 0);   /* --device: the gradients there, W on the host */
  loop_device_replica(&L, &rep);
  opt_kind_t k; optim_parse(c->worker_opt, &k);
  optim_t o; optim_init(&o, k, n, c->momentum, c->wd);
  ps_client_t pc; ps_client_init(&pc, rt, n);
  if (H->variant == H_ADAG_ALG1) ps_client_set_vec_len(&pc, 2 * n);
  ps_req_t q; memset(&q, 0, sizeof q);
  loop_state_optim(&L, "optimizer", &o);
  loop_state_replica(&L, "worker", &rep);
  /* ADAG-AGN's next window starts at the center pulled for the last one (Alg. 3), not at one that
   * holds its commit: that center is saved, and a resumed worker starts there without a pull */
  const int window_saved = H->variant == H_ADAG_AGN;
  if (window_saved) loop_state(&L, "window_center", pc.reply, n * sizeof(float));
  const int resumed = loop_resume(&L);
  long t = resumed ? L.updates : 0, K = r->total_steps;   /* L.updates: this worker's clock */
  int stop = t < K && !(resumed && window_saved) ? ps_pull(&pc, &q) : 0, stopped = 0;    /* W = Pull() */
  float ginv = 1.0f / H->gamma;
  while (!stop && t < K) {
    watchdog_context("%s worker %d: step %ld of %ld", c->algo, me, t, K);
    if (pdl_stop_signal) { stopped = 1; break; }           /* a signal here: leave, telling the server */
    memcpy(W, pc.reply, n * sizeof(float)); memcpy(W0, W, n * sizeof(float));   /* W_pulled */
    optim_refresh(&o, W);
    double lsum = 0; int ls = 0, bad = 0;
    for (int j = 0; j < lambda && t < K; j++, t++) {       /* lambda local steps with the worker's optimizer */
      double loss = replica_grad_on_device(&rep, rt, 0, optim_grad_point(&o, W), g);
      optim_step(&o, W, g, loop_lr(&L, t));
      rt->ops->work(rt, 4.0 * n * 6);
      lsum += loss; ls++;
      if (!isfinite(loss) || loss > c->diverge_loss) { bad = 1; t++; break; }
    }
    loop_advance(&L, t, 0);
    q.steps = ls; q.loss_sum = lsum; q.clock = t;
    if (ls < lambda && !bad) break;   /* a last, partial window is not committed, as in dist-keras (a
                                         worker commits when iteration % window == 0); its steps and
                                         losses still reach the server with DONE */
    /* Delta = (W - W_pulled) / lambda (AGN, ADAG); un-normalised for DOWNPOUR-lambda and DynSGD */
    float inv = H->variant == H_DOWNPOUR_LAMBDA || H->variant == H_DYNSGD ? 1.0f : 1.0f / (float)ls;
    for (size_t i = 0; i < n; i++) msg[i] = (W[i] - W0[i]) * inv;
    if (H->variant == H_ADAG_ALG1) memcpy(msg + n, W0, n * sizeof(float));
    if (H->variant == H_ADAG_AGN) {   /* Alg. 3: pull once, scale against that center, commit, and go on
                                         from the center pulled (not from one that holds this commit) */
      if ((stop = ps_pull(&pc, &q))) break;
      for (size_t i = 0; i < n; i++) { float e = pc.reply[i] - W0[i]; msg[i] /= ginv * e * e + 1.0f; }
      q.steps = 0; q.loss_sum = 0;
      ps_push(&pc, &q, msg);
      if (bad) break;
      rt->ops->work(rt, 4.0 * n * 3);
      continue;                                            /* the next window starts at pc.reply */
    }
    if (bad) { ps_push(&pc, &q, msg); q.steps = 0; q.loss_sum = 0; break; }
    stop = ps_push_pull(&pc, &q, msg);                     /* Commit(Delta); W = Pull() */
    q.steps = 0; q.loss_sum = 0;
    rt->ops->work(rt, 4.0 * n * 3);
  }
  if (stopped) ps_stopped(&pc, &q); else ps_done(&pc, &q);
  loop_checkpoint(&L, 1);   /* its optimizer and sampler at t; the next window starts with a pull */
  ps_client_free(&pc); optim_free(&o); replica_free(&rep);
  xfree(W); xfree(W0); xfree(g); xfree(msg);
}

static void agn_node(rt_t *rt, void *arg) {
  job_t *job = arg; const train_cfg_t *c = &job->r.cfg;
  agn_t H; memset(&H, 0, sizeof H);
  H.variant = job->algo->variant; H.p = rt->nnodes - 1; H.lambda = c->tau; H.gamma = c->gamma;
  H.expected_commits = job->r.total_steps * H.p / (H.lambda > 0 ? H.lambda : 1);
  if (rt->node == 0) agn_server(rt, job, &H); else agn_worker(rt, job, &H);
}

static const optdef_t *const agn_opts[] = {ALGO_OPTS_DIST, &od_tau, &od_worker_opt, &od_ps_order, &od_with_replacement, NULL};
static const optdef_t *const adag_opts[] = {ALGO_OPTS_DIST, &od_tau, &od_worker_opt, &od_ps_order, &od_with_replacement, &od_gamma, NULL};
#define AGN_ALGO(cname, aname, kind, reads, text) \
  const algo_t algo_##cname = {.name = aname, .shape = ALGO_SERVER, .node = agn_node, .variant = kind, .device = 1, \
                               .opts = reads, .help = text, .checkpoint = 1};
AGN_ALGO(agn, "agn", H_AGN, agn_opts,
         "AGN (Hermans eq. 4.1): lambda local steps, commit Delta = (W - W_pulled) / lambda, the server adds")
AGN_ALGO(downpour_lambda, "downpour-lambda", H_DOWNPOUR_LAMBDA, agn_opts,
         "Hermans' DOWNPOUR: the worker's optimizer, the un-normalised W - W_pulled committed every lambda steps")
AGN_ALGO(dynsgd, "dynsgd", H_DYNSGD, agn_opts,
         "DynSGD (Hermans' Alg. and dist-keras): the un-normalised W - W_pulled, scaled by 1 / (staleness + 1) on the server")
AGN_ALGO(adag, "adag", H_ADAG, adag_opts,
         "ADAG (Hermans, Alg. 2): per weight Delta / (gamma^-1 (center - stale center)^2 + 1); server keeps p centers")
AGN_ALGO(adag_alg1, "adag-alg1", H_ADAG_ALG1, adag_opts,
         "ADAG, Alg. 1 placement: the worker sends its stale center with Delta (2n per commit)")
AGN_ALGO(adag_agn, "adag-agn", H_ADAG_AGN, adag_opts,
         "ADAG-AGN (Alg. 3): the worker pulls once, scales against that center, commits; the server adds (2n per commit)")
