/* test_data_formats.c — the loaders of issue 51: CIFAR-100 binary, the downsampled ImageNet npz
 * (imagenet32:/imagenet64:), the ImageNet JPEG tree (imagenet:) and its prefetching pipeline
 * (data_pipe.c), and online augmentation (aug=). Every data set is written on the fly into a temp
 * folder: CIFAR-100-shaped files, npz files (stored and deflated members, as np.savez and
 * np.savez_compressed write them), a few hundred synthetic JPEGs written with libjpeg whose class
 * is their colour (so a decoded image's label can be checked from its pixels). Broken inputs
 * (truncated, wrong sizes or shapes, labels out of range, a corrupt and a truncated JPEG) must end a
 * fork()ed child with exit 1 and a message naming the file.
 * `test_data_formats --write DIR` only writes the sets to DIR/{cifar100,imagenet32,imagenet} (and
 * DIR/classes2.txt) for tests/t_data_formats.sh, which trains on them with pdl. */
#include "core/data.h"
#include "core/data_img.h"
#include "util/util.h"
#include "tests/harness.h"
#pragma GCC diagnostic ignored "-Wmisleading-indentation" /* harness.h RUN, as in test_data.c */
/* the paths here are a short mkdtemp folder under /tmp plus fixed names: far below the buffers */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jpeglib.h>
#include <zlib.h>

static char tmpdir[256];

/* ---- a child that must die ------------------------------------------------------------------ */
typedef void (*child_fn)(const void *arg);
static int run_child(child_fn fn, const void *arg, char *msg, size_t cap) {
  int fd[2];
  if (pipe(fd) != 0) { perror("pipe"); exit(3); }
  fflush(stdout); fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); exit(3); }
  if (pid == 0) {
    close(fd[0]); dup2(fd[1], 2);
    alarm(60);
    fn(arg);
    _exit(100);
  }
  close(fd[1]);
  size_t len = 0;
  ssize_t r;
  while ((r = read(fd[0], msg + len, cap - 1 - len)) > 0) { len += (size_t)r; if (len >= cap - 1) break; }
  msg[len] = 0;
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static void child_load(const void *arg) { data_t d; data_load(&d, (const char *)arg); data_free(&d); }
static void expect_dies(const char *spec, int want, const char *need1, const char *need2) {
  char msg[4096];
  int st = run_child(child_load, spec, msg, sizeof msg);
  if (st != want || (need1 && !strstr(msg, need1)) || (need2 && !strstr(msg, need2))) {
    printf("  # spec %s: exit %d (want %d), stderr: %s", spec, st, want, msg);
    h_cur_failed++;
  }
}

/* ---- writers -------------------------------------------------------------------------------- */
static void write_file(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) { perror(path); exit(3); }
}
static void mkdirs(const char *p) {
  char b[1024]; snprintf(b, sizeof b, "%s", p);
  for (char *q = b + 1; *q; q++) if (*q == '/') { *q = 0; mkdir(b, 0755); *q = '/'; }
  mkdir(b, 0755);
}
static uint8_t px_of(int i, int k) { return (uint8_t)((i * 7 + k * 13) & 255); }

/* CIFAR-100 records: coarse = fine / 5, fine = i % 100, pixels px_of(i, k). */
static void write_cifar100(const char *dir, const char *name, int n) {
  uint8_t *b = malloc((size_t)n * 3074);
  for (int i = 0; i < n; i++) {
    uint8_t *r = b + (size_t)i * 3074;
    r[0] = (uint8_t)((i % 100) / 5); r[1] = (uint8_t)(i % 100);
    for (int k = 0; k < 3072; k++) r[2 + k] = px_of(i, k);
  }
  char p[1100]; snprintf(p, sizeof p, "%s/%s", dir, name);
  write_file(p, b, (size_t)n * 3074);
  free(b);
}

