/* data.c — data set loaders (Fashion-MNIST idx, CIFAR-10/100 binary, synthetic), the spec's
 * options and their dispatch (the downsampled and JPEG ImageNet loaders are data_npz.c and
 * data_jpeg.c), and sampler_next, the sampler's batch copy (a lazy set's batch comes through the
 * pipeline, data_pipe.c). It is the top of the data files: calls go down from it to the loaders, the
 * pipeline and dataset.c, whose are the per-channel normalisation of bytes and the rest of the
 * sharded batch sampler. See data.h for the interface.
 * Conventions:
 *  - Pixel bytes are scaled to [0, 1] (v / 255) before normalisation (dataset.c), so d->mean /
 *    d->std of the byte-based sets are in that scale (Fashion-MNIST: 0.2860 / 0.3530); zlib's
 *    inflate is most of a Fashion-MNIST load (~0.7 s on the 2-core test box).
 *  - No OpenMP here: loading is serial so it stays safe in a fork()ed child of a process that
 *    already ran parallel regions (libgomp's pool does not survive fork).
 *  - Every file problem ends in die() naming the path and the problem; every spec problem in
 *    die_usage() naming the spec or key. */
#include "core/data.h"
#include "core/data_pipe.h"
#include "util/util.h"
#include "util/env.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FMNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define IDX_MAGIC_IMAGES 2051u /* 0x00000803: unsigned byte, 3 dims */
#define IDX_MAGIC_LABELS 2049u /* 0x00000801: unsigned byte, 1 dim */
#define MAX_EXAMPLES (1 << 24)  /* a header claiming more is treated as corrupt */
#define CIFAR_PX 3072           /* 3*32*32 pixel bytes (CHW) after a record's label byte(s) */

/* rng streams (rng_seed's second argument) */
#define STREAM_SYN_PROTO 0x53594e50ull  /* synthetic class prototypes */
#define STREAM_SYN_TRAIN 0x53594e54ull  /* synthetic train examples */
#define STREAM_SYN_TEST 0x53594e45ull   /* synthetic test examples */

/* ---- Fashion-MNIST (idx files, gzip or plain) ---------------------------------------------- */

/* path: what messages name (the .gz, the plain file, or "COPY (decompressed copy of GZ)") */
typedef struct { gzFile f; char path[2400]; int gz_name; } idxfile_t;

static int path_exists(const char *p) {
  struct stat st;
  if (stat(p, &st) == 0) return 1;
  if (errno != ENOENT) die("%s: cannot stat: %s", p, strerror(errno));
  return 0;
}

/* ---- the decompressed copies of .gz idx files ------------------------------------------------
 * Decompressing Fashion-MNIST's 26 MB of gzip costs ~0.3 s of CPU per run, and make test starts
 * ~160 runs that load it. So a .gz idx file is read, after its first decompression, from a plain copy
 * in the cache folder: $PDL_DATA_CACHE, else $XDG_CACHE_HOME/pdlbench/data, else
 * ~/.cache/pdlbench/data (PDL_DATA_CACHE=off: never). The copy's name holds the .gz's device, inode,
 * size and mtime, and it is used only when its size is the gzip trailer's length (ISIZE); it is
 * written only from a stream that decompressed to its end with a good CRC, into a temporary file
 * renamed into place (concurrent runs are safe). A copy found in the cache is checked against the
 * .gz's own CRC-32 (its trailer) before it is used: a damaged copy (same length, changed bytes) is
 * said so on stderr, removed and decompressed again (~30 ms of CRC for Fashion-MNIST's 55 MB).
 * Errors in the data name the file actually read, the copy with the .gz it came from. Anything
 * amiss (no folder, a write error, a bad or truncated .gz) and the .gz itself is read, so its errors
 * are reported as before, naming it. */
static int cache_dir(char *out, size_t cap) {
  const char *e = env_get("PDL_DATA_CACHE");
  if (e && (!strcmp(e, "off") || !strcmp(e, "0"))) return 0;
  int n;
  if (e && *e) n = snprintf(out, cap, "%s", e);
  else if ((e = env_get("XDG_CACHE_HOME")) && *e) n = snprintf(out, cap, "%s/pdlbench/data", e);
  else if ((e = env_get("HOME")) && *e) n = snprintf(out, cap, "%s/.cache/pdlbench/data", e);
  else return 0;
  if (n < 0 || (size_t)n >= cap) return 0;
  for (char *p = out + 1; *p; p++) /* mkdir -p */
    if (*p == '/') { *p = 0; mkdir(out, 0755); *p = '/'; }
  mkdir(out, 0755);
  struct stat st;
  return stat(out, &st) == 0 && S_ISDIR(st.st_mode) && access(out, W_OK) == 0;
}
/* The .gz's trailer: CRC-32 of the uncompressed data and its length mod 2^32 (the last 8 bytes,
 * little-endian); the length is -1 if unreadable. */
