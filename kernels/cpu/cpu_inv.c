/* cpu_inv.c — cpu_spd_inverse (contract/inv.h): float SPD inversion as LAPACK's potrf + potri do it
 * (Cholesky A = U^T U, V = inv(U), inv(A) = V V^T), but with each of the three steps a recursion
 * on 2x2 blocks whose work is large single-threaded OpenBLAS sgemm/ssyrk/strmm calls split across
 * our OpenMP team (kernels/cpu/cpu.h). Row-major upper U is column-major lower L = U^T in the same
 * memory, so the base cases (order <= INV_NB) are LAPACK's spotrf / strtri / slauum with 'L'.
 *   potrf:  U11 = chol(A11); U12 = U11^-T A12 (trsm); S = A22 - U12^T U12 (syrk); U22 = chol(S)
 *   trtri:  V22 = inv(U22); U12 = -U12 V22 (trmm); U12 = U11^-1 U12 (trsm); V11 = inv(U11)
 *   lauum:  X11 = lauum(V11) + V12 V12^T (syrk); X12 = V12 V22^T (trmm); X22 = lauum(V22)
 * then the upper triangle is mirrored. Each step is n^3/3 flops, n^3 in all, as potrf + potri.
 * Why not fewer, larger products: the 2x2-block inverse through explicit Schur complements
 * (X11 = inv(A11), S = A22 - A21 X11 A12, ...) is also n^3 of sgemm and was as fast, but forming S
 * from an explicit inverse is not backward stable: its error grows with cond(A11) eps, so in
 * float S stopped being positive definite at cond(A) = 1e6 (n = 257 and 1153: info 248 and 963
 * where the double oracle succeeds) and the forward error at 1e4 was 5-10x LAPACK's. Through the
 * Cholesky factor, the errors are LAPACK's (tests/test_inv.c prints them).
 * Why not plain LAPACK: OpenBLAS's one-thread strsm ran at 60-90 GFLOP/s against sgemm's 190 on
 * the Xeon (AVX-512), and its spotrf + spotri in float only 1.8-2.0x faster than dpotrf + dpotri
 * in double; here the triangular solves are recursive too (trsm_rec), so the flops are sgemm's.
 * Storage: all in inv (a's copy); no scratch. Only the upper triangle of a is read after the
 * NaN/Inf scan. Threads: static partitions (columns for trsm, rows for trmm, the triangle's
 * recursive blocks for syrk), so a given thread count gives bit-identical results; the base cases
 * run on the calling thread. */
#include <cblas.h>
#include <lapacke.h>
#include <omp.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"
#include "util/util.h"

/* Base-case order of the three recursions. sgemm needs operands of a few hundred to run near peak
 * (register blocks 16-32 wide, cache blocks a few hundred), while LAPACK's small-order routines
 * spend much of their time outside GEMM; the base cases do a fraction ~ INV_NB / n of the flops.
 * A round value chosen for that balance, not a tuning to one CPU: on the Xeon (AVX-512), one
 * thread, every INV_NB in {64, 128, 256} x INV_LEAF in {32, 64, 128} timed within the run-to-run
 * noise (~10%) of 128 x 64 at n = 1024 and 2048. */
#define INV_NB 128
/* Leaf order of the triangular products (syrk_part) and solves (trsm_rec): below it one BLAS call
 * on the whole triangle. */
#define INV_LEAF 64
/* Below this many multiply-adds an operation runs on the calling thread. Each level of the
 * recursions opens about six teams, each costing microseconds to wake and join; with 2^18 here
 * two threads were slower than one at n = 257 (0.46 vs 0.39 ms), with 2^22 (the products of a
 * level of order ~300) they are as fast, and the large products are split as before. */
#define INV_PAR_MIN_MACS (1L << 22)
/* Tile of the final mirror. With a leading dimension that is a multiple of 1024 floats (n = 1024,
 * 2048, ...) a tile's rows all map to one L1 set, so a tile must not have more rows (read side) or
 * columns (write side) than the cache has ways, 8 to 12 on current x86: 8 x 8. */
#define INV_TILE 8

size_t cpu_spd_inverse_scratch_floats(int n) {
  (void)n; /* everything happens in inv, see above */
  return 0;
}

static int team(int T, double macs) { return macs < (double)INV_PAR_MIN_MACS ? 1 : T; }

/* Halve an order m > INV_LEAF, the first part a multiple of 16 so the blocks right of it start on
 * a 64-byte boundary whenever the leading dimension is a multiple of 16. */
static int half16(int m) { return (m / 2) & ~15; }

/* Copy a into inv (skipped when in place) and report whether every entry is finite: x - x is 0
 * for finite x and NaN for Inf/NaN, so the sum is 0 exactly when all are finite (vectorised, no
 * branch per element). */