/* ---- npz (a zip of .npy members) ---- */
typedef struct { uint8_t *b; size_t n, cap; } buf_t;
static void put(buf_t *B, const void *p, size_t n) {
  if (B->n + n > B->cap) { B->cap = (B->n + n) * 2; B->b = realloc(B->b, B->cap); }
  memcpy(B->b + B->n, p, n); B->n += n;
}
static void put16(buf_t *B, unsigned v) { uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; put(B, b, 2); }
static void put32(buf_t *B, uint32_t v) { put16(B, v & 0xffff); put16(B, v >> 16); }
/* an .npy v1.0 of `descr` and shape (d0[, d1]) around raw data */
static void npy(buf_t *B, const char *descr, long d0, long d1, const void *data, size_t nbytes) {
  char h[256];
  int len = d1 >= 0 ? snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%ld, %ld), }", descr, d0, d1)
                    : snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%ld,), }", descr, d0);
  int total = 10 + len + 1, pad = (64 - total % 64) % 64;
  put(B, "\x93NUMPY\x01\x00", 8); put16(B, (unsigned)(len + pad + 1));
  put(B, h, (size_t)len);
  for (int i = 0; i < pad; i++) put(B, " ", 1);
  put(B, "\n", 1);
  put(B, data, nbytes);
}
typedef struct { const char *name; buf_t data; } member_t;
/* A zip of the members, stored (deflate 0) or deflated (1), with a central directory. */
static void write_zip(const char *path, member_t *m, int nm, int deflated) {
  buf_t Z = {0}, C = {0};
  for (int i = 0; i < nm; i++) {
    uLong crc = crc32(0, m[i].data.b, (uInt)m[i].data.n);
    uint8_t *out = m[i].data.b;
    size_t clen = m[i].data.n;
    uint8_t *tmp = NULL;
    if (deflated) {
      z_stream z; memset(&z, 0, sizeof z);
      deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      size_t cap = deflateBound(&z, m[i].data.n);
      tmp = malloc(cap);
      z.next_in = m[i].data.b; z.avail_in = (uInt)m[i].data.n; z.next_out = tmp; z.avail_out = (uInt)cap;
      deflate(&z, Z_FINISH); clen = z.total_out; deflateEnd(&z);
      out = tmp;
    }
    const uint32_t off = (uint32_t)Z.n;
    const size_t nl = strlen(m[i].name);
    put32(&Z, 0x04034b50u); put16(&Z, 20); put16(&Z, 0); put16(&Z, deflated ? 8 : 0); put16(&Z, 0); put16(&Z, 0x21);
    put32(&Z, (uint32_t)crc); put32(&Z, (uint32_t)clen); put32(&Z, (uint32_t)m[i].data.n); put16(&Z, (unsigned)nl); put16(&Z, 0);
    put(&Z, m[i].name, nl); put(&Z, out, clen);
    put32(&C, 0x02014b50u); put16(&C, 20); put16(&C, 20); put16(&C, 0); put16(&C, deflated ? 8 : 0); put16(&C, 0); put16(&C, 0x21);
    put32(&C, (uint32_t)crc); put32(&C, (uint32_t)clen); put32(&C, (uint32_t)m[i].data.n); put16(&C, (unsigned)nl);
    put16(&C, 0); put16(&C, 0); put16(&C, 0); put16(&C, 0); put32(&C, 0); put32(&C, off); put(&C, m[i].name, nl);
    free(tmp);
  }
  const uint32_t cdoff = (uint32_t)Z.n;
  put(&Z, C.b, C.n);
  put32(&Z, 0x06054b50u); put16(&Z, 0); put16(&Z, 0); put16(&Z, (unsigned)nm); put16(&Z, (unsigned)nm);
  put32(&Z, (uint32_t)C.n); put32(&Z, cdoff); put16(&Z, 0);
  write_file(path, Z.b, Z.n);
  free(Z.b); free(C.b);
}
/* A downsampled-ImageNet npz: n images of side s, labels 1 + (i * 37 + first) % 1000 (int64),
 * pixels px_of(first + i, k). data_cols overrides the row length (wrong-shape tests). */
static void write_ds_npz(const char *path, int n, int s, int first, int deflate, int data_cols, int bad_label_at) {
  const int cols = data_cols > 0 ? data_cols : 3 * s * s;
  uint8_t *px = malloc((size_t)n * cols);
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < cols; k++) px[(size_t)i * cols + k] = px_of(first + i, k);
    lab[i] = 1 + ((first + i) * 37) % 1000;
    if (i == bad_label_at) lab[i] = 0;
  }
  member_t m[3] = {{"data.npy", {0}}, {"labels.npy", {0}}, {"mean.npy", {0}}};
  npy(&m[0].data, "|u1", n, cols, px, (size_t)n * cols);
  npy(&m[1].data, "<i8", n, -1, lab, sizeof(int64_t) * (size_t)n);
  npy(&m[2].data, "|u1", 1, cols, px, (size_t)cols);
  write_zip(path, m, 3, deflate);
  for (int i = 0; i < 3; i++) free(m[i].data.b);
  free(px); free(lab);
}