static long long gz_trailer(const char *path, unsigned long *crc) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  unsigned char b[8];
  long long v = -1;
  if (fseek(f, -8, SEEK_END) == 0 && fread(b, 1, 8, f) == 8) {
    *crc = (unsigned long)b[0] | (unsigned long)b[1] << 8 | (unsigned long)b[2] << 16 | (unsigned long)b[3] << 24;
    v = (long long)b[4] | (long long)b[5] << 8 | (long long)b[6] << 16 | (long long)b[7] << 24;
  }
  fclose(f);
  return v;
}
/* CRC-32 of a whole file; 0 and *ok = 0 on a read error. */
static unsigned long file_crc32(const char *path, int *ok) {
  static unsigned char buf[1 << 18];
  unsigned long crc = crc32(0L, Z_NULL, 0);
  FILE *f = fopen(path, "rb");
  *ok = f != NULL;
  if (!f) return 0;
  size_t r;
  while ((r = fread(buf, 1, sizeof buf, f)) > 0) crc = crc32(crc, buf, (uInt)r);
  if (ferror(f)) *ok = 0;
  fclose(f);
  return crc;
}
/* Path of the plain copy of gz (stat st) in out, made now if absent; 0 when there is none to use. */
static int cached_copy(const char *gz, const struct stat *st, char *out, size_t cap) {
  char dir[900];
  if (!cache_dir(dir, sizeof dir)) return 0;
  const char *base = strrchr(gz, '/');
  base = base ? base + 1 : gz;
  int n = snprintf(out, cap, "%s/%.*s-%llu-%llu-%lld-%lld.%09ld", dir, (int)(strlen(base) - 3), base,
                   (unsigned long long)st->st_dev, (unsigned long long)st->st_ino, (long long)st->st_size,
                   (long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
  if (n < 0 || (size_t)n >= cap) return 0;
  unsigned long want_crc = 0;
  const long long isize = gz_trailer(gz, &want_crc);
  if (isize < 0) return 0;
  struct stat cs;
  if (stat(out, &cs) == 0) {
    if (!S_ISREG(cs.st_mode) || ((long long)cs.st_size & 0xffffffffLL) != isize) return 0;
    int ok;
    unsigned long crc = file_crc32(out, &ok);
    if (ok && crc == want_crc) return 1;
    fprintf(stderr, "pdl: %s: the decompressed copy of %s %s; removing it and decompressing %s again\n", out, gz,
            ok ? "does not match its CRC-32 (damaged)" : "cannot be read", gz);
    if (unlink(out) != 0) return 0;
  }
  char tmp[1200];
  if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", out) >= (int)sizeof tmp) return 0;
  int fd = mkstemp(tmp);
  if (fd < 0) return 0;
  gzFile g = gzopen(gz, "rb");
  int ok = g != NULL && !gzdirect(g);
  static char buf[1 << 18];
  long long total = 0;
  while (ok) {
    int r = gzread(g, buf, sizeof buf);
    if (r < 0) { ok = 0; break; }
    if (r == 0) break;
    if (write(fd, buf, (size_t)r) != r) { ok = 0; break; }
    total += r;
  }
  if (g && gzclose(g) != Z_OK) ok = 0;
  if (close(fd) != 0) ok = 0;
  if (ok && (total & 0xffffffffLL) == isize && rename(tmp, out) == 0) return 1;
  unlink(tmp);
  return 0;
}

/* Open DIR/NAME.gz (or its decompressed copy, above), or DIR/NAME when the .gz is absent. */
static void idx_open(idxfile_t *xf, const char *dir, const char *name) {
  char plain[1100];
  int len = snprintf(xf->path, sizeof xf->path, "%s/%s.gz", dir, name);
  if (len < 0 || (size_t)len >= 1100) die_usage("data directory path too long: %s", dir);
  snprintf(plain, sizeof plain, "%s/%s", dir, name);
  xf->gz_name = 1;
  if (!path_exists(xf->path)) {
    if (!path_exists(plain)) die("%s: missing (no uncompressed %s either)", xf->path, plain);
    memcpy(xf->path, plain, sizeof plain);
    xf->gz_name = 0;
  }
  struct stat st;
  if (stat(xf->path, &st) != 0) die("%s: cannot stat: %s", xf->path, strerror(errno));
  if (!S_ISREG(st.st_mode)) die("%s: not a regular file", xf->path);
  char copy[1200];
  if (xf->gz_name && cached_copy(xf->path, &st, copy, sizeof copy) && (xf->f = gzopen(copy, "rb"))) {
    xf->gz_name = 0; /* plain bytes: gzdirect is right for it */
    char gz[1100];
    memcpy(gz, xf->path, sizeof gz);
    snprintf(xf->path, sizeof xf->path, "%s (decompressed copy of %s)", copy, gz);
    gzbuffer(xf->f, 1 << 18);
    return;
  }
  xf->f = gzopen(xf->path, "rb");
  if (!xf->f) die("%s: cannot open: %s", xf->path, errno ? strerror(errno) : "out of memory");
  gzbuffer(xf->f, 1 << 18);
}

/* zlib's message without the "PATH: " prefix gzerror puts in front. */
static const char *gz_errmsg(idxfile_t *xf) {
  int err;
  const char *m = gzerror(xf->f, &err);
  if (err == Z_ERRNO) return strerror(errno);
  if (!m || !*m) return "no zlib error";
  size_t pl = strlen(xf->path);
  if (!strncmp(m, xf->path, pl) && !strncmp(m + pl, ": ", 2)) m += pl + 2;
  return m;
}

/* Read up to n bytes into buf (fewer only at the end of the data); a read error dies naming `what`. */
static size_t idx_read_some(idxfile_t *xf, uint8_t *buf, size_t n, const char *what) {
  size_t got = 0;
  while (got < n) {
    size_t chunk = n - got > (1u << 30) ? (1u << 30) : n - got;
    int r = gzread(xf->f, (char *)buf + got, (unsigned)chunk);
    if (r < 0) die("%s: read error in %s: %s", xf->path, what, gz_errmsg(xf));
    if (r == 0) break;
    got += (size_t)r;
  }
  return got;
}
/* After reading `what`: a .gz name with plain content, or fewer than the n bytes it needs, dies. */
static void idx_expect(idxfile_t *xf, size_t n, size_t got, const char *what) {
  if (got > 0 && xf->gz_name && gzdirect(xf->f))
    die("%s: not a gzip file (name ends in .gz but content is not gzip-compressed)", xf->path);
  if (got < n) {
    int err;
    gzerror(xf->f, &err);
    die("%s: truncated: %s needs %zu bytes, file ends after %zu (%s)", xf->path, what, n, got,
        err == Z_OK ? "end of file" : gz_errmsg(xf));
  }
}

/* Read exactly n bytes; `what` names the part for the message. */
static void idx_read(idxfile_t *xf, void *buf, size_t n, const char *what) {
  idx_expect(xf, n, idx_read_some(xf, buf, n, what), what);
}

/* Read exactly n bytes into a new buffer (xmalloc) that grows with what the file holds: it starts at
 * min(n, 64 MiB) and doubles as data arrives, so a header that claims more than the file holds
 * (up to MAX_EXAMPLES images, 13 GB) dies on truncation after allocating at most twice what was
 * there, never what the header claims (the loaders' fuzz target spent minutes of system time
 * mapping such claims). Copies instead of realloc: the fuzz harness tracks xmalloc's blocks. */
static uint8_t *idx_read_new(idxfile_t *xf, size_t n, const char *what) {
  const size_t first = (size_t)64 << 20;
  size_t cap = n < first ? n : first;
  uint8_t *buf = xmalloc(cap ? cap : 1);
  size_t got = idx_read_some(xf, buf, cap, what);
  while (got == cap && cap < n) {
    size_t ncap = cap > n / 2 ? n : 2 * cap;
    uint8_t *nb = xmalloc(ncap);
    memcpy(nb, buf, got);
    xfree(buf);
    buf = nb;
    cap = ncap;
    got += idx_read_some(xf, buf + got, cap - got, what);
  }
  idx_expect(xf, n, got, what);
  return buf;
}

/* Header words are big-endian uint32. */
static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* After the payload: no more data, and the gzip stream ended cleanly (CRC, length). */
static void idx_close(idxfile_t *xf, const char *what) {
  uint8_t extra;
  int r = gzread(xf->f, &extra, 1);
  if (r > 0) die("%s: trailing bytes after %s", xf->path, what);
  int err;
  gzerror(xf->f, &err);
  if (r < 0 || err != Z_OK) die("%s: corrupt or truncated after %s: %s", xf->path, what, gz_errmsg(xf));
  int rc = gzclose(xf->f);
  xf->f = NULL;
  if (rc != Z_OK && rc != Z_BUF_ERROR) die("%s: error closing (zlib code %d)", xf->path, rc);
}

/* One split: images [n][28][28] bytes and labels [n], into ds (floats filled later). */
static uint8_t *fmnist_read_split(const char *dir, const char *prefix, dataset_t *ds) {
  char name[64];
  idxfile_t xi, xl;
  uint8_t hdr[16];

  snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
  idx_open(&xi, dir, name);
  idx_read(&xi, hdr, 16, "the 16-byte header");
  uint32_t magic = be32(hdr), n = be32(hdr + 4), rows = be32(hdr + 8), cols = be32(hdr + 12);
  if (magic != IDX_MAGIC_IMAGES)
    die("%s: wrong magic number %u (0x%08x), expected %u for idx3-ubyte images", xi.path, magic, magic, IDX_MAGIC_IMAGES);
  if (rows != 28 || cols != 28) die("%s: images are %ux%u, expected 28x28", xi.path, rows, cols);
  if (n == 0 || n > MAX_EXAMPLES) die("%s: implausible image count %u in header", xi.path, n);
  size_t npx = (size_t)n * 28 * 28;
  uint8_t *px = idx_read_new(&xi, npx, "the pixel data"); /* [n][28][28] */
  idx_close(&xi, "the pixel data");

  snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
  idx_open(&xl, dir, name);
  idx_read(&xl, hdr, 8, "the 8-byte header");
  uint32_t lmagic = be32(hdr), ln = be32(hdr + 4);
  if (lmagic != IDX_MAGIC_LABELS)
    die("%s: wrong magic number %u (0x%08x), expected %u for idx1-ubyte labels", xl.path, lmagic, lmagic, IDX_MAGIC_LABELS);
  if (ln != n) die("%s: label count %u does not match image count %u in %s", xl.path, ln, n, xi.path);
  uint8_t *lab = idx_read_new(&xl, n, "the labels"); /* [n] */
  idx_close(&xl, "the labels");

  ds->n = (int)n; ds->c = 1; ds->h = 28; ds->w = 28; ds->classes = 10;
  ds->y = xmalloc(sizeof(int) * n);
  for (uint32_t i = 0; i < n; i++) {
    if (lab[i] >= 10) die("%s: label %u of example %u is out of range [0, 10)", xl.path, lab[i], i);
    ds->y[i] = lab[i];
  }
  xfree(lab);
  return px;
}

/* data_load_first's counts (dataset.c: data_first_*): only the first so many images become floats. */
static int first_n(int n, int lim) { return lim > 0 && lim < n ? lim : n; }

static void load_fmnist(data_t *d, const char *dir) {
  snprintf(d->name, sizeof d->name, "fashion-mnist");
  uint8_t *ptr = fmnist_read_split(dir, "train", &d->train); /* [ntrain][784] */
  uint8_t *pte = fmnist_read_split(dir, "t10k", &d->test);   /* [ntest][784] */
  data_byte_stats(ptr, d->train.n, 1, 784, d->mean, d->std);
  d->train.n = first_n(d->train.n, data_first_train());
  d->test.n = first_n(d->test.n, data_first_test());
  d->train.x = xmalloc(sizeof(float) * (size_t)d->train.n * 784);
  d->test.x = xmalloc(sizeof(float) * (size_t)d->test.n * 784);
  data_bytes_to_floats(d->train.x, ptr, d->train.n, 1, 784, d->mean, d->std);
  data_bytes_to_floats(d->test.x, pte, d->test.n, 1, 784, d->mean, d->std);
  xfree(ptr); xfree(pte);
}

/* ---- CIFAR-10 / CIFAR-100 binary ------------------------------------------------------------
 * Both from https://www.cs.toronto.edu/~kriz/cifar.html ("binary version"): CIFAR-10 records are
 * 1 label byte + 3072 pixel bytes (the red, green, blue 32x32 planes, row-major), five train files
 * and one test file; CIFAR-100 records are 1 coarse label byte (20 superclasses) + 1 fine label
 * byte (100 classes) + the same 3072 pixel bytes, in train.bin and test.bin. We train on the fine
 * labels, as the gossip paper's CIFAR-100 runs do; the coarse byte is checked against [0, 20). */
typedef struct { const char *what; int label_bytes, classes; } cifar_fmt_t;
static const cifar_fmt_t CIFAR10 = {"CIFAR-10", 1, 10}, CIFAR100 = {"CIFAR-100", 2, 100};

/* Read the given batch files into one buffer of records [nrec][label_bytes + 3072]; first_rec[f]
 * is the index of file f's first record. */
static uint8_t *cifar_read(const cifar_fmt_t *fm, const char *dir, const char *const *names, int nfiles,
                           long *nrec_out, char paths[][1100], long *first_rec) {
  const long rec = fm->label_bytes + CIFAR_PX;
  long sizes[8], total = 0;
  for (int f = 0; f < nfiles; f++) {
    int len = snprintf(paths[f], 1100, "%s/%s", dir, names[f]);
    if (len < 0 || len >= 1100) die_usage("data directory path too long: %s", dir);
    struct stat st;
    if (stat(paths[f], &st) != 0) die("%s: %s", paths[f], errno == ENOENT ? "missing" : strerror(errno));
    if (!S_ISREG(st.st_mode)) die("%s: not a regular file", paths[f]);
    if (st.st_size == 0 || st.st_size % rec != 0)
      die("%s: size %lld bytes is not a positive multiple of the %ld-byte %s record", paths[f],
          (long long)st.st_size, rec, fm->what);
    sizes[f] = (long)st.st_size;
    first_rec[f] = total / rec;
    total += sizes[f];
  }
  if (total / rec > MAX_EXAMPLES) die("%s: more than %d records", dir, MAX_EXAMPLES);
  uint8_t *buf = xmalloc((size_t)total); /* [nrec][rec] */
  long off = 0;
  for (int f = 0; f < nfiles; f++) {
    FILE *fp = fopen(paths[f], "rb");
    if (!fp) die("%s: cannot open: %s", paths[f], strerror(errno));
    size_t got = fread(buf + off, 1, (size_t)sizes[f], fp);
    if (got != (size_t)sizes[f])
      die("%s: read %zu of %ld bytes: %s", paths[f], got, sizes[f], ferror(fp) ? strerror(errno) : "file shrank");
    if (fgetc(fp) != EOF) die("%s: file grew while reading", paths[f]);
    fclose(fp);
    off += sizes[f];
  }
  *nrec_out = total / rec;
  return buf;
}

/* Split records into labels (validated; the last label byte is the class) and pixels [nrec][3][32][32]. */
static uint8_t *cifar_split(const cifar_fmt_t *fm, const uint8_t *rec, long nrec, dataset_t *ds, char paths[][1100],
                            const long *first_rec, int nfiles) {
  const int lb = fm->label_bytes;
  const size_t rl = (size_t)lb + CIFAR_PX;
  uint8_t *px = xmalloc((size_t)nrec * CIFAR_PX); /* [nrec][3][32][32] */
  ds->n = (int)nrec; ds->c = 3; ds->h = 32; ds->w = 32; ds->classes = fm->classes;
  ds->y = xmalloc(sizeof(int) * (size_t)nrec);
  for (long i = 0; i < nrec; i++) {
    const uint8_t *r = rec + (size_t)i * rl;
    const int bad_coarse = lb == 2 && r[0] >= 20, bad = r[lb - 1] >= fm->classes;
    if (bad_coarse || bad) {
      int f = nfiles - 1;
      while (f > 0 && first_rec[f] > i) f--;
      if (bad_coarse) die("%s: coarse label %u of record %ld is out of range [0, 20)", paths[f], r[0], i - first_rec[f]);
      die("%s: %slabel %u of record %ld is out of range [0, %d)", paths[f], lb == 2 ? "fine " : "", r[lb - 1],
          i - first_rec[f], fm->classes);
    }
    ds->y[i] = r[lb - 1];
    memcpy(px + (size_t)i * CIFAR_PX, r + lb, CIFAR_PX);
  }
  return px;
}

static void load_cifar(data_t *d, const char *dir, const cifar_fmt_t *fm, const char *const *train_names, int ntrain_files,
                       const char *test_name) {
  char paths[5][1100];
  long first[5], nrec;
  uint8_t *rec = cifar_read(fm, dir, train_names, ntrain_files, &nrec, paths, first);
  uint8_t *ptr = cifar_split(fm, rec, nrec, &d->train, paths, first, ntrain_files); /* [ntrain][3][32][32] */
  xfree(rec);

  rec = cifar_read(fm, dir, &test_name, 1, &nrec, paths, first);
  uint8_t *pte = cifar_split(fm, rec, nrec, &d->test, paths, first, 1);   /* [ntest][3][32][32] */
  xfree(rec);

  data_byte_stats(ptr, d->train.n, 3, 1024, d->mean, d->std);
  d->train.n = first_n(d->train.n, data_first_train());
  d->test.n = first_n(d->test.n, data_first_test());
  d->train.x = xmalloc(sizeof(float) * (size_t)d->train.n * 3072);
  d->test.x = xmalloc(sizeof(float) * (size_t)d->test.n * 3072);
  data_bytes_to_floats(d->train.x, ptr, d->train.n, 3, 1024, d->mean, d->std);
  data_bytes_to_floats(d->test.x, pte, d->test.n, 3, 1024, d->mean, d->std);
  xfree(ptr); xfree(pte);
}

static void load_cifar10(data_t *d, const char *dir) {
  static const char *const train_names[5] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                             "data_batch_4.bin", "data_batch_5.bin"};
  snprintf(d->name, sizeof d->name, "cifar10");
  load_cifar(d, dir, &CIFAR10, train_names, 5, "test_batch.bin");
}

static void load_cifar100(data_t *d, const char *dir) {
  static const char *const train_names[1] = {"train.bin"};
  snprintf(d->name, sizeof d->name, "cifar100");
  load_cifar(d, dir, &CIFAR100, train_names, 1, "test.bin");
}

/* ---- synthetic ----------------------------------------------------------------------------- */
/* Each class k has a fixed prototype P_k [c][h][w] with unit RMS: a smooth part (a few random
 * low-frequency cosines per channel) plus a white part, so both MLPs and conv nets can learn it.
 * An example of class y is amp * P_y + SYN_NOISE * N(0, 1) per pixel, amp ~ U(0.6, 1.4).
 * Labels are uniform over the classes. Everything is a function of the keys (seed included). */
#define SYN_NOISE 1.5

static void syn_prototypes(float *proto, int classes, int c, int h, int w, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed, STREAM_SYN_PROTO);
  size_t img = (size_t)c * h * w;
  for (int k = 0; k < classes; k++) {
    float *p = proto + (size_t)k * img; /* [c][h][w] */
    for (int ch = 0; ch < c; ch++) {
      double amp[4], fx[4], fy[4], ph[4];
      for (int m = 0; m < 4; m++) {
        amp[m] = rng_normal(&r);
        fx[m] = (double)rng_below(&r, 4);
        fy[m] = (double)rng_below(&r, 4);
        ph[m] = 6.283185307179586 * rng_uniform(&r);
      }
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          double v = 0;
          for (int m = 0; m < 4; m++)
            v += amp[m] * cos(6.283185307179586 * (fx[m] * i / h + fy[m] * j / w) + ph[m]);
          p[((size_t)ch * h + i) * w + j] = (float)(v / 2.0 + 0.7 * rng_normal(&r));
        }
    }
    double ss = 0;
    for (size_t q = 0; q < img; q++) ss += (double)p[q] * p[q];
    float inv = (float)(1.0 / sqrt(ss / (double)img + 1e-12));
    for (size_t q = 0; q < img; q++) p[q] *= inv;
  }
}

