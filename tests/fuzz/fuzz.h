/* fuzz.h — the libFuzzer harness shared by tests/fuzz/fuzz_*.c (built by `make fuzz-build` with
 * clang -fsanitize=fuzzer,address,undefined). pdl's parsers end a bad input with die() -> exit():
 * the targets are linked with -Wl,--wrap=exit, and inside a target's call exit() longjmps back,
 * so a clean refusal is a normal return and only a real fault (a sanitizer report, a signal, a
 * hang) is a finding. Outside a target (libFuzzer's own exit) the real exit runs. Leaks of the
 * abandoned call are expected: run with -detect_leaks=0. */
#ifndef PDL_FUZZ_H
#define PDL_FUZZ_H
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static jmp_buf fuzz_env;
static volatile int fuzz_inside;
void __real_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status) {
  if (fuzz_inside) { fuzz_inside = 0; longjmp(fuzz_env, 1); }
  __real_exit(status);
}
/* Streams a call opens are tracked (the targets are also linked with --wrap=gzopen, gzclose,
 * fopen, fclose): when an exit() abandons the call, what it left open is closed, freeing the
 * descriptors and zlib's buffers that ending the process would have released. */
gzFile __real_gzopen(const char *path, const char *mode);
int __real_gzclose(gzFile g);
FILE *__real_fopen(const char *path, const char *mode);
int __real_fclose(FILE *f);
static void *fuzz_open[256]; static int fuzz_open_gz[256]; static int fuzz_nopen;
static void fuzz_track(void *h, int gz) { if (h && fuzz_inside && fuzz_nopen < 256) { fuzz_open[fuzz_nopen] = h; fuzz_open_gz[fuzz_nopen++] = gz; } }
static void fuzz_untrack(void *h) {
  for (int i = 0; i < fuzz_nopen; i++) if (fuzz_open[i] == h) { fuzz_open[i] = fuzz_open[--fuzz_nopen]; fuzz_open_gz[i] = fuzz_open_gz[fuzz_nopen]; return; }
}
gzFile __wrap_gzopen(const char *path, const char *mode) { gzFile g = __real_gzopen(path, mode); fuzz_track(g, 1); return g; }
int __wrap_gzclose(gzFile g) { fuzz_untrack(g); return __real_gzclose(g); }
FILE *__wrap_fopen(const char *path, const char *mode) { FILE *f = __real_fopen(path, mode); fuzz_track(f, 0); return f; }
int __wrap_fclose(FILE *f) { fuzz_untrack(f); return __real_fclose(f); }
/* pdl's own allocations (xmalloc, xcalloc, xfree: also wrapped) made during a call: freed when
 * an exit() abandons it, as ending the process would. */
void *__real_xmalloc(size_t bytes);
void *__real_xcalloc(size_t n, size_t size);
void __real_xfree(void *p);
#define FUZZ_MAXALLOC 4096
static void *fuzz_alloc[FUZZ_MAXALLOC]; static int fuzz_nalloc;
static void fuzz_track_alloc(void *p) { if (p && fuzz_inside && fuzz_nalloc < FUZZ_MAXALLOC) fuzz_alloc[fuzz_nalloc++] = p; }
void *__wrap_xmalloc(size_t bytes) { void *p = __real_xmalloc(bytes); fuzz_track_alloc(p); return p; }
void *__wrap_xcalloc(size_t n, size_t size) { void *p = __real_xcalloc(n, size); fuzz_track_alloc(p); return p; }
void __wrap_xfree(void *p) {
  for (int i = fuzz_nalloc - 1; p && i >= 0; i--) if (fuzz_alloc[i] == p) { fuzz_alloc[i] = fuzz_alloc[--fuzz_nalloc]; break; }
  __real_xfree(p);
}
static void fuzz_close_all(void) {
  while (fuzz_nalloc > 0) __real_xfree(fuzz_alloc[--fuzz_nalloc]);
  while (fuzz_nopen > 0) { fuzz_nopen--; if (fuzz_open_gz[fuzz_nopen]) __real_gzclose(fuzz_open[fuzz_nopen]); else __real_fclose(fuzz_open[fuzz_nopen]); }
}
/* FUZZ_CALL(stmt): runs stmt; an exit() inside it returns here, closing what the call left open. */
#define FUZZ_CALL(stmt) do { fuzz_nopen = 0; fuzz_nalloc = 0; \
  if (setjmp(fuzz_env) == 0) { fuzz_inside = 1; stmt; fuzz_inside = 0; } \
  else fuzz_close_all(); \
  fuzz_inside = 0; fuzz_nopen = 0; fuzz_nalloc = 0; } while (0)

/* The input as a NUL-terminated string of at most cap bytes (a static buffer). */
static inline const char *fuzz_str(const uint8_t *d, size_t n, size_t cap) {
  static char buf[4096];
  if (cap > sizeof buf - 1) cap = sizeof buf - 1;
  if (n > cap) n = cap;
  memcpy(buf, d, n); buf[n] = 0;
  return buf;
}
/* Writes the input to path (a plain file). */
static inline void fuzz_write(const char *path, const uint8_t *d, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) { perror(path); abort(); }
  if (n && fwrite(d, 1, n, f) != n) abort();
  fclose(f);
}
/* A private directory for the target's files, made once, in $TMPDIR (else /tmp): tests/t_fuzz.sh
 * points TMPDIR at a tmpfs, where rewriting a file costs microseconds, not the milliseconds of a
 * truncate on a journalled disk (the checkpoint and loader targets rewrite theirs 2000 times). */
static inline const char *fuzz_dir(void) {
  static char dir[256];
  if (!dir[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pdl-fuzz-XXXXXX", t && *t && strlen(t) < 200 ? t : "/tmp");
    if (!mkdtemp(dir)) abort();
  }
  return dir;
}
#endif
