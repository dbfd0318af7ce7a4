/* optim.c — see optim.h. */
#include "optim/optim.h"
#include "util/vec.h"
#include <math.h>
#include <string.h>
#include "core/layers.h"
#include "core/model.h"
#include "util/util.h"

static const char *names[] = {"sgd", "msgd", "nag", "adam", "asgd", "mvasgd"};

int optim_parse(const char *name, opt_kind_t *kind) {
  for (int i = 0; i < 6; i++) if (!strcmp(name, names[i])) { *kind = (opt_kind_t)i; return 0; }
  return -1;
}
const char *optim_name(opt_kind_t kind) { return names[kind]; }

void optim_init(optim_t *o, opt_kind_t kind, size_t n, float mu, float wd) {
  memset(o, 0, sizeof *o);
  o->kind = kind; o->n = n; o->mu = mu; o->wd = wd;
  o->beta1 = 0.9f; o->beta2 = 0.999f; o->eps = 1e-8f; o->mvrate = 0.001f;
  if (kind == OPT_MSGD || kind == OPT_NAG || kind == OPT_ADAM) o->M = xcalloc(n, sizeof(float));
  if (kind == OPT_ADAM) o->V = xcalloc(n, sizeof(float));
  if (kind == OPT_ASGD || kind == OPT_MVASGD) o->Z = xcalloc(n, sizeof(float));
  if (kind == OPT_NAG) o->what = xcalloc(n, sizeof(float));
}

void optim_free(optim_t *o) { xfree(o->M); xfree(o->V); xfree(o->Z); xfree(o->what); memset(o, 0, sizeof *o); }

const float *optim_grad_point(const optim_t *o, const float *w) {
  return o->kind == OPT_NAG && o->t > 0 ? o->what : w;
}

const float *optim_eval_point(const optim_t *o, const float *w) {
  return (o->kind == OPT_ASGD || o->kind == OPT_MVASGD) && o->t > 0 ? o->Z : w;
}

void optim_refresh(optim_t *o, const float *w) {
  if (o->kind != OPT_NAG) return;
  for (size_t i = 0; i < o->n; i++) o->what[i] = w[i] + o->mu * o->M[i];
}

float lr_at(float lr, long step, long warmup) {
  if (warmup <= 0 || step >= warmup) return lr;
  return lr * (float)(step + 1) / (float)warmup;
}

int optim_fused_step(optim_t *o, net_step_t *st, float lr) {
  if (o->kind != OPT_SGD && o->kind != OPT_MSGD) return 0;
  st->lr = lr; st->mu = o->mu; st->wd = o->wd;
  st->v = o->kind == OPT_MSGD ? o->M : NULL;
  o->t++;
  return 1;
}

void optim_step(optim_t *o, float *w, float *g, float lr) {
  size_t n = o->n;
  float *M = o->M;
  switch (o->kind) {
  case OPT_SGD: case OPT_ASGD: case OPT_MVASGD: cpu_sgd_step(w, g, NULL, n, lr, 0.0f, o->wd); break;
  case OPT_MSGD: case OPT_NAG: cpu_sgd_step(w, g, M, n, lr, o->mu, o->wd); break;
  case OPT_ADAM: {
    if (o->wd != 0) vec_axpy(g, o->wd, w, n);
    float *V = o->V, b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    double c1 = 1.0 - pow(b1, (double)(o->t + 1)), c2 = 1.0 - pow(b2, (double)(o->t + 1));
    float a = (float)(lr * sqrt(c2) / c1);
    for (size_t i = 0; i < n; i++) {
      M[i] = b1 * M[i] + (1 - b1) * g[i];
      V[i] = b2 * V[i] + (1 - b2) * g[i] * g[i];
      w[i] -= a * M[i] / (sqrtf(V[i]) + eps);
      g[i] = 0;
    }
    break;
  }
  }
  o->t++;
  if (o->kind == OPT_NAG) optim_refresh(o, w);
  if (o->kind == OPT_ASGD) {
    float r = 1.0f / (float)o->t;
    if (o->t == 1) vec_copy(o->Z, w, n);
    else for (size_t i = 0; i < n; i++) o->Z[i] += r * (w[i] - o->Z[i]);
  } else if (o->kind == OPT_MVASGD) {
    if (o->t == 1) vec_copy(o->Z, w, n);
    else { float a = o->mvrate; for (size_t i = 0; i < n; i++) o->Z[i] = (1 - a) * o->Z[i] + a * w[i]; }
  }
}

static int wvec(const float *v, size_t n, FILE *f) { return !v || fwrite(v, sizeof(float), n, f) == n ? 0 : -1; }
static int rvec(float *v, size_t n, FILE *f) { return !v || fread(v, sizeof(float), n, f) == n ? 0 : -1; }

int optim_save(const optim_t *o, FILE *f) {
  if (fwrite(&o->t, sizeof o->t, 1, f) != 1) return -1;
  return wvec(o->M, o->n, f) | wvec(o->V, o->n, f) | wvec(o->Z, o->n, f);
}
int optim_load(optim_t *o, FILE *f) {
  if (fread(&o->t, sizeof o->t, 1, f) != 1) return -1;
  return rvec(o->M, o->n, f) | rvec(o->V, o->n, f) | rvec(o->Z, o->n, f);
}
