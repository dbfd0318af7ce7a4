/* data_img.h — ImageNet from a directory tree of JPEGs, read lazily, and the prefetching pipeline
 * that decodes and augments its batches on a pool of threads a few batches ahead.
 * Layout: torchvision's ImageFolder, DIR/train/<class>/<image> and DIR/val/<class>/<image> (the
 * usual ILSVRC-2012 set-up, with val/ sorted into <wnid> folders by the common valprep script),
 * images *.JPEG, *.jpeg, *.jpg. Classes are the folder names in byte order (ImageFolder's order),
 * or, with a classes file (one name a line, '#' comments and blank lines skipped: the PP-ASGD
 * paper's 32-class subset), only those folders, labelled in the file's order.
 * Decoding: libjpeg-turbo (Debian libjpeg62-turbo-dev), RGB (grey and CMYK JPEGs converted), the
 * shorter side resized to `side` (libjpeg's DCT scaling down to at most 2x the target, then
 * bilinear) and the centre side x side square kept. Normalisation: ImageNet's per-channel mean and
 * std as torchvision uses them (0.485 0.456 0.406 / 0.229 0.224 0.225, of ImageNet's train set),
 * so the eager and lazy paths give the same floats without a pass over the data.
 * A file that is not a readable JPEG ends the process (exit 1) with a message naming it. */
#ifndef PDL_DATA_IMG_H
#define PDL_DATA_IMG_H
#include <stdint.h>
#include "core/data.h"

extern const float IMAGENET_MEAN[3], IMAGENET_STD[3];

typedef struct imgfolder imgfolder_t;
/* Scan DIR/split/<class>/; the list is in a fixed shuffled order (seeded by a constant), so that
 * "the first N" (--train-subset) is a sample of every class. Ends the process naming the folder if
 * it is missing, has no classes, a listed class is absent, or a class has no images. */
imgfolder_t *imgfolder_open(const char *dir, const char *split, const char *classes_file, int side);
void imgfolder_close(imgfolder_t *f);
int imgfolder_count(const imgfolder_t *f);
int imgfolder_classes(const imgfolder_t *f);
int imgfolder_side(const imgfolder_t *f);
int imgfolder_label(const imgfolder_t *f, int i);
const char *imgfolder_path(const imgfolder_t *f, int i);
/* Decode image i into px [3][side][side] bytes (thread-safe: many threads may decode at once). */
void imgfolder_decode(const imgfolder_t *f, int i, uint8_t *px);
/* Bytes [3][side][side] -> normalised floats with IMAGENET_MEAN / IMAGENET_STD. */
void imgfolder_normalise(const uint8_t *px, int side, float *x);

/* ---- the prefetching pipeline ---------------------------------------------------------------
 * Batch k of B holds the examples at positions k B ... k B + B - 1 of the epochs' orders (each
 * epoch a permutation of shard s of S: positions s, s+S, ... of the set, shuffled by (seed, epoch)),
 * each decoded, normalised and augmented with a key of (seed, k, b). So the batches are a pure
 * function of (seed, shard, B), whatever the thread count or timing. `threads` decoders fill a
 * ring of `depth` batch buffers ahead of the consumer. */
typedef struct pipe pipe_t;
pipe_t *pipe_open(const imgfolder_t *f, int B, int depth, int threads, uint64_t seed, int shard, int nshards,
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
lazy_src_t *lazy_open(imgfolder_t *f, int threads, int depth, const aug_t *aug);   /* takes f */
void lazy_fetch(lazy_src_t *L, long start, const int *idx, const uint64_t *keys, int B, float *x, int *y, const sampler_t *after);
/* images decoded, batches served from a prefetch (hits) and decoded on demand (misses), seconds waited */
void lazy_stats(lazy_src_t *L, long *decoded, long *hits, long *misses, double *wait_s);
void lazy_close(lazy_src_t *L);   /* NULL: nothing */
#endif
