/* data_jpeg.c — ImageNet from a JPEG directory tree (data_img.h): the folder scan, the decoder
 * (libjpeg-turbo's libjpeg API, jpeglib.h from libjpeg62-turbo-dev), and the eager loader behind
 * `--data imagenet:DIR[,size=N][,classes=FILE]`, which decodes the whole (or --train-subset's first
 * part of the) set into memory on a few threads. The lazy, prefetched path is data_pipe.c, which
 * reads the folder through the image source imgfolder_src gives it (calls go one way: here -> there).
 * Errors: libjpeg's error_exit would exit() without naming the file, so it longjmps back here and
 * die() names the file and libjpeg's message; a premature end of the data (a truncated file, which
 * libjpeg only warns about and pads with grey) is an error too; libjpeg's other warnings (e.g.
 * "extraneous bytes before marker", which a few real ImageNet files raise) are ignored. */
#include "core/data_img.h"
#include "core/dataset.h"
#include "util/util.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jpeglib.h>
#include <jerror.h>

const float IMAGENET_MEAN[3] = {0.485f, 0.456f, 0.406f}, IMAGENET_STD[3] = {0.229f, 0.224f, 0.225f};
#define STREAM_IMG_ORDER 0x494d474full   /* the fixed shuffle of a folder's list */
#define MAX_CLASSES 100000

struct imgfolder {
  char root[1100];
  int n, classes, side;
  char **path;   /* [n] */
  int *label;    /* [n] */
  char **cname;  /* [classes] the class folders' names, by label */
};

int imgfolder_count(const imgfolder_t *f) { return f->n; }
int imgfolder_classes(const imgfolder_t *f) { return f->classes; }
int imgfolder_side(const imgfolder_t *f) { return f->side; }
int imgfolder_label(const imgfolder_t *f, int i) { return f->label[i]; }
const char *imgfolder_path(const imgfolder_t *f, int i) { return f->path[i]; }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_jpeg_name(const char *s) {
  const char *dot = strrchr(s, '.');
  return dot && (!strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".jpg"));
}

/* Names in dir (sorted) that are folders (want_dir) or JPEG files. */
static char **list_dir(const char *dir, int want_dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) die("%s: cannot open folder: %s", dir, strerror(errno));
  int n = 0, cap = 64;
  char **v = malloc(sizeof(char *) * (size_t)cap);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[2400];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) die("%s/%s: path too long", dir, e->d_name);
    struct stat st;
    if (stat(p, &st) != 0) continue;
    if (want_dir ? !S_ISDIR(st.st_mode) : !(S_ISREG(st.st_mode) && is_jpeg_name(e->d_name))) continue;
    if (n == cap) { cap *= 2; v = realloc(v, sizeof(char *) * (size_t)cap); }
    if (!v) die("%s: out of memory listing it", dir);
    v[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(v, (size_t)n, sizeof *v, cmp_str);
  *count = n;
  return v;
}

/* The class names of a classes file, in its order. */
static char **read_classes(const char *file, int *count) {
  FILE *fp = fopen(file, "r");
  if (!fp) die("%s: cannot open the classes file: %s", file, strerror(errno));
  int n = 0, cap = 64, lineno = 0;
  char **v = malloc(sizeof(char *) * (size_t)cap);
  char line[1024];
  while (fgets(line, sizeof line, fp)) {
    lineno++;
    char *s = line;
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    if (!*s || *s == '#') continue;
    if (strchr(s, '/') || !strcmp(s, "..")) die("%s: line %d: class '%s' is not a folder name", file, lineno, s);
    for (int k = 0; k < n; k++) if (!strcmp(v[k], s)) die("%s: line %d: class '%s' is listed twice", file, lineno, s);
    if (n == cap) { cap *= 2; v = realloc(v, sizeof(char *) * (size_t)cap); }
    if (!v || n >= MAX_CLASSES) die("%s: too many classes", file);
    v[n++] = strdup(s);
  }
  fclose(fp);
  if (n < 2) die("%s: lists %d class%s; at least 2 are needed", file, n, n == 1 ? "" : "es");
  *count = n;
  return v;
}

