/* cuda_context.cu — host side of the GPU path: error reporting, the per-thread context (stream +
 * cuBLAS handle), device discovery and the plain-C memory helpers of cuda_layers.h.
 * No kernels live here. A context is a thread_local POD without a destructor on purpose: tearing
 * down CUDA objects from thread/process exit handlers races the runtime's own shutdown, so
 * contexts are freed explicitly (cuda_thread_release) or reclaimed with the process. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/cuda_layers.h"
#include "util/env.h"
#include <unistd.h>

static void (*g_fail_handler)(const char *msg);

extern "C" void cuda_set_fail_handler(void (*handler)(const char *msg)) { g_fail_handler = handler; }

void pdl_cuda_fail(const char *what, const char *errname, const char *errstr, const char *file, int line) {
  char msg[1024];
  snprintf(msg, sizeof msg, "CUDA failure in %s at %s:%d: %s (%s)", what, file, line, errname ? errname : "?",
           errstr ? errstr : "?");
  fflush(stdout);
  if (g_fail_handler) g_fail_handler(msg);   /* does not return */
  fprintf(stderr, "pdl: %s\n", msg);
  fflush(stderr);
  exit(1);
}

bool pdl_cuda_sync_launches() {
  static const bool on = [] {
    const char *s = env_get("PDL_CUDA_SYNC");
    return s && *s && strcmp(s, "0") != 0;
  }();
  return on;
}

static thread_local PdlCudaCtx t_ctx; /* zero-initialised: valid == 0 */
thread_local cuda_counters_t pdl_cuda_counts;
thread_local int pdl_cuda_capturing;

extern "C" void cuda_counters_get(cuda_counters_t *out) { *out = pdl_cuda_counts; }
extern "C" void cuda_counters_reset(void) { memset(&pdl_cuda_counts, 0, sizeof pdl_cuda_counts); }

static void ctx_destroy(PdlCudaCtx *c) {
  if (!c->valid) return;
  int cur;
  CHECK_CUDA(cudaGetDevice(&cur));
  if (cur != c->device) CHECK_CUDA(cudaSetDevice(c->device));
  CHECK_CUDA(cudaStreamSynchronize(c->stream));
  CHECK_CUBLAS(cublasDestroy(c->blas));
  CHECK_CUDA(cudaFree(c->blas_ws));
  if (c->solver) c->solver_free(c->solver);
  if (c->dnn) c->dnn_free(c->dnn);
  CHECK_CUDA(cudaFree(c->scratch));
  CHECK_CUDA(cudaStreamDestroy(c->stream));
  if (cur != c->device) CHECK_CUDA(cudaSetDevice(cur));
  memset(c, 0, sizeof *c);
}

PdlCudaCtx *pdl_cuda_ctx() {
  int dev;
  CHECK_CUDA(cudaGetDevice(&dev));
  if (t_ctx.valid && t_ctx.device == dev) return &t_ctx;
  ctx_destroy(&t_ctx);
  PdlCudaCtx c;
  memset(&c, 0, sizeof c);
  c.device = dev;
  CHECK_CUDA(cudaStreamCreateWithFlags(&c.stream, cudaStreamDefault));
  CHECK_CUBLAS(cublasCreate(&c.blas));
  CHECK_CUBLAS(cublasSetStream(c.blas, c.stream));
  CHECK_CUBLAS(cublasSetPointerMode(c.blas, CUBLAS_POINTER_MODE_HOST));
  /* Default math = true FP32 SGEMM: no TF32 tensor-op down-conversion (that needs
   * CUBLAS_TF32_TENSOR_OP_MATH), so results stay within FP32 dot-product error bounds. */
  CHECK_CUBLAS(cublasSetMathMode(c.blas, CUBLAS_DEFAULT_MATH));
  /* cuBLAS's workspace, ours from the start (32 MiB, NVIDIA's advice for Hopper): a GEMM captured
   * into a graph then never makes cuBLAS allocate one */
  const size_t blas_ws = (size_t)32 << 20;
  CHECK_CUDA(cudaMalloc(&c.blas_ws, blas_ws));
  CHECK_CUBLAS(cublasSetWorkspace(c.blas, c.blas_ws, blas_ws));
  c.valid = 1;
  t_ctx = c;
  return &t_ctx;
}

thread_local long pdl_cuda_buffers_epoch;
extern "C" long cuda_buffers_epoch(void) { return pdl_cuda_buffers_epoch; }

void *pdl_cuda_ctx_scratch(PdlCudaCtx *c, size_t bytes) {
  if (bytes <= c->scratch_bytes) return c->scratch;
  pdl_cuda_buffers_epoch++;   /* a captured graph holding the old address is stale */
  size_t want = bytes < 4096 ? 4096 : bytes + bytes / 2;
  CHECK_CUDA(cudaStreamSynchronize(c->stream)); /* queued kernels may still use the old buffer */
  pdl_cuda_counts.syncs++;
  CHECK_CUDA(cudaFree(c->scratch));
  c->scratch = nullptr;
  c->scratch_bytes = 0;
  CHECK_CUDA(cudaMalloc(&c->scratch, want));
  c->scratch_bytes = want;
  return c->scratch;
}

/* ---- plain-C API ---------------------------------------------------------------------------- */
static thread_local char t_reason[256];

