/* cpu.h — internal helpers shared by the kernels/cpu/ files (not part of the public layer API).
 * Threading model: every cpu_* kernel opens its own OpenMP team with num_threads(cpu_get_threads())
 * so the count is a property of the calling thread (several worker pthreads may each train a
 * replica with their own count); OpenBLAS is made single-threaded once and all parallelism is ours.
 * Work is always split by the actual team size with static, index-based partitions, so the same
 * inputs and the same thread count give bit-identical results. */
#ifndef PDL_KERNELS_CPU_H
#define PDL_KERNELS_CPU_H
#include <stddef.h>
#include <stdint.h>

/* Make OpenBLAS single-threaded (idempotent, thread-safe; called by every BLAS-using kernel). */
void cpu_blas_init(void);

/* Element counts below which an element-wise kernel runs on the calling thread only: waking a
 * team costs a few microseconds, more than streaming this many floats. */
#define CPU_PAR_MIN_ELEMS ((size_t)1 << 15)

/* [lo, hi) of part t of n split into nt nearly equal contiguous parts. */
static inline void cpu_split(int n, int nt, int t, int *lo, int *hi) {
  *lo = (int)((long long)n * t / nt);
  *hi = (int)((long long)n * (t + 1) / nt);
}

/* Round a float count up to a whole number of 64-byte lines so per-thread slices stay aligned. */
static inline size_t cpu_round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Blocked summation of the bias gradient over a batch (cpu_conv.c, cpu_winograd.c): each image's
 * channel sums go into a block partial of CPU_DB_BLOCK images, each block is added to the
 * running total once. A single chain (the total += one image's sum, image after image) measured
 * 4-6x the error of a pairwise float32 sum at batch 128 (test_layers:
 * test_wgrad_precision_realistic). cpu_db_block_first: image i (of a range from i0) starts a
 * block; cpu_db_block_last: it ends one (or the range). */
#define CPU_DB_BLOCK 16
/* sum of x[0..n) in float: SIMD sums of CPU_SUM_CHUNK elements (a chain of CPU_SUM_CHUNK / lanes
 * per lane), the chunks' sums then added in order: one image's channel of a bias gradient. */
#define CPU_SUM_CHUNK 128
static inline float cpu_sum_blocked(const float *restrict x, int n) {
  float total = 0.0f;
  for (int p0 = 0; p0 < n; p0 += CPU_SUM_CHUNK) {
    const int p1 = p0 + CPU_SUM_CHUNK < n ? p0 + CPU_SUM_CHUNK : n;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int p = p0; p < p1; p++) sum += x[p];
    total += sum;
  }
  return total;
}
static inline int cpu_db_block_first(int i, int i0) { return (i - i0) % CPU_DB_BLOCK == 0; }
static inline int cpu_db_block_last(int i, int i0, int i1) { return (i - i0) % CPU_DB_BLOCK == CPU_DB_BLOCK - 1 || i == i1 - 1; }
/* dst[j] = (acc ? dst[j] : 0) + blk[j], j < n */
static inline void cpu_db_flush(float *restrict dst, const float *restrict blk, int n, int acc) {
  for (int j = 0; j < n; j++) dst[j] = acc ? dst[j] + blk[j] : blk[j];
}

/* db[j] += sum over rows i < B of x[i][j] (row stride ld), j in [n0, n1), summed in blocks:
 * CPU_DB_BLOCK rows into a zeroed partial, the partials into a zeroed total, the total onto db.
 * One chain over the rows (db[j] += x[i][j] row after row) measured 2.5x the error of a pairwise
 * float32 sum at batch 128 (test_layers: test_fc_precision_realistic); blocked it is at the
 * pairwise level. The fc bias gradient (cpu_fc.c) and K-FAC's fc bias row (kfac.c). */
#define CPU_SUM_COLS 64
static inline void cpu_sum_rows_blocked(float *restrict db, const float *restrict x, int B, int ld, int n0, int n1) {
  for (int j0 = n0; j0 < n1; j0 += CPU_SUM_COLS) {
    const int nj = n1 - j0 < CPU_SUM_COLS ? n1 - j0 : CPU_SUM_COLS;
    float tot[CPU_SUM_COLS] = {0}, part[CPU_SUM_COLS];
    for (int i0 = 0; i0 < B; i0 += CPU_DB_BLOCK) {
      const int i1 = i0 + CPU_DB_BLOCK < B ? i0 + CPU_DB_BLOCK : B;
      for (int j = 0; j < nj; j++) part[j] = 0.0f;
      for (int i = i0; i < i1; i++) {
        const float *d = x + (size_t)i * ld + j0;
#pragma omp simd
        for (int j = 0; j < nj; j++) part[j] += d[j];
      }
#pragma omp simd
      for (int j = 0; j < nj; j++) tot[j] += part[j];
    }
    for (int j = 0; j < nj; j++) db[j0 + j] += tot[j];
  }
}

/* im2col of one image, input channels [c0, c1) and output positions [p0, p1) only:
 * img [C][H][W] -> col [(c1-c0)*k*k][p1-p0] with row stride ld,
 * col[r - c0*k*k][p - p0] = img[ci][oh+kh-pad][ow+kw-pad] or 0, where r = (ci*k + kh)*k + kw and
 * p = oh*Wo + ow. */
