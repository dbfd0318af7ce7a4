/* cpu_table.c — kernels_cpu, the fast CPU backend's table (contract/kernels.h): the cpu_* layers
 * and updates of contract/layers.h, the fused conv + leaky ReLU (+ 2x2 max-pool, where the conv
 * takes Winograd), cpu_conv_scratch_floats, the fc backward with the update fused, the OpenMP
 * thread count, and host memory. */
#include <cblas.h>
#include <string.h>
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_layers.h"
#include "util/util.h"

/* kernels_t's dense linear algebra (contract/kernels.h) on host memory, one thread: OpenBLAS is
 * single-threaded in pdl, and these serve kfac/kfac_dev.c's device path run on the CPU (its test). */
static void cpu_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return;
  cpu_blas_init();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}
static void cpu_im2col_batch(float *col, const float *in, int B, int C, int H, int W, int k, int pad) {
  const int T = (H + 2 * pad - k + 1) * (W + 2 * pad - k + 1);
  for (int b = 0; b < B; b++)
    cpu_im2col(col + (size_t)b * T, (size_t)B * T, in + (size_t)b * C * H * W, C, H, W, k, pad, 0, C, 0, T);
}
static void cpu_copy2d(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols) {
  for (int r = 0; r < rows; r++) memmove(dst + (size_t)r * ldd, src + (size_t)r * lds, (size_t)cols * sizeof(float));
}
static void cpu_axpby(float *y, size_t incy, const float *x, size_t incx, size_t n, float a, float b) {
  for (size_t i = 0; i < n; i++) {
    const float u = a == 0.0f ? 0.0f : a * y[i * incy], v = b == 0.0f ? 0.0f : b * x[i * incx];
    y[i * incy] = u + v;
  }
}
static _Thread_local float *t_inv_scratch;
static _Thread_local int t_inv_n;
static int cpu_spd_inverse_ws(float *inv, const float *a, int n) {
  if (n > t_inv_n) {
    xfree(t_inv_scratch);
    t_inv_scratch = xmalloc((cpu_spd_inverse_scratch_floats(n) + 16) * sizeof(float));
    t_inv_n = n;
  }
  return cpu_spd_inverse(inv, a, n, t_inv_scratch);
}

const kernels_t kernels_cpu = {
  .name = "cpu",
  KERNELS_LAYERS(cpu_),
  .conv_act_forward = cpu_conv_act_forward, .conv_act_backward = cpu_conv_act_backward,
  .conv_act_pool_fusable = cpu_conv_act_pool_fusable,
  .conv_act_pool_forward = cpu_conv_act_pool_forward, .conv_act_pool_backward = cpu_conv_act_pool_backward,
  .conv_keep_floats = cpu_conv_keep_floats,
  .fc_backward_sgd = cpu_fc_backward_sgd,
  .conv_scratch_floats = cpu_conv_scratch_floats,
  .set_threads = cpu_set_threads,
  .gemm = cpu_gemm, .im2col = cpu_im2col_batch, .copy2d = cpu_copy2d, .axpby = cpu_axpby,
  .spd_inverse = cpu_spd_inverse_ws,
  KERNELS_HOST_MEMORY,
  KERNELS_FULLNET_LAYERS(cpu_), .conv_s_scratch_floats = cpu_conv_s_scratch_floats,
};
