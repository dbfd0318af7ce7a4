/* data_npz.c — the downsampled ImageNet of Chrabaszcz, Loshchilov and Hutter, "A Downsampled
 * Variant of ImageNet as an Alternative to the CIFAR datasets" (2017, arXiv:1707.08819), as
 * distributed on image-net.org (https://image-net.org/download-images, "Downsampled ImageNet"),
 * in its npz variant (Imagenet32_train_npz.zip, Imagenet32_val_npz.zip, Imagenet64_train_part1_npz.zip,
 * ...): DIR/train_data_batch_1.npz, _2, ... (all consecutive ones present, at least one) and
 * DIR/val_data.npz. The authors' other variant is Python pickles, which C cannot read sanely; the
 * npz variant holds the same arrays. Each npz (a zip of .npy files, numpy's np.savez: stored or, from
 * np.savez_compressed, deflated; zip64 sizes accepted) holds
 *   data.npy    uint8 [N][3 * S * S]: the red, green and blue S x S planes, row-major (as CIFAR)
 *   labels.npy  integers [N] in 1..1000 (1-based: we subtract 1)
 *   mean.npy    (the authors' mean image; unused: we normalise per channel like every set here)
 * as the authors' loader (github.com/PatrykChrabaszcz/Imagenet32_Scripts) reads them. The npy header
 * (format versions 1-3) must say a C-order array of a plain little-endian integer type; an object
 * array (pickled) is refused. Everything is read into memory, as for CIFAR (Imagenet64's train set
 * is 15.7 GB of bytes: use --train-subset, or the JPEG path of data_img.h). */
#include "core/dataset.h"
#include "util/util.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define NPZ_MAX_FILES 64

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* The uncompressed bytes of member `member` ("data.npy") of the zip at path, in a new buffer. */
static uint8_t *npz_member(const char *path, const char *member, size_t *len_out) {
  FILE *f = fopen(path, "rb");
  if (!f) die("%s: cannot open: %s", path, strerror(errno));
  for (;;) {
    uint8_t h[30];
    size_t got = fread(h, 1, 30, f);
    if (got >= 4 && (le32(h) == 0x02014b50u || le32(h) == 0x06054b50u))
      die("%s: no member %s (not a downsampled-ImageNet npz?)", path, member);
    if (got != 30) die("%s: truncated zip file (a local header is cut short, looking for %s)", path, member);
    if (le32(h) != 0x04034b50u) die("%s: not a zip (npz) file: bad local header signature 0x%08x", path, le32(h));
    const uint32_t flags = le16(h + 6), method = le16(h + 8), nlen = le16(h + 26), xlen = le16(h + 28);
    uint64_t csize = le32(h + 18), usize = le32(h + 22);
    char name[256];
    uint8_t extra[65536];
    if (nlen >= sizeof name || fread(name, 1, nlen, f) != nlen || fread(extra, 1, xlen, f) != xlen)
      die("%s: truncated zip file (a member's name or extra field is cut short)", path);
    name[nlen] = 0;
    for (uint32_t k = 0; k + 4 <= xlen;) {   /* zip64 extended information: the real sizes */
      const uint32_t id = le16(extra + k), sz = le16(extra + k + 2);
      if (id == 1) {
        uint32_t q = k + 4;
        if (usize == 0xffffffffu && q + 8 <= k + 4 + sz && q + 8 <= xlen) { usize = le64(extra + q); q += 8; }
        if (csize == 0xffffffffu && q + 8 <= k + 4 + sz && q + 8 <= xlen) csize = le64(extra + q);
      }
      k += 4 + sz;
    }
    if (flags & 8)
      die("%s: member %s was written as a stream (sizes after the data); re-save it with numpy's np.savez", path, name);
    if (strcmp(name, member)) {
      if (fseeko(f, (off_t)csize, SEEK_CUR) != 0) die("%s: truncated zip file (member %s)", path, name);
      continue;
    }
    const long here = ftell(f);   /* the member's data must be in the file before anything is allocated for it */
    struct stat st;
    if (here < 0 || fstat(fileno(f), &st) != 0) die("%s: cannot stat: %s", path, strerror(errno));
    if (csize > (uint64_t)(st.st_size - here))
      die("%s: truncated: member %s claims %llu bytes, the file holds %lld after its header", path, name,
          (unsigned long long)csize, (long long)(st.st_size - here));
    if (method == 8 && usize > csize * 1032 + 64)   /* deflate expands at most ~1032:1 */
      die("%s: member %s: %llu bytes cannot inflate to the %llu it claims", path, name, (unsigned long long)csize, (unsigned long long)usize);
    if (method != 0 && method != 8) die("%s: member %s uses zip compression method %u (only stored and deflate are read)", path, name, method);
    if (usize > ((uint64_t)1 << 40) || (method == 0 && csize != usize)) die("%s: member %s: implausible sizes %llu / %llu", path, name,
                                                                             (unsigned long long)csize, (unsigned long long)usize);
    uint8_t *out = xmalloc(usize ? (size_t)usize : 1);
    if (method == 0) {
      if (fread(out, 1, (size_t)usize, f) != usize) die("%s: truncated: member %s holds fewer than its %llu bytes", path, name, (unsigned long long)usize);
    } else {
      z_stream z; memset(&z, 0, sizeof z);
      if (inflateInit2(&z, -15) != Z_OK) die("%s: zlib inflateInit2 failed", path);
      static uint8_t in[1 << 18];
      uint64_t left = csize;
      size_t produced = 0;
      int zr = Z_OK;
      while (zr != Z_STREAM_END) {
        if (z.avail_in == 0) {
          size_t want = left < sizeof in ? (size_t)left : sizeof in;
          if (want == 0) break;
          size_t r = fread(in, 1, want, f);
          if (r != want) die("%s: truncated: member %s is cut short", path, name);
          left -= r; z.next_in = in; z.avail_in = (uInt)r;
        }
        size_t room = (size_t)usize - produced;
        z.next_out = out + produced;
        z.avail_out = (uInt)(room > (1u << 30) ? (1u << 30) : room);
        uInt before = z.avail_out;
        zr = inflate(&z, Z_NO_FLUSH);
        produced += before - z.avail_out;
        if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && z.avail_in == 0))
          die("%s: member %s: corrupt deflate data (%s)", path, name, z.msg ? z.msg : "zlib error");
        if (zr == Z_BUF_ERROR && room == 0) break;
      }
      inflateEnd(&z);
      if (zr != Z_STREAM_END || produced != usize)
        die("%s: member %s: inflated %zu of its %llu bytes (truncated or corrupt)", path, name, produced, (unsigned long long)usize);
    }
    fclose(f);
    *len_out = (size_t)usize;
    return out;
  }
}

