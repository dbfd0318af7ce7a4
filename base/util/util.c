/* util.c — see util.h. */
#include "util/util.h"
#include "util/env.h"
#include "util/vec.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void die(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt);
  fflush(stdout);
  fputs("pdl: error: ", stderr); vfprintf(stderr, fmt, ap); fputc('\n', stderr);
  va_end(ap);
  exit(PDL_EXIT_ERROR);
}

void die_usage(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt);
  fflush(stdout);
  fputs("pdl: ", stderr); vfprintf(stderr, fmt, ap); fputc('\n', stderr);
  va_end(ap);
  exit(PDL_EXIT_USAGE);
}

void *xmalloc(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 64;
  size_t rounded = (bytes + 63) & ~(size_t)63;
  if (posix_memalign(&p, 64, rounded) != 0) die("out of memory allocating %zu bytes", bytes);
  return p;
}

/* Zeroed memory. A large block's whole pages are zeroed by the kernel (MADV_DONTNEED on private
 * anonymous memory: zero-filled on first touch) instead of written here, so memory a run never
 * touches costs none (the parameter-sized vectors of a timing-only run, issue 47); the partial
 * pages at its ends are written. The same zeros either way. */
void *xcalloc(size_t n, size_t size) {
  const size_t bytes = n * size;
  unsigned char *p = xmalloc(bytes);
  const size_t pg = 4096;
  if (bytes < ((size_t)1 << 20)) { memset(p, 0, bytes); return p; }
  unsigned char *a = (unsigned char *)(((uintptr_t)p + pg - 1) & ~(uintptr_t)(pg - 1));
  unsigned char *b = (unsigned char *)(((uintptr_t)p + bytes) & ~(uintptr_t)(pg - 1));
  if (madvise(a, (size_t)(b - a), MADV_DONTNEED) != 0) { memset(p, 0, bytes); return p; }
  memset(p, 0, (size_t)(a - p));
  memset(b, 0, (size_t)(p + bytes - b));
  return p;
}

void xfree(void *p) { free(p); }

void *host_alloc(size_t bytes) { return xcalloc(bytes ? bytes : 1, 1); }
void host_release(void *p) { xfree(p); }
void host_copy(void *dst, const void *src, size_t bytes) { if (bytes) memcpy(dst, src, bytes); }

double now_s(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* /proc/stat's aggregate cpu line in clock ticks (total, busy, steal) and this process's CPU time
 * in the same ticks; 0 when /proc/stat cannot be read. */
static int host_load_read(host_load_t *l) {
  unsigned long long v[8] = {0};
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return 0;
  const int k = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                       &v[6], &v[7]);
  fclose(f);
  if (k < 4) return 0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double hz = (double)sysconf(_SC_CLK_TCK) > 0 ? (double)sysconf(_SC_CLK_TCK) : 100.0;
  l->total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
  l->busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6]); /* user nice system irq softirq */
  l->steal = (double)v[7];
  l->own = hz * ((double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
                 1e-6 * (double)ru.ru_stime.tv_usec);
  return 1;
}

void host_load_begin(host_load_t *l) {
  if (!host_load_read(l)) l->total = -1;
}

void host_load_end(const host_load_t *l, double *steal, double *other) {
  host_load_t e;
  *steal = *other = -1;
  if (l->total < 0 || !host_load_read(&e) || e.total <= l->total) return;
  const double dt = e.total - l->total, o = (e.busy - l->busy) - (e.own - l->own);
  *steal = (e.steal - l->steal) / dt;
  *other = o > 0 ? o / dt : 0;
}

int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

long parse_long(const char *flag, const char *s, long lo, long hi) {
  if (!s) die_usage("%s needs a value", flag);
  char *end; errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end) die_usage("%s: '%s' is not an integer", flag, s);
  if (v < lo || v > hi) die_usage("%s: %ld is out of range [%ld, %ld]", flag, v, lo, hi);
  return v;
}

double parse_double(const char *flag, const char *s, double lo, double hi) {
  if (!s) die_usage("%s needs a value", flag);
  char *end; errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) die_usage("%s: '%s' is not a number", flag, s);
  if (v < lo || v > hi) die_usage("%s: %g is out of range [%g, %g]", flag, v, lo, hi);
  return v;
}

