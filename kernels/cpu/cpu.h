/* cpu.h — internal helpers shared by the kernels/cpu/ files (not part of the public layer API).
 * Threading model: every cpu_* kernel opens its own OpenMP team with num_threads(cpu_get_threads())
 * so the count is a property of the calling thread (several worker pthreads may each train a
 * replica with their own count); OpenBLAS is made single-threaded once and all parallelism is ours.
 * Work is always split by the actual team size with static, index-based partitions, so the same
 * inputs and the same thread count give bit-identical results. */
#ifndef PDL_KERNELS_CPU_H
#define PDL_KERNELS_CPU_H
#include <stddef.h>

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

#endif