static void syn_fill(dataset_t *ds, const float *proto, uint64_t seed, uint64_t stream) {
  size_t img = dataset_image_floats(ds);
  rng_t r;
  rng_seed(&r, seed, stream);
  for (int i = 0; i < ds->n; i++) {
    int y = (int)rng_below(&r, (uint64_t)ds->classes);
    float amp = (float)(0.6 + 0.8 * rng_uniform(&r));
    const float *p = proto + (size_t)y * img;
    float *x = ds->x + (size_t)i * img;
    for (size_t q = 0; q < img; q++) x[q] = amp * p[q] + (float)SYN_NOISE * rng_normal(&r);
    ds->y[i] = y;
  }
}

static long syn_value(const char *key, const char *val, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(val, &end, 10);
  if (errno || end == val || *end)
    die_usage("synthetic data set: key %s: '%s' is not an integer", key, val);
  if (v < lo || v > hi) die_usage("synthetic data set: key %s: %ld is out of range [%ld, %ld]", key, v, lo, hi);
  return v;
}

static void load_synthetic(data_t *d, const char *opts, aug_t *aug) {
  long n = 1024, c = 1, h = 28, w = 28, classes = 10;
  uint64_t seed = 1;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", opts);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) die_usage("synthetic data set: '%s' is not key=value (keys: n, c, h, w, classes, seed, aug)", item);
    *eq = 0;
    const char *key = item, *val = eq + 1;
    if (!strcmp(key, "n")) n = syn_value(key, val, 1, MAX_EXAMPLES);
    else if (!strcmp(key, "c")) c = syn_value(key, val, 1, 3);
    else if (!strcmp(key, "h")) h = syn_value(key, val, 1, 1024);
    else if (!strcmp(key, "w")) w = syn_value(key, val, 1, 1024);
    else if (!strcmp(key, "classes")) classes = syn_value(key, val, 2, 100000);
    else if (!strcmp(key, "seed")) seed = (uint64_t)syn_value(key, val, 0, LONG_MAX);
    else if (!strcmp(key, "aug")) aug_parse(aug, val, d->spec);
    else die_usage("synthetic data set: unknown key '%s' (keys: n, c, h, w, classes, seed, aug)", key);
  }
  long ntest = n / 4 > 0 ? n / 4 : 1;
  double total = (double)(n + ntest) * (double)c * (double)h * (double)w;
  if (total > (double)(1L << 30))
    die_usage("synthetic data set: n=%ld with %ldx%ldx%ld images is too large (%.3g floats, limit 2^30)",
              n, c, h, w, total);
  snprintf(d->name, sizeof d->name, "synthetic");
  size_t img = (size_t)c * h * w;
  float *proto = xmalloc(sizeof(float) * (size_t)classes * img); /* [classes][c][h][w] */
  syn_prototypes(proto, (int)classes, (int)c, (int)h, (int)w, seed);
  dataset_t *sets[2] = {&d->train, &d->test};
  long counts[2] = {n, ntest};
  for (int s = 0; s < 2; s++) {
    dataset_t *ds = sets[s];
    ds->n = (int)counts[s]; ds->c = (int)c; ds->h = (int)h; ds->w = (int)w; ds->classes = (int)classes;
    ds->x = xmalloc(sizeof(float) * (size_t)ds->n * img);
    ds->y = xmalloc(sizeof(int) * (size_t)ds->n);
    syn_fill(ds, proto, seed, s == 0 ? STREAM_SYN_TRAIN : STREAM_SYN_TEST);
  }
  xfree(proto);

  /* per-channel statistics of the train set, applied to both sets */
  size_t hw = (size_t)h * w;
  for (int ch = 0; ch < c; ch++) {
    double s = 0, ss = 0;
    for (int i = 0; i < d->train.n; i++) {
      const float *p = d->train.x + ((size_t)i * c + ch) * hw;
      for (size_t k = 0; k < hw; k++) { s += p[k]; ss += (double)p[k] * p[k]; }
    }
    double cnt = (double)d->train.n * (double)hw, m = s / cnt, var = ss / cnt - m * m;
    d->mean[ch] = (float)m;
    d->std[ch] = (float)(var > 1e-12 ? sqrt(var) : 1.0);
  }
  for (int s = 0; s < 2; s++) {
    dataset_t *ds = sets[s];
    for (int i = 0; i < ds->n; i++)
      for (int ch = 0; ch < c; ch++) {
        float *p = ds->x + ((size_t)i * c + ch) * hw, m = d->mean[ch], inv = 1.0f / d->std[ch];
        for (size_t k = 0; k < hw; k++) p[k] = (p[k] - m) * inv;
      }
  }
}

