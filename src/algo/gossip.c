/* gossip.c — gossip SGD on heterogeneous links (Oguni, Shudo, Takahashi; docs/PAPERS.md §5).
 * Every node trains on its own shard of the training set (replica_shard) from the common start
 * point; T = --tau is the communication period.
 *
 *   gossip         Alg. 1 (pull): after every T local steps node i picks a peer j uniformly,
 *                  receives w_j and sets w_i <- (w_i + w_j) / 2.
 *   gossip-warmup  Alg. 2: for the first W = --gossip-warmup local steps (default: one epoch of
 *                  the node's shard) node i picks k with probability proportional to 1 / c_{i,k}
 *                  (p_i = 0; c starts at INF, and a node with no finite entry picks uniformly),
 *                  sends its table c_i with the request, receives c_j with w_j, and applies
 *                  c_{i,j} <- UPDATE_TIME(c_{i,j}, measured) and c_i <- UPDATE_TIMES(c_i, c_j);
 *                  the peer applies UPDATE_TIMES(c_j, c_i) on receiving the request. UPDATE_TIME
 *                  (c_old, c_new): take c_new if (1 - th) c_old > c_new; take (c_old + c_new)/2 if
 *                  (1 + th) c_old < c_new; else keep c_old (th = --gossip-threshold; the paper
 *                  gives no value; 0.1 by default). After W steps, uniform, as Alg. 1.
 *   gossip-warmup-compute  beyond the paper (its future work: "share compute times as well as
 *                  communication times"): Alg. 2 whose tables also carry every node's mean step
 *                  time g_k (each node measures its own; entries merge with UPDATE_TIME like the
 *                  transfer times), and peer k is chosen with probability proportional to
 *                  1 / (c_{i,k} g_k): a short transfer of a model that took more steps per second.
 *                  An unknown g_k counts as the node's own.
 *   gossip-push    the comparator: after every T steps node i sends w_i to a uniform j, which
 *                  sets w_j <- (w_j + w_i) / 2 (and acknowledges, so the sender knows it landed).
 *
 * Roles. A node's main role trains and makes its own requests; S serving roles (threads on the
 * node's CPU, --gossip-servers, default K-1 capped at 8) answer the other nodes' requests while
 * the main role keeps training, as the paper has the peer serve "its latest model". S > 1 lets
 * concurrent pulls share the node's link, the paper's model (bottleneck at each node's own
 * link); with S = 1 a wide node serving a narrow requester would sit idle behind that one
 * transfer. The requester waits for its reply: that wait, when a narrow node's link is shared
 * by many requesters, is the congestion of eq. (1).
 * Snapshot rule (no torn models): the main role writes w only under the node's model mutex
 * (the SGD step and the averaging take it, the gradient is computed outside it), and the serving
 * role copies w under the same mutex before it sends the copy; so a served model is always one
 * the node held between two of its own writes. The gradient reads w without the mutex, which is
 * safe for pull gossip (only the main role writes w); push gossip, where the serving role writes
 * w, computes the gradient and evaluates on a copy taken under the mutex (make tsan found the
 * evaluation reading w while a serving role averaged into it). On the real runtime the serving role
 * is a pthread making MPI calls, hence MPI_THREAD_MULTIPLE (algo_t.roles_talk); passive-target
 * RMA was not used because Open MPI's TCP path progresses passive-target gets only when the
 * target enters MPI, and a training node spends its time in the gradient, not in MPI.
 * --noniid S (all three): a fraction S of the data set is dealt out by label (sampler_skew), so
 * node i's shard is mostly a few classes; the paper's other future-work item.
 * Tags: requests, pull replies, push payloads and acks each have their own, so the main role
 * and the serving role never wait on the same mailbox. End: every main role enters a barrier
 * after its last step (every request it made has been answered), then sends STOP to the next
 * node's serving role and joins its own.
 *
 * Measured and reported (node 0 gathers every node's records at the end): per node the mean
 * gradient time G_i per step and the mean pull duration; per (requester, peer) pair the pulls,
 * their mean and their shortest duration; from those (see gs_write_results) the congestion
 * predicate of eq. (1), the bound T*_i of eq. (2) and the measured congestion. Accuracy is the mean
 * test error over the nodes' own models at each evaluation point (every --eval-every local steps,
 * default one epoch of a shard, and the end); each node evaluates its own model, so no
 * collective runs during training. --gossip-timeline FILE writes every pull (node, peer, start,
 * end) for the paper's Fig. 1a/3a timelines. */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "algo/algo.h"
