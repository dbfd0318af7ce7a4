/* coll_mpi.c — the MPI backend of pdl coll: host buffers, MPI_SUM, root 0 by default.
 * reduce_scatter uses MPI_Reduce_scatter_block, reduce_scatterv MPI_Reduce_scatter (uneven
 * receive counts: Reduce + Scatterv in one call), allgatherv MPI_Allgatherv. The two K-FAC
 * workarounds are built from MPI_Allreduce exactly as the NCCL backend builds them. MPI counts
 * are int: pdl coll caps sizes so they fit. */
#include "coll/coll.h"
#include "coll/mpi_util.h"
#include "util/util.h"
#include <stdio.h>
#include <string.h>

#ifdef PDL_HAVE_MPI
static MPI_Datatype mpi_type(coll_dtype_t dt) { return dt == COLL_DOUBLE ? MPI_DOUBLE : MPI_FLOAT; }

static int mpi_supports(coll_op_t op) { (void)op; return 1; }
static void *mpi_alloc(size_t bytes) { return xmalloc(bytes); }
static void mpi_release(void *p) { xfree(p); }
static void mpi_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static void mpi_barrier(void) { CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); }
static void mpi_teardown(void) {}

/* int counts and displacements for the v calls, rebuilt only when the layout changes */
static int *g_icounts, *g_idispls;
static void int_layout(const coll_call_t *c) {
  if (!g_icounts) {
    g_icounts = xmalloc(sizeof(int) * (size_t)c->nranks);
    g_idispls = xmalloc(sizeof(int) * (size_t)c->nranks);
  }
  for (int r = 0; r < c->nranks; r++) { g_icounts[r] = (int)c->counts[r]; g_idispls[r] = (int)c->displs[r]; }
}

static void mpi_run(const coll_call_t *c) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Datatype t = mpi_type(c->dt);
  size_t es = coll_elt_size(c->dt);
  int n = (int)c->count, mine = (int)c->counts[c->rank];
  const void *in = c->inplace ? MPI_IN_PLACE : c->send;
  char *recv = c->recv;
  switch (c->op) {
  case COLL_ALLREDUCE:
    CHECK_MPI(MPI_Allreduce(in, recv, n, t, MPI_SUM, w)); break;
  case COLL_REDUCE:
    if (c->inplace) CHECK_MPI(MPI_Reduce(c->rank == c->root ? MPI_IN_PLACE : recv, recv, n, t, MPI_SUM, c->root, w));
    else CHECK_MPI(MPI_Reduce(c->send, recv, n, t, MPI_SUM, c->root, w));
    break;
  case COLL_BCAST:
    CHECK_MPI(MPI_Bcast(recv, n, t, c->root, w)); break;
  case COLL_ALLGATHER:
    CHECK_MPI(MPI_Allgather(in, mine, t, recv, mine, t, w)); break;
  case COLL_ALLGATHERV:
    int_layout(c);
    CHECK_MPI(MPI_Allgatherv(in, mine, t, recv, g_icounts, g_idispls, t, w)); break;
  case COLL_REDUCE_SCATTER:
    CHECK_MPI(MPI_Reduce_scatter_block(in, recv, mine, t, MPI_SUM, w)); break;
  case COLL_REDUCE_SCATTERV:
    int_layout(c);
    CHECK_MPI(MPI_Reduce_scatter(in, recv, g_icounts, t, MPI_SUM, w)); break;
  case COLL_RSV_VIA_ALLREDUCE:
    CHECK_MPI(MPI_Allreduce(in, recv, n, t, MPI_SUM, w)); break;
  case COLL_AGV_VIA_ALLREDUCE: {
    /* zero everything but this rank's block, put the block in, sum over ranks */
    size_t d = c->displs[c->rank], m = c->counts[c->rank];
    memset(recv, 0, d * es);
    memset(recv + (d + m) * es, 0, (c->count - d - m) * es);
    if (!c->inplace) memcpy(recv + d * es, c->send, m * es);
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, recv, n, t, MPI_SUM, w));
    break;
  }
  case COLL_MEMCPY:
    memcpy(recv, c->send, c->count * es); break;
  case COLL_NOPS: break;
  }
}

static const coll_backend_t g_mpi = {
  .name = "mpi", .inplace_rs_at_block = 0, .supports = mpi_supports, .alloc = mpi_alloc,
  .release = mpi_release, .upload = mpi_copy, .download = mpi_copy, .run = mpi_run,
  .barrier = mpi_barrier, .teardown = mpi_teardown,
};
const coll_backend_t *coll_backend_mpi(void) { return &g_mpi; }
#else
const coll_backend_t *coll_backend_mpi(void) { return NULL; }
#endif

static const coll_backend_t *mpi_open(char *why, size_t why_len) {
  const coll_backend_t *b = coll_backend_mpi();
  if (!b) snprintf(why, why_len, "this build has no MPI (built with NO_MPI=1)");
  return b;
}
const coll_lib_t coll_lib_mpi = {"mpi", "MPI on host buffers (the default)", 1, mpi_open};
