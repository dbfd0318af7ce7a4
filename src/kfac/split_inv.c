/* split_inv.c — see split_inv.h. ScaLAPACK ships no C header: the prototypes below are those of
 * Debian's libscalapack-openmpi (BLACS C interface, REDIST's Cp?gemr2d, and the Fortran
 * routines with their trailing underscore; UPLO is read with LSAME, so no hidden length). */
#include "kfac/split_inv.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu/cpu.h"
#include "util/util.h"

void kfac_split_grid(int P, int *pr, int *pc) {
  int r = (int)sqrt((double)P);
  while (r > 1 && P % r) r--;
  *pr = r < 1 ? 1 : r; *pc = P / *pr;
}

/* numroc: how many of n rows (in blocks of nb) process iproc of np holds (source process 0) */
static int numroc_c(int n, int nb, int iproc, int np) {
  int nblocks = n / nb, cnt = (nblocks / np) * nb, extra = nblocks % np;
  if (iproc < extra) cnt += nb;
  else if (iproc == extra) cnt += n % nb;
  return cnt;
}

void kfac_split_cost(int n, int P, int q, kfac_split_cost_t *c) {
  int pr, pc; kfac_split_grid(P, &pr, &pc);
  int myrow = q / pc, mycol = q % pc;   /* "Row" order, as kfac_split_open's grid */
  double nn = (double)n * n, piece = (double)numroc_c(n, KFAC_SPLIT_NB, myrow, pr) * numroc_c(n, KFAC_SPLIT_NB, mycol, pc);
  memset(c, 0, sizeof *c);
  c->flops = (double)n * nn * piece / nn + (P > 1 ? 1.5 * nn * KFAC_SPLIT_NB / pr : 0);
  c->scatter_floats = c->gather_floats = P > 1 ? piece : 0;
  c->panel_floats = P > 1 ? 1.5 * nn * ((pr > 1 ? 1.0 / pr : 0) + (pc > 1 ? 1.0 / pc : 0)) : 0;
}

#ifdef PDL_HAVE_SCALAPACK
#include <mpi.h>

extern int Csys2blacs_handle(MPI_Comm comm);
extern void Cfree_blacs_system_handle(int handle);
extern void Cblacs_gridinit(int *ctx, const char *order, int nprow, int npcol);
extern void Cblacs_gridmap(int *ctx, int *usermap, int ldumap, int nprow, int npcol);
extern void Cblacs_gridinfo(int ctx, int *nprow, int *npcol, int *myrow, int *mycol);
extern void Cblacs_gridexit(int ctx);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
                      const int *icsrc, const int *ctxt, const int *lld, int *info);
extern void pspotrf_(const char *uplo, const int *n, float *a, const int *ia, const int *ja, const int *desca, int *info);
extern void pspotri_(const char *uplo, const int *n, float *a, const int *ia, const int *ja, const int *desca, int *info);
extern void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca, int *info);
extern void pdpotri_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca, int *info);
extern void Cpsgemr2d(int m, int n, float *a, int ia, int ja, int *desca, float *b, int ib, int jb, int *descb, int gctx);
extern void Cpdgemr2d(int m, int n, double *a, int ia, int ja, int *desca, double *b, int ib, int jb, int *descb, int gctx);

#define MAXP 1024
struct kfac_split {
  MPI_Comm comm;
  int me, P, pr, pc, myrow, mycol, dbl;
  int sys, ctx;           /* the BLACS system handle of comm, and the pr x pc grid */
  int ctx1[MAXP];         /* the 1 x 1 grid of each root (made on its first use; -2: not yet) */
  void *loc, *full;       /* the local block-cyclic piece; the root's double copy (dbl) */
  size_t loc_n, full_n;   /* their capacities, in elements */
};

int kfac_split_available(char *why, size_t n) { if (why && n) why[0] = 0; return 1; }

kfac_split_t *kfac_split_open(int comm_f, int dbl) {
  kfac_split_t *s = xcalloc(1, sizeof *s);
  s->comm = MPI_Comm_f2c(comm_f); s->dbl = dbl;
  MPI_Comm_rank(s->comm, &s->me); MPI_Comm_size(s->comm, &s->P);
  if (s->P > MAXP) die("--kfac-split: at most %d processes (%d)", MAXP, s->P);
  kfac_split_grid(s->P, &s->pr, &s->pc);
  s->sys = Csys2blacs_handle(s->comm);
  s->ctx = s->sys;
  Cblacs_gridinit(&s->ctx, "Row", s->pr, s->pc);
  int npr, npc;
  Cblacs_gridinfo(s->ctx, &npr, &npc, &s->myrow, &s->mycol);
  SHAPE_ASSERT(npr == s->pr && npc == s->pc && s->myrow == s->me / s->pc && s->mycol == s->me % s->pc);
  for (int i = 0; i < MAXP; i++) s->ctx1[i] = -2;
  cpu_blas_init();   /* ScaLAPACK's local BLAS: OpenBLAS, one thread per process (the project's model) */
  return s;
}

void kfac_split_close(kfac_split_t *s) {
  if (!s) return;
  for (int i = 0; i < s->P; i++) if (s->ctx1[i] >= 0) Cblacs_gridexit(s->ctx1[i]);
  Cblacs_gridexit(s->ctx);
  Cfree_blacs_system_handle(s->sys);
  free(s->loc); free(s->full);
  xfree(s);
}