/* ---- shape: images of a size, no pixels (issue 47) --------------------------------------------
 * For --device phantom, which computes nothing and draws no batch: the net's input shape and class
 * count (the paper's ImageNet-1000 at 224 x 224 without a byte of ImageNet), and a train-set size
 * that sets the epoch. The images are zeros that are never written (calloc: no memory is touched),
 * the labels i mod classes. pdl train refuses it on any other device. */
static void load_shape(data_t *d, const char *opts) {
  long n = 1024, ntest = 16, c = 3, h = 224, w = 224, classes = 1000;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", opts);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) die_usage("shape data set: '%s' is not key=value (keys: n, ntest, c, h, w, classes)", item);
    *eq = 0;
    const char *key = item, *val = eq + 1;
    if (!strcmp(key, "n")) n = syn_value(key, val, 1, MAX_EXAMPLES);
    else if (!strcmp(key, "ntest")) ntest = syn_value(key, val, 1, MAX_EXAMPLES);
    else if (!strcmp(key, "c")) c = syn_value(key, val, 1, 3);
    else if (!strcmp(key, "h")) h = syn_value(key, val, 1, 1024);
    else if (!strcmp(key, "w")) w = syn_value(key, val, 1, 1024);
    else if (!strcmp(key, "classes")) classes = syn_value(key, val, 2, 100000);
    else die_usage("shape data set: unknown key '%s' (keys: n, ntest, c, h, w, classes)", key);
  }
  if ((double)(n + ntest) * (double)(c * h * w) > (double)(1L << 30))   /* (address space only, but calloc may refuse it) */
    die_usage("shape data set: n=%ld + ntest=%ld images of %ldx%ldx%ld is over 2^30 floats", n, ntest, c, h, w);
  snprintf(d->name, sizeof d->name, "shape");
  dataset_t *sets[2] = {&d->train, &d->test};
  long counts[2] = {n, ntest};
  for (int s = 0; s < 2; s++) {
    dataset_t *ds = sets[s];
    ds->n = (int)counts[s]; ds->c = (int)c; ds->h = (int)h; ds->w = (int)w; ds->classes = (int)classes;
    ds->x = xcalloc((size_t)ds->n * (size_t)(c * h * w), sizeof(float));
    ds->y = xmalloc(sizeof(int) * (size_t)ds->n);
    for (int i = 0; i < ds->n; i++) ds->y[i] = (int)(i % classes);
  }
}

