/* test_data.c — data loaders and sampler (src/core/data.c).
 * Real Fashion-MNIST (the Debian package dataset-fashion-mnist is a required dependency, so its
 * absence fails), small idx / CIFAR-10 files written to a temp dir (good and broken: each broken
 * one must end the process with exit 1 and a message naming the file; run in a fork()ed child
 * whose stderr comes back through a pipe), the synthetic set, and the sharded sampler on a data
 * set whose pixels encode the example index. */
#include "core/data.h"
#include "util/util.h"
#include "tests/harness.h"
/* harness.h's RUN puts `if (...) x; fflush(stdout);` on one line, which GCC 12 flags when
 * expanded in main; the macro is correct, so the warning is silenced for this file. */
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define FM_DIR "/usr/share/datasets/fashion-mnist"
static char tmpdir[256];

/* ---- running something that must die --------------------------------------------------- */

typedef void (*child_fn)(const void *arg);

/* Runs fn(arg) in a child; returns its exit status (100 if fn returned, -1 if killed) and
 * its stderr in msg. */
static int run_child(child_fn fn, const void *arg, char *msg, size_t cap) {
  int fd[2];
  if (pipe(fd) != 0) { perror("pipe"); exit(3); }
  fflush(stdout); fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); exit(3); }
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 2);
    alarm(60); /* a hang in the child becomes a failure (killed: status -1) */
    fn(arg);
    _exit(100); /* fn returned: the error was not detected */
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

static void child_load(const void *arg) {
  data_t d;
  data_load(&d, (const char *)arg);
  data_free(&d);
}

/* data_load(spec) must exit with `want` and stderr must contain need1 and need2 (if given). */
static void expect_load_dies(const char *spec, int want, const char *need1, const char *need2) {
  char msg[4096];
  int st = run_child(child_load, spec, msg, sizeof msg);
  EXPECT_MSG(st == want, "spec %s: exit %d, want %d; stderr: %s", spec, st, want, msg);
  EXPECT_MSG(!need1 || strstr(msg, need1), "spec %s: stderr lacks '%s': %s", spec, need1, msg);
  EXPECT_MSG(!need2 || strstr(msg, need2), "spec %s: stderr lacks '%s': %s", spec, need2, msg);
}

/* ---- writing test files ------------------------------------------------------------------- */

static void write_plain(const char *path, const void *buf, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) { perror(path); exit(3); }
}

static void write_gz(const char *path, const void *buf, size_t n) {
  gzFile f = gzopen(path, "wb");
  if (!f || gzwrite(f, buf, (unsigned)n) != (int)n || gzclose(f) != Z_OK) { fprintf(stderr, "gz %s\n", path); exit(3); }
}

static void put_be32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }

/* idx3 image file content: header + n*rows*cols pixels (pixel k of image i = (7i + 3k) & 255),
 * `extra` trailing bytes. Returns malloc'ed buffer, size in *len. */
static uint8_t *idx_images(uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols, size_t extra, size_t *len) {
  size_t npx = (size_t)n * rows * cols;
  *len = 16 + npx + extra;
  uint8_t *b = calloc(*len, 1);
  put_be32(b, magic); put_be32(b + 4, n); put_be32(b + 8, rows); put_be32(b + 12, cols);
  for (uint32_t i = 0; i < n; i++)
    for (size_t k = 0; k < (size_t)rows * cols; k++) b[16 + i * rows * cols + k] = (uint8_t)((7 * i + 3 * k) & 255);
  return b;
}

/* idx1 label file: label i = i % 10, except index bad_at gets bad_val. */
static uint8_t *idx_labels(uint32_t magic, uint32_t n, int bad_at, int bad_val, size_t *len) {
  *len = 8 + n;
  uint8_t *b = calloc(*len, 1);
  put_be32(b, magic); put_be32(b + 4, n);
  for (uint32_t i = 0; i < n; i++) b[8 + i] = (uint8_t)(i % 10);
  if (bad_at >= 0) b[8 + bad_at] = (uint8_t)bad_val;
  return b;
}

enum { NTR = 20, NTE = 6 };

/* A good small Fashion-MNIST-like dir: NTR train, NTE test images, gzip unless plain. */
static void make_fm_dir(const char *dir, int plain) {
  mkdir(dir, 0755);
  const char *pre[2] = {"train", "t10k"};
  uint32_t cnt[2] = {NTR, NTE};
  for (int s = 0; s < 2; s++) {
    char path[1100]; size_t len; uint8_t *b;
    b = idx_images(2051, cnt[s], 28, 28, 0, &len);
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte%s", dir, pre[s], plain ? "" : ".gz");
    plain ? write_plain(path, b, len) : write_gz(path, b, len);
    free(b);
    b = idx_labels(2049, cnt[s], -1, 0, &len);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte%s", dir, pre[s], plain ? "" : ".gz");
    plain ? write_plain(path, b, len) : write_gz(path, b, len);
    free(b);
  }
}

static void sub(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmpdir, name); }

/* ---- Fashion-MNIST ------------------------------------------------------------------------ */

/* First images of a real idx file, read independently: [cnt][784] bytes from image `first`. */
static void read_real_pixels(const char *path, long first, int cnt, uint8_t *out) {
  gzFile f = gzopen(path, "rb");
  EXPECT(f != NULL);
  if (!f) return;
  gzseek(f, 16 + first * 784, SEEK_SET);
  EXPECT(gzread(f, out, (unsigned)cnt * 784) == cnt * 784);
  gzclose(f);
}