/* ---- JPEGs: class c's colour, plus a little noise ---- */
static const uint8_t CLS_RGB[4][3] = {{220, 30, 30}, {30, 200, 40}, {40, 40, 210}, {220, 220, 40}};
static void write_jpeg(const char *path, int w, int h, int cls, int seed, int gray) {
  struct jpeg_compress_struct ci; struct jpeg_error_mgr je;
  ci.err = jpeg_std_error(&je);
  jpeg_create_compress(&ci);
  unsigned char *mem = NULL; unsigned long len = 0;
  jpeg_mem_dest(&ci, &mem, &len);
  ci.image_width = (JDIMENSION)w; ci.image_height = (JDIMENSION)h;
  ci.input_components = gray ? 1 : 3; ci.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&ci); jpeg_set_quality(&ci, 90, TRUE);
  jpeg_start_compress(&ci, TRUE);
  unsigned char *row = malloc((size_t)w * 3);
  uint32_t r = (uint32_t)seed * 2654435761u + 1;
  while (ci.next_scanline < ci.image_height) {
    for (int x = 0; x < w; x++)
      for (int c = 0; c < ci.input_components; c++) {
        r = r * 1664525u + 1013904223u;
        int v = (gray ? 128 : CLS_RGB[cls][c]) + (int)(r >> 28) - 8;
        row[x * ci.input_components + c] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    JSAMPROW rp = row;
    jpeg_write_scanlines(&ci, &rp, 1);
  }
  jpeg_finish_compress(&ci); jpeg_destroy_compress(&ci);
  write_file(path, mem, len);
  free(mem); free(row);
}
static const char *WNID[4] = {"n01440764", "n01443537", "n01484850", "n01491361"};
/* DIR/{train,val}/<wnid>/NAME.JPEG: ntr and nva per class, sizes varying (wider and taller than 32). */
static void write_jpeg_tree(const char *dir, int ntr, int nva) {
  for (int split = 0; split < 2; split++)
    for (int c = 0; c < 4; c++) {
      char d[1024]; snprintf(d, sizeof d, "%s/%s/%s", dir, split ? "val" : "train", WNID[c]);
      mkdirs(d);
      for (int i = 0; i < (split ? nva : ntr); i++) {
        char p[1200]; snprintf(p, sizeof p, "%s/%s_%d.JPEG", d, WNID[c], i);
        write_jpeg(p, 40 + (i * 7) % 50, 36 + (i * 11) % 60, c, i + 1000 * c + 50000 * split, 0);
      }
    }
}
static void write_sets(const char *root) {
  char d[1024];
  snprintf(d, sizeof d, "%s/cifar100", root); mkdirs(d);
  write_cifar100(d, "train.bin", 300); write_cifar100(d, "test.bin", 100);
  snprintf(d, sizeof d, "%s/imagenet32", root); mkdirs(d);
  char p[1200];
  snprintf(p, sizeof p, "%s/train_data_batch_1.npz", d); write_ds_npz(p, 200, 32, 0, 0, 0, -1);
  snprintf(p, sizeof p, "%s/train_data_batch_2.npz", d); write_ds_npz(p, 100, 32, 200, 1, 0, -1);
  snprintf(p, sizeof p, "%s/val_data.npz", d); write_ds_npz(p, 60, 32, 1000, 0, 0, -1);
  snprintf(d, sizeof d, "%s/imagenet", root); write_jpeg_tree(d, 60, 12);
  snprintf(p, sizeof p, "%s/classes2.txt", root);
  char txt[256]; snprintf(txt, sizeof txt, "# two of the four\n%s\n\n%s\n", WNID[2], WNID[0]);
  write_file(p, txt, strlen(txt));
}

/* ---- tests ---------------------------------------------------------------------------------- */
static char root[512];