#include "rt/watchdog.h"

enum { GS_PULL, GS_WARMUP, GS_PUSH, GS_WARMUP_G };
enum { GS_TAG_REQ = 810, GS_TAG_MODEL = 811, GS_TAG_PUSHDATA = 812, GS_TAG_ACK = 813 };
enum { OP_PULL = 1, OP_PUSH = 2, OP_STOP = 3 };
#define EV_F 4   /* eval record: local step, time, test error, test loss */
#define TL_F 4   /* timeline record: peer, start, request taken, end */
#define PAIR_F 3 /* per requester, by peer: [K] pulls, [K] duration sum, [K] shortest duration */
#define ST_F 6   /* node stats: G sum, steps, exchange sum, exchanges, diverged, end time */

typedef struct {
  int kind, K, me, T;
  long W;
  float th;
  size_t n;
  float *w;            /* [n] the node's model: written by the main role under mw (push: also the server) */
  void *mw, *mc;       /* model mutex; time-table mutex */
  float *c;            /* [2K] c_{i,k}: transfer times measured or learned (warm-up), then g_k: mean
                          step times (warmup-compute); INF unknown. Sent whole with every pull. */
  double *p;           /* [K] the main role's peer probabilities (scratch) */
} gnode_t;

static void update_time(float *ci, float cj, float th) {   /* UPDATE_TIME (Alg. 2, l. 23-30) */
  if ((1 - th) * *ci > cj) *ci = cj;
  else if ((1 + th) * *ci < cj) *ci = (*ci + cj) / 2;
}
static void update_times(float *ci, const float *cj, int K, float th) {   /* UPDATE_TIMES */
  for (int k = 0; k < K; k++) if (isfinite(cj[k])) update_time(&ci[k], cj[k], th);
}
static int gs_warm_kind(int kind) { return kind == GS_WARMUP || kind == GS_WARMUP_G; }
#define TAB(K) (2 * (size_t)(K))   /* floats in a time table: transfer times, then step times */

/* The serving role: answers pulls with a copy of the latest model (and the time table), and
 * averages pushed models in, until STOP. */
static void gs_server(rt_t *rt, void *arg) {
  gnode_t *N = arg; const rt_ops_t *o = rt->ops;
  size_t n = N->n; int K = N->K;
  float *req = xmalloc((1 + TAB(K)) * sizeof(float));
  float *reply = xmalloc((n + TAB(K)) * sizeof(float));
  float *in = N->kind == GS_PUSH ? xmalloc(n * sizeof(float)) : NULL;
  for (;;) {
    int src = o->recv_any(rt, req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);
    int op = (int)req[0];
    if (op == OP_STOP) break;
    if (op == OP_PULL) {
      o->mutex_lock(rt, N->mc);
      if (gs_warm_kind(N->kind)) {
        float own = N->c[K + N->me];
        update_times(N->c, req + 1, 2 * K, N->th);
        N->c[K + N->me] = own;                    /* a node's own step time is its measurement */
      }
      memcpy(reply + n, N->c, TAB(K) * sizeof(float));
      o->mutex_unlock(rt, N->mc);
      o->mutex_lock(rt, N->mw);
      memcpy(reply, N->w, n * sizeof(float));
      o->mutex_unlock(rt, N->mw);
      o->work(rt, 8.0 * n);
      o->send(rt, src, reply, (n + TAB(K)) * sizeof(float), GS_TAG_MODEL);
    } else if (op == OP_PUSH) {
      o->recv(rt, src, in, n * sizeof(float), GS_TAG_PUSHDATA);
      o->mutex_lock(rt, N->mw);
      for (size_t i = 0; i < n; i++) N->w[i] = 0.5f * (N->w[i] + in[i]);
      o->mutex_unlock(rt, N->mw);
      o->work(rt, 12.0 * n);
      float ack = 1;
      o->send(rt, src, &ack, sizeof ack, GS_TAG_ACK);
    } else die("gossip: node %d: bad request op %d from node %d", rt->node, op, src);
  }
  xfree(req); xfree(reply); xfree(in);
}

