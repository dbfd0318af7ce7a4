/* mpi_util.c — see mpi_util.h. The state below is written by the main thread only (init and
 * finalize); other threads (the watchdog) only read it. */
#include "coll/mpi_util.h"
#include <stdio.h>
#include <stdlib.h>

static int g_rank = 0, g_size = 1, g_active = 0;

#ifdef PDL_HAVE_MPI
void pdl_mpi_fail(int rc, const char *call, const char *file, int line) {
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) { snprintf(msg, sizeof msg, "error code %d", rc); len = 1; }
  msg[len > 0 && len <= MPI_MAX_ERROR_STRING ? len : 0] = 0;
  fflush(stdout);
  fprintf(stderr, "pdl: rank %d: MPI error in %s at %s:%d: %s\n", g_rank, call, file, line, msg);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* MPI_Abort does not return; this keeps the noreturn promise if it ever did */
}


int pdl_mpi_init(int *argc, char ***argv, int required) {
  int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) {
    fprintf(stderr, "pdl: MPI was already finalised; it cannot be initialised again\n");
    exit(1);
  }
  if (!inited) {
    int rc = MPI_Init_thread(argc, argv, required, &provided);
    if (rc != MPI_SUCCESS) { fprintf(stderr, "pdl: MPI_Init_thread failed (code %d)\n", rc); exit(1); }
  } else {
    MPI_Query_thread(&provided);
  }
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &g_size));
  g_active = 1;
  return provided;
}

void pdl_mpi_finalize(void) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  g_active = 0;   /* pdl_mpi_fail_abort: no MPI_Abort after MPI_Finalize */
  if (inited && !finalized) MPI_Finalize();
}
#else
int pdl_mpi_init(int *argc, char ***argv, int required) { (void)argc; (void)argv; return required; }
void pdl_mpi_finalize(void) {}
#endif

void pdl_mpi_fail_abort(const char *msg) {
  fflush(stdout);
#ifdef PDL_HAVE_MPI
  if (g_active) {
    fprintf(stderr, "pdl: rank %d of %d: %s\n", g_rank, g_size, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
  fprintf(stderr, "pdl: %s\n", msg);
  fflush(stderr);
  exit(1);
}

/* MPI initialised by someone else (a test, a library) still answers correctly. */
static int mpi_live(void) {
#ifdef PDL_HAVE_MPI
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  return inited && !finalized;
#else
  return 0;
#endif
}

int pdl_mpi_rank(void) {
  if (g_active) return g_rank;
#ifdef PDL_HAVE_MPI
  int r = 0;
  if (mpi_live() && MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS) return r;
#endif
  return 0;
}

int pdl_mpi_size(void) {
  if (g_active) return g_size;
#ifdef PDL_HAVE_MPI
  int n = 1;
  if (mpi_live() && MPI_Comm_size(MPI_COMM_WORLD, &n) == MPI_SUCCESS) return n;
#endif
  return 1;
}

int pdl_mpi_active(void) { return mpi_live(); }
