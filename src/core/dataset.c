/* dataset.c — what the loaders and the prefetching pipeline share below data.c (dataset.h): per-channel
 * normalisation of pixel bytes, data_load_first's limits, and the sharded batch sampler but for
 * sampler_next (data.c's, which fetches a lazy set's batch through data_pipe.c).
 * Conventions:
 *  - Pixel bytes are scaled to [0, 1] (v / 255) before normalisation, so d->mean / d->std of the
 *    byte-based sets are in that scale (Fashion-MNIST: 0.2860 / 0.3530). For byte data the
 *    statistics come from a 256-bin histogram per channel (exact) and the conversion is a table
 *    lookup.
 *  - The sampler allocates idx with 2*n_shard ints: idx[0..n_shard) is this epoch's order (as
 *    documented), idx[n_shard..2*n_shard) keeps the shard's canonical order (its positions in
 *    the seeded global permutation), from which every epoch's order is rebuilt without
 *    allocating. */
#include "core/dataset.h"
#include "util/util.h"
#include <math.h>
#include <string.h>

#define STREAM_PERM 0x5045524dull       /* sampler: global permutation */
#define STREAM_EPOCH (1ull << 63)       /* sampler: | shard << 40 | epoch */
#define STREAM_REPL (1ull << 62)        /* sampler: | shard, with-replacement draws */
#define STREAM_AUG 0x41554730ull        /* augmentation: key = hash(seed, shard, epoch, pos) */

size_t dataset_image_floats(const dataset_t *ds) { return (size_t)ds->c * ds->h * ds->w; }

/* ---- byte data -> normalised floats ------------------------------------------------------- */

/* Per-channel histograms of train pixel bytes [nimg][c][hw] -> mean/std in [0,1] scale. */
void data_byte_stats(const uint8_t *px, long nimg, int c, long hw, float *mean, float *std) {
  for (int ch = 0; ch < c; ch++) {
    uint64_t hist[256] = {0};
    for (long i = 0; i < nimg; i++) {
      const uint8_t *p = px + ((size_t)i * c + ch) * hw;
      for (long k = 0; k < hw; k++) hist[p[k]]++;
    }
    double cnt = 0, s = 0, ss = 0;
    for (int v = 0; v < 256; v++) {
      double f = v / 255.0;
      cnt += (double)hist[v]; s += f * (double)hist[v]; ss += f * f * (double)hist[v];
    }
    double m = s / cnt, var = ss / cnt - m * m;
    double sd = var > 1e-12 ? sqrt(var) : 1.0; /* constant channel: leave the scale alone */
    mean[ch] = (float)m; std[ch] = (float)sd;
  }
}

/* x [nimg][c][hw] = (px / 255 - mean[ch]) / std[ch] via a per-channel lookup table. */
void data_bytes_to_floats(float *x, const uint8_t *px, long nimg, int c, long hw,
                            const float *mean, const float *std) {
  float lut[3][256];
  for (int ch = 0; ch < c; ch++)
    for (int v = 0; v < 256; v++) lut[ch][v] = (float)((v / 255.0 - mean[ch]) / std[ch]);
  for (long i = 0; i < nimg; i++)
    for (int ch = 0; ch < c; ch++) {
      const uint8_t *p = px + ((size_t)i * c + ch) * hw;
      float *q = x + ((size_t)i * c + ch) * hw;
      const float *t = lut[ch];
      for (long k = 0; k < hw; k++) q[k] = t[p[k]];
    }
}

/* data_load_first's counts (0: all): only the first so many images become floats. The bytes are
 * all read and checked, and the normalisation is the whole train set's, so the floats are those
 * data_load + data_truncate give; converting 60,000 images for a 2,000-image run cost ~0.2 s of page
 * faults in each of make test's ~160 Fashion-MNIST runs. */
static int g_first_train, g_first_test;
void data_first_set(int ntrain, int ntest) { g_first_train = ntrain; g_first_test = ntest; }
int data_first_train(void) { return g_first_train; }
int data_first_test(void) { return g_first_test; }