/* Peer choice: uniform over k != me, or (warm-up) proportional to 1 / c_k over finite entries
 * (warmup-compute: 1 / (c_k g_k), an unknown g_k taken as the node's own). */
static int choose_peer(gnode_t *N, rng_t *g, int warm) {
  int K = N->K, me = N->me;
  if (warm) {
    double *p = N->p, sum = 0;
    const float *gk = N->c + K;
    for (int k = 0; k < K; k++) {
      p[k] = k != me && isfinite(N->c[k]) && N->c[k] > 0 ? 1.0 / N->c[k] : 0;
      if (p[k] > 0 && N->kind == GS_WARMUP_G) p[k] /= isfinite(gk[k]) && gk[k] > 0 ? gk[k] : gk[me];
      sum += p[k];
    }
    if (sum > 0) {
      double u = rng_uniform(g) * sum;
      for (int k = 0; k < K; k++) { if (p[k] <= 0) continue; if (u < p[k]) return k; u -= p[k]; }
      for (int k = K - 1; k >= 0; k--) if (p[k] > 0) return k;
    }
  }
  int j = (int)rng_below(g, (uint64_t)(K - 1));
  return j >= me ? j + 1 : j;
}

typedef struct { float *v; long n, cap; } fbuf_t;
static void fb_push(fbuf_t *b, const float *x, int k) {
  if (b->n + k > b->cap) {
    b->cap = (b->cap + k) * 2;
    float *v = xmalloc((size_t)b->cap * sizeof(float));
    if (b->n) memcpy(v, b->v, (size_t)b->n * sizeof(float));
    xfree(b->v); b->v = v;
  }
  memcpy(b->v + b->n, x, (size_t)k * sizeof(float)); b->n += k;
}

static void gs_write_results(rt_t *rt, job_t *job, gnode_t *Nd, const float *ev, long m, const float *st,
                             const float *tl, const size_t *tlc, const float *pair, double t_end);

/* gossip's own options (train_cfg_t.algo_opts; descriptors at the end of this file) */
typedef struct { long warmup; float threshold; int servers; char timeline[1024]; } gossip_opts_t;
_Static_assert(sizeof(gossip_opts_t) <= sizeof(((train_cfg_t *)0)->algo_opts), "gossip_opts_t fits algo_opts");
#define GO(c) ((const gossip_opts_t *)(c)->algo_opts)

