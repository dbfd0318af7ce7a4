/* pp_probe.h — the PP-ASGD paper's P1 measurement (Fig. 3 right): how well f_S(w_t, M_t)
 * predicts the parameters S0 + 1 updates later, for S = 0..13, against plain ASGD's w_t.
 * An analysis, not part of the algorithm: ppasgd.c (and its emulated-staleness mode) feed it
 * the iterates when --probe N is given. */
#ifndef PDL_PP_PROBE_H
#define PDL_PP_PROBE_H
#include <stddef.h>
#include "util/util.h"

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
/* Adds "pred_S0", "pred_n", "pred_err":[...], "pred_err_asgd", "pred_argmin", "pred_ratio" to j
 * ("pred_n": 0 alone when nothing was measured). */
void pp_probe_json(const pp_probe_t *p, json_t *j);
void pp_probe_free(pp_probe_t *p);
#endif