static int load_finite(float *inv, const float *a, size_t nn, int T) {
  int bad = 0;
  const int nt = nn < CPU_PAR_MIN_ELEMS ? 1 : T;
#pragma omp parallel num_threads(nt) reduction(| : bad)
  {
    const size_t t = (size_t)omp_get_thread_num(), k = (size_t)omp_get_num_threads();
    const size_t lo = nn * t / k, hi = nn * (t + 1) / k;
    float acc = 0.0f;
    if (inv != a) {
#pragma omp simd reduction(+ : acc)
      for (size_t i = lo; i < hi; i++) { inv[i] = a[i]; acc += a[i] - a[i]; }
    } else {
#pragma omp simd reduction(+ : acc)
      for (size_t i = lo; i < hi; i++) acc += a[i] - a[i];
    }
    bad = acc != 0.0f;
  }
  return bad;
}

/* x[j][i] = x[i][j] for j > i: the strict upper triangle onto the lower one, tile by tile. */
static void mirror_upper(float *x, int n, int T) {
  const int tiles = (n + INV_TILE - 1) / INV_TILE;
  const int nt = (size_t)n * n < CPU_PAR_MIN_ELEMS ? 1 : T;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int bi = 0; bi < tiles; bi++) {
    const int i0 = bi * INV_TILE, i1 = i0 + INV_TILE < n ? i0 + INV_TILE : n;
    for (int j0 = i0; j0 < n; j0 += INV_TILE) {
      const int j1 = j0 + INV_TILE < n ? j0 + INV_TILE : n;
      for (int i = i0; i < i1; i++)
        for (int j = j0 == i0 ? i + 1 : j0; j < j1; j++) x[(size_t)j * n + i] = x[(size_t)i * n + j];
    }
  }
}

/* ---- threaded BLAS-3 pieces (row-major, leading dimension ld throughout) ------------------------ */

/* B = op(U)^-1 B for upper triangular U (m x m) and B (m x N): op(U) = U^T with trans. Recursive,
 * so that all but the leaves' flops are one sgemm per level (OpenBLAS's one-thread strsm is slow). */
static void trsm_rec(int trans, int m, int N, const float *U, float *B, size_t ld) {
  if (m <= INV_LEAF) {
    cblas_strsm(CblasRowMajor, CblasLeft, CblasUpper, trans ? CblasTrans : CblasNoTrans, CblasNonUnit, m, N, 1.0f, U,
                (int)ld, B, (int)ld);
    return;
  }
  const int h = half16(m);
  const float *U12 = U + h, *U22 = U + (size_t)h * ld + h;
  float *B2 = B + (size_t)h * ld;
  if (trans) { /* [U11^T 0; U12^T U22^T]: forward substitution by blocks */
    trsm_rec(1, h, N, U, B, ld);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m - h, N, h, -1.0f, U12, (int)ld, B, (int)ld, 1.0f, B2,
                (int)ld);
    trsm_rec(1, m - h, N, U22, B2, ld);
  } else { /* [U11 U12; 0 U22]: backward */
    trsm_rec(0, m - h, N, U22, B2, ld);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h, N, m - h, -1.0f, U12, (int)ld, B2, (int)ld, 1.0f, B,
                (int)ld);
    trsm_rec(0, h, N, U, B, ld);
  }
}

/* trsm_rec with the columns of B split across the team (the columns are independent systems). */
static void trsm_cols(int T, int trans, int m, int N, const float *U, float *B, size_t ld) {
  const int nt = team(T, 0.5 * m * (double)m * N);
#pragma omp parallel num_threads(nt)
  {
    int c0, c1;
    cpu_split(N, omp_get_num_threads(), omp_get_thread_num(), &c0, &c1);
    if (c1 > c0) trsm_rec(trans, m, c1 - c0, U, B + c0, ld);
  }
}

/* B = alpha B op(V) for upper triangular V (N x N) and B (M x N), rows of B split across the team
 * (OpenBLAS's one-thread strmm runs near sgemm speed). */
static void trmm_rows(int T, int trans, int M, int N, float alpha, const float *V, float *B, size_t ld) {
  const int nt = team(T, 0.5 * N * (double)N * M);
#pragma omp parallel num_threads(nt)
  {
    int r0, r1;
    cpu_split(M, omp_get_num_threads(), omp_get_thread_num(), &r0, &r1);
    if (r1 > r0)
      cblas_strmm(CblasRowMajor, CblasRight, CblasUpper, trans ? CblasTrans : CblasNoTrans, CblasNonUnit, r1 - r0, N,
                  alpha, V, (int)ld, B + (size_t)r0 * ld, (int)ld);
  }
}

/* One team member's share of C += alpha P P^T on the upper triangle of the m x m block of C at
 * (i0, i0), P = op(A) (N x K overall; op(A) = A^T, A stored K x N, with trans): recursive halving;
 * each level's off-diagonal rectangle is one sgemm with its rows split across the team, the
 * diagonal leaves (order <= INV_LEAF) are one ssyrk each, dealt cyclically (*leaf counts them). */
