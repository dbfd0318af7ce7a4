/* train_state.c — the training state of a sequential run on a backend, and its step (run.h): the
 * one loop body that pdl train runs on the CPU and with --device, every optimizer through the
 * kernel table (optim.h). Kept apart from run.c so that the CUDA emulator's test links it alone. */
#include <string.h>
#include "core/run.h"

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
void train_state_free(train_state_t *d) {
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
  const size_t img = (size_t)ds->c * ds->h * ds->w;   /* dataset_image_floats (data.c, which the emulator's test does not link) */
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

void train_state_steps(train_state_t *d, workspace_t *ws, const resident_set_t *s, const int *idx, int K, int B,
                       const float *lr, double *loss) {
  const kernels_t *k = d->k;
  SHAPE_ASSERT(K >= 1 && B >= 1 && s->k == k);
  /* one buffer: the K steps' accumulators (3 doubles each: loss sum, hits, bad labels), zeroed,
   * then the K B indices; uploaded with one copy */
  const size_t slots = (size_t)K * 3 * sizeof(double), bytes = slots + (size_t)K * B * sizeof(int);
  if (bytes > d->chunk_bytes) {
    if (d->chunk) k->release(d->chunk);
    xfree(d->chunk_host);
    d->chunk = k->alloc(bytes); d->chunk_host = xmalloc(bytes); d->chunk_bytes = bytes;
  }
  char *h = d->chunk_host, *dv = d->chunk;
  memset(h, 0, slots);
  memcpy(h + slots, idx, (size_t)K * B * sizeof(int));
  k->upload(dv, h, bytes);
  double *const acc0 = ws->acc;
  for (int j = 0; j < K; j++) {
    net_gather(ws, s->x, s->y, (const int *)(dv + slots) + (size_t)j * B, B);
    ws->acc = (double *)dv + 3 * (size_t)j;
    train_state_step(d, ws, NULL, NULL, B, lr[j]);
  }
  ws->acc = acc0;
  k->download(h, dv, slots);
  const double *a = (const double *)h;
  for (int j = 0; j < K; j++) {
    if (a[3 * j + 2] > 0) die("training: %.0f labels of a batch are outside [0, %d)", a[3 * j + 2], ws->net->classes);
    loss[j] = a[3 * j] / B;
  }
}