imgfolder_t *imgfolder_open(const char *dir, const char *split, const char *classes_file, int side) {
  imgfolder_t *f = calloc(1, sizeof *f);
  if (!f) die("out of memory");
  int len = snprintf(f->root, sizeof f->root, "%s/%s", dir, split);
  if (len < 0 || len >= (int)sizeof f->root) die_usage("data directory path too long: %s", dir);
  struct stat st;
  if (stat(f->root, &st) != 0 || !S_ISDIR(st.st_mode))
    die("%s: missing or not a folder (expected the ImageFolder layout %s/train/<class>/*.JPEG, %s/val/<class>/*.JPEG)", f->root, dir, dir);
  f->side = side;
  int nc;
  char **cls = classes_file && *classes_file ? read_classes(classes_file, &nc) : list_dir(f->root, 1, &nc);
  if (nc < 2) die("%s: %d class folder%s; at least 2 are needed", f->root, nc, nc == 1 ? "" : "s");
  f->classes = nc;
  int cap = 1024;
  f->path = malloc(sizeof(char *) * (size_t)cap);
  f->label = malloc(sizeof(int) * (size_t)cap);
  for (int c = 0; c < nc; c++) {
    char cdir[2400];
    if (snprintf(cdir, sizeof cdir, "%s/%s", f->root, cls[c]) >= (int)sizeof cdir) die("%s/%s: path too long", f->root, cls[c]);
    if (stat(cdir, &st) != 0 || !S_ISDIR(st.st_mode))
      die("%s: missing (class '%s'%s%s)", cdir, cls[c], classes_file && *classes_file ? " of the classes file " : "",
          classes_file && *classes_file ? classes_file : "");
    int nf;
    char **files = list_dir(cdir, 0, &nf);
    if (nf == 0) die("%s: no JPEG files (*.JPEG, *.jpeg, *.jpg) in class folder", cdir);
    for (int k = 0; k < nf; k++) {
      if (f->n == cap) {
        cap *= 2;
        f->path = realloc(f->path, sizeof(char *) * (size_t)cap);
        f->label = realloc(f->label, sizeof(int) * (size_t)cap);
      }
      if (!f->path || !f->label || f->n >= (1 << 24)) die("%s: too many images", f->root);
      char p[2400];
      if (snprintf(p, sizeof p, "%s/%s", cdir, files[k]) >= (int)sizeof p) die("%s/%s: path too long", cdir, files[k]);
      f->path[f->n] = strdup(p);
      f->label[f->n] = c;
      f->n++;
      free(files[k]);
    }
    free(files);
  }
  f->cname = cls;
  /* a fixed shuffle: permute (path, label) pairs together */
  int *perm = xmalloc(sizeof(int) * (size_t)f->n);
  for (int i = 0; i < f->n; i++) perm[i] = i;
  rng_t r;
  rng_seed(&r, 1, STREAM_IMG_ORDER);
  rng_shuffle(&r, perm, f->n);
  char **p2 = malloc(sizeof(char *) * (size_t)f->n);
  int *l2 = malloc(sizeof(int) * (size_t)f->n);
  if (!p2 || !l2) die("%s: out of memory", f->root);
  for (int i = 0; i < f->n; i++) { p2[i] = f->path[perm[i]]; l2[i] = f->label[perm[i]]; }
  free(f->path); free(f->label); xfree(perm);
  f->path = p2; f->label = l2;
  return f;
}

void imgfolder_close(imgfolder_t *f) {
  if (!f) return;
  for (int i = 0; i < f->n; i++) free(f->path[i]);
  for (int c = 0; c < f->classes; c++) free(f->cname[c]);
  free(f->cname); free(f->path); free(f->label); free(f);
}

