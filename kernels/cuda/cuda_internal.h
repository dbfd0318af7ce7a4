/* cuda_internal.h — shared by the kernels/cuda .cu files only (C++): error-check macros and the per-thread
 * context (device, stream, cuBLAS handle, a growable device scratch for small reductions and
 * workspaces, a cuSOLVER handle once cuda_inv.cu made one).
 * Every CUDA runtime / cuBLAS call goes through CHECK_CUDA / CHECK_CUBLAS, every kernel launch is
 * followed by CHECK_LAUNCH; a failure names the call, file and line and exits 1. */
#ifndef PDL_CUDA_INTERNAL_H
#define PDL_CUDA_INTERNAL_H
#include <cstddef>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "kernels/cuda/cuda_layers.h"

[[noreturn]] void pdl_cuda_fail(const char *what, const char *errname, const char *errstr, const char *file,
                                int line);
/* 1 when PDL_CUDA_SYNC is set to a non-zero value: synchronise after each launch. */
bool pdl_cuda_sync_launches();

#define CHECK_CUDA(call) do { cudaError_t e_ = (call); \
  if (e_ != cudaSuccess) pdl_cuda_fail(#call, cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, __LINE__); \
  } while (0)
#define CHECK_CUBLAS(call) do { cublasStatus_t s_ = (call); \
  if (s_ != CUBLAS_STATUS_SUCCESS) pdl_cuda_fail(#call, cublasGetStatusName(s_), cublasGetStatusString(s_), \
                                                 __FILE__, __LINE__); \
  } while (0)
/* After kernel<<<...>>>: a bad launch configuration or missing kernel image shows up here; with
 * PDL_CUDA_SYNC=1 so does a fault inside the kernel. */
#define CHECK_LAUNCH(kernel, stream) do { cudaError_t e_ = cudaGetLastError(); COUNT_OP(); \
  if (e_ != cudaSuccess) pdl_cuda_fail("launch of " #kernel, cudaGetErrorName(e_), cudaGetErrorString(e_), \
                                       __FILE__, __LINE__); \
  if (pdl_cuda_sync_launches()) { e_ = cudaStreamSynchronize(stream); \
    if (e_ != cudaSuccess) pdl_cuda_fail("kernel " #kernel " (PDL_CUDA_SYNC)", cudaGetErrorName(e_), \
                                         cudaGetErrorString(e_), __FILE__, __LINE__); } \
  } while (0)
/* Always-on argument checks of the layer entry points. */
#define CUDA_SHAPE_ASSERT(cond) do { if (!(cond)) \
  pdl_cuda_fail("shape assertion " #cond, "bad arguments", __func__, __FILE__, __LINE__); } while (0)

struct PdlCudaCtx {
  int valid;
  int device;            /* device the stream and handle were created on */
  cudaStream_t stream;   /* created with cudaStreamDefault: ordered with the legacy stream 0 */
  cublasHandle_t blas;   /* bound to stream, pointer mode host, default (full FP32) math */
  void *scratch;         /* device bytes for reductions (softmax loss), cuSOLVER workspaces */
  size_t scratch_bytes;
  void *solver;                /* cuSOLVER handle bound to stream, made by cuda_inv.cu on first use */
  void (*solver_free)(void *); /* its destructor, called by the context's teardown (so the context
                                  itself needs no cuSOLVER) */
  void *blas_ws;               /* cuBLAS's workspace, set at creation (so that a graph capture
                                  never sees cuBLAS allocate one) */
  void *dnn;                   /* cuDNN state (handle, per-shape plans, workspace), made by
                                  cuda_layers.cu on the first cuDNN convolution */
  void (*dnn_free)(void *);    /* its destructor, likewise */
};

/* The calling thread's counters (cuda_layers.h, cuda_counters_t): every kernel launch, library
 * call (cuBLAS, cuDNN, cuSOLVER), memset and device copy is an op; every host wait a sync; and the
 * bytes copied each way. Incremented where the work is queued. */
extern thread_local cuda_counters_t pdl_cuda_counts;
#define COUNT_OP() (pdl_cuda_counts.ops++)
/* 1 while the calling thread captures a CUDA graph (cuda_graph_begin .. cuda_graph_end) */
extern thread_local int pdl_cuda_capturing;

/* Bumped whenever the calling thread's context replaces a buffer that queued work addresses (its
 * scratch, cuDNN's workspace): cuda_buffers_epoch (cuda_layers.h). */
extern thread_local long pdl_cuda_buffers_epoch;
/* The calling thread's context on its current device, created on first use. */
PdlCudaCtx *pdl_cuda_ctx();
/* Device scratch of at least bytes, owned by the context (grows; waits for the stream first). */
void *pdl_cuda_ctx_scratch(PdlCudaCtx *c, size_t bytes);

#endif
