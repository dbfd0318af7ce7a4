/* snap.c — checkpoint files, format version 5 (snap.h). */
#include "core/snap.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>
#include "util/env.h"

#define SNAP_MAGIC "PDLCKPT1"
#define SNAP_VERSION 5

typedef struct {
  char magic[8]; uint32_t version; uint32_t batch;
  uint64_t nparams, seed;
  char spec[256], algo[32], data[512];
  int64_t train_subset;
  float momentum, wd, lr, pad0;
  int32_t node, nnodes, nsec, pad1;
  int64_t gen;
  char runtime[16], platform[256];
  char opts[2048];   /* the algorithm's options a resume must match, "--name=value\n" each
                        (train_cfg_resume_text: from its option table) */
} snap_hdr_t;

typedef struct { char name[32]; uint32_t kind, pad; uint64_t bytes; } snap_rec_t;

typedef struct { int64_t epoch; int32_t pos, with_replacement; rng_t rng; } sampler_state_t;

void snap_init(snap_t *s) { memset(s, 0, sizeof *s); }

static snap_sec_t *add(snap_t *s, const char *name, snap_kind_t kind, void *p, size_t bytes) {
  if (s->n >= SNAP_MAX) die("internal: more than %d checkpoint sections", SNAP_MAX);
  snap_sec_t *x = &s->sec[s->n++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  x->kind = kind; x->p = p; x->bytes = bytes;
  return x;
}
void snap_add(snap_t *s, const char *name, void *p, size_t bytes) { add(s, name, SNAP_MEM, p, bytes); }
void snap_add_optim(snap_t *s, const char *name, optim_t *o) { add(s, name, SNAP_OPTIM, o, 0); }
void snap_add_ws(snap_t *s, const char *name, workspace_t *ws) {
  add(s, name, SNAP_WS, ws, net_state_floats(ws->net) * sizeof(float));
}
void snap_add_sampler(snap_t *s, const char *name, sampler_t *sm) { add(s, name, SNAP_SAMPLER, sm, sizeof(sampler_state_t)); }

void snap_path(char *out, size_t n, const char *base, int node, int nnodes, int prev) {
  int k = nnodes > 1 && node > 0 ? snprintf(out, n, "%s.node%d%s", base, node, prev ? ".prev" : "")
                                 : snprintf(out, n, "%s%s", base, prev ? ".prev" : "");
  if (k < 0 || (size_t)k >= n) die("checkpoint %s: path too long", base);
}

static void fill_header(snap_hdr_t *h, const run_t *r, int node, int nnodes, long gen, int nsec) {
  const train_cfg_t *c = &r->cfg;
  memset(h, 0, sizeof *h);
  memcpy(h->magic, SNAP_MAGIC, 8); h->version = SNAP_VERSION;
  h->batch = (uint32_t)c->batch; h->nparams = r->net.nparams; h->seed = c->seed;
  snprintf(h->spec, sizeof h->spec, "%s", r->net.spec); snprintf(h->algo, sizeof h->algo, "%s", c->algo);
  snprintf(h->data, sizeof h->data, "%s", c->data);
  h->train_subset = c->train_subset;
  h->momentum = c->momentum; h->wd = c->wd; h->lr = c->lr;
  h->node = node; h->nnodes = nnodes; h->nsec = nsec; h->gen = gen;
  snprintf(h->runtime, sizeof h->runtime, "%s", c->runtime);
  snprintf(h->platform, sizeof h->platform, "%s", !strcmp(c->runtime, "sim") ? c->platform : "");
  train_cfg_resume_text(c, h->opts, sizeof h->opts);
}

/* The first option whose value differs between two header texts ("--name=value\n"...): dies
 * naming it. Both come from the same --algo's table, so they list the same names in order. */
static void check_opts(const char *path, const char *file, const char *run) {
  while (*file || *run) {
    const char *fe = strchr(file, '\n'), *re = strchr(run, '\n');
    size_t fl = fe ? (size_t)(fe - file) : strlen(file), rl = re ? (size_t)(re - run) : strlen(run);
    if (fl != rl || memcmp(file, run, fl)) {
      if (!fl != !rl) {   /* one list ends first: an option added (or removed) since the checkpoint */
        const char *x = fl ? file : run, *xeq = memchr(x, '=', fl ? fl : rl);
        int xn = xeq ? (int)(xeq - x) : (int)(fl ? fl : rl);
        die("checkpoint %s: %s %.*s (written by %s pdl?); start over without --resume", path,
            fl ? "the checkpoint records an option this run does not have," : "the checkpoint does not record this run's option",
            xn, x, fl ? "a newer" : "an older");
      }
      const char *feq = memchr(file, '=', fl), *req = memchr(run, '=', rl);
      if (feq && req && feq - file == req - run && !memcmp(file, run, (size_t)(feq - file)))
        die("checkpoint %s: %.*s is '%.*s' in the checkpoint but '%.*s' in this run", path, (int)(feq - file), file,
            (int)(fl - (size_t)(feq - file) - 1), feq + 1, (int)(rl - (size_t)(req - run) - 1), req + 1);
      die("checkpoint %s: the algorithm's options differ ('%.*s' in the checkpoint, '%.*s' in this run)", path,
          (int)fl, file, (int)rl, run);
    }
    file += fl + (fe != NULL); run += rl + (re != NULL);
  }
}

/* A section's payload into the memory stream m. */
static int put_section(FILE *m, const snap_sec_t *x) {
  char *buf = NULL; size_t len = 0;
  const void *p = x->p;
  sampler_state_t ss;
  if (x->kind == SNAP_OPTIM) {
    FILE *o = open_memstream(&buf, &len);
    if (!o) return -1;
    int bad = optim_save((const optim_t *)x->p, o) != 0;
    if (fclose(o) != 0 || bad) { free(buf); return -1; }
    p = buf;
  } else if (x->kind == SNAP_SAMPLER) {
    const sampler_t *sm = x->p;
    memset(&ss, 0, sizeof ss);
    ss.epoch = sm->epoch; ss.pos = sm->pos; ss.with_replacement = sm->with_replacement; ss.rng = sm->rng;
    p = &ss; len = sizeof ss;
  } else if (x->kind == SNAP_WS) {
    len = x->bytes;
    buf = malloc(len ? len : 1);   /* freed below with free(), as open_memstream's */
    if (!buf) return -1;
    ws_state_get((const workspace_t *)x->p, (float *)buf);
    p = buf;
  } else len = x->bytes;
  snap_rec_t rec; memset(&rec, 0, sizeof rec);
  memcpy(rec.name, x->name, sizeof rec.name); rec.kind = (uint32_t)x->kind; rec.bytes = len;
  int bad = fwrite(&rec, sizeof rec, 1, m) != 1 || (len && fwrite(p, 1, len, m) != len);
  free(buf);
  return bad ? -1 : 0;
}

/* Test hook (tests/t_hostile.sh: a second signal during the save the first one started):
 * PDL_TEST_SAVE_PAUSE_MS=N makes a save made after a stop signal wait N ms at two points, once its
 * temp file is written (`at` 1) and once the file it replaces is kept as .prev (2), saying so on
 * stderr. Unset: off (base/util/env.c's row). The wait ends early only by the signal's own effect:
 * the second SIGINT/SIGTERM ends the process at once (util.c's stop handler). */
static void test_save_pause(const char *path, int at) {
  if (!pdl_stop_signal) return;
  const long ms = env_long("PDL_TEST_SAVE_PAUSE_MS", 0);
  if (ms <= 0) return;
  fprintf(stderr, "pdl: test hook: checkpoint %s: pause %d of 2 (%s), %ld ms\n", path, at,
          at == 1 ? "its temp file written" : "the replaced file kept as .prev, the new one not yet renamed", ms);
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void snap_save(const char *path, const run_t *r, int node, int nnodes, long gen, const snap_t *s, int keep_prev) {
  snap_hdr_t h; fill_header(&h, r, node, nnodes, gen, s->n);
  char *buf = NULL; size_t len = 0;                 /* the whole body in memory, then its CRC */
  FILE *m = open_memstream(&buf, &len);
  if (!m) die("cannot write checkpoint %s: out of memory", path);
  int bad = fwrite(&h, sizeof h, 1, m) != 1;
  for (int i = 0; i < s->n && !bad; i++) bad = put_section(m, &s->sec[i]) != 0;
  bad |= fclose(m) != 0;
  if (bad) { free(buf); die("cannot write checkpoint %s: out of memory", path); }
  uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)buf, (uInt)len);
  outfile_sweep(path, "checkpoint");   /* the temp files of saves a kill -9 interrupted */
  outfile_t out; outfile_open(&out, path, "checkpoint");
  bad = fwrite(buf, 1, len, out.f) != len || fwrite(&crc, sizeof crc, 1, out.f) != 1;
  free(buf);
  if (bad) { int e = errno; outfile_abort(&out); die("cannot write checkpoint %s: %s", path, strerror(e)); }
  test_save_pause(path, 1);
  if (keep_prev) {   /* the file replaced is kept as .prev (the generation before survives a crash between two
                        nodes' commits); the hook's second pause is between the two renames */
    char prev[4200];
    snprintf(prev, sizeof prev, "%s.prev", out.path);
    if (rename(out.path, prev) != 0 && errno != ENOENT) {
      int e = errno; outfile_abort(&out); die("cannot keep the previous checkpoint %s as %s: %s", out.path, prev, strerror(e));
    }
    test_save_pause(path, 2);
  }
  outfile_commit(&out);
}

