/* cuda_inv.cu — cuda_spd_inverse (cuda_inv.h): cuSOLVER Spotrf + Spotri on the calling thread's
 * stream, with a cuSOLVER handle kept in the thread's context beside its cuBLAS handle.
 * cuSOLVER is column-major; a row-major symmetric matrix is the same matrix read column-major, and
 * cuSOLVER's lower triangle (CUBLAS_FILL_MODE_LOWER) is our row-major upper one. potri writes that
 * triangle only; k_mirror copies it onto the other, so the result has both, exactly symmetric.
 * The NaN/Inf check is a kernel (k_nonfinite) queued before potrf; its flag and potrf's devInfo
 * come back in one copy. */
#ifdef PDL_HAVE_CUSOLVER
#include <cmath>
#include <cstdlib>
#include <cusolverDn.h>
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/cuda_inv.h"

namespace {

/* 1024 blocks of 256 threads fill any current GPU (an H100 holds 132 SMs x 2048 threads); the
 * grid-stride loops cover larger matrices. */
constexpr int kBlock = 256;
constexpr unsigned kMaxGrid = 1024;

unsigned grid_for(size_t n) {
  size_t g = (n + kBlock - 1) / kBlock;
  return (unsigned)(g < kMaxGrid ? g : kMaxGrid);
}

const char *solver_status_name(cusolverStatus_t s) {
  switch (s) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    default: return "cuSOLVER status (see cusolver_common.h)";
  }
}

#define CHECK_CUSOLVER(call) do { cusolverStatus_t s_ = (call); \
  if (s_ != CUSOLVER_STATUS_SUCCESS) pdl_cuda_fail(#call, solver_status_name(s_), "cuSOLVER call failed", \
                                                   __FILE__, __LINE__); \
  } while (0)

#define GRID_STRIDE(i, n) \
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* *flag = 1 if any of a[0..n) is NaN or Inf. Every thread that finds one stores the same 1, so the
 * unordered stores need no atomics. */
__global__ void k_nonfinite(const float *a, size_t n, int *flag) {
  GRID_STRIDE(i, n) if (!isfinite(a[i])) *flag = 1;
}

/* Row-major x[i][j] = x[j][i] for j < i: the lower triangle from the upper one. One thread per
 * element of the matrix, reads strided: a copy of n^2 floats, small beside potri's n^3 flops. */
__global__ void k_mirror(float *x, int n) {
  GRID_STRIDE(e, (size_t)n * n) {
    const size_t i = e / (size_t)n, j = e % (size_t)n;
    if (j < i) x[e] = x[j * (size_t)n + i];
  }
}

/* d[j] = x[j][j] for j < m: the diagonal of a (partial) Cholesky factor, gathered for one copy. */
__global__ void k_diag(const float *x, int n, int m, float *d) {
  GRID_STRIDE(j, (size_t)m) d[j] = x[j * ((size_t)n + 1)];
}

void solver_free(void *h) { CHECK_CUSOLVER(cusolverDnDestroy((cusolverDnHandle_t)h)); }

cusolverDnHandle_t ctx_solver(PdlCudaCtx *c) {
  if (!c->solver) {
    cusolverDnHandle_t h;
    CHECK_CUSOLVER(cusolverDnCreate(&h));
    CHECK_CUSOLVER(cusolverDnSetStream(h, c->stream));
    c->solver = h;
    c->solver_free = solver_free;
  }
  return (cusolverDnHandle_t)c->solver;
}

/* Copy n ints (or bytes) from the device after the stream's queued work, and wait for it. */
void get_bytes(void *host, const void *dev, size_t bytes, cudaStream_t s) {
  CHECK_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
}
void get_ints(int *host, const int *dev, size_t n, cudaStream_t s) { get_bytes(host, dev, n * sizeof(int), s); }