static void gossip_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  const rt_ops_t *o = rt->ops;
  int K = rt->nnodes, me = rt->node;
  size_t n = r->net.nparams;
  gnode_t Nd; memset(&Nd, 0, sizeof Nd);
  Nd.kind = job->algo->variant; Nd.K = K; Nd.me = me; Nd.T = c->tau > 0 ? c->tau : 1; Nd.th = GO(c)->threshold;
  long steps_shard = r->data.train.n / K / c->batch; if (steps_shard < 1) steps_shard = 1;
  Nd.W = !gs_warm_kind(Nd.kind) ? 0 : GO(c)->warmup >= 0 ? GO(c)->warmup : steps_shard;
  Nd.n = n;
  Nd.w = xmalloc(n * sizeof(float));
  Nd.c = xmalloc(TAB(K) * sizeof(float)); Nd.p = xmalloc((size_t)K * sizeof(double));
  for (size_t k = 0; k < TAB(K); k++) Nd.c[k] = INFINITY;
  Nd.mw = o->mutex_new(rt); Nd.mc = o->mutex_new(rt);
  net_init_params(&r->net, Nd.w, c->seed);   /* w_{0,i} = w_0 */
  loop_t L; loop_init(&L, rt, job, LOOP_UPDATES, NULL, NULL, NULL);
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 2), 0, 1, c->with_replacement, (uint64_t)me);
  replica_shard(&rep, r, me, K);              /* X_i: this node's own shard */
  if (c->noniid > 0) sampler_skew(&rep.s, c->noniid);
  optim_t opt; optim_init(&opt, OPT_SGD, n, c->momentum, c->wd);   /* Alg. 1: plain SGD unless --momentum */
  float *g = xmalloc(n * sizeof(float)), *wl = Nd.kind == GS_PUSH ? xmalloc(n * sizeof(float)) : NULL;
  float *reply = xmalloc((n + TAB(K)) * sizeof(float)), *req = xmalloc((1 + TAB(K)) * sizeof(float));
  rng_t peer_rng; rng_seed(&peer_rng, c->seed, 7000u + (uint64_t)me);
  int S = K > 1 ? (GO(c)->servers < K - 1 ? GO(c)->servers : K - 1) : 0;   /* serving roles */
  void **server = xcalloc((size_t)(S ? S : 1), sizeof(void *));
  for (int s = 0; s < S; s++) server[s] = o->thread_start(rt, -1, gs_server, &Nd);

  long total = r->total_steps;   /* local steps per node */
  long E = c->eval_every > 0 ? c->eval_every : steps_shard;
  long m = total / E + (total % E ? 1 : 0);     /* evaluation points: every E steps and the end */
  float *ev = xcalloc((size_t)m * EV_F, sizeof(float));
  fbuf_t tl = {0};
  double G_sum = 0, pull_sum = 0; long pulls = 0, ne = 0;
  float *pair = xcalloc(PAIR_F * (size_t)K, sizeof(float));   /* by peer: pulls, duration sum, shortest */
  int diverged = 0;
  for (long t = 0; t < total && !pdl_stop_signal; ) {
    watchdog_context("%s node %d: step %ld of %ld", c->algo, me, t, total);
    double t0 = o->now(rt);
    const float *at = Nd.w;
    if (wl) { o->mutex_lock(rt, Nd.mw); vec_copy(wl, Nd.w, n); o->mutex_unlock(rt, Nd.mw); at = wl; }
    double loss = replica_grad_on_device(&rep, rt, 0, at, g);   /* grad F_i(w_{t,i}; x) */
    G_sum += o->now(rt) - t0;
    o->mutex_lock(rt, Nd.mw);
    optim_step(&opt, Nd.w, g, lr_at(c->lr, t, c->warmup));    /* w_{t+1,i} = w_{t,i} - alpha grad */
    o->mutex_unlock(rt, Nd.mw);
    o->work(rt, 4.0 * n * 4);
    t++;
    if (!isfinite(loss) || loss > c->diverge_loss) diverged = 1;
    loop_loss(&L, loss, 1);
    if (K > 1 && t % Nd.T == 0) {                                /* if t = 0 mod T */
      int warm = gs_warm_kind(Nd.kind) && t <= Nd.W;
      int j = choose_peer(&Nd, &peer_rng, warm);                 /* choose j */
      double t1 = o->now(rt), t_taken = t1;
      if (Nd.kind == GS_PUSH) {
        req[0] = OP_PUSH;
        for (size_t k = 0; k < TAB(K); k++) req[1 + k] = 0;
        o->mutex_lock(rt, Nd.mw); vec_copy(wl, Nd.w, n); o->mutex_unlock(rt, Nd.mw);
        o->send(rt, j, req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);
        t_taken = o->now(rt);
        o->send(rt, j, wl, n * sizeof(float), GS_TAG_PUSHDATA);
        float ack; o->recv(rt, j, &ack, sizeof ack, GS_TAG_ACK);
      } else {
        req[0] = OP_PULL;
        o->mutex_lock(rt, Nd.mc);
        if (Nd.kind == GS_WARMUP_G) Nd.c[K + me] = (float)(G_sum / (double)t);   /* this node's mean step time */
        memcpy(req + 1, Nd.c, TAB(K) * sizeof(float));
        o->mutex_unlock(rt, Nd.mc);
        o->send(rt, j, req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);        /* send(c_i) */
        t_taken = o->now(rt);
        o->recv(rt, j, reply, (n + TAB(K)) * sizeof(float), GS_TAG_MODEL);     /* receive(c_j, w_j) */
        float meas = (float)(o->now(rt) - t1);                                /* c := measured_time() */
        if (gs_warm_kind(Nd.kind)) {
          o->mutex_lock(rt, Nd.mc);
          float own = Nd.c[K + me];
          update_time(&Nd.c[j], meas, Nd.th);                      /* c_{i,j} <- UPDATE_TIME(c_{i,j}, c) */
          update_times(Nd.c, reply + n, 2 * K, Nd.th);             /* c_i <- UPDATE_TIMES(c_i, c_j) */
          Nd.c[K + me] = own;
          o->mutex_unlock(rt, Nd.mc);
        }
        o->mutex_lock(rt, Nd.mw);
        for (size_t i = 0; i < n; i++) Nd.w[i] = 0.5f * (Nd.w[i] + reply[i]);  /* average(w_{t,i}, w_j) */
        o->mutex_unlock(rt, Nd.mw);
        o->work(rt, 12.0 * n);
      }
      double t2 = o->now(rt);
      pull_sum += t2 - t1; pulls++;
      float d = (float)(t2 - t1);
      if (pair[j] == 0 || d < pair[2 * K + j]) pair[2 * K + j] = d;
      pair[j] += 1; pair[K + j] += d;
      if (GO(c)->timeline[0]) { float rec[TL_F] = {(float)j, (float)t1, (float)t_taken, (float)t2}; fb_push(&tl, rec, TL_F); }
    }
    if ((t % E == 0 || t == total) && ne < m) {                 /* this node's own model, on the test set */
      double te, tlo;
      const float *ew = Nd.w;   /* push: the serving role may be averaging into w: a copy under the mutex */
      if (wl) { o->mutex_lock(rt, Nd.mw); vec_copy(wl, Nd.w, n); o->mutex_unlock(rt, Nd.mw); ew = wl; }
      net_evaluate(&r->eval_ws, ew, r->data.test.x, r->data.test.y, r->data.test.n, &te, &tlo);
      float *e = ev + ne++ * EV_F;
      e[0] = (float)t; e[1] = (float)o->now(rt); e[2] = (float)te; e[3] = (float)tlo;
      if (L.reporter && !c->quiet) progress("%s: node 0 step %ld/%ld  test_err %.4f", c->algo, t, total, te);
    }
  }
  double t_end = o->now(rt);
  /* every request this node made has been answered: once all nodes are here, no more come */
  if (K > 1) {
    o->barrier(rt);
    req[0] = OP_STOP;   /* one STOP per serving role of the next node (every node has S) */
    for (int s = 0; s < S; s++) o->send(rt, (me + 1) % K, req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);
    for (int s = 0; s < S; s++) o->thread_join(rt, server[s]);
  }
  xfree(server);
  /* node 0 gathers the evaluation records, the stats and (if asked) the timeline */
  float st[ST_F] = {(float)G_sum, (float)total, (float)pull_sum, (float)pulls, (float)diverged, (float)t_end};
  size_t *cnt = xmalloc((size_t)K * sizeof(size_t));
  float *all_pair = xmalloc(PAIR_F * (size_t)K * K * sizeof(float));
  for (int k = 0; k < K; k++) cnt[k] = PAIR_F * (size_t)K;
  o->allgatherv(rt, pair, all_pair, cnt);
  float *all_ev = xmalloc((size_t)K * m * EV_F * sizeof(float)), *all_st = xmalloc((size_t)K * ST_F * sizeof(float));
  for (int k = 0; k < K; k++) cnt[k] = (size_t)m * EV_F;
  if (ne < m) die("gossip: node %d evaluated %ld times, expected %ld (interrupted?)", me, ne, m);
  o->allgatherv(rt, ev, all_ev, cnt);
  for (int k = 0; k < K; k++) cnt[k] = ST_F;
  o->allgatherv(rt, st, all_st, cnt);
  float *all_tl = NULL; size_t *tlc = xcalloc((size_t)K, sizeof(size_t));
  if (GO(c)->timeline[0]) {
    float mine = (float)tl.n, *counts = xmalloc((size_t)K * sizeof(float));
    for (int k = 0; k < K; k++) cnt[k] = 1;
    o->allgatherv(rt, &mine, counts, cnt);
    size_t sum = 0;
    for (int k = 0; k < K; k++) { tlc[k] = (size_t)counts[k]; sum += tlc[k]; }
    all_tl = xmalloc((sum ? sum : 1) * sizeof(float));
    if (!tl.v) tl.v = xmalloc(sizeof(float));
    o->allgatherv(rt, tl.v, all_tl, tlc);
    xfree(counts);
  }
  if (L.reporter) gs_write_results(rt, job, &Nd, all_ev, m, all_st, all_tl, tlc, all_pair, t_end);
  xfree(pair); xfree(all_pair);
  xfree(cnt); xfree(all_ev); xfree(all_st); xfree(all_tl); xfree(tlc); xfree(tl.v); xfree(ev);
  optim_free(&opt); replica_free(&rep);
  o->mutex_free(rt, Nd.mw); o->mutex_free(rt, Nd.mc);
  xfree(Nd.w); xfree(Nd.c); xfree(Nd.p); xfree(g); xfree(wl); xfree(reply); xfree(req);
}