/* ---- spec dispatch ------------------------------------------------------------------------- */

#define SPEC_FORMS "fashion-mnist[:DIR], cifar10:DIR, cifar100:DIR, imagenet32:DIR, imagenet64:DIR, imagenet:DIR, synthetic[:k=v,...] or shape:k=v,... (no pixels: --device phantom)"

/* "DIR[,k=v...]" after a file-backed spec's "NAME:": dir gets DIR, o the options. `allowed`: the
 * keys this loader takes besides aug (e.g. "size classes"). */
static void spec_dir_opts(const char *spec, const char *rest, const char *allowed, char *dir, size_t cap,
                          data_opts_t *o) {
  memset(o, 0, sizeof *o);
  const char *comma = strchr(rest, ',');
  size_t len = comma ? (size_t)(comma - rest) : strlen(rest);
  if (len == 0) die_usage("data set spec '%s': empty directory", spec);
  if (len >= cap) die_usage("data set spec '%s': directory path too long", spec);
  memcpy(dir, rest, len); dir[len] = 0;
  if (!comma) return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", comma + 1);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1]) die_usage("data set spec '%s': option '%s' is not key=value (keys: aug%s%s)", spec, item, *allowed ? ", " : "", allowed);
    *eq = 0;
    const char *key = item, *val = eq + 1;
    int ok = !strcmp(key, "aug") || (!strcmp(key, "size") && strstr(allowed, "size")) ||
             (!strcmp(key, "classes") && strstr(allowed, "classes")) || (!strcmp(key, "decoders") && strstr(allowed, "decoders"));
    if (!ok) die_usage("data set spec '%s': unknown option '%s' (keys: aug%s%s)", spec, key, *allowed ? ", " : "", allowed);
    if (!strcmp(key, "aug")) aug_parse(&o->aug, val, spec);
    else if (!strcmp(key, "size")) {
      char *end; errno = 0;
      long v = strtol(val, &end, 10);
      if (errno || end == val || *end || v < 8 || v > 1024) die_usage("data set spec '%s': size=%s is not an integer in [8, 1024]", spec, val);
      o->size = (int)v;
    } else if (!strcmp(key, "decoders")) {
      char *end; errno = 0;
      long v = strtol(val, &end, 10);
      if (errno || end == val || *end || v < 0 || v > 256) die_usage("data set spec '%s': decoders=%s is not an integer in [0, 256]", spec, val);
      o->decoders = (int)v;
    } else if (!strcmp(key, "classes")) {
      if (strlen(val) >= sizeof o->classes) die_usage("data set spec '%s': classes file path too long", spec);
      snprintf(o->classes, sizeof o->classes, "%s", val);
    }
  }
}