static void test_fashion_mnist_real(void) {
  struct stat st;
  EXPECT_MSG(stat(FM_DIR "/train-images-idx3-ubyte.gz", &st) == 0,
             "%s missing: install the Debian package dataset-fashion-mnist", FM_DIR);
  data_t d;
  double t0 = now_s();
  data_load(&d, "fashion-mnist");
  double t = now_s() - t0;
  printf("  # fashion-mnist load (60000 + 10000 images): %.3f s\n", t);
  EXPECT(!strcmp(d.name, "fashion-mnist"));
  EXPECT(!strcmp(d.spec, "fashion-mnist"));
  EXPECT(d.train.n == 60000 && d.test.n == 10000);
  EXPECT(d.train.c == 1 && d.train.h == 28 && d.train.w == 28 && d.train.classes == 10);
  EXPECT(d.test.c == 1 && d.test.h == 28 && d.test.w == 28 && d.test.classes == 10);
  EXPECT(dataset_image_floats(&d.train) == 784);
  /* Fashion-MNIST is balanced: 6000 train and 1000 test images per class */
  int ctr[10] = {0}, cte[10] = {0}, bad = 0;
  for (int i = 0; i < d.train.n; i++) { if (d.train.y[i] < 0 || d.train.y[i] > 9) bad++; else ctr[d.train.y[i]]++; }
  for (int i = 0; i < d.test.n; i++) { if (d.test.y[i] < 0 || d.test.y[i] > 9) bad++; else cte[d.test.y[i]]++; }
  EXPECT(bad == 0);
  for (int k = 0; k < 10; k++) EXPECT_MSG(ctr[k] == 6000 && cte[k] == 1000, "class %d: %d / %d", k, ctr[k], cte[k]);
  /* known first labels of both splits */
  int y0[5] = {9, 0, 0, 3, 0}, t0l[5] = {9, 2, 1, 1, 6};
  for (int i = 0; i < 5; i++) EXPECT(d.train.y[i] == y0[i] && d.test.y[i] == t0l[i]);
  /* the train-set statistics in [0,1] pixel scale (computed independently with Python) */
  EXPECT_NEAR(d.mean[0], 0.2860406, 1e-6, "float32 rounding of an exact histogram mean");
  EXPECT_NEAR(d.std[0], 0.3530242, 1e-6, "float32 rounding of an exact histogram std");
  double s = 0, ss = 0, ts = 0;
  size_t ntr = (size_t)d.train.n * 784;
  for (size_t i = 0; i < ntr; i++) { s += d.train.x[i]; ss += (double)d.train.x[i] * d.train.x[i]; }
  for (size_t i = 0; i < (size_t)d.test.n * 784; i++) ts += d.test.x[i];
  double m = s / (double)ntr, sd = sqrt(ss / (double)ntr - m * m);
  EXPECT_NEAR(m, 0.0, 1e-5, "normalised train mean; float32 table values");
  EXPECT_NEAR(sd, 1.0, 1e-5, "normalised train std; float32 table values");
  EXPECT_NEAR(ts / ((double)d.test.n * 784), 0.0, 0.05, "test set uses train stats; its mean differs slightly");
  /* pixels match the file, in order: first two train images and the last test image */
  uint8_t px[2 * 784];
  read_real_pixels(FM_DIR "/train-images-idx3-ubyte.gz", 0, 2, px);
  double worst = 0;
  for (int k = 0; k < 2 * 784; k++) {
    double v = ((double)d.train.x[k] * d.std[0] + d.mean[0]) * 255.0;
    if (fabs(v - px[k]) > worst) worst = fabs(v - px[k]);
  }
  read_real_pixels(FM_DIR "/t10k-images-idx3-ubyte.gz", 9999, 1, px);
  for (int k = 0; k < 784; k++) {
    double v = ((double)d.test.x[(size_t)9999 * 784 + k] * d.std[0] + d.mean[0]) * 255.0;
    if (fabs(v - px[k]) > worst) worst = fabs(v - px[k]);
  }
  EXPECT_NEAR(worst, 0.0, 1e-3, "float32 normalise/denormalise round trip, in byte units");
  data_free(&d);
  EXPECT(d.train.x == NULL && d.test.y == NULL && d.train.n == 0);
}

/* Checks a loaded small dir (make_fm_dir) against the generating formula. */
static void check_small_fm(const data_t *d) {
  EXPECT(d->train.n == NTR && d->test.n == NTE && d->train.h == 28 && d->test.w == 28);
  double worst = 0;
  const dataset_t *sets[2] = {&d->train, &d->test};
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < sets[s]->n; i++) {
      EXPECT(sets[s]->y[i] == i % 10);
      for (int k = 0; k < 784; k++) {
        double v = ((double)sets[s]->x[(size_t)i * 784 + k] * d->std[0] + d->mean[0]) * 255.0;
        double want = (double)((7 * i + 3 * k) & 255);
        if (fabs(v - want) > worst) worst = fabs(v - want);
      }
    }
  EXPECT_NEAR(worst, 0.0, 1e-3, "float32 normalise/denormalise round trip, in byte units");
}

static void test_fashion_small_dirs(void) {
  char dir[512], spec[600];
  data_t d;
  sub(dir, sizeof dir, "fm_gz");
  make_fm_dir(dir, 0);
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  data_load(&d, spec);
  EXPECT(!strcmp(d.spec, spec));
  check_small_fm(&d);
  data_free(&d);
  sub(dir, sizeof dir, "fm_plain");
  make_fm_dir(dir, 1);
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  data_load(&d, spec);
  check_small_fm(&d);
  data_free(&d);
}

/* The decompressed copies (data.c, PDL_DATA_CACHE, set for this whole binary in main): a .gz set
 * leaves one plain copy per file; a second load reads them and gives the same arrays; a copy of the
 * wrong size is not used (the .gz is read); PDL_DATA_CACHE=off makes none. (test_fashion_broken runs
 * with the cache on too: its messages name the .gz, as the loader falls back to it.) */
