/* inv.h — the inversion contract: inversion of symmetric positive-definite (SPD) matrices, the
 * K-FAC factor inverses, declared once through PDL_DECLARE_INV for each implementation (each
 * instantiates it in its own header, beside what only it has):
 *   ref_*  reference/inv_ref.c (reference/ref.h)  LAPACKE in double (dpotrf + dpotri): the oracle
 *   cpu_*  kernels/cpu/cpu_inv.c (kernels/cpu/cpu_layers.h)  float, potrf + trtri + lauum as
 *                                    2x2-block recursions on single-threaded OpenBLAS
 *                                    sgemm/ssyrk/strmm, threaded by our OpenMP (kernels/cpu/cpu.h)
 *   cuda_* kernels/cuda/cuda_inv.cu (cuda_inv.h)  cuSOLVER potrf + potri (device pointers)
 * Below both src/ and kernels/ (ci/layering.py): it includes nothing of the project.
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
#ifndef PDL_CONTRACT_INV_H
#define PDL_CONTRACT_INV_H

#define PDL_DECLARE_INV(P) int P##spd_inverse(float *inv, const float *a, int n, float *scratch);

#endif
