/* train_state.c — the training state of a sequential run on a backend, and its step (run.h): the
 * one loop body that pdl train runs on the CPU and with --device, every optimizer through the
 * kernel table (optim.h). Kept apart from run.c so that the CUDA emulator's test links it alone. */
#include <stdlib.h>
#include <string.h>
#include "core/run.h"
#include "util/env.h"

void train_state_init(train_state_t *d, const kernels_t *k, float *w, float *g, optim_t *o) {
  memset(d, 0, sizeof *d);
  d->k = k; d->w = w; d->g = g; d->o = o; d->device = !k->host_memory;
  if (!d->device) return;
  const size_t bytes = o->n * sizeof(float);
  d->w = k->alloc(bytes);
  d->g = k->alloc(bytes);   /* zero-filled, as the steps want it */
  optim_init_on(&d->dev, o->kind, o->n, o->mu, o->wd, k);
  d->o = &d->dev;
}
void train_state_upload(train_state_t *d, const float *w, const optim_t *o) {
  if (!d->device) return;
  d->k->upload(d->w, w, o->n * sizeof(float));
  optim_transfer(d->o, o);
}
void train_state_download(const train_state_t *d, float *w, optim_t *o) {
  if (!d->device) return;
  d->k->download(w, d->w, o->n * sizeof(float));
  optim_transfer(o, d->o);
}
static void graphs_free(train_state_t *d) {
  for (int i = 0; i < 4; i++)
    if (d->graphs[i].g) { d->k->graph_free(d->graphs[i].g); d->graphs[i].g = NULL; }
}

void train_state_free(train_state_t *d) {
  graphs_free(d);
  if (d->chunk) d->k->release(d->chunk);
  xfree(d->chunk_host);
  d->chunk = d->chunk_host = NULL; d->chunk_bytes = 0;
  if (!d->device) return;
  d->k->release(d->w); d->k->release(d->g);
  optim_free(&d->dev);
}

double train_state_step(train_state_t *d, workspace_t *ws, const float *x, const int *y, int B, float lr) {
  const float *gp = optim_grad_point(d->o, d->w);
  const double loss = net_forward(ws, gp, x, y, B, 1, NULL) / B;   /* NaN for a resident batch (y NULL) */
  net_step_t st;   /* sgd/msgd: each layer's update runs inside the backward pass (same result) */
  if (optim_fused_step(d->o, &st, lr)) {
    net_backward_step(ws, d->w, d->g, y, B, 1.0f / (float)B, &st);
  } else {
    net_backward(ws, gp, d->g, y, B, 1.0f / (float)B);
    optim_step(d->o, d->w, d->g, lr);
  }
  return loss;
}

void resident_set_init(resident_set_t *s, const kernels_t *k, const dataset_t *ds) {
  const size_t img = (size_t)ds->c * ds->h * ds->w;   /* dataset_image_floats (dataset.c, which the emulator's test does not link) */
  s->k = k; s->n = ds->n;
  s->x = k->alloc((size_t)ds->n * img * sizeof(float));
  s->y = k->alloc((size_t)ds->n * sizeof(int));
  k->upload(s->x, ds->x, (size_t)ds->n * img * sizeof(float));
  k->upload(s->y, ds->y, (size_t)ds->n * sizeof(int));
}
void resident_set_free(resident_set_t *s) {
  if (s->k) { s->k->release(s->x); s->k->release(s->y); }
  memset(s, 0, sizeof *s);
}

/* train_state_steps' graph for this chunk: the slot of d->graphs holding (or to hold, empty) it,
 * or -1 to run the chunk eagerly (no graphs, not warm yet, Adam or ASGD without scalar slots or
 * over 64 steps, lr varying in the chunk,
 * PDL_TRAIN_GRAPH=0). Dropout masks are drawn ahead into the chunk's buffer, so a graph replays them. */
