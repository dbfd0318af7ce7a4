/* coll_nccl.c — the NCCL backend of pdl coll and of training's --coll nccl: device buffers, one
 * CUDA device per rank (the rank's index among the ranks of its node, modulo the devices it
 * sees; two ranks on one GPU are refused), the communicator bootstrapped over MPI (rank 0's
 * ncclUniqueId broadcast with MPI_Bcast), one non-blocking stream; every call is synchronised
 * on that stream before it returns. "No device" is
 * cudaGetDeviceCount failing or returning 0 on any rank; all ranks agree before anything else
 * is tried, so one rank without a GPU makes the whole run skip instead of hanging.
 * NCCL has no v collectives; the uneven-block ops that training needs (src/algo/kfac_dist.c) are
 * built from grouped calls, one per rank's block: reduce_scatterv = ncclReduce of block r to root
 * r, allgatherv = ncclBroadcast of block r from root r (in place when the send block is this
 * rank's slot of recv). The training seam (coll_seam.c) and pdl coll run them alike.
 * Plain C against cuda_runtime.h and nccl.h; compiled only with PDL_HAVE_NCCL. Against the
 * stand-ins of kernels/cuda/emu (NCCL as MPI on host memory) it is the emulated build,
 * $(BUILD)/nccl-emu/pdl, that checks this file without a GPU. */
#include "coll/coll.h"
#include "coll/mpi_util.h"
#include "util/util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(PDL_HAVE_NCCL) && defined(PDL_HAVE_MPI)
#include <cuda_runtime.h>
#include <nccl.h>

static ncclComm_t g_comm;
static cudaStream_t g_stream;
static int g_dev = -1;

static void fail_job(void) __attribute__((noreturn));
static void fail_job(void) {
  fflush(stdout); fflush(stderr);
  if (pdl_mpi_active()) MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

#define CHECK_CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
  fprintf(stderr, "pdl: rank %d: CUDA error in %s at %s:%d: %s (device %d)\n", pdl_mpi_rank(), #call, \
          __FILE__, __LINE__, cudaGetErrorString(e_), g_dev); fail_job(); } } while (0)

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
#define NCCL_LAST(comm) ((comm) ? ncclGetLastError(comm) : "")
#else
#define NCCL_LAST(comm) ""
#endif
#define CHECK_NCCL(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { \
  fprintf(stderr, "pdl: rank %d: NCCL error in %s at %s:%d: %s %s(device %d)\n", pdl_mpi_rank(), #call, \
          __FILE__, __LINE__, ncclGetErrorString(r_), NCCL_LAST(g_comm), g_dev); fail_job(); } } while (0)

/* The CUDA device is current per host thread: a thread other than the one that set the backend
 * up (a runtime role calling a collective) makes g_dev current before its first CUDA call. */
static _Thread_local int t_dev = -1;
static void on_device(void) {
  if (t_dev != g_dev) { CHECK_CUDA(cudaSetDevice(g_dev)); t_dev = g_dev; }
}

static ncclDataType_t nccl_type(coll_dtype_t dt) { return dt == COLL_DOUBLE ? ncclFloat64 : ncclFloat32; }

static int nccl_supports(coll_op_t op) { (void)op; return 1; }

static void *nccl_alloc(size_t bytes) {
  void *p = NULL;
  on_device();
  CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 64));
  return p;
}
static void nccl_release(void *p) { on_device(); if (p) CHECK_CUDA(cudaFree(p)); }
/* Copies go on our own stream and are waited for: the stream is non-blocking, so a plain
 * cudaMemcpy on the legacy default stream would not be ordered before the next collective
 * (pageable host-to-device copies may return before the DMA has landed). */
