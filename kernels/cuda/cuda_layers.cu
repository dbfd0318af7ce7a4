/* cuda_layers.cu — every layer and update of contract/layers.h on the GPU (device pointers), queued on the calling
 * thread's stream (see cuda_internal.h). Same conventions as the CPU path: NCHW float32, param grads
 * accumulated (+=), din overwritten and may be NULL, conv stride 1 with zero padding, non-overlapping
 * max pooling (floor/ceil), leaky ReLU whose backward reads out, dropout with a caller mask,
 * softmax_xent returning the batch SUM of -log p.
 *
 * conv = per shape and direction the faster (timed on the first call) of cuDNN (strict FP32,
 * deterministic direct/GEMM algorithms) and im2col kernel + one cublasSgemm per batch chunk
 * (mirroring kernels/cpu) where pdl was built with cuDNN; cuda_conv_set_impl forces either; fc =
 * cublasSgemm.
 * Element-wise kernels use grid-stride loops over size_t indices, so any n works with a capped
 * grid. Reductions (bias grads, softmax rows, the loss) run in a fixed order in double: results
 * are deterministic run to run, and no atomics are used. */
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>
#ifdef PDL_HAVE_CUDNN
#include <cudnn.h>
#endif
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/cuda_layers.h"

namespace {

constexpr int kBlock = 256;          /* threads per block of the element-wise kernels */
constexpr unsigned kMaxGrid = 65535; /* grid cap; grid-stride loops cover the rest */

unsigned grid_for(size_t n) {
  size_t g = (n + kBlock - 1) / kBlock;
  return (unsigned)(g < kMaxGrid ? g : kMaxGrid);
}

#define GRID_STRIDE(i, n) \
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- cuBLAS on row-major data -----------------------------------------------------------------
 * Row-major C[M][N] = alpha * op(A)[M][K] * op(B)[K][N] + beta * C, where lda, ldb, ldc are the row
 * strides of A, B, C as stored and ta/tb say whether op transposes the stored matrix.
 * cuBLAS is column-major, and a row-major X[r][c] with row stride ld is, read column-major, the
 * matrix X^T (c x r) with leading dimension ld. So cuBLAS sees our C as C^T (N x M, ldc), and
 *   C^T = (op(A) op(B))^T = op(B)^T op(A)^T.
 * Hence call cublasSgemm with the operands swapped (B first), m = N, n = M, k = K. The transpose
 * flags pass through unchanged: if op(B) = B (stored K x N), cuBLAS reads B as B^T = op(B)^T with
 * OP_N; if op(B) = B^T (stored N x K), cuBLAS reads it as the K x N matrix B and OP_T gives
 * B^T = op(B)^T. Likewise for A. Leading-dimension rules hold: the first operand with OP_N is
 * N x K column-major, needing ldb >= N = row stride of stored B[K][N]; with OP_T it is K x N needing
 * ldb >= K = row stride of stored B[N][K]. */
void gemm_rm(cublasHandle_t h, bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc) {
  CHECK_CUBLAS(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                           B, ldb, A, lda, &beta, C, ldc));
  COUNT_OP();
}

/* ---- element-wise ----------------------------------------------------------------------------- */
__global__ void k_act_fwd(float *out, const float *in, size_t n, float slope) {
  GRID_STRIDE(i, n) { float x = in[i]; out[i] = x > 0.0f ? x : slope * x; }
}

__global__ void k_act_bwd(float *din, const float *dout, const float *out, size_t n, float slope) {
  GRID_STRIDE(i, n) { float g = dout[i]; din[i] = out[i] > 0.0f ? g : slope * g; }
}

__global__ void k_mul(float *out, const float *a, const float *mask, size_t n) {
  GRID_STRIDE(i, n) out[i] = a[i] * mask[i];
}

/* cpu_sgd_step's update (contract/layers.h), with every product and sum rounded on its own (no fused
 * multiply-adds, which nvcc would otherwise contract them into): given the same g, the same bits
 * as the CPU's. v == NULL: plain SGD; wd == 0 skips the decay term, as the CPU does. g = 0.
 * lr_dev != NULL: the learning rate is read there (a captured graph's, set by cuda_lr_set). */
__global__ void k_sgd(float *w, float *g, float *v, size_t n, float lr_arg, const float *lr_dev, float mu, float wd) {
  const float lr = lr_dev ? *lr_dev : lr_arg;
  GRID_STRIDE(i, n) {
    const float gi = wd != 0.0f ? __fadd_rn(g[i], __fmul_rn(wd, w[i])) : g[i];
    if (v) {
      const float vi = __fsub_rn(__fmul_rn(mu, v[i]), __fmul_rn(lr, gi));
      v[i] = vi;
      w[i] = __fadd_rn(w[i], vi);
    } else {
      w[i] = __fsub_rn(w[i], __fmul_rn(lr, gi));
    }
    g[i] = 0.0f;
  }
}

/* The other updates of contract/layers.h, rounded operation by operation in the contract's order
 * (cpu_elem.c's loops): adam (wd == 0 skips the decay term, as the CPU does; __fsqrt_rn and
 * __fdiv_rn are IEEE's correctly rounded sqrtf and division), NAG's point and the averaged iterate. */
__global__ void k_adam(float *w, float *g, float *m, float *v, size_t n, float a_arg, const float *ap, float b1,
                       float b2, float eps, float wd) {
  const float a = ap ? *ap : a_arg;   /* (ap: a captured step's scalar slot, cuda_scalar_slot) */
  const float c1 = __fsub_rn(1.0f, b1), c2 = __fsub_rn(1.0f, b2);
  GRID_STRIDE(i, n) {
    const float gi = wd != 0.0f ? __fadd_rn(g[i], __fmul_rn(wd, w[i])) : g[i];
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(c1, gi));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(c2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    w[i] = __fsub_rn(w[i], __fdiv_rn(__fmul_rn(a, mi), __fadd_rn(__fsqrt_rn(vi), eps)));
    g[i] = 0.0f;
  }
}
__global__ void k_nag_point(float *what, const float *w, const float *m, size_t n, float mu) {
  GRID_STRIDE(i, n) what[i] = __fadd_rn(w[i], __fmul_rn(mu, m[i]));
}
__global__ void k_avg(float *z, const float *w, size_t n, float r_arg, const float *rp, int ema) {
  const float r = rp ? *rp : r_arg;
  const float c = __fsub_rn(1.0f, r);
  GRID_STRIDE(i, n) z[i] = ema ? __fadd_rn(__fmul_rn(c, z[i]), __fmul_rn(r, w[i]))
                               : __fadd_rn(z[i], __fmul_rn(r, __fsub_rn(w[i], z[i])));
}

/* ---- max pooling: window (oh, ow) covers rows [oh*s, min(oh*s+s, H)) and the same for columns.
 * The first maximum in row-major scan order wins (strict >), in forward and backward alike. */
__device__ size_t window_argmax(const float *plane, int H, int W, int s, int oh, int ow) {
  int h0 = oh * s, w0 = ow * s;
  int h1 = min(h0 + s, H), w1 = min(w0 + s, W);
  size_t best = (size_t)h0 * W + w0;
  float bv = plane[best];
  for (int h = h0; h < h1; h++)
    for (int x = w0; x < w1; x++) {
      float v = plane[(size_t)h * W + x];
      if (v > bv) { bv = v; best = (size_t)h * W + x; }
    }
  return best;
}

/* out [BC][Ho][Wo] from in [BC][H][W]; one thread per output element. */
__global__ void k_maxpool_fwd(float *out, const float *in, size_t BC, int H, int W, int s, int Ho, int Wo) {
  size_t n = BC * Ho * Wo;
  GRID_STRIDE(i, n) {
    int ow = (int)(i % Wo);
    int oh = (int)((i / Wo) % Ho);
    size_t pl = i / ((size_t)Ho * Wo);
    const float *plane = in + pl * H * W;
    out[i] = plane[window_argmax(plane, H, W, s, oh, ow)];
  }
}

/* din [BC][H][W] = dout at the argmax of the element's window, 0 elsewhere (also for the rows /
 * columns a floor-mode pool drops). One thread per input element: a gather, no atomics, no memset. */
__global__ void k_maxpool_bwd(float *din, const float *dout, const float *in, size_t BC, int H, int W, int s,
                              int Ho, int Wo) {
  size_t n = BC * H * W;
  GRID_STRIDE(i, n) {
    int x = (int)(i % W);
    int h = (int)((i / W) % H);
    size_t pl = i / ((size_t)H * W);
    int oh = h / s, ow = x / s;
    float g = 0.0f;
    if (oh < Ho && ow < Wo) {
      const float *plane = in + pl * H * W;
      if (window_argmax(plane, H, W, s, oh, ow) == (size_t)h * W + x) g = dout[(pl * Ho + oh) * Wo + ow];
    }
    din[i] = g;
  }
}

/* The fused conv + act + 2x2 max-pool (cuda_conv_act_pool_*): the pooled out [BC][Hp][Wp] from the
 * full activation act [BC][H][W], and each window's argmax (dh*2 + dw, 2 bits) packed four to a
 * byte in idx; one thread per byte (four consecutive outputs), so no two threads write one byte. */
__global__ void k_pool2_idx(float *out, uint8_t *idx, const float *act, size_t BC, int H, int W, int Hp, int Wp) {
  const size_t n = BC * Hp * Wp, nb = (n + 3) / 4;
  GRID_STRIDE(q, nb) {
    unsigned code = 0;
    for (int j = 0; j < 4; j++) {
      const size_t i = q * 4 + j;
      if (i >= n) break;
      const int ow = (int)(i % Wp), oh = (int)((i / Wp) % Hp);
      const float *plane = act + (i / ((size_t)Hp * Wp)) * H * W;
      const size_t a = window_argmax(plane, H, W, 2, oh, ow);
      out[i] = plane[a];
      code |= (unsigned)(((int)(a / W) - 2 * oh) * 2 + ((int)(a % W) - 2 * ow)) << (2 * j);
    }
    idx[q] = (uint8_t)code;
  }
}
/* dpre [BC][H][W]: the pooled gradient at its window's argmax through the activation's backward
 * (out > 0 ? g : slope g, out the pooled value = the activation there), 0 elsewhere: what
 * k_maxpool_bwd then k_act_bwd give. One thread per element (a gather). */