static void *grow(void *p, size_t *cap, size_t n, size_t el) {
  if (n <= *cap) return p;
  free(p); p = malloc(n * el);
  if (!p) die("--kfac-split: out of memory for %zu elements", n);
  *cap = n; return p;
}

/* the lower triangle of the column-major result (the row-major upper) mirrored, in 32 x 32 tiles */
static void mirror_upper_to_lower(float *X, int n) {
  for (int ib = 0; ib < n; ib += 32)
    for (int jb = 0; jb <= ib; jb += 32)
      for (int i = ib; i < n && i < ib + 32; i++)
        for (int j = jb; j < i && j < jb + 32; j++) X[(size_t)i * n + j] = X[(size_t)j * n + i];
}

int kfac_split_inverse(kfac_split_t *s, int root, float *inv, const float *a, int n) {
  SHAPE_ASSERT(n >= 1 && root >= 0 && root < s->P && (s->me != root || (inv && a)));
  int root_me = s->me == root;
  int bad = 0;   /* the contract's NaN/Inf scan, at the root, copying a into inv (the root's buffer) */
  if (root_me) {
    size_t nn = (size_t)n * n;
    for (size_t i = 0; i < nn; i++) { float v = a[i]; if (!isfinite(v)) bad = 1; inv[i] = v; }
  }
  MPI_Bcast(&bad, 1, MPI_INT, root, s->comm);
  if (bad) return -1;
  if (s->ctx1[root] == -2) {   /* collective over comm: every process calls with this root now */
    int c = s->sys, map = root;
    Cblacs_gridmap(&c, &map, 1, 1, 1);
    s->ctx1[root] = root_me ? c : -1;
  }
  const int nb = KFAC_SPLIT_NB, zero = 0, one = 1;
  int mloc = numroc_c(n, nb, s->myrow, s->pr), nloc = numroc_c(n, nb, s->mycol, s->pc);
  int lld = mloc > 1 ? mloc : 1, info = 0;
  int desc[9], desc1[9] = {1, -1, n, n, nb, nb, 0, 0, 1};
  descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &s->ctx, &lld, &info);
  SHAPE_ASSERT(info == 0);
  if (root_me) { int ldr = n; descinit_(desc1, &n, &n, &nb, &nb, &zero, &zero, &s->ctx1[root], &ldr, &info); SHAPE_ASSERT(info == 0); }
  size_t el = s->dbl ? sizeof(double) : sizeof(float);
  s->loc = grow(s->loc, &s->loc_n, (size_t)lld * (nloc > 0 ? nloc : 1), el);
  int rinfo = 0;
  if (s->dbl) {
    double *full = NULL;
    if (root_me) {
      s->full = grow(s->full, &s->full_n, (size_t)n * n, sizeof(double));
      full = s->full;
      for (size_t i = 0; i < (size_t)n * n; i++) full[i] = inv[i];
    }
    Cpdgemr2d(n, n, full, 1, 1, desc1, s->loc, 1, 1, desc, s->ctx);
    pdpotrf_("L", &n, s->loc, &one, &one, desc, &info);
    MPI_Allreduce(&info, &rinfo, 1, MPI_INT, MPI_MAX, s->comm);
    if (rinfo) return rinfo;
    pdpotri_("L", &n, s->loc, &one, &one, desc, &info);
    MPI_Allreduce(&info, &rinfo, 1, MPI_INT, MPI_MAX, s->comm);
    if (rinfo) return rinfo;
    Cpdgemr2d(n, n, s->loc, 1, 1, desc, full, 1, 1, desc1, s->ctx);
    if (root_me) for (size_t i = 0; i < (size_t)n * n; i++) inv[i] = (float)full[i];
  } else {
    /* a symmetric row-major matrix is its own column-major form: scatter the root's copy */
    Cpsgemr2d(n, n, root_me ? inv : NULL, 1, 1, desc1, s->loc, 1, 1, desc, s->ctx);
    pspotrf_("L", &n, s->loc, &one, &one, desc, &info);
    MPI_Allreduce(&info, &rinfo, 1, MPI_INT, MPI_MAX, s->comm);
    if (rinfo) return rinfo;
    pspotri_("L", &n, s->loc, &one, &one, desc, &info);
    MPI_Allreduce(&info, &rinfo, 1, MPI_INT, MPI_MAX, s->comm);
    if (rinfo) return rinfo;
    Cpsgemr2d(n, n, s->loc, 1, 1, desc, root_me ? inv : NULL, 1, 1, desc1, s->ctx);
  }
  if (root_me) mirror_upper_to_lower(inv, n);   /* column-major lower == row-major upper */
  return 0;
}

#else /* no ScaLAPACK */
struct kfac_split { int unused; };
int kfac_split_available(char *why, size_t n) {
  if (why && n)
    snprintf(why, n, "this build has no ScaLAPACK (install the Debian package libscalapack-openmpi-dev, "
                     "then rebuild; an MPI build is needed too)");
  return 0;
}
kfac_split_t *kfac_split_open(int comm_f, int dbl) {
  (void)comm_f; (void)dbl;
  char why[256]; kfac_split_available(why, sizeof why);
  die_usage("train: --kfac-split: %s", why);
}
void kfac_split_close(kfac_split_t *s) { (void)s; }
int kfac_split_inverse(kfac_split_t *s, int root, float *inv, const float *a, int n) {
  (void)s; (void)root; (void)inv; (void)a; (void)n;
  die("kfac_split_inverse: this build has no ScaLAPACK");
}
#endif
