/* pp_probe.c — see pp_probe.h. */
#include "algo/pp_probe.h"
#include <math.h>
#include <string.h>
#include "algo/pp.h"

void pp_probe_init(pp_probe_t *p, size_t n, int S0, int nmeas, long start, float mu) {
  memset(p, 0, sizeof *p);
  p->S0 = S0; p->nmeas = nmeas; p->start = start; p->n = n; p->mu = mu;
  p->ns = S0 + 7 > PP_PROBE_NS ? S0 + 7 : PP_PROBE_NS;
  if (p->ns > PP_PROBE_MAXNS) p->ns = PP_PROBE_MAXNS;
  if (nmeas <= 0) return;
  p->ring_w = xmalloc((size_t)(S0 + 2) * n * sizeof(float));
  p->ring_M = xmalloc((size_t)(S0 + 2) * n * sizeof(float));
}

void pp_probe_step(pp_probe_t *p, long t, const float *w, const float *M) {
  if (p->nmeas <= 0 || p->count >= p->nmeas || t < p->start) return;
  size_t n = p->n; int R = p->S0 + 2;
  memcpy(p->ring_w + (size_t)(t % R) * n, w, n * sizeof(float));
  memcpy(p->ring_M + (size_t)(t % R) * n, M, n * sizeof(float));
  long t0 = t - (p->S0 + 1);
  if (t0 < p->start) return;
  const float *w0 = p->ring_w + (size_t)(t0 % R) * n, *M0 = p->ring_M + (size_t)(t0 % R) * n;
  for (int S = 0; S < p->ns; S++) {
    float c = pp_coef(p->mu, S);
    double s = 0;
    for (size_t i = 0; i < n; i++) { double d = (double)w[i] - ((double)w0[i] + (double)c * M0[i]); s += d * d; }
    p->sum_err[S] += sqrt(s);
  }
  double s = 0;
  for (size_t i = 0; i < n; i++) { double d = (double)w[i] - w0[i]; s += d * d; }
  p->sum_asgd += sqrt(s);
  p->count++;
}

void pp_probe_json(const pp_probe_t *p, json_t *j) {
  if (p->nmeas <= 0 || p->count == 0) { json_int(j, "pred_n", 0); return; }
  double err[PP_PROBE_MAXNS];
  int arg = 0;
  for (int S = 0; S < p->ns; S++) {
    err[S] = p->sum_err[S] / p->count;
    if (p->sum_err[S] < p->sum_err[arg]) arg = S;
  }
  json_int(j, "pred_S0", p->S0);
  json_int(j, "pred_n", p->count);
  json_num_array(j, "pred_err", err, p->ns, 6);
  json_numf(j, "pred_err_asgd", p->sum_asgd / p->count, 6);
  json_int(j, "pred_argmin", arg);
  json_numf(j, "pred_ratio", p->sum_err[p->S0] / p->sum_asgd, 6);
}

void pp_probe_free(pp_probe_t *p) { xfree(p->ring_w); xfree(p->ring_M); memset(p, 0, sizeof *p); }