static void test_cifar100(void) {
  char spec[1100]; snprintf(spec, sizeof spec, "cifar100:%s/cifar100", root);
  data_t d; data_load(&d, spec);
  EXPECT(!strcmp(d.name, "cifar100"));
  EXPECT(d.train.n == 300 && d.test.n == 100 && d.train.c == 3 && d.train.h == 32 && d.train.w == 32);
  EXPECT(d.train.classes == 100 && d.test.classes == 100);
  int ok = 1;
  for (int i = 0; i < 300; i++) ok &= d.train.y[i] == i % 100;
  EXPECT(ok);
  /* pixel 1234 of image 17: (byte / 255 - mean[ch]) / std[ch], ch = 1234 / 1024 */
  float want = (float)((px_of(17, 1234) / 255.0 - d.mean[1]) / d.std[1]);
  EXPECT(fabsf(d.train.x[17 * 3072 + 1234] - want) < 1e-5f);   /* float32 rounding of one lookup */
  data_free(&d);
  /* broken: truncated, fine label 100, coarse label 20, missing test.bin, no directory */
  char bad[1100], p[1200];
  snprintf(bad, sizeof bad, "%s/c100bad", tmpdir); mkdirs(bad);
  write_cifar100(bad, "train.bin", 10); write_cifar100(bad, "test.bin", 5);
  snprintf(p, sizeof p, "%s/train.bin", bad);
  EXPECT(truncate(p, 3074 * 10 - 7) == 0);
  snprintf(spec, sizeof spec, "cifar100:%s", bad);
  expect_dies(spec, 1, "train.bin", "3074-byte CIFAR-100 record");
  write_cifar100(bad, "train.bin", 10);
  FILE *f = fopen(p, "r+b"); fseek(f, 3074 * 3 + 1, SEEK_SET); fputc(100, f); fclose(f);
  expect_dies(spec, 1, "train.bin: fine label 100 of record 3 is out of range [0, 100)", NULL);
  write_cifar100(bad, "train.bin", 10);
  f = fopen(p, "r+b"); fseek(f, 3074 * 4, SEEK_SET); fputc(20, f); fclose(f);
  expect_dies(spec, 1, "train.bin: coarse label 20 of record 4", NULL);
  write_cifar100(bad, "train.bin", 10);
  snprintf(p, sizeof p, "%s/test.bin", bad); unlink(p);
  expect_dies(spec, 1, "test.bin: missing", NULL);
  expect_dies("cifar100", 2, "needs a directory", NULL);
  snprintf(spec, sizeof spec, "cifar100:%s/cifar100,bogus=1", root);
  expect_dies(spec, 2, "unknown option 'bogus'", NULL);
}

static void test_imagenet32(void) {
  char spec[1100]; snprintf(spec, sizeof spec, "imagenet32:%s/imagenet32", root);
  data_t d; data_load(&d, spec);
  EXPECT(!strcmp(d.name, "imagenet32") && d.train.n == 300 && d.test.n == 60 && d.train.classes == 1000);
  EXPECT(d.train.c == 3 && d.train.h == 32 && d.train.w == 32);
  int ok = 1;
  for (int i = 0; i < 300; i++) ok &= d.train.y[i] == (i * 37) % 1000;   /* 1-based in the file */
  for (int i = 0; i < 60; i++) ok &= d.test.y[i] == ((1000 + i) * 37) % 1000;
  EXPECT(ok);
  /* image 250 came from the deflated second batch file */
  float want = (float)((px_of(250, 3000) / 255.0 - d.mean[2]) / d.std[2]);
  EXPECT(fabsf(d.train.x[250 * 3072 + 3000] - want) < 1e-5f);   /* float32 rounding of one lookup */
  data_free(&d);
  /* the same data read as 64x64 is the wrong shape */
  snprintf(spec, sizeof spec, "imagenet64:%s/imagenet32", root);
  expect_dies(spec, 1, "train_data_batch_1.npz: data.npy has shape (200, 3072), expected (N, 12288)", NULL);
  char bad[1100], p[1200];
  snprintf(bad, sizeof bad, "%s/i32bad", tmpdir); mkdirs(bad);
  snprintf(spec, sizeof spec, "imagenet32:%s", bad);
  expect_dies(spec, 1, "train_data_batch_1.npz: missing", NULL);
  snprintf(p, sizeof p, "%s/train_data_batch_1.npz", bad);
  write_ds_npz(p, 20, 32, 0, 0, 0, 7);
  snprintf(p, sizeof p, "%s/val_data.npz", bad);
  write_ds_npz(p, 5, 32, 0, 0, 0, -1);
  expect_dies(spec, 1, "train_data_batch_1.npz: label 0 of image 7 is out of range [1, 1000]", NULL);
  snprintf(p, sizeof p, "%s/train_data_batch_1.npz", bad);
  write_ds_npz(p, 20, 32, 0, 0, 0, -1);
  EXPECT(truncate(p, 20 * 3072 / 2) == 0);
  expect_dies(spec, 1, "train_data_batch_1.npz: truncated", NULL);
  write_ds_npz(p, 20, 32, 0, 1, 0, -1);   /* deflated, cut short */
  struct stat st; stat(p, &st);
  EXPECT(truncate(p, st.st_size / 2) == 0);
  expect_dies(spec, 1, "train_data_batch_1.npz: ", "member data.npy");
  write_file(p, "not a zip at all, just text that is long enough", 48);
  expect_dies(spec, 1, "train_data_batch_1.npz: not a zip (npz) file", NULL);
}

