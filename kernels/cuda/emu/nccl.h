/* nccl.h (emulated) — host stand-in for the NCCL subset src/coll/coll_nccl.c uses, so the NCCL path
 * of the collective seam (src/coll/coll.h) runs and is checked on a machine without a GPU. Built into
 * $(BUILD)/nccl-emu/pdl by `make` (see the Makefile, target nccl-emu), never into bin/pdl.
 *
 * Each NCCL call is the MPI call with the same meaning on the same buffers, made at once on the
 * calling thread: emulated "device" memory is host memory (cuda_runtime.h of this folder), so MPI
 * reads and writes it directly, and the stream only has to be a real one (non-NULL). With the same
 * MPI call the sums are MPI's: at 2 ranks every element is a + b, whatever the order, so the seam's
 * NCCL path gives the MPI path's result bit for bit (tests/t_coll_seam.sh).
 *   ncclAllReduce      MPI_Allreduce (MPI_IN_PLACE when send == recv)
 *   ncclReduce         MPI_Reduce to root (in place at the root when send == recv)
 *   ncclBroadcast      MPI_Bcast of recv (the root first copies send into recv)
 *   ncclAllGather      MPI_Allgather (in place when send is this rank's slot of recv)
 *   ncclReduceScatter  MPI_Reduce_scatter_block; in place (recv = send + rank * count) the result is
 *                      moved to recv, and the start of send is overwritten, as NCCL leaves the rest of
 *                      an in-place buffer unspecified
 *   ncclGroupStart/End counted only: the calls inside a group run at once, in order. That is enough
 *                      for groups every rank issues in the same order (the seam's grouped broadcasts
 *                      and reduces), and not for point-to-point pairs, which are not offered.
 * The communicator is a duplicate of MPI_COMM_WORLD; ncclCommInitRank checks that nranks and rank
 * are COMM_WORLD's and that every rank got rank 0's id. Sums only (ncclSum), float32 and float64.
 * Counts above INT_MAX are ncclInvalidArgument (MPI counts are int). Errors come back as
 * ncclResult_t with ncclGetLastError's text, as from NCCL; an MPI error aborts through MPI's own
 * handler. */
#ifndef PDL_EMU_NCCL_H
#define PDL_EMU_NCCL_H
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cuda_runtime.h"

#ifdef __cplusplus
#define EMU_NCCL_API inline
#else
#define EMU_NCCL_API static inline
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 18
#define NCCL_PATCH 0
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)
#define NCCL_UNIQUE_ID_BYTES 128
#define PDL_NCCL_EMULATED 1   /* lets a caller say "host emulator" where it names the library */

typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
               ncclInvalidArgument = 4, ncclInvalidUsage = 5 } ncclResult_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
typedef enum { ncclFloat32 = 7, ncclFloat = 7, ncclFloat64 = 8, ncclDouble = 8 } ncclDataType_t;
typedef struct emu_nccl_comm { MPI_Comm comm; int rank, nranks; } *ncclComm_t;

static const char emu_nccl_magic[] = "pdl-emu-nccl";
static char emu_nccl_last[256];   /* ncclGetLastError's text (per translation unit: one user) */
static int emu_nccl_groups;       /* ncclGroupStart depth */

EMU_NCCL_API ncclResult_t emu_nccl_fail(ncclResult_t r, const char *what) {
  snprintf(emu_nccl_last, sizeof emu_nccl_last, "emulated NCCL: %s", what);
  return r;
}
EMU_NCCL_API const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error";
  case ncclSystemError: return "unhandled system error";
  case ncclInternalError: return "internal error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  }
  return "unknown result code";
}
EMU_NCCL_API const char *ncclGetLastError(ncclComm_t comm) { (void)comm; return emu_nccl_last; }
EMU_NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async) {
  if (!comm || !async) return emu_nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: NULL argument");
  *async = ncclSuccess;
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id) return emu_nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: NULL id");
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "%s:%ld", emu_nccl_magic, (long)getpid());
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  int inited = 0, wsize = 0, wrank = 0;
  MPI_Initialized(&inited);
  if (!comm) return emu_nccl_fail(ncclInvalidArgument, "ncclCommInitRank: NULL comm");
  if (!inited) return emu_nccl_fail(ncclInvalidUsage, "ncclCommInitRank: the stand-in runs over MPI, which is not initialised");
  if (strncmp(id.internal, emu_nccl_magic, sizeof emu_nccl_magic - 1))
    return emu_nccl_fail(ncclInvalidArgument, "ncclCommInitRank: the id is not one ncclGetUniqueId made (not broadcast?)");
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  if (nranks != wsize || rank != wrank)
    return emu_nccl_fail(ncclInvalidArgument, "ncclCommInitRank: the stand-in's communicator is MPI_COMM_WORLD's ranks");
  ncclComm_t c = (ncclComm_t)calloc(1, sizeof *c);
  if (!c) return emu_nccl_fail(ncclSystemError, "ncclCommInitRank: out of memory");
  if (MPI_Comm_dup(MPI_COMM_WORLD, &c->comm) != MPI_SUCCESS) { free(c); return emu_nccl_fail(ncclSystemError, "MPI_Comm_dup failed"); }
  c->rank = rank; c->nranks = nranks;
  *comm = c;
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  int fin = 0;
  if (!comm) return ncclSuccess;
  MPI_Finalized(&fin);
  if (!fin) MPI_Comm_free(&comm->comm);
  free(comm);
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclGroupStart(void) { emu_nccl_groups++; return ncclSuccess; }
EMU_NCCL_API ncclResult_t ncclGroupEnd(void) {
  if (emu_nccl_groups <= 0) return emu_nccl_fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  emu_nccl_groups--;
  return ncclSuccess;
}

