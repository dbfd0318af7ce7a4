/* inv.h — inversion of symmetric positive-definite (SPD) matrices, the K-FAC factor inverses,
 * declared once for each implementation:
 *   ref_*  in reference/inv_ref.c    LAPACKE in double (dpotrf + dpotri): the oracle
 *   cpu_*  in kernels/cpu/cpu_inv.c  float, potrf + trtri + lauum as 2x2-block recursions on
 *                                    single-threaded OpenBLAS sgemm/ssyrk/strmm, threaded by our
 *                                    OpenMP (kernels/cpu/cpu.h)
 *   cuda_* in kernels/cuda/cuda_inv.cu  cuSOLVER potrf + potri (device pointers; cuda_inv.h)
 *
 * =================================================================================================
 * CONVENTION
 *   int P##spd_inverse(float *inv, const float *a, int n, float *scratch);
 *   - a:   n x n, row-major, leading dimension n, FULL storage: both triangles hold the (equal)
 *          entries of a symmetric positive-definite matrix. Read only. n >= 1.
 *   - inv: n x n, row-major, leading dimension n: receives the FULL inverse, both triangles
 *          written and exactly symmetric (inv[i][j] == inv[j][i] bit for bit).
 *   - inv == a (the same pointer) is allowed: the matrix is inverted in place. Any other overlap
 *     is not.
 *   - scratch: cpu_ takes cpu_spd_inverse_scratch_floats(n) floats (no allocation per call);
 *     ref_ and cuda_ ignore it and it may be NULL for them.
 *   - Threads: cpu_ runs on cpu_get_threads() OpenMP threads with static partitions, so the
 *     same input and thread count give bit-identical results. cuda_ runs on the calling thread's
 *     stream and WAITS for it (it returns the info).
 *
 * ERROR MODEL (the return value)
 *    0   success.
 *   -1   a NaN or an Inf somewhere in a (either triangle; an O(n^2) scan, fused with the copy
 *        into inv). It takes precedence over k: ref_ and cpu_ check first and attempt no
 *        factorization; cuda_ queues its check kernel beside potrf and reads both together.
 *    k>0 LAPACK's potrf info: the leading minor of order k is not positive definite, as met by the
 *        factorization in that implementation's precision (float for cpu_ and cuda_, double for
 *        ref_). A matrix within rounding of singular can therefore fail in one precision and not
 *        in the other; k agrees between implementations when the failing minor is clearly
 *        indefinite (the tests use such matrices). cpu_'s block Cholesky reports the same k:
 *        the order-(n1+k) leading minor of A is PD iff A11 (order n1) and the order-k leading
 *        minor of the Schur complement S = A22 - U12^T U12 are.
 *   On any non-zero return the content of inv is unspecified (in place: a is destroyed).
 *   Shape errors (n < 1, NULL pointers where data is needed) end the process (SHAPE_ASSERT).
 *
 * ACCURACY (what tests/test_inv.c and tests/test_cuda_inv.c check; eps = FLT_EPSILON = 2^-23,
 * kappa = cond_2(a), X the computed inverse, Xref the double oracle's, rounded to float)
 *   forward error  ||X - Xref||_max / ||Xref||_max           <= 2 * kappa * n * eps
 *   residual       ||a X - I||_max / (||a||_max ||X||_max)   <= 1 * n * eps
 *   The forward bound is the classic one for a backward-stable inversion; at kappa = 1e6 and
 *   n ~ 1000 it exceeds 1 and says nothing, which is why the residual, which a Cholesky-based
 *   inversion keeps at a few eps times n whatever kappa is, is checked beside it.
 *   Measured on the Xeon (cpu_, 2 threads): forward 3.6e-7 / 3.2e-5 / 6.5e-3 at n = 33 and
 *   kappa = 1e2 / 1e4 / 1e6, 1.6e-6 / 9.0e-5 / 5.6e-3 at n = 1153 (LAPACK's float spotrf + spotri:
 *   3.2e-5 and 6.5e-3 at n = 33, 9.6e-5 and 7.9e-3 at n = 1153); residual <= 7.1e-7 everywhere
 *   (the oracle's own, rounded to float: 3.6e-8). cpu_ reaches this because it follows potrf +
 *   potri's steps; the explicit Schur-complement recursion tried first failed at kappa = 1e6
 *   (see kernels/cpu/cpu_inv.c).
 * ================================================================================================= */
#ifndef PDL_KFAC_INV_H
#define PDL_KFAC_INV_H
#include <stddef.h>
#include <stdint.h>

#define PDL_DECLARE_INV(P) int P##spd_inverse(float *inv, const float *a, int n, float *scratch);

PDL_DECLARE_INV(ref_)
PDL_DECLARE_INV(cpu_)

/* Scratch (floats) cpu_spd_inverse needs for order n, for any thread count. */
size_t cpu_spd_inverse_scratch_floats(int n);

/* The eigen variant of the reference (LAPACKE_dsyevd in double): inv = V diag(1/w) V^T.
 * Same convention; returns 0, -1 (NaN/Inf), k > 0 when the k smallest eigenvalues are <= 0 (k =
 * their count; not potrf's k, which counts leading minors), or -2 when dsyevd does not converge. */
int ref_spd_inverse_eig(float *inv, const float *a, int n, float *scratch);

/* The reference's double core (dpotrf + dpotri, both triangles written, inv == a allowed; same
 * returns): the oracle itself checked against exact inverses in double, and for double callers. */
int ref_spd_inverse_f64(double *inv, const double *a, int n);

/* A test matrix: a = Q diag(lambda) Q^T in double, Q orthogonal and Haar-distributed (Householder
 * QR of a Gaussian matrix, LAPACKE_dgeqrf + dorgqr, signs fixed by R's diagonal), eigenvalues
 * log-spaced lambda_i = cond^(-i/(n-1)), i = 0..n-1 (1 down to 1/cond; n = 1 gives [1], cond
 * cannot be met), formed by dsyrk and mirrored so a is exactly symmetric. inv_exact, when
 * not NULL, receives Q diag(1/lambda) Q^T, the exact inverse up to double rounding.
 * Deterministic for (n, cond, seed). */
void ref_spd_random(double *a, double *inv_exact, int n, double cond, uint64_t seed);

#endif
