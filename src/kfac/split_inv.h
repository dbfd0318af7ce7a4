/* split_inv.h — one SPD inversion split over a group of MPI processes: ScaLAPACK's distributed
 * Cholesky and inverse (pspotrf + pspotri, or pdpotrf + pdpotri) on a BLACS grid built from an
 * MPI communicator, in block-cyclic layout (issue 33 item 4; docs/REPRODUCTION-kfac.md, "Split
 * inversion"). The K-FAC glue that decides which factors are split and runs the protocol on both
 * runtimes is src/algo/kfac_split.c; this file knows MPI and ScaLAPACK and nothing of the runtime.
 *
 * The inversion follows base/contract/inv.h's convention at the root process: a full, symmetric,
 * row-major n x n matrix in, the full inverse out (both triangles, exactly symmetric), the same
 * error model (-1 for a NaN/Inf, k > 0 for a non-SPD leading minor of order k, in the chosen
 * precision), and is checked against the LAPACKE double oracle with the contract's bounds by
 * tests/test_split_inv.c. Every process of the communicator calls kfac_split_inverse with the same
 * root and n, and gets the same return value; only the root's a and inv are read and written.
 *
 * Data movement: the root's matrix is scattered from a 1 x 1 grid holding the root into the
 * pr x pc block-cyclic grid (NB x NB blocks) with Cpsgemr2d, factored and inverted there, and the
 * lower triangle gathered back to the root the same way (the root mirrors it). Built only with
 * ScaLAPACK (PDL_HAVE_SCALAPACK, Debian libscalapack-openmpi-dev); without it kfac_split_open
 * refuses (kfac_split_available says why). */
#ifndef PDL_KFAC_SPLIT_INV_H
#define PDL_KFAC_SPLIT_INV_H
#include <stddef.h>

#define KFAC_SPLIT_NB 64   /* the block-cyclic block (ScaLAPACK's usual 32-64; 64 measured best here) */

typedef struct kfac_split kfac_split_t;

/* 1 when this build has ScaLAPACK; else 0 with the reason (naming the Debian package) in why. */
int kfac_split_available(char *why, size_t n);

/* The process grid for P processes: pr x pc = P, pr <= pc, as square as P allows. */
void kfac_split_grid(int P, int *pr, int *pc);

/* Collective over the communicator comm_f (a Fortran handle, MPI_Comm_c2f of the runtime's
 * communicator): builds the BLACS grid. dbl: 1 factors in double (pdpotrf + pdpotri; the float
 * matrix is converted at the root), 0 in float. Dies when the build has no ScaLAPACK. */
kfac_split_t *kfac_split_open(int comm_f, int dbl);
void kfac_split_close(kfac_split_t *s);   /* collective */

/* Collective: inv = a^-1 at the root (see above); returns 0, -1 (NaN/Inf in a) or potrf's k > 0,
 * the same on every process. */
int kfac_split_inverse(kfac_split_t *s, int root, float *inv, const float *a, int n);

/* The model of one split inversion on P processes (the sim runtime's charges; docs/SIM.md and
 * docs/REPRODUCTION-kfac.md): process q of the pr x pc grid holds mloc x nloc of the n x n matrix
 * (numroc's counts). flops: its share of the n^3 the inversion costs (potrf n^3/3 + potri 2n^3/3,
 * as the suite counts one inversion) plus the panel work on the critical path (each of the
 * n / NB panels of the three sweeps is factored by one process column while the others wait:
 * 1.5 n^2 NB / pr); scatter_floats / gather_floats: its block-cyclic piece sent from / to the
 * root (the gather is the lower triangle: half); panel_floats: what the panel broadcasts bring it
 * over the three sweeps, 1.5 n^2 (1/pr + 1/pc) (zero on one process). */
typedef struct { double flops, scatter_floats, gather_floats, panel_floats; } kfac_split_cost_t;
void kfac_split_cost(int n, int P, int q, kfac_split_cost_t *c);
#endif
