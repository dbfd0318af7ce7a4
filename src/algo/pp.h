/* pp.h — the PP-ASGD paper's parameter prediction (eq. 2).
 *   f_S(w, M) = w + c_S * M,  c_S = sum_{s=1}^{S+1} mu^s = mu (1 - mu^(S+1)) / (1 - mu)
 * f_0 is NAG's look-ahead w + mu M; plain ASGD uses w_hat = w. c_S is summed in double and
 * rounded once, so c_0 == mu exactly and f_0 is bit-identical to optim.c's NAG point. */
#ifndef PDL_PP_H
#define PDL_PP_H
#include <stddef.h>
float pp_coef(float mu, int S);
void pp_predict(float *what, const float *w, const float *M, float c, size_t n);

#endif
