/* data_pipe.c — the prefetching pipeline of data_pipe.h: `threads` decoder threads fill a ring of
 * `depth` batch buffers ahead of the consumer. Work is handed out an image at a time (batch k,
 * slot b) in order, never more than `depth` batches ahead of the one being consumed; each image's
 * example and augmentation depend only on (seed, shard, k, b), so the batches are the same whatever
 * the thread count or timing (the test checks it). The consumer's wait is measured in pipe_next.
 * Thread budget: the decoders are threads of their own, beside the training step's --threads; the
 * caller says how many it started (pdl speed --data prints it).
 * The images come from the caller's source (img_src_t: the JPEG folder's is imgfolder_src, data_jpeg.c),
 * so this file calls down only (the sampler, the augmentation), never a loader. */
#include "core/data_pipe.h"
#include "util/util.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_PIPE_EPOCH 0x50495045ull
#define STREAM_PIPE_AUG 0x50495041ull

typedef struct { long batch; int done; float *x; int *y; } slot_t;

struct pipe {
  img_src_t src;
  int B, depth, nthreads, shard, nshards, n_shard;
  uint64_t seed;
  aug_t aug;
  int *base;          /* [n_shard] the shard's examples (positions shard, shard+S, ... of the set) */
  int *order;         /* [n_shard] the current epoch's order, of epoch order_epoch */
  long order_epoch;
  slot_t *slot;       /* [depth] */
  long consumed;      /* batches handed to the consumer */
  long next_item;     /* next (batch, b) to give a decoder: batch = next_item / B */
  long decoded;
  double busy;
  int stop;
  pthread_mutex_t mu;
  pthread_cond_t work, ready;
  pthread_t *th;
};

static double now_mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Example of position pos (over all epochs); under mu (the epoch's order is rebuilt when it changes:
 * items are handed out in order, so epochs only move forward). */
static int example_at(struct pipe *p, long pos) {
  const long epoch = pos / p->n_shard;
  if (epoch != p->order_epoch) {
    memcpy(p->order, p->base, sizeof(int) * (size_t)p->n_shard);
    rng_t r;
    rng_seed(&r, p->seed, STREAM_PIPE_EPOCH ^ ((uint64_t)p->shard << 40) ^ (uint64_t)epoch);
    rng_shuffle(&r, p->order, p->n_shard);
    p->order_epoch = epoch;
  }
  return p->order[pos % p->n_shard];
}

static void *decoder(void *arg) {
  struct pipe *p = arg;
  const int S = p->src.side;
  const size_t img = (size_t)3 * S * S;
  uint8_t *px = xmalloc(img);
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->next_item / p->B >= p->consumed + p->depth) pthread_cond_wait(&p->work, &p->mu);
    if (p->stop) break;
    const long item = p->next_item++, k = item / p->B;
    const int b = (int)(item % p->B), e = example_at(p, item);
    slot_t *s = &p->slot[k % p->depth];
    if (b == 0) { s->batch = k; s->done = 0; }
    pthread_mutex_unlock(&p->mu);
    const double t0 = now_mono();
    float *x = s->x + (size_t)b * img;
    p->src.decode(p->src.ctx, e, px);
    p->src.normalise(px, S, x);
    if (p->aug.on) {
      rng_t r;
      rng_seed(&r, p->seed, STREAM_PIPE_AUG ^ ((uint64_t)p->shard << 48) ^ (uint64_t)item);
      aug_apply(&p->aug, x, 3, S, S, rng_u64(&r));
    }
    s->y[b] = p->src.label(p->src.ctx, e);
    const double dt = now_mono() - t0;
    pthread_mutex_lock(&p->mu);
    p->busy += dt;
    p->decoded++;
    if (++s->done == p->B) pthread_cond_broadcast(&p->ready);
  }
  pthread_mutex_unlock(&p->mu);
  xfree(px);
  return NULL;
}