/* Node 0: eval lines (mean test error over the nodes at each evaluation point), the timeline
 * CSV, the summary with per-node stats and the eq. (1)/(2) check. */
static void gs_write_results(rt_t *rt, job_t *job, gnode_t *Nd, const float *ev, long m, const float *st,
                             const float *tl, const size_t *tlc, const float *pair, double t_end) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int K = Nd->K, T = Nd->T;
  double *errs = xcalloc((size_t)K * 10, sizeof(double));   /* [K] each: errs, then the per-node figures */
  double *G = errs + K, *Cx = G + K, *Cs = Cx + K, *Cp = Cs + K, *Wt = Cp + K, *pred = Wt + K, *meas = pred + K, *Tstar = meas + K;
  double *lhs1 = Tstar + K;
  for (long e = 0; e < m; e++) {
    double err = 0, loss = 0, tm = 0, tmax = 0;
    for (int k = 0; k < K; k++) {
      const float *x = ev + ((size_t)k * m + e) * EV_F;
      err += x[2]; loss += x[3]; tm += x[1]; if (x[1] > tmax) tmax = x[1]; errs[k] = x[2];
    }
    const float *x0 = ev + (size_t)e * EV_F;
    r->updates = (long)x0[0]; r->epochs_done = (double)x0[0] * K * c->batch / r->data.train.n;
    r->test_err = err / K; r->test_loss = loss / K;
    json_t j; run_json_common(r, &j, "eval");
    json_int(&j, "updates", r->updates); json_num(&j, "epochs", r->epochs_done);
    json_num(&j, "time_s", tm / K); json_num(&j, "time_max_s", tmax);
    json_num(&j, "test_err", r->test_err); json_num(&j, "test_loss", r->test_loss);
    json_num_array(&j, "test_err_nodes", errs, K, 5);
    results_write(&r->res, json_end(&j));
    if (!c->quiet) fprintf(stderr, "%s: step %ld  time %.4g s  mean test_err %.4f\n", c->algo, r->updates, tm / K, r->test_err);
  }
  if (GO(c)->timeline[0]) {
    outfile_t of; outfile_open(&of, GO(c)->timeline, "--gossip-timeline");
    fprintf(of.f, "node,peer,start_s,taken_s,end_s\n");
    size_t off = 0;
    for (int k = 0; k < K; k++) {
      for (size_t i = 0; i + TL_F <= tlc[k]; i += TL_F)
        fprintf(of.f, "%d,%d,%.6f,%.6f,%.6f\n", k, (int)tl[off + i], tl[off + i + 1], tl[off + i + 2], tl[off + i + 3]);
      off += tlc[k];
    }
    outfile_commit(&of);
  }
  /* Per-node means and eq. (1)/(2), from every requester's pulls by peer (pair: [K] count, [K]
   * duration sum, [K] shortest). The shortest pull j made from i stands for the uncongested
   * transfer time of that pair (each pair has many pulls; an idle one sets the minimum).
   *   C_i (eq. 1's right side, "C_serve_s"): the uncongested time of the pulls i served, i.e.
   *       how long one request occupies i's link;
   *   C_j (left side, "C_transfer_s"): j's uncongested pull time, so T G_j + C_j is j's interval
   *       between requests with no congestion (with the measured durations the interval grows
   *       until it balances the queue, and the predicate would always say "no");
   *   waiting per transfer at i ("wait_at_node_s"): the mean of (duration - uncongested time)
   *       over the pulls i served, whether queued for a serving role or slowed by sharing i's link.
   * Measured congestion at i: its waiting per transfer exceeds its uncongested transfer time. */
  double sumG = 0, sumCx = 0;
  int congested = 0, measured = 0, disagree = 0, anydiv = 0;
  for (int k = 0; k < K; k++) {
    const float *s = st + (size_t)k * ST_F;
    G[k] = s[1] > 0 ? s[0] / s[1] : 0; Cp[k] = s[3] > 0 ? s[2] / s[3] : 0;
    double idle = 0, npull = 0, served = 0, idle_in = 0, extra_in = 0;
    for (int i = 0; i < K; i++) {
      const float *pj = pair + (size_t)k * PAIR_F * K;           /* k as the requester */
      idle += (double)pj[i] * pj[2 * K + i]; npull += pj[i];
      const float *pi = pair + (size_t)i * PAIR_F * K;           /* k as the peer */
      served += pi[k]; idle_in += (double)pi[k] * pi[2 * K + k]; extra_in += pi[K + k] - (double)pi[k] * pi[2 * K + k];
    }
    Cx[k] = npull > 0 ? idle / npull : 0;
    Cs[k] = served > 0 ? idle_in / served : 0;
    Wt[k] = served > 0 ? extra_in / served : 0;
    sumG += G[k]; sumCx += Cx[k];
    if (s[4] != 0) anydiv = 1;
  }
  for (int i = 0; i < K && K > 1; i++) {
    double lhs = (T * (sumG - G[i]) + (sumCx - Cx[i])) / (K - 1);   /* (1/(K-1)) sum_j!=i (T G_j + C_j) */
    lhs1[i] = lhs;
    pred[i] = Cs[i] > 0 && lhs < Cs[i];                               /* eq. (1): node i congests */
    Tstar[i] = sumG - G[i] > 0 ? ((K - 1) * Cs[i] - (sumCx - Cx[i])) / (sumG - G[i]) : 0;   /* eq. (2) */
    meas[i] = Cs[i] > 0 && Wt[i] > Cs[i];
    congested |= (int)pred[i]; measured |= (int)meas[i]; disagree += pred[i] != meas[i];
  }
  if (anydiv) { r->diverged = 1; r->diverged_at = -1; }
  for (int k = 0; k < K; k++) if (st[(size_t)k * ST_F + 5] > t_end) t_end = st[(size_t)k * ST_F + 5];   /* the last node's end */
  json_t x; json_frag_begin(&x);
  json_int(&x, "nodes", K); json_int(&x, "T", T);
  if (c->noniid > 0) json_num(&x, "noniid", c->noniid);
  if (gs_warm_kind(Nd->kind)) { json_int(&x, "warmup_steps", Nd->W); json_num(&x, "threshold", Nd->th); }
  json_int(&x, "model_bytes", (long long)(r->net.nparams * sizeof(float)));
  json_num_array(&x, "G_s", G, K, 6); json_num_array(&x, "C_exchange_s", Cp, K, 6);
  json_num_array(&x, "C_transfer_s", Cx, K, 6); json_num_array(&x, "C_serve_s", Cs, K, 6);
  json_num_array(&x, "wait_at_node_s", Wt, K, 6);
  json_num_array(&x, "eq1_lhs_s", lhs1, K, 6);
  json_num_array(&x, "eq1_congested", pred, K, 1); json_num_array(&x, "measured_congested", meas, K, 1);
  json_num_array(&x, "eq2_T_star", Tstar, K, 4);
  {  /* every requester's pulls by peer, row-major [requester][peer]: count, mean and shortest duration */
    double *pc = xmalloc(3 * (size_t)K * K * sizeof(double)), *pm = pc + (size_t)K * K, *pn = pm + (size_t)K * K;
    for (int j = 0; j < K; j++)
      for (int i = 0; i < K; i++) {
        const float *pj = pair + (size_t)j * PAIR_F * K;
        pc[(size_t)j * K + i] = pj[i]; pm[(size_t)j * K + i] = pj[i] > 0 ? pj[K + i] / pj[i] : 0;
        pn[(size_t)j * K + i] = pj[2 * K + i];
      }
    json_num_array(&x, "pair_pulls", pc, (size_t)K * K, 12);   /* whole counts (issue 32: 1 digit wrote 46 as 5e+01) */
    json_num_array(&x, "pair_mean_s", pm, (size_t)K * K, 6);
    json_num_array(&x, "pair_min_s", pn, (size_t)K * K, 6);
    xfree(pc);
  }
  json_int(&x, "eq1_any_congested", congested); json_int(&x, "measured_any_congested", measured);
  json_int(&x, "eq1_disagreements", disagree);
  if (rt->ops->simulated) {
    json_str(&x, "platform", c->platform);
    json_str(&x, "device_rate", c->device_rate[0] ? c->device_rate : "platform default");
  }
  run_summary(r, t_end, json_frag(&x));
  run_dump_params(Nd->w, r->net.nparams);
  xfree(errs);
}