__global__ void k_unpool2_act(float *dpre, const float *dout, const float *out, const uint8_t *idx, size_t BC, int H,
                              int W, int Hp, int Wp, float slope) {
  const size_t n = BC * H * W;
  GRID_STRIDE(i, n) {
    const int x = (int)(i % W), h = (int)((i / W) % H);
    const size_t pl = i / ((size_t)H * W);
    const int oh = h / 2, ow = x / 2;
    float v = 0.0f;
    if (oh < Hp && ow < Wp) {
      const size_t j = (pl * Hp + oh) * Wp + ow;
      if ((unsigned)((idx[j / 4] >> (2 * (j % 4))) & 3u) == (unsigned)((h % 2) * 2 + x % 2)) {
        const float g = dout[j];
        v = out[j] > 0.0f ? g : slope * g;
      }
    }
    dpre[i] = v;
  }
}

/* ---- conv helpers. A chunk is images [b0, b0+cb); P = Ho*Wo; K = Ci*k*k; stride st >= 1.
 * col [K][cb][P]: col[r][b][p] = in[b0+b][ci][ho*st+kh-pad][wo*st+kw-pad] (0 outside), r = (ci*k+kh)*k+kw,
 * so col is a row-major K x (cb*P) matrix whose column b*P+p is image b's patch at p. */
__global__ void k_im2col(float *col, const float *in, int b0, int cb, int Ci, int H, int W, int k, int pad,
                         int Ho, int Wo, int st) {
  size_t P = (size_t)Ho * Wo;
  size_t n = (size_t)Ci * k * k * cb * P;
  GRID_STRIDE(i, n) {
    size_t p = i % P;
    size_t t = i / P;
    int b = (int)(t % cb);
    int r = (int)(t / cb);
    int kw = r % k, kh = (r / k) % k, ci = r / (k * k);
    int ho = (int)(p / Wo), wo = (int)(p % Wo);
    int h = ho * st + kh - pad, x = wo * st + kw - pad;
    float v = 0.0f;
    if (h >= 0 && h < H && x >= 0 && x < W) v = in[(((size_t)(b0 + b) * Ci + ci) * H + h) * W + x];
    col[i] = v;
  }
}

/* din[b0+b][ci][h][x] = sum over (kh, kw) with ho*st = h+pad-kh, ho in [0,Ho), and wo*st = x+pad-kw,
 * wo in [0,Wo), of dcol[(ci*k+kh)*k+kw][b][ho*Wo+wo] (layout of k_im2col), in the order (kh, kw) as
 * the CPU's col2im adds them. One thread per din element (gather). */
__global__ void k_col2im(float *din, const float *dcol, int b0, int cb, int Ci, int H, int W, int k, int pad,
                         int Ho, int Wo, int st) {
  size_t P = (size_t)Ho * Wo;
  size_t n = (size_t)cb * Ci * H * W;
  GRID_STRIDE(i, n) {
    int x = (int)(i % W);
    int h = (int)((i / W) % H);
    int ci = (int)((i / ((size_t)H * W)) % Ci);
    int b = (int)(i / ((size_t)Ci * H * W));
    float s = 0.0f;
    for (int kh = 0; kh < k; kh++) {
      int th = h + pad - kh;
      if (th < 0 || th % st) continue;
      int ho = th / st;
      if (ho >= Ho) continue;
      for (int kw = 0; kw < k; kw++) {
        int tw = x + pad - kw;
        if (tw < 0 || tw % st) continue;
        int wo = tw / st;
        if (wo >= Wo) continue;
        size_t r = ((size_t)ci * k + kh) * k + kw;
        s += dcol[(r * cb + b) * P + (size_t)ho * Wo + wo];
      }
    }
    din[(size_t)b0 * Ci * H * W + i] = s;
  }
}

/* t [C][cb][P] = x[b0+b][c][p] for x [B][C][P] (gathers a chunk channel-major). */
__global__ void k_bcp_to_cbp(float *t, const float *x, int b0, int cb, int C, size_t P) {
  size_t n = (size_t)C * cb * P;
  GRID_STRIDE(i, n) {
    size_t p = i % P;
    int b = (int)((i / P) % cb);
    int c = (int)(i / (P * cb));
    t[i] = x[((size_t)(b0 + b) * C + c) * P + p];
  }
}

/* The leaky ReLU of k_act_fwd, and the gradient at its input of k_act_bwd (from its output o):
 * the fused epilogues below compute exactly these expressions, so that they give the unfused
 * sequence's bits (issue 35 D). */
__device__ inline float leaky(float x, float slope) { return x > 0.0f ? x : slope * x; }
__device__ inline float leaky_grad(float g, float o, float slope) { return o > 0.0f ? g : slope * g; }

/* out[b0+b][c][p] = t[c][b][p] + bias[c] for t [C][cb][P], then with ACT the leaky ReLU of it;
 * one thread per out element of the chunk. */
template <bool ACT>
__global__ void k_cbp_to_bcp_bias(float *out, const float *t, const float *bias, int b0, int cb, int C, size_t P,
                                  float slope) {
  size_t n = (size_t)cb * C * P;
  GRID_STRIDE(i, n) {
    size_t p = i % P;
    int c = (int)((i / P) % C);
    int b = (int)(i / (P * C));
    const float v = t[((size_t)c * cb + b) * P + p] + bias[c];
    out[(size_t)b0 * C * P + i] = ACT ? leaky(v, slope) : v;
  }
}

/* out[b][c][p] += bias[c] for out [B][C][P] (after cuDNN's convolution: one rounding, as the
 * im2col path's t + bias). */
template <bool ACT>
__global__ void k_add_channel_bias(float *out, const float *bias, size_t n, int C, size_t P, float slope) {
  GRID_STRIDE(i, n) {
    const float v = out[i] + bias[(i / P) % C];
    out[i] = ACT ? leaky(v, slope) : v;
  }
}

/* out[i][j] = bias[j] for out [B][N]. */
__global__ void k_fill_rows(float *out, const float *bias, size_t B, int N) {
  size_t n = B * N;
  GRID_STRIDE(i, n) out[i] = bias[i % N];
}

/* The same sum for a conv layer's bias, where B * P is large (401k per channel at batch 512 on a
 * 28x28 layer): one block per channel was ~0.8 ms there, latency-bound with Co blocks in flight.
 * Here S blocks per channel each sum a fixed contiguous range of the flattened (b, p) in double
 * (a fixed strided subset per thread, then a fixed tree) into part[c * S + s]; k_channel_finish
 * adds the S partials in order. Fixed partition and order: deterministic. Block c * S + s. */
/* With ACT (a fused conv + leaky ReLU backward): x is the gradient at the activation's output and o
 * its value; each element is first turned into the gradient at its input (leaky_grad), which is
 * written back over x (what the unfused in-place activation backward leaves there) and summed. */
template <bool ACT>
__global__ void k_channel_partial(double *part, float *x, const float *o, float slope, int B, int C, size_t P, int S) {
  __shared__ double sh[kBlock];
  const int c = (int)(blockIdx.x / (unsigned)S), si = (int)(blockIdx.x % (unsigned)S);
  const size_t n = (size_t)B * P, i1 = n * (size_t)(si + 1) / (size_t)S;
  size_t i = n * (size_t)si / (size_t)S + threadIdx.x;
  double acc = 0.0;
  if (i < i1) {
    size_t b = i / P, p = i % P;
    const size_t q = blockDim.x / P, r = blockDim.x % P;
    for (; i < i1; i += blockDim.x) {
      const size_t e = (b * (size_t)C + (size_t)c) * P + p;
      if (ACT) x[e] = leaky_grad(x[e], o[e], slope);
      acc += (double)x[e];
      b += q; p += r;
      if (p >= P) { p -= P; b++; }
    }
  }
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[(size_t)c * S + si] = sh[0];
}
__global__ void k_channel_finish(float *db, const double *part, int C, int S) {
  GRID_STRIDE(c, (size_t)C) {
    double t = 0.0;
    for (int j = 0; j < S; j++) t += part[c * (size_t)S + j];
    db[c] += (float)t;
  }
}

/* db[c] += sum over b < B, p < P of x[b][c][p]. One block per channel (grid-stride over channels),
 * each thread sums a fixed strided subset in double, then a fixed tree: deterministic. */
template <bool ACT>
__global__ void k_channel_sum(float *db, float *x, const float *o, float slope, int B, int C, size_t P) {
  __shared__ double sh[kBlock];
  size_t n = (size_t)B * P;
  for (int c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0.0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
      size_t b = i / P, p = i % P;
      const size_t e = (b * C + c) * P + p;
      if (ACT) x[e] = leaky_grad(x[e], o[e], slope);
      s += (double)x[e];
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) db[c] += (float)sh[0];
    __syncthreads(); /* sh is reused by the next channel */
  }
}

/* ---- softmax + cross-entropy. One warp per row (rows grid-strided), all 32 lanes active in the
 * shuffles (a warp with row >= B skips the whole body uniformly). Computed in double like the
 * reference: mx = max z, sum = sum exp(z - mx), probs = exp(z - mx) / sum,
 * rowloss = log(sum) - (z[label] - mx). A label outside [0, N) sets *bad and gives a NaN row. */
constexpr int kWarpsPerBlock = kBlock / 32;

