/* kfac_split.c — see kfac_split.h. */
#include "algo/kfac_split.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kfac/split_inv.h"

#define SPLIT_TAG 1001   /* the sim's pieces (point to point, device roles of the split's nodes) */

struct ksplit {
  int thr;                       /* factors of order >= thr are split (k->split_min) */
  int req;                       /* --kfac-split as given (-1 auto) */
  int sim, N, me;
  kfac_t *k;
  int nsplit[NET_MAX_LAYERS];    /* split factors of each layer (0, 1 or 2) */
  kfac_split_t *sp;              /* real: the BLACS grid */
  /* the session in progress (ksplit_phase) */
  rt_t *rt; int root, left, inside;
  double (*rel)(const void *, int); const void *kr;
  float *buf; size_t buf_n;      /* sim: the pieces' bytes (their content is not read) */
};

static float *grow_buf(struct ksplit *s, size_t n) {
  if (n > s->buf_n) { xfree(s->buf); s->buf = xcalloc(n ? n : 1, sizeof(float)); s->buf_n = n; }
  return s->buf;
}

static void header(struct ksplit *s, int n) {   /* the owner's {n}: one more inversion; {0}: done */
  float h[2] = {(float)n, 0};
  s->rt->ops->bcast(s->rt, h, 2, s->root);
}

/* The sim's model of one split inversion of order n (src/kfac/split_inv.h's kfac_split_cost), run
 * by every node: the pieces from the owner, this node's flops, the panel traffic (as an
 * allgatherv in which each node receives panel_floats), the pieces back to the owner. */
static void sim_split(struct ksplit *s, int n) {
  rt_t *rt = s->rt;
  int N = s->N, me = s->me, root = s->root;
  kfac_split_cost_t c, cq;
  kfac_split_cost(n, N, me, &c);
  size_t piece = (size_t)c.scatter_floats;
  if (me == root) {
    for (int q = 0; q < N; q++) if (q != root) { kfac_split_cost(n, N, q, &cq); rt->ops->send(rt, q, grow_buf(s, (size_t)cq.scatter_floats), (size_t)cq.scatter_floats * sizeof(float), SPLIT_TAG); }
  } else rt->ops->recv(rt, root, grow_buf(s, piece), piece * sizeof(float), SPLIT_TAG);
  rt->ops->compute(rt, c.flops / s->rel(s->kr, n));
  size_t each = (size_t)ceil(c.panel_floats / (N - 1)), counts[1024];
  SHAPE_ASSERT(N <= 1024);
  for (int q = 0; q < N; q++) counts[q] = each;
  float *all = grow_buf(s, each * (size_t)N + each);
  rt->ops->allgatherv(rt, all + each * (size_t)N, all, counts);
  if (me == root) {
    for (int q = 0; q < N; q++) if (q != root) { kfac_split_cost(n, N, q, &cq); rt->ops->recv(rt, q, grow_buf(s, (size_t)cq.gather_floats), (size_t)cq.gather_floats * sizeof(float), SPLIT_TAG); }
  } else rt->ops->send(rt, root, grow_buf(s, piece), piece * sizeof(float), SPLIT_TAG);
}

/* kfac_t.split at the owner, inside its owner update of a split layer */
static int hook(void *ctx, float *inv, const float *a, int n, int *info) {
  struct ksplit *s = ctx;
  if (s->inside || !s->rt) return 0;   /* the sim's own inversion (below), or no session (not expected) */
  header(s, n);
  if (s->sim) {
    sim_split(s, n);
    s->inside = 1; *info = kfac_invert(s->k, inv, a, n); s->inside = 0;
  } else *info = kfac_split_inverse(s->sp, s->root, inv, a, n);
  if (!*info && --s->left == 0) { header(s, 0); s->rt = NULL; }   /* the layer's last split factor */
  return 1;
}

