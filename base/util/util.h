/* util.h — error-check macros, allocation, timers, JSON writing, progress line.
 * Conventions: every failing call ends the process with a message naming the statement,
 * file and line (die). Usage errors (bad flags) exit 2; data/file errors exit 1. */
#ifndef PDL_UTIL_H
#define PDL_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>

#define PDL_EXIT_USAGE 2
#define PDL_EXIT_ERROR 1

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));       /* exit 1 */
void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2))); /* exit 2 */

#define CHECK_ALLOC(p) do { if (!(p)) die("out of memory: %s at %s:%d", #p, __FILE__, __LINE__); } while (0)
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "pdl: check failed: %s at %s:%d: ", #cond, __FILE__, __LINE__); \
  fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(PDL_EXIT_ERROR); } } while (0)
#define SHAPE_ASSERT(cond) do { if (!(cond)) die("shape assertion failed: %s at %s:%d", #cond, __FILE__, __LINE__); } while (0)

void *xmalloc(size_t bytes);            /* dies on failure; 64-byte aligned */
void *xcalloc(size_t n, size_t size);   /* zeroed, 64-byte aligned */
void xfree(void *p);
/* Host memory as a kernels_t backend's workspace memory (contract/kernels.h): zeroed bytes, free, copy. */
void *host_alloc(size_t bytes);
void host_release(void *p);
void host_copy(void *dst, const void *src, size_t bytes);

double now_s(void);                     /* monotonic seconds */

/* What else the machine did while this process was timing something: host_load_begin, then
 * host_load_end gives, as fractions of all CPUs' capacity over the interval (from /proc/stat and
 * getrusage), steal (time the hypervisor gave this VM's vCPUs to someone else) and other (busy
 * time of other processes). Both -1 where /proc/stat cannot be read. A timing figure taken with
 * steal + other well above 0 measured a shared machine, not the code. */
typedef struct { double total, busy, steal, own; } host_load_t;
void host_load_begin(host_load_t *l);
void host_load_end(const host_load_t *l, double *steal, double *other);
double median(double *v, int n);        /* sorts v in place */
int cmp_double(const void *a, const void *b);

/* 1 when s is valid UTF-8 (no overlong forms, surrogates or code points above U+10FFFF); else 0
 * and the offset of the first bad byte in *bad (when bad is not NULL). */
int utf8_valid(const char *s, size_t *bad);

/* Parsing helpers for CLI flags: exit 2 naming the flag on a bad value. */
long parse_long(const char *flag, const char *s, long lo, long hi);
double parse_double(const char *flag, const char *s, double lo, double hi);

/* JSON line builder: append key/value pairs into a fixed buffer, then write. */
typedef struct { char buf[16384]; size_t len; int first; } json_t;
void json_begin(json_t *j);
void json_str(json_t *j, const char *key, const char *val);   /* invalid UTF-8 bytes written as \ufffd */
void json_num(json_t *j, const char *key, double val);     /* %.9g; NaN/Inf written as null */
void json_int(json_t *j, const char *key, long long val);
void json_bool(json_t *j, const char *key, int val);
void json_raw(json_t *j, const char *key, const char *raw); /* already-formatted JSON value */
void json_pairs(json_t *j, const char *pairs);               /* raw "\"k\":v,..." pairs; NULL/"" = none */
void json_numf(json_t *j, const char *key, double val, int digits); /* %.<digits>g; NaN/Inf as null */
void json_num_array(json_t *j, const char *key, const double *v, int n, int digits);
/* A fragment: key/value pairs without the braces, to hand to a line as its extra pairs
 * (run_eval, run_summary). json_frag_begin(j) ... json_frag(j) returns the pairs text. */
void json_frag_begin(json_t *j);
const char *json_frag(json_t *j);
const char *json_end(json_t *j);                            /* returns the object text, no newline */

