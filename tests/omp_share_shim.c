/* omp_share_shim.c — an LD_PRELOAD library for tests/t_omp_share.sh: it watches every OpenMP
 * parallel region and every thread a pdl process opens, without a test build of pdl.
 *   PDL_TEST_OMP_SHARE=N (required, a positive integer, read strictly): the thread share of every
 *     role. A region whose team is wider than N, or that a thread opens while its OpenMP count
 *     (omp_get_max_threads(): what a region without a num_threads clause would take) is above N,
 *     is a violation: the first of each kind per thread prints its stack.
 *   At exit, in a process named pdl: one line
 *   "omp-share: pid P regions R wide W over_icv O threads_created C" on
 *   stderr (C: pthread_create calls, libgomp's own team threads and Open MPI's included).
 * It interposes GOMP_parallel, the only entry point pdl imports from libgomp for a parallel
 * region (GCC lowers `parallel` and `parallel for schedule(static)` to it); the test checks with
 * nm that pdl imports no other GOMP_parallel* entry, so a region this shim cannot see fails the
 * test instead of passing it. Built by the test: gcc -shared -fPIC -fopenmp. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>   /* program_invocation_short_name */
#include <execinfo.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int share;
static long regions, wide, over_icv, created;   /* atomics (__atomic builtins) */
static __thread int told_wide, told_icv;

static void stack(const char *what, int n) {
  fprintf(stderr, "omp-share: VIOLATION pid %d tid %ld: %s %d > share %d%s\n", (int)getpid(),
          (long)syscall(SYS_gettid), what, n, share, syscall(SYS_gettid) == getpid() ? " (main thread)" : "");
  void *b[24];
  int k = backtrace(b, 24);
  backtrace_symbols_fd(b, k, 2);
}

__attribute__((constructor)) static void shim_init(void) {
  const char *e = getenv("PDL_TEST_OMP_SHARE");
  char *end = NULL;
  long v = e ? strtol(e, &end, 10) : 0;
  if (!e || !*e || *end || v < 1 || v > 4096) {
    fprintf(stderr, "omp_share_shim: PDL_TEST_OMP_SHARE must be a positive integer, got '%s'\n", e ? e : "(unset)");
    _exit(2);
  }
  share = (int)v;
}
__attribute__((destructor)) static void shim_end(void) {
  /* pdl's own line only: a one-process run's MPI singleton starts Open MPI's orted, which
   * inherits LD_PRELOAD (and may be killed before its destructors run) */
  if (strcmp(program_invocation_short_name, "pdl")) return;
  fprintf(stderr, "omp-share: pid %d regions %ld wide %ld over_icv %ld threads_created %ld\n", (int)getpid(),
          __atomic_load_n(&regions, __ATOMIC_RELAXED), __atomic_load_n(&wide, __ATOMIC_RELAXED),
          __atomic_load_n(&over_icv, __ATOMIC_RELAXED), __atomic_load_n(&created, __ATOMIC_RELAXED));
}

typedef struct { void (*fn)(void *); void *data; } body_t;
static void body(void *p) {
  const body_t *b = p;
  if (omp_get_thread_num() == 0) {
    const int n = omp_get_num_threads();
    if (n > share) {
      __atomic_add_fetch(&wide, 1, __ATOMIC_RELAXED);
      if (!told_wide++) stack("a team of", n);
    }
  }
  b->fn(b->data);
}

void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags) {
  static void (*real)(void (*)(void *), void *, unsigned, unsigned);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "GOMP_parallel");
  if (!real) { fprintf(stderr, "omp_share_shim: no GOMP_parallel after this library\n"); _exit(2); }
  __atomic_add_fetch(&regions, 1, __ATOMIC_RELAXED);
  const int icv = omp_get_max_threads();
  if (icv > share) {
    __atomic_add_fetch(&over_icv, 1, __ATOMIC_RELAXED);
    if (!told_icv++) stack("a region opened at OpenMP count", icv);
  }
  body_t b = {fn, data};
  real(body, &b, num_threads, flags);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
  static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
  if (!real) { fprintf(stderr, "omp_share_shim: no pthread_create after this library\n"); _exit(2); }
  __atomic_add_fetch(&created, 1, __ATOMIC_RELAXED);
  return real(th, attr, start, arg);
}
