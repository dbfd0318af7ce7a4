/* stability.h — round-robin stability of asynchronous EASGD and ADMM on F(x) = x^2/2
 * (EASGD paper, Zhang/Choromanska/LeCun 2015, Sec. 4, eq. 9-13, Fig. 1).
 *
 * Conventions (the update equations are written out at the top of stability.c):
 *   - states are column vectors s, one global clock tick is s <- F s;
 *   - matrices are dense, row-major double [n][n];
 *   - EASGD state (n = p+1):  s = (x_1, ..., x_p, xc);        x_i at index i-1, center xc at p;
 *   - ADMM state  (n = 2p+1): s = (lam_1, x_1, ..., lam_p, x_p, xc);
 *                             lam_i at 2(i-1), x_i at 2(i-1)+1, center xc at 2p;
 *   - workers are numbered i = 1..p; worker i is active at tick t when t mod p = i-1, so one round
 *     of p ticks applies worker 1 first: F = F^p ... F^2 F^1;
 *   - "coef" is the method's second parameter: alpha (= eta*rho) for EASGD, rho for ADMM. */
#ifndef PDL_STABILITY_H
#define PDL_STABILITY_H

typedef enum { PDL_STAB_EASGD = 0, PDL_STAB_ADMM = 1 } pdl_stab_method;

const char *pdl_stab_method_name(pdl_stab_method m);     /* "easgd" / "admm" */
int pdl_stab_dim(pdl_stab_method m, int p);              /* p+1 or 2p+1 */
static inline int pdl_stab_center(pdl_stab_method m, int p) { return m == PDL_STAB_EASGD ? p : 2 * p; }

/* EASGD worker-i map F^i (eq. 12-13 at an active tick), F: [p+1][p+1]. Symmetric. */
void pdl_easgd_worker_map(int p, int i, double eta, double alpha, double *F);
/* ADMM stage map for worker i: stage 1 = F1i (dual ascent, eq. 9), 2 = F2i (local step, eq. 10),
 * 3 = F3i (center, eq. 11); F: [2p+1][2p+1]. */
void pdl_admm_stage_map(int p, int i, int stage, double eta, double rho, double *F);
/* Worker-i map of one tick: F^i = F3i F2i F1i (ADMM) or the EASGD F^i; F: [n][n]. */
void pdl_stab_worker_map(pdl_stab_method m, int p, int i, double eta, double coef, double *F);
/* The composed round map F = F^p ... F^1 (one tick of each worker, worker 1 first); F: [n][n]. */
void pdl_stab_round_map(pdl_stab_method m, int p, double eta, double coef, double *F);

/* C = A B for n x n row-major matrices; C may not alias A or B. */
void pdl_mat_mul(int n, const double *A, const double *B, double *C);
/* Largest |eigenvalue| of A [n][n] by LAPACKE_dgeev (A is not modified); dies on a LAPACK error. */
double pdl_spectral_radius(int n, const double *A);
/* Spectral radius of the round map at (eta, coef). */
double pdl_stab_radius(pdl_stab_method m, int p, double eta, double coef);

/* One global clock tick t applied in place to s [n], written as the scalar updates of eq. 9-11
 * (ADMM) or eq. 12-13 (EASGD) — independent of the matrices above, so each checks the other. */
void pdl_stab_tick(pdl_stab_method m, int p, long t, double eta, double coef, double *s);

/* EASGD analytic condition (Sec. 4): 0 <= eta <= 2 and 0 <= alpha <= (4 - 2 eta)/(4 - eta). */
double pdl_easgd_alpha_max(double eta);
int pdl_easgd_stable_analytic(double eta, double alpha);
/* Distance used for the boundary band: the smallest of |eta|, |eta - 2|, |alpha| and, for
 * eta in [0, 2], |alpha - (4 - 2 eta)/(4 - eta)| (vertical distance to the curve; its slope
 * -4/(4-eta)^2 lies in [-1, -1/4] there, so it is at most ~sqrt(2) times the Euclidean distance;
 * the other three terms are distances to the lines carrying the region's straight edges). */
double pdl_easgd_boundary_gap(double eta, double alpha);

/* Numerically stable: spectral radius <= 1 + PDL_STAB_TOL. The tolerance covers dgeev's rounding
 * (backward error ~ n * 1e-16 * ||F||, with ||F|| <= 3 on the grids used), not modelling error. */
#define PDL_STAB_TOL 1e-9

#endif
