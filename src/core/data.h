/* data.h — data sets and batch sampling: the spec dispatcher data_load (data.c) and sampler_next,
 * over dataset.h (the types and the sampler, which the loaders and the pipeline share).
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
#include "core/dataset.h"   /* the types, the sampler, augmentation: the layer the loaders share */

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

/* The sampler (sampler_t, dataset.h) step that copies a batch; it is data.c's, not dataset.c's, because a
 * lazy set's batch comes through the pipeline (lazy_fetch, data_pipe.c), which itself sits on the sampler.
 * Copy the next B examples into x [B][c][h][w] and y [B]; wraps to the next epoch (reshuffled)
 * when the shard runs out mid-batch. Applies the data set's augmentation (aug_t) to each copy. */
void sampler_next(sampler_t *s, int B, float *x, int *y);

#endif
