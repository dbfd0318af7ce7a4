/* replica.c — see replica.h. The overlap pool: jobs are queued FIFO under one mutex; a helper
 * takes a job, runs it and marks it done; the submitting role waits on the job's flag. Helpers
 * are created on first use and live until the process exits (blocked on a condition variable).
 * A fork()ed child has no helpers, so it computes inline (pool_pid check). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "algo/replica.h"
#include "util/env.h"
#include "util/vec.h"

void replica_init(replica_t *rp, const run_t *r, int b, int threads, int slice, int nslices, int with_replacement, uint64_t stream) {
  rp->net = &r->net; rp->b = b; rp->slice = slice; rp->nslices = with_replacement ? 1 : nslices;
  rp->overlap = 0;
  rp->img = dataset_image_floats(&r->data.train);
  rp->ws_seed = r->cfg.seed * 1000003u + stream;
  ws_init(&rp->ws, &r->net, b, threads, kernels_for(NULL, -1, NULL, NULL, 0), rp->ws_seed);
  uint64_t seed = with_replacement ? r->cfg.seed ^ (0x9e3779b97f4a7c15ULL * (stream + 1)) : r->cfg.seed;
  sampler_init(&rp->s, &r->data.train, seed, 0, 1, with_replacement);
  rp->x = xmalloc((size_t)b * rp->img * sizeof(float));
  rp->y = xmalloc((size_t)b * sizeof(int));
  rp->dw = rp->dg = NULL;
}

void replica_on(replica_t *rp, const kernels_t *k) {
  const uint64_t seed = rp->ws_seed;
  const int threads = rp->ws.nthreads;
  ws_free(&rp->ws);
  ws_init(&rp->ws, rp->net, rp->b, threads, k, seed);
}

void replica_shard(replica_t *rp, const run_t *r, int shard, int nshards) {
  int wr = rp->s.with_replacement;
  uint64_t seed = rp->s.seed;
  sampler_free(&rp->s);
  sampler_init(&rp->s, &r->data.train, seed, shard, nshards, wr);
  rp->slice = 0; rp->nslices = 1;
}

void replica_free(replica_t *rp) {
  if (rp->dw) { rp->ws.k->release(rp->dw); rp->ws.k->release(rp->dg); rp->dw = rp->dg = NULL; }
  ws_free(&rp->ws); sampler_free(&rp->s); xfree(rp->x); xfree(rp->y);
}

/* The real work of one gradient: this replica's slice of the next global batch
 * [nslices][b] (skip the slices before ours, copy ours, skip the rest), forward, backward. */
static double grad_work(replica_t *rp, const float *params, float *gacc, float scale) {
  int b = rp->b;
  sampler_skip(&rp->s, rp->slice * b);
  sampler_next(&rp->s, b, rp->x, rp->y);
  sampler_skip(&rp->s, (rp->nslices - 1 - rp->slice) * b);
  double loss = net_forward(&rp->ws, params, rp->x, rp->y, b, 1, NULL);
  net_backward(&rp->ws, params, gacc, rp->y, b, scale);
  return loss;
}

/* ---- overlap pool ---- */
typedef struct gjob {
  replica_t *rp; const float *params; float *gacc; float scale;
  double loss; int done;
  struct gjob *next;
} gjob_t;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static gjob_t *pool_head, *pool_tail;
static int pool_size;      /* helpers started (0: not yet) */
static pid_t pool_pid;     /* process that started them */

static void *pool_helper(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&pool_mu);
    while (!pool_head) pthread_cond_wait(&pool_work, &pool_mu);
    gjob_t *j = pool_head;
    pool_head = j->next;
    if (!pool_head) pool_tail = NULL;
    pthread_mutex_unlock(&pool_mu);
    double loss = grad_work(j->rp, j->params, j->gacc, j->scale);
    pthread_mutex_lock(&pool_mu);
    j->loss = loss; j->done = 1;
    pthread_cond_broadcast(&pool_done);
    pthread_mutex_unlock(&pool_mu);
  }
  return NULL;
}

/* Starts the helpers once per process; returns 0 when overlap is not worth it or not possible
 * (one core, a fork()ed child of the process that started them) or turned off with
 * PDL_SIM_OVERLAP=0 (tests compare both paths bit for bit). Called with pool_mu held. */
static int pool_ready(void) {
  if (pool_size) return pool_size > 0 && pool_pid == getpid();
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = env_get("PDL_SIM_OVERLAP");
  if (cores < 2 || (env && !strcmp(env, "0"))) { pool_size = -1; return 0; }
  if (cores > 64) cores = 64;
  for (long i = 0; i < cores; i++) {
    pthread_t th;
    if (pthread_create(&th, NULL, pool_helper, NULL)) die("replica: cannot start gradient helper thread %ld", i);
    pthread_detach(th);
  }
  pool_size = (int)cores; pool_pid = getpid();
  return 1;
}

/* A timing-only backend (--device phantom; kernels_t.charged): no batch is drawn (there is no data
 * to compute on), the passes compute nothing, and what their layers charged is the gradient's cost
 * (with no cost model: the counted flops, the same as flops_train * b). Its loss is 0, which nothing
 * reads as one (loop.c: no loss, no divergence in a timing-only run). */