__device__ double warp_sum(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__global__ void k_softmax_fwd(float *probs, double *rowloss, int *bad, const float *logits, const int *labels,
                              int B, int N) {
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  for (int row = blockIdx.x * kWarpsPerBlock + warp; row < B; row += gridDim.x * kWarpsPerBlock) {
    const float *z = logits + (size_t)row * N;
    float m = -INFINITY;
    for (int j = lane; j < N; j += 32) m = fmaxf(m, z[j]);
    double mx = (double)warp_max(m);
    double s = 0.0;
    for (int j = lane; j < N; j += 32) s += exp((double)z[j] - mx);
    double sum = warp_sum(s);
    for (int j = lane; j < N; j += 32) probs[(size_t)row * N + j] = (float)(exp((double)z[j] - mx) / sum);
    if (lane == 0) {
      int l = labels[row];
      if (l < 0 || l >= N) { *bad = 1; rowloss[row] = NAN; }
      else rowloss[row] = log(sum) - ((double)z[l] - mx);
    }
  }
}

/* The sum of v[0..n) in double over one block of kBlock threads, in a fixed order (each thread a
 * strided partial, then a tree): every thread must call it; the result is thread 0's. */
__device__ double block_sum_doubles(const double *v, int n, double *sh) {
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  return sh[0];
}

/* *out = sum of v[0..n) in double, one block, fixed order. */
__global__ void k_sum_doubles(double *out, const double *v, int n) {
  __shared__ double sh[kBlock];
  double s = block_sum_doubles(v, n, sh);
  if (threadIdx.x == 0) *out = s;
}

/* A resident batch's softmax tail (one block): acc[0] += the loss sum (block_sum_doubles over
 * rowloss, k_sum_doubles's order, so the same bits as cuda_softmax_xent_forward returns),
 * acc[1] += the rows whose first largest probability is at their label (model.c's argmax),
 * acc[2] += labels outside [0, N). Counts are exact in double (below 2^53). */
__global__ void k_xent_acc(double *acc, const double *rowloss, const float *probs, const int *labels, int B, int N) {
  __shared__ double sh[kBlock];
  const double loss = block_sum_doubles(rowloss, B, sh);
  __syncthreads();   /* sh is reused below */
  double hits = 0.0, bad = 0.0;
  for (int row = threadIdx.x; row < B; row += blockDim.x) {
    const int l = labels[row];
    if (l < 0 || l >= N) { bad += 1.0; continue; }
    const float *pr = probs + (size_t)row * N;
    int arg = 0;
    for (int j = 1; j < N; j++) if (pr[j] > pr[arg]) arg = j;
    hits += arg == l ? 1.0 : 0.0;
  }
  __shared__ double sb[kBlock];
  sh[threadIdx.x] = hits;
  sb[threadIdx.x] = bad;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) { sh[threadIdx.x] += sh[threadIdx.x + w]; sb[threadIdx.x] += sb[threadIdx.x + w]; }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    acc[0] += loss;
    acc[1] += sh[0];
    acc[2] += sb[0];
  }
}

/* dst[b][0..words) = src[idx[b]][0..words), 4-byte words (a batch from a resident data set) */
__global__ void k_gather(unsigned *dst, const unsigned *src, const int *idx, int B, size_t words) {
  const size_t n = (size_t)B * words;
  GRID_STRIDE(i, n) {
    const size_t b = i / words, j = i - b * words;
    dst[i] = src[(size_t)idx[b] * words + j];
  }
}

/* dlogits = (probs - onehot(label)) * scale, in double then rounded once (as the reference). */
__global__ void k_softmax_bwd(float *dlogits, const float *probs, const int *labels, int B, int N, float scale) {
  size_t n = (size_t)B * N;
  GRID_STRIDE(i, n) {
    int j = (int)(i % N);
    int row = (int)(i / N);
    double g = (double)probs[i] - (j == labels[row] ? 1.0 : 0.0);
    dlogits[i] = (float)(g * (double)scale);
  }
}

/* ---- conv chunking ----------------------------------------------------------------------------
 * Scratch per image: col [K][P] plus a channel-major output / dout copy [Co][P]. The chunk is the
 * largest image count whose scratch fits the cap (at least 1), and cb*P must fit cuBLAS's int. */
std::atomic<size_t> g_scratch_cap{(size_t)1 << 25};

struct ConvShape { int Ho, Wo, K; size_t P; int chunk, st; };

/* st: the stride (contract/layers.h's conv_s: Ho = (H + 2 pad - k) / st + 1, floor) */
ConvShape conv_shape(int B, int Ci, int H, int W, int Co, int k, int pad, int st = 1) {
  CUDA_SHAPE_ASSERT(B > 0 && Ci > 0 && H > 0 && W > 0 && Co > 0 && k > 0 && pad >= 0 && st >= 1);
  CUDA_SHAPE_ASSERT(H + 2 * pad >= k && W + 2 * pad >= k);
  ConvShape s;
  s.st = st;
  s.Ho = (H + 2 * pad - k) / st + 1;
  s.Wo = (W + 2 * pad - k) / st + 1;
  CUDA_SHAPE_ASSERT(s.Ho > 0 && s.Wo > 0);
  CUDA_SHAPE_ASSERT((long long)Ci * k * k <= INT_MAX && (long long)s.Ho * s.Wo <= INT_MAX);
  s.K = Ci * k * k;
  s.P = (size_t)s.Ho * s.Wo;
  size_t per_image = ((size_t)s.K + (size_t)Co) * s.P;
  size_t c = g_scratch_cap.load() / per_image;
  if (c < 1) c = 1;
  if (c > (size_t)B) c = (size_t)B;
  if (c > (size_t)INT_MAX / s.P) c = (size_t)INT_MAX / s.P;
  s.chunk = (int)c;
  return s;
}

/* ---- cuDNN convolutions -------------------------------------------------------------------------
 * One plan per shape (B, Ci, H, W, Co, k, pad) and thread: the descriptors (NCHW float, cross-
 * correlation, stride 1, math CUDNN_FMA_MATH = strict FP32, never TF32) and, for each direction,
 * the fastest algorithm cudnnFind* measured that is deterministic, FMA-math, one of the direct or
 * GEMM-based ones (no FFT or Winograd: transforms round differently from a sum of products) and
 * needs at most kDnnWorkspaceCap bytes of workspace. A direction with no such algorithm falls back
 * to the im2col path for that shape (said in cuda_conv_algos). The workspace is the context's, grown
 * when a plan is made (the first call for a shape), never during a step after that. */
enum { kConvIm2col = 0, kConvCudnn = 1, kConvAuto = 2 };
std::atomic<int> g_conv_mode{
#ifdef PDL_HAVE_CUDNN
    kConvAuto
#else
    kConvIm2col
#endif
};
std::mutex g_algos_mu;
std::vector<std::string> g_algos; /* "shape: fwd=.. bwd_data=.. bwd_filter=.." per shape seen */

void note_algos(const std::string &line) {
  std::lock_guard<std::mutex> lk(g_algos_mu);
  for (const auto &l : g_algos) if (l == line) return;
  g_algos.push_back(line);
}

#ifdef PDL_HAVE_CUDNN
#define CHECK_CUDNN(call) do { cudnnStatus_t s_ = (call); \
  if (s_ != CUDNN_STATUS_SUCCESS) pdl_cuda_fail(#call, "cuDNN error", cudnnGetErrorString(s_), __FILE__, __LINE__); \
  } while (0)
constexpr size_t kDnnWorkspaceCap = (size_t)256 << 20;

struct DnnPlan {
  int key[8];   /* B, Ci, H, W, Co, k, pad, stride */
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  int fwd, bwd_data, bwd_filter; /* algorithm, or -1: the im2col path for that direction */
  int use_fwd, use_bwd[2];       /* auto: 1 cuDNN, 0 im2col, -1 not timed yet; use_bwd[din != NULL] */
};
struct DnnState {
  cudnnHandle_t h;
  std::vector<DnnPlan> plans;
  void *ws = nullptr;
  size_t ws_bytes = 0;
};

void dnn_free(void *p) {
  DnnState *d = (DnnState *)p;
  for (auto &pl : d->plans) {
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(pl.x));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(pl.y));
    CHECK_CUDNN(cudnnDestroyFilterDescriptor(pl.w));
    CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(pl.conv));
  }
  CHECK_CUDNN(cudnnDestroy(d->h));
  CHECK_CUDA(cudaFree(d->ws));
  delete d;
}

DnnState *ctx_dnn(PdlCudaCtx *c) {
  if (!c->dnn) {
    DnnState *d = new DnnState;
    CHECK_CUDNN(cudnnCreate(&d->h));
    CHECK_CUDNN(cudnnSetStream(d->h, c->stream));
    c->dnn = d;
    c->dnn_free = dnn_free;
  }
  return (DnnState *)c->dnn;
}

/* Algorithms admitted: deterministic by cuDNN's own report (checked per result as well), not a
 * transform (FFT, Winograd). */
