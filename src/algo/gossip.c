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
 * their mean and their shortest duration; from those (see gs_figures) the congestion
 * predicate of eq. (1), the bound T*_i of eq. (2) and the measured congestion. --gossip-timeline
 * FILE writes every pull (node, peer, start, end) for the paper's Fig. 1a/3a timelines.
 * The node loop's local-steps schedule (LOOP_LOCAL, algo.h) does the rest: accuracy is the mean
 * test error over the nodes' own models at each evaluation point (every --eval-every local steps,
 * default one epoch of a shard, and the end); each node evaluates its own model, so no collective
 * runs during training, unless --target-err or --checkpoint asks the nodes to agree (one small
 * allreduce per evaluation point; the run stops there together). Checkpoints: each node's w, its
 * SGD state, sampler and dropout rng, peer rng, time table and measures, saved just after an
 * agreed evaluation at an epoch's end and on a stop (on real under the model and table mutexes:
 * a serving role may be answering a peer already past the cut). A resume is bit-identical on sim
 * and statistical on real (the order of exchanges depends on timing); docs/DESIGN.md. */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "algo/algo.h"
#include "rt/watchdog.h"

enum { GS_PULL, GS_WARMUP, GS_PUSH, GS_WARMUP_G };
enum { GS_TAG_REQ = 810, GS_TAG_MODEL = 811, GS_TAG_PUSHDATA = 812, GS_TAG_ACK = 813 };
enum { OP_PULL = 1, OP_PUSH = 2, OP_STOP = 3 };
#define TL_F 4   /* timeline record: peer, start, request taken, end */
#define PAIR_F 3 /* per requester, by peer: [K] pulls, [K] duration sum, [K] shortest duration */
#define ST_F 4   /* node stats: G sum, steps, exchange sum, exchanges */

