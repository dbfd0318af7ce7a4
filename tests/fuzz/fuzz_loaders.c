/* fuzz_loaders.c — the data loaders on hostile files: the first input byte picks the target
 * (below 0xf0: even, the Fashion-MNIST idx train-images file, plain or gzip as it comes; odd,
 * CIFAR-10's data_batch_1.bin; 0xf0-0xf7: a downsampled-ImageNet train_data_batch_1.npz through
 * imagenet32:; 0xf8-0xff: one JPEG of an ImageNet tree, scanned and decoded by imgfolder_decode
 * in this thread), the rest is its content; the other files of the set are small and valid. */
#include "tests/fuzz/fuzz.h"
#include "core/data.h"
#include "core/data_img.h"
#include <sys/stat.h>
#include <zlib.h>
static void put_be32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static void idx(const char *dir, const char *name, int images, int n) {
  char path[256]; snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len = images ? 16 + (size_t)n * 784 : 8 + (size_t)n;
  uint8_t *b = calloc(len, 1);
  put_be32(b, images ? 2051 : 2049); put_be32(b + 4, (uint32_t)n);
  if (images) { put_be32(b + 8, 28); put_be32(b + 12, 28); for (size_t i = 16; i < len; i++) b[i] = (uint8_t)i; }
  else for (int i = 0; i < n; i++) b[8 + i] = (uint8_t)(i % 10);
  fuzz_write(path, b, len); free(b);
}
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static char fm[128], cf[128];
  if (!fm[0]) {
    snprintf(fm, sizeof fm, "%s/fm", fuzz_dir()); snprintf(cf, sizeof cf, "%s/cf", fuzz_dir());
    mkdir(fm, 0700); mkdir(cf, 0700);
    idx(fm, "train-labels-idx1-ubyte", 0, 4); idx(fm, "t10k-images-idx3-ubyte", 1, 4); idx(fm, "t10k-labels-idx1-ubyte", 0, 4);
    static uint8_t rec[3073];
    char path[256];
    const char *names[] = {"data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    for (int i = 0; i < 5; i++) { snprintf(path, sizeof path, "%s/%s", cf, names[i]); fuzz_write(path, rec, sizeof rec); }
  }
  static char npz[128], jt[128];
  if (!npz[0]) {   /* the npz set's val_data.npz: a valid one copied from the seed corpus's layout */
    snprintf(npz, sizeof npz, "%s/npz", fuzz_dir()); mkdir(npz, 0700);
    snprintf(jt, sizeof jt, "%s/jt", fuzz_dir()); mkdir(jt, 0700);
    char p[256];
    const char *dirs[] = {"train", "train/a", "train/b"};
    for (int i = 0; i < 3; i++) { snprintf(p, sizeof p, "%s/%s", jt, dirs[i]); mkdir(p, 0700); }
  }
  if (n < 1) return 0;
  char path[256], spec[300];
  static data_t data;
  if (d[0] >= 0xf8) {   /* the JPEG decoder alone (data_load's decode threads cannot return through exit's longjmp) */
    snprintf(path, sizeof path, "%s/train/a/x.JPEG", jt); fuzz_write(path, d + 1, n - 1);
    snprintf(path, sizeof path, "%s/train/b/y.JPEG", jt); fuzz_write(path, d + 1, n - 1);
    static uint8_t px[3 * 16 * 16];
    static imgfolder_t *f;
    FUZZ_CALL(f = imgfolder_open(jt, "train", NULL, 16); imgfolder_decode(f, 0, px); imgfolder_close(f));
    return 0;
  }
  if (d[0] >= 0xf0) {   /* the npz: train_data_batch_1.npz fuzzed, val_data.npz the same bytes */
    snprintf(path, sizeof path, "%s/train_data_batch_1.npz", npz); fuzz_write(path, d + 1, n - 1);
    snprintf(path, sizeof path, "%s/val_data.npz", npz); fuzz_write(path, d + 1, n - 1);
    snprintf(spec, sizeof spec, "imagenet32:%s", npz);
    memset(&data, 0, sizeof data);
    FUZZ_CALL(data_load(&data, spec); data_free(&data));
    return 0;
  }
  if (d[0] % 2 == 0) {
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", fm);
    fuzz_write(path, d + 1, n - 1);
    snprintf(spec, sizeof spec, "fashion-mnist:%s", fm);
  } else {
    snprintf(path, sizeof path, "%s/data_batch_1.bin", cf);
    fuzz_write(path, d + 1, n - 1);
    snprintf(spec, sizeof spec, "cifar10:%s", cf);
  }
  memset(&data, 0, sizeof data);
  FUZZ_CALL(data_load(&data, spec); data_free(&data));
  return 0;
}
