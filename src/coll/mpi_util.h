/* mpi_util.h — the shared MPI helpers: error checking, idempotent init/finalize, rank/size.
 * They live in the collective layer (src/coll), the lowest one that calls MPI; the runtime
 * (src/rt) and the CLI include this header, and the algorithm layer asks the runtime
 * (rt_real_init, rt_real_node, rt_real_nnodes, rt_real_finalize in rt/rt.h).
 * Conventions: CHECK_MPI wraps every MPI call; COMM_WORLD carries MPI_ERRORS_RETURN after
 * pdl_mpi_init so a failing call comes back to CHECK_MPI, which names the rank, the statement,
 * file:line and MPI's own error string, then aborts the whole job (exit code 1).
 * Without PDL_HAVE_MPI the functions are single-process fallbacks (rank 0 of 1) and CHECK_MPI
 * is not defined: code that calls MPI is itself under #ifdef PDL_HAVE_MPI. */
#ifndef PDL_MPI_UTIL_H
#define PDL_MPI_UTIL_H

#ifdef PDL_HAVE_MPI
#include <mpi.h>
void pdl_mpi_fail(int rc, const char *call, const char *file, int line) __attribute__((noreturn));
#define CHECK_MPI(call) do { int pdl_mpi_rc_ = (call); \
  if (pdl_mpi_rc_ != MPI_SUCCESS) pdl_mpi_fail(pdl_mpi_rc_, #call, __FILE__, __LINE__); } while (0)
#endif

/* Idempotent. Works under mpirun/srun and as a singleton (no launcher). Returns the provided
 * thread level (MPI_THREAD_*); without MPI it returns `required`. */
int pdl_mpi_init(int *argc, char ***argv, int required);
void pdl_mpi_finalize(void);   /* idempotent; no-op when MPI was never initialised */
int pdl_mpi_rank(void);        /* rank in COMM_WORLD; 0 when MPI is not initialised/not built */
int pdl_mpi_size(void);        /* size of COMM_WORLD; 1 likewise */
/* A device backend's failure (kernels_set_fail_handler's handler, installed where a run starts MPI):
 * while MPI is active, "pdl: rank R of N: msg" and MPI_Abort, so every rank ends at once instead of
 * waiting for the watchdog; otherwise "pdl: msg" and exit(1). Does not return. */
void pdl_mpi_fail_abort(const char *msg) __attribute__((noreturn));
int pdl_mpi_active(void);      /* 1 while MPI is initialised and not finalised (any thread may ask) */

#endif