pipe_t *pipe_open(img_src_t src, int B, int depth, int threads, uint64_t seed, int shard, int nshards, const aug_t *aug) {
  if (B < 1 || depth < 1 || threads < 1 || nshards < 1 || shard < 0 || shard >= nshards)
    die("pipe_open: bad arguments (batch %d, depth %d, threads %d, shard %d of %d)", B, depth, threads, shard, nshards);
  struct pipe *p = calloc(1, sizeof *p);
  if (!p) die("out of memory");
  p->src = src; p->B = B; p->depth = depth; p->nthreads = threads; p->seed = seed; p->shard = shard; p->nshards = nshards;
  if (aug) p->aug = *aug;
  const int n = src.n;
  p->n_shard = n / nshards + (shard < n % nshards ? 1 : 0);
  if (p->n_shard < 1) die("pipe_open: shard %d of %d is empty (%d images)", shard, nshards, n);
  p->base = xmalloc(sizeof(int) * (size_t)p->n_shard);
  p->order = xmalloc(sizeof(int) * (size_t)p->n_shard);
  for (int k = 0; k < p->n_shard; k++) p->base[k] = shard + k * nshards;
  p->order_epoch = -1;
  const int S = src.side;
  p->slot = calloc((size_t)depth, sizeof *p->slot);
  for (int i = 0; i < depth; i++) {
    p->slot[i].x = xmalloc(sizeof(float) * (size_t)B * 3 * S * S);
    p->slot[i].y = xmalloc(sizeof(int) * (size_t)B);
    p->slot[i].batch = -1;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->ready, NULL);
  p->th = calloc((size_t)threads, sizeof *p->th);
  for (int t = 0; t < threads; t++)
    if (pthread_create(&p->th[t], NULL, decoder, p) != 0) die("pipe_open: cannot start decoder thread %d of %d", t + 1, threads);
  return p;
}

void pipe_next(pipe_t *p, float *x, int *y, double *wait_s) {
  const double t0 = now_mono();
  pthread_mutex_lock(&p->mu);
  slot_t *s = &p->slot[p->consumed % p->depth];
  while (!(s->batch == p->consumed && s->done == p->B)) pthread_cond_wait(&p->ready, &p->mu);
  pthread_mutex_unlock(&p->mu);
  const double w = now_mono() - t0;
  const int S = p->src.side;
  memcpy(x, s->x, sizeof(float) * (size_t)p->B * 3 * S * S);
  memcpy(y, s->y, sizeof(int) * (size_t)p->B);
  pthread_mutex_lock(&p->mu);
  s->batch = -1;
  p->consumed++;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  if (wait_s) *wait_s = w;
}

void pipe_stats(pipe_t *p, long *decoded, double *busy_s) {
  pthread_mutex_lock(&p->mu);
  if (decoded) *decoded = p->decoded;
  if (busy_s) *busy_s = p->busy;
  pthread_mutex_unlock(&p->mu);
}

void pipe_close(pipe_t *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nthreads; t++) pthread_join(p->th[t], NULL);
  for (int i = 0; i < p->depth; i++) { xfree(p->slot[i].x); xfree(p->slot[i].y); }
  free(p->slot); free(p->th);
  xfree(p->base); xfree(p->order);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->work);
  pthread_cond_destroy(&p->ready);
  free(p);
}

/* ---- the lazy source (data_pipe.h) -----------------------------------------------------------
 * Jobs are batches: the one requested now (on demand) and the guessed ones; decoders take the
 * first job (by position in the list: the on-demand one is put first) that has an image left. */
#include <unistd.h>

typedef struct ljob {
  long start; int B, next, done, used;
  int owned;   /* a fetch waits for it: never trimmed or freed by another fetch */
  int *idx; uint64_t *keys;
  float *x; int *y;
  struct ljob *next_job;
} ljob_t;