static int graph_slot(train_state_t *d, const workspace_t *ws, int K, const float *lr) {
  const char *e = env_get("PDL_TRAIN_GRAPH");
  if (!d->k->graph_begin || !d->warm || (e && !strcmp(e, "0"))) return -1;
  /* the kinds whose step takes no per-step argument but the lr; Adam's bias-corrected a and ASGD's
   * 1/t rate change every step: their graphs read them from the backend's scalar slots (written
   * before each replay), where it has them (kernels_t.scalars_set); (M)ASGD's first-step copy of
   * the average is behind us (warm) */
  const opt_kind_t kind = d->o->kind;
  if ((kind == OPT_ADAM || kind == OPT_ASGD) && (!d->k->scalars_set || K > 64)) return -1;
  for (int j = 1; j < K; j++) if (lr[j] != lr[0]) return -1;
  if (d->k->buffers_epoch && d->k->buffers_epoch() != d->graph_epoch) {   /* e.g. an evaluation grew a buffer */
    graphs_free(d);
    d->graph_epoch = d->k->buffers_epoch();
  }
  int lru = 0;
  d->graph_clock++;
  for (int i = 0; i < 4; i++) {
    if (d->graphs[i].g && d->graphs[i].K == K && d->graphs[i].lr == lr[0] && d->graphs[i].ws == ws) {
      d->graphs[i].used = d->graph_clock;
      return i;
    }
    if (!d->graphs[i].g || d->graphs[i].used < d->graphs[lru].used) lru = i;
  }
  if (d->graphs[lru].g) d->k->graph_free(d->graphs[lru].g);
  d->graphs[lru].g = NULL; d->graphs[lru].K = K; d->graphs[lru].lr = lr[0]; d->graphs[lru].ws = ws;
  d->graphs[lru].used = d->graph_clock;
  return lru;
}

void train_state_steps(train_state_t *d, workspace_t *ws, const resident_set_t *s, const int *idx, int K, int B,
                       const float *lr, double *loss) {
  const kernels_t *k = d->k;
  SHAPE_ASSERT(K >= 1 && B >= 1 && s->k == k);
  /* one buffer: the K steps' accumulators (3 doubles each: loss sum, hits, bad labels), zeroed,
   * the K B indices, and the K steps' dropout masks drawn ahead; uploaded with one copy */
  const size_t mf = net_mask_floats(ws, B), slots = (size_t)K * 3 * sizeof(double);
  const size_t ib = (size_t)K * B * sizeof(int), bytes = slots + ib + (size_t)K * mf * sizeof(float);
  if (bytes > d->chunk_bytes) {
    graphs_free(d);   /* they hold the old buffer's addresses */
    if (d->chunk) k->release(d->chunk);
    xfree(d->chunk_host);
    d->chunk = k->alloc(bytes); d->chunk_host = xmalloc(bytes); d->chunk_bytes = bytes;
  }
  char *h = d->chunk_host, *dv = d->chunk;
  memset(h, 0, slots);
  memcpy(h + slots, idx, ib);
  for (int j = 0; j < K; j++) net_draw_masks(ws, B, (float *)(h + slots + ib) + (size_t)j * mf);
  k->upload(dv, h, bytes);
  double *const acc0 = ws->acc;
  const int gi = graph_slot(d, ws, K, lr);   /* -1: eager */
  const int scal = gi >= 0 && (d->o->kind == OPT_ADAM || d->o->kind == OPT_ASGD);
  if (scal) {   /* this chunk's per-step scalars into the slots its graph reads (queued before it) */
    float v[64];
    for (int j = 0; j < K; j++) v[j] = optim_step_scalar(d->o, lr[j], j);
    k->scalars_set(v, K);
  }
  if (gi >= 0 && d->graphs[gi].g) {   /* replay: the host's side of the K steps is the step count */
    k->graph_launch(d->graphs[gi].g);
    d->o->t += K;
    d->graph_launches++;
  } else {
    if (gi >= 0) k->graph_begin();   /* record the K steps (they run at the launch below) */
    for (int j = 0; j < K; j++) {
      net_gather(ws, s->x, s->y, (const int *)(dv + slots) + (size_t)j * B, B);
      ws->acc = (double *)dv + 3 * (size_t)j;
      if (mf) net_masks_at(ws, B, (const float *)(dv + slots + ib) + (size_t)j * mf);
      if (scal) k->scalar_slot(j);
      train_state_step(d, ws, NULL, NULL, B, lr[j]);
    }
    if (scal) k->scalar_slot(-1);
    if (mf) net_masks_at(ws, B, NULL);
    if (gi >= 0) {
      d->graphs[gi].g = k->graph_end();   /* (no buffer grows while recording: an eager chunk ran first) */
      k->graph_launch(d->graphs[gi].g);
      d->graph_launches++;
    }
    d->warm = 1;
  }
  ws->acc = acc0;
  k->download(h, dv, slots);
  const double *a = (const double *)h;
  for (int j = 0; j < K; j++) {
    if (a[3 * j + 2] > 0) die("training: %.0f labels of a batch are outside [0, %d)", a[3 * j + 2], ws->net->classes);
    loss[j] = a[3 * j] / B;
  }
}