typedef struct {
  int kind, K, me, T;
  int unknown_literal; /* warm-up: an unknown peer gets probability 0 (Alg. 2 as written), else it
                          counts as the best known time (--gossip-unknown, issue 32) */
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

/* Peer choice: uniform over k != me, or (warm-up) proportional to 1 / c_k (warmup-compute:
 * 1 / (c_k g_k), an unknown g_k taken as the node's own). An unknown c_k (INF: nobody this node
 * heard of has pulled from k yet) counts as the best finite c in the table (--gossip-unknown best,
 * the default), so every peer gets tried; Alg. 2 as written gives it 1 / INF = 0 (--gossip-unknown
 * literal), and the peers ever pulled in the warm-up are then exactly the first round's uniform
 * picks (issue 32: two or three of 8 nodes never pulled in a whole warm-up). */
static int choose_peer(gnode_t *N, rng_t *g, int warm) {
  int K = N->K, me = N->me;
  if (warm) {
    double *p = N->p, sum = 0;
    const float *gk = N->c + K;
    float best = INFINITY;
    for (int k = 0; k < K && !N->unknown_literal; k++)
      if (k != me && isfinite(N->c[k]) && N->c[k] > 0 && N->c[k] < best) best = N->c[k];
    for (int k = 0; k < K; k++) {
      float ck = isfinite(N->c[k]) ? N->c[k] : best;   /* best is INF under the literal rule */
      p[k] = k != me && isfinite(ck) && ck > 0 ? 1.0 / ck : 0;
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

/* gossip's own options (train_cfg_t.algo_opts; descriptors at the end of this file) */
typedef struct { long warmup; float threshold; int servers, unknown; char timeline[1024]; } gossip_opts_t;
_Static_assert(sizeof(gossip_opts_t) <= sizeof(((train_cfg_t *)0)->algo_opts), "gossip_opts_t fits algo_opts");
#define GO(c) ((const gossip_opts_t *)(c)->algo_opts)

/* A node's main role: its buffers and what it measures (the measures are in its snapshot). */
typedef struct { double G_sum, pull_sum; long pulls, steps; } gs_stats_t;   /* gradient s, exchange s */
typedef struct {
  gnode_t *Nd; job_t *job;
  float *req, *reply, *wl;   /* a request [1 + TAB]; a pull's reply [n + TAB]; push: the model's copy [n] */
  float *pair;               /* [PAIR_F K] by peer: pulls, duration sum, shortest */
  fbuf_t tl;                 /* --gossip-timeline records */
  gs_stats_t st;
  float *all_pair, *all_st;  /* every node's, gathered at the end */
} gmain_t;

/* One exchange with peer j after local step t (Alg. 1/2 l. "if t = 0 mod T"; push: send, wait for
 * the ack), with its duration recorded by peer. */
static void gs_exchange(rt_t *rt, gmain_t *M, int j, long t) {
  gnode_t *Nd = M->Nd; const rt_ops_t *o = rt->ops;
  int K = Nd->K, me = Nd->me; size_t n = Nd->n;
  float *req = M->req, *reply = M->reply;
  double t1 = o->now(rt), t_taken = t1;
  if (Nd->kind == GS_PUSH) {
    req[0] = OP_PUSH;
    for (size_t k = 0; k < TAB(K); k++) req[1 + k] = 0;
    o->mutex_lock(rt, Nd->mw); vec_copy(M->wl, Nd->w, n); o->mutex_unlock(rt, Nd->mw);
    o->send(rt, j, req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);
    t_taken = o->now(rt);
    o->send(rt, j, M->wl, n * sizeof(float), GS_TAG_PUSHDATA);
    float ack; o->recv(rt, j, &ack, sizeof ack, GS_TAG_ACK);
  } else {
    req[0] = OP_PULL;
    o->mutex_lock(rt, Nd->mc);
    if (Nd->kind == GS_WARMUP_G) Nd->c[K + me] = (float)(M->st.G_sum / (double)t);   /* this node's mean step time */
    memcpy(req + 1, Nd->c, TAB(K) * sizeof(float));
    o->mutex_unlock(rt, Nd->mc);
    o->send(rt, j, req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);        /* send(c_i) */
    t_taken = o->now(rt);
    o->recv(rt, j, reply, (n + TAB(K)) * sizeof(float), GS_TAG_MODEL);     /* receive(c_j, w_j) */
    float meas = (float)(o->now(rt) - t1);                                /* c := measured_time() */
    if (gs_warm_kind(Nd->kind)) {
      o->mutex_lock(rt, Nd->mc);
      float own = Nd->c[K + me];
      update_time(&Nd->c[j], meas, Nd->th);                      /* c_{i,j} <- UPDATE_TIME(c_{i,j}, c) */
      update_times(Nd->c, reply + n, 2 * K, Nd->th);             /* c_i <- UPDATE_TIMES(c_i, c_j) */
      Nd->c[K + me] = own;
      o->mutex_unlock(rt, Nd->mc);
    }
    o->mutex_lock(rt, Nd->mw);
    for (size_t i = 0; i < n; i++) Nd->w[i] = 0.5f * (Nd->w[i] + reply[i]);  /* average(w_{t,i}, w_j) */
    o->mutex_unlock(rt, Nd->mw);
    o->work(rt, 12.0 * n);
  }
  double t2 = o->now(rt);
  M->st.pull_sum += t2 - t1; M->st.pulls++;
  float d = (float)(t2 - t1), *pair = M->pair;
  if (pair[j] == 0 || d < pair[2 * K + j]) pair[2 * K + j] = d;
  pair[j] += 1; pair[K + j] += d;
  if (GO(&M->job->r.cfg)->timeline[0]) { float rec[TL_F] = {(float)j, (float)t1, (float)t_taken, (float)t2}; fb_push(&M->tl, rec, TL_F); }
}

/* The node's state and its main role's buffers; w = w_0 on every node. */
static void gs_init(rt_t *rt, job_t *job, gnode_t *Nd, gmain_t *M) {
  const run_t *r = &job->r; const train_cfg_t *c = &r->cfg; const rt_ops_t *o = rt->ops;
  int K = rt->nnodes;
  size_t n = r->net.nparams;
  memset(Nd, 0, sizeof *Nd); memset(M, 0, sizeof *M);
  Nd->kind = job->algo->variant; Nd->K = K; Nd->me = rt->node; Nd->T = c->tau > 0 ? c->tau : 1; Nd->th = GO(c)->threshold;
  Nd->unknown_literal = GO(c)->unknown == 1;
  long steps_shard = r->data.train.n / K / c->batch; if (steps_shard < 1) steps_shard = 1;
  Nd->W = !gs_warm_kind(Nd->kind) ? 0 : GO(c)->warmup >= 0 ? GO(c)->warmup : steps_shard;
  Nd->n = n;
  Nd->w = xmalloc(n * sizeof(float));
  Nd->c = xmalloc(TAB(K) * sizeof(float)); Nd->p = xmalloc((size_t)K * sizeof(double));
  for (size_t k = 0; k < TAB(K); k++) Nd->c[k] = INFINITY;
  Nd->mw = o->mutex_new(rt); Nd->mc = o->mutex_new(rt);
  net_init_params(&r->net, Nd->w, c->seed);   /* w_{0,i} = w_0 */
  M->Nd = Nd; M->job = job;
  M->wl = Nd->kind == GS_PUSH ? xmalloc(n * sizeof(float)) : NULL;
  M->reply = xmalloc((n + TAB(K)) * sizeof(float)); M->req = xmalloc((1 + TAB(K)) * sizeof(float));
  M->pair = xcalloc(PAIR_F * (size_t)K, sizeof(float));
}

/* A snapshot where the node loop says (after an agreed evaluation, at the end): on real under
 * both mutexes, as a serving role may be answering a peer that is already past the cut. */
static void gs_checkpoint(rt_t *rt, loop_t *L, gnode_t *Nd, int now) {
  if (!L->r->cfg.checkpoint[0] || (!now && L->last_eval != L->updates)) return;   /* (loop_checkpoint's cut) */
  int lock = !rt->ops->simulated;   /* sim: no other actor runs while this one saves (and no extra simcall) */
  if (lock) { rt->ops->mutex_lock(rt, Nd->mw); rt->ops->mutex_lock(rt, Nd->mc); }
  loop_checkpoint(L, now);
  if (lock) { rt->ops->mutex_unlock(rt, Nd->mc); rt->ops->mutex_unlock(rt, Nd->mw); }
}

/* Every node's pull records and stats to every node (node 0 reports them); node 0 writes the
 * timeline. */
static void gs_gather(rt_t *rt, gmain_t *M) {
  const rt_ops_t *o = rt->ops; const train_cfg_t *c = &M->job->r.cfg;
  int K = M->Nd->K;
  float st[ST_F] = {(float)M->st.G_sum, (float)M->st.steps, (float)M->st.pull_sum, (float)M->st.pulls};
  size_t *cnt = xmalloc((size_t)K * sizeof(size_t));
  M->all_pair = xmalloc(PAIR_F * (size_t)K * K * sizeof(float)); M->all_st = xmalloc((size_t)K * ST_F * sizeof(float));
  for (int k = 0; k < K; k++) cnt[k] = PAIR_F * (size_t)K;
  o->allgatherv(rt, M->pair, M->all_pair, cnt);
  for (int k = 0; k < K; k++) cnt[k] = ST_F;
  o->allgatherv(rt, st, M->all_st, cnt);
  if (GO(c)->timeline[0]) {
    float mine = (float)M->tl.n, *counts = xmalloc((size_t)K * sizeof(float)), *all;
    size_t sum = 0;
    for (int k = 0; k < K; k++) cnt[k] = 1;
    o->allgatherv(rt, &mine, counts, cnt);
    for (int k = 0; k < K; k++) { cnt[k] = (size_t)counts[k]; sum += cnt[k]; }
    all = xmalloc((sum ? sum : 1) * sizeof(float));
    if (!M->tl.v) M->tl.v = xmalloc(sizeof(float));
    o->allgatherv(rt, M->tl.v, all, cnt);
    if (rt->node == 0) {
      outfile_t of; outfile_open(&of, GO(c)->timeline, "--gossip-timeline");
      fprintf(of.f, "node,peer,start_s,taken_s,end_s\n");
      size_t off = 0;
      for (int k = 0; k < K; off += cnt[k], k++)
        for (size_t i = 0; i + TL_F <= cnt[k]; i += TL_F)
          fprintf(of.f, "%d,%d,%.6f,%.6f,%.6f\n", k, (int)all[off + i], all[off + i + 1], all[off + i + 2], all[off + i + 3]);
      outfile_commit(&of);
    }
    xfree(counts); xfree(all);
  }
  xfree(cnt);
}

static void gs_summary(json_t *x, const loop_t *L, void *arg);

/* A node's tables and measures read from its checkpoint (issue 46), against the run: every time in
 * the table a duration (>= 0, finite) or unknown (+INF); the steps the loop's; the pulls at most the
 * steps, by peer whole counts summing to them (none from itself); durations >= 0 and finite; the peer
 * choice's rng not xoshiro's all-zero state (which no seed reaches and which yields only zeros). */
static void gs_resume_check(const loop_t *L, const gnode_t *Nd, const gmain_t *M, const rng_t *peer_rng) {
  const int K = Nd->K;
  const double big = 1e12;   /* seconds: the loop's own bound on a run's time */
  for (size_t k = 0; k < TAB(K); k++)
    if (Nd->c[k] != INFINITY) loop_check(L, Nd->c[k], 0, big, "times[%zu] (%s time of node %zu; +inf: unknown)", k,
                                         k < (size_t)K ? "transfer" : "step", k % (size_t)K);
  const gs_stats_t *st = &M->st;
  loop_check(L, (double)st->steps, (double)L->updates, (double)L->updates, "stats.steps (the loop's updates)");
  loop_check(L, (double)st->pulls, 0, K > 1 ? (double)st->steps : 0, "stats.pulls (one exchange per --tau steps at most)");
  loop_check(L, st->G_sum, 0, big, "stats.G_sum");
  loop_check(L, st->pull_sum, 0, big, "stats.pull_sum");
  double sum = 0;
  for (int j = 0; j < K; j++) {
    const float cnt = M->pair[j];
    loop_check(L, cnt, 0, j == Nd->me ? 0 : (double)st->pulls, "pairs[%d] (pulls from node %d)", j, j);
    if (cnt != floorf(cnt)) loop_check(L, cnt, 0, -1, "pairs[%d] (pulls from node %d: a whole count)", j, j);
    loop_check(L, M->pair[K + j], 0, big, "pairs[%d] (the pulls' duration sum from node %d)", K + j, j);
    loop_check(L, M->pair[2 * K + j], 0, big, "pairs[%d] (the shortest pull from node %d)", 2 * K + j, j);
    sum += cnt;
  }
  if (st->pulls < (1L << 24) && sum != (double)st->pulls)   /* (float counts are exact below 2^24) */
    die("checkpoint %s: section 'pairs' counts %.0f pulls, field 'stats.pulls' is %ld: a damaged or crafted file; start "
        "over without --resume", loop_node_file(L), sum, st->pulls);
  if (!(peer_rng->s[0] | peer_rng->s[1] | peer_rng->s[2] | peer_rng->s[3]))
    die("checkpoint %s: section 'peer_rng' is all zero, a state no seed gives (its draws would all be 0): a damaged or "
        "crafted file; start over without --resume", loop_node_file(L));
}

static void gossip_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  const rt_ops_t *o = rt->ops;
  int K = rt->nnodes, me = rt->node;
  size_t n = r->net.nparams;
  gnode_t Nd; gmain_t M; gs_init(rt, job, &Nd, &M);
  loop_t L; loop_init(&L, rt, job, LOOP_LOCAL, NULL, gs_summary, &M);
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 2), 0, 1, c->with_replacement, (uint64_t)me);
  replica_shard(&rep, r, me, K);              /* X_i: this node's own shard */
  if (c->noniid > 0) sampler_skew(&rep.s, c->noniid);
  loop_device(&L, "gradients", 0);   /* --device: the gradients there, w on the host */
  loop_device_replica(&L, &rep);
  optim_t opt; optim_init(&opt, OPT_SGD, n, c->momentum, c->wd);   /* Alg. 1: plain SGD unless --momentum */
  rng_t peer_rng; rng_seed(&peer_rng, c->seed, 7000u + (uint64_t)me);
  loop_state(&L, "w", Nd.w, n * sizeof(float)); loop_state_optim(&L, "sgd", &opt); loop_state_replica(&L, "replica", &rep);
  loop_state(&L, "peer_rng", &peer_rng, sizeof peer_rng); loop_state(&L, "times", Nd.c, TAB(K) * sizeof(float));
  loop_state(&L, "stats", &M.st, sizeof M.st); loop_state(&L, "pairs", M.pair, PAIR_F * (size_t)K * sizeof(float));
  int S = K > 1 ? (GO(c)->servers < K - 1 ? GO(c)->servers : K - 1) : 0;   /* serving roles */
  void **server = xcalloc((size_t)(S ? S : 1), sizeof(void *));
  for (int s = 0; s < S; s++) server[s] = o->thread_start(rt, -1, gs_server, &Nd);
  long t = 0, total = r->total_steps;   /* local steps per node */
  /* (no request comes before every node has loaded its snapshot: loop_resume ends in an allreduce) */
  if (loop_resume(&L)) { gs_resume_check(&L, &Nd, &M, &peer_rng); optim_refresh(&opt, Nd.w); t = L.updates; }
  float *g = xmalloc(n * sizeof(float));
  while (t < total) {
    watchdog_context("%s node %d: step %ld of %ld", c->algo, me, t, total);
    double t0 = o->now(rt);
    const float *at = Nd.w;
    if (M.wl) { o->mutex_lock(rt, Nd.mw); vec_copy(M.wl, Nd.w, n); o->mutex_unlock(rt, Nd.mw); at = M.wl; }
    double loss = replica_grad_on_device(&rep, rt, 0, at, g);   /* grad F_i(w_{t,i}; x) */
    M.st.G_sum += o->now(rt) - t0;
    o->mutex_lock(rt, Nd.mw);
    optim_step(&opt, Nd.w, g, loop_lr(&L, t));    /* w_{t+1,i} = w_{t,i} - alpha grad */
    o->mutex_unlock(rt, Nd.mw);
    o->work(rt, 4.0 * n * 4);
    M.st.steps = ++t;
    loop_diverged(&L, loss, t);                                  /* this node's own: it goes on */
    loop_loss(&L, loss, 1);
    if (K > 1 && t % Nd.T == 0)                                  /* if t = 0 mod T: choose j, exchange */
      gs_exchange(rt, &M, choose_peer(&Nd, &peer_rng, gs_warm_kind(Nd.kind) && t <= Nd.W), t);
    const float *ew = Nd.w;   /* push: the serving role may be averaging into w: a copy under the mutex */
    if (M.wl && loop_due(&L, t, t == total)) { o->mutex_lock(rt, Nd.mw); vec_copy(M.wl, Nd.w, n); o->mutex_unlock(rt, Nd.mw); ew = M.wl; }
    int stop = loop_progress(&L, ew, t, (double)t * K * c->batch, t == total);   /* its own model, on the test set */
    gs_checkpoint(rt, &L, &Nd, 0);
    if (stop) break;
  }
  /* every request this node made has been answered: once all nodes are here, no more come */
  if (K > 1) {
    o->barrier(rt);
    M.req[0] = OP_STOP;   /* one STOP per serving role of the next node (every node has S) */
    for (int s = 0; s < S; s++) o->send(rt, (me + 1) % K, M.req, (1 + TAB(K)) * sizeof(float), GS_TAG_REQ);
    for (int s = 0; s < S; s++) o->thread_join(rt, server[s]);
  }
  gs_checkpoint(rt, &L, &Nd, pdl_stop_signal || t == total);
  gs_gather(rt, &M);
  loop_finish(&L, Nd.w, Nd.w);
  xfree(server); xfree(g); xfree(M.pair); xfree(M.all_pair); xfree(M.all_st); xfree(M.tl.v);
  optim_free(&opt); replica_free(&rep);
  o->mutex_free(rt, Nd.mw); o->mutex_free(rt, Nd.mc);
  xfree(Nd.w); xfree(Nd.c); xfree(Nd.p); xfree(M.wl); xfree(M.reply); xfree(M.req);
}

/* The per-node figures of the summary, from every requester's pulls by peer (pair: [K] count,
 * [K] duration sum, [K] shortest). The shortest pull j made from i stands for the uncongested
 * transfer time of that pair (each pair has many pulls; an idle one sets the minimum).
 *   C_i (eq. 1's right side, "C_serve_s"): the uncongested time of the pulls i served, i.e.
 *       how long one request occupies i's link;
 *   C_j (left side, "C_transfer_s"): j's uncongested pull time, so T G_j + C_j is j's interval
 *       between requests with no congestion (with the measured durations the interval grows
 *       until it balances the queue, and the predicate would always say "no");
 *   waiting per transfer at i ("wait_at_node_s"): the mean of (duration - uncongested time)
 *       over the pulls i served, whether queued for a serving role or slowed by sharing i's link.
 * Measured congestion at i: its waiting per transfer exceeds its uncongested transfer time. */
typedef struct { double *G, *Cx, *Cs, *Cp, *Wt, *pred, *meas, *Tstar, *lhs1; int congested, measured, disagree; } gs_fig_t;
static void gs_figures(const gmain_t *M, gs_fig_t *F) {
  int K = M->Nd->K, T = M->Nd->T;
  const float *st = M->all_st, *pair = M->all_pair;
  double sumG = 0, sumCx = 0;
  for (int k = 0; k < K; k++) {
    const float *s = st + (size_t)k * ST_F;
    F->G[k] = s[1] > 0 ? s[0] / s[1] : 0; F->Cp[k] = s[3] > 0 ? s[2] / s[3] : 0;
    double idle = 0, npull = 0, served = 0, idle_in = 0, extra_in = 0;
    for (int i = 0; i < K; i++) {
      const float *pj = pair + (size_t)k * PAIR_F * K;           /* k as the requester */
      idle += (double)pj[i] * pj[2 * K + i]; npull += pj[i];
      const float *pi = pair + (size_t)i * PAIR_F * K;           /* k as the peer */
      served += pi[k]; idle_in += (double)pi[k] * pi[2 * K + k]; extra_in += pi[K + k] - (double)pi[k] * pi[2 * K + k];
    }
    F->Cx[k] = npull > 0 ? idle / npull : 0;
    F->Cs[k] = served > 0 ? idle_in / served : 0;
    F->Wt[k] = served > 0 ? extra_in / served : 0;
    sumG += F->G[k]; sumCx += F->Cx[k];
  }
  for (int i = 0; i < K && K > 1; i++) {
    double lhs = (T * (sumG - F->G[i]) + (sumCx - F->Cx[i])) / (K - 1);   /* (1/(K-1)) sum_j!=i (T G_j + C_j) */
    F->lhs1[i] = lhs;
    F->pred[i] = F->Cs[i] > 0 && lhs < F->Cs[i];                          /* eq. (1): node i congests */
    F->Tstar[i] = sumG - F->G[i] > 0 ? ((K - 1) * F->Cs[i] - (sumCx - F->Cx[i])) / (sumG - F->G[i]) : 0;   /* eq. (2) */
    F->meas[i] = F->Cs[i] > 0 && F->Wt[i] > F->Cs[i];
    F->congested |= (int)F->pred[i]; F->measured |= (int)F->meas[i]; F->disagree += F->pred[i] != F->meas[i];
  }
}

/* every requester's pulls by peer, row-major [requester][peer]: count, mean and shortest duration */
static void gs_pair_json(json_t *x, const float *pair, int K) {
  double *pc = xmalloc(3 * (size_t)K * K * sizeof(double)), *pm = pc + (size_t)K * K, *pn = pm + (size_t)K * K;
  for (int j = 0; j < K; j++)
    for (int i = 0; i < K; i++) {
      const float *pj = pair + (size_t)j * PAIR_F * K;
      pc[(size_t)j * K + i] = pj[i]; pm[(size_t)j * K + i] = pj[i] > 0 ? pj[K + i] / pj[i] : 0;
      pn[(size_t)j * K + i] = pj[2 * K + i];
    }
  json_num_array(x, "pair_pulls", pc, (size_t)K * K, 12);   /* whole counts (issue 32: 1 digit wrote 46 as 5e+01) */
  json_num_array(x, "pair_mean_s", pm, (size_t)K * K, 6);
  json_num_array(x, "pair_min_s", pn, (size_t)K * K, 6);
  xfree(pc);
}

/* Node 0's summary fields: per-node stats and the eq. (1)/(2) check. */
static void gs_summary(json_t *x, const loop_t *L, void *arg) {
  const gmain_t *M = arg; const run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  int K = M->Nd->K;
  double *v = xcalloc((size_t)K * 9, sizeof(double));
  gs_fig_t F = {v, v + K, v + 2 * K, v + 3 * K, v + 4 * K, v + 5 * K, v + 6 * K, v + 7 * K, v + 8 * K, 0, 0, 0};
  gs_figures(M, &F);
  json_int(x, "nodes", K); json_int(x, "T", M->Nd->T);
  if (c->noniid > 0) json_num(x, "noniid", c->noniid);
  if (gs_warm_kind(M->Nd->kind)) { json_int(x, "warmup_steps", M->Nd->W); json_num(x, "threshold", M->Nd->th); }
  json_int(x, "model_bytes", (long long)(r->net.nparams * sizeof(float)));
  json_num_array(x, "G_s", F.G, K, 6); json_num_array(x, "C_exchange_s", F.Cp, K, 6);
  json_num_array(x, "C_transfer_s", F.Cx, K, 6); json_num_array(x, "C_serve_s", F.Cs, K, 6);
  json_num_array(x, "wait_at_node_s", F.Wt, K, 6);
  json_num_array(x, "eq1_lhs_s", F.lhs1, K, 6);
  json_num_array(x, "eq1_congested", F.pred, K, 1); json_num_array(x, "measured_congested", F.meas, K, 1);
  json_num_array(x, "eq2_T_star", F.Tstar, K, 4);
  gs_pair_json(x, M->all_pair, K);
  json_int(x, "eq1_any_congested", F.congested); json_int(x, "measured_any_congested", F.measured);
  json_int(x, "eq1_disagreements", F.disagree);
  xfree(v);
}

/* the timeline file is written at the end of a run: refuse a path that cannot be written first,
 * and a resume, whose timeline would hold only the pulls after it */
static int gossip_prepare(job_t *job) {
  const train_cfg_t *c = &job->r.cfg;
  if (GO(c)->timeline[0] && c->resume)
    die_usage("train: --gossip-timeline with --resume: the timeline is not in the snapshot (it would hold only the "
              "exchanges after the resume); drop one of them");
  if (GO(c)->timeline[0]) {
    train_output_distinct(c, "--gossip-timeline", GO(c)->timeline);   /* never another output's file */
    outfile_probe(GO(c)->timeline, "--gossip-timeline");
  }
  return -1;
}
static const char *const gs_unknown_rules[] = {"best", "literal", NULL};
#define GOPT(field) OD_ALGO, offsetof(gossip_opts_t, field), sizeof(((gossip_opts_t *)0)->field)
static const optdef_t
  od_gs_warmup = {"--gossip-warmup", OD_LONG, -1, 1000000000, NULL, "-1", "W", "peers chosen by measured time for W local steps (-1: an epoch of the node's shard)", GOPT(warmup), 1, NULL},
  od_gs_threshold = {"--gossip-threshold", OD_FLOAT, 0, 1, NULL, "0.1", "X", "UPDATE_TIME's threshold", GOPT(threshold), 1, NULL},
  od_gs_unknown = {"--gossip-unknown", OD_ENUM, 0, 0, gs_unknown_rules, "best", "R", "warm-up: an unknown peer counts as the best known time (best), or gets probability 0 as Alg. 2 is written (literal: the first round's picks lock in)", GOPT(unknown), 1, NULL},
  od_gs_servers = {"--gossip-servers", OD_INT, 1, 4096, NULL, "8", "S", "serving roles per node, pulls served at once (capped at K-1)", GOPT(servers), 1, NULL},
  od_gs_timeline = {"--gossip-timeline", OD_STR, 0, 0, NULL, NULL, "FILE", "write every transfer (node,peer,start_s,taken_s,end_s) as CSV", GOPT(timeline), 0, NULL};
#define GS_OPTS ALGO_OPTS_DIST, &od_tau, &od_with_replacement, &od_noniid, &od_gs_servers, &od_gs_timeline
static const optdef_t *const gs_opts[] = {GS_OPTS, NULL};
static const optdef_t *const gs_warm_opts[] = {GS_OPTS, &od_gs_warmup, &od_gs_threshold, &od_gs_unknown, NULL};
const algo_t algo_gossip = {
  .name = "gossip", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_PULL, .roles_talk = 1, .device = 1, .momentum = -1,
  .opts = gs_opts, .prepare = gossip_prepare, .checkpoint = 1,
  .help = "pull-gossip SGD (Oguni et al. Alg. 1): every T steps average with a uniformly chosen peer's model",
};
const algo_t algo_gossip_warmup = {
  .name = "gossip-warmup", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_WARMUP, .roles_talk = 1, .device = 1, .momentum = -1,
  .opts = gs_warm_opts, .prepare = gossip_prepare, .checkpoint = 1,
  .help = "pull gossip with Alg. 2's warm-up: peers chosen by measured transfer time for W steps",
};
const algo_t algo_gossip_push = {
  .name = "gossip-push", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_PUSH, .roles_talk = 1, .device = 1, .momentum = -1,
  .opts = gs_opts, .prepare = gossip_prepare, .checkpoint = 1,
  .help = "push-gossip SGD (the comparator): every T steps send the model to a uniform peer, which averages it in",
};
const algo_t algo_gossip_warmup_compute = {
  .name = "gossip-warmup-compute", .shape = ALGO_PEERS, .node = gossip_node, .variant = GS_WARMUP_G, .roles_talk = 1, .device = 1,
  .momentum = -1, .opts = gs_warm_opts, .prepare = gossip_prepare, .checkpoint = 1,
  .help = "beyond the paper: Alg. 2 whose tables also share step times; peers chosen by 1/(transfer x step time)",
};