static int count_copies(const char *dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -v XXX | grep -c ubyte", dir);
  FILE *f = popen(cmd, "r");
  int n = -1;
  if (f) { if (fscanf(f, "%d", &n) != 1) n = -1; pclose(f); }
  return n;
}
static void test_fashion_cache(void) {
  char dir[512], spec[600], cache[512];
  data_t a, b;
  snprintf(cache, sizeof cache, "%s", getenv("PDL_DATA_CACHE"));
  sub(dir, sizeof dir, "fm_cache");
  make_fm_dir(dir, 0);
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  const int before = count_copies(cache);
  data_load(&a, spec);
  EXPECT_MSG(count_copies(cache) == before + 4, "%d copies in %s after loading a .gz set (had %d): want 4 more",
             count_copies(cache), cache, before);
  data_load(&b, spec); /* from the copies */
  EXPECT(a.train.n == b.train.n && a.test.n == b.test.n);
  EXPECT(!memcmp(a.train.x, b.train.x, sizeof(float) * (size_t)a.train.n * 784));
  EXPECT(!memcmp(a.test.y, b.test.y, sizeof(int) * (size_t)a.test.n));
  check_small_fm(&b);
  data_free(&b);
  /* a copy of the wrong size is left alone and not used */
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "for f in '%s'/train-images-idx3-ubyte-*; do printf 'junk' > \"$f\"; done", cache);
  EXPECT(system(cmd) == 0);
  data_load(&b, spec);
  EXPECT(!memcmp(a.train.x, b.train.x, sizeof(float) * (size_t)a.train.n * 784));
  data_free(&b);
  /* a copy of the right size with changed bytes (issue 46: was used without a word) is caught by the
   * .gz's CRC-32, removed and made again: the arrays are the .gz's */
  snprintf(cmd, sizeof cmd,
           "for n in train-labels-idx1-ubyte t10k-images-idx3-ubyte; do i=$(stat -c %%i '%s'/$n.gz) && "
           "for f in '%s'/$n-*-$i-*; do printf '\\377\\377\\377' | dd of=\"$f\" bs=1 seek=20 conv=notrunc "
           "status=none || exit 1; done; done", dir, cache);
  EXPECT(system(cmd) == 0);
  data_load(&b, spec);
  EXPECT(!memcmp(a.train.y, b.train.y, sizeof(int) * (size_t)a.train.n));
  EXPECT(!memcmp(a.test.x, b.test.x, sizeof(float) * (size_t)a.test.n * 784));
  data_free(&b);
  EXPECT_MSG(count_copies(cache) == before + 4, "%d copies after a damaged one was replaced: want %d",
             count_copies(cache), before + 4);
  /* off: no copies */
  sub(dir, sizeof dir, "fm_nocache");
  make_fm_dir(dir, 0);
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  setenv("PDL_DATA_CACHE", "off", 1);
  const int n0 = count_copies(cache);
  data_load(&b, spec);
  EXPECT_MSG(count_copies(cache) == n0, "PDL_DATA_CACHE=off still wrote copies");
  check_small_fm(&b);
  data_free(&b);
  setenv("PDL_DATA_CACHE", cache, 1);
  data_free(&a);
}

/* data_load_first == data_load + data_truncate: the same counts, normalisation and floats (real
 * Fashion-MNIST, whose normalisation is the whole train set's, and a small .gz set). */
static void test_load_first(void) {
  struct stat st;
  char spec[600], dir[512];
  const int have_real = stat(FM_DIR, &st) == 0;
  sub(dir, sizeof dir, "fm_first");
  make_fm_dir(dir, 0);
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  const char *specs[2] = {have_real ? "fashion-mnist" : NULL, spec};
  const int nt[2][2] = {{2000, 500}, {NTR - 1, 0}};
  for (int k = 0; k < 2; k++) {
    if (!specs[k]) continue;
    data_t a, b;
    data_load(&a, specs[k]);
    data_truncate(&a, nt[k][0], nt[k][1]);
    data_load_first(&b, specs[k], nt[k][0], nt[k][1]);
    EXPECT_MSG(a.train.n == b.train.n && a.test.n == b.test.n, "%s: counts %d/%d vs %d/%d", specs[k], a.train.n,
               a.test.n, b.train.n, b.test.n);
    EXPECT(a.mean[0] == b.mean[0] && a.std[0] == b.std[0]);
    EXPECT(!memcmp(a.train.x, b.train.x, sizeof(float) * (size_t)b.train.n * 784));
    EXPECT(!memcmp(a.test.x, b.test.x, sizeof(float) * (size_t)b.test.n * 784));
    EXPECT(!memcmp(a.train.y, b.train.y, sizeof(int) * (size_t)b.train.n));
    data_free(&a); data_free(&b);
  }
}

/* One broken variant per dir: returns the spec; `file` is the affected file's path. */
static void broken_fm(const char *name, char *spec, size_t cap, char *dir, size_t dcap) {
  sub(dir, dcap, name);
  make_fm_dir(dir, 0);
  snprintf(spec, cap, "fashion-mnist:%s", dir);
}

