/* data_pipe.h — the prefetching pipeline (data_pipe.c) that decodes and augments batches of images on
 * a pool of threads a few batches ahead, and the lazy source behind a data set's sampler built on it.
 * It is generic over where the images come from: the caller hands it an image source, a small table
 * of functions (img_src_t); the JPEG folder's is imgfolder_src (data_img.h, data_jpeg.c). So it calls
 * no loader: data.c and the loaders call it, and it calls only the sampler and the augmentation
 * below it (dataset.h). */
#ifndef PDL_DATA_PIPE_H
#define PDL_DATA_PIPE_H
#include <stdint.h>
#include "core/dataset.h"

/* An image source: n images [3][side][side], decoded to bytes then normalised to floats. */
typedef struct {
  void *ctx;     /* the source's own state, passed to each function */
  int n, side;   /* images, and their side */
  int (*label)(const void *ctx, int i);
  /* Decode image i into px [3][side][side] bytes (thread-safe: many threads may decode at once). */
  void (*decode)(const void *ctx, int i, uint8_t *px);
  /* Bytes [3][side][side] -> normalised floats. */
  void (*normalise)(const uint8_t *px, int side, float *x);
  void (*close)(void *ctx);   /* lazy_close's (a source lazy_open took); the pipeline's pipe_close leaves it open */
} img_src_t;

/* ---- the prefetching pipeline ---------------------------------------------------------------
 * Batch k of B holds the examples at positions k B ... k B + B - 1 of the epochs' orders (each
 * epoch a permutation of shard s of S: positions s, s+S, ... of the set, shuffled by (seed, epoch)),
 * each decoded, normalised and augmented with a key of (seed, k, b). So the batches are a pure
 * function of (seed, shard, B), whatever the thread count or timing. `threads` decoders fill a
 * ring of `depth` batch buffers ahead of the consumer. */
typedef struct pipe pipe_t;
pipe_t *pipe_open(img_src_t src, int B, int depth, int threads, uint64_t seed, int shard, int nshards,
                  const aug_t *aug);
/* The next batch into x [B][3][side][side], y [B]; *wait_s (optional): seconds spent waiting for it. */
void pipe_next(pipe_t *p, float *x, int *y, double *wait_s);
/* Images decoded so far and the decoders' summed busy seconds. */
void pipe_stats(pipe_t *p, long *decoded, double *busy_s);
void pipe_close(pipe_t *p);

/* ---- the lazy source behind a data set's sampler (dataset_t.lazy) ----------------------------
 * sampler_next draws a batch's examples and augmentation keys and asks lazy_fetch for them: the
 * images come from the prefetched batch of the same draws if there is one (waiting for it to
 * finish), else they are decoded now by all the threads. Then it guesses the next `depth` batches
 * (the same stride in the sampler's draw count as between the last two requests: a replica that
 * takes every k-th slice of a global batch is followed too; without replacement within the
 * current epoch only, via sampler_peek) and queues them. A guess is used only if its example
 * indices and keys equal the request's, so prefetching never changes a batch: the batches are
 * those of the in-memory path, decoded. The threads start at the first fetch (and again in a
 * fork()ed child, which has none). */
typedef struct lazy_src lazy_src_t;
lazy_src_t *lazy_open(img_src_t src, int threads, int depth, const aug_t *aug);   /* takes src: lazy_close closes it */
void lazy_fetch(lazy_src_t *L, long start, const int *idx, const uint64_t *keys, int B, float *x, int *y, const sampler_t *after);
/* images decoded, batches served from a prefetch (hits) and decoded on demand (misses), seconds waited */
void lazy_stats(lazy_src_t *L, long *decoded, long *hits, long *misses, double *wait_s);
void lazy_close(lazy_src_t *L);   /* NULL: nothing */
#endif