static void test_jpeg_tree(void) {
  char spec[1100]; snprintf(spec, sizeof spec, "imagenet:%s/imagenet,size=32", root);
  data_t d; data_load(&d, spec);
  EXPECT(!strcmp(d.name, "imagenet") && d.train.n == 240 && d.test.n == 48 && d.train.classes == 4);
  EXPECT(d.train.c == 3 && d.train.h == 32 && d.train.w == 32);
  /* every decoded image's mean colour is nearest its class's colour: decode, resize, labels agree */
  int ok = 1, hist[4] = {0};
  for (int i = 0; i < d.train.n; i++) {
    double best = 1e30; int arg = -1;
    double m[3];
    for (int c = 0; c < 3; c++) {
      double s = 0;
      for (int k = 0; k < 1024; k++) s += d.train.x[(size_t)i * 3072 + c * 1024 + k];
      m[c] = (s / 1024 * IMAGENET_STD[c] + IMAGENET_MEAN[c]) * 255;   /* back to bytes */
    }
    for (int k = 0; k < 4; k++) {
      double e = 0;
      for (int c = 0; c < 3; c++) e += (m[c] - CLS_RGB[k][c]) * (m[c] - CLS_RGB[k][c]);
      if (e < best) { best = e; arg = k; }
    }
    ok &= arg == d.train.y[i] && best < 100;   /* within 10 grey levels: JPEG quality 90 on flat colour + noise */
    hist[d.train.y[i]]++;
  }
  EXPECT(ok);
  EXPECT(hist[0] == 60 && hist[1] == 60 && hist[2] == 60 && hist[3] == 60);
  int first20[4] = {0};   /* the fixed shuffle: the first 20 images are not all of one class */
  for (int i = 0; i < 20; i++) first20[d.train.y[i]]++;
  EXPECT(first20[0] < 20 && first20[1] < 20);
  data_free(&d);
  /* a classes file: two classes, labelled in the file's order */
  snprintf(spec, sizeof spec, "imagenet:%s/imagenet,size=16,classes=%s/classes2.txt", root, root);
  data_load(&d, spec);
  EXPECT(d.train.n == 120 && d.test.n == 24 && d.train.classes == 2 && d.train.h == 16);
  ok = 1;
  for (int i = 0; i < d.train.n; i++) {   /* label 0 = WNID[2] (blue), 1 = WNID[0] (red) */
    double r = 0, b = 0;
    for (int k = 0; k < 256; k++) { r += d.train.x[(size_t)i * 768 + k]; b += d.train.x[(size_t)i * 768 + 512 + k]; }
    ok &= (d.train.y[i] == 0) == (b > r);
  }
  EXPECT(ok);
  data_free(&d);
  /* broken trees */
  char bad[1100], p[1300];
  snprintf(bad, sizeof bad, "%s/jbad", tmpdir);
  write_jpeg_tree(bad, 3, 1);
  snprintf(spec, sizeof spec, "imagenet:%s,size=32", bad);
  snprintf(p, sizeof p, "%s/train/%s/%s_1.JPEG", bad, WNID[1], WNID[1]);
  write_file(p, "\xff\xd8\xff\xe0 this is not JPEG data at all........", 44);
  expect_dies(spec, 1, p, "not a readable JPEG");
  write_jpeg(p, 64, 64, 1, 3, 0);
  struct stat st; stat(p, &st);
  EXPECT(truncate(p, st.st_size / 2) == 0);
  expect_dies(spec, 1, p, "truncated");
  write_jpeg(p, 64, 64, 1, 3, 1);   /* greyscale decodes (to RGB) */
  data_load(&d, spec);
  EXPECT(d.train.n == 12);
  data_free(&d);
  snprintf(p, sizeof p, "%s/classes_missing.txt", tmpdir);
  write_file(p, "n01440764\nn99999999\n", 20);
  snprintf(spec, sizeof spec, "imagenet:%s,classes=%s", bad, p);
  expect_dies(spec, 1, "n99999999: missing", "classes file");
  snprintf(p, sizeof p, "%s/val/%s", bad, WNID[3]);
  char p2[1400]; snprintf(p2, sizeof p2, "%s/val/n09999999", bad);
  EXPECT(rename(p, p2) == 0);
  snprintf(spec, sizeof spec, "imagenet:%s,size=32", bad);
  expect_dies(spec, 1, "val: class 3 is 'n09999999' but in", "train it is 'n01491361'");
  EXPECT(rename(p2, p) == 0);
  snprintf(spec, sizeof spec, "imagenet:%s/nothere", tmpdir);
  expect_dies(spec, 1, "nothere/train: missing or not a folder", NULL);
  snprintf(spec, sizeof spec, "imagenet:%s,size=3", bad);
  expect_dies(spec, 2, "size=3", NULL);
}