/* ---- sampler ------------------------------------------------------------------------------- */

/* idx[0..n_shard) = the canonical order idx[n_shard..) shuffled for this epoch. */
static void sampler_order(sampler_t *s) {
  memcpy(s->idx, s->idx + s->n_shard, sizeof(int) * (size_t)s->n_shard);
  if (s->with_replacement) return; /* draws are uniform over the set; keep the canonical order */
  rng_t r;
  rng_seed(&r, s->seed, STREAM_EPOCH | (uint64_t)s->shard << 40 | ((uint64_t)s->epoch & ((1ull << 40) - 1)));
  rng_shuffle(&r, s->idx, s->n_shard);
}

void sampler_init(sampler_t *s, const dataset_t *ds, uint64_t seed, int shard, int nshards, int with_replacement) {
  memset(s, 0, sizeof *s);
  if (nshards < 1 || shard < 0 || shard >= nshards || nshards >= (1 << 22))
    die("sampler: shard %d of %d is not a valid shard", shard, nshards);
  if (!ds || ds->n <= 0 || (!ds->x && !ds->lazy) || !ds->y) die("sampler: empty data set");
  int n = ds->n;
  int n_shard = n / nshards + (shard < n % nshards ? 1 : 0);
  if (n_shard == 0) die("sampler: shard %d of %d is empty (data set has only %d examples)", shard, nshards, n);
  s->ds = ds; s->seed = seed; s->shard = shard; s->nshards = nshards;
  s->with_replacement = with_replacement ? 1 : 0;
  s->n_shard = n_shard;
  int *perm = xmalloc(sizeof(int) * (size_t)n); /* [n] global permutation */
  for (int i = 0; i < n; i++) perm[i] = i;
  rng_t r;
  rng_seed(&r, seed, STREAM_PERM);
  rng_shuffle(&r, perm, n);
  s->idx = xmalloc(sizeof(int) * 2 * (size_t)n_shard); /* [2][n_shard]: this epoch, canonical */
  for (int k = 0; k < n_shard; k++) s->idx[n_shard + k] = perm[shard + (size_t)k * nshards];
  xfree(perm);
  rng_seed(&s->rng, seed, STREAM_REPL | (uint64_t)shard);
  sampler_order(s);
}

void sampler_skew(sampler_t *s, double skew) {
  if (!(skew >= 0 && skew <= 1)) die("sampler: skew %g is not in [0, 1]", skew);
  if (skew == 0) return;
  const dataset_t *ds = s->ds;
  int n = ds->n, S = s->nshards, sh = s->shard;
  int *perm = xmalloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) perm[i] = i;
  rng_t r;
  rng_seed(&r, s->seed, STREAM_PERM);            /* the permutation sampler_init used */
  rng_shuffle(&r, perm, n);
  int m = (int)(skew * n), ymax = 0;
  for (int i = 0; i < m; i++) if (ds->y[perm[i]] > ymax) ymax = ds->y[perm[i]];
  /* the first m examples of the permutation, stably sorted by label (counting sort) */
  int *cnt = xcalloc((size_t)ymax + 2, sizeof(int)), *pool = xmalloc(sizeof(int) * (size_t)(m ? m : 1));
  for (int i = 0; i < m; i++) cnt[ds->y[perm[i]] + 1]++;
  for (int c = 0; c <= ymax; c++) cnt[c + 1] += cnt[c];
  for (int i = 0; i < m; i++) pool[cnt[ds->y[perm[i]]]++] = perm[i];
  long lo = (long)m * sh / S, hi = (long)m * (sh + 1) / S;   /* this shard's block of the sorted pool */
  int rest = n - m, n_rest = rest / S + (sh < rest % S ? 1 : 0);
  int n_shard = (int)(hi - lo) + n_rest;
  if (n_shard == 0) die("sampler: shard %d of %d is empty with skew %g (data set has only %d examples)", sh, S, skew, n);
  xfree(s->idx);
  s->idx = xmalloc(sizeof(int) * 2 * (size_t)n_shard);
  s->n_shard = n_shard;
  int k = 0;
  for (long i = lo; i < hi; i++) s->idx[n_shard + k++] = pool[i];
  for (int i = m + sh; i < n; i += S) s->idx[n_shard + k++] = perm[i];
  xfree(cnt); xfree(pool); xfree(perm);
  s->epoch = 0; s->pos = 0;
  sampler_order(s);
}

