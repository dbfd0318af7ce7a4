/* vec.h — the vector helpers the algorithms share (flat float vectors of n parameters).
 * Plain loops the compiler vectorises; no OpenMP (the algorithms' vector work runs on the
 * role's own thread). dist2/norm2 accumulate in double, in index order. */
#ifndef PDL_VEC_H
#define PDL_VEC_H
#include <math.h>
#include <stddef.h>
#include <string.h>

/* 1 in a timing-only run (--device phantom, issue 47; set once by algo.c before any role runs): the
 * parameter-sized vectors hold nothing worth computing, so these helpers do nothing (the norms
 * return 0) and the node programs' vector work costs only the rt->work they charge for it. */
extern int pdl_numerics_off;
#define VEC_OFF(n) if (pdl_numerics_off) n = 0
static inline void vec_axpy(float *y, float a, const float *x, size_t n) { VEC_OFF(n); for (size_t i = 0; i < n; i++) y[i] += a * x[i]; }
static inline void vec_scale(float *y, float a, size_t n) { VEC_OFF(n); for (size_t i = 0; i < n; i++) y[i] *= a; }
static inline void vec_copy(float *y, const float *x, size_t n) { VEC_OFF(n); if (n) memcpy(y, x, n * sizeof(float)); }
static inline void vec_zero(float *y, size_t n) { VEC_OFF(n); if (n) memset(y, 0, n * sizeof(float)); }
static inline void vec_add(float *y, const float *x, size_t n) { VEC_OFF(n); for (size_t i = 0; i < n; i++) y[i] += x[i]; }
static inline double vec_dist2(const float *a, const float *b, size_t n) {
  VEC_OFF(n);
  double s = 0;
  for (size_t i = 0; i < n; i++) { double d = (double)a[i] - (double)b[i]; s += d * d; }
  return sqrt(s);
}
static inline double vec_norm2(const float *a, size_t n) {
  VEC_OFF(n);
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)a[i];
  return sqrt(s);
}
#endif
