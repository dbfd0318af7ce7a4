// cudnn.h (emulated) — the cuDNN subset kernels/cuda/cuda_layers.cu uses (legacy convolution API),
// on the host: the three convolutions are the direct sum in double, rounded once (the reference
// convolution's arithmetic), with cuDNN's alpha/beta (beta = 0 ignores the output's old contents,
// NaN included; the filter gradient is called with beta = 1 to accumulate). So that the mistakes
// the emulator can see do show:
// - every call fills the workspace it is given with NaN first, and fails with BAD_PARAM if it is
//   smaller than the chosen algorithm needs (a computation that read it, or a buffer that aliased
//   it, turns to NaN);
// - cudnnFind*Ex refuses inputs that are not all finite (the emulator's cudaMalloc fills with NaN:
//   a search on memory nobody wrote) and clobbers its output and workspace with NaN;
// - cudnnFind* returns, fastest first, results the caller must refuse (a transform algorithm, a
//   non-deterministic one, TF32 tensor-op math, one whose workspace is over any sane cap) before the
//   admissible one;
// - a convolution whose descriptor's math type is not CUDNN_FMA_MATH rounds its inputs to TF32
//   (10-bit mantissa) as an Ampere-or-later GPU may, so the FP32 bounds of the tests fail;
// - descriptors are checked against the pointers' shapes as far as a descriptor can be.
// Under graph capture (cuda_runtime.h) a convolution is recorded with its scalars' values and run
// at each replay. emu_dnn_calls counts the convolution calls. Not built by make; see run.sh.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include "cuda_runtime.h"

typedef enum {
  CUDNN_STATUS_SUCCESS = 0, CUDNN_STATUS_NOT_INITIALIZED = 1, CUDNN_STATUS_BAD_PARAM = 3,
  CUDNN_STATUS_NOT_SUPPORTED = 9
} cudnnStatus_t;
inline const char *cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_NOT_INITIALIZED";
  }
}
typedef enum { CUDNN_TENSOR_NCHW = 0 } cudnnTensorFormat_t;
typedef enum { CUDNN_DATA_FLOAT = 0 } cudnnDataType_t;
typedef enum { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 } cudnnConvolutionMode_t;
typedef enum { CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
               CUDNN_FMA_MATH = 3 } cudnnMathType_t;
typedef enum { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 } cudnnDeterminism_t;
typedef enum {
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1,
  CUDNN_CONVOLUTION_FWD_ALGO_GEMM = 2, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT = 3, CUDNN_CONVOLUTION_FWD_ALGO_FFT = 4,
  CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING = 5, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD = 6,
  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED = 7, CUDNN_CONVOLUTION_FWD_ALGO_COUNT = 8
} cudnnConvolutionFwdAlgo_t;
typedef enum {
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 = 0, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 = 1,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT = 2, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING = 3,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD = 4, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED = 5,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT = 6
} cudnnConvolutionBwdDataAlgo_t;
typedef enum {
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 = 0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 = 1,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT = 2, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 = 3,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED = 5, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING = 6,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT = 7
} cudnnConvolutionBwdFilterAlgo_t;
template <class A> struct emu_dnn_perf {
  A algo; cudnnStatus_t status; float time; size_t memory; cudnnDeterminism_t determinism;
  cudnnMathType_t mathType; int reserved[3];
};
typedef emu_dnn_perf<cudnnConvolutionFwdAlgo_t> cudnnConvolutionFwdAlgoPerf_t;
typedef emu_dnn_perf<cudnnConvolutionBwdDataAlgo_t> cudnnConvolutionBwdDataAlgoPerf_t;
typedef emu_dnn_perf<cudnnConvolutionBwdFilterAlgo_t> cudnnConvolutionBwdFilterAlgoPerf_t;