/* sampler batches of a synthetic set with aug; the same seed gives the same batches */
static void batches(const char *spec, uint64_t seed, int nb, int B, float *x, int *y) {
  data_t d; data_load(&d, spec);
  sampler_t s; sampler_init(&s, &d.train, seed, 0, 1, 0);
  size_t img = dataset_image_floats(&d.train);
  for (int k = 0; k < nb; k++) sampler_next(&s, B, x + (size_t)k * B * img, y + (size_t)k * B);
  sampler_free(&s); data_free(&d);
}

static void test_augmentation(void) {
  enum { NB = 6, B = 10, IMG = 3 * 12 * 12 };
  static float a[NB * B * IMG], b[NB * B * IMG], plain[NB * B * IMG];
  static int ya[NB * B], yb[NB * B], yp[NB * B];
  const char *base = "synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3";
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=crop2+flip", 7, NB, B, a, ya);
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=crop2+flip", 7, NB, B, b, yb);
  batches(base, 7, NB, B, plain, yp);
  EXPECT(!memcmp(a, b, sizeof a) && !memcmp(ya, yb, sizeof ya));   /* reproducible */
  EXPECT(!memcmp(ya, yp, sizeof ya));                                /* the same examples, augmented */
  /* each augmented image is its plain image shifted by (dy, dx) in [-2, 2] (zeros outside), maybe mirrored */
  int all_found = 1, flips = 0, shifted = 0;
  for (int e = 0; e < NB * B; e++) {
    const float *A = a + (size_t)e * IMG, *P = plain + (size_t)e * IMG;
    int found = 0;
    for (int fl = 0; fl < 2 && !found; fl++)
      for (int dy = -2; dy <= 2 && !found; dy++)
        for (int dx = -2; dx <= 2 && !found; dx++) {
          int same = 1;
          for (int c = 0; c < 3 && same; c++)
            for (int i = 0; i < 12 && same; i++)
              for (int j = 0; j < 12 && same; j++) {
                const int jj = fl ? 11 - j : j, si = i + dy, sj = jj + dx;
                const float want = si >= 0 && si < 12 && sj >= 0 && sj < 12 ? P[c * 144 + si * 12 + sj] : 0.0f;
                same = A[c * 144 + i * 12 + j] == want;
              }
          if (same) { found = 1; flips += fl; shifted += dy || dx; }
        }
    all_found &= found;
  }
  EXPECT(all_found);
  EXPECT(flips > 5 && flips < 55 && shifted > 30);   /* p = 1/2 and 24/25 over 60 images: far from these edges */
  /* another seed, other draws */
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=crop2+flip", 8, NB, B, b, yb);
  EXPECT(memcmp(a, b, sizeof a) != 0);
  /* a resumed sampler (seek to the state after 2 batches) continues the same augmented stream */
  {
    data_t d; data_load(&d, "synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=crop2+flip");
    sampler_t s; sampler_init(&s, &d.train, 7, 0, 1, 0);
    sampler_skip(&s, 2 * B);
    long ep = s.epoch; int pos = s.pos;
    sampler_free(&s);
    sampler_init(&s, &d.train, 7, 0, 1, 0);
    sampler_seek(&s, ep, pos);
    for (int k = 2; k < NB; k++) sampler_next(&s, B, b + (size_t)k * B * IMG, yb + k * B);
    EXPECT(!memcmp(a + 2 * B * IMG, b + 2 * B * IMG, sizeof(float) * (NB - 2) * B * IMG));
    sampler_free(&s); data_free(&d);
  }
  /* scaling: reproducible, changes the images, keeps them finite */
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=scale0.8-1.25", 7, 2, B, a, ya);
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=scale0.8-1.25", 7, 2, B, b, yb);
  int finite = 1;
  for (int k = 0; k < 2 * B * IMG; k++) finite &= isfinite(a[k]);
  EXPECT(finite && !memcmp(a, b, sizeof(float) * 2 * B * IMG) && memcmp(a, plain, sizeof(float) * 2 * B * IMG));
  /* elastic distortion: reproducible, changes the images; a weak one (alpha 0.5 px, sigma 2) moves
   * pixels by well under a pixel, so the images stay close to the plain ones */
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=elastic8-2", 7, 2, B, a, ya);
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=elastic8-2", 7, 2, B, b, yb);
  EXPECT(!memcmp(a, b, sizeof(float) * 2 * B * IMG) && memcmp(a, plain, sizeof(float) * 2 * B * IMG));
  batches("synthetic:n=40,c=3,h=12,w=12,classes=4,seed=3,aug=elastic0.5-2", 7, 2, B, a, ya);
  double d2 = 0, p2 = 0;
  for (int k = 0; k < 2 * B * IMG; k++) { d2 += (a[k] - plain[k]) * (double)(a[k] - plain[k]); p2 += (double)plain[k] * plain[k]; }
  EXPECT(d2 > 0 && d2 < 0.25 * p2);   /* sub-pixel moves of noisy images: well under half the RMS */
  /* bad items: exit 2 naming them */
  expect_dies("synthetic:n=40,aug=crop", 2, "aug item 'crop'", NULL);
  expect_dies("synthetic:n=40,aug=twirl", 2, "unknown aug item 'twirl'", NULL);
  expect_dies("synthetic:n=40,aug=scale2-1", 2, "scale2-1", NULL);
  expect_dies("synthetic:n=40,h=4,w=4,aug=crop8", 2, "padding 8", NULL);
  expect_dies("synthetic:n=40,aug=elastic3", 2, "elasticA-S", NULL);
  aug_t ag; aug_parse(&ag, "scale0.5-2+crop4+flip+elastic1.5-4", "x");
  char txt[64]; aug_format(&ag, txt, sizeof txt);
  EXPECT(!strcmp(txt, "scale0.5-2+elastic1.5-4+crop4+flip"));
}