/* Results file: one JSON object per line (JSON Lines). Each line goes to the file whole or not at
 * all: it is appended with one write(2) under an exclusive lock (flock), and a short write (a full
 * file system) truncates the file back to its old length before the error (exit 1 naming the file);
 * then fsync'ed, so an interrupt never corrupts earlier lines. results_open finds a torn last line
 * left by an older pdl or a crash of the machine (no newline at the end) and cuts it off with a
 * warning naming the file, so the lines appended after it stay readable. path NULL -> no file.
 * Creates parent directories. */
typedef struct { int on, fd; char path[1024]; } results_t;   /* on 0 (a zeroed struct too): no file */
void results_open(results_t *r, const char *path);
void results_write(results_t *r, const char *line);
void results_close(results_t *r);
/* Before any work: the results file `path` of flag `what` can be appended to (as results_open opens
 * it; a file it had to create is removed again). Dies (exit 1) naming the flag and the path. */
void results_probe(const char *path, const char *what);
/* A subcommand's output-file flag: stores `path` of `flag` in *slot (its flag in *slot_flag), and
 * refuses (exit 2, naming both flags) a second one: the same file named twice, or two files of
 * which only the last would be written. cmd prefixes the message ("coll", "inverse", ...). */
void output_flag(const char *cmd, const char **slot_flag, const char **slot, const char *flag, const char *path);
void mkdir_p(const char *dir);

/* Whole-file outputs (checkpoints, calibration, pdl stability's JSON), written safely:
 *  - a symlink is followed: its target is written and the link stays;
 *  - an existing path that is not a regular file (a device, a FIFO, a directory, a socket) is
 *    refused (exit 1 naming it): /dev/null is never replaced, a FIFO never blocks the run;
 *  - the content goes to a unique temp file beside the target (mkstemp) and is renamed over it
 *    by outfile_commit, so an interrupt never leaves a half-written file and two runs never
 *    share a temp name. `what` names the output in messages ("checkpoint", "--json"). */
typedef struct { FILE *f; char path[4096], tmp[4096]; const char *what; } outfile_t;
void outfile_open(outfile_t *o, const char *path, const char *what);
void outfile_commit(outfile_t *o);
void outfile_abort(outfile_t *o);      /* removes the temp file */
/* The file a path names, following symlinks (a dangling one too). */
void path_resolve(const char *path, char *out, size_t n);
/* The same refusal, up front (before a long run ever reaches its first write). */
void outfile_check(const char *path, const char *what);
/* outfile_check, and the file can be written: a temp file is created beside it and removed (exit 1
 * naming `what` and the path when not, e.g. a read-only folder), so a long run learns it before
 * its first step instead of at its first save. */
void outfile_probe(const char *path, const char *what);
/* Removes the temp files an interrupted outfile_open/commit of `path` left beside it (".<name>.XXXXXX",
 * exactly outfile_open's pattern, regular files only), saying so on stderr. A save calls it first, so
 * kill -9 during saves never piles up checkpoint-sized files. Returns how many it removed. */
int outfile_sweep(const char *path, const char *what);
/* 1 when a and b name the same file: the same inode where both exist, else the same canonical path
 * (symlinks followed, the folder resolved); 0 otherwise. */
int path_same_file(const char *a, const char *b);
/* The canonical form path_same_file compares (absolute, symlinks and the folder resolved). */
void path_canonical(const char *path, char *out, size_t n);
/* An input or append path that must not block or be a directory: refuses (exit 1) a FIFO, a
 * socket or a directory; a missing path is allowed (the caller creates or reports it). */
void path_refuse_special(const char *path, const char *what);

/* Common run metadata added to a json_t: git revision, host, CPU model ("cpu"), widest vector
 * ISA ("isa": avx512f|avx2|avx|sse4_2), and "gpu" once json_meta_set_gpu named the device used. */
void json_meta(json_t *j);
void json_meta_set_gpu(const char *desc);

/* Progress line on a terminal (stderr if a tty), silent otherwise. */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_done(void);

/* Signal handling for long runs: SIGINT/SIGTERM set the flag; loops poll it (a graceful stop: state
 * saved, summary written). A second SIGINT/SIGTERM ends the process at once with the signal's default
 * action, so a stop never depends on a loop reaching its next poll. */
extern volatile int pdl_stop_signal;
void install_stop_handlers(void);

#endif