struct lazy_src {
  img_src_t src;
  aug_t aug;
  int nthreads, depth, started;
  pid_t pid;
  pthread_t *th;
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  ljob_t *jobs;            /* the queue, in the order decoders serve it */
  long last_start, stride;
  long decoded, hits, misses;
  double wait;
  int stop;
};

static void ljob_free(ljob_t *j) { xfree(j->idx); xfree(j->keys); xfree(j->x); xfree(j->y); free(j); }

static ljob_t *ljob_new(const lazy_src_t *L, long start, int B, const int *idx, const uint64_t *keys) {
  ljob_t *j = calloc(1, sizeof *j);
  if (!j) die("out of memory");
  const int S = L->src.side;
  j->start = start; j->B = B;
  j->idx = xmalloc(sizeof(int) * (size_t)B); j->keys = xmalloc(sizeof(uint64_t) * (size_t)B);
  memcpy(j->idx, idx, sizeof(int) * (size_t)B); memcpy(j->keys, keys, sizeof(uint64_t) * (size_t)B);
  j->x = xmalloc(sizeof(float) * (size_t)B * 3 * S * S); j->y = xmalloc(sizeof(int) * (size_t)B);
  return j;
}

static void *lazy_decoder(void *arg) {
  lazy_src_t *L = arg;
  const int S = L->src.side;
  const size_t img = (size_t)3 * S * S;
  uint8_t *px = xmalloc(img);
  pthread_mutex_lock(&L->mu);
  for (;;) {
    ljob_t *j = NULL;
    while (!L->stop) {
      for (j = L->jobs; j && j->next >= j->B; j = j->next_job) {}
      if (j) break;
      pthread_cond_wait(&L->work, &L->mu);
    }
    if (L->stop) break;
    const int b = j->next++;
    j->used++;   /* the job cannot be freed while a decoder writes into it */
    pthread_mutex_unlock(&L->mu);
    float *x = j->x + (size_t)b * img;
    L->src.decode(L->src.ctx, j->idx[b], px);
    L->src.normalise(px, S, x);
    if (L->aug.on) aug_apply(&L->aug, x, 3, S, S, j->keys[b]);
    j->y[b] = L->src.label(L->src.ctx, j->idx[b]);
    pthread_mutex_lock(&L->mu);
    j->used--;
    j->done++;
    L->decoded++;
    pthread_cond_broadcast(&L->done);
  }
  pthread_mutex_unlock(&L->mu);
  xfree(px);
  return NULL;
}

lazy_src_t *lazy_open(img_src_t src, int threads, int depth, const aug_t *aug) {
  lazy_src_t *L = calloc(1, sizeof *L);
  if (!L) die("out of memory");
  L->src = src; L->nthreads = threads < 1 ? 1 : threads; L->depth = depth < 1 ? 1 : depth;
  if (aug) L->aug = *aug;
  L->last_start = -1;
  pthread_mutex_init(&L->mu, NULL);
  pthread_cond_init(&L->work, NULL);
  pthread_cond_init(&L->done, NULL);
  return L;
}

static void lazy_start(lazy_src_t *L) {
  if (L->started && L->pid == getpid()) return;
  L->th = calloc((size_t)L->nthreads, sizeof *L->th);   /* a fork()ed child: the parent's threads are not here */
  for (int t = 0; t < L->nthreads; t++)
    if (pthread_create(&L->th[t], NULL, lazy_decoder, L) != 0) die("lazy data set: cannot start decoder thread %d of %d", t + 1, L->nthreads);
  L->started = 1; L->pid = getpid();
}

/* Append a guessed job of B draws starting `ahead` draws after the sampler state `after` (whose
 * draw count is `after_start`), unless it is queued already or cannot be told. Under mu. */