bool fwd_ok(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool bwd_data_ok(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool bwd_filter_ok(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}
/* the first (fastest) admitted result: success, deterministic, FMA math, within the cap */
template <class Perf, class Ok> int pick(const Perf *p, int n, Ok ok, size_t *ws) {
  for (int i = 0; i < n; i++)
    if (p[i].status == CUDNN_STATUS_SUCCESS && p[i].determinism == CUDNN_DETERMINISTIC &&
        p[i].mathType == CUDNN_FMA_MATH && ok(p[i].algo) && p[i].memory <= kDnnWorkspaceCap) {
      if (p[i].memory > *ws) *ws = p[i].memory;
      return (int)p[i].algo;
    }
  return -1;
}

DnnPlan *dnn_plan(PdlCudaCtx *c, int B, int Ci, int H, int W, int Co, int k, int pad, const ConvShape &s) {
  DnnState *d = ctx_dnn(c);
  const int key[8] = {B, Ci, H, W, Co, k, pad, s.st};
  for (auto &pl : d->plans) if (!memcmp(pl.key, key, sizeof key)) return &pl;
  DnnPlan pl;
  memcpy(pl.key, key, sizeof key);
  pl.use_fwd = pl.use_bwd[0] = pl.use_bwd[1] = -1;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&pl.x));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&pl.y));
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&pl.w));
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&pl.conv));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(pl.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, Ci, H, W));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(pl.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, Co, s.Ho, s.Wo));
  CHECK_CUDNN(cudnnSetFilter4dDescriptor(pl.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, Co, Ci, k, k));
  CHECK_CUDNN(cudnnSetConvolution2dDescriptor(pl.conv, pad, pad, s.st, s.st, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CHECK_CUDNN(cudnnSetConvolutionMathType(pl.conv, CUDNN_FMA_MATH));
  /* cudnnFind*Ex on buffers of our own, zeroed: the plain cudnnFind* benchmarks on buffers cuDNN
   * allocates and never initialises (compute-sanitizer initcheck reported every such read), and Ex
   * overwrites the output it is given, so neither the layer's tensors nor its gradients can serve.
   * The workspace is the largest any admitted algorithm asks for (capped), found by asking. */
  const size_t nx = (size_t)B * Ci * H * W, ny = (size_t)B * Co * s.P, nw = (size_t)Co * Ci * k * k;
  size_t find_ws = 0, sz = 0;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++)
    if (fwd_ok((cudnnConvolutionFwdAlgo_t)a) &&
        cudnnGetConvolutionForwardWorkspaceSize(d->h, pl.x, pl.w, pl.conv, pl.y, (cudnnConvolutionFwdAlgo_t)a, &sz) ==
            CUDNN_STATUS_SUCCESS && sz <= kDnnWorkspaceCap && sz > find_ws)
      find_ws = sz;
  for (int a = 0; a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; a++)
    if (bwd_data_ok((cudnnConvolutionBwdDataAlgo_t)a) &&
        cudnnGetConvolutionBackwardDataWorkspaceSize(d->h, pl.w, pl.y, pl.conv, pl.x, (cudnnConvolutionBwdDataAlgo_t)a,
                                                     &sz) == CUDNN_STATUS_SUCCESS && sz <= kDnnWorkspaceCap &&
        sz > find_ws)
      find_ws = sz;
  for (int a = 0; a < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; a++)
    if (bwd_filter_ok((cudnnConvolutionBwdFilterAlgo_t)a) &&
        cudnnGetConvolutionBackwardFilterWorkspaceSize(d->h, pl.x, pl.y, pl.conv, pl.w,
                                                       (cudnnConvolutionBwdFilterAlgo_t)a, &sz) ==
            CUDNN_STATUS_SUCCESS && sz <= kDnnWorkspaceCap && sz > find_ws)
      find_ws = sz;
  const size_t tot = (nx + ny + nw) * sizeof(float) + find_ws;
  char *buf = nullptr;
  CHECK_CUDA(cudaMalloc((void **)&buf, tot));
  CHECK_CUDA(cudaMemsetAsync(buf, 0, tot, c->stream));
  COUNT_OP();
  float *fx = (float *)buf, *fy = fx + nx, *fw = fy + ny;
  void *fws = find_ws ? (void *)(fw + nw) : nullptr;
  int n = 0;
  size_t ws = 0;
  cudnnConvolutionFwdAlgoPerf_t pf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(d->h, pl.x, fx, pl.w, fw, pl.conv, pl.y, fy,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, pf, fws, find_ws));
  pl.fwd = pick(pf, n, fwd_ok, &ws);
  cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  CHECK_CUDA(cudaMemsetAsync(fy, 0, ny * sizeof(float), c->stream)); /* dy: the forward's search wrote y */
  COUNT_OP();
  CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(d->h, pl.w, fw, pl.y, fy, pl.conv, pl.x, fx,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, pd, fws, find_ws));
  pl.bwd_data = pick(pd, n, bwd_data_ok, &ws);
  cudnnConvolutionBwdFilterAlgoPerf_t pw[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  CHECK_CUDA(cudaMemsetAsync(fx, 0, nx * sizeof(float), c->stream)); /* x: the data search wrote dx */
  COUNT_OP();
  CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(d->h, pl.x, fx, pl.y, fy, pl.conv, pl.w, fw,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, pw, fws,
                                                            find_ws));
  pl.bwd_filter = pick(pw, n, bwd_filter_ok, &ws);
  CHECK_CUDA(cudaStreamSynchronize(c->stream));
  pdl_cuda_counts.syncs++;
  CHECK_CUDA(cudaFree(buf));
  if (ws > d->ws_bytes) {
    CHECK_CUDA(cudaStreamSynchronize(c->stream)); /* queued work may still use the old workspace */
    pdl_cuda_counts.syncs++;
    CHECK_CUDA(cudaFree(d->ws));
    d->ws = nullptr;
    pdl_cuda_buffers_epoch++;   /* graphs captured with the old workspace are stale */
    CHECK_CUDA(cudaMalloc(&d->ws, ws));
    d->ws_bytes = ws;
  }
  static const char *fwd_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct"};
  char line[256];
  auto nm = [](int a, const char *const *names, int nn, char *buf) {
    if (a < 0) snprintf(buf, 32, "im2col");
    else if (names && a < nn) snprintf(buf, 32, "%s", names[a]);
    else snprintf(buf, 32, "algo_%d", a);
    return buf;
  };
  char a1[32], a2[32], a3[32];
  char sts[16] = "";
  if (s.st > 1) snprintf(sts, sizeof sts, " s%d", s.st);
  snprintf(line, sizeof line, "%dx%dx%dx%d->%d k%d p%d%s: fwd=%s bwd_data=%s bwd_filter=%s", B, Ci, H, W, Co, k, pad,
           sts, nm(pl.fwd, fwd_names, 4, a1), nm(pl.bwd_data, nullptr, 0, a2), nm(pl.bwd_filter, nullptr, 0, a3));
  note_algos(line);
  d->plans.push_back(pl);
  return &d->plans.back();
}
#endif /* PDL_HAVE_CUDNN */

/* ---- the two convolution paths ------------------------------------------------------------------ */
/* im2col + cuBLAS, in batch chunks; scratch: col [K][cb*P] then outT [Co][cb*P] */
void im2col_forward(PdlCudaCtx *c, float *out, const float *in, const float *w, const float *b, int B, int Ci, int H,
                    int W, int Co, int k, int pad, const ConvShape &s, float *scratch, bool act, float slope) {
  for (int b0 = 0; b0 < B; b0 += s.chunk) {
    int cb = B - b0 < s.chunk ? B - b0 : s.chunk;
    int cols = cb * (int)s.P;
    float *col = scratch, *outT = scratch + (size_t)s.K * cols;
    size_t ncol = (size_t)s.K * cols, nout = (size_t)Co * cols;
    k_im2col<<<grid_for(ncol), kBlock, 0, c->stream>>>(col, in, b0, cb, Ci, H, W, k, pad, s.Ho, s.Wo, s.st);
    CHECK_LAUNCH(k_im2col, c->stream);
    /* outT [Co][cols] = w [Co][K] * col [K][cols] */
    gemm_rm(c->blas, false, false, Co, cols, s.K, 1.0f, w, s.K, col, cols, 0.0f, outT, cols);
    if (act) {
      k_cbp_to_bcp_bias<true><<<grid_for(nout), kBlock, 0, c->stream>>>(out, outT, b, b0, cb, Co, s.P, slope);
      CHECK_LAUNCH(k_cbp_to_bcp_bias<true>, c->stream);
    } else {
      k_cbp_to_bcp_bias<false><<<grid_for(nout), kBlock, 0, c->stream>>>(out, outT, b, b0, cb, Co, s.P, slope);
      CHECK_LAUNCH(k_cbp_to_bcp_bias<false>, c->stream);
    }
  }
}
/* dw +=, din = (if not NULL); scratch: col [K][cb*P] (reused for dcol) then doutT [Co][cb*P] */
void im2col_backward(PdlCudaCtx *c, float *din, float *dw, const float *dout, const float *in, const float *w, int B,
                     int Ci, int H, int W, int Co, int k, int pad, const ConvShape &s, float *scratch) {
  for (int b0 = 0; b0 < B; b0 += s.chunk) {
    int cb = B - b0 < s.chunk ? B - b0 : s.chunk;
    int cols = cb * (int)s.P;
    float *col = scratch, *doutT = scratch + (size_t)s.K * cols;
    size_t ncol = (size_t)s.K * cols, nout = (size_t)Co * cols;
    k_im2col<<<grid_for(ncol), kBlock, 0, c->stream>>>(col, in, b0, cb, Ci, H, W, k, pad, s.Ho, s.Wo, s.st);
    CHECK_LAUNCH(k_im2col, c->stream);
    k_bcp_to_cbp<<<grid_for(nout), kBlock, 0, c->stream>>>(doutT, dout, b0, cb, Co, s.P);
    CHECK_LAUNCH(k_bcp_to_cbp, c->stream);
    /* dw [Co][K] += doutT [Co][cols] * col [K][cols]^T */
    gemm_rm(c->blas, false, true, Co, s.K, cols, 1.0f, doutT, cols, col, cols, 1.0f, dw, s.K);
    if (din) {
      /* dcol [K][cols] = w [Co][K]^T * doutT [Co][cols]; overwrites col, which the dw GEMM
       * queued before it on the same stream has finished reading. */
      gemm_rm(c->blas, true, false, s.K, cols, Co, 1.0f, w, s.K, doutT, cols, 0.0f, col, cols);
      size_t nin = (size_t)cb * Ci * H * W;
      k_col2im<<<grid_for(nin), kBlock, 0, c->stream>>>(din, col, b0, cb, Ci, H, W, k, pad, s.Ho, s.Wo, s.st);
      CHECK_LAUNCH(k_col2im, c->stream);
    }
  }
}