/* ---- decoding ------------------------------------------------------------------------------- */
typedef struct { struct jpeg_error_mgr pub; jmp_buf jb; char msg[JMSG_LENGTH_MAX]; } jerr_t;

static void jerr_exit(j_common_ptr ci) {
  jerr_t *e = (jerr_t *)ci->err;
  ci->err->format_message(ci, e->msg);
  longjmp(e->jb, 1);
}
static void jerr_emit(j_common_ptr ci, int level) {
  if (level < 0 && ci->err->msg_code == JWRN_JPEG_EOF) {   /* truncated: libjpeg would pad with grey */
    jerr_t *e = (jerr_t *)ci->err;
    snprintf(e->msg, sizeof e->msg, "the data end early (truncated file)");
    longjmp(e->jb, 1);
  }
}

void imgfolder_decode(const imgfolder_t *f, int i, uint8_t *px) {
  const char *path = f->path[i];
  const int S = f->side;
  FILE *fp = fopen(path, "rb");
  if (!fp) die("%s: cannot open: %s", path, strerror(errno));
  fseek(fp, 0, SEEK_END);
  long sz = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  if (sz <= 0 || sz > (1L << 30)) die("%s: %s", path, sz == 0 ? "empty file" : "unreadable size");
  unsigned char *buf = malloc((size_t)sz);
  if (!buf) die("%s: out of memory reading it", path);
  if (fread(buf, 1, (size_t)sz, fp) != (size_t)sz) die("%s: read failed: %s", path, strerror(errno));
  fclose(fp);

  struct jpeg_decompress_struct ci;
  jerr_t je;
  unsigned char *rgb = NULL;
  ci.err = jpeg_std_error(&je.pub);
  je.pub.error_exit = jerr_exit;
  je.pub.emit_message = jerr_emit;
  if (setjmp(je.jb)) {
    jpeg_destroy_decompress(&ci);
    die("%s: not a readable JPEG: %s", path, je.msg);
  }
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, buf, (unsigned long)sz);
  jpeg_read_header(&ci, TRUE);
  if ((uint64_t)ci.image_width * ci.image_height > ((uint64_t)1 << 28))   /* a progressive decode holds every coefficient */
    die("%s: %ux%u pixels: over the %u-megapixel limit of this loader", path, ci.image_width, ci.image_height, 1u << 8);
  const int cmyk = ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK;
  ci.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  const unsigned mn = ci.image_width < ci.image_height ? ci.image_width : ci.image_height;
  ci.scale_num = 1;
  ci.scale_denom = 1;
  for (unsigned d = 8; d > 1; d /= 2)   /* DCT scaling: the smallest decode whose shorter side is still >= S */
    if (mn / d >= (unsigned)S) { ci.scale_denom = d; break; }
  ci.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&ci);
  const int W = (int)ci.output_width, H = (int)ci.output_height, nc = ci.output_components;
  if (W < 1 || H < 1 || (nc != 3 && nc != 4)) die("%s: decoded to %dx%d with %d components", path, W, H, nc);
  rgb = malloc((size_t)W * H * 3);
  unsigned char *row = malloc((size_t)W * nc);
  if (!rgb || !row) die("%s: out of memory decoding %dx%d", path, W, H);
  while (ci.output_scanline < ci.output_height) {
    const int y = (int)ci.output_scanline;
    JSAMPROW rp = row;
    jpeg_read_scanlines(&ci, &rp, 1);
    unsigned char *o = rgb + (size_t)y * W * 3;
    if (!cmyk) memcpy(o, row, (size_t)W * 3);
    else   /* Adobe CMYK (stored inverted): R = C K / 255 etc. */
      for (int x = 0; x < W; x++) {
        const unsigned k = row[x * 4 + 3];
        for (int c = 0; c < 3; c++) o[x * 3 + c] = (unsigned char)((row[x * 4 + c] * k + 127) / 255);
      }
  }
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  free(row); free(buf);

  /* shorter side -> S (bilinear), centre S x S crop; the columns' taps computed once */
  const double scale = (double)S / (W < H ? W : H);
  const double ox = (W * scale - S) / 2, oy = (H * scale - S) / 2;
  int *cx = xmalloc(sizeof(int) * 2 * (size_t)S);
  float *cf = xmalloc(sizeof(float) * (size_t)S);
  for (int j = 0; j < S; j++) {
    double sx = (j + ox + 0.5) / scale - 0.5;
    if (sx < 0) sx = 0;
    if (sx > W - 1) sx = W - 1;
    cx[2 * j] = (int)sx * 3;
    cx[2 * j + 1] = ((int)sx + 1 < W ? (int)sx + 1 : (int)sx) * 3;
    cf[j] = (float)(sx - (int)sx);
  }
  for (int i2 = 0; i2 < S; i2++) {
    double sy = (i2 + oy + 0.5) / scale - 0.5;
    if (sy < 0) sy = 0;
    if (sy > H - 1) sy = H - 1;
    const int y0 = (int)sy, y1 = y0 + 1 < H ? y0 + 1 : y0;
    const float fy = (float)(sy - y0);
    const unsigned char *r0 = rgb + (size_t)y0 * W * 3, *r1 = rgb + (size_t)y1 * W * 3;
    for (int j = 0; j < S; j++) {
      const int a0 = cx[2 * j], a1 = cx[2 * j + 1];
      const float fx = cf[j];
      for (int c = 0; c < 3; c++) {
        const float a = r0[a0 + c] + (r0[a1 + c] - r0[a0 + c]) * fx, b = r1[a0 + c] + (r1[a1 + c] - r1[a0 + c]) * fx;
        px[((size_t)c * S + i2) * S + j] = (uint8_t)(a + (b - a) * fy + 0.5f);
      }
    }
  }
  xfree(cx); xfree(cf);
  free(rgb);
}