void cpu_im2col(float *col, size_t ld, const float *img, int C, int H, int W, int k, int pad, int c0, int c1, int p0,
                int p1);
/* col2im of one image, channels [c0, c1) only: col [(c1-c0)*k*k][Ho*Wo] holds those channels'
 * rows; img[ci] = sum of the col entries that im2col would have copied from img[ci] (img channels
 * [c0, c1) are overwritten, the rest untouched). col is scratch: padding entries may be zeroed. */
void cpu_col2im(float *img, float *col, int C, int H, int W, int k, int pad, int c0, int c1);

/* Convolution algorithm (cpu_conv.c): CPU_CONV_AUTO takes Winograd for the 3x3 shapes where it
 * pays (cpu_conv_winograd; F(4x4,3x3) or F(2x2,3x3) by map size, cpu_winograd.c) and im2col +
 * sgemm otherwise; CPU_CONV_IM2COL never takes Winograd; CPU_CONV_WINOGRAD takes F(2x2,3x3) and
 * CPU_CONV_WINOGRAD4 F(4x4,3x3) for every k == 3 (tests, comparisons). The mode starts from the
 * environment variable PDL_CONV=auto|im2col|winograd|winograd4, read once per process (default auto). */
enum { CPU_CONV_IM2COL = 0, CPU_CONV_AUTO = 1, CPU_CONV_WINOGRAD = 2, CPU_CONV_WINOGRAD4 = 3 };
int cpu_conv_get_mode(void);
/* Process-wide; for tests and benchmarks only: never while a conv kernel runs in another thread,
 * and re-size scratch (cpu_conv_scratch_floats) after a change. */
void cpu_conv_set_mode(int mode);
/* 1 if cpu_conv_* with these shapes take the Winograd path in the current mode. */
int cpu_conv_winograd(int B, int Ci, int H, int W, int Co, int k, int pad);

/* The Winograd convolutions' small GEMMs (cpu_smm.c): libxsmm's JIT kernels where the build has
 * libxsmm (PDL_HAVE_XSMM) and PDL_SMM is not "openblas", cblas_sgemm otherwise. A plan is one
 * shape: row-major C[m][n] (beta)= op(A) B with op(A) = A [m][k] or, transa, A^T (A stored
 * [k][m]); B [k][n]; beta 0 or 1 for libxsmm (others fall back). Plans are plain values, made per
 * call on any thread. */
typedef struct {
  void *fn;
  int transa, m, n, k, lda, ldb, ldc;
  float beta;
} cpu_smm_t;
void cpu_smm_plan(cpu_smm_t *p, int transa, int m, int n, int k, int lda, int ldb, int ldc, float beta);
void cpu_smm(const cpu_smm_t *p, const float *A, const float *B, float *C);
/* 1 when plans take libxsmm (PDL_SMM=auto|libxsmm|openblas, read once; default: libxsmm if built
 * in); the name for results ("libxsmm" or "openblas"); the setter is for tests and benchmarks
 * only (process-wide, never while a kernel runs; 1 is ignored without libxsmm). */
int cpu_smm_libxsmm(void);
const char *cpu_smm_name(void);
void cpu_smm_set_libxsmm(int on);

/* Winograd F(2x2,3x3) convolution, k = 3, stride 1, zero padding pad (cpu_winograd.c): the
 * semantics of cpu_conv_forward/backward (act = 0) or of the fused cpu_conv_act_* (act = 1, leaky
 * ReLU with this slope; out is the activation output, needed by the backward only then). Scratch:
 * cpu_wino_scratch_floats floats (for up to nthreads threads and batches up to B). */
size_t cpu_wino_scratch_floats(int B, int Ci, int H, int W, int Co, int pad, int nthreads);
/* The output tile (2: F(2x2,3x3), 4: F(4x4,3x3)) a Winograd call with these shapes takes in the
 * current mode; pool as cpu_wino_pool_* (0 none, 1 floor, 2 ceil). */
int cpu_wino_tile(int B, int Ci, int H, int W, int Co, int pad, int pool);
/* Tiles per GEMM of a batch-B call that takes whole images: images per group x tiles per image. */
int cpu_wino_tiles(int B, int Ci, int H, int W, int Co, int pad);
/* keep: NULL, or the layer's cpu_wino_keep_floats floats, written by the forward and read by the
 * backward of the same step (the keep contract of cpu_conv_act_* in cpu_layers.h). */
size_t cpu_wino_keep_floats(int Ci, int H, int W, int Co, int pad);
void cpu_wino_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                      int Co, int pad, int act, float slope, float *scratch, float *keep);
void cpu_wino_backward(float *din, float *dw, float *db, const float *dout, const float *out, const float *in,
                       const float *w, int B, int Ci, int H, int W, int Co, int pad, int act, float slope,
                       float *scratch, const float *keep);
/* The same with a fused 2x2 max-pool after the activation (cpu_conv_act_pool_* in cpu_layers.h):
 * tiles are the pool windows, out/dout are pooled [B][Co][Hp][Wp], idx the windows' argmax. */
void cpu_wino_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B, int Ci,
                           int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch, float *keep);
void cpu_wino_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out, const uint8_t *idx,
                            const float *in, const float *w, int B, int Ci, int H, int W, int Co, int pad, float slope,
                            int ceil_mode, float *scratch, const float *keep);

#endif