void sampler_free(sampler_t *s) {
  xfree(s->idx);
  memset(s, 0, sizeof *s);
}

/* The next example's index into the data set; advances the sampler (sampler_next's order). */
int sampler_draw(sampler_t *s) {
  int e = s->with_replacement ? s->idx[rng_below(&s->rng, (uint64_t)s->n_shard)] : s->idx[s->pos];
  if (++s->pos == s->n_shard) { /* a pass is complete: (epoch, pos) always has pos < n_shard */
    s->pos = 0;
    s->epoch++;
    if (!s->with_replacement) sampler_order(s);
  }
  return e;
}

/* The augmentation key of the draw at (epoch, pos): a function of (seed, shard, epoch, pos) alone, so
 * it is the same whichever rank or run draws it, and a resumed sampler continues the stream. */
static uint64_t aug_key_at(const sampler_t *s, long epoch, int pos) {
  rng_t r;
  rng_seed(&r, s->seed ^ ((uint64_t)epoch * 0x9e3779b97f4a7c15ull), STREAM_AUG ^ ((uint64_t)s->shard << 32 | (uint32_t)pos));
  return rng_u64(&r);
}

uint64_t sampler_next_key(const sampler_t *s) { return aug_key_at(s, s->epoch, s->pos); }

long sampler_drawn(const sampler_t *s) { return s->epoch * (long)s->n_shard + s->pos; }

int sampler_peek(const sampler_t *s, long skip, int n, int *idx, uint64_t *keys) {
  if (!s->with_replacement) {
    int k = 0;
    for (long p = s->pos + skip; k < n && p < s->n_shard; k++, p++) {
      idx[k] = s->idx[p];
      keys[k] = aug_key_at(s, s->epoch, (int)p);
    }
    return k;
  }
  rng_t r = s->rng;
  long epoch = s->epoch;
  int pos = s->pos;
  for (long j = 0; j < skip + n; j++) {
    const long k = j - skip;
    if (k >= 0) keys[k] = aug_key_at(s, epoch, pos);
    const int e = s->idx[rng_below(&r, (uint64_t)s->n_shard)];
    if (k >= 0) idx[k] = e;
    if (++pos == s->n_shard) { pos = 0; epoch++; }
  }
  return n;
}

void sampler_next_idx(sampler_t *s, int B, int *idx) {
  if (s->ds->lazy) die("internal: sampler_next_idx (resident batches) on a lazily decoded data set");
  for (int b = 0; b < B; b++) idx[b] = sampler_draw(s);
}

void sampler_skip(sampler_t *s, int B) {
  if (s->with_replacement) {
    for (int b = 0; b < B; b++) {
      (void)rng_below(&s->rng, (uint64_t)s->n_shard);
      if (++s->pos == s->n_shard) { s->pos = 0; s->epoch++; }
    }
    return;
  }
  while (B > 0) {
    int k = s->n_shard - s->pos; /* examples left in this pass */
    if (B < k) { s->pos += B; return; }
    B -= k;
    s->pos = 0;
    s->epoch++;
    sampler_order(s);
  }
}

/* With replacement the stream is carried by s->rng alone; seek then only sets the counters. */
void sampler_seek(sampler_t *s, long epoch, int pos) {
  if (epoch < 0 || pos < 0 || pos > s->n_shard)
    die("sampler: cannot seek to epoch %ld position %d (shard has %d examples)", epoch, pos, s->n_shard);
  if (pos == s->n_shard) { epoch++; pos = 0; }
  s->epoch = epoch;
  s->pos = pos;
  sampler_order(s);
}