static void test_fashion_broken(void) {
  char dir[512], spec[600], path[700];
  size_t len;
  uint8_t *b;
  struct stat st;

  broken_fm("fm_missing", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
  unlink(path);
  expect_load_dies(spec, 1, path, "missing");

  broken_fm("fm_trunc", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  stat(path, &st);
  EXPECT(truncate(path, st.st_size / 2) == 0);
  expect_load_dies(spec, 1, path, "truncated");

  broken_fm("fm_trunc_trailer", spec, sizeof spec, dir, sizeof dir); /* data complete, CRC/length cut */
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
  stat(path, &st);
  EXPECT(truncate(path, st.st_size - 4) == 0);
  expect_load_dies(spec, 1, path, "truncated");

  broken_fm("fm_corrupt", spec, sizeof spec, dir, sizeof dir); /* damaged deflate data */
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  {
    FILE *f = fopen(path, "r+b");
    stat(path, &st);
    uint8_t *g = malloc((size_t)st.st_size);
    EXPECT(fread(g, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
    for (long k = 20; k < st.st_size - 8; k += 3) g[k] ^= 0x5a;
    rewind(f);
    fwrite(g, 1, (size_t)st.st_size, f);
    fclose(f);
    free(g);
  }
  expect_load_dies(spec, 1, path, NULL);

  broken_fm("fm_notgz", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  b = idx_images(2051, NTR, 28, 28, 0, &len);
  write_plain(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "not a gzip");

  broken_fm("fm_magic", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir);
  b = idx_images(2049, NTE, 28, 28, 0, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "magic");

  broken_fm("fm_lmagic", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
  b = idx_labels(2051, NTR, -1, 0, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "magic");

  broken_fm("fm_dims", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  b = idx_images(2051, NTR, 28, 27, 0, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "28x28");

  broken_fm("fm_count", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
  b = idx_labels(2049, NTR - 1, -1, 0, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "does not match image count");

  broken_fm("fm_zero", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir);
  b = idx_images(2051, 0, 28, 28, 0, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "count");

  broken_fm("fm_label", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
  b = idx_labels(2049, NTE, 3, 10, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "out of range");

  broken_fm("fm_trailing", spec, sizeof spec, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  b = idx_images(2051, NTR, 28, 28, 5, &len);
  write_gz(path, b, len);
  free(b);
  expect_load_dies(spec, 1, path, "trailing");

  broken_fm("fm_plain_short", spec, sizeof spec, dir, sizeof dir); /* plain fallback, short header */
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", dir);
  write_plain(path, "\0\0\x08", 3);
  expect_load_dies(spec, 1, path, "truncated");

  sub(dir, sizeof dir, "no_such_dir");
  snprintf(spec, sizeof spec, "fashion-mnist:%s", dir);
  expect_load_dies(spec, 1, "no_such_dir/train-images-idx3-ubyte", "missing");
}

/* ---- CIFAR-10 ----------------------------------------------------------------------------- */

static const char *cifar_names[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                     "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
static const int cifar_counts[6] = {3, 2, 2, 1, 2, 4};

/* Record r of file f: label (f + 3r) % 10, pixel k = (11f + 5r + k) & 255. */
static void make_cifar_dir(const char *dir) {
  mkdir(dir, 0755);
  for (int f = 0; f < 6; f++) {
    size_t len = (size_t)cifar_counts[f] * 3073;
    uint8_t *b = malloc(len);
    for (int r = 0; r < cifar_counts[f]; r++) {
      b[(size_t)r * 3073] = (uint8_t)((f + 3 * r) % 10);
      for (int k = 0; k < 3072; k++) b[(size_t)r * 3073 + 1 + k] = (uint8_t)((11 * f + 5 * r + k) & 255);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, cifar_names[f]);
    write_plain(path, b, len);
    free(b);
  }
}

static void test_cifar_small(void) {
  char dir[512], spec[600];
  sub(dir, sizeof dir, "cifar_good");
  make_cifar_dir(dir);
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  data_t d;
  data_load(&d, spec);
  EXPECT(!strcmp(d.name, "cifar10"));
  EXPECT(d.train.n == 10 && d.test.n == 4);
  EXPECT(d.train.c == 3 && d.train.h == 32 && d.train.w == 32 && d.train.classes == 10);
  EXPECT(dataset_image_floats(&d.test) == 3072);
  /* expected per-channel statistics from the generating formula */
  double s[3] = {0}, ss[3] = {0}, cnt = 10 * 1024.0;
  for (int f = 0; f < 5; f++)
    for (int r = 0; r < cifar_counts[f]; r++)
      for (int k = 0; k < 3072; k++) {
        double v = ((11 * f + 5 * r + k) & 255) / 255.0;
        s[k / 1024] += v; ss[k / 1024] += v * v;
      }
  for (int ch = 0; ch < 3; ch++) {
    double m = s[ch] / cnt;
    EXPECT_NEAR(d.mean[ch], m, 1e-6, "float32 rounding of the exact mean");
    EXPECT_NEAR(d.std[ch], sqrt(ss[ch] / cnt - m * m), 1e-6, "float32 rounding of the exact std");
  }
  double worst = 0;
  int labels_ok = 1;
  for (int split = 0; split < 2; split++) {
    const dataset_t *ds = split ? &d.test : &d.train;
    int i = 0;
    for (int f = split ? 5 : 0; f < (split ? 6 : 5); f++)
      for (int r = 0; r < cifar_counts[f]; r++, i++) {
        if (ds->y[i] != (f + 3 * r) % 10) labels_ok = 0;
        for (int k = 0; k < 3072; k++) {
          int ch = k / 1024;
          double v = ((double)ds->x[(size_t)i * 3072 + k] * d.std[ch] + d.mean[ch]) * 255.0;
          double want = (11 * f + 5 * r + k) & 255;
          if (fabs(v - want) > worst) worst = fabs(v - want);
        }
      }
  }
  EXPECT(labels_ok);
  EXPECT_NEAR(worst, 0.0, 1e-3, "float32 normalise/denormalise round trip, in byte units");
  data_free(&d);
}

static void test_cifar_broken(void) {
  char dir[512], spec[600], path[700];
  struct stat st;

  sub(dir, sizeof dir, "cifar_size");
  make_cifar_dir(dir);
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  snprintf(path, sizeof path, "%s/data_batch_3.bin", dir);
  stat(path, &st);
  EXPECT(truncate(path, st.st_size + 5) == 0);
  expect_load_dies(spec, 1, path, "3073");

  sub(dir, sizeof dir, "cifar_empty");
  make_cifar_dir(dir);
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  snprintf(path, sizeof path, "%s/data_batch_2.bin", dir);
  EXPECT(truncate(path, 0) == 0);
  expect_load_dies(spec, 1, path, "multiple");

  sub(dir, sizeof dir, "cifar_label");
  make_cifar_dir(dir);
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  snprintf(path, sizeof path, "%s/data_batch_4.bin", dir);
  {
    FILE *f = fopen(path, "r+b");
    fputc(200, f); /* record 0's label */
    fclose(f);
  }
  expect_load_dies(spec, 1, path, "label 200 of record 0");

  sub(dir, sizeof dir, "cifar_testlabel");
  make_cifar_dir(dir);
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  snprintf(path, sizeof path, "%s/test_batch.bin", dir);
  {
    FILE *f = fopen(path, "r+b");
    fseek(f, 2 * 3073, SEEK_SET);
    fputc(10, f); /* record 2's label */
    fclose(f);
  }
  expect_load_dies(spec, 1, path, "label 10 of record 2");

  sub(dir, sizeof dir, "cifar_missing");
  make_cifar_dir(dir);
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  snprintf(path, sizeof path, "%s/test_batch.bin", dir);
  unlink(path);
  expect_load_dies(spec, 1, path, "missing");
}

/* ---- specs -------------------------------------------------------------------------------- */

static void test_bad_specs(void) {
  expect_load_dies("mnist", 2, "'mnist'", NULL);
  expect_load_dies("", 2, "spec", NULL);
  expect_load_dies("cifar10", 2, "cifar10:DIR", NULL);
  expect_load_dies("synthetic:n=64,foo=3", 2, "'foo'", NULL);
  expect_load_dies("synthetic:n=abc", 2, "key n", "abc");
  expect_load_dies("synthetic:c=4", 2, "key c", NULL);
  expect_load_dies("synthetic:classes=1", 2, "key classes", NULL);
  expect_load_dies("synthetic:n=0", 2, "key n", NULL);
  expect_load_dies("synthetic:h", 2, "'h'", NULL);
  expect_load_dies("synthetic:seed=-1", 2, "key seed", NULL);
  expect_load_dies("synthetic:n=16777216,h=1024,w=1024", 2, "too large", NULL);
}

/* ---- synthetic ---------------------------------------------------------------------------- */

static void test_synthetic_deterministic(void) {
  const char *spec = "synthetic:n=200,c=3,h=8,w=6,classes=5,seed=7";
  data_t a, b, c;
  data_load(&a, spec);
  data_load(&b, spec);
  data_load(&c, "synthetic:n=200,c=3,h=8,w=6,classes=5,seed=8");
  EXPECT(!strcmp(a.name, "synthetic"));
  EXPECT(a.train.n == 200 && a.test.n == 50);
  EXPECT(a.train.c == 3 && a.train.h == 8 && a.train.w == 6 && a.train.classes == 5 && a.test.classes == 5);
  size_t ntr = (size_t)200 * 144, nte = (size_t)50 * 144;
  EXPECT(!memcmp(a.train.x, b.train.x, ntr * sizeof(float)) && !memcmp(a.test.x, b.test.x, nte * sizeof(float)));
  EXPECT(!memcmp(a.train.y, b.train.y, 200 * sizeof(int)) && !memcmp(a.test.y, b.test.y, 50 * sizeof(int)));
  EXPECT(!memcmp(a.mean, b.mean, sizeof a.mean) && !memcmp(a.std, b.std, sizeof a.std));
  EXPECT(memcmp(a.train.x, c.train.x, ntr * sizeof(float)) != 0);
  EXPECT(memcmp(a.test.x, a.train.x, nte * sizeof(float)) != 0);
  int cnt[5] = {0}, bad = 0;
  for (int i = 0; i < 200; i++) { if (a.train.y[i] < 0 || a.train.y[i] >= 5) bad++; else cnt[a.train.y[i]]++; }
  for (int i = 0; i < 50; i++) if (a.test.y[i] < 0 || a.test.y[i] >= 5) bad++;
  EXPECT(bad == 0);
  for (int k = 0; k < 5; k++) EXPECT_MSG(cnt[k] > 10, "class %d has %d of 200 examples", k, cnt[k]);
  for (int ch = 0; ch < 3; ch++) {
    double s = 0, ss = 0;
    for (int i = 0; i < 200; i++)
      for (int k = 0; k < 48; k++) { double v = a.train.x[(size_t)i * 144 + ch * 48 + k]; s += v; ss += v * v; }
    double m = s / 9600, sd = sqrt(ss / 9600 - m * m);
    EXPECT_NEAR(m, 0.0, 1e-5, "per-channel normalised mean, float32 arithmetic");
    EXPECT_NEAR(sd, 1.0, 1e-5, "per-channel normalised std, float32 arithmetic");
  }
  data_free(&a); data_free(&b); data_free(&c);
}

/* Nearest class mean (fitted on train) accuracy on test. */
static double nearest_mean_acc(const data_t *d) {
  int K = d->train.classes;
  size_t img = dataset_image_floats(&d->train);
  double *mu = calloc((size_t)K * img, sizeof(double));
  int *cnt = calloc((size_t)K, sizeof(int));
  for (int i = 0; i < d->train.n; i++) {
    int y = d->train.y[i];
    cnt[y]++;
    for (size_t q = 0; q < img; q++) mu[(size_t)y * img + q] += d->train.x[(size_t)i * img + q];
  }
  for (int k = 0; k < K; k++)
    for (size_t q = 0; q < img; q++) mu[(size_t)k * img + q] /= cnt[k] ? cnt[k] : 1;
  int right = 0;
  for (int i = 0; i < d->test.n; i++) {
    int best = 0; double bd = INFINITY;
    for (int k = 0; k < K; k++) {
      double dist = 0;
      for (size_t q = 0; q < img; q++) { double e = d->test.x[(size_t)i * img + q] - mu[(size_t)k * img + q]; dist += e * e; }
      if (dist < bd) { bd = dist; best = k; }
    }
    right += best == d->test.y[i];
  }
  free(mu); free(cnt);
  return (double)right / d->test.n;
}

static void test_synthetic_default_learnable(void) {
  data_t d;
  data_load(&d, "synthetic");
  EXPECT(d.train.n == 1024 && d.test.n == 256);
  EXPECT(d.train.c == 1 && d.train.h == 28 && d.train.w == 28 && d.train.classes == 10);
  double acc = nearest_mean_acc(&d);
  printf("  # synthetic default: nearest-class-mean test accuracy %.3f\n", acc);
  EXPECT_MSG(acc > 0.9, "synthetic set should be learnable, nearest-mean accuracy %.3f", acc);
  data_free(&d);
  data_load(&d, "synthetic:n=2000,h=4,w=4,classes=4");
  acc = nearest_mean_acc(&d);
  printf("  # synthetic 1x4x4, 4 classes: nearest-class-mean test accuracy %.3f\n", acc);
  EXPECT_MSG(acc > 0.6, "tiny synthetic images should still be mostly separable, accuracy %.3f", acc);
  data_free(&d);
}

static void test_truncate(void) {
  data_t d, full;
  data_load(&d, "synthetic:n=100,h=5,w=5");
  data_load(&full, "synthetic:n=100,h=5,w=5");
  data_truncate(&d, 10, 0);
  EXPECT(d.train.n == 10 && d.test.n == 25);
  data_truncate(&d, -1, 5);
  EXPECT(d.train.n == 10 && d.test.n == 5);
  data_truncate(&d, 50, 50); /* larger than what is left: no change */
  EXPECT(d.train.n == 10 && d.test.n == 5);
  EXPECT(!memcmp(d.train.x, full.train.x, 10 * 25 * sizeof(float)) && !memcmp(d.test.y, full.test.y, 5 * sizeof(int)));
  data_free(&d); data_free(&full);
}

/* --val's split: the test set becomes train examples [ntrain, ntrain + nval), the same floats and
 * labels, the train set its first ntrain, the normalisation unchanged (real Fashion-MNIST through
 * data_load_first as pdl train loads it, and a synthetic set). */
static void test_hold_out(void) {
  struct stat st;
  const char *specs[2] = {stat(FM_DIR, &st) == 0 ? "fashion-mnist" : NULL, "synthetic:n=200,h=5,w=5"};
  const int nt[2][2] = {{6000, 2000}, {120, 40}};
  for (int k = 0; k < 2; k++) {
    if (!specs[k]) continue;
    data_t full, v;
    data_load(&full, specs[k]);
    data_load_first(&v, specs[k], nt[k][0] + nt[k][1], 1);
    data_hold_out(&v, nt[k][0], nt[k][1]);
    size_t per = dataset_image_floats(&full.train);
    EXPECT_MSG(v.train.n == nt[k][0] && v.test.n == nt[k][1], "%s: %d / %d", specs[k], v.train.n, v.test.n);
    EXPECT(v.mean[0] == full.mean[0] && v.std[0] == full.std[0] && v.test.c == full.train.c && v.test.h == full.train.h);
    EXPECT(!memcmp(v.train.x, full.train.x, sizeof(float) * per * (size_t)nt[k][0]));
    EXPECT(!memcmp(v.test.x, full.train.x + per * (size_t)nt[k][0], sizeof(float) * per * (size_t)nt[k][1]));
    EXPECT(!memcmp(v.test.y, full.train.y + nt[k][0], sizeof(int) * (size_t)nt[k][1]));
    data_free(&v); data_free(&full);
  }
}

/* ---- sampler ------------------------------------------------------------------------------ */

/* x[i] = {i, -i}, y[i] = i % 7: a sample's pixels tell which example it is. */
static dataset_t index_ds(int n) {
  dataset_t ds = {.n = n, .c = 1, .h = 1, .w = 2, .classes = 7};
  ds.x = malloc(sizeof(float) * 2 * (size_t)n);
  ds.y = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) { ds.x[2 * i] = (float)i; ds.x[2 * i + 1] = (float)-i; ds.y[i] = i % 7; }
  return ds;
}

/* Draws m examples in batches of B; writes their indices to out; returns 0 if any x/y was
 * inconsistent with the index encoding. */
static int draw(sampler_t *s, int m, int B, int *out) {
  float x[2 * 64];
  int y[64], ok = 1, got = 0;
  while (got < m) {
    int b = m - got < B ? m - got : B;
    sampler_next(s, b, x, y);
    for (int k = 0; k < b; k++) {
      int e = (int)x[2 * k];
      if (x[2 * k + 1] != -x[2 * k] || y[k] != e % 7) ok = 0;
      out[got++] = e;
    }
  }
  return ok;
}

/* Indices of shard (seed, shard, S) as a membership mask over n. */
static void shard_mask(const dataset_t *ds, uint64_t seed, int shard, int S, char *mask) {
  sampler_t s;
  sampler_init(&s, ds, seed, shard, S, 0);
  memset(mask, 0, (size_t)ds->n);
  for (int k = 0; k < s.n_shard; k++) mask[s.idx[k]] = 1;
  sampler_free(&s);
}

static void test_sampler_shards(void) {
  dataset_t ds = index_ds(103);
  int seen[103] = {0}, total = 0;
  for (int sh = 0; sh < 4; sh++) {
    sampler_t s;
    sampler_init(&s, &ds, 42, sh, 4, 0);
    EXPECT(s.n_shard == (sh < 3 ? 26 : 25));
    EXPECT(s.epoch == 0 && s.pos == 0);
    total += s.n_shard;
    for (int k = 0; k < s.n_shard; k++) seen[s.idx[k]]++;
    sampler_free(&s);
  }
  EXPECT(total == 103);
  int once = 1;
  for (int i = 0; i < 103; i++) once &= seen[i] == 1;
  EXPECT_MSG(once, "every example in exactly one shard");
  /* one shard of one: the whole set, not in index order */
  sampler_t s;
  sampler_init(&s, &ds, 42, 0, 1, 0);
  EXPECT(s.n_shard == 103);
  int sorted = 1;
  for (int k = 0; k < 103; k++) sorted &= s.idx[k] == k;
  EXPECT(!sorted);
  sampler_free(&s);
  free(ds.x); free(ds.y);
}

/* Non-IID shards (sampler_skew): still disjoint and covering; skew 1 with as many shards as
 * classes gives one class per shard; skew 0 changes nothing. index_ds labels are e % 7. */
static void test_sampler_skew(void) {
  dataset_t ds = index_ds(700);
  int seen[700] = {0}, total = 0, pure = 1;
  for (int sh = 0; sh < 7; sh++) {
    sampler_t s;
    sampler_init(&s, &ds, 42, sh, 7, 0);
    sampler_skew(&s, 1.0);
    EXPECT(s.n_shard == 100 && s.epoch == 0 && s.pos == 0);
    for (int k = 0; k < s.n_shard; k++) { seen[s.idx[k]]++; pure &= ds.y[s.idx[k]] == sh; }
    total += s.n_shard;
    sampler_free(&s);
  }
  EXPECT(total == 700);
  int once = 1;
  for (int i = 0; i < 700; i++) once &= seen[i] == 1;
  EXPECT_MSG(once, "skew 1: every example in exactly one shard");
  EXPECT_MSG(pure, "skew 1, 7 shards of 7 classes: shard k holds class k only");
  memset(seen, 0, sizeof seen); total = 0;
  int top_share_ok = 1;
  for (int sh = 0; sh < 4; sh++) {
    sampler_t s;
    sampler_init(&s, &ds, 42, sh, 4, 0);
    sampler_skew(&s, 0.5);
    int cls[7] = {0}, top = 0;
    for (int k = 0; k < s.n_shard; k++) { seen[s.idx[k]]++; cls[ds.y[s.idx[k]]]++; }
    for (int c = 0; c < 7; c++) if (cls[c] > top) top = cls[c];
    top_share_ok &= top > s.n_shard / 4;     /* IID would give about 1/7 per class */
    total += s.n_shard;
    sampler_free(&s);
  }
  once = 1;
  for (int i = 0; i < 700; i++) once &= seen[i] == 1;
  EXPECT(total == 700);
  EXPECT_MSG(once, "skew 0.5: every example in exactly one shard");
  EXPECT_MSG(top_share_ok, "skew 0.5: each shard's most common class well above 1/7");
  sampler_t a, b;
  sampler_init(&a, &ds, 42, 2, 4, 0); sampler_init(&b, &ds, 42, 2, 4, 0);
  sampler_skew(&b, 0.0);
  EXPECT(a.n_shard == b.n_shard && !memcmp(a.idx, b.idx, sizeof(int) * 2 * (size_t)a.n_shard));
  sampler_free(&a); sampler_free(&b);
  free(ds.x); free(ds.y);
}

static void test_sampler_epochs_wrap(void) {
  dataset_t ds = index_ds(103);
  char mask[103];
  shard_mask(&ds, 5, 1, 4, mask);
  sampler_t s;
  sampler_init(&s, &ds, 5, 1, 4, 0);
  int ns = s.n_shard, got[3 * 26];
  EXPECT(ns == 26);
  EXPECT(draw(&s, 3 * ns, 7, got)); /* 7 does not divide 26: batches straddle epochs */
  EXPECT(s.epoch == 3 && s.pos == 0);
  for (int e = 0; e < 3; e++) {
    char hit[103] = {0};
    int perm = 1;
    for (int k = 0; k < ns; k++) {
      int i = got[e * ns + k];
      if (i < 0 || i >= 103 || !mask[i] || hit[i]) perm = 0; else hit[i] = 1;
    }
    EXPECT_MSG(perm, "epoch %d visits each shard example once", e);
  }
  EXPECT(memcmp(got, got + ns, sizeof(int) * ns) != 0); /* reshuffled each epoch */
  EXPECT(memcmp(got + ns, got + 2 * ns, sizeof(int) * ns) != 0);
  /* a batch larger than the shard */
  sampler_t t;
  sampler_init(&t, &ds, 5, 1, 4, 0);
  float x[2 * 65]; int y[65];
  sampler_next(&t, 65, x, y);
  EXPECT(t.epoch == 2 && t.pos == 13);
  int same = 1;
  for (int k = 0; k < 65; k++) same &= (int)x[2 * k] == got[k];
  EXPECT_MSG(same, "one batch of 65 equals the stream of batches of 7");
  sampler_next(&t, 0, x, y);
  EXPECT(t.epoch == 2 && t.pos == 13);
  sampler_free(&s); sampler_free(&t);
  free(ds.x); free(ds.y);
}

static void test_sampler_seed_and_seek(void) {
  dataset_t ds = index_ds(103);
  sampler_t a, b, c;
  int ga[300], gb[300], gc[300];
  sampler_init(&a, &ds, 9, 2, 4, 0);
  sampler_init(&b, &ds, 9, 2, 4, 0);
  sampler_init(&c, &ds, 10, 2, 4, 0);
  draw(&a, 300, 8, ga); draw(&b, 300, 5, gb); draw(&c, 300, 8, gc);
  EXPECT(!memcmp(ga, gb, sizeof ga));
  EXPECT(memcmp(ga, gc, sizeof ga) != 0);
  sampler_free(&b); sampler_free(&c);

  /* checkpoint mid-epoch and resume in a fresh sampler */
  sampler_t r;
  sampler_init(&r, &ds, 9, 2, 4, 0);
  draw(&r, 40, 5, gb);
  long ep = r.epoch; int pos = r.pos;
  EXPECT(ep == 1 && pos == 14);
  draw(&r, 200, 6, gb);
  sampler_t q;
  sampler_init(&q, &ds, 9, 2, 4, 0);
  sampler_seek(&q, ep, pos);
  draw(&q, 200, 7, gc);
  EXPECT(!memcmp(gb, gc, 200 * sizeof(int)));
  EXPECT(!memcmp(ga + 40, gc, 200 * sizeof(int)));
  /* seek far ahead, and back to the start */
  sampler_seek(&q, 7, 3);
  draw(&q, 10, 4, gc);
  sampler_t far;
  sampler_init(&far, &ds, 9, 2, 4, 0);
  static int long_run[7 * 26 + 13];
  draw(&far, 7 * 26 + 13, 64, long_run);
  EXPECT(!memcmp(long_run + 7 * 26 + 3, gc, 10 * sizeof(int)));
  sampler_seek(&q, 0, 0);
  draw(&q, 30, 9, gc);
  EXPECT(!memcmp(ga, gc, 30 * sizeof(int)));
  /* the end of an epoch is the start of the next */
  sampler_seek(&q, 2, 26);
  EXPECT(q.epoch == 3 && q.pos == 0);
  draw(&q, 5, 5, gc);
  EXPECT(!memcmp(ga + 3 * 26, gc, 5 * sizeof(int)));
  sampler_free(&a); sampler_free(&r); sampler_free(&q); sampler_free(&far);
  free(ds.x); free(ds.y);
}

static void test_sampler_replacement(void) {
  dataset_t ds = index_ds(103);
  char mask[103];
  shard_mask(&ds, 3, 2, 4, mask);
  sampler_t s;
  sampler_init(&s, &ds, 3, 2, 4, 1);
  static int got[2600];
  EXPECT(draw(&s, 2600, 13, got));
  int cnt[103] = {0}, outside = 0;
  for (int k = 0; k < 2600; k++) { if (!mask[got[k]]) outside++; cnt[got[k]]++; }
  EXPECT(outside == 0);
  int lo = 1 << 30, hi = 0;
  for (int i = 0; i < 103; i++) if (mask[i]) { lo = cnt[i] < lo ? cnt[i] : lo; hi = cnt[i] > hi ? cnt[i] : hi; }
  /* 2600 uniform draws over 26: each count ~ Binomial(2600, 1/26), mean 100, sd 9.8 */
  EXPECT_MSG(lo >= 60 && hi <= 140, "counts within 4 sd of uniform: min %d max %d", lo, hi);
  char hit[103] = {0};
  int repeat = 0;
  for (int k = 0; k < 26; k++) { repeat |= hit[got[k]]; hit[got[k]] = 1; }
  EXPECT_MSG(repeat, "with replacement, the first 26 draws repeat an example");
  EXPECT(s.epoch == 100 && s.pos == 0);
  /* the rng state is the checkpoint */
  rng_t saved = s.rng;
  int g1[20], g2[20];
  draw(&s, 20, 20, g1);
  s.rng = saved;
  draw(&s, 20, 3, g2);
  EXPECT(!memcmp(g1, g2, sizeof g1));
  sampler_free(&s);
  free(ds.x); free(ds.y);
}

static void child_empty_shard(const void *arg) {
  const dataset_t *ds = arg;
  sampler_t s;
  sampler_init(&s, ds, 1, 3, 4, 0);
}

static void test_sampler_empty_shard(void) {
  dataset_t ds = index_ds(3);
  char msg[1024];
  int st = run_child(child_empty_shard, &ds, msg, sizeof msg);
  EXPECT_MSG(st == 1 && strstr(msg, "empty"), "exit %d: %s", st, msg);
  free(ds.x); free(ds.y);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/pdl_test_data.XXXXXX");
  if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 3; }
  char cache[600];
  snprintf(cache, sizeof cache, "%s/cache", tmpdir);
  setenv("PDL_DATA_CACHE", cache, 1); /* the decompressed copies go to the temp dir */
  RUN(test_fashion_mnist_real);
  RUN(test_fashion_small_dirs);
  RUN(test_fashion_cache);
  RUN(test_load_first);
  RUN(test_fashion_broken);
  RUN(test_cifar_small);
  RUN(test_cifar_broken);
  RUN(test_bad_specs);
  RUN(test_synthetic_deterministic);
  RUN(test_synthetic_default_learnable);
  RUN(test_truncate);
  RUN(test_hold_out);
  RUN(test_sampler_shards);
  RUN(test_sampler_skew);
  RUN(test_sampler_epochs_wrap);
  RUN(test_sampler_seed_and_seek);
  RUN(test_sampler_replacement);
  RUN(test_sampler_empty_shard);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("  # could not remove %s\n", tmpdir);
  return harness_exit();
}