void data_load(data_t *d, const char *spec) {
  memset(d, 0, sizeof *d);
  if (!spec || !*spec) die_usage("empty data set spec (expected " SPEC_FORMS ")");
  if (strlen(spec) >= sizeof d->spec) die_usage("data set spec longer than %zu characters: %.40s...", sizeof d->spec - 1, spec);
  snprintf(d->spec, sizeof d->spec, "%s", spec);
  for (int ch = 0; ch < 3; ch++) d->std[ch] = 1.0f;
  static const char *const needs_dir[] = {"cifar10", "cifar100", "imagenet32", "imagenet64", "imagenet"};
  for (size_t i = 0; i < sizeof needs_dir / sizeof *needs_dir; i++)
    if (!strcmp(spec, needs_dir[i])) die_usage("data set spec '%s' needs a directory: %s:DIR", spec, spec);
  char dir[1100];
  data_opts_t o;
  memset(&o, 0, sizeof o);
  if (!strcmp(spec, "fashion-mnist")) load_fmnist(d, FMNIST_DEFAULT_DIR);
  else if (!strncmp(spec, "fashion-mnist:", 14)) {
    spec_dir_opts(spec, spec + 14, "", dir, sizeof dir, &o);
    load_fmnist(d, dir);
  } else if (!strncmp(spec, "cifar10:", 8)) {
    spec_dir_opts(spec, spec + 8, "", dir, sizeof dir, &o);
    load_cifar10(d, dir);
  } else if (!strncmp(spec, "cifar100:", 9)) {
    spec_dir_opts(spec, spec + 9, "", dir, sizeof dir, &o);
    load_cifar100(d, dir);
  } else if (!strncmp(spec, "imagenet32:", 11) || !strncmp(spec, "imagenet64:", 11)) {
    spec_dir_opts(spec, spec + 11, "", dir, sizeof dir, &o);
    data_load_imagenet_ds(d, dir, spec[8] == '3' ? 32 : 64);
  } else if (!strncmp(spec, "imagenet:", 9)) {
    spec_dir_opts(spec, spec + 9, "size classes decoders", dir, sizeof dir, &o);
    data_load_imagenet_jpeg(d, dir, &o);
  } else if (!strcmp(spec, "synthetic")) load_synthetic(d, "", &o.aug);
  else if (!strncmp(spec, "synthetic:", 10)) load_synthetic(d, spec + 10, &o.aug);
  else if (!strncmp(spec, "shape:", 6)) load_shape(d, spec + 6);
  else die_usage("unknown data set spec '%s' (expected " SPEC_FORMS ")", spec);
  if (o.aug.on && d->train.c > 0) {
    if (o.aug.pad >= d->train.h || o.aug.pad >= d->train.w)
      die_usage("data set spec '%s': aug crop padding %d is not below the image size %dx%d", spec, o.aug.pad, d->train.h, d->train.w);
  }
  d->train.aug = o.aug;   /* the test set is never augmented */
}

