/* rng.h — xoshiro256** generator seeded by splitmix64. The whole state is 4 words so it
 * can be checkpointed; every replica, shuffle and dropout mask owns one. */
#ifndef PDL_RNG_H
#define PDL_RNG_H
#include <stdint.h>
typedef struct { uint64_t s[4]; } rng_t;
void rng_seed(rng_t *r, uint64_t seed, uint64_t stream); /* independent streams per (seed, stream) */
uint64_t rng_u64(rng_t *r);
double rng_uniform(rng_t *r);            /* [0, 1) with 53 bits */
float rng_normal(rng_t *r);              /* N(0,1), Box-Muller */
uint64_t rng_below(rng_t *r, uint64_t n);/* uniform in [0, n), unbiased */
void rng_shuffle(rng_t *r, int *v, int n);
#endif