void imgfolder_normalise(const uint8_t *px, int side, float *x) {
  const size_t hw = (size_t)side * side;
  for (int c = 0; c < 3; c++) {
    float lut[256];
    for (int v = 0; v < 256; v++) lut[v] = (float)((v / 255.0 - IMAGENET_MEAN[c]) / IMAGENET_STD[c]);
    for (size_t k = 0; k < hw; k++) x[c * hw + k] = lut[px[c * hw + k]];
  }
}

/* ---- the folder as the pipeline's image source (data_pipe.h) --------------------------------- */
static int src_label(const void *f, int i) { return imgfolder_label(f, i); }
static void src_decode(const void *f, int i, uint8_t *px) { imgfolder_decode(f, i, px); }
static void src_close(void *f) { imgfolder_close(f); }

img_src_t imgfolder_src(imgfolder_t *f) {
  return (img_src_t){.ctx = f, .n = f->n, .side = f->side, .label = src_label, .decode = src_decode,
                     .normalise = imgfolder_normalise, .close = src_close};
}

/* ---- the eager loader ----------------------------------------------------------------------- */
typedef struct { const imgfolder_t *f; float *x; int n, next; pthread_mutex_t mu; } eager_t;

static void *eager_worker(void *arg) {
  eager_t *E = arg;
  const int S = E->f->side;
  uint8_t *px = xmalloc((size_t)3 * S * S);
  for (;;) {
    pthread_mutex_lock(&E->mu);
    const int i = E->next++;
    pthread_mutex_unlock(&E->mu);
    if (i >= E->n) break;
    imgfolder_decode(E->f, i, px);
    imgfolder_normalise(px, S, E->x + (size_t)i * 3 * S * S);
  }
  xfree(px);
  return NULL;
}