/* the timeline file is written at the end of a run: refuse a path that cannot be written first */
static int gossip_prepare(job_t *job) {
  if (GO(&job->r.cfg)->timeline[0]) outfile_check(GO(&job->r.cfg)->timeline, "--gossip-timeline");
  return -1;
}
#define GOPT(field) OD_ALGO, offsetof(gossip_opts_t, field), sizeof(((gossip_opts_t *)0)->field)
static const optdef_t
  od_gs_warmup = {"--gossip-warmup", OD_LONG, -1, 1000000000, NULL, "-1", "W", "peers chosen by measured time for W local steps (-1: an epoch of the node's shard)", GOPT(warmup), 1, NULL},
  od_gs_threshold = {"--gossip-threshold", OD_FLOAT, 0, 1, NULL, "0.1", "X", "UPDATE_TIME's threshold", GOPT(threshold), 1, NULL},
  od_gs_servers = {"--gossip-servers", OD_INT, 1, 4096, NULL, "8", "S", "serving roles per node, pulls served at once (capped at K-1)", GOPT(servers), 1, NULL},
  od_gs_timeline = {"--gossip-timeline", OD_STR, 0, 0, NULL, NULL, "FILE", "write every transfer (node,peer,start_s,taken_s,end_s) as CSV", GOPT(timeline), 0, NULL};