/* ---- JSON ---- */
static void japp(json_t *j, const char *fmt, ...) {
  va_list ap; va_start(ap, fmt);
  size_t room = sizeof j->buf - j->len;
  int n = vsnprintf(j->buf + j->len, room, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= room) die("JSON line longer than %zu bytes", sizeof j->buf);
  j->len += (size_t)n;
}
static void jkey(json_t *j, const char *key) { japp(j, "%s\"%s\":", j->first ? "" : ",", key); j->first = 0; }
void json_begin(json_t *j) { j->len = 0; j->first = 1; j->buf[0] = 0; japp(j, "{"); }
/* The length of the valid UTF-8 sequence at p (1-4), or 0 when p starts an invalid one. */
static int utf8_seq(const unsigned char *p) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  for (int i = 1; i < n; i++) if ((p[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))) return 0;   /* overlong; surrogates */
  if (n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))) return 0;   /* overlong; > U+10FFFF */
  return n;
}
int utf8_valid(const char *s, size_t *bad) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int n = utf8_seq(p);
    if (!n) { if (bad) *bad = (size_t)(p - (const unsigned char *)s); return 0; }
    p += n;
  }
  return 1;
}
void json_str(json_t *j, const char *key, const char *val) {
  jkey(j, key); japp(j, "\"");
  for (const char *p = val ? val : ""; *p; p++) {
    unsigned char c = (unsigned char)*p;
    int n = utf8_seq((const unsigned char *)p);
    if (!n) japp(j, "\\ufffd");   /* JSON text is UTF-8: a stray byte becomes the replacement character */
    else if (n > 1) { japp(j, "%.*s", n, p); p += n - 1; }
    else if (c == '"' || c == '\\') japp(j, "\\%c", c);
    else if (c < 0x20) japp(j, "\\u%04x", c);
    else japp(j, "%c", c);
  }
  japp(j, "\"");
}
void json_num(json_t *j, const char *key, double val) {
  jkey(j, key);
  if (isfinite(val)) japp(j, "%.9g", val); else japp(j, "null");
}
void json_int(json_t *j, const char *key, long long val) { jkey(j, key); japp(j, "%lld", val); }
void json_bool(json_t *j, const char *key, int val) { jkey(j, key); japp(j, val ? "true" : "false"); }
void json_raw(json_t *j, const char *key, const char *raw) { jkey(j, key); japp(j, "%s", raw); }
void json_pairs(json_t *j, const char *pairs) {
  if (!pairs || !*pairs) return;
  japp(j, "%s%s", j->first ? "" : ",", pairs); j->first = 0;
}
const char *json_end(json_t *j) { japp(j, "}"); return j->buf; }
void json_numf(json_t *j, const char *key, double val, int digits) {
  jkey(j, key);
  if (isfinite(val)) japp(j, "%.*g", digits, val); else japp(j, "null");
}
void json_num_array(json_t *j, const char *key, const double *v, int n, int digits) {
  jkey(j, key); japp(j, "[");
  for (int i = 0; i < n; i++) {
    if (isfinite(v[i])) japp(j, "%s%.*g", i ? "," : "", digits, v[i]); else japp(j, "%snull", i ? "," : "");
  }
  japp(j, "]");
}
void json_frag_begin(json_t *j) { j->len = 0; j->first = 1; j->buf[0] = 0; }
const char *json_frag(json_t *j) { return j->buf; }

void mkdir_p(const char *dir) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) die("cannot create directory %s: %s", dir, strerror(errno));
}

/* The file a path names, following symlinks (also a dangling one: its target, resolved against
 * the link's directory). */
void path_resolve(const char *path, char *out, size_t n) {
  snprintf(out, n, "%s", path);
  for (int hops = 0; hops < 40; hops++) {
    struct stat st;
    if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode)) return;
    char link[4096]; ssize_t k = readlink(out, link, sizeof link - 1);
    if (k < 0) return;
    link[k] = 0;
    size_t keep = 0;   /* a relative target is resolved against the link's directory */
    if (link[0] != '/') { char *slash = strrchr(out, '/'); keep = slash ? (size_t)(slash - out) + 1 : 0; }
    size_t ll = strlen(link);
    if (keep + ll + 1 > n) die("%s: the symbolic link's target is too long", path);
    memcpy(out + keep, link, ll + 1);
  }
  die("%s: too many levels of symbolic links", path);
}

static const char *kind_of_file(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : "not a regular file";
}

void path_refuse_special(const char *path, const char *what) {
  struct stat st;
  if (!path || !*path || stat(path, &st) != 0) return;
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode))
    die("%s %s is %s (it would block or cannot be written); give a regular file", what, path, kind_of_file(st.st_mode));
}

