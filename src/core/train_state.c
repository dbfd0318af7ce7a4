/* train_state.c — the training state of a sequential run on a backend, and its step (run.h): the
 * one loop body that pdl train runs on the CPU and with --device, every optimizer through the
 * kernel table (optim.h). Kept apart from run.c so that the CUDA emulator's test links it alone. */
#include "core/run.h"

void train_state_init(train_state_t *d, const kernels_t *k, float *w, float *g, optim_t *o) {
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
  if (!d->device) return;
  d->k->release(d->w); d->k->release(d->g);
  optim_free(&d->dev);
}

double train_state_step(train_state_t *d, workspace_t *ws, const float *x, const int *y, int B, float lr) {
  const float *gp = optim_grad_point(d->o, d->w);
  const double loss = net_forward(ws, gp, x, y, B, 1, NULL) / B;
  net_step_t st;   /* sgd/msgd: each layer's update runs inside the backward pass (same result) */
  if (optim_fused_step(d->o, &st, lr)) {
    net_backward_step(ws, d->w, d->g, y, B, 1.0f / (float)B, &st);
  } else {
    net_backward(ws, gp, d->g, y, B, 1.0f / (float)B);
    optim_step(d->o, d->w, d->g, lr);
  }
  return loss;
}