static void nccl_upload(void *dst, const void *src, size_t bytes) {
  on_device();
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
}
static void nccl_download(void *dst, const void *src, size_t bytes) {
  ncclResult_t async = ncclSuccess;
  on_device();
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  CHECK_NCCL(ncclCommGetAsyncError(g_comm, &async));
  CHECK_NCCL(async);
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream));
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
}
static void nccl_barrier(void) { CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

/* Queues c on stream st (no wait). */
static void nccl_queue(const coll_call_t *c, cudaStream_t st) {
  ncclDataType_t t = nccl_type(c->dt);
  size_t es = coll_elt_size(c->dt);
  size_t r = (size_t)c->rank, mine = c->counts[r], d = c->displs[r];
  char *recv = c->recv;
  const void *in = c->inplace ? (const void *)recv : c->send;
  on_device();
  switch (c->op) {
  case COLL_ALLREDUCE: case COLL_RSV_VIA_ALLREDUCE:
    CHECK_NCCL(ncclAllReduce(in, recv, c->count, t, ncclSum, g_comm, st)); break;
  case COLL_REDUCE:
    CHECK_NCCL(ncclReduce(in, recv, c->count, t, ncclSum, c->root, g_comm, st)); break;
  case COLL_BCAST:
    CHECK_NCCL(ncclBroadcast(recv, recv, c->count, t, c->root, g_comm, st)); break;
  case COLL_ALLGATHER:
    /* in place: the send block is this rank's slot of recv */
    CHECK_NCCL(ncclAllGather(c->inplace ? (const void *)(recv + d * es) : c->send, recv, mine, t, g_comm, st));
    break;
  case COLL_REDUCE_SCATTER:
    /* in place: input is the whole of recv, the result lands in this rank's slot */
    CHECK_NCCL(ncclReduceScatter(in, c->inplace ? (void *)(recv + d * es) : recv, mine, t, ncclSum, g_comm, st));
    break;
  case COLL_AGV_VIA_ALLREDUCE:
    if (d) CHECK_CUDA(cudaMemsetAsync(recv, 0, d * es, st));
    if (c->count > d + mine) CHECK_CUDA(cudaMemsetAsync(recv + (d + mine) * es, 0, (c->count - d - mine) * es, st));
    if (!c->inplace && mine) CHECK_CUDA(cudaMemcpyAsync(recv + d * es, c->send, mine * es, cudaMemcpyDeviceToDevice, st));
    CHECK_NCCL(ncclAllReduce(recv, recv, c->count, t, ncclSum, g_comm, st));
    break;
  case COLL_REDUCE_SCATTERV:
    /* block q of the input summed to rank q; in place the result stays at this rank's slot */
    CHECK_NCCL(ncclGroupStart());
    for (int q = 0; q < c->nranks; q++) {
      const char *src = (const char *)in + c->displs[q] * es;
      void *dst = c->inplace ? (void *)(recv + c->displs[q] * es) : (void *)recv;  /* used at root q only */
      CHECK_NCCL(ncclReduce(src, dst, c->counts[q], t, ncclSum, q, g_comm, st));
    }
    CHECK_NCCL(ncclGroupEnd());
    break;
  case COLL_ALLGATHERV:
    /* block q from rank q into its slot of recv on every rank */
    CHECK_NCCL(ncclGroupStart());
    for (int q = 0; q < c->nranks; q++) {
      char *slot = recv + c->displs[q] * es;
      const void *src = (size_t)q == r && !c->inplace ? c->send : (const void *)slot;
      CHECK_NCCL(ncclBroadcast(src, slot, c->counts[q], t, q, g_comm, st));
    }
    CHECK_NCCL(ncclGroupEnd());
    break;
  case COLL_MEMCPY:
    CHECK_CUDA(cudaMemcpyAsync(recv, c->send, c->count * es, cudaMemcpyDeviceToDevice, st)); break;
  case COLL_NOPS:
    die("internal: COLL_NOPS is not a collective");
  }
}
static void nccl_run(const coll_call_t *c) {
  nccl_queue(c, g_stream);
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
}
/* On the caller's stream (device memory of this rank's device, the one g_dev names): queued after
 * the work already on it, no wait (training's NCCL on the compute stream, issue 35 G). */
static void nccl_run_on(const coll_call_t *c, void *stream) { nccl_queue(c, (cudaStream_t)stream); }
static int nccl_device(void) { return g_dev; }

static void nccl_teardown(void) {
  if (g_comm) { CHECK_NCCL(ncclCommDestroy(g_comm)); g_comm = NULL; }
  if (g_stream) { CHECK_CUDA(cudaStreamDestroy(g_stream)); g_stream = NULL; }
}

static const coll_backend_t g_nccl = {
  .name = "nccl", .inplace_rs_at_block = 1, .supports = nccl_supports, .alloc = nccl_alloc,
  .release = nccl_release, .upload = nccl_upload, .download = nccl_download, .run = nccl_run,
  .barrier = nccl_barrier, .teardown = nccl_teardown, .run_on = nccl_run_on, .device = nccl_device,
};

const coll_backend_t *coll_backend_nccl(char *why, size_t why_len) {
  int rank = pdl_mpi_rank(), nranks = pdl_mpi_size();
  /* 1. every rank looks for devices; all agree on the outcome */
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess) ndev = 0;
  MPI_Comm node;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local_rank = 0, local_size = 1;
  CHECK_MPI(MPI_Comm_rank(node, &local_rank));
  CHECK_MPI(MPI_Comm_size(node, &local_size));
  int worst = 0, none = ndev == 0;
  CHECK_MPI(MPI_Allreduce(&none, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (worst) {
    /* without a loaded NVIDIA driver the runtime's "CUDA driver version is insufficient" misleads */
    const int driver = access("/proc/driver/nvidia/version", F_OK) == 0;
    if (ndev == 0) snprintf(why, why_len, "no CUDA device found (rank %d: %s%s)", rank,
                            e == cudaSuccess ? "cudaGetDeviceCount: 0 devices" : driver ? "cudaGetDeviceCount: " : "",
                            e == cudaSuccess ? "" : driver ? cudaGetErrorString(e) : "no NVIDIA driver is loaded: /proc/driver/nvidia/version is absent");
    else snprintf(why, why_len, "no CUDA device found (on another rank; this one has %d)", ndev);
    (void)cudaGetLastError();  /* clear the failed query */
    CHECK_MPI(MPI_Comm_free(&node));
    return NULL;
  }
  /* 2. one device per rank: the rank's index on its node among the devices it can see (a
   * launcher that gives every rank its own CUDA_VISIBLE_DEVICES leaves each rank one device 0,
   * which is fine). Two ranks of a node on the same physical GPU (same PCI bus id) is an error:
   * NCCL refuses duplicate GPUs in a communicator. */
  g_dev = local_rank % ndev;
  char bus[32] = {0};
  CHECK_CUDA(cudaDeviceGetPCIBusId(bus, (int)sizeof bus, g_dev));
  char *all = xcalloc((size_t)local_size, sizeof bus);   /* [local_size][32] bus ids */
  CHECK_MPI(MPI_Allgather(bus, (int)sizeof bus, MPI_CHAR, all, (int)sizeof bus, MPI_CHAR, node));
  int dup = -1;
  for (int r = 0; r < local_size && dup < 0; r++)
    if (r != local_rank && !strncmp(all + (size_t)r * sizeof bus, bus, sizeof bus)) dup = r;
  xfree(all);
  CHECK_MPI(MPI_Comm_free(&node));
  int bad = dup >= 0;
  CHECK_MPI(MPI_Allreduce(&bad, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (worst) {
    if (bad)
      fprintf(stderr, "pdl: rank %d: shares CUDA device %s with local rank %d (%d ranks on this node, %d visible "
              "device(s)): NCCL needs one device per rank\n", rank, bus, dup, local_size, ndev);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    pdl_mpi_finalize();
    exit(1);
  }
  CHECK_CUDA(cudaSetDevice(g_dev));
  t_dev = g_dev;
  {
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, g_dev));
    char desc[192];
#ifdef PDL_NCCL_EMULATED
    snprintf(desc, sizeof desc, "%.160s (NCCL stand-in over MPI)", prop.name);
#else
    snprintf(desc, sizeof desc, "%.160s, sm_%d%d", prop.name, prop.major, prop.minor);
#endif
    json_meta_set_gpu(desc); /* the results lines name the GPU used */
  }
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  CHECK_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  CHECK_NCCL(ncclCommInitRank(&g_comm, nranks, id, rank));
  return &g_nccl;
}
#elif defined(PDL_HAVE_NCCL)
const coll_backend_t *coll_backend_nccl(char *why, size_t why_len) {
  snprintf(why, why_len, "this build has NCCL but no MPI to bootstrap it (built with NO_MPI=1)");
  return NULL;
}
#else
const coll_backend_t *coll_backend_nccl(char *why, size_t why_len) {
  snprintf(why, why_len, "NCCL backend not built (needs nvcc and nccl.h at build time)");
  return NULL;
}
#endif

const coll_lib_t coll_lib_nccl = {"nccl", "NCCL on one CUDA device per rank, host buffers staged through it (exits 2 "
                                  "without a device)", 0, coll_backend_nccl};