/* A parsed .npy: its element type and shape; data points into the buffer. */
typedef struct { char descr[16]; int ndim; long shape[4]; const uint8_t *data; size_t nbytes; int isz; } npy_t;

static void npy_parse(npy_t *a, const uint8_t *buf, size_t len, const char *path, const char *member) {
  memset(a, 0, sizeof a[0]);
  if (len < 10 || memcmp(buf, "\x93NUMPY", 6)) die("%s: member %s is not a .npy array (no \\x93NUMPY magic)", path, member);
  const int major = buf[6];
  size_t hl, off;
  if (major == 1) { hl = le16(buf + 8); off = 10; }
  else if (major == 2 || major == 3) { if (len < 12) die("%s: %s: truncated npy header", path, member); hl = le32(buf + 8); off = 12; }
  else die("%s: member %s: npy format version %d is not 1, 2 or 3", path, member, major);
  if (off + hl > len || hl > 65536) die("%s: member %s: npy header of %zu bytes runs past the data", path, member, hl);
  char h[65537];
  memcpy(h, buf + off, hl); h[hl] = 0;
  const char *d = strstr(h, "'descr':"), *fo = strstr(h, "'fortran_order':"), *sh = strstr(h, "'shape':");
  if (!d || !fo || !sh) die("%s: member %s: npy header lacks descr, fortran_order or shape: %.80s", path, member, h);
  d = strchr(d + 8, '\'');
  const char *de = d ? strchr(d + 1, '\'') : NULL;
  if (!de || de - d - 1 >= (long)sizeof a->descr) die("%s: member %s: unreadable npy descr", path, member);
  memcpy(a->descr, d + 1, (size_t)(de - d - 1));
  if (strncmp(fo + 16 + strspn(fo + 16, " "), "False", 5)) die("%s: member %s: a Fortran-order array (C order expected)", path, member);
  const char *p = strchr(sh, '(');
  if (!p) die("%s: member %s: unreadable npy shape", path, member);
  p++;
  while (*p && *p != ')') {
    p += strspn(p, " ,");
    if (*p == ')') break;
    char *e;
    long v = strtol(p, &e, 10);
    if (e == p || v < 0 || a->ndim == 4) die("%s: member %s: unreadable npy shape", path, member);
    a->shape[a->ndim++] = v;
    p = e;
  }
  static const struct { const char *d; int sz; } ok[] = {{"|u1", 1}, {"<u1", 1}, {"|i1", 1}, {"<i2", 2}, {"<u2", 2},
                                                          {"<i4", 4}, {"<u4", 4}, {"<i8", 8}, {"<u8", 8}};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) if (!strcmp(a->descr, ok[i].d)) a->isz = ok[i].sz;
  if (!a->isz) die("%s: member %s: element type '%s' is not a little-endian integer (an object array? re-save with plain arrays)", path, member, a->descr);
  size_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= (size_t)a->shape[i];
  a->data = buf + off + hl;
  a->nbytes = n * (size_t)a->isz;
  if (a->nbytes != len - off - hl)
    die("%s: member %s: %zu data bytes, but its shape and type say %zu (truncated or wrong shape)", path, member, len - off - hl, a->nbytes);
}