#define GS_OPTS ALGO_OPTS_SIM, &od_tau, &od_with_replacement, &od_noniid, &od_gs_servers, &od_gs_timeline
static const optdef_t *const gs_opts[] = {GS_OPTS, NULL};
static const optdef_t *const gs_warm_opts[] = {GS_OPTS, &od_gs_warmup, &od_gs_threshold, NULL};
const algo_t algo_gossip = {
  .name = "gossip", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_PULL, .roles_talk = 1, .momentum = -1,
  .opts = gs_opts, .prepare = gossip_prepare,
  .help = "pull-gossip SGD (Oguni et al. Alg. 1): every T steps average with a uniformly chosen peer's model",
};
const algo_t algo_gossip_warmup = {
  .name = "gossip-warmup", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_WARMUP, .roles_talk = 1, .momentum = -1,
  .opts = gs_warm_opts, .prepare = gossip_prepare,
  .help = "pull gossip with Alg. 2's warm-up: peers chosen by measured transfer time for W steps",
};
const algo_t algo_gossip_push = {
  .name = "gossip-push", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_PUSH, .roles_talk = 1, .momentum = -1,
  .opts = gs_opts, .prepare = gossip_prepare,
  .help = "push-gossip SGD (the comparator): every T steps send the model to a uniform peer, which averages it in",
};
const algo_t algo_gossip_warmup_compute = {
  .name = "gossip-warmup-compute", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_WARMUP_G, .roles_talk = 1,
  .momentum = -1, .opts = gs_warm_opts, .prepare = gossip_prepare,
  .help = "beyond the paper: Alg. 2 whose tables also share step times; peers chosen by 1/(transfer x step time)",
};
