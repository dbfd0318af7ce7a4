/* ref.h — the reference backend (reference/): the layer, update and inversion contracts
 * instantiated with ref_ (contract/layers.h, contract/inv.h): naive loops, sums in double, no BLAS
 * and no OpenMP; LAPACKE in double for the inversions. The oracle the tests check every backend
 * against. kernels_ref (ref_table.c) is its table (no fused entries). */
#ifndef PDL_REFERENCE_REF_H
#define PDL_REFERENCE_REF_H
#include <stddef.h>
#include <stdint.h>
#include "contract/inv.h"
#include "contract/kernels.h"
#include "contract/layers.h"

PDL_DECLARE_LAYERS(ref_)
PDL_DECLARE_FULLNET_LAYERS(ref_)
PDL_DECLARE_UPDATES(ref_)
PDL_DECLARE_INV(ref_)
extern const kernels_t kernels_ref;

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