void data_load_first(data_t *d, const char *spec, int ntrain, int ntest) {
  data_first_set(ntrain, ntest);
  data_load(d, spec);
  data_first_set(0, 0);
  data_truncate(d, ntrain, ntest); /* synthetic sets are made whole */
}

/* Keeps the storage; only the counts shrink. Normalisation stays that of the full train set. */
void data_truncate(data_t *d, int ntrain, int ntest) {
  if (ntrain > 0 && ntrain < d->train.n) d->train.n = ntrain;
  if (ntest > 0 && ntest < d->test.n) d->test.n = ntest;
}

void data_hold_out(data_t *d, int ntrain, int nval) {
  dataset_t *tr = &d->train, *te = &d->test;
  if (tr->lazy) die_usage("--val: data set %s is decoded lazily (decoders=); take the validation split from an in-memory set", d->spec);
  if (ntrain < 1 || nval < 1 || (long)ntrain + nval > tr->n)
    die_usage("--val %d: data set %s has %d training examples, fewer than --train-subset %d + --val %d", nval, d->name,
              tr->n, ntrain, nval);
  size_t per = dataset_image_floats(tr);
  xfree(te->x); xfree(te->y);
  *te = *tr;
  te->n = nval;
  memset(&te->aug, 0, sizeof te->aug);   /* the evaluation set is never augmented */
  te->x = xmalloc(sizeof(float) * per * (size_t)nval);
  te->y = xmalloc(sizeof(int) * (size_t)nval);
  memcpy(te->x, tr->x + per * (size_t)ntrain, sizeof(float) * per * (size_t)nval);
  memcpy(te->y, tr->y + ntrain, sizeof(int) * (size_t)nval);
  tr->n = ntrain;
}