static void syrk_part(int t, int nt, int trans, int i0, int m, int K, float alpha, const float *A, float *C,
                      size_t ld, int *leaf) {
  const float *Pi = trans ? A + i0 : A + (size_t)i0 * ld; /* rows i0.. of P */
  if (m <= INV_LEAF) {
    if ((*leaf)++ % nt == t)
      cblas_ssyrk(CblasRowMajor, CblasUpper, trans ? CblasTrans : CblasNoTrans, m, K, alpha, Pi, (int)ld, 1.0f,
                  C + (size_t)i0 * ld + i0, (int)ld);
    return;
  }
  const int h = half16(m);
  syrk_part(t, nt, trans, i0, h, K, alpha, A, C, ld, leaf);
  int r0, r1;
  cpu_split(h, nt, t, &r0, &r1);
  if (r1 > r0) { /* C[i0+r0 .. i0+r1][i0+h .. i0+m] += alpha P[rows] P[i0+h ..]^T */
    const float *Pr = trans ? Pi + r0 : Pi + (size_t)r0 * ld, *Pc = trans ? A + i0 + h : A + (size_t)(i0 + h) * ld;
    cblas_sgemm(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, trans ? CblasNoTrans : CblasTrans, r1 - r0, m - h, K,
                alpha, Pr, (int)ld, Pc, (int)ld, 1.0f, C + (size_t)(i0 + r0) * ld + i0 + h, (int)ld);
  }
  syrk_part(t, nt, trans, i0 + h, m - h, K, alpha, A, C, ld, leaf);
}

/* Upper triangle of C (N x N) += alpha op(A) op(A)^T, op(A) N x K. */
static void syrk_upper(int T, int trans, int N, int K, float alpha, const float *A, float *C, size_t ld) {
  const int nt = team(T, 0.5 * N * (double)N * K);
#pragma omp parallel num_threads(nt)
  {
    int leaf = 0;
    syrk_part(omp_get_thread_num(), omp_get_num_threads(), trans, 0, N, K, alpha, A, C, ld, &leaf);
  }
}

/* ---- the three recursions, in place on the m x m block at x ------------------------------------ */

/* Upper triangle of x: A on entry, U (A = U^T U) on exit; returns potrf's info for the block. */
static int potrf_rec(float *x, size_t ld, int m, int T) {
  if (m <= INV_NB) {
    /* The _work calls skip LAPACKE's NaN scan (load_finite did it) and never allocate. */
    const lapack_int info = LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', m, x, (lapack_int)ld);
    SHAPE_ASSERT(info >= 0);
    return (int)info;
  }
  const int n1 = half16(m), n2 = m - n1;
  float *x12 = x + n1, *x22 = x + (size_t)n1 * ld + n1;
  int info = potrf_rec(x, ld, n1, T);
  if (info) return info;
  trsm_cols(T, 1, n1, n2, x, x12, ld);            /* U12 = U11^-T A12 */
  syrk_upper(T, 1, n2, n1, -1.0f, x12, x22, ld);  /* S = A22 - U12^T U12 */
  info = potrf_rec(x22, ld, n2, T);
  return info ? n1 + info : 0;
}

/* Upper triangle of x: U on entry, V = inv(U) on exit (U is nonsingular after potrf). */
static void trtri_rec(float *x, size_t ld, int m, int T) {
  if (m <= INV_NB) {
    SHAPE_ASSERT(LAPACKE_strtri_work(LAPACK_COL_MAJOR, 'L', 'N', m, x, (lapack_int)ld) == 0);
    return;
  }
  const int n1 = half16(m), n2 = m - n1;
  float *x12 = x + n1, *x22 = x + (size_t)n1 * ld + n1;
  trtri_rec(x22, ld, n2, T);
  trmm_rows(T, 0, n1, n2, -1.0f, x22, x12, ld); /* -U12 V22 */
  trsm_cols(T, 0, n1, n2, x, x12, ld);          /* V12 = -U11^-1 U12 V22 */
  trtri_rec(x, ld, n1, T);
}

/* Upper triangle of x: V on entry, V V^T on exit. */
static void lauum_rec(float *x, size_t ld, int m, int T) {
  if (m <= INV_NB) {
    SHAPE_ASSERT(LAPACKE_slauum_work(LAPACK_COL_MAJOR, 'L', m, x, (lapack_int)ld) == 0);
    return;
  }
  const int n1 = half16(m), n2 = m - n1;
  float *x12 = x + n1, *x22 = x + (size_t)n1 * ld + n1;
  lauum_rec(x, ld, n1, T);
  syrk_upper(T, 0, n1, n2, 1.0f, x12, x, ld); /* X11 = V11 V11^T + V12 V12^T */
  trmm_rows(T, 1, n1, n2, 1.0f, x22, x12, ld); /* X12 = V12 V22^T */
  lauum_rec(x22, ld, n2, T);
}

int cpu_spd_inverse(float *inv, const float *a, int n, float *scratch) {
  (void)scratch;
  SHAPE_ASSERT(n >= 1 && inv && a);
  cpu_blas_init();
  const int T = cpu_get_threads();
  if (load_finite(inv, a, (size_t)n * n, T)) return -1;
  const int info = potrf_rec(inv, (size_t)n, n, T);
  if (info) return info;
  trtri_rec(inv, (size_t)n, n, T);
  lauum_rec(inv, (size_t)n, n, T);
  mirror_upper(inv, n, T);
  return 0;
}
