// cusolverDn.h (emulated) — the cuSOLVER subset kernels/cuda/cuda_inv.cu uses: Spotrf/Spotri and their
// *_bufferSize, as column-major LAPACK (LAPACKE_spotrf_work/spotri_work, as cuSOLVER is column-major),
// with cuSOLVER's documented argument checks (handle created, n >= 0, lda >= max(1, n), uplo lower or
// upper, Lwork >= what *_bufferSize reported). *_bufferSize asks for n + 1 floats and the calls fill
// the whole workspace, so ASan flags a workspace smaller than reported; devInfo gets LAPACK's info.
#pragma once
#include <lapacke.h>
#include "cublas_v2.h"
typedef int cusolverStatus_t;
enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_NOT_INITIALIZED = 1, CUSOLVER_STATUS_ALLOC_FAILED = 2,
       CUSOLVER_STATUS_INVALID_VALUE = 3, CUSOLVER_STATUS_ARCH_MISMATCH = 4, CUSOLVER_STATUS_EXECUTION_FAILED = 6,
       CUSOLVER_STATUS_INTERNAL_ERROR = 7 };
typedef struct emu_solver *cusolverDnHandle_t;
inline int emu_solvers; // live handles
inline cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *h) { *h = (cusolverDnHandle_t)(size_t)(0x3000 + ++emu_solvers); return 0; }
inline cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t h) { if (!h) return 1; --emu_solvers; return 0; }
inline cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t h, cudaStream_t s) { return !h ? 1 : s ? 0 : 3; }
inline cusolverStatus_t emu_solver_args(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, const float *A, int lda) {
  if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (n < 0 || lda < std::max(1, n) || (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) || (n && !A))
    return CUSOLVER_STATUS_INVALID_VALUE;
  return CUSOLVER_STATUS_SUCCESS;
}
inline int emu_solver_lwork(int n) { return n + 1; }
inline cusolverStatus_t cusolverDnSpotrf_bufferSize(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda,
                                                    int *Lwork) {
  cusolverStatus_t s = emu_solver_args(h, uplo, n, A, lda);
  if (s == 0) *Lwork = emu_solver_lwork(n);
  return s;
}
inline cusolverStatus_t cusolverDnSpotri_bufferSize(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda,
                                                    int *Lwork) {
  return cusolverDnSpotrf_bufferSize(h, uplo, n, A, lda, Lwork);
}
inline long emu_solver_calls;
template <class F> cusolverStatus_t emu_solver_call(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda,
                                                    float *work, int lwork, int *devInfo, F lapack) {
  cusolverStatus_t s = emu_solver_args(h, uplo, n, A, lda);
  if (s) return s;
  if (lwork < emu_solver_lwork(n) || !work || !devInfo) return CUSOLVER_STATUS_INVALID_VALUE;
  for (int i = 0; i < lwork; i++) work[i] = NAN;
  emu_solver_calls++;
  *devInfo = lapack(LAPACK_COL_MAJOR, uplo == CUBLAS_FILL_MODE_LOWER ? 'L' : 'U', n, A, lda);
  return 0;
}
inline cusolverStatus_t cusolverDnSpotrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda,
                                         float *work, int lwork, int *devInfo) {
  return emu_solver_call(h, uplo, n, A, lda, work, lwork, devInfo, LAPACKE_spotrf_work);
}
inline cusolverStatus_t cusolverDnSpotri(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda,
                                         float *work, int lwork, int *devInfo) {
  return emu_solver_call(h, uplo, n, A, lda, work, lwork, devInfo, LAPACKE_spotri_work);
}