#ifdef PDL_HAVE_CUDNN
void dnn_forward(PdlCudaCtx *c, DnnPlan *pl, float *out, const float *in, const float *w, const float *b, int Co,
                 const ConvShape &s, bool act, float slope) {
  DnnState *d = (DnnState *)c->dnn;
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUDNN(cudnnConvolutionForward(d->h, &one, pl->x, in, pl->w, w, pl->conv, (cudnnConvolutionFwdAlgo_t)pl->fwd,
                                      d->ws, d->ws_bytes, &zero, pl->y, out));
  COUNT_OP();
  const size_t nout = (size_t)pl->key[0] * Co * s.P;
  if (act) {
    k_add_channel_bias<true><<<grid_for(nout), kBlock, 0, c->stream>>>(out, b, nout, Co, s.P, slope);
    CHECK_LAUNCH(k_add_channel_bias<true>, c->stream);
  } else {
    k_add_channel_bias<false><<<grid_for(nout), kBlock, 0, c->stream>>>(out, b, nout, Co, s.P, slope);
    CHECK_LAUNCH(k_add_channel_bias<false>, c->stream);
  }
}
/* dw += (beta 1); din = (beta 0), if not NULL */
void dnn_backward(PdlCudaCtx *c, DnnPlan *pl, float *din, float *dw, const float *dout, const float *in,
                  const float *w) {
  DnnState *d = (DnnState *)c->dnn;
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUDNN(cudnnConvolutionBackwardFilter(d->h, &one, pl->x, in, pl->y, dout, pl->conv,
                                             (cudnnConvolutionBwdFilterAlgo_t)pl->bwd_filter, d->ws, d->ws_bytes, &one,
                                             pl->w, dw));
  COUNT_OP();
  if (din) {
    CHECK_CUDNN(cudnnConvolutionBackwardData(d->h, &one, pl->w, w, pl->y, dout, pl->conv,
                                             (cudnnConvolutionBwdDataAlgo_t)pl->bwd_data, d->ws, d->ws_bytes, &zero,
                                             pl->x, din));
    COUNT_OP();
  }
}
/* ms per call of f on the stream: one warm-up, then the mean of 3 between two events */
template <class F> float time_ms(PdlCudaCtx *c, F f) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  f();
  CHECK_CUDA(cudaEventRecord(e0, c->stream));
  for (int i = 0; i < 3; i++) f();
  CHECK_CUDA(cudaEventRecord(e1, c->stream));
  CHECK_CUDA(cudaEventSynchronize(e1));
  pdl_cuda_counts.syncs++;
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  return ms / 3;
}
void note_choice(const DnnPlan *pl, const char *dir, float t_dnn, float t_im2col) {
  char line[256], sts[16] = "";
  if (pl->key[7] > 1) snprintf(sts, sizeof sts, " s%d", pl->key[7]);
  snprintf(line, sizeof line, "%dx%dx%dx%d->%d k%d p%d%s: auto %s = %s (cuDNN %.4f ms, im2col %.4f ms)", pl->key[0],
           pl->key[1], pl->key[2], pl->key[3], pl->key[4], pl->key[5], pl->key[6], sts, dir,
           t_dnn <= t_im2col ? "cudnn" : "im2col", t_dnn, t_im2col);
  note_algos(line);
}
#endif /* PDL_HAVE_CUDNN */

/* db [Co] += the sums of dout [B][Co][P] over b and p: S splits per channel (k_channel_partial)
 * so that about 1024 blocks run, each of at least 4096 elements, the partials (doubles) at the
 * start of the layer's scratch, which the convolution reuses only after k_channel_finish read
 * them (same stream). */
void conv_bias_grad(PdlCudaCtx *c, float *db, float *dout, const float *act_out, float slope, int B, int Co,
                    const ConvShape &s, float *scratch) {
  const size_t n = (size_t)B * s.P, room = ((size_t)s.K + (size_t)Co) * s.P * (size_t)s.chunk / 2 / (size_t)Co;
  size_t S = ((size_t)1024 + Co - 1) / Co;
  if (S > n / 4096) S = n / 4096;
  if (S > room) S = room;
  if (S > kMaxGrid / (size_t)Co) S = kMaxGrid / (size_t)Co;
  const unsigned g1 = Co < (int)kMaxGrid ? (unsigned)Co : kMaxGrid;
  if (S <= 1) {
    if (act_out) {
      k_channel_sum<true><<<g1, kBlock, 0, c->stream>>>(db, dout, act_out, slope, B, Co, s.P);
      CHECK_LAUNCH(k_channel_sum<true>, c->stream);
    } else {
      k_channel_sum<false><<<g1, kBlock, 0, c->stream>>>(db, dout, nullptr, slope, B, Co, s.P);
      CHECK_LAUNCH(k_channel_sum<false>, c->stream);
    }
    return;
  }
  double *part = (double *)scratch; /* the scratch is cudaMalloc'd: aligned for doubles */
  if (act_out) {
    k_channel_partial<true><<<(unsigned)(Co * S), kBlock, 0, c->stream>>>(part, dout, act_out, slope, B, Co, s.P, (int)S);
    CHECK_LAUNCH(k_channel_partial<true>, c->stream);
  } else {
    k_channel_partial<false><<<(unsigned)(Co * S), kBlock, 0, c->stream>>>(part, dout, nullptr, slope, B, Co, s.P, (int)S);
    CHECK_LAUNCH(k_channel_partial<false>, c->stream);
  }
  k_channel_finish<<<grid_for((size_t)Co), kBlock, 0, c->stream>>>(db, part, Co, (int)S);
  CHECK_LAUNCH(k_channel_finish, c->stream);
}

} /* namespace */

/* ---- entry points ------------------------------------------------------------------------------ */
extern "C" {

int cuda_conv_set_impl(const char *name) {
  if (!strcmp(name, "im2col")) { g_conv_mode.store(kConvIm2col); return 0; }
#ifdef PDL_HAVE_CUDNN
  if (!strcmp(name, "cudnn")) { g_conv_mode.store(kConvCudnn); return 0; }
  if (!strcmp(name, "auto")) { g_conv_mode.store(kConvAuto); return 0; }
#endif
  return -1;
}
const char *cuda_conv_impl(void) {
  const int m = g_conv_mode.load();
  return m == kConvAuto ? "auto" : m == kConvCudnn ? "cudnn" : "im2col";
}
const char *cuda_conv_algos(char *buf, size_t len) {
  std::lock_guard<std::mutex> lk(g_algos_mu);
  std::string all;
  for (const auto &l : g_algos) { if (!all.empty()) all += "; "; all += l; }
  if (len) snprintf(buf, len, "%s", all.c_str());
  return buf;
}

void cuda_conv_set_scratch_cap(size_t floats) { g_scratch_cap.store(floats); }
size_t cuda_conv_get_scratch_cap(void) { return g_scratch_cap.load(); }

/* the convolution's own scratch (im2col's col and its GEMM's output for a chunk of images) */
static size_t conv_own_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st = 1) {
  ConvShape s = conv_shape(B, Ci, H, W, Co, k, pad, st);
  return ((size_t)s.K + (size_t)Co) * s.P * (size_t)s.chunk;
}
size_t cuda_conv_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads) {
  (void)nthreads; /* GPU work does not depend on the host thread count */
  size_t n = conv_own_floats(B, Ci, H, W, Co, k, pad);
  if (k == 3) n += (size_t)B * Co * (H + 2 * pad - 2) * (W + 2 * pad - 2);   /* the fused pool's full activation */
  return n;
}

} /* extern "C" */
namespace {
/* The convolution, with act its bias epilogue followed by the leaky ReLU (cuda_conv_act_forward) */
void conv_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W, int Co,
                  int k, int pad, float *scratch, bool act, float slope, int st = 1) {
  /* in [B][Ci][H][W], w [Co][Ci][k][k] = row-major [Co][K], b [Co], out [B][Co][Ho][Wo] */
  ConvShape s = conv_shape(B, Ci, H, W, Co, k, pad, st);
  CUDA_SHAPE_ASSERT(scratch != nullptr);
  PdlCudaCtx *c = pdl_cuda_ctx();
#ifdef PDL_HAVE_CUDNN
  const int mode = g_conv_mode.load();
  if (mode != kConvIm2col) {
    DnnPlan *pl = dnn_plan(c, B, Ci, H, W, Co, k, pad, s);
    if (pl->fwd >= 0) {
      if (mode == kConvAuto && pl->use_fwd < 0) { /* the first call for this shape: time both, keep the faster */
        const float td = time_ms(c, [&] { dnn_forward(c, pl, out, in, w, b, Co, s, act, slope); });
        const float ti = time_ms(c, [&] { im2col_forward(c, out, in, w, b, B, Ci, H, W, Co, k, pad, s, scratch, act, slope); });
        pl->use_fwd = td <= ti;
        note_choice(pl, "fwd", td, ti);
      }
      if (mode == kConvCudnn || pl->use_fwd == 1) { dnn_forward(c, pl, out, in, w, b, Co, s, act, slope); return; }
    }
  }
#endif
  im2col_forward(c, out, in, w, b, B, Ci, H, W, Co, k, pad, s, scratch, act, slope);
}

/* The convolution's backward; with act_out (cuda_conv_act_backward) dout is first turned, in
 * place, into the gradient at the activation's input by the bias gradient's kernel. */
void conv_backward(float *din, float *dw, float *db, float *dout, const float *act_out, float slope, const float *in,
                   const float *w, int B, int Ci, int H, int W, int Co, int k, int pad, float *scratch, int st = 1) {
  /* dout [B][Co][Ho][Wo]; dw [Co][K] +=; db [Co] +=; din [B][Ci][H][W] = (optional) */
  ConvShape s = conv_shape(B, Ci, H, W, Co, k, pad, st);
  CUDA_SHAPE_ASSERT(scratch != nullptr);
  PdlCudaCtx *c = pdl_cuda_ctx();
  conv_bias_grad(c, db, dout, act_out, slope, B, Co, s, scratch);
#ifdef PDL_HAVE_CUDNN
  const int mode = g_conv_mode.load();
  if (mode != kConvIm2col) {
    DnnPlan *pl = dnn_plan(c, B, Ci, H, W, Co, k, pad, s);
    const int wd = din != nullptr;
    if (pl->bwd_filter >= 0 && (pl->bwd_data >= 0 || !din)) {
      if (mode == kConvAuto && pl->use_bwd[wd] < 0) {
        /* time both into a scratch dw (the real one accumulates); din is overwritten by the call below */
        float *tdw = cuda_alloc_floats((size_t)Co * s.K);
        cuda_zero_floats(tdw, (size_t)Co * s.K); /* both paths read it (beta 1): initialised */
        const float td = time_ms(c, [&] { dnn_backward(c, pl, din, tdw, dout, in, w); });
        const float ti = time_ms(c, [&] { im2col_backward(c, din, tdw, dout, in, w, B, Ci, H, W, Co, k, pad, s, scratch); });
        CHECK_CUDA(cudaStreamSynchronize(c->stream));
        pdl_cuda_counts.syncs++;
        cuda_free(tdw);
        pl->use_bwd[wd] = td <= ti;
        note_choice(pl, wd ? "bwd" : "bwd (no din)", td, ti);
      }
      if (mode == kConvCudnn || pl->use_bwd[wd] == 1) { dnn_backward(c, pl, din, dw, dout, in, w); return; }
    }
  }
#endif
  im2col_backward(c, din, dw, dout, in, w, B, Ci, H, W, Co, k, pad, s, scratch);
}

} /* namespace */
extern "C" {

void cuda_conv_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                       int Co, int k, int pad, float *scratch) {
  conv_forward(out, in, w, b, B, Ci, H, W, Co, k, pad, scratch, false, 0.0f);
}
void cuda_conv_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                        int B, int Ci, int H, int W, int Co, int k, int pad, float *scratch) {
  /* without act_out, conv_backward only reads dout */
  conv_backward(din, dw, db, const_cast<float *>(dout), nullptr, 0.0f, in, w, B, Ci, H, W, Co, k, pad, scratch);
}
/* the strided convolution (contract/layers.h's conv_s): the same two paths with the stride in the
 * im2col/col2im kernels and in cuDNN's descriptor (issue 51) */