struct emu_dnn_handle { cudaStream_t stream; };
struct emu_dnn_tensor { int n, c, h, w, set; };
struct emu_dnn_conv { int pad_h, pad_w, u, v, dil_h, dil_w, mode, set; cudnnMathType_t math; };
typedef emu_dnn_handle *cudnnHandle_t;
typedef emu_dnn_tensor *cudnnTensorDescriptor_t;
typedef emu_dnn_tensor *cudnnFilterDescriptor_t;   // k = n, c, r = h, s = w
typedef emu_dnn_conv *cudnnConvolutionDescriptor_t;
inline long emu_dnn_calls;
inline long emu_dnn_handles;

inline cudnnStatus_t cudnnCreate(cudnnHandle_t *h) { *h = new emu_dnn_handle{nullptr}; emu_dnn_handles++; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnDestroy(cudnnHandle_t h) { if (!h) return CUDNN_STATUS_BAD_PARAM; delete h; emu_dnn_handles--; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) { if (!h || !s) return CUDNN_STATUS_BAD_PARAM; h->stream = s; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) { *d = new emu_dnn_tensor{}; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) { *d = new emu_dnn_tensor{}; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
  *d = new emu_dnn_conv{}; (*d)->math = CUDNN_DEFAULT_MATH; return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { delete d; return CUDNN_STATUS_SUCCESS; }
inline cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t,
                                                int n, int c, int h, int w) {
  if (f != CUDNN_TENSOR_NCHW || t != CUDNN_DATA_FLOAT || n < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  *d = emu_dnn_tensor{n, c, h, w, 1};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f,
                                                int k, int c, int r, int s) {
  if (f != CUDNN_TENSOR_NCHW || t != CUDNN_DATA_FLOAT || k < 1 || c < 1 || r < 1 || s < 1) return CUDNN_STATUS_BAD_PARAM;
  *d = emu_dnn_tensor{k, c, r, s, 1};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u, int v,
                                                     int dh, int dw, cudnnConvolutionMode_t m, cudnnDataType_t t) {
  if (ph < 0 || pw < 0 || u < 1 || v < 1 || dh < 1 || dw < 1 || t != CUDNN_DATA_FLOAT) return CUDNN_STATUS_BAD_PARAM;
  d->pad_h = ph; d->pad_w = pw; d->u = u; d->v = v; d->dil_h = dh; d->dil_w = dw; d->mode = m; d->set = 1;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) { d->math = m; return CUDNN_STATUS_SUCCESS; }

// The shapes agree (x [n][c][h][w], w [k][c][r][s], y [n][k][h'][w'] with h' = (h + 2 pad - r) / u + 1,
// strides u, v >= 1, no dilation, cross-correlation: the cases the stand-in computes; anything else is
// NOT_SUPPORTED).
inline cudnnStatus_t emu_dnn_check(const emu_dnn_tensor *x, const emu_dnn_tensor *w, const emu_dnn_conv *cv,
                                   const emu_dnn_tensor *y) {
  if (!x || !w || !cv || !y || !x->set || !w->set || !cv->set || !y->set) return CUDNN_STATUS_BAD_PARAM;
  if (cv->dil_h != 1 || cv->dil_w != 1 || cv->mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->c != w->c || y->n != x->n || y->c != w->n || x->h + 2 * cv->pad_h < w->h || x->w + 2 * cv->pad_w < w->w ||
      y->h != (x->h + 2 * cv->pad_h - w->h) / cv->u + 1 || y->w != (x->w + 2 * cv->pad_w - w->w) / cv->v + 1)
    return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}
// The workspace each admissible algorithm asks for (bytes), and the refusable results before it.
inline size_t emu_dnn_ws(int dir) { return dir == 0 ? 1024 : dir == 1 ? 512 : 2048; }
template <class P, class A> void emu_dnn_result(P *p, A a, cudnnDeterminism_t d, cudnnMathType_t m, size_t mem, float t) {
  p->algo = a; p->status = CUDNN_STATUS_SUCCESS; p->time = t; p->memory = mem; p->determinism = d; p->mathType = m;
}
inline cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                                                          cudnnConvolutionDescriptor_t cv, cudnnTensorDescriptor_t y, int req,
                                                          int *ret, cudnnConvolutionFwdAlgoPerf_t *p) {
  cudnnStatus_t st = emu_dnn_check(x, w, cv, y);
  if (st || !h || req < 5) return st ? st : CUDNN_STATUS_BAD_PARAM;
  emu_dnn_result(&p[0], CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, 0, 0.1f);
  emu_dnn_result(&p[1], CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH, 0, 0.2f);
  emu_dnn_result(&p[2], CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_NON_DETERMINISTIC, CUDNN_FMA_MATH, 0, 0.3f);
  emu_dnn_result(&p[3], CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, (size_t)1 << 40, 0.4f);
  emu_dnn_result(&p[4], CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, emu_dnn_ws(0), 0.5f);
  *ret = 5;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t h, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y,
                                                               cudnnConvolutionDescriptor_t cv, cudnnTensorDescriptor_t x, int req,
                                                               int *ret, cudnnConvolutionBwdDataAlgoPerf_t *p) {
  cudnnStatus_t st = emu_dnn_check(x, w, cv, y);
  if (st || !h || req < 3) return st ? st : CUDNN_STATUS_BAD_PARAM;
  emu_dnn_result(&p[0], CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_NON_DETERMINISTIC, CUDNN_FMA_MATH, 0, 0.1f);
  emu_dnn_result(&p[1], CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, 0, 0.2f);
  emu_dnn_result(&p[2], CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, emu_dnn_ws(1), 0.3f);
  *ret = 3;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t y,
                                                                 cudnnConvolutionDescriptor_t cv, cudnnFilterDescriptor_t w, int req,
                                                                 int *ret, cudnnConvolutionBwdFilterAlgoPerf_t *p) {
  cudnnStatus_t st = emu_dnn_check(x, w, cv, y);
  if (st || !h || req < 4) return st ? st : CUDNN_STATUS_BAD_PARAM;
  emu_dnn_result(&p[0], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, CUDNN_NON_DETERMINISTIC, CUDNN_FMA_MATH, 0, 0.1f);
  emu_dnn_result(&p[1], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, 0, 0.2f);
  emu_dnn_result(&p[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH, 0, 0.3f);
  emu_dnn_result(&p[3], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH, emu_dnn_ws(2), 0.4f);
  *ret = 4;
  return CUDNN_STATUS_SUCCESS;
}

// The workspace an algorithm needs: the admissible one's, and 0 for the others (they are refused
// before their workspace matters).
inline cudnnStatus_t emu_dnn_ws_size(int dir, int algo, int admissible, size_t *sz) {
  if (!sz) return CUDNN_STATUS_BAD_PARAM;
  *sz = algo == admissible ? emu_dnn_ws(dir) : 0;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                                                             cudnnConvolutionDescriptor_t cv, cudnnTensorDescriptor_t y,
                                                             cudnnConvolutionFwdAlgo_t a, size_t *sz) {
  cudnnStatus_t st = emu_dnn_check(x, w, cv, y);
  return st ? st : !h ? CUDNN_STATUS_BAD_PARAM : emu_dnn_ws_size(0, a, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, sz);
}
inline cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y,
                                                                  cudnnConvolutionDescriptor_t cv, cudnnTensorDescriptor_t x,
                                                                  cudnnConvolutionBwdDataAlgo_t a, size_t *sz) {
  cudnnStatus_t st = emu_dnn_check(x, w, cv, y);
  return st ? st : !h ? CUDNN_STATUS_BAD_PARAM : emu_dnn_ws_size(1, a, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, sz);
}
inline cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t y,
                                                                    cudnnConvolutionDescriptor_t cv, cudnnFilterDescriptor_t w,
                                                                    cudnnConvolutionBwdFilterAlgo_t a, size_t *sz) {
  cudnnStatus_t st = emu_dnn_check(x, w, cv, y);
  return st ? st : !h ? CUDNN_STATUS_BAD_PARAM : emu_dnn_ws_size(2, a, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, sz);
}
// cudnnFind*Ex: benchmarks on the caller's buffers. Its stand-in refuses inputs that are not all
// finite (compute-sanitizer initcheck's view of a search on memory nobody wrote: the emulator's
// cudaMalloc fills with NaN) and a workspace smaller than the admissible algorithm needs, then
// overwrites the output and the workspace with NaN, as a real search leaves them with garbage.
inline bool emu_dnn_finite(const void *p, const emu_dnn_tensor *d) {
  if (!p) return false;
  const size_t n = (size_t)d->n * d->c * d->h * d->w;
  for (size_t i = 0; i < n; i++) if (!std::isfinite(((const float *)p)[i])) return false;
  return true;
}
inline void emu_dnn_clobber(void *p, size_t floats) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < floats; i++) ((float *)p)[i] = nan;
}
inline cudnnStatus_t emu_dnn_find_ex(const void *in1, const emu_dnn_tensor *d1, const void *in2, const emu_dnn_tensor *d2,
                                     void *out, const emu_dnn_tensor *dout, void *ws, size_t ws_bytes, int dir) {
  if (!emu_dnn_finite(in1, d1) || !emu_dnn_finite(in2, d2) || !out) return CUDNN_STATUS_BAD_PARAM;
  if (ws_bytes < emu_dnn_ws(dir) || (ws_bytes && !ws)) return CUDNN_STATUS_BAD_PARAM;
  emu_dnn_clobber(out, (size_t)dout->n * dout->c * dout->h * dout->w);
  emu_dnn_clobber(ws, ws_bytes / 4);
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t h, cudnnTensorDescriptor_t xd, const void *x,
                                                            cudnnFilterDescriptor_t wd, const void *w,
                                                            cudnnConvolutionDescriptor_t cv, cudnnTensorDescriptor_t yd, void *y,
                                                            int req, int *ret, cudnnConvolutionFwdAlgoPerf_t *p, void *ws,
                                                            size_t ws_bytes) {
  cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithm(h, xd, wd, cv, yd, req, ret, p);
  return st ? st : emu_dnn_find_ex(x, xd, w, wd, y, yd, ws, ws_bytes, 0);
}
inline cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(cudnnHandle_t h, cudnnFilterDescriptor_t wd, const void *w,
                                                                 cudnnTensorDescriptor_t dyd, const void *dy,
                                                                 cudnnConvolutionDescriptor_t cv, cudnnTensorDescriptor_t dxd,
                                                                 void *dx, int req, int *ret,
                                                                 cudnnConvolutionBwdDataAlgoPerf_t *p, void *ws, size_t ws_bytes) {
  cudnnStatus_t st = cudnnFindConvolutionBackwardDataAlgorithm(h, wd, dyd, cv, dxd, req, ret, p);
  return st ? st : emu_dnn_find_ex(w, wd, dy, dyd, dx, dxd, ws, ws_bytes, 1);
}
inline cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnnHandle_t h, cudnnTensorDescriptor_t xd, const void *x,
                                                                   cudnnTensorDescriptor_t dyd, const void *dy,
                                                                   cudnnConvolutionDescriptor_t cv, cudnnFilterDescriptor_t dwd,
                                                                   void *dw, int req, int *ret,
                                                                   cudnnConvolutionBwdFilterAlgoPerf_t *p, void *ws,
                                                                   size_t ws_bytes) {
  cudnnStatus_t st = cudnnFindConvolutionBackwardFilterAlgorithm(h, xd, dyd, cv, dwd, req, ret, p);
  return st ? st : emu_dnn_find_ex(x, xd, dy, dyd, dw, dwd, ws, ws_bytes, 2);
}

