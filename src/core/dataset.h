/* dataset.h — the layer below data.h that the loaders and the prefetching pipeline share: the data
 * set types (aug_t, dataset_t, data_t), the sharded sampler, the byte -> normalised float conversion
 * and data_load_first's limits (dataset.c), the augmentation (data_aug.c), and the interface of the
 * loaders in their own files. Calls go one way, down: data.c (the spec dispatcher and sampler_next,
 * data.h) -> the loaders (data_npz.c, data_jpeg.c) -> the pipeline (data_pipe.c, data_pipe.h) ->
 * this layer. The specs and the conventions are data.h's. */
#ifndef PDL_DATASET_H
#define PDL_DATASET_H
#include <stddef.h>
#include <stdint.h>
#include "util/rng.h"

/* Online augmentation (data_aug.c). Applied by sampler_next to each example it copies, with the
 * random draws a pure function of (the sampler's seed, shard, epoch, position): so the same seed
 * gives the same batches on every run and rank, and a resumed run continues the same stream. */
typedef struct {
  int on;             /* any of the below */
  int pad;            /* random crop with this zero padding (0: none) */
  int flip;           /* random horizontal flip */
  float smin, smax;   /* random scaling s ~ U(smin, smax) (smax 0: none) */
  float ealpha, esigma; /* elastic distortion (Simard et al. 2003): alpha x Gaussian(sigma)-smoothed U(-1, 1) fields (alpha 0: none) */
} aug_t;
/* Parse "ITEM[+ITEM...]" (see the header comment) into a; `spec` names the data set spec in errors. */
void aug_parse(aug_t *a, const char *text, const char *spec);
/* Augment one normalised image [c][h][w] in place with the draws of rng stream `key`. */
void aug_apply(const aug_t *a, float *img, int c, int h, int w, uint64_t key);
/* "crop4+flip" back from a (for messages and results); "none" when off. */
void aug_format(const aug_t *a, char *out, size_t cap);

struct lazy_src;   /* data_pipe.c: decodes examples on demand, prefetching ahead of the sampler */
typedef struct {
  int n, c, h, w, classes;
  float *x;   /* [n][c][h][w] normalised; a lazy set: only its first n_x examples (for evaluations) */
  int *y;     /* [n] */
  aug_t aug;  /* online augmentation of sampled batches (train set only; zero: none) */
  struct lazy_src *lazy;   /* non-NULL: sampler_next decodes the batch's examples through it */
  int n_x;    /* a lazy set's examples held in x */
} dataset_t;

typedef struct {
  char name[32];        /* "fashion-mnist", "cifar10", "cifar100", "imagenet32", ..., "synthetic" */
  char spec[512];       /* as given */
  dataset_t train, test;
  float mean[3], std[3];/* per-channel normalisation applied (c <= 3) */
} data_t;

size_t dataset_image_floats(const dataset_t *ds); /* c*h*w */

/* A sampler yields batches from one shard of a data set.
 * Shard s of S holds the examples at positions s, s+S, s+2S, ... of one permutation fixed by
 * the seed (so shards are disjoint and cover the set). Without replacement, each epoch visits
 * the shard in an order that is a pure function of (seed, shard, epoch); the state is thus
 * (epoch, pos) and checkpointable. With replacement, each example is drawn uniformly from the
 * shard with the sampler's rng (its state is checkpointed). */
typedef struct {
  const dataset_t *ds;
  uint64_t seed;
  int shard, nshards, with_replacement;
  int *idx;     /* [n_shard] example indices of this shard, in this epoch's order */
  int n_shard;
  long epoch;   /* completed passes over the shard */
  int pos;      /* next position in idx */
  rng_t rng;    /* used for with-replacement draws */
} sampler_t;

void sampler_init(sampler_t *s, const dataset_t *ds, uint64_t seed, int shard, int nshards, int with_replacement);
/* Non-IID shards: re-deals the data set so that a fraction `skew` of it (the first skew x n
 * examples of the seed's permutation, sorted by label) is cut into nshards contiguous blocks,
 * one per shard, and the rest is dealt round-robin as before. skew 0: unchanged; 1: each shard
 * holds about classes/nshards labels. Shards stay disjoint and cover the set. Call right after
 * sampler_init (it restarts at epoch 0). */
void sampler_skew(sampler_t *s, double skew);
void sampler_free(sampler_t *s);
/* The indices into the data set of the next B examples, the ones sampler_next(s, B, ...) would
 * copy, leaving the sampler in the same state (a batch gathered from a resident copy of the data
 * set: net_gather, model.h). */
void sampler_next_idx(sampler_t *s, int B, int *idx);
/* Advance past the next B examples without copying them: afterwards the sampler is in exactly
 * the state sampler_next(s, B, ...) would leave (same epoch, position, shuffles, rng), so a
 * worker that needs only a slice of a global batch skips the others' parts. O(1) within an
 * epoch without replacement; with replacement the B rng draws are still made. */
void sampler_skip(sampler_t *s, int B);
/* Jump to (epoch, pos) as saved by a checkpoint (without replacement). */
void sampler_seek(sampler_t *s, long epoch, int pos);
/* The example indices and augmentation keys of the draws [skip, skip + n) after the sampler's
 * current state, leaving it unchanged; returns how many it could tell (without replacement: up to
 * the end of the current epoch, whose successor's order is drawn only when it starts). For
 * prefetching (data_pipe.c). */
int sampler_peek(const sampler_t *s, long skip, int n, int *idx, uint64_t *keys);
/* The sampler's draw count, epoch * n_shard + pos: where its next draw stands in the stream. */
long sampler_drawn(const sampler_t *s);

/* ---- internal to src/core ---- */
/* The two steps of a draw, for sampler_next (data.c): the augmentation key of the next draw (a
 * function of (seed, shard, epoch, pos) alone), and the draw itself (the example's index; advances the
 * sampler, reshuffling at an epoch's end). */
uint64_t sampler_next_key(const sampler_t *s);
int sampler_draw(sampler_t *s);
/* The spec options and the loaders in their own files, which data.c calls. */
/* The options after a file-backed spec's directory: aug (all), size and classes (imagenet). */
typedef struct { aug_t aug; int size, decoders; char classes[1024]; } data_opts_t;
void data_load_imagenet_ds(data_t *d, const char *dir, int side);          /* data_npz.c: side 32 or 64 */
void data_load_imagenet_jpeg(data_t *d, const char *dir, const data_opts_t *o); /* data_jpeg.c */
/* data_load_first's limits for the loader running now (0: all); loaders that convert lazily honour them.
 * data_load_first (data.c) sets them around its data_load, and back to 0 after (dataset.c keeps them). */
void data_first_set(int ntrain, int ntest);
int data_first_train(void);
int data_first_test(void);
/* Per-channel statistics of bytes [nimg][c][hw] in [0, 1] scale and their conversion to normalised
 * floats (dataset.c), for the loaders. */
void data_byte_stats(const uint8_t *px, long nimg, int c, long hw, float *mean, float *std);
void data_bytes_to_floats(float *x, const uint8_t *px, long nimg, int c, long hw, const float *mean, const float *std);

#endif
