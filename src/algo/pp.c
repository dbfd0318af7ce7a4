/* pp.c — see pp.h. */
#include "algo/pp.h"
#include "util/vec.h"

float pp_coef(float mu, int S) {
  double c = 0, p = 1;
  for (int s = 1; s <= S + 1; s++) { p *= (double)mu; c += p; }
  return (float)c;
}

void pp_predict(float *what, const float *w, const float *M, float c, size_t n) {
  VEC_OFF(n);   /* a timing-only run (util/vec.h) */
  for (size_t i = 0; i < n; i++) what[i] = w[i] + c * M[i];
}