/* The target path names (symlinks followed) into out; dies unless it is a regular file or absent. */
static void output_target(const char *path, const char *what, char *out, size_t n) {
  if (strlen(path) >= n - 16) die("%s %s: path too long", what, path);
  path_resolve(path, out, n);
  struct stat st;
  if (stat(out, &st) == 0 && !S_ISREG(st.st_mode))
    die("%s %s is %s; refusing to replace it (give a regular file)", what, out, kind_of_file(st.st_mode));
}

void outfile_check(const char *path, const char *what) { char t[4096]; output_target(path, what, t, sizeof t); }

void outfile_probe(const char *path, const char *what) {
  char t[4096], tmp[4200];
  output_target(path, what, t, sizeof t);
  const char *slash = strrchr(t, '/');
  size_t dl = slash ? (size_t)(slash - t) + 1 : 0;
  if (dl > 1) { char dir[4096]; memcpy(dir, t, dl - 1); dir[dl - 1] = 0; mkdir_p(dir); }
  snprintf(tmp, sizeof tmp, "%.*s.%s.XXXXXX", (int)dl, t, t + dl);
  int fd = mkstemp(tmp);
  if (fd < 0) die("cannot write %s %s: %s (checked before any work)", what, path, strerror(errno));
  close(fd);
  unlink(tmp);
}