void ksplit_open(rt_t *rt, kfac_t *k, int thr) {
  int N = rt->nnodes;
  if (thr == KFAC_SPLIT_OFF || N < 2) return;
  int t = thr;
  if (thr == KFAC_SPLIT_AUTO) {   /* the smallest order whose n^3 exceeds the mean work per process */
    double tot = 0;
    for (int l = 0; l < k->nl; l++) tot += pow(k->L[l].da, 3) + pow(k->L[l].dg, 3);
    t = (int)floor(cbrt(tot / N)) + 1;
    while (t > 1 && pow(t - 1, 3) > tot / N) t--;
  }
  if (t < 2 * KFAC_SPLIT_NB) t = 2 * KFAC_SPLIT_NB;   /* below two blocks a split cannot pay */
  struct ksplit *s = xcalloc(1, sizeof *s);
  s->thr = t; s->req = thr; s->sim = rt->ops->simulated; s->N = N; s->me = rt->node; s->k = k;
  int any = 0;
  for (int l = 0; l < k->nl; l++) {
    kfac_layer_t *L = &k->L[l];
    double da3 = pow(L->da, 3), dg3 = pow(L->dg, 3);
    s->nsplit[l] = (L->da >= t) + (L->dg >= t);
    any |= s->nsplit[l];
    if (s->nsplit[l]) L->cost = (L->da >= t ? da3 / N : da3) + (L->dg >= t ? dg3 / N : dg3);
  }
  if (!any) { xfree(s); return; }
  if (!s->sim) {
    char why[256];
    if (!kfac_split_available(why, sizeof why)) die_usage("train: --kfac-split: %s", why);
    int comm = rt_real_mpi_comm_f();
    if (comm < 0) die_usage("train: --kfac-split needs MPI ranks (mpirun) on the real runtime");
    s->sp = kfac_split_open(comm, 0);
  }
  k->split = hook; k->split_ctx = s; k->split_min = t;
}

void ksplit_close(kfac_t *k) {
  struct ksplit *s = k->split_ctx;
  if (!s || k->split != hook) return;
  if (s->sp) kfac_split_close(s->sp);
  xfree(s->buf); xfree(s);
  k->split = NULL; k->split_ctx = NULL;
}

double ksplit_phase(kfac_t *k, rt_t *rt, long step, const int *owner, void (*update)(void *ctx, int l), void *ctx,
                    double (*rel)(const void *kr, int n), const void *kr, int *done) {
  struct ksplit *s = k->split_ctx;
  if (!s || k->split != hook) return 0;
  double charge = 0;
  s->rel = rel; s->kr = kr;
  for (int l = 0; l < k->nl; l++) {
    if (!s->nsplit[l]) continue;
    done[l] = 1;
    s->root = owner[l];
    if (s->me == s->root) {
      s->rt = rt; s->left = s->nsplit[l];
      update(ctx, l);
      if (s->rt) header(s, 0);   /* no inversion due, or a factor refused: release the others */
      s->rt = NULL;
      if (k->inverted_at[l] == step) {   /* the sim's charge of this layer's unsplit factor */
        const kfac_layer_t *L = &k->L[l];
        if (L->da < s->thr) charge += pow(L->da, 3) / rel(kr, L->da);
        if (L->dg < s->thr) charge += pow(L->dg, 3) / rel(kr, L->dg);
      }
    } else {
      s->rt = rt;
      for (;;) {
        float h[2];
        rt->ops->bcast(rt, h, 2, s->root);
        int n = (int)h[0];
        if (n <= 0) break;
        if (s->sim) sim_split(s, n);
        else (void)kfac_split_inverse(s->sp, s->root, NULL, NULL, n);
      }
      s->rt = NULL;
    }
  }
  return charge;
}

void ksplit_summary(json_t *j, const kfac_t *k) {
  const struct ksplit *s = k->split != hook ? NULL : k->split_ctx;
  json_int(j, "kfac_split", s ? s->thr : 0);
  char f[24 * NET_MAX_LAYERS] = ""; size_t o = 0;
  for (int l = 0; s && l < k->nl && o + 40 < sizeof f; l++) {
    if (k->L[l].da >= s->thr) o += (size_t)snprintf(f + o, sizeof f - o, "%s%d:A%d", o ? "," : "", l, k->L[l].da);
    if (k->L[l].dg >= s->thr) o += (size_t)snprintf(f + o, sizeof f - o, "%s%d:G%d", o ? "," : "", l, k->L[l].dg);
  }
  json_str(j, "kfac_split_factors", f);
  json_str(j, "kfac_split_how", !s ? "none" : s->sim ? "sim cost model (src/kfac/split_inv.h)" : "ScaLAPACK pspotrf+pspotri, float");
}