void data_free(data_t *d) {
  lazy_close(d->train.lazy);
  xfree(d->train.x); xfree(d->train.y);
  xfree(d->test.x); xfree(d->test.y);
  memset(d, 0, sizeof *d);
}

/* ---- sampler_next (the rest of the sampler is dataset.c's) ---------------------------------- */

void sampler_next(sampler_t *s, int B, float *x, int *y) {
  const dataset_t *ds = s->ds;
  size_t img = dataset_image_floats(ds);
  if (ds->lazy) {   /* decoded (and augmented) by the lazy source's threads, prefetched where it guessed right */
    int *idx = xmalloc(sizeof(int) * (size_t)B);
    uint64_t *keys = xmalloc(sizeof(uint64_t) * (size_t)B);
    const long start = sampler_drawn(s);
    for (int b = 0; b < B; b++) {
      keys[b] = sampler_next_key(s);
      idx[b] = sampler_draw(s);
    }
    lazy_fetch(ds->lazy, start, idx, keys, B, x, y, s);
    xfree(idx); xfree(keys);
    return;
  }
  for (int b = 0; b < B; b++) {
    const uint64_t key = ds->aug.on ? sampler_next_key(s) : 0;
    int e = sampler_draw(s);
    memcpy(x + (size_t)b * img, ds->x + (size_t)e * img, sizeof(float) * img);
    y[b] = ds->y[e];
    if (ds->aug.on) aug_apply(&ds->aug, x + (size_t)b * img, ds->c, ds->h, ds->w, key);
  }
}