void cuda_conv_s_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                         int Co, int k, int pad, int st, float *scratch) {
  conv_forward(out, in, w, b, B, Ci, H, W, Co, k, pad, scratch, false, 0.0f, st);
}
void cuda_conv_s_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                          int B, int Ci, int H, int W, int Co, int k, int pad, int st, float *scratch) {
  conv_backward(din, dw, db, const_cast<float *>(dout), nullptr, 0.0f, in, w, B, Ci, H, W, Co, k, pad, scratch, st);
}
size_t cuda_conv_s_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads) {
  (void)nthreads;
  return conv_own_floats(B, Ci, H, W, Co, k, pad, st);
}
void cuda_conv_act_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                           int Co, int k, int pad, float slope, float *scratch, float *keep) {
  (void)keep;
  conv_forward(out, in, w, b, B, Ci, H, W, Co, k, pad, scratch, true, slope);
}
void cuda_conv_act_backward(float *din, float *dw, float *db, const float *dout, const float *out, const float *in,
                            const float *w, int B, int Ci, int H, int W, int Co, int k, int pad, float slope,
                            float *scratch, const float *keep) {
  (void)keep;
  /* dout is overwritten with the gradient at the activation's input (cuda_layers.h) */
  conv_backward(din, dw, db, const_cast<float *>(dout), out, slope, in, w, B, Ci, H, W, Co, k, pad, scratch);
}

int cuda_conv_act_pool_fusable(int B, int Ci, int H, int W, int Co, int k, int pad, int pool_s) {
  (void)B; (void)Ci; (void)Co;
  return k == 3 && pool_s == 2 && H + 2 * pad - 2 >= 1 && W + 2 * pad - 2 >= 1;
}
void cuda_conv_act_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B,
                                int Ci, int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch,
                                float *keep) {
  (void)keep;
  const int k = 3, Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  const int Hp = ceil_mode ? (Ho + 1) / 2 : Ho / 2, Wp = ceil_mode ? (Wo + 1) / 2 : Wo / 2;
  CUDA_SHAPE_ASSERT(Hp > 0 && Wp > 0);
  float *act = scratch + conv_own_floats(B, Ci, H, W, Co, k, pad);   /* (cuda_conv_scratch_floats counts it) */
  conv_forward(act, in, w, b, B, Ci, H, W, Co, k, pad, scratch, true, slope);
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t BC = (size_t)B * Co, nb = (BC * Hp * Wp + 3) / 4;
  k_pool2_idx<<<grid_for(nb), kBlock, 0, c->stream>>>(out, idx, act, BC, Ho, Wo, Hp, Wp);
  CHECK_LAUNCH(k_pool2_idx, c->stream);
}
void cuda_conv_act_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out,
                                 const uint8_t *idx, const float *in, const float *w, int B, int Ci, int H, int W,
                                 int Co, int pad, float slope, int ceil_mode, float *scratch, const float *keep) {
  (void)keep;
  const int k = 3, Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  const int Hp = ceil_mode ? (Ho + 1) / 2 : Ho / 2, Wp = ceil_mode ? (Wo + 1) / 2 : Wo / 2;
  CUDA_SHAPE_ASSERT(Hp > 0 && Wp > 0);
  float *dpre = scratch + conv_own_floats(B, Ci, H, W, Co, k, pad);
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t BC = (size_t)B * Co;
  k_unpool2_act<<<grid_for(BC * Ho * Wo), kBlock, 0, c->stream>>>(dpre, dout, out, idx, BC, Ho, Wo, Hp, Wp, slope);
  CHECK_LAUNCH(k_unpool2_act, c->stream);
  conv_backward(din, dw, db, dpre, nullptr, 0.0f, in, w, B, Ci, H, W, Co, k, pad, scratch);
}

void cuda_fc_forward(float *out, const float *in, const float *w, const float *b, int B, int M, int N) {
  /* in [B][M], w [N][M], b [N], out [B][N] = in * w^T + b */
  CUDA_SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_fill_rows<<<grid_for((size_t)B * N), kBlock, 0, c->stream>>>(out, b, (size_t)B, N);
  CHECK_LAUNCH(k_fill_rows, c->stream);
  gemm_rm(c->blas, false, true, B, N, M, 1.0f, in, M, w, M, 1.0f, out, N);
}

void cuda_fc_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                      int B, int M, int N) {
  /* dout [B][N]; dw [N][M] += dout^T * in; db [N] += column sums of dout; din [B][M] = dout * w */
  CUDA_SHAPE_ASSERT(B > 0 && M > 0 && N > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  /* <false>: reads dout only */
  k_channel_sum<false><<<N < (int)kMaxGrid ? N : (int)kMaxGrid, kBlock, 0, c->stream>>>(db, const_cast<float *>(dout),
                                                                                        nullptr, 0.0f, B, N, 1);
  CHECK_LAUNCH(k_channel_sum<false>, c->stream);
  gemm_rm(c->blas, true, false, N, M, B, 1.0f, dout, N, in, M, 1.0f, dw, M);
  if (din) gemm_rm(c->blas, false, false, B, M, N, 1.0f, dout, N, w, M, 0.0f, din, M);
}

void cuda_maxpool_forward(float *out, const float *in, int B, int C, int H, int W, int s, int ceil_mode) {
  /* in [B][C][H][W], out [B][C][Ho][Wo] */
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && H > 0 && W > 0 && s > 0);
  int Ho = ceil_mode ? (H + s - 1) / s : H / s, Wo = ceil_mode ? (W + s - 1) / s : W / s;
  CUDA_SHAPE_ASSERT(Ho > 0 && Wo > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  size_t BC = (size_t)B * C;
  k_maxpool_fwd<<<grid_for(BC * Ho * Wo), kBlock, 0, c->stream>>>(out, in, BC, H, W, s, Ho, Wo);
  CHECK_LAUNCH(k_maxpool_fwd, c->stream);
}

void cuda_maxpool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H,
                           int W, int s, int ceil_mode) {
  /* dout [B][C][Ho][Wo]; din [B][C][H][W] =; the argmax is recomputed from in, out is unused */
  (void)out;
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && H > 0 && W > 0 && s > 0);
  int Ho = ceil_mode ? (H + s - 1) / s : H / s, Wo = ceil_mode ? (W + s - 1) / s : W / s;
  CUDA_SHAPE_ASSERT(Ho > 0 && Wo > 0);
  if (!din) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  size_t BC = (size_t)B * C;
  k_maxpool_bwd<<<grid_for(BC * H * W), kBlock, 0, c->stream>>>(din, dout, in, BC, H, W, s, Ho, Wo);
  CHECK_LAUNCH(k_maxpool_bwd, c->stream);
}

void cuda_act_forward(float *out, const float *in, size_t n, float slope) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_act_fwd<<<grid_for(n), kBlock, 0, c->stream>>>(out, in, n, slope);
  CHECK_LAUNCH(k_act_fwd, c->stream);
}

void cuda_act_backward(float *din, const float *dout, const float *out, size_t n, float slope) {
  if (n == 0 || !din) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_act_bwd<<<grid_for(n), kBlock, 0, c->stream>>>(din, dout, out, n, slope);
  CHECK_LAUNCH(k_act_bwd, c->stream);
}

void cuda_dropout_forward(float *out, const float *in, const float *mask, size_t n) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_mul<<<grid_for(n), kBlock, 0, c->stream>>>(out, in, mask, n);
  CHECK_LAUNCH(k_mul, c->stream);
}

void cuda_dropout_backward(float *din, const float *dout, const float *mask, size_t n) {
  if (n == 0 || !din) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_mul<<<grid_for(n), kBlock, 0, c->stream>>>(din, dout, mask, n);
  CHECK_LAUNCH(k_mul, c->stream);
}

/* the learning rate a captured update reads (cuda_lr_resident), per thread as the capture is */
static thread_local float *t_lr_dev;
void cuda_sgd_step(float *w, float *g, float *v, size_t n, float lr, float mu, float wd) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_sgd<<<grid_for(n), kBlock, 0, c->stream>>>(w, g, v, n, lr, pdl_cuda_capturing ? t_lr_dev : nullptr, mu, wd);
  CHECK_LAUNCH(k_sgd, c->stream);
}
__global__ void k_set_float(float *p, float v) { if (threadIdx.x == 0) *p = v; }
void cuda_lr_resident(int on) {
  if (on && !t_lr_dev) {
    if (pdl_cuda_capturing) pdl_cuda_fail("cuda_lr_resident", "called while capturing", "call it before cuda_graph_begin",
                                          __FILE__, __LINE__);
    t_lr_dev = cuda_alloc_floats(1);
  }
  if (!on && t_lr_dev) { cuda_free(t_lr_dev); t_lr_dev = nullptr; }
}
void cuda_lr_set(float lr) {
  if (!t_lr_dev) pdl_cuda_fail("cuda_lr_set", "no resident learning rate", "cuda_lr_resident(1) first", __FILE__, __LINE__);
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_set_float<<<1, 32, 0, c->stream>>>(t_lr_dev, lr);
  CHECK_LAUNCH(k_set_float, c->stream);
}
/* Per-step scalars a graph can change (cuda_scalars_set, cuda_scalar_slot): up to 64 floats of the
 * calling thread on the device, written by one kernel queued before a replay */