static void check_header(const char *path, snap_hdr_t *h, const run_t *r, int node, int nnodes) {
  const train_cfg_t *c = &r->cfg;
  snap_hdr_t m; fill_header(&m, r, node, nnodes, 0, 0);
  h->spec[sizeof h->spec - 1] = h->algo[sizeof h->algo - 1] = h->data[sizeof h->data - 1] = 0;   /* hostile files */
  h->runtime[sizeof h->runtime - 1] = h->platform[sizeof h->platform - 1] = h->opts[sizeof h->opts - 1] = 0;
#define CK(cond, field, fmt, a, b) do { if (!(cond)) die("checkpoint %s: %s is " fmt " in the checkpoint but " fmt " in this run", path, field, a, b); } while (0)
#define CKS(f, field) CK(!strcmp(h->f, m.f), field, "'%s'", h->f, m.f)
#define CKF(f, field) CK(h->f == m.f, field, "%g", (double)h->f, (double)m.f)
#define CKI(f, field) CK(h->f == m.f, field, "%lld", (long long)h->f, (long long)m.f)
  CKS(algo, "--algo");
  CKS(spec, "the net");
  CKI(nparams, "the parameter count");
  CKS(data, "--data");
  CK(h->seed == m.seed, "--seed", "%llu", (unsigned long long)h->seed, (unsigned long long)c->seed);
  CKI(batch, "--batch");
  CKI(train_subset, "--train-subset");
  CKF(momentum, "--momentum"); CKF(wd, "--wd"); CKF(lr, "--lr");
  check_opts(path, h->opts, m.opts);
  CKS(runtime, "--runtime");
  CKS(platform, "--platform");
  CKI(nnodes, "the node count (ranks or platform nodes)");
  CKI(node, "the node");
#undef CK
#undef CKS
#undef CKF
#undef CKI
}