static void lazy_guess(lazy_src_t *L, const sampler_t *after, long after_start, long start, int B) {
  ljob_t **tail = &L->jobs;
  for (ljob_t *j = L->jobs; j; j = j->next_job) {
    if (j->start == start && j->B == B) return;
    tail = &j->next_job;
  }
  int *idx = xmalloc(sizeof(int) * (size_t)B);
  uint64_t *keys = xmalloc(sizeof(uint64_t) * (size_t)B);
  if (sampler_peek(after, start - after_start, B, idx, keys) == B) { *tail = ljob_new(L, start, B, idx, keys); pthread_cond_broadcast(&L->work); }
  xfree(idx); xfree(keys);
}

void lazy_fetch(lazy_src_t *L, long start, const int *idx, const uint64_t *keys, int B, float *x, int *y, const sampler_t *after) {
  const double t0 = now_mono();
  pthread_mutex_lock(&L->mu);
  lazy_start(L);
  ljob_t *j = NULL, **link = &L->jobs;
  for (; *link; link = &(*link)->next_job)
    if (!(*link)->owned && (*link)->start == start && (*link)->B == B && !memcmp((*link)->idx, idx, sizeof(int) * (size_t)B) &&
        !memcmp((*link)->keys, keys, sizeof(uint64_t) * (size_t)B)) { j = *link; break; }
  if (j) { *link = j->next_job; L->hits++; }
  else { j = ljob_new(L, start, B, idx, keys); L->misses++; }
  j->owned = 1;
  j->next_job = L->jobs; L->jobs = j;   /* first in the queue: every decoder helps finish it */
  pthread_cond_broadcast(&L->work);
  while (j->done < B) pthread_cond_wait(&L->done, &L->mu);
  for (ljob_t **p = &L->jobs; *p; p = &(*p)->next_job)   /* unlink it (other samplers' fetches may have queued before it) */
    if (*p == j) { *p = j->next_job; break; }
  /* drop guesses now behind the stream; queue the next ones at the last stride */
  if (L->last_start >= 0 && start > L->last_start) L->stride = start - L->last_start;
  if (L->stride <= 0) L->stride = B;
  L->last_start = start;
  for (ljob_t **p = &L->jobs; *p;) {
    ljob_t *q = *p;
    if (q->owned) { p = &q->next_job; continue; }
    if (q->start <= start && q->used == 0 && q->next >= q->B) { *p = q->next_job; ljob_free(q); }
    else if (q->start <= start && q->next < q->B) { q->B = q->next; p = &q->next_job; }   /* stop handing out its images */
    else p = &q->next_job;
  }
  const long after_start = sampler_drawn(after);
  for (int k = 1; k <= L->depth; k++) lazy_guess(L, after, after_start, start + k * L->stride, B);
  L->wait += now_mono() - t0;
  pthread_mutex_unlock(&L->mu);
  memcpy(x, j->x, sizeof(float) * (size_t)B * 3 * L->src.side * L->src.side);
  memcpy(y, j->y, sizeof(int) * (size_t)B);
  ljob_free(j);
}

void lazy_stats(lazy_src_t *L, long *decoded, long *hits, long *misses, double *wait_s) {
  pthread_mutex_lock(&L->mu);
  if (decoded) *decoded = L->decoded;
  if (hits) *hits = L->hits;
  if (misses) *misses = L->misses;
  if (wait_s) *wait_s = L->wait;
  pthread_mutex_unlock(&L->mu);
}

void lazy_close(lazy_src_t *L) {
  if (!L) return;
  pthread_mutex_lock(&L->mu);
  L->stop = 1;
  pthread_cond_broadcast(&L->work);
  pthread_mutex_unlock(&L->mu);
  if (L->started && L->pid == getpid())
    for (int t = 0; t < L->nthreads; t++) pthread_join(L->th[t], NULL);
  while (L->jobs) { ljob_t *j = L->jobs; L->jobs = j->next_job; ljob_free(j); }
  free(L->th);
  if (L->src.close) L->src.close(L->src.ctx);
  pthread_mutex_destroy(&L->mu); pthread_cond_destroy(&L->work); pthread_cond_destroy(&L->done);
  free(L);
}