static double grad_timing(replica_t *rp, rt_t *rt, const float *params, float *gacc, float scale) {
  const kernels_t *k = rp->ws.k;
  k->charged();   /* a new account: what this thread's earlier passes charged is not this gradient's */
  net_forward(&rp->ws, params, rp->x, rp->y, rp->b, 1, NULL);
  net_backward(&rp->ws, params, gacc, rp->y, rp->b, scale);
  rt->ops->compute(rt, k->charged());
  return 0.0;
}

double replica_grad(replica_t *rp, rt_t *rt, const float *params, float *gacc, float scale) {
  if (rp->ws.k->charged) return grad_timing(rp, rt, params, gacc, scale);
  double flops = rp->net->flops_train * rp->b;
  if (rp->overlap && rt->ops->simulated) {
    gjob_t j = {rp, params, gacc, scale, 0, 0, NULL};
    pthread_mutex_lock(&pool_mu);
    int ok = pool_ready();
    if (ok) {
      if (pool_tail) pool_tail->next = &j; else pool_head = &j;
      pool_tail = &j;
      pthread_cond_signal(&pool_work);
    }
    pthread_mutex_unlock(&pool_mu);
    if (ok) {
      rt->ops->compute(rt, flops);   /* simulated time; SimGrid runs the other roles meanwhile */
      pthread_mutex_lock(&pool_mu);
      while (!j.done) pthread_cond_wait(&pool_done, &pool_mu);
      pthread_mutex_unlock(&pool_mu);
      return j.loss;
    }
  }
  double loss = grad_work(rp, params, gacc, scale);
  rt->ops->compute(rt, flops);
  return loss;
}

double replica_grad_host(replica_t *rp, rt_t *rt, const float *params, float *gacc, float scale) {
  const kernels_t *k = rp->ws.k;
  if (k->host_memory) return replica_grad(rp, rt, params, gacc, scale);
  const size_t bytes = rp->net->nparams * sizeof(float);
  if (!rp->dw) { rp->dw = k->alloc(bytes); rp->dg = k->alloc(bytes); }
  k->upload(rp->dw, params, bytes);
  k->upload(rp->dg, gacc, bytes);
  const double loss = replica_grad(rp, rt, rp->dw, rp->dg, scale);
  k->download(gacc, rp->dg, bytes);
  return loss;
}

typedef struct { replica_t *rp; const float *at; float *g; double loss; } dev_grad_t;
static void dev_grad_role(rt_t *rt, void *arg) {
  dev_grad_t *d = arg;
  d->loss = replica_grad(d->rp, rt, d->at, d->g, 1.0f / (float)d->rp->b) / d->rp->b;
}
double replica_grad_on_device(replica_t *rp, rt_t *rt, int device, const float *params, float *g) {
  vec_zero(g, rp->net->nparams);
  if (!rp->ws.k->host_memory)   /* a device backend (the real runtime): on this thread, bound to it */
    return replica_grad_host(rp, rt, params, g, 1.0f / (float)rp->b) / rp->b;
  dev_grad_t d = {rp, params, g, 0};
  rt->ops->thread_join(rt, rt->ops->thread_start(rt, device, dev_grad_role, &d));
  return d.loss;
}

void replica_group_init(replica_group_t *rg, replica_t *rp, int G, float scale) {
  memset(rg, 0, sizeof *rg);
  rg->rp = rp; rg->G = G; rg->scale = scale; rg->n = rp[0].net->nparams;
  rg->roles = xcalloc((size_t)G, sizeof *rg->roles);
  rg->th = xcalloc((size_t)G, sizeof(void *));
  const int host = rp[0].ws.k->host_memory;
  if (!host && G != 1) die("internal: replica_group_init: a device backend runs one grad role per node (--grad-threads 1), not %d", G);
  for (int g = 0; g < G; g++) {
    rg->roles[g].rp = &rp[g]; rg->roles[g].scale = scale;
    rg->roles[g].acc = host ? xcalloc(rg->n, sizeof(float)) : NULL;   /* (a device's one role adds into sum) */
  }
}

void replica_group_free(replica_group_t *rg) {
  for (int g = 0; rg->roles && g < rg->G; g++) xfree(rg->roles[g].acc);
  xfree(rg->roles); xfree(rg->th);
  memset(rg, 0, sizeof *rg);
}

static void group_role(rt_t *rt, void *arg) {   /* D_g = scale x sum_k grad J(x_k; params) */
  struct group_role *q = arg;
  q->loss = replica_grad(q->rp, rt, q->at, q->acc, q->scale);
}

double replica_group_grad(replica_group_t *rg, rt_t *rt, const float *params, float *sum) {
  const int G = rg->G; const size_t n = rg->n;
  if (!rg->rp[0].ws.k->host_memory)   /* the one role, here, into sum on the device */
    return replica_grad(&rg->rp[0], rt, params, sum, rg->scale);
  for (int g = 0; g < G; g++) { rg->roles[g].at = params; rg->th[g] = rt->ops->thread_start(rt, g, group_role, &rg->roles[g]); }
  for (int g = 0; g < G; g++) rt->ops->thread_join(rt, rg->th[g]);
  vec_copy(sum, rg->roles[0].acc, n); vec_zero(rg->roles[0].acc, n);   /* sum = sum_g D_g; D_g = 0 */
  double ls = rg->roles[0].loss;
  for (int g = 1; g < G; g++) { vec_add(sum, rg->roles[g].acc, n); vec_zero(rg->roles[g].acc, n); ls += rg->roles[g].loss; }
  return ls;
}