int outfile_sweep(const char *path, const char *what) {
  char t[4096];
  output_target(path, what, t, sizeof t);
  const char *slash = strrchr(t, '/');
  char dir[4096];
  if (slash) { snprintf(dir, sizeof dir, "%.*s", slash == t ? 1 : (int)(slash - t), t); }
  else snprintf(dir, sizeof dir, ".");
  const char *base = slash ? slash + 1 : t;
  size_t bl = strlen(base);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {   /* ".<base>.XXXXXX": mkstemp's six letters or digits */
    const char *nm = e->d_name;
    if (nm[0] != '.' || strncmp(nm + 1, base, bl) || nm[1 + bl] != '.' || strlen(nm + 2 + bl) != 6) continue;
    int ok = 1;
    for (const char *c = nm + 2 + bl; *c; c++) ok &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
    char full[8300];
    snprintf(full, sizeof full, "%s/%s", dir, nm);
    struct stat st;
    if (!ok || lstat(full, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (unlink(full) == 0) {
      n++;
      fprintf(stderr, "pdl: removed %s, a temporary %s file left by an interrupted save (%lld bytes)\n", full, what,
              (long long)st.st_size);
    }
  }
  closedir(d);
  return n;
}

void path_canonical(const char *path, char *out, size_t n) {
  char t[4096];
  path_resolve(path, t, sizeof t);
  char rp[PATH_MAX];
  if (realpath(t, rp)) { snprintf(out, n, "%s", rp); return; }
  /* absent: its folder resolved, then the name */
  char dir[4096];
  const char *slash = strrchr(t, '/');
  if (slash) snprintf(dir, sizeof dir, "%.*s", slash == t ? 1 : (int)(slash - t), t);
  else snprintf(dir, sizeof dir, ".");
  const char *base = slash ? slash + 1 : t;
  if (realpath(dir, rp)) snprintf(out, n, "%s%s%s", rp, strcmp(rp, "/") ? "/" : "", base);
  else snprintf(out, n, "%s", t);
}

int path_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char ca[4096], cb[4096];
  path_canonical(a, ca, sizeof ca); path_canonical(b, cb, sizeof cb);
  return !strcmp(ca, cb);
}

void outfile_open(outfile_t *o, const char *path, const char *what) {
  memset(o, 0, sizeof *o);
  o->what = what;
  output_target(path, what, o->path, sizeof o->path);
  /* the temp file: ".<name>.XXXXXX" in the target's directory (o->path fits sizeof - 16) */
  const char *slash = strrchr(o->path, '/');
  size_t dl = slash ? (size_t)(slash - o->path) + 1 : 0;
  if (dl > 1) { char dir[4096]; memcpy(dir, o->path, dl - 1); dir[dl - 1] = 0; mkdir_p(dir); }
  memcpy(o->tmp, o->path, dl);
  o->tmp[dl] = '.';
  size_t bl = strlen(o->path + dl);
  memcpy(o->tmp + dl + 1, o->path + dl, bl);
  memcpy(o->tmp + dl + 1 + bl, ".XXXXXX", 8);
  int fd = mkstemp(o->tmp);
  if (fd < 0) die("cannot write %s %s (temp file %s): %s", what, o->path, o->tmp, strerror(errno));
  o->f = fdopen(fd, "wb");
  if (!o->f) { close(fd); unlink(o->tmp); die("cannot write %s %s: %s", what, o->path, strerror(errno)); }
}

void outfile_commit(outfile_t *o) {
  if (!o->f) return;
  int bad = fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
  bad |= fclose(o->f) != 0;
  o->f = NULL;
  if (!bad) {
    struct stat st;   /* keep the permissions of the file we replace */
    if (stat(o->path, &st) == 0) chmod(o->tmp, st.st_mode & 07777); else chmod(o->tmp, 0644);
  }
  if (bad || rename(o->tmp, o->path) != 0) { int e = errno; unlink(o->tmp); die("cannot write %s %s: %s", o->what, o->path, strerror(e)); }
}

void outfile_abort(outfile_t *o) { if (o->f) { fclose(o->f); o->f = NULL; } if (o->tmp[0]) unlink(o->tmp); }

/* A last line without its newline is a torn write (pdl writes a line and its newline in one
 * write(2)): cut it off, saying so, so the next line starts on a line of its own. Lock held. */
static void results_cut_torn_tail(results_t *r) {
  struct stat st;
  if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
  char tail[65536];
  off_t from = st.st_size > (off_t)sizeof tail ? st.st_size - (off_t)sizeof tail : 0;
  ssize_t n = pread(r->fd, tail, (size_t)(st.st_size - from), from);
  if (n <= 0 || tail[n - 1] == '\n') return;
  ssize_t k = n - 1;
  while (k >= 0 && tail[k] != '\n') k--;
  if (k < 0 && from > 0) die("results file %s: its last line is longer than %zu bytes and has no newline; "
                             "repair or move the file", r->path, sizeof tail);
  off_t keep = from + k + 1;
  fprintf(stderr, "pdl: warning: results file %s: its last line (%lld bytes from byte %lld, no newline) was torn by an "
          "interrupted write; cutting it off so the lines appended now stay readable: %.60s%s\n", r->path,
          (long long)(st.st_size - keep), (long long)keep, tail + k + 1, n - (k + 1) > 60 ? "..." : "");
  if (ftruncate(r->fd, keep) != 0) die("cannot cut the torn last line of results file %s: %s", r->path, strerror(errno));
}

void results_open(results_t *r, const char *path) {
  r->on = 0; r->fd = -1; r->path[0] = 0;
  if (!path || !*path) return;
  snprintf(r->path, sizeof r->path, "%s", path);
  char dir[1024]; snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) { *slash = 0; mkdir_p(dir); }
  path_refuse_special(path, "results file");
  r->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);   /* read: the tail check */
  int readable = r->fd >= 0;
  if (r->fd < 0 && errno == EACCES) r->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);   /* a write-only file */
  if (r->fd < 0) die("cannot open results file %s: %s", path, strerror(errno));
  /* the lock is best effort (a file system without locks still gets whole lines: one write(2) each) */
  int locked = flock(r->fd, LOCK_EX) == 0;
  if (readable) results_cut_torn_tail(r);
  if (locked) flock(r->fd, LOCK_UN);
  r->on = 1;
}

void results_write(results_t *r, const char *line) {
  if (!r->on) return;
  size_t len = strlen(line);
  char *buf = xmalloc(len + 1);
  memcpy(buf, line, len); buf[len] = '\n';
  int locked = flock(r->fd, LOCK_EX) == 0;   /* best effort, as in results_open */
  struct stat st;
  if (fstat(r->fd, &st) != 0) die("cannot stat results file %s: %s", r->path, strerror(errno));
  ssize_t n;
  do n = write(r->fd, buf, len + 1); while (n < 0 && errno == EINTR);
  int e = n < 0 ? errno : ENOSPC;   /* a short write: the file system is full */
  if (n == (ssize_t)(len + 1) && fsync(r->fd) != 0 && (errno == ENOSPC || errno == EDQUOT || errno == EIO)) { e = errno; n = -1; }
  xfree(buf);
  if (n != (ssize_t)(len + 1)) {
    int cut = ftruncate(r->fd, st.st_size) == 0;
    die("cannot write results file %s: %s; %s", r->path, strerror(e),
        cut ? "the partial line was removed, the earlier lines are intact"
            : "the partial line could not be removed: the file's last line is torn");
  }
  if (locked) flock(r->fd, LOCK_UN);
}

