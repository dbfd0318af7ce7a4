/* mpi_util.h (rt) — forwards to coll/mpi_util.h. The MPI helpers (CHECK_MPI, pdl_mpi_init, rank
 * and size) moved below the runtime, into the collective layer (src/coll), which uses them and
 * must not include src/rt (issue 36, "one collective seam"); the callers above the runtime that
 * include this path (src/algo, src/rt, tests) keep working and may move to coll/mpi_util.h. */
#ifndef PDL_RT_MPI_UTIL_H
#define PDL_RT_MPI_UTIL_H
#include "coll/mpi_util.h"
#endif
