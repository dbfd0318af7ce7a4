/* optim.c — see optim.h. The arithmetic of every update is the backend's (contract/layers.h,
 * PDL_DECLARE_UPDATES); this file keeps the schedule: which update, the step count, Adam's bias
 * corrections, the averages' rates. */
#include "optim/optim.h"
#include <math.h>
#include <string.h>
#include "util/util.h"

static const char *names[] = {"sgd", "msgd", "nag", "adam", "asgd", "mvasgd"};

int optim_parse(const char *name, opt_kind_t *kind) {
  for (int i = 0; i < 6; i++) if (!strcmp(name, names[i])) { *kind = (opt_kind_t)i; return 0; }
  return -1;
}
const char *optim_name(opt_kind_t kind) { return names[kind]; }

void optim_init_on(optim_t *o, opt_kind_t kind, size_t n, float mu, float wd, const kernels_t *k) {
  memset(o, 0, sizeof *o);
  o->kind = kind; o->n = n; o->mu = mu; o->wd = wd; o->k = k;
  o->beta1 = 0.9f; o->beta2 = 0.999f; o->eps = 1e-8f; o->mvrate = 0.001f;
  const size_t bytes = n * sizeof(float);   /* k->alloc zero-fills */
  if (kind == OPT_MSGD || kind == OPT_NAG || kind == OPT_ADAM) o->M = k->alloc(bytes);
  if (kind == OPT_ADAM) o->V = k->alloc(bytes);
  if (kind == OPT_ASGD || kind == OPT_MVASGD) o->Z = k->alloc(bytes);
  if (kind == OPT_NAG) o->what = k->alloc(bytes);
}
void optim_init(optim_t *o, opt_kind_t kind, size_t n, float mu, float wd) {
  optim_init_on(o, kind, n, mu, wd, kernels_for(-1, NULL, NULL, 0));
}

void optim_free(optim_t *o) {
  float *v[] = {o->M, o->V, o->Z, o->what};
  for (int i = 0; i < 4; i++) if (v[i]) o->k->release(v[i]);
  memset(o, 0, sizeof *o);
}

void optim_transfer(optim_t *dst, const optim_t *src) {
  SHAPE_ASSERT(dst->kind == src->kind && dst->n == src->n && (dst->k->host_memory || src->k->host_memory));
  dst->mu = src->mu; dst->wd = src->wd; dst->beta1 = src->beta1; dst->beta2 = src->beta2;
  dst->eps = src->eps; dst->mvrate = src->mvrate; dst->t = src->t;
  float *d[] = {dst->M, dst->V, dst->Z, dst->what};
  const float *s[] = {src->M, src->V, src->Z, src->what};
  const size_t bytes = src->n * sizeof(float);
  for (int i = 0; i < 4; i++) {
    if (!s[i]) continue;
    if (dst->k->host_memory) src->k->download(d[i], s[i], bytes);   /* device (or host) -> host */
    else dst->k->upload(d[i], s[i], bytes);                          /* host -> device */
  }
}

const float *optim_grad_point(const optim_t *o, const float *w) {
  return o->kind == OPT_NAG && o->t > 0 ? o->what : w;
}

const float *optim_eval_point(const optim_t *o, const float *w) {
  return (o->kind == OPT_ASGD || o->kind == OPT_MVASGD) && o->t > 0 ? o->Z : w;
}

void optim_refresh(optim_t *o, const float *w) {
  if (o->kind != OPT_NAG) return;
  o->k->nag_point(o->what, w, o->M, o->n, o->mu);
}

int optim_fused_step(optim_t *o, net_step_t *st, float lr) {
  if (o->kind != OPT_SGD && o->kind != OPT_MSGD) return 0;
  st->lr = lr; st->mu = o->mu; st->wd = o->wd;
  st->v = o->kind == OPT_MSGD ? o->M : NULL;
  o->t++;
  return 1;
}

float optim_step_scalar(const optim_t *o, float lr, long j) {
  const long t1 = o->t + j + 1;   /* the step's count once taken */
  if (o->kind == OPT_ADAM) {
    double c1 = 1.0 - pow(o->beta1, (double)t1), c2 = 1.0 - pow(o->beta2, (double)t1);
    return (float)(lr * sqrt(c2) / c1);
  }
  return o->kind == OPT_ASGD ? 1.0f / (float)t1 : 0.0f;
}

void optim_step(optim_t *o, float *w, float *g, float lr) {
  const kernels_t *k = o->k;
  size_t n = o->n;
  switch (o->kind) {
  case OPT_SGD: case OPT_ASGD: case OPT_MVASGD: k->sgd_step(w, g, NULL, n, lr, 0.0f, o->wd); break;
  case OPT_MSGD: case OPT_NAG: k->sgd_step(w, g, o->M, n, lr, o->mu, o->wd); break;
  case OPT_ADAM:
    k->adam_step(w, g, o->M, o->V, n, optim_step_scalar(o, lr, 0), o->beta1, o->beta2, o->eps, o->wd);
    break;
  }
  const float rate = optim_step_scalar(o, lr, 0);   /* ASGD's 1/t, t after this step */
  o->t++;
  if (o->kind == OPT_NAG) optim_refresh(o, w);
  if (o->kind == OPT_ASGD || o->kind == OPT_MVASGD) {
    if (o->t == 1) k->copy(o->Z, w, n * sizeof(float));
    else if (o->kind == OPT_ASGD) k->avg_step(o->Z, w, n, rate, 0);
    else k->avg_step(o->Z, w, n, o->mvrate, 1);
  }
}

static int wvec(const float *v, size_t n, FILE *f) { return !v || fwrite(v, sizeof(float), n, f) == n ? 0 : -1; }
static int rvec(float *v, size_t n, FILE *f) { return !v || fread(v, sizeof(float), n, f) == n ? 0 : -1; }

int optim_save(const optim_t *o, FILE *f) {
  SHAPE_ASSERT(o->k->host_memory);
  if (fwrite(&o->t, sizeof o->t, 1, f) != 1) return -1;
  return wvec(o->M, o->n, f) | wvec(o->V, o->n, f) | wvec(o->Z, o->n, f);
}
int optim_load(optim_t *o, FILE *f) {
  SHAPE_ASSERT(o->k->host_memory);
  if (fread(&o->t, sizeof o->t, 1, f) != 1) return -1;
  return rvec(o->M, o->n, f) | rvec(o->V, o->n, f) | rvec(o->Z, o->n, f);
}