constexpr int kMaxScalars = 64;
struct Scalars { float v[kMaxScalars]; };
__global__ void k_set_scalars(float *dst, Scalars s, int n) { if ((int)threadIdx.x < n) dst[threadIdx.x] = s.v[threadIdx.x]; }
static thread_local float *t_scal_dev;
static thread_local int t_scal_slot = -1;
static const float *scalar_at(void) { return t_scal_slot >= 0 ? t_scal_dev + t_scal_slot : nullptr; }
void cuda_scalars_set(const float *v, int n) {
  CUDA_SHAPE_ASSERT(n >= 1 && n <= kMaxScalars);
  if (!t_scal_dev) {
    if (pdl_cuda_capturing) pdl_cuda_fail("cuda_scalars_set", "called while capturing", "call it before cuda_graph_begin",
                                          __FILE__, __LINE__);
    t_scal_dev = cuda_alloc_floats(kMaxScalars);
  }
  Scalars sc;
  memset(&sc, 0, sizeof sc);
  memcpy(sc.v, v, (size_t)n * sizeof(float));
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_set_scalars<<<1, kMaxScalars, 0, c->stream>>>(t_scal_dev, sc, n);
  CHECK_LAUNCH(k_set_scalars, c->stream);
}
void cuda_scalar_slot(int j) {
  CUDA_SHAPE_ASSERT(j < kMaxScalars && (j < 0 || t_scal_dev));
  t_scal_slot = j < 0 ? -1 : j;
}
void cuda_adam_step(float *w, float *g, float *m, float *v, size_t n, float a, float b1, float b2, float eps,
                    float wd) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_adam<<<grid_for(n), kBlock, 0, c->stream>>>(w, g, m, v, n, a, scalar_at(), b1, b2, eps, wd);
  CHECK_LAUNCH(k_adam, c->stream);
}
void cuda_nag_point(float *what, const float *w, const float *m, size_t n, float mu) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_nag_point<<<grid_for(n), kBlock, 0, c->stream>>>(what, w, m, n, mu);
  CHECK_LAUNCH(k_nag_point, c->stream);
}
void cuda_avg_step(float *z, const float *w, size_t n, float r, int ema) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_avg<<<grid_for(n), kBlock, 0, c->stream>>>(z, w, n, r, scalar_at(), ema);
  CHECK_LAUNCH(k_avg, c->stream);
}

static thread_local int t_loss_deferred;
static thread_local double *t_loss_slot; /* where the last deferred loss was left (device) */
void cuda_loss_defer(int on) { t_loss_deferred = on; }
double cuda_loss_last(void) {
  if (!t_loss_slot) return NAN;
  double h;
  cuda_sync();
  PdlCudaCtx *c = pdl_cuda_ctx();
  CHECK_CUDA(cudaMemcpyAsync(&h, t_loss_slot, sizeof h, cudaMemcpyDeviceToHost, c->stream));
  CHECK_CUDA(cudaStreamSynchronize(c->stream));
  pdl_cuda_counts.syncs++;
  pdl_cuda_counts.d2h_bytes += sizeof h;
  return h;
}

double cuda_softmax_xent_forward(float *probs, const float *logits, const int *labels, int B, int N) {
  /* logits, probs [B][N]; labels [B] (device) in [0, N). Waits for the stream (returns the loss). */
  CUDA_SHAPE_ASSERT(B > 0 && N > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  /* device scratch: {double total; int bad; pad} then rowloss [B] doubles */
  struct Result { double total; int bad; int pad; };
  char *base = (char *)pdl_cuda_ctx_scratch(c, sizeof(Result) + (size_t)B * sizeof(double));
  Result *res = (Result *)base;
  double *rowloss = (double *)(base + sizeof(Result));
  CHECK_CUDA(cudaMemsetAsync(res, 0, sizeof(Result), c->stream));
  COUNT_OP();
  size_t blocks = ((size_t)B + kWarpsPerBlock - 1) / kWarpsPerBlock;
  k_softmax_fwd<<<(unsigned)(blocks < kMaxGrid ? blocks : kMaxGrid), kBlock, 0, c->stream>>>(
      probs, rowloss, &res->bad, logits, labels, B, N);
  CHECK_LAUNCH(k_softmax_fwd, c->stream);
  k_sum_doubles<<<1, kBlock, 0, c->stream>>>(&res->total, rowloss, B);
  CHECK_LAUNCH(k_sum_doubles, c->stream);
  t_loss_slot = &res->total;
  if (t_loss_deferred) return NAN;
  Result h;
  CHECK_CUDA(cudaMemcpyAsync(&h, res, sizeof h, cudaMemcpyDeviceToHost, c->stream));
  CHECK_CUDA(cudaStreamSynchronize(c->stream));
  pdl_cuda_counts.syncs++;
  pdl_cuda_counts.d2h_bytes += sizeof h;
  if (h.bad) pdl_cuda_fail("cuda_softmax_xent_forward", "bad labels", "a label is outside [0, N)", __FILE__, __LINE__);
  return h.total;
}

void cuda_softmax_xent_acc(float *probs, const float *logits, const int *labels, int B, int N, double *acc) {
  /* cuda_softmax_xent_forward's kernels, the loss added to acc (device) with the hits: no wait */
  CUDA_SHAPE_ASSERT(B > 0 && N > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  char *base = (char *)pdl_cuda_ctx_scratch(c, 2 * sizeof(double) + (size_t)B * sizeof(double));
  int *bad = (int *)base;   /* k_softmax_fwd's flag: unread here (k_xent_acc counts the bad labels) */
  double *rowloss = (double *)(base + 2 * sizeof(double));
  size_t blocks = ((size_t)B + kWarpsPerBlock - 1) / kWarpsPerBlock;
  k_softmax_fwd<<<(unsigned)(blocks < kMaxGrid ? blocks : kMaxGrid), kBlock, 0, c->stream>>>(
      probs, rowloss, bad, logits, labels, B, N);
  CHECK_LAUNCH(k_softmax_fwd, c->stream);
  k_xent_acc<<<1, kBlock, 0, c->stream>>>(acc, rowloss, probs, labels, B, N);
  CHECK_LAUNCH(k_xent_acc, c->stream);
}

void cuda_gather_words(void *dst, const void *src, const int *idx, int B, size_t words) {
  CUDA_SHAPE_ASSERT(B >= 0);
  if (B == 0 || words == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t n = (size_t)B * words;
  k_gather<<<grid_for(n), kBlock, 0, c->stream>>>((unsigned *)dst, (const unsigned *)src, idx, B, words);
  CHECK_LAUNCH(k_gather, c->stream);
}

void cuda_softmax_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int N, float scale) {
  /* probs, dlogits [B][N]; labels [B] (device), checked by the forward pass */
  CUDA_SHAPE_ASSERT(B > 0 && N > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  size_t n = (size_t)B * N;
  k_softmax_bwd<<<grid_for(n), kBlock, 0, c->stream>>>(dlogits, probs, labels, B, N, scale);
  CHECK_LAUNCH(k_softmax_bwd, c->stream);
}

/* ---- dense linear algebra for K-FAC on the device (kernels_t's gemm, im2col, copy2d, axpby; issue
 * 35 G: kfac-dist --device) ---------------------------------------------------------------------- */
__global__ void k_copy2d(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols) {
  const size_t n = (size_t)rows * cols;
  GRID_STRIDE(i, n) {
    const size_t r = i / cols, c = i % cols;
    dst[r * ldd + c] = src[r * lds + c];
  }
}
__global__ void k_axpby(float *y, size_t incy, const float *x, size_t incx, size_t n, float a, float b) {
  GRID_STRIDE(i, n) {
    const float u = a == 0.0f ? 0.0f : __fmul_rn(a, y[i * incy]);
    const float v = b == 0.0f ? 0.0f : __fmul_rn(b, x[i * incx]);
    y[i * incy] = __fadd_rn(u, v);
  }
}

void cuda_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc) {
  CUDA_SHAPE_ASSERT(M >= 0 && N >= 0 && K >= 0);
  if (M == 0 || N == 0) return;
  gemm_rm(pdl_cuda_ctx()->blas, ta != 0, tb != 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void cuda_im2col_batch(float *col, const float *in, int B, int C, int H, int W, int k, int pad) {
  CUDA_SHAPE_ASSERT(B >= 1 && C >= 1 && k >= 1);
  PdlCudaCtx *c = pdl_cuda_ctx();
  const int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  const size_t n = (size_t)C * k * k * B * Ho * Wo;
  k_im2col<<<grid_for(n), kBlock, 0, c->stream>>>(col, in, 0, B, C, H, W, k, pad, Ho, Wo, 1);
  CHECK_LAUNCH(k_im2col, c->stream);
}
void cuda_copy2d(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols) {
  CUDA_SHAPE_ASSERT(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_copy2d<<<grid_for((size_t)rows * cols), kBlock, 0, c->stream>>>(dst, ldd, src, lds, rows, cols);
  CHECK_LAUNCH(k_copy2d, c->stream);
}
void cuda_axpby(float *y, size_t incy, const float *x, size_t incx, size_t n, float a, float b) {
  if (n == 0) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_axpby<<<grid_for(n), kBlock, 0, c->stream>>>(y, incy, x, incx, n, a, b);
  CHECK_LAUNCH(k_axpby, c->stream);
}

} /* extern "C" */

/* ---- the layers of the papers' full-size nets (contract/layers.h, PDL_DECLARE_FULLNET_LAYERS; issue 51):
 * max-pool with its own window and stride, batch normalization, global average pooling. Plain kernels,
 * not cuDNN's batch norm: the contract's running variance at N = 1 (Chainer's max(N - 1, 1)) and its
 * input gradient NULL are not cuDNN's, and these follow the CPU path's arithmetic (statistics and the
 * backward's sums in double, reduced in a fixed order in one block per channel; the per-value float
 * operations in the CPU's order, each rounded on its own), so the two agree to the double sums'
 * rounding and runs repeat bit for bit. The strided conv is cuda_conv_s_forward/backward, above. */
namespace {

constexpr int kBnBlock = 256;   /* threads of a channel's block (a power of two: the tree below) */

/* the sum of v over the block's threads, in a fixed tree order, returned to every thread */
__device__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = (int)blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double t = sh[0];
  __syncthreads();
  return t;
}

/* index of the j-th value (j < B*HW) of channel c */
__device__ inline size_t bn_at(size_t j, int c, int C, int HW) { return ((j / HW) * C + c) * HW + j % HW; }

/* training forward, one block per channel: batch statistics, the saved mean and 1/sqrt(var + eps),
 * the running statistics, and out */
__global__ void k_bn_train_fwd(float *out, const float *in, const float *gamma, const float *beta, float *rmean,
                               float *rvar, float *save, int B, int C, int HW, float momentum, float eps) {
  __shared__ double sh[kBnBlock];
  const int c = blockIdx.x;
  const size_t N = (size_t)B * HW;
  double s = 0, q = 0;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) s += in[bn_at(j, c, C, HW)];
  const double mean = block_sum(s, sh) / (double)N;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) { const double d = in[bn_at(j, c, C, HW)] - mean; q += d * d; }
  const double var = block_sum(q, sh) / (double)N;
  const float m = (float)mean, inv = (float)(1.0 / sqrt(var + (double)eps));
  if (threadIdx.x == 0) {
    save[c] = m;
    save[C + c] = inv;
    rmean[c] = (float)((1.0 - (double)momentum) * rmean[c] + (double)momentum * mean);
    rvar[c] = (float)((1.0 - (double)momentum) * rvar[c] +
                      (double)momentum * var * (double)N / (N > 1 ? (double)(N - 1) : 1.0));
  }
  const float a = __fmul_rn(gamma[c], inv), b = beta[c];
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
    const size_t i = bn_at(j, c, C, HW);
    out[i] = __fadd_rn(__fmul_rn(__fsub_rn(in[i], m), a), b);
  }
}

/* evaluation forward: the running statistics, one thread per value */
__global__ void k_bn_eval_fwd(float *out, const float *in, const float *gamma, const float *beta, const float *rmean,
                              const float *rvar, size_t n, int C, int HW, float eps) {
  GRID_STRIDE(i, n) {
    const int c = (int)((i / HW) % C);
    const float inv = (float)(1.0 / sqrt((double)rvar[c] + (double)eps)), a = __fmul_rn(gamma[c], inv);
    out[i] = __fadd_rn(__fmul_rn(__fsub_rn(in[i], rmean[c]), a), beta[c]);
  }
}

/* backward, one block per channel: dbeta += sum dout, dgamma += sum dout xhat, din (when not NULL) =
 * gamma inv (dout - sum dout / N - xhat sum dout xhat / N) */
__global__ void k_bn_bwd(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                         const float *gamma, const float *save, int B, int C, int HW) {
  __shared__ double sh[kBnBlock];
  const int c = blockIdx.x;
  const size_t N = (size_t)B * HW;
  const float mean = save[c], inv = save[C + c];
  double sd = 0, sdx = 0;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
    const size_t i = bn_at(j, c, C, HW);
    sd += dout[i];
    sdx += (double)dout[i] * (double)__fmul_rn(__fsub_rn(in[i], mean), inv);
  }
  sd = block_sum(sd, sh);
  sdx = block_sum(sdx, sh);
  if (threadIdx.x == 0) {
    dbeta[c] = __fadd_rn(dbeta[c], (float)sd);
    dgamma[c] = __fadd_rn(dgamma[c], (float)sdx);
  }
  if (!din) return;
  const float a = __fmul_rn(gamma[c], inv), m1 = (float)(sd / (double)N), m2 = (float)(sdx / (double)N);
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
    const size_t i = bn_at(j, c, C, HW);
    const float t = __fmul_rn(__fmul_rn(__fsub_rn(in[i], mean), inv), m2);
    din[i] = __fmul_rn(a, __fsub_rn(__fsub_rn(dout[i], m1), t));
  }
}