/* why == NULL: dies on everything (snap_read). Otherwise (snap_probe) a damaged file -- too short, or
 * a checksum that does not match while the magic does -- returns -2 with the reason in why. */
static long read_file(const char *path, const run_t *r, int node, int nnodes, snap_t *s, int apply, char *why, size_t wn,
                      long *lead) {
  if (lead) *lead = -1;
  FILE *f = fopen(path, "rb");
  if (!f) { if (errno == ENOENT) return -1; die("cannot read checkpoint %s: %s", path, strerror(errno)); }
  struct stat st;   /* read whole, closed before any check can fail */
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) { fclose(f); die("checkpoint %s: not a regular file", path); }
  size_t len = (size_t)st.st_size;
  if (len < 8 + 4 + 4) {
    fclose(f);
    if (why && len >= 8) { snprintf(why, wn, "%zu bytes, too short to be a pdl checkpoint (truncated)", len); return -2; }
    die("checkpoint %s: %zu bytes, too short to be a pdl checkpoint", path, len);
  }
  char *buf = xmalloc(len);
  size_t got = fread(buf, 1, len, f);
  fclose(f);
  if (got != len) die("checkpoint %s: cannot read it", path);
  if (memcmp(buf, SNAP_MAGIC, 8)) die("checkpoint %s: not a pdl checkpoint (bad magic)", path);
  uint32_t version; memcpy(&version, buf + 8, 4);
  if (version != SNAP_VERSION)
    die("checkpoint %s: format version %u, written by %s pdl; this pdl reads version %d only (start over without "
        "--resume)", path, version, version < SNAP_VERSION ? "an older" : "a newer", SNAP_VERSION);
  if (why) {   /* the damage a crash or a disk does: a short file or flipped bytes */
    uint32_t c0; memcpy(&c0, buf + len - 4, 4);
    if (len < sizeof(snap_hdr_t) + 4) { xfree(buf); snprintf(why, wn, "%zu bytes, too short to be a pdl checkpoint (truncated)", len); return -2; }
    if (c0 != (uint32_t)crc32(0L, (const Bytef *)buf, (uInt)(len - 4))) {
      xfree(buf); snprintf(why, wn, "checksum mismatch (corrupted or truncated)"); return -2;
    }
  }
  if (len < sizeof(snap_hdr_t) + 4) die("checkpoint %s: %zu bytes, too short to be a pdl checkpoint", path, len);
  uint32_t crc; memcpy(&crc, buf + len - 4, 4);
  if (crc != (uint32_t)crc32(0L, (const Bytef *)buf, (uInt)(len - 4)))
    die("checkpoint %s: checksum mismatch (corrupted or truncated)", path);
  snap_hdr_t h; memcpy(&h, buf, sizeof h);
  check_header(path, &h, r, node, nnodes);
  if (h.gen < 1 || h.gen > (int64_t)1 << 40)   /* the generation counts saves from 1 */
    die("checkpoint %s: field 'generation' of the header is %lld, out of range [1, 2^40]: a damaged or crafted file; "
        "start over without --resume", path, (long long)h.gen);
  size_t off = sizeof h, end = len - 4;
  if (h.nsec != s->n) {   /* name the first section that differs: the state one side lacks */
    int i = 0; size_t o = off;
    snap_rec_t rec;
    for (; i < s->n && i < h.nsec && end - o >= sizeof rec; i++) {
      memcpy(&rec, buf + o, sizeof rec);
      if (strncmp(rec.name, s->sec[i].name, sizeof rec.name) || rec.bytes > end - o - sizeof rec) break;
      o += sizeof rec + (size_t)rec.bytes;
    }
    if (i < s->n)
      die("checkpoint %s: %d sections, this run keeps %d; it lacks '%s' (state that a different pdl version did not "
          "save); start over without --resume", path, h.nsec, s->n, s->sec[i].name);
    die("checkpoint %s: %d sections, this run keeps %d (a different pdl version?)", path, h.nsec, s->n);
  }
  for (int i = 0; i < s->n; i++) {
    snap_sec_t *x = &s->sec[i];
    snap_rec_t rec;
    if (end - off < sizeof rec) die("checkpoint %s: shorter than its header says", path);
    memcpy(&rec, buf + off, sizeof rec); off += sizeof rec;
    if (strncmp(rec.name, x->name, sizeof rec.name) || rec.kind != (uint32_t)x->kind) {
      char shown[32];   /* a hostile file's bytes, printable */
      for (size_t k = 0; k < sizeof shown; k++) {
        char ch = k < sizeof shown - 1 ? rec.name[k] : 0;
        shown[k] = ch == 0 || (ch >= 32 && ch < 127) ? ch : '?';
        if (!ch) break;
      }
      die("checkpoint %s: section %d is '%s', this run expects '%s'", path, i, shown, x->name);
    }
    if (rec.bytes > end - off) die("checkpoint %s: section '%s' is longer than the file", path, x->name);
    const char *p = buf + off;
    size_t b = (size_t)rec.bytes;
    off += b;
    if (x->kind == SNAP_OPTIM) {
      optim_t *o = x->p;   /* the size is checked before anything is read into o */
      size_t nv = (o->M ? o->n : 0) + (o->V ? o->n : 0) + (o->Z ? o->n : 0);
      if (b != sizeof o->t + nv * sizeof(float))
        die("checkpoint %s: section '%s' holds %zu bytes, this run's optimizer needs %zu", path, x->name, b, sizeof o->t + nv * sizeof(float));
      if (!apply) continue;
      FILE *m = fmemopen((void *)p, b, "rb");
      if (!m) die("checkpoint %s: out of memory", path);
      int bad = optim_load(o, m) != 0;
      fclose(m);
      if (bad) die("checkpoint %s: section '%s' is short", path, x->name);
      if (o->t < 0 || o->t > 1L << 40)
        die("checkpoint %s: field 'step count' of section '%s' is %ld, out of range [0, 2^40]: a damaged or crafted "
            "file; start over without --resume", path, x->name, o->t);
    } else if (x->kind == SNAP_SAMPLER) {
      sampler_t *sm = x->p;
      sampler_state_t ss;
      if (b != sizeof ss) die("checkpoint %s: section '%s' holds %zu bytes, expected %zu", path, x->name, b, sizeof ss);
      memcpy(&ss, p, sizeof ss);
      if (ss.with_replacement != sm->with_replacement || ss.epoch < 0 || ss.epoch > 1LL << 40 || ss.pos < 0 || ss.pos > sm->n_shard)
        die("checkpoint %s: section '%s': sampler at epoch %lld position %d does not fit this run's shard of %d examples",
            path, x->name, (long long)ss.epoch, ss.pos, sm->n_shard);
      if (!(ss.rng.s[0] | ss.rng.s[1] | ss.rng.s[2] | ss.rng.s[3]))   /* xoshiro's one state no seed reaches */
        die("checkpoint %s: section '%s': the sampler's rng state is all zero (its draws would all be 0): a damaged or "
            "crafted file; start over without --resume", path, x->name);
      if (!apply) continue;
      sm->rng = ss.rng;
      sampler_seek(sm, (long)ss.epoch, ss.pos);
    } else if (x->kind == SNAP_WS) {
      if (b != x->bytes) die("checkpoint %s: section '%s' holds %zu bytes, this run needs %zu", path, x->name, b, x->bytes);
      workspace_t *ws = x->p;
      float *st = xmalloc(b ? b : 1);
      memcpy(st, p, b);
      /* per batch norm layer: C running means, then C running variances (finite, >= 0) */
      size_t o = 0;
      for (int l = 0; l < ws->net->nlayers; l++) {
        if (ws->net->L[l].type != L_BN) continue;
        const size_t C = (size_t)ws->net->L[l].oc;
        for (size_t j = 0; j < 2 * C; j++)
          if (!isfinite(st[o + j]) || (j >= C && st[o + j] < 0))
            die("checkpoint %s: section '%s': layer %d's running %s of channel %zu is %g: a damaged or crafted file; "
                "start over without --resume", path, x->name, l, j < C ? "mean" : "variance", j % C, (double)st[o + j]);
        o += 2 * C;
      }
      if (apply) ws_state_set(ws, st);
      xfree(st);
    } else {
      if (b != x->bytes) die("checkpoint %s: section '%s' holds %zu bytes, this run needs %zu", path, x->name, b, x->bytes);
      if (apply) memcpy(x->p, p, b);
      if (lead && i == 0 && b >= sizeof *lead) memcpy(lead, p, sizeof *lead);
    }
  }
  if (off != end) die("checkpoint %s: %zu trailing bytes", path, end - off);
  xfree(buf);
  return (long)h.gen;
}

long snap_read(const char *path, const run_t *r, int node, int nnodes, snap_t *s, int apply) {
  return read_file(path, r, node, nnodes, s, apply, NULL, 0, NULL);
}

long snap_probe(const char *path, const run_t *r, int node, int nnodes, snap_t *s, char *why, size_t n, long *lead) {
  return read_file(path, r, node, nnodes, s, 0, why, n, lead);
}
