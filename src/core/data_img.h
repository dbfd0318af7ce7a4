/* data_img.h — ImageNet from a directory tree of JPEGs (data_jpeg.c), read eagerly or lazily through
 * the prefetching pipeline of data_pipe.h, which decodes and augments its batches on a pool of
 * threads a few batches ahead; imgfolder_src hands the pipeline a folder as its image source.
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
#include "core/dataset.h"
#include "core/data_pipe.h"   /* the pipeline, which the callers of the folder use with imgfolder_src */

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
/* The folder as the pipeline's image source (data_pipe.h): its count, side, label, decode and
 * normalise, and imgfolder_close as the source's close (which lazy_close calls: lazy_open takes f). */
img_src_t imgfolder_src(imgfolder_t *f);
#endif

