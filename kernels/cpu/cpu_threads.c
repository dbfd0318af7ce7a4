/* cpu_threads.c — per-calling-thread OpenMP thread count for the cpu_* kernels, and the one-time
 * switch of OpenBLAS to single-threaded mode (all kernel parallelism is OpenMP, ours).
 * The count lives in a thread-local variable read by each kernel's num_threads clause: no global
 * OpenMP state is touched, so worker pthreads training their own replicas never interfere. */
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"

static _Thread_local int cpu_threads_tls; /* 0 = not set: fall back to omp_get_max_threads() */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single(void) { openblas_set_num_threads(1); }

void cpu_blas_init(void) { pthread_once(&blas_once, blas_single); }

void cpu_set_threads(int nthreads) {
  cpu_blas_init();
  cpu_threads_tls = nthreads < 1 ? 1 : nthreads;
}

int cpu_get_threads(void) {
  if (cpu_threads_tls > 0) return cpu_threads_tls;
  int n = omp_get_max_threads();
  return n < 1 ? 1 : n;
}
