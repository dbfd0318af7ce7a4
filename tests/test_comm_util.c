/* test_comm_util.c — the shared MPI helpers (src/coll/mpi_util.h) and the watchdog
 * (src/rt/watchdog.h). Each case that ends a process runs in a forked child whose exit status
 * and stderr are checked; MPI is only ever initialised in children (as a singleton), so the
 * parent stays free to fork again. */
/* harness.h's RUN() puts "if (...) x; fflush(stdout);" on one line, which gcc 12 flags as
 * misleading indentation under -Werror (reported to the lead; harness.h is not this file's). */
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#include "tests/harness.h"
#include "coll/mpi_util.h"
#include "rt/watchdog.h"
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs fn in a child with stderr captured into err (NUL-terminated); returns the wait status.
 * Every child is killed by SIGALRM after 30 s. */
static int run_child(void (*fn)(void), char *err, size_t errlen) {
  int fd[2];
  if (pipe(fd) != 0) { perror("pipe"); exit(1); }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 2);
    alarm(30);          /* a child that should have been ended but was not fails instead of hanging */
    fn();
    _exit(0);
  }
  close(fd[1]);
  size_t got = 0;
  ssize_t k;
  while (got + 1 < errlen && (k = read(fd[0], err + got, errlen - 1 - got)) > 0) got += (size_t)k;
  err[got] = 0;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- mpi_util ---- */
static void child_lifecycle(void) {
  int bad = 0;
  if (pdl_mpi_rank() != 0 || pdl_mpi_size() != 1 || pdl_mpi_active()) bad |= 1;  /* before init */
#ifdef PDL_HAVE_MPI
  int p1 = pdl_mpi_init(NULL, NULL, MPI_THREAD_FUNNELED);
  int p2 = pdl_mpi_init(NULL, NULL, MPI_THREAD_FUNNELED);           /* idempotent */
  if (p1 != p2 || p1 < MPI_THREAD_FUNNELED) bad |= 2;
  if (pdl_mpi_rank() != 0 || pdl_mpi_size() != 1 || !pdl_mpi_active()) bad |= 4; /* singleton */
  pdl_mpi_finalize();
  pdl_mpi_finalize();                                                /* idempotent */
  if (pdl_mpi_active() || pdl_mpi_rank() != 0 || pdl_mpi_size() != 1) bad |= 8;
#else
  if (pdl_mpi_init(NULL, NULL, 3) != 3) bad |= 2;                   /* no MPI: returns required */
  pdl_mpi_finalize();
#endif
  _exit(bad);
}

static void test_mpi_lifecycle(void) {
  char err[4096];
  int st = run_child(child_lifecycle, err, sizeof err);
  EXPECT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d (bit mask of failed checks), stderr: %s",
             WIFEXITED(st) ? WEXITSTATUS(st) : -1, err);
}

#ifdef PDL_HAVE_MPI
static void child_bad_call(void) {
  pdl_mpi_init(NULL, NULL, MPI_THREAD_SINGLE);
  int x = 0;
  CHECK_MPI(MPI_Send(&x, 1, MPI_INT, 7, 0, MPI_COMM_WORLD));  /* rank 7 does not exist */
  _exit(0);                                                     /* not reached */
}

static void test_check_mpi_reports_and_aborts(void) {
  char err[8192];
  int st = run_child(child_bad_call, err, sizeof err);
  EXPECT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "wanted exit 1 from MPI_Abort, status %d", st);
  EXPECT_MSG(strstr(err, "pdl: rank 0: MPI error in MPI_Send(&x, 1, MPI_INT, 7, 0, MPI_COMM_WORLD) at tests/test_comm_util.c:") != NULL,
             "message names rank, call, file: %s", err);
  EXPECT_MSG(strstr(err, "rank") && (strstr(err, "MPI_ERR_RANK") || strstr(err, "invalid rank")),
             "MPI's own error string is included: %s", err);
}
#endif

/* ---- watchdog ---- */
static void child_hang(void) {
  watchdog_start(0.3);
  watchdog_context("unit test step %d of %s", 7, "the hang case");
  for (;;) pause();
}

static void test_watchdog_fires(void) {
  char err[8192];
  int st = run_child(child_hang, err, sizeof err);
  EXPECT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == PDL_EXIT_WATCHDOG, "wanted exit 124, status %d", st);
  EXPECT_MSG(strstr(err, "pdl: rank 0: watchdog: no progress for ") != NULL, "message: %s", err);
  EXPECT_MSG(strstr(err, " s while unit test step 7 of the hang case") != NULL, "context in message: %s", err);
}

/* progress every 10 ms for 1.5 s under a 1 s timeout, then stop: must not fire
 * (margin: 100x between the progress interval and the timeout, for a loaded machine) */
static void child_busy(void) {
  watchdog_start(1.0);
  for (int i = 0; i < 150; i++) { watchdog_context("step %d", i); sleep_ms(10); }
  watchdog_stop();
  watchdog_stop();      /* idempotent */
  sleep_ms(1500);       /* stopped: a silent stretch longer than the timeout is fine now */
  _exit(0);
}

static void test_watchdog_quiet_with_progress(void) {
  char err[4096];
  int st = run_child(child_busy, err, sizeof err);
  EXPECT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err);
}

static void child_off(void) {
  watchdog_start(0);    /* 0 = off */
  watchdog_context("idle");
  sleep_ms(300);
  watchdog_stop();
  _exit(0);
}

static void test_watchdog_off(void) {
  char err[4096];
  int st = run_child(child_off, err, sizeof err);
  EXPECT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !err[0], "status %d, stderr: %s", st, err);
}

int main(void) {
  RUN(test_mpi_lifecycle);
#ifdef PDL_HAVE_MPI
  RUN(test_check_mpi_reports_and_aborts);
#endif
  RUN(test_watchdog_fires);
  RUN(test_watchdog_quiet_with_progress);
  RUN(test_watchdog_off);
  return harness_exit();
}
