/* test_split_inv.c — --kfac-split's distributed inversion (src/kfac/split_inv.c: ScaLAPACK pspotrf +
 * pspotri on a BLACS grid from MPI_COMM_WORLD) against the LAPACKE double oracle, with
 * base/contract/inv.h's bounds (tests/inv_check.h), at n = 1153 (vgg-small's A factors) and 257,
 * kappa 1e2 / 1e4 / 1e6, in float and in double, plus the refusals (NaN: -1; an indefinite matrix:
 * the oracle's info k, on every rank) and each root. Every case prints its errors and, on the
 * root, its time and the one-process fast inverse's (a loaded 2-core machine: times are figures,
 * not checks).
 * Run alone (tests/run.sh runs every test_* binary) it checks the cost model's arithmetic only;
 * tests/t_split.sh runs it under mpirun -np 2 and -np 4 (PDL_SPLIT_MPI=1), where it checks the
 * inversions. Without ScaLAPACK the MPI part prints "skip - ..." naming the package. */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_layers.h"
#include "kfac/split_inv.h"
#include "reference/ref.h"
#include "tests/harness.h"
#include "tests/inv_check.h"
#include "util/util.h"
#ifdef PDL_HAVE_MPI
#include <mpi.h>
#endif

/* the cost model: shares add up to the whole inversion, the pieces to the matrix */
static void test_cost_model(void) {
  const int n = 1153;
  for (int P = 1; P <= 64; P *= 2) {
    double fl = 0, piece = 0;
    kfac_split_cost_t c;
    for (int q = 0; q < P; q++) {
      kfac_split_cost(n, P, q, &c);
      fl += c.flops; piece += P > 1 ? c.scatter_floats : (double)n * n;
    }
    int pr, pc; kfac_split_grid(P, &pr, &pc);
    double nn = (double)n * n, crit = P > 1 ? P * 1.5 * nn * KFAC_SPLIT_NB / pr : 0;
    EXPECT_MSG(pr * pc == P && pr <= pc, "grid %dx%d for %d", pr, pc, P);
    EXPECT_NEAR(piece, nn, 0.5, "the block-cyclic pieces tile the matrix");
    EXPECT_NEAR(fl, (double)n * nn + crit, 1e-6 * n * nn, "the shares add to n^3 plus the panels");
  }
  kfac_split_cost_t c; kfac_split_cost(n, 1, 0, &c);
  EXPECT(c.scatter_floats == 0 && c.panel_floats == 0);
}

#ifdef PDL_HAVE_MPI
static int me, P;

static void one_case(kfac_split_t *s, int dbl, int n, double cond, int root) {
  size_t nn = (size_t)n * n;
  /* the matrix and the results live on the root only: kfac_split_inverse reads a and writes x
   * there, and scatters/gathers the pieces itself (the other ranks passing NULL also checks that
   * they touch neither) */
  float *a = NULL, *x = NULL, *xr = NULL, *xf = NULL;
  if (me == root) {
    a = inv_spd_float(n, cond, SEED, NULL, NULL);
    x = inv_alloc(nn * sizeof *x); xr = inv_alloc(nn * sizeof *xr); xf = inv_alloc(nn * sizeof *xf);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  int info = kfac_split_inverse(s, root, x, a, n);
  double t = now_s() - t0;
  char line[512] = ""; int pass = 1;
  if (me == root) {
    int ir = ref_spd_inverse(xr, a, n, NULL);
    cpu_set_threads(1);
    float *scr = inv_alloc(cpu_spd_inverse_scratch_floats(n) * sizeof(float));
    double t1 = now_s();
    int iff = cpu_spd_inverse(xf, a, n, scr);
    double tf = now_s() - t1;
    free(scr);
    double fe = inv_fwd_err(x, xr, nn), re = inv_resid(a, x, n), ft = inv_fwd_tol(cond, n), rt = inv_res_tol(n);
    pass = info == 0 && ir == 0 && iff == 0 && fe <= ft && re <= rt && inv_symmetric(x, n);
    snprintf(line, sizeof line,
             "%s split on %d ranks, root %d, n=%d kappa=%.0e: forward %.2e (<= %.2e), residual %.2e (<= %.2e), "
             "symmetric; %.1f ms (one-process fast float inverse, 1 thread: %.1f ms; loaded machine)",
             dbl ? "double" : "float", P, root, n, cond, fe, ft, re, rt, 1e3 * t, 1e3 * tf);
  }
  /* the root's verdict, printed by rank 0 (the other ranks' stdout is closed) */
  if (root != 0 && me == root) { MPI_Send(&pass, 1, MPI_INT, 0, 7, MPI_COMM_WORLD); MPI_Send(line, sizeof line, MPI_CHAR, 0, 8, MPI_COMM_WORLD); }
  if (root != 0 && me == 0) {
    MPI_Recv(&pass, 1, MPI_INT, root, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(line, sizeof line, MPI_CHAR, root, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (me == 0) CASE(pass, "%s", line);
  int all; MPI_Allreduce(&info, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_MSG(all == info, "rank %d info %d, another %d", me, info, all);
  free(a); free(x); free(xr); free(xf);
}

static void test_split_accuracy(void) {
  char why[256];
  if (!kfac_split_available(why, sizeof why)) SKIP("%s", why);
  for (int dbl = 0; dbl <= 1; dbl++) {
    kfac_split_t *s = kfac_split_open((int)MPI_Comm_c2f(MPI_COMM_WORLD), dbl);
    one_case(s, dbl, 1153, 1e4, 0);
    if (dbl) { kfac_split_close(s); break; }   /* double: the comparison that float suffices (1e4 only, CPU time) */
    one_case(s, dbl, 1153, 1e6, P - 1); one_case(s, dbl, 1153, 1e2, 0); one_case(s, dbl, 257, 1e4, P - 1);
    one_case(s, dbl, 65, 1e4, 0);
    kfac_split_close(s);
  }
}

static void test_split_refusals(void) {
  char why[256];
  if (!kfac_split_available(why, sizeof why)) SKIP("%s", why);
  kfac_split_t *s = kfac_split_open((int)MPI_Comm_c2f(MPI_COMM_WORLD), 0);
  const int n = 300, k0 = 200;
  float *a = inv_alloc((size_t)n * n * sizeof *a), *x = inv_alloc((size_t)n * n * sizeof *x);
  inv_indefinite(a, n, k0, SEED);
  int info = kfac_split_inverse(s, 0, x, a, n);
  EXPECT_MSG(info == k0, "indefinite: info %d on rank %d, want %d", info, me, k0);
  a[5 * n + 7] = NAN;
  info = kfac_split_inverse(s, P - 1, x, a, n);
  EXPECT_MSG(info == -1, "NaN: info %d on rank %d, want -1", info, me);
  free(a); free(x);
  kfac_split_close(s);
}
#endif

int main(int argc, char **argv) {
  RUN(test_cost_model);
#ifdef PDL_HAVE_MPI
  if (getenv("PDL_SPLIT_MPI")) {
    int prov;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (me && !freopen("/dev/null", "w", stdout)) return 1;   /* rank 0 prints every line */
    RUN(test_split_accuracy);
    RUN(test_split_refusals);
    int f = harness_exit(), any;
    MPI_Allreduce(&f, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
  }
#endif
  (void)argc; (void)argv;
  return harness_exit();
}
