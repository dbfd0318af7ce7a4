/* optim.h — sequential optimizers on flat float vectors of n parameters.
 *   sgd     w -= lr * g
 *   msgd    M = mu*M - lr*g;  w += M                        (the PP-ASGD paper's form)
 *   nag     same update, gradient taken at w_hat = w + mu*M (the paper's Alg. 4 / f_0)
 *   adam    Kingma & Ba with bias correction (beta1, beta2, eps)
 *   asgd    SGD + Polyak averaging z += (w - z)/(t+1); evaluated at z
 *   mvasgd  SGD + constant moving-rate averaging z = (1-a) z + a w; evaluated at z
 * L2 weight decay wd adds wd*w to the gradient. The gradient g is used as given (callers
 * pass the batch mean) and the learning rate of the step as given: the schedule (constant, or a
 * linear warm-up) is the node loop's, loop_lr in src/algo/loop.c.
 * Every update runs through a kernel table (contract/kernels.h: sgd_step, adam_step, nag_point,
 * avg_step, copy): optim_init's is the CPU's (kernels_for(-1)), optim_init_on takes one, e.g. a
 * device backend's, whose memory then holds the state vectors and must hold w and g. */
#ifndef PDL_OPTIM_H
#define PDL_OPTIM_H
#include <stddef.h>
#include <stdio.h>
#include "contract/kernels.h"

typedef enum { OPT_SGD, OPT_MSGD, OPT_NAG, OPT_ADAM, OPT_ASGD, OPT_MVASGD } opt_kind_t;

typedef struct {
  opt_kind_t kind;
  size_t n;
  float mu, wd, beta1, beta2, eps, mvrate;
  long t;          /* steps taken */
  float *M;        /* momentum (msgd/nag) or Adam's first moment */
  float *V;        /* Adam's second moment */
  float *Z;        /* averaged iterate (asgd/mvasgd) */
  float *what;     /* nag: point where the next gradient is taken */
  const kernels_t *k; /* the backend of the updates; M, V, Z, what are its memory (k->alloc) */
} optim_t;

int optim_parse(const char *name, opt_kind_t *kind); /* 0 on success */
const char *optim_name(opt_kind_t kind);
void optim_init(optim_t *o, opt_kind_t kind, size_t n, float mu, float wd);
/* The same on backend k (optim_init: the CPU's). */
void optim_init_on(optim_t *o, opt_kind_t kind, size_t n, float mu, float wd, const kernels_t *k);
void optim_free(optim_t *o);
/* dst = src: the step count, the hyper-parameters and every state vector, across backends (same
 * kind and n; one of the two in host memory): a device optimizer's state comes to the host to be
 * evaluated or checkpointed, and goes back after a resume. */
void optim_transfer(optim_t *dst, const optim_t *src);
/* The parameters at which the next gradient must be computed (w, or w_hat for NAG). */
const float *optim_grad_point(const optim_t *o, const float *w);
/* The parameters to evaluate (test error): w, or the average for asgd/mvasgd. */
const float *optim_eval_point(const optim_t *o, const float *w);
/* One step. g is consumed: it is left ZEROED (saves callers a pass before the next gradient
 * accumulation). Elementwise, so the result does not depend on the thread count. */
void optim_step(optim_t *o, float *w, float *g, float lr);
/* The scalar that optim_step's update takes and that changes every step, for the step taken when
 * o->t + j steps are done, at lr: Adam's a = lr sqrt(1 - β2^t') / (1 - β1^t'), ASGD's averaging rate
 * 1/t' (t' = o->t + j + 1); 0 for the other kinds (theirs take only lr, or a fixed rate). The
 * same float optim_step passes (it calls this), so a graph that reads it from the device replays
 * the eager step's bits (train_state_steps, kernels_t.scalars_set). */
float optim_step_scalar(const optim_t *o, float lr, long j);
/* For the kinds whose update net_backward_step can fuse into the backward pass (sgd, msgd; the
 * others need the whole gradient first): fills *st with this step's update at lr, counts the step
 * as optim_step does, and returns 1; the caller then runs net_backward_step instead of
 * net_backward + optim_step, with the same result bit for bit. Returns 0 for the other kinds. */
struct net_step;
int optim_fused_step(optim_t *o, struct net_step *st, float lr);
/* Re-derive w_hat after w or M were loaded from a checkpoint. */
void optim_refresh(optim_t *o, const float *w);

/* Checkpoint I/O of the state vectors that exist for this kind (fwrite/fread, checked); host
 * memory only (optim_transfer a device optimizer's state first). */
int optim_save(const optim_t *o, FILE *f);
int optim_load(optim_t *o, FILE *f);

#endif
