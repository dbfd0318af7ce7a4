/* watchdog.c — see watchdog.h. One thread per process; the context string and the time of the
 * last progress are shared with it under g_mu. The condition variable runs on CLOCK_MONOTONIC
 * so a wall-clock jump neither fires nor hides a timeout. */
#include "rt/watchdog.h"
#include "coll/mpi_util.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static pthread_t g_thread;
static int g_running;          /* thread exists and should keep watching */
static double g_timeout;       /* seconds */
static double g_last;          /* monotonic time of the last progress */
static char g_ctx[512] = "starting";

static double mono_now(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fire(double idle, const char *ctx) {
  fflush(stdout);
  fprintf(stderr, "pdl: rank %d: watchdog: no progress for %.3g s while %s\n", pdl_mpi_rank(), idle, ctx);
  fflush(stderr);
#ifdef PDL_HAVE_MPI
  /* Last resort from a non-main thread: the main thread is stuck, so nothing else can end
   * the job. Open MPI's MPI_Abort kills every rank of COMM_WORLD. */
  if (pdl_mpi_active()) MPI_Abort(MPI_COMM_WORLD, PDL_EXIT_WATCHDOG);
#endif
  _exit(PDL_EXIT_WATCHDOG);
}

static void *watch(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  while (g_running) {
    double deadline = g_last + g_timeout, now = mono_now();
    if (now >= deadline) {
      char ctx[sizeof g_ctx];
      memcpy(ctx, g_ctx, sizeof ctx);
      double idle = now - g_last;
      pthread_mutex_unlock(&g_mu);
      fire(idle, ctx);
    }
    struct timespec ts;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&g_cv, &g_mu, &ts);
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

void watchdog_start(double timeout_s) {
  if (!(timeout_s > 0)) return;
  pthread_mutex_lock(&g_mu);
  g_timeout = timeout_s;
  g_last = mono_now();
  if (g_running) { pthread_cond_signal(&g_cv); pthread_mutex_unlock(&g_mu); return; }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g_cv, &ca);
  pthread_condattr_destroy(&ca);
  g_running = 1;
  int rc = pthread_create(&g_thread, NULL, watch, NULL);
  if (rc != 0) g_running = 0;
  pthread_mutex_unlock(&g_mu);
  if (rc != 0) fprintf(stderr, "pdl: warning: watchdog thread not started: %s\n", strerror(rc));
}

void watchdog_context(const char *fmt, ...) {
  char buf[sizeof g_ctx];
  va_list ap; va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&g_mu);
  memcpy(g_ctx, buf, sizeof buf);
  g_last = mono_now();
  pthread_mutex_unlock(&g_mu);
}

void watchdog_stop(void) {
  pthread_mutex_lock(&g_mu);
  if (!g_running) { pthread_mutex_unlock(&g_mu); return; }
  g_running = 0;
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_mu);
  pthread_join(g_thread, NULL);
  pthread_cond_destroy(&g_cv);
}
