/* data.h — data sets and batch sampling.
 * Specs: "fashion-mnist" (default dir /usr/share/datasets/fashion-mnist, or "fashion-mnist:DIR"),
 *        "cifar10:DIR" (CIFAR-10 binary batches data_batch_{1..5}.bin, test_batch.bin),
 *        "cifar100:DIR" (CIFAR-100 binary train.bin, test.bin; the fine labels, 100 classes),
 *        "imagenet32:DIR", "imagenet64:DIR" (downsampled ImageNet, npz batches: data_npz.c),
 *        "imagenet:DIR[,size=N][,classes=FILE][,decoders=D]" (JPEG tree DIR/train/<wnid>/,
 *            DIR/val/<wnid>/, decoded and resized to NxN, default 224: data_jpeg.c; whole into
 *            memory, or with decoders=D >= 1 the train set lazily: each batch decoded when drawn by
 *            D threads, the next ones prefetched (data_pipe.c); the val set is in memory),
 *        "synthetic[:n=N,c=C,h=H,w=W,classes=K,seed=S]" (deterministic, learnable, for tests).
 * Every file-backed spec takes options after its directory, comma-separated ("cifar10:DIR,aug=
 * crop4+flip"; so DIR cannot hold a comma), and synthetic takes aug= among its keys:
 *   aug=ITEM[+ITEM...]  online augmentation of the TRAIN set's batches (data_aug.c): cropP (random
 *        crop of the image padded by P zero pixels on each side), flip (horizontal, p = 1/2),
 *        scaleA-B (random scaling by s ~ U(A, B), bilinear, then a random crop or placement back
 *        to the image size: PP-ASGD's "random scaling, cropping"), elasticA-S (elastic
 *        distortion, Simard et al. 2003: displacement fields of U(-1, 1) noise smoothed by a Gaussian
 *        of sigma S pixels, scaled by A; PP-ASGD's "weak elastic distortion" with a small A).
 * Images are float32 NCHW, normalised per channel with the TRAIN set's mean and std (the same
 * statistics are applied to the test set; the JPEG ImageNet uses ImageNet's published ones,
 * data_img.h). Labels are ints in [0, classes).
 * Loaders validate magic numbers, sizes and counts; any problem ends the process with exit
 * status 1 and a message naming the file and what is wrong (via die()). */
#ifndef PDL_DATA_H
#define PDL_DATA_H
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

void data_load(data_t *d, const char *spec);
/* data_load then data_truncate(d, ntrain, ntest), the same floats and normalisation, but only the
 * first ntrain / ntest images (0: all) of a file-backed set are converted to floats (not
 * thread-safe: one load at a time). */
void data_load_first(data_t *d, const char *spec, int ntrain, int ntest);
/* Keep only the first ntrain / ntest examples (<= 0: keep all). For quick runs and tests. */
void data_truncate(data_t *d, int ntrain, int ntest);
/* A validation split: the test set becomes train examples [ntrain, ntrain + nval) (copied) and the
 * train set keeps its first ntrain. Ends the process naming the set if it has fewer than
 * ntrain + nval examples. Normalisation stays that of the full train set. */
void data_hold_out(data_t *d, int ntrain, int nval);
void data_free(data_t *d);
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
/* Copy the next B examples into x [B][c][h][w] and y [B]; wraps to the next epoch (reshuffled)
 * when the shard runs out mid-batch. Applies the data set's augmentation (aug_t) to each copy. */
void sampler_next(sampler_t *s, int B, float *x, int *y);
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


/* ---- spec options and the loaders in their own files (internal to src/core) ---- */
/* The options after a file-backed spec's directory: aug (all), size and classes (imagenet). */
typedef struct { aug_t aug; int size, decoders; char classes[1024]; } data_opts_t;
void data_load_imagenet_ds(data_t *d, const char *dir, int side);          /* data_npz.c: side 32 or 64 */
void data_load_imagenet_jpeg(data_t *d, const char *dir, const data_opts_t *o); /* data_jpeg.c */
/* data_load_first's limits for the loader running now (0: all); loaders that convert lazily honour them. */
int data_first_train(void);
int data_first_test(void);
/* Per-channel statistics of bytes [nimg][c][hw] in [0, 1] scale and their conversion to normalised
 * floats (data.c), for the loaders in the other files. */
void data_byte_stats(const uint8_t *px, long nimg, int c, long hw, float *mean, float *std);
void data_bytes_to_floats(float *x, const uint8_t *px, long nimg, int c, long hw, const float *mean, const float *std);

#endif
