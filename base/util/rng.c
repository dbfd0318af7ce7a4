/* rng.c — see rng.h. */
#include "util/rng.h"
#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void rng_seed(rng_t *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL) ^ 0x5851f42d4c957f2dULL;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
  s[2] ^= t; s[3] = rotl(s[3], 45);
  return result;
}

double rng_uniform(rng_t *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

float rng_normal(rng_t *r) {
  double u1 = rng_uniform(r), u2 = rng_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint64_t rng_below(rng_t *r, uint64_t n) {
  if (n <= 1) return 0;
  uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
  do x = rng_u64(r); while (x >= lim);
  return x % n;
}

void rng_shuffle(rng_t *r, int *v, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rng_below(r, (uint64_t)i + 1);
    int t = v[i]; v[i] = v[j]; v[j] = t;
  }
}