/* The order of the first leading minor that is not positive definite, given potrf's info > 0.
 * cuSOLVER's Spotrf can report one column late: on an H100 (CUDA 13.0), a negative pivot in the
 * last column of one of its blocks (order 128 of 257, 576 of 1153) came back as info = order + 1,
 * where LAPACK (and our CPU inversions) give the order itself. The factor's diagonal up to that
 * column holds the square roots of the accepted pivots; the first one that is not > 0 (NaN from
 * the square root of a negative pivot, or the pivot itself) is where it really failed. The
 * diagonal is gathered into the workspace, which potrf no longer needs. */
int first_bad_pivot(const float *f, int n, int info, float *work, cudaStream_t s) {
  k_diag<<<grid_for((size_t)info), kBlock, 0, s>>>(f, n, info, work);
  CHECK_LAUNCH(k_diag, s);
  float *d = (float *)malloc((size_t)info * sizeof *d);
  if (!d) return info;
  get_bytes(d, work, (size_t)info * sizeof *d, s);
  int k = info;
  for (int j = 0; j < info - 1; j++)
    if (!(d[j] > 0.0f)) { k = j + 1; break; }
  free(d);
  return k;
}

} // namespace

extern "C" int cuda_spd_inverse(float *inv, const float *a, int n, float *scratch) {
  (void)scratch;
  CUDA_SHAPE_ASSERT(n >= 1 && inv && a);
  PdlCudaCtx *c = pdl_cuda_ctx();
  cusolverDnHandle_t h = ctx_solver(c);
  const cublasFillMode_t lower = CUBLAS_FILL_MODE_LOWER; /* = our row-major upper triangle */
  const size_t nn = (size_t)n * n;
  if (inv != a) CHECK_CUDA(cudaMemcpyAsync(inv, a, nn * sizeof(float), cudaMemcpyDeviceToDevice, c->stream));
  int lw_f = 0, lw_i = 0;
  CHECK_CUSOLVER(cusolverDnSpotrf_bufferSize(h, lower, n, inv, n, &lw_f));
  CHECK_CUSOLVER(cusolverDnSpotri_bufferSize(h, lower, n, inv, n, &lw_i));
  int lwork = lw_f > lw_i ? lw_f : lw_i;
  if (lwork < n) lwork = n; /* first_bad_pivot gathers the diagonal there */
  /* Scratch: the non-finite flag and devInfo, then the workspace from byte 256 (cudaMalloc's
   * alignment). */
  char *s = (char *)pdl_cuda_ctx_scratch(c, 256 + (size_t)lwork * sizeof(float));
  int *flags = (int *)s; /* [0] non-finite, [1] devInfo */
  float *work = (float *)(s + 256);
  CHECK_CUDA(cudaMemsetAsync(flags, 0, 2 * sizeof(int), c->stream));
  k_nonfinite<<<grid_for(nn), kBlock, 0, c->stream>>>(inv, nn, flags);
  CHECK_LAUNCH(k_nonfinite, c->stream);
  CHECK_CUSOLVER(cusolverDnSpotrf(h, lower, n, inv, n, work, lwork, flags + 1));
  int got[2];
  get_ints(got, flags, 2, c->stream);
  if (got[0]) return -1;
  CUDA_SHAPE_ASSERT(got[1] >= 0); /* < 0: cuSOLVER refused an argument, a bug here */
  if (got[1] > 0) return first_bad_pivot(inv, n, got[1], work, c->stream);
  CHECK_CUSOLVER(cusolverDnSpotri(h, lower, n, inv, n, work, lwork, flags + 1));
  k_mirror<<<grid_for(nn), kBlock, 0, c->stream>>>(inv, n);
  CHECK_LAUNCH(k_mirror, c->stream);
  get_ints(got + 1, flags + 1, 1, c->stream);
  CUDA_SHAPE_ASSERT(got[1] >= 0);
  return got[1];
}
#endif /* PDL_HAVE_CUSOLVER */