/* global average pooling: one thread per (image, channel), the sum in double */
__global__ void k_gap_fwd(float *out, const float *in, size_t BC, int HW) {
  GRID_STRIDE(p, BC) {
    double s = 0;
    for (int i = 0; i < HW; i++) s += in[p * HW + i];
    out[p] = (float)(s / HW);
  }
}
__global__ void k_gap_bwd(float *din, const float *dout, size_t n, int HW) {
  GRID_STRIDE(i, n) din[i] = (float)((double)dout[i / HW] / HW);
}

/* first maximum (row-major) of the k x k, stride-s window (oh, ow), clipped at the border */
__device__ size_t window_argmax_ks(const float *plane, int H, int W, int k, int s, int oh, int ow) {
  const int h0 = oh * s, w0 = ow * s, h1 = h0 + k < H ? h0 + k : H, w1 = w0 + k < W ? w0 + k : W;
  size_t best = (size_t)h0 * W + w0;
  for (int h = h0; h < h1; h++)
    for (int x = w0; x < w1; x++)
      if (plane[(size_t)h * W + x] > plane[best]) best = (size_t)h * W + x;
  return best;
}
__global__ void k_pool_fwd(float *out, const float *in, size_t BC, int H, int W, int k, int s, int Ho, int Wo) {
  GRID_STRIDE(i, BC * Ho * Wo) {
    const int ow = (int)(i % Wo), oh = (int)((i / Wo) % Ho);
    const float *plane = in + i / ((size_t)Ho * Wo) * H * W;
    out[i] = plane[window_argmax_ks(plane, H, W, k, s, oh, ow)];
  }
}
/* one thread per input value: the sum, over the windows (in row-major window order, as the CPU's
 * scatter adds them) whose first maximum it is, of their dout; a gather, no atomics */
__global__ void k_pool_bwd(float *din, const float *dout, const float *in, size_t BC, int H, int W, int k, int s,
                           int Ho, int Wo) {
  GRID_STRIDE(i, BC * H * W) {
    const int x = (int)(i % W), h = (int)((i / W) % H);
    const size_t pl = i / ((size_t)H * W);
    const float *plane = in + pl * H * W;
    const int oh0 = h - k + 1 > 0 ? (h - k + s) / s : 0, ow0 = x - k + 1 > 0 ? (x - k + s) / s : 0;
    const int oh1 = h / s < Ho - 1 ? h / s : Ho - 1, ow1 = x / s < Wo - 1 ? x / s : Wo - 1;
    float g = 0.0f;
    for (int oh = oh0; oh <= oh1; oh++)
      for (int ow = ow0; ow <= ow1; ow++)
        if (window_argmax_ks(plane, H, W, k, s, oh, ow) == (size_t)h * W + x)
          g = __fadd_rn(g, dout[(pl * Ho + oh) * Wo + ow]);
    din[i] = g;
  }
}

} /* namespace */

extern "C" {

void cuda_pool_forward(float *out, const float *in, int B, int C, int H, int W, int k, int s, int ceil_mode) {
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && k > 0 && s > 0 && H >= k && W >= k);
  const int Ho = (H - k + (ceil_mode ? s - 1 : 0)) / s + 1, Wo = (W - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t BC = (size_t)B * C;
  k_pool_fwd<<<grid_for(BC * Ho * Wo), kBlock, 0, c->stream>>>(out, in, BC, H, W, k, s, Ho, Wo);
  CHECK_LAUNCH(k_pool_fwd, c->stream);
}

void cuda_pool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H, int W,
                        int k, int s, int ceil_mode) {
  (void)out;
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && k > 0 && s > 0 && H >= k && W >= k);
  if (!din) return;
  const int Ho = (H - k + (ceil_mode ? s - 1 : 0)) / s + 1, Wo = (W - k + (ceil_mode ? s - 1 : 0)) / s + 1;
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t BC = (size_t)B * C;
  k_pool_bwd<<<grid_for(BC * H * W), kBlock, 0, c->stream>>>(din, dout, in, BC, H, W, k, s, Ho, Wo);
  CHECK_LAUNCH(k_pool_bwd, c->stream);
}

void cuda_bn_forward(float *out, const float *in, const float *gamma, const float *beta, float *rmean, float *rvar,
                     float *save, int B, int C, int HW, int train, float momentum, float eps) {
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && HW > 0 && eps > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  if (train) {
    k_bn_train_fwd<<<(unsigned)C, kBnBlock, 0, c->stream>>>(out, in, gamma, beta, rmean, rvar, save, B, C, HW,
                                                             momentum, eps);
    CHECK_LAUNCH(k_bn_train_fwd, c->stream);
  } else {
    const size_t n = (size_t)B * C * HW;
    k_bn_eval_fwd<<<grid_for(n), kBlock, 0, c->stream>>>(out, in, gamma, beta, rmean, rvar, n, C, HW, eps);
    CHECK_LAUNCH(k_bn_eval_fwd, c->stream);
  }
}

void cuda_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in, const float *gamma,
                      const float *save, int B, int C, int HW) {
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  k_bn_bwd<<<(unsigned)C, kBnBlock, 0, c->stream>>>(din, dgamma, dbeta, dout, in, gamma, save, B, C, HW);
  CHECK_LAUNCH(k_bn_bwd, c->stream);
}

void cuda_gap_forward(float *out, const float *in, int B, int C, int HW) {
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t BC = (size_t)B * C;
  k_gap_fwd<<<grid_for(BC), kBlock, 0, c->stream>>>(out, in, BC, HW);
  CHECK_LAUNCH(k_gap_fwd, c->stream);
}

void cuda_gap_backward(float *din, const float *dout, int B, int C, int HW) {
  CUDA_SHAPE_ASSERT(B > 0 && C > 0 && HW > 0);
  if (!din) return;
  PdlCudaCtx *c = pdl_cuda_ctx();
  const size_t n = (size_t)B * C * HW;
  k_gap_bwd<<<grid_for(n), kBlock, 0, c->stream>>>(din, dout, n, HW);
  CHECK_LAUNCH(k_gap_bwd, c->stream);
}

} /* extern "C" */