static double mono(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec; }

static void test_pipeline(void) {
  char dir[1024]; snprintf(dir, sizeof dir, "%s/imagenet", root);
  imgfolder_t *f = imgfolder_open(dir, "train", NULL, 32);
  EXPECT(imgfolder_count(f) == 240 && imgfolder_classes(f) == 4);
  enum { B = 16, NB = 20 };   /* 320 examples: over an epoch of 240, so the second epoch's order is used */
  const size_t img = 3 * 32 * 32;
  float *x1 = malloc(sizeof(float) * NB * B * img), *x3 = malloc(sizeof(float) * NB * B * img);
  int y1[NB * B], y3[NB * B];
  aug_t ag; aug_parse(&ag, "crop4+flip", "test");
  pipe_t *p = pipe_open(imgfolder_src(f), B, 3, 1, 11, 0, 1, &ag);
  for (int k = 0; k < NB; k++) pipe_next(p, x1 + k * B * img, y1 + k * B, NULL);
  pipe_close(p);
  p = pipe_open(imgfolder_src(f), B, 4, 3, 11, 0, 1, &ag);
  for (int k = 0; k < NB; k++) pipe_next(p, x3 + k * B * img, y3 + k * B, NULL);
  pipe_close(p);
  EXPECT(!memcmp(x1, x3, sizeof(float) * NB * B * img) && !memcmp(y1, y3, sizeof y1));   /* thread count changes nothing */
  /* each epoch visits every image once: labels of the first 240 draws are 60 of each class */
  int h[4] = {0};
  for (int i = 0; i < 240; i++) h[y1[i]]++;
  EXPECT(h[0] == 60 && h[1] == 60 && h[2] == 60 && h[3] == 60);
  /* without augmentation, a batch element is the image decoded on its own */
  p = pipe_open(imgfolder_src(f), B, 2, 2, 11, 0, 1, NULL);
  pipe_next(p, x1, y1, NULL);
  pipe_close(p);
  uint8_t px[3 * 32 * 32];
  float one[3 * 32 * 32];
  int matched = 0;
  for (int i = 0; i < imgfolder_count(f) && !matched; i++) {
    imgfolder_decode(f, i, px); imgfolder_normalise(px, 32, one);
    matched = !memcmp(one, x1, sizeof one) && imgfolder_label(f, i) == y1[0];
  }
  EXPECT(matched);
  /* prefetch: left alone for 0.5 s, the decoders fill the ring, so the next `depth` batches come
   * without waiting; then the step's wait at a 20 ms step (a stand-in for forward + backward) */
  p = pipe_open(imgfolder_src(f), B, 4, 2, 5, 0, 1, &ag);
  usleep(500000);
  double w, wsum = 0;
  for (int k = 0; k < 4; k++) { pipe_next(p, x1, y1, &w); wsum += w; }
  EXPECT(wsum < 0.05);   /* 64 small decodes had 0.5 s; 0.05 s allows a loaded machine's scheduling delays */
  long dec0; double busy0;
  pipe_stats(p, &dec0, &busy0);
  const double t0 = mono();
  double wait = 0;
  for (int k = 0; k < 25; k++) {
    pipe_next(p, x1, y1, &w); wait += w;
    const double s0 = mono();
    while (mono() - s0 < 0.02) {}   /* the step */
  }
  const double el = mono() - t0;
  long dec1; double busy1;
  pipe_stats(p, &dec1, &busy1);
  pipe_close(p);
  printf("  # pipeline (2 decoder threads, depth 4, batch 16 of 32x32 from ~40-90 px JPEGs, 20 ms step): wait %.1f%% of %.2f s; "
         "decode rate %.0f images/s per busy decoder thread (machine shared: figures indicative)\n",
         100 * wait / el, el, busy1 > busy0 ? (double)(dec1 - dec0) / (busy1 - busy0) : 0.0);
  EXPECT(dec1 > dec0);
  free(x1); free(x3);
  imgfolder_close(f);
}