// Round to TF32 (10 explicit mantissa bits, round to nearest even): what a non-FMA math type may do.
inline double emu_dnn_in(float v, bool tf32) {
  if (!tf32 || !std::isfinite(v)) return v;
  uint32_t u; memcpy(&u, &v, 4);
  u = (u + 0xFFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
  float r; memcpy(&r, &u, 4);
  return r;
}
inline cudnnStatus_t emu_dnn_prep(cudnnHandle_t h, void *ws, size_t ws_bytes, int dir, int algo, int want) {
  if (!h || !h->stream) return CUDNN_STATUS_BAD_PARAM;
  if (algo != want || ws_bytes < emu_dnn_ws(dir) || !ws) return CUDNN_STATUS_BAD_PARAM;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < ws_bytes / 4; i++) ((float *)ws)[i] = nan;
  emu_dnn_calls++;
  return CUDNN_STATUS_SUCCESS;
}
// y = alpha * conv(x, w) + beta * y (beta == 0: y's old contents are not read)
inline cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd, const void *x,
                                             cudnnFilterDescriptor_t wd, const void *w, cudnnConvolutionDescriptor_t cv,
                                             cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes, const void *beta,
                                             cudnnTensorDescriptor_t yd, void *y) {
  if (emu_capture) {
    const float al = *(const float *)alpha, be = *(const float *)beta;
    emu_capture->push_back([=] { std::vector<std::function<void()>> *cap = emu_capture; emu_capture = nullptr;
      if (cudnnConvolutionForward(h, &al, xd, x, wd, w, cv, algo, ws, ws_bytes, &be, yd, y)) abort();
      emu_capture = cap; });
    return CUDNN_STATUS_SUCCESS;
  }
  cudnnStatus_t st = emu_dnn_check(xd, wd, cv, yd);
  if (st) return st;
  if ((st = emu_dnn_prep(h, ws, ws_bytes, 0, algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))) return st;
  const bool tf = cv->math != CUDNN_FMA_MATH;
  const float a = *(const float *)alpha, b = *(const float *)beta;
  const float *X = (const float *)x, *Wt = (const float *)w;
  float *Y = (float *)y;
  for (int n = 0; n < yd->n; n++)
    for (int k = 0; k < yd->c; k++)
      for (int oh = 0; oh < yd->h; oh++)
        for (int ow = 0; ow < yd->w; ow++) {
          double s = 0;
          for (int c = 0; c < xd->c; c++)
            for (int r = 0; r < wd->h; r++)
              for (int q = 0; q < wd->w; q++) {
                int ih = oh * cv->u + r - cv->pad_h, iw = ow * cv->v + q - cv->pad_w;
                if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w) continue;
                s += emu_dnn_in(X[(((size_t)n * xd->c + c) * xd->h + ih) * xd->w + iw], tf) *
                     emu_dnn_in(Wt[(((size_t)k * wd->c + c) * wd->h + r) * wd->w + q], tf);
              }
          float &o = Y[(((size_t)n * yd->c + k) * yd->h + oh) * yd->w + ow];
          o = (float)(a * s + (b != 0.0f ? (double)b * o : 0.0));
        }
  return CUDNN_STATUS_SUCCESS;
}
// dx = alpha * conv^T(w, dy) + beta * dx
inline cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, cudnnFilterDescriptor_t wd, const void *w,
                                                  cudnnTensorDescriptor_t dyd, const void *dy, cudnnConvolutionDescriptor_t cv,
                                                  cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t ws_bytes,
                                                  const void *beta, cudnnTensorDescriptor_t dxd, void *dx) {
  if (emu_capture) {
    const float al = *(const float *)alpha, be = *(const float *)beta;
    emu_capture->push_back([=] { std::vector<std::function<void()>> *cap = emu_capture; emu_capture = nullptr;
      if (cudnnConvolutionBackwardData(h, &al, wd, w, dyd, dy, cv, algo, ws, ws_bytes, &be, dxd, dx)) abort();
      emu_capture = cap; });
    return CUDNN_STATUS_SUCCESS;
  }
  cudnnStatus_t st = emu_dnn_check(dxd, wd, cv, dyd);
  if (st) return st;
  if ((st = emu_dnn_prep(h, ws, ws_bytes, 1, algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1))) return st;
  const bool tf = cv->math != CUDNN_FMA_MATH;
  const float a = *(const float *)alpha, b = *(const float *)beta;
  const float *DY = (const float *)dy, *Wt = (const float *)w;
  float *DX = (float *)dx;
  for (int n = 0; n < dxd->n; n++)
    for (int c = 0; c < dxd->c; c++)
      for (int ih = 0; ih < dxd->h; ih++)
        for (int iw = 0; iw < dxd->w; iw++) {
          double s = 0;
          for (int k = 0; k < dyd->c; k++)
            for (int r = 0; r < wd->h; r++)
              for (int q = 0; q < wd->w; q++) {
                int th = ih - r + cv->pad_h, tw = iw - q + cv->pad_w;   // = oh * u, ow * v
                if (th < 0 || tw < 0 || th % cv->u || tw % cv->v) continue;
                int oh = th / cv->u, ow = tw / cv->v;
                if (oh >= dyd->h || ow >= dyd->w) continue;
                s += emu_dnn_in(DY[(((size_t)n * dyd->c + k) * dyd->h + oh) * dyd->w + ow], tf) *
                     emu_dnn_in(Wt[(((size_t)k * wd->c + c) * wd->h + r) * wd->w + q], tf);
              }
          float &o = DX[(((size_t)n * dxd->c + c) * dxd->h + ih) * dxd->w + iw];
          o = (float)(a * s + (b != 0.0f ? (double)b * o : 0.0));
        }
  return CUDNN_STATUS_SUCCESS;
}
// dw = alpha * sum over the batch of x (*) dy + beta * dw
inline cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t xd, const void *x,
                                                    cudnnTensorDescriptor_t dyd, const void *dy, cudnnConvolutionDescriptor_t cv,
                                                    cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t ws_bytes,
                                                    const void *beta, cudnnFilterDescriptor_t dwd, void *dw) {
  if (emu_capture) {
    const float al = *(const float *)alpha, be = *(const float *)beta;
    emu_capture->push_back([=] { std::vector<std::function<void()>> *cap = emu_capture; emu_capture = nullptr;
      if (cudnnConvolutionBackwardFilter(h, &al, xd, x, dyd, dy, cv, algo, ws, ws_bytes, &be, dwd, dw)) abort();
      emu_capture = cap; });
    return CUDNN_STATUS_SUCCESS;
  }
  cudnnStatus_t st = emu_dnn_check(xd, dwd, cv, dyd);
  if (st) return st;
  if ((st = emu_dnn_prep(h, ws, ws_bytes, 2, algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1))) return st;
  const bool tf = cv->math != CUDNN_FMA_MATH;
  const float a = *(const float *)alpha, b = *(const float *)beta;
  const float *X = (const float *)x, *DY = (const float *)dy;
  float *DW = (float *)dw;
  for (int k = 0; k < dwd->n; k++)
    for (int c = 0; c < dwd->c; c++)
      for (int r = 0; r < dwd->h; r++)
        for (int q = 0; q < dwd->w; q++) {
          double s = 0;
          for (int n = 0; n < xd->n; n++)
            for (int oh = 0; oh < dyd->h; oh++)
              for (int ow = 0; ow < dyd->w; ow++) {
                int ih = oh * cv->u + r - cv->pad_h, iw = ow * cv->v + q - cv->pad_w;
                if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w) continue;
                s += emu_dnn_in(X[(((size_t)n * xd->c + c) * xd->h + ih) * xd->w + iw], tf) *
                     emu_dnn_in(DY[(((size_t)n * dyd->c + k) * dyd->h + oh) * dyd->w + ow], tf);
              }
          float &o = DW[(((size_t)k * dwd->c + c) * dwd->h + r) * dwd->w + q];
          o = (float)(a * s + (b != 0.0f ? (double)b * o : 0.0));
        }
  return CUDNN_STATUS_SUCCESS;
}
