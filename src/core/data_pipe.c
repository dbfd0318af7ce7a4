/* data_pipe.c — the prefetching pipeline of data_img.h: `threads` decoder threads fill a ring of
 * `depth` batch buffers ahead of the consumer. Work is handed out an image at a time (batch k,
 * slot b) in order, never more than `depth` batches ahead of the one being consumed; each image's
 * example and augmentation depend only on (seed, shard, k, b), so the batches are the same whatever
 * the thread count or timing (the test checks it). The consumer's wait is measured in pipe_next.
 * Thread budget: the decoders are threads of their own, beside the training step's --threads; the
 * caller says how many it started (pdl speed --data prints it). */
#include "core/data_img.h"
#include "util/util.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_PIPE_EPOCH 0x50495045ull
#define STREAM_PIPE_AUG 0x50495041ull

typedef struct { long batch; int done; float *x; int *y; } slot_t;

struct pipe {
  const imgfolder_t *f;
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
  const int S = imgfolder_side(p->f);
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
    imgfolder_decode(p->f, e, px);
    imgfolder_normalise(px, S, x);
    if (p->aug.on) {
      rng_t r;
      rng_seed(&r, p->seed, STREAM_PIPE_AUG ^ ((uint64_t)p->shard << 48) ^ (uint64_t)item);
      aug_apply(&p->aug, x, 3, S, S, rng_u64(&r));
    }
    s->y[b] = imgfolder_label(p->f, e);
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

pipe_t *pipe_open(const imgfolder_t *f, int B, int depth, int threads, uint64_t seed, int shard, int nshards, const aug_t *aug) {
  if (B < 1 || depth < 1 || threads < 1 || nshards < 1 || shard < 0 || shard >= nshards)
    die("pipe_open: bad arguments (batch %d, depth %d, threads %d, shard %d of %d)", B, depth, threads, shard, nshards);
  struct pipe *p = calloc(1, sizeof *p);
  if (!p) die("out of memory");
  p->f = f; p->B = B; p->depth = depth; p->nthreads = threads; p->seed = seed; p->shard = shard; p->nshards = nshards;
  if (aug) p->aug = *aug;
  const int n = imgfolder_count(f);
  p->n_shard = n / nshards + (shard < n % nshards ? 1 : 0);
  if (p->n_shard < 1) die("pipe_open: shard %d of %d is empty (%d images)", shard, nshards, n);
  p->base = xmalloc(sizeof(int) * (size_t)p->n_shard);
  p->order = xmalloc(sizeof(int) * (size_t)p->n_shard);
  for (int k = 0; k < p->n_shard; k++) p->base[k] = shard + k * nshards;
  p->order_epoch = -1;
  const int S = imgfolder_side(f);
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
  const int S = imgfolder_side(p->f);
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