/* two samplers (shards 0 and 1 of 2) drawing from one lazy set at once, as replicas on threads do */
typedef struct { data_t *d; int shard, same; } shard_arg_t;
static void *shard_worker(void *arg) {
  shard_arg_t *a = arg;
  enum { B = 8, NB = 40 };
  static float xs[2][2][B * 3072];
  int ys[2][B];
  sampler_t s; sampler_init(&s, &a->d->train, 4, a->shard, 2, 0);
  a->same = 1;
  for (int k = 0; k < NB; k++) {
    sampler_next(&s, B, xs[a->shard][k & 1], ys[a->shard]);
    for (int b = 0; b < B; b++) a->same &= ys[a->shard][b] >= 0 && ys[a->shard][b] < 4;
  }
  sampler_free(&s);
  return NULL;
}

/* decoders=D: the sampler's batches decoded lazily equal the in-memory set's, bit for bit, with
 * augmentation and across an epoch's end; within an epoch the prefetched guesses are used */
static void test_lazy(void) {
  char spec[1100], lspec[1100];
  snprintf(spec, sizeof spec, "imagenet:%s/imagenet,size=32,aug=crop4+flip", root);
  snprintf(lspec, sizeof lspec, "imagenet:%s/imagenet,size=32,aug=crop4+flip,decoders=2", root);
  data_t e, l;
  data_load(&e, spec);
  data_load(&l, lspec);
  EXPECT(l.train.lazy && !e.train.lazy && l.train.n == e.train.n && l.train.n_x == l.test.n);
  EXPECT(!memcmp(l.train.x, e.train.x, sizeof(float) * 3072 * (size_t)l.train.n_x));   /* the evaluation slice */
  enum { B = 16, NB = 24 };   /* 384 draws: an epoch of 240 and part of the next */
  static float xe[B * 3072], xl[B * 3072];
  int ye[B], yl[B], same = 1;
  for (int wr = 0; wr < 2; wr++) {
    sampler_t se, sl;
    sampler_init(&se, &e.train, 9, 0, 1, wr); sampler_init(&sl, &l.train, 9, 0, 1, wr);
    for (int k = 0; k < NB; k++) {
      sampler_next(&se, B, xe, ye); sampler_next(&sl, B, xl, yl);
      same &= !memcmp(xe, xl, sizeof xe) && !memcmp(ye, yl, sizeof ye);
    }
    sampler_free(&se); sampler_free(&sl);
  }
  EXPECT(same);
  long dec, hits, misses; double wait;
  lazy_stats(l.train.lazy, &dec, &hits, &misses, &wait);
  printf("  # lazy: %ld images decoded, %ld batches prefetched, %ld decoded on demand, %.3f s waited\n", dec, hits, misses, wait);
  EXPECT(hits >= 35 && hits + misses == 2 * NB);   /* without replacement a miss only at the start and at the epoch's end */
  /* concurrent fetches from two shards: no deadlock, no lost batch (the stderr of a hang: the alarm) */
  shard_arg_t a0 = {&l, 0, 0}, a1 = {&l, 1, 0};
  pthread_t t0, t1;
  alarm(120);
  pthread_create(&t0, NULL, shard_worker, &a0); pthread_create(&t1, NULL, shard_worker, &a1);
  pthread_join(t0, NULL); pthread_join(t1, NULL);
  alarm(0);
  EXPECT(a0.same && a1.same);
  data_free(&e); data_free(&l);
  expect_dies("synthetic:n=40,decoders=2", 2, "unknown key 'decoders'", NULL);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write")) { write_sets(argv[2]); return 0; }
  snprintf(tmpdir, sizeof tmpdir, "/tmp/pdl_test_formats.XXXXXX");
  if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 3; }
  snprintf(root, sizeof root, "%s/sets", tmpdir);
  write_sets(root);
  RUN(test_cifar100);
  RUN(test_imagenet32);
  RUN(test_jpeg_tree);
  RUN(test_augmentation);
  RUN(test_pipeline);
  RUN(test_lazy);
  char cmd[600]; snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return harness_exit();
}