static long npy_int(const npy_t *a, size_t i) {
  const uint8_t *p = a->data + i * (size_t)a->isz;
  switch (a->descr[1] == 'i' ? -a->isz : a->isz) {
  case 1: return p[0];
  case -1: return (int8_t)p[0];
  case 2: return (long)le16(p);
  case -2: return (int16_t)le16(p);
  case 4: return (long)le32(p);
  case -4: return (int32_t)le32(p);
  case 8: return le64(p) > ((uint64_t)1 << 40) ? -1 : (long)le64(p);
  default: return (long)(int64_t)le64(p);
  }
}

/* Read the npz files into pixel bytes [n][3][S][S] and labels (0-based) of ds. */
static uint8_t *ds_read(char paths[][1100], int nfiles, int side, dataset_t *ds) {
  const size_t per = (size_t)3 * side * side;
  uint8_t *px = NULL;
  long total = 0;
  ds->c = 3; ds->h = side; ds->w = side; ds->classes = 1000;
  for (int f = 0; f < nfiles; f++) {
    size_t dl, ll;
    uint8_t *db = npz_member(paths[f], "data.npy", &dl);
    npy_t da; npy_parse(&da, db, dl, paths[f], "data.npy");
    if (strcmp(da.descr, "|u1") && strcmp(da.descr, "<u1")) die("%s: data.npy has element type '%s', expected uint8 (|u1)", paths[f], da.descr);
    if (da.ndim != 2 || (size_t)da.shape[1] != per)
      die("%s: data.npy has shape (%ld%s%ld), expected (N, %zu) for %dx%d images", paths[f], da.shape[0], da.ndim > 1 ? ", " : "",
          da.ndim > 1 ? da.shape[1] : 0L, per, side, side);
    uint8_t *lb = npz_member(paths[f], "labels.npy", &ll);
    npy_t la; npy_parse(&la, lb, ll, paths[f], "labels.npy");
    if (la.ndim != 1 || la.shape[0] != da.shape[0])
      die("%s: labels.npy holds %ld labels for %ld images", paths[f], la.ndim == 1 ? la.shape[0] : -1L, da.shape[0]);
    const long n = da.shape[0];
    if (n == 0) die("%s: no images", paths[f]);
    if (total + n > (1L << 24)) die("%s: more than %d images in all", paths[f], 1 << 24);
    px = realloc(px, (size_t)(total + n) * per);
    ds->y = realloc(ds->y, sizeof(int) * (size_t)(total + n));
    if (!px || !ds->y) die("%s: out of memory for %ld images", paths[f], total + n);
    memcpy(px + (size_t)total * per, da.data, (size_t)n * per);
    for (long i = 0; i < n; i++) {
      long v = npy_int(&la, (size_t)i);
      if (v < 1 || v > 1000) die("%s: label %ld of image %ld is out of range [1, 1000] (the format's labels are 1-based)", paths[f], v, i);
      ds->y[total + i] = (int)v - 1;
    }
    total += n;
    xfree(db); xfree(lb);
  }
  ds->n = (int)total;
  int *y = xmalloc(sizeof(int) * (size_t)total);   /* into the allocator data_free expects */
  memcpy(y, ds->y, sizeof(int) * (size_t)total);
  free(ds->y);
  ds->y = y;
  return px;
}

void data_load_imagenet_ds(data_t *d, const char *dir, int side) {
  snprintf(d->name, sizeof d->name, "imagenet%d", side);
  static char paths[NPZ_MAX_FILES][1100];
  int nf = 0;
  for (; nf < NPZ_MAX_FILES; nf++) {
    int len = snprintf(paths[nf], sizeof paths[nf], "%s/train_data_batch_%d.npz", dir, nf + 1);
    if (len < 0 || len >= (int)sizeof paths[nf]) die_usage("data directory path too long: %s", dir);
    struct stat st;
    if (stat(paths[nf], &st) != 0) {
      if (errno != ENOENT) die("%s: cannot stat: %s", paths[nf], strerror(errno));
      break;
    }
  }
  if (nf == 0) die("%s/train_data_batch_1.npz: missing (the downsampled ImageNet npz files: train_data_batch_1.npz, ..., val_data.npz)", dir);
  uint8_t *ptr = ds_read(paths, nf, side, &d->train);
  snprintf(paths[0], sizeof paths[0], "%s/val_data.npz", dir);
  uint8_t *pte = ds_read(paths, 1, side, &d->test);
  const long hw = (long)side * side, per = 3 * hw;
  data_byte_stats(ptr, d->train.n, 3, hw, d->mean, d->std);
  const int ft = data_first_train(), fe = data_first_test();
  if (ft > 0 && ft < d->train.n) d->train.n = ft;
  if (fe > 0 && fe < d->test.n) d->test.n = fe;
  d->train.x = xmalloc(sizeof(float) * (size_t)d->train.n * per);
  d->test.x = xmalloc(sizeof(float) * (size_t)d->test.n * per);
  data_bytes_to_floats(d->train.x, ptr, d->train.n, 3, hw, d->mean, d->std);
  data_bytes_to_floats(d->test.x, pte, d->test.n, 3, hw, d->mean, d->std);
  free(ptr); free(pte);
}