void results_probe(const char *path, const char *what) {
  if (!path || !*path) return;
  char dir[1024]; snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) { *slash = 0; mkdir_p(dir); }
  path_refuse_special(path, what);
  struct stat st;
  const int existed = stat(path, &st) == 0;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) die("cannot write %s %s: %s (checked before any work)", what, path, strerror(errno));
  close(fd);
  if (!existed) unlink(path);
}

void output_flag(const char *cmd, const char **slot_flag, const char **slot, const char *flag, const char *path) {
  if (*slot) {
    char c[4096];
    path_canonical(path, c, sizeof c);
    if (path_same_file(*slot, path))
      die_usage("%s: %s %s and %s %s name the same file (%s): give it once", cmd, *slot_flag, *slot, flag, path, c);
    die_usage("%s: %s %s and %s %s: one output given twice, only the last would be written; give one", cmd, *slot_flag,
              *slot, flag, path);
  }
  *slot_flag = flag; *slot = path;
}

void results_close(results_t *r) { if (r->on) close(r->fd); r->on = 0; r->fd = -1; }

static char g_git_rev[64];
static char g_host[256];
static char g_cpu[128];
static char g_isa[16];
static char g_gpu[192];

/* The CPU model line and the widest x86 vector ISA this CPU offers (avx512f > avx2 > avx >
 * sse4_2), read from /proc/cpuinfo: throughput figures are only comparable on one CPU type. */
static void read_cpu(void) {
  snprintf(g_cpu, sizeof g_cpu, "unknown");
  snprintf(g_isa, sizeof g_isa, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[8192];
  int have_model = 0, have_flags = 0;
  while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    char *val = colon + 1;
    while (*val == ' ' || *val == '\t') val++;
    val[strcspn(val, "\n")] = 0;
    if (!have_model && strncmp(line, "model name", 10) == 0) {
      snprintf(g_cpu, sizeof g_cpu, "%s", val); have_model = 1;
    } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
      static const char *isas[] = {"avx512f", "avx2", "avx", "sse4_2"};
      for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
        size_t n = strlen(isas[i]);
        for (const char *q = val; (q = strstr(q, isas[i])) != NULL; q += n)
          if ((q == val || q[-1] == ' ') && (q[n] == ' ' || q[n] == 0)) { snprintf(g_isa, sizeof g_isa, "%s", isas[i]); goto found; }
      }
    found:
      have_flags = 1;
    }
  }
  fclose(f);
}

void json_meta_set_gpu(const char *desc) { snprintf(g_gpu, sizeof g_gpu, "%s", desc ? desc : ""); }

void json_meta(json_t *j) {
  if (!g_git_rev[0]) {
    const char *env = env_get("PDL_GIT_REV");
    snprintf(g_git_rev, sizeof g_git_rev, "%s", env && *env ? env : PDL_GIT_REV_DEFAULT);
    if (gethostname(g_host, sizeof g_host) != 0) snprintf(g_host, sizeof g_host, "unknown");
    read_cpu();
  }
  json_str(j, "git", g_git_rev);
  json_str(j, "host", g_host);
  json_str(j, "cpu", g_cpu);
  json_str(j, "isa", g_isa);
  if (g_gpu[0]) json_str(j, "gpu", g_gpu);
}

/* ---- progress ---- */
static int g_progress_tty = -1;
static int g_progress_active;
void progress(const char *fmt, ...) {
  if (g_progress_tty < 0) g_progress_tty = isatty(fileno(stderr)) && !env_get("PDL_NO_PROGRESS");
  if (!g_progress_tty) return;
  va_list ap; va_start(ap, fmt);
  fputs("\r\033[K", stderr); vfprintf(stderr, fmt, ap); fflush(stderr);
  va_end(ap);
  g_progress_active = 1;
}
void progress_done(void) {
  if (g_progress_active) { fputs("\r\033[K", stderr); fflush(stderr); g_progress_active = 0; }
}

volatile int pdl_stop_signal;
int pdl_numerics_off;   /* util/vec.h */
static volatile sig_atomic_t g_stops;
static void on_stop(int sig) {
  if (g_stops++) { signal(sig, SIG_DFL); raise(sig); return; }   /* the second one: at once */
  pdl_stop_signal = sig;
}
void install_stop_handlers(void) {
  struct sigaction sa; memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop; sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