extern "C" int cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    /* e.g. cudaErrorInsufficientDriver / cudaErrorNoDevice: "no device", not a failure. Clear the
     * error so a later cudaGetLastError does not report it. */
    /* without a loaded NVIDIA driver the runtime says "CUDA driver version is insufficient", which
     * misleads on a machine that simply has no GPU: say what is true there */
    if (access("/proc/driver/nvidia/version", F_OK) != 0)
      snprintf(t_reason, sizeof t_reason, "no NVIDIA driver is loaded: /proc/driver/nvidia/version is absent");
    else snprintf(t_reason, sizeof t_reason, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 0;
  }
  if (n == 0) snprintf(t_reason, sizeof t_reason, "cudaGetDeviceCount: 0 devices");
  else t_reason[0] = 0;
  return n;
}

extern "C" const char *cuda_no_device_reason(void) { return t_reason; }

extern "C" void cuda_set_device(int dev) { CHECK_CUDA(cudaSetDevice(dev)); }

extern "C" void cuda_describe_device(int dev, char *buf, size_t len) {
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, dev));
  snprintf(buf, len, "%s, sm_%d%d, %zu MiB", p.name, p.major, p.minor, (size_t)(p.totalGlobalMem >> 20));
}

extern "C" size_t cuda_mem_free(void) {
  size_t f = 0, t = 0;
  pdl_cuda_ctx();   /* on the calling thread's device */
  CHECK_CUDA(cudaMemGetInfo(&f, &t));
  return f;
}

extern "C" void cuda_sync(void) {
  CHECK_CUDA(cudaStreamSynchronize(pdl_cuda_ctx()->stream));
  pdl_cuda_counts.syncs++;
}

extern "C" void cuda_thread_release(void) { ctx_destroy(&t_ctx); }

extern "C" void *cuda_current_stream(void) { return (void *)pdl_cuda_ctx()->stream; }

static void *alloc_bytes(size_t n, size_t elem) {
  if (n == 0) return nullptr;
  if (n > (size_t)-1 / elem) pdl_cuda_fail("cudaMalloc size", "overflow", "element count too large", __FILE__, __LINE__);
  void *p = nullptr;
  cudaError_t e = cudaMalloc(&p, n * elem);
  if (e != cudaSuccess) {
    char what[96];
    snprintf(what, sizeof what, "cudaMalloc(%zu bytes)", n * elem);
    pdl_cuda_fail(what, cudaGetErrorName(e), cudaGetErrorString(e), __FILE__, __LINE__);
  }
  return p;
}

extern "C" float *cuda_alloc_floats(size_t n) { return (float *)alloc_bytes(n, sizeof(float)); }
extern "C" int *cuda_alloc_ints(size_t n) { return (int *)alloc_bytes(n, sizeof(int)); }
extern "C" void cuda_free(void *dev) { CHECK_CUDA(cudaFree(dev)); }

/* Copy on the thread's stream (so it is ordered after queued kernels) and wait for it. */
static void copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return;
  if (pdl_cuda_capturing)
    pdl_cuda_fail(kind == cudaMemcpyHostToDevice ? "an upload during graph capture" : "a download during graph capture",
                  "capture", "a captured step must not wait for the device (upload the batch before capturing)",
                  __FILE__, __LINE__);
  cudaStream_t s = pdl_cuda_ctx()->stream;
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  pdl_cuda_counts.syncs++;
  if (kind == cudaMemcpyHostToDevice) pdl_cuda_counts.h2d_bytes += bytes;
  else pdl_cuda_counts.d2h_bytes += bytes;
}

extern "C" void cuda_upload(float *dev, const float *host, size_t n) {
  copy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice);
}
extern "C" void cuda_download(float *host, const float *dev, size_t n) {
  copy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost);
}
extern "C" void cuda_upload_ints(int *dev, const int *host, size_t n) {
  copy(dev, host, n * sizeof(int), cudaMemcpyHostToDevice);
}
extern "C" void cuda_download_ints(int *host, const int *dev, size_t n) {
  copy(host, dev, n * sizeof(int), cudaMemcpyDeviceToHost);
}

extern "C" void cuda_copy_floats(float *dst, const float *src, size_t n) {
  if (n == 0) return;
  CHECK_CUDA(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, pdl_cuda_ctx()->stream));
  COUNT_OP();
}
extern "C" void cuda_zero_floats(float *dev, size_t n) {
  if (n == 0) return;
  CHECK_CUDA(cudaMemsetAsync(dev, 0, n * sizeof(float), pdl_cuda_ctx()->stream));
  COUNT_OP();
}

/* ---- CUDA graphs (cuda_layers.h) ---------------------------------------------------------------- */
extern "C" void cuda_graph_begin(void) {
  PdlCudaCtx *c = pdl_cuda_ctx();
  if (pdl_cuda_capturing) pdl_cuda_fail("cuda_graph_begin", "already capturing", "cuda_graph_end first", __FILE__, __LINE__);
  CHECK_CUDA(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
  pdl_cuda_capturing = 1;
}
extern "C" void *cuda_graph_end(void) {
  PdlCudaCtx *c = pdl_cuda_ctx();
  if (!pdl_cuda_capturing) pdl_cuda_fail("cuda_graph_end", "not capturing", "cuda_graph_begin first", __FILE__, __LINE__);
  cudaGraph_t g;
  CHECK_CUDA(cudaStreamEndCapture(c->stream, &g));
  pdl_cuda_capturing = 0;
  cudaGraphExec_t e;
  CHECK_CUDA(cudaGraphInstantiate(&e, g, 0));
  CHECK_CUDA(cudaGraphDestroy(g));
  return (void *)e;
}
extern "C" void cuda_graph_launch(void *exec) {
  CHECK_CUDA(cudaGraphLaunch((cudaGraphExec_t)exec, pdl_cuda_ctx()->stream));
  COUNT_OP();
}
extern "C" void cuda_graph_free(void *exec) {
  if (exec) CHECK_CUDA(cudaGraphExecDestroy((cudaGraphExec_t)exec));
}
