/* pp.h — the PP-ASGD paper's parameter prediction (eq. 2) and staleness bookkeeping.
 *   f_S(w, M) = w + c_S * M,  c_S = sum_{s=1}^{S+1} mu^s = mu (1 - mu^(S+1)) / (1 - mu)
 * f_0 is NAG's look-ahead w + mu M; plain ASGD uses w_hat = w. c_S is summed in double and
 * rounded once, so c_0 == mu exactly and f_0 is bit-identical to optim.c's NAG point. */
#ifndef PDL_PP_H
#define PDL_PP_H
#include <stddef.h>
float pp_coef(float mu, int S);
void pp_predict(float *what, const float *w, const float *M, float c, size_t n);

/* P1 probe: after update `start`, for nmeas consecutive updates t, the distances
 *   err[S] = ||w_{t+S0+1} - f_S(w_t, M_t)||_2   (S = 0 .. max(13, S0 + 6))
 *   err_asgd = ||w_{t+S0+1} - w_t||_2            (plain ASGD's "prediction")
 * averaged. A ring of S0+2 snapshots of (w, M) is kept. */
#define PP_PROBE_NS 14         /* S = 0..13 as the paper's Fig. 3; widened to S0 + 7 when S0 > 6 */
#define PP_PROBE_MAXNS 128
#define PP_PROBE_MAX_S0 100    /* larger measured S0: the probe is skipped (ring of S0+2 snapshots) */
typedef struct {
  int S0, nmeas, count; long start; size_t n; float mu;
  float *ring_w, *ring_M;   /* [S0+2][n] */
  int ns;                   /* S values measured: 0 .. ns-1 */
  double sum_err[PP_PROBE_MAXNS], sum_asgd;
} pp_probe_t;
void pp_probe_init(pp_probe_t *p, size_t n, int S0, int nmeas, long start, float mu);
void pp_probe_step(pp_probe_t *p, long t, const float *w, const float *M);  /* after update t */
/* JSON pairs "pred_S0", "pred_n", "pred_err":[...], "pred_err_asgd", "pred_argmin", "pred_ratio" */
void pp_probe_json(const pp_probe_t *p, char *buf, size_t len);
void pp_probe_free(pp_probe_t *p);
#endif