static void eager_fill(dataset_t *ds, const imgfolder_t *f, int n, int threads) {
  const int S = f->side;
  ds->n = n; ds->c = 3; ds->h = S; ds->w = S; ds->classes = f->classes;
  ds->x = xmalloc(sizeof(float) * (size_t)n * 3 * S * S);
  ds->y = xmalloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) ds->y[i] = f->label[i];
  eager_t E = {.f = f, .x = ds->x, .n = n, .next = 0};
  pthread_mutex_init(&E.mu, NULL);
  pthread_t th[16];
  int started = 0;
  for (int t = 1; t < threads; t++)
    if (pthread_create(&th[started], NULL, eager_worker, &E) == 0) started++;
  eager_worker(&E);
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  pthread_mutex_destroy(&E.mu);
}

void data_load_imagenet_jpeg(data_t *d, const char *dir, const data_opts_t *o) {
  snprintf(d->name, sizeof d->name, "imagenet");
  const int S = o->size > 0 ? o->size : 224;
  imgfolder_t *tr = imgfolder_open(dir, "train", o->classes, S), *va = imgfolder_open(dir, "val", o->classes, S);
  if (imgfolder_classes(va) != imgfolder_classes(tr))
    die("%s/val: %d class folders, but %s/train has %d (the same classes are needed)", dir, imgfolder_classes(va), dir, imgfolder_classes(tr));
  for (int c = 0; c < tr->classes; c++)   /* the same names, so that a label means the same class in both */
    if (strcmp(tr->cname[c], va->cname[c]))
      die("%s/val: class %d is '%s' but in %s/train it is '%s' (the same class folders are needed)", dir, c, va->cname[c], dir, tr->cname[c]);
  int ntr = imgfolder_count(tr), nva = imgfolder_count(va);
  if (data_first_train() > 0 && data_first_train() < ntr) ntr = data_first_train();
  if (data_first_test() > 0 && data_first_test() < nva) nva = data_first_test();
  const int lazy = o->decoders > 0;
  /* a lazy train set keeps its first min(ntr, nva) images in memory: the train-set evaluations
   * (EASGD's center) read those */
  const int ntr_mem = lazy ? (ntr < nva ? ntr : nva) : ntr;
  const double need = ((double)ntr_mem + nva) * 3 * S * S * sizeof(float);
  const double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (phys > 0 && need > phys / 2)
    die_usage("data set spec '%s': %d + %d images at %dx%d take %.1f GiB in memory, over half of this machine's %.1f GiB: "
              "use --train-subset / --test-subset, a smaller size=, %sor the downsampled sets (imagenet32:, imagenet64:)",
              d->spec, ntr_mem, nva, S, S, need / 1073741824.0, phys / 1073741824.0, lazy ? "" : "decoders=D (train batches decoded lazily), ");
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = nproc < 1 ? 1 : nproc > 16 ? 16 : (int)nproc;
  fprintf(stderr, "pdl: imagenet: decoding %d train + %d val JPEGs of %d classes to %dx%d on %d thread%s (load time only)%s\n",
          ntr_mem, nva, imgfolder_classes(tr), S, S, threads, threads == 1 ? "" : "s", lazy ? "; the train batches lazily" : "");
  eager_fill(&d->train, tr, ntr_mem, threads);
  eager_fill(&d->test, va, nva, threads);
  for (int c = 0; c < 3; c++) { d->mean[c] = IMAGENET_MEAN[c]; d->std[c] = IMAGENET_STD[c]; }
  imgfolder_close(va);
  if (!lazy) { imgfolder_close(tr); return; }
  /* the labels of all ntr; the images through the lazy source */
  d->train.n = ntr; d->train.n_x = ntr_mem;
  xfree(d->train.y);
  d->train.y = xmalloc(sizeof(int) * (size_t)ntr);
  for (int i = 0; i < ntr; i++) d->train.y[i] = imgfolder_label(tr, i);
  d->train.lazy = lazy_open(imgfolder_src(tr), o->decoders, 3, &o->aug);
  fprintf(stderr, "pdl: imagenet: %d decoder thread%s decode and augment the train batches, 3 batches ahead "
                  "(threads of their own, beside --threads)\n", o->decoders, o->decoders == 1 ? "" : "s");
}