/* the checks every collective makes; *t and *es get the MPI type and element size */
EMU_NCCL_API ncclResult_t emu_nccl_args(const char *fn, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                        ncclComm_t comm, cudaStream_t s, MPI_Datatype *t, size_t *es) {
  char m[160];
  if (!comm) { snprintf(m, sizeof m, "%s: NULL communicator", fn); return emu_nccl_fail(ncclInvalidArgument, m); }
  if (!s) { snprintf(m, sizeof m, "%s: NULL stream", fn); return emu_nccl_fail(ncclInvalidArgument, m); }
  if (count > (size_t)INT_MAX) { snprintf(m, sizeof m, "%s: count %zu exceeds MPI's int", fn, count); return emu_nccl_fail(ncclInvalidArgument, m); }
  if (op != ncclSum) { snprintf(m, sizeof m, "%s: only ncclSum is emulated", fn); return emu_nccl_fail(ncclInvalidArgument, m); }
  if (dt == ncclFloat32) { *t = MPI_FLOAT; *es = sizeof(float); }
  else if (dt == ncclFloat64) { *t = MPI_DOUBLE; *es = sizeof(double); }
  else { snprintf(m, sizeof m, "%s: only float32 and float64 are emulated", fn); return emu_nccl_fail(ncclInvalidArgument, m); }
  return ncclSuccess;
}
#define EMU_NCCL_ARGS(fn, count, dt, op) \
  MPI_Datatype t_; size_t es_; \
  { ncclResult_t r_ = emu_nccl_args(fn, count, dt, op, comm, stream, &t_, &es_); if (r_ != ncclSuccess) return r_; }
#define EMU_NCCL_ROOT(fn) \
  if (root < 0 || root >= comm->nranks) return emu_nccl_fail(ncclInvalidArgument, fn ": root out of range");

EMU_NCCL_API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                        ncclComm_t comm, cudaStream_t stream) {
  EMU_NCCL_ARGS("ncclAllReduce", count, dt, op);
  MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, t_, MPI_SUM, comm->comm);
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  EMU_NCCL_ARGS("ncclReduce", count, dt, op);
  EMU_NCCL_ROOT("ncclReduce");
  if (comm->rank == root) MPI_Reduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, t_, MPI_SUM, root, comm->comm);
  else MPI_Reduce(send, NULL, (int)count, t_, MPI_SUM, root, comm->comm);
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dt, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  EMU_NCCL_ARGS("ncclBroadcast", count, dt, ncclSum);
  EMU_NCCL_ROOT("ncclBroadcast");
  if (comm->rank == root && send != recv && count) memmove(recv, send, count * es_);
  MPI_Bcast(recv, (int)count, t_, root, comm->comm);
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t dt,
                                        ncclComm_t comm, cudaStream_t stream) {
  EMU_NCCL_ARGS("ncclAllGather", sendcount * (size_t)(comm ? comm->nranks : 1), dt, ncclSum);
  const void *in = send == (const char *)recv + (size_t)comm->rank * sendcount * es_ ? MPI_IN_PLACE : send;
  MPI_Allgather(in, (int)sendcount, t_, recv, (int)sendcount, t_, comm->comm);
  return ncclSuccess;
}
EMU_NCCL_API ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t dt,
                                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  EMU_NCCL_ARGS("ncclReduceScatter", recvcount * (size_t)(comm ? comm->nranks : 1), dt, op);
  if (recv == (const char *)send + (size_t)comm->rank * recvcount * es_) {
    MPI_Reduce_scatter_block(MPI_IN_PLACE, (void *)send, (int)recvcount, t_, MPI_SUM, comm->comm);
    if (recvcount && recv != send) memmove(recv, send, recvcount * es_);
  } else {
    MPI_Reduce_scatter_block(send, recv, (int)recvcount, t_, MPI_SUM, comm->comm);
  }
  return ncclSuccess;
}
#undef EMU_NCCL_ARGS
#undef EMU_NCCL_ROOT
#endif
