// cublas_v2.h (emulated) — cublasSgemm = column-major cblas_sgemm (same argument meaning), with cuBLAS's
// documented argument checks (lda >= max(1, transa == N ? m : k), ...).
#pragma once
#include <cblas.h>
#include "cuda_runtime.h"
typedef int cublasStatus_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_FILL_MODE_LOWER = 0, CUBLAS_FILL_MODE_UPPER = 1 } cublasFillMode_t;
typedef struct emu_blas *cublasHandle_t;
enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_DEFAULT_MATH = 0 };
inline const char *cublasGetStatusName(cublasStatus_t s) { return s ? "CUBLAS_STATUS_INVALID_VALUE" : "CUBLAS_STATUS_SUCCESS"; }
inline const char *cublasGetStatusString(cublasStatus_t s) { return s ? "invalid value" : "success"; }
inline cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = (cublasHandle_t)0x2000; return 0; }
inline cublasStatus_t cublasDestroy(cublasHandle_t) { return 0; }
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t s) { return s ? 0 : 7; }
inline cublasStatus_t cublasSetPointerMode(cublasHandle_t, int) { return 0; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, int) { return 0; }
inline cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *ws, size_t bytes) { return ws || !bytes ? 0 : 7; }
inline long emu_gemms;
inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float *alpha, const float *A, int lda, const float *B, int ldb,
                                  const float *beta, float *C, int ldc) {
  if (m < 0 || n < 0 || k < 0) return 7;
  if (lda < std::max(1, ta == CUBLAS_OP_N ? m : k)) return 7;
  if (ldb < std::max(1, tb == CUBLAS_OP_N ? k : n)) return 7;
  if (ldc < std::max(1, m)) return 7;
  if (emu_capture) {   // recorded with the scalars' values, as cuBLAS reads host-mode scalars when called
    const float al = *alpha, be = *beta;
    emu_capture->push_back([=] { emu_gemms++; cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                                                          tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, al, A, lda,
                                                          B, ldb, be, C, ldc); });
    return 0;
  }
  emu_gemms++;
  cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
              m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
  return 0;
}
