/* kfac.c — see kfac.h. Factor GEMMs are single-threaded OpenBLAS ssyrk/sgemm called from our
 * OpenMP team (the project's threading model, kernels/cpu/cpu.h): the factors split the batch's
 * images into per-thread partial sums added in thread order, the preconditioning splits ΔW's
 * rows; so a thread count gives the same bits every run. */
#include "kfac/kfac.h"
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_layers.h"
#include "reference/ref.h"
#include "util/util.h"
#include "util/vec.h"

static const char *const inv_names[] = {"fast", "ref", "eig", "cuda"};

int kfac_inv_parse(const char *s, kfac_inv_t *out) {
  for (int i = 0; i < 4; i++) if (!strcmp(s, inv_names[i])) { *out = (kfac_inv_t)i; return 0; }
  return 1;
}
const char *kfac_inv_name(kfac_inv_t i) { return inv_names[i]; }

/* Patch columns per factor ssyrk for a conv layer of T output positions: whole images, at least
 * one, up to FACTOR_COLS columns. */
#define FACTOR_COLS 512
/* Below this order a factor is formed as a full sgemm square (2x the multiply-adds, faster than
 * ssyrk there: 0.013 vs 0.025 ms at 32 x 784 on one Xeon thread); counted as the ssyrk's. */
#define SYRK_MIN 128
static int group_cols(int T) { return T >= FACTOR_COLS ? T : FACTOR_COLS / T * T; }

void kfac_init(kfac_t *k, const net_t *net, const kfac_cfg_t *cfg, int nthreads) {
  memset(k, 0, sizeof *k);
  k->net = net; k->cfg = *cfg; k->nthreads = nthreads < 1 ? 1 : nthreads;
  if (k->cfg.inv_every < 1) k->cfg.inv_every = 1;
  size_t col = 0;
  for (int i = 0; i < net->nlayers; i++) {
    const layer_t *L = &net->L[i];
    /* its factors assume a biased stride-1 conv or fc, with activations, pools and dropout between
     * the layers: batch norm (whose gamma and beta it would leave unpreconditioned,
     * and whose layer has no bias) and strided convs are refused, not approximated */
    if (L->type == L_BN || (L->type == L_CONV && L->s != 1))
      die_usage("K-FAC: net '%s' layer %d is %s, which K-FAC here does not handle", net->spec, i,
                L->type == L_BN ? "batch normalization (b)" : "a strided conv (s)");
    if (L->type != L_CONV && L->type != L_FC && L->type != L_SOFTMAX) continue;
    kfac_layer_t *K = &k->L[k->nl];
    K->li = i; K->conv = L->type == L_CONV;
    K->dg = L->oc;
    K->da = (int)(L->n_w / (size_t)L->oc) + 1;
    K->T = K->conv ? L->oh * L->ow : 1;
    K->w_off = L->w_off; K->b_off = L->b_off;
    K->bundle = (size_t)K->dg * K->da + (size_t)K->da * K->da + (size_t)K->dg * K->dg;
    K->cost = pow((double)K->da, 3) + pow((double)K->dg, 3);
    k->inverted_at[k->nl] = -1; k->folded[k->nl] = 0;
    if (K->da > k->max_da) k->max_da = K->da;
    if (K->dg > k->max_dg) k->max_dg = K->dg;
    if (K->conv) {   /* a group's patches [da][cols] and its gradients [dg][cols] */
      size_t c = (size_t)group_cols(K->T) * (size_t)(K->da + K->dg);
      if (c > col) col = c;
    }
    k->nl++;
  }
  size_t fmax = (size_t)k->max_da * k->max_da + (size_t)k->max_dg * k->max_dg;
  k->part_n = cpu_round16(fmax);   /* (slot 0 unused: thread 0 writes the bundle) */ k->col_n = cpu_round16(col);
  k->part = xmalloc(k->part_n * k->nthreads * sizeof(float));
  k->col = xmalloc((k->col_n ? k->col_n : 16) * k->nthreads * sizeof(float));
  int m = k->max_da > k->max_dg ? k->max_da : k->max_dg;
  k->tmp = xmalloc((size_t)k->max_dg * k->max_da * sizeof(float));
  k->dmp = xmalloc((size_t)m * m * sizeof(float));
  k->inv_scratch = xmalloc((cpu_spd_inverse_scratch_floats(m) + 16) * sizeof(float));
}

void kfac_own(kfac_t *k, const int *mine) {
  size_t n = 0;
  for (int l = 0; l < k->nl; l++)
    if (mine[l]) n += 2 * ((size_t)k->L[l].da * k->L[l].da + (size_t)k->L[l].dg * k->L[l].dg);
  k->own_n = n;
  k->own = xcalloc(n ? n : 1, sizeof(float));
  float *p = k->own;
  for (int l = 0; l < k->nl; l++) {
    if (!mine[l]) continue;
    size_t aa = (size_t)k->L[l].da * k->L[l].da, gg = (size_t)k->L[l].dg * k->L[l].dg;
    SHAPE_ASSERT(!k->A[l]);
    k->A[l] = p; p += aa; k->G[l] = p; p += gg; k->Ai[l] = p; p += aa; k->Gi[l] = p; p += gg;
  }
}

int kfac_state_check(const kfac_t *k, long updates, char *why, size_t n) {
  for (int l = 0; l < NET_MAX_LAYERS; l++) {
    const long f = k->folded[l], at = k->inverted_at[l];
    if (l >= k->nl) {   /* beyond the net's K-FAC layers: kfac_init's zeros */
      if (f || at) { snprintf(why, n, "field 'kfac.folded[%d]' %ld or 'kfac.inverted_at[%d]' %ld is set, but the net has %d "
                              "K-FAC layers (a file of another net?)", l, f, l, at, k->nl); return 1; }
      continue;
    }
    if (!k->A[l]) {   /* a layer another node owns: never folded, never inverted here */
      if (f || at != -1) { snprintf(why, n, "field 'kfac.folded[%d]' %ld or 'kfac.inverted_at[%d]' %ld is set, but layer %d "
                                    "is not this node's (0 and -1 expected)", l, f, l, at, l); return 1; }
      continue;
    }
    if (f < 0 || f > updates) {   /* one batch per update */
      snprintf(why, n, "field 'kfac.folded[%d]' is %ld, out of range [0, %ld] (one batch per update)", l, f, updates); return 1;
    }
    if (at < -1 || at > updates || (at >= 0 && !f)) {
      snprintf(why, n, "field 'kfac.inverted_at[%d]' is %ld, out of range [-1, %ld]%s", l, at, updates,
               at >= 0 && at <= updates ? " (inverses held of factors never folded)" : ""); return 1;
    }
    const int da = k->L[l].da, dg = k->L[l].dg;
    const struct { const char *name; const float *m; int d; } mats[4] = {{"A", k->A[l], da}, {"G", k->G[l], dg},
                                                                         {"A^-1", k->Ai[l], da}, {"G^-1", k->Gi[l], dg}};
    for (int q = 0; q < (at >= 0 ? 4 : 2); q++)   /* (no inverses held: a failed inversion's leftovers, never read) */
      for (size_t i = 0; i < (size_t)mats[q].d * (size_t)mats[q].d; i++) {
        const float v = mats[q].m[i];
        const size_t r = i / (size_t)mats[q].d, c = i % (size_t)mats[q].d;
        if (!isfinite(v) || (q < 2 && r == c && v < 0)) {   /* a factor is a second moment: its diagonal >= 0 */
          snprintf(why, n, "section 'kfac.factors': layer %d's %s[%zu][%zu] is %g (%s)", l, mats[q].name, r, c, (double)v,
                   isfinite(v) ? "a factor's diagonal is a mean square, >= 0" : "not finite");
          return 1;
        }
      }
  }
  return 0;
}

void kfac_free(kfac_t *k) {
  if (k->kt) {   /* kfac_on_device's state (kfac_dev.c), in kt's workspace memory */
    const kernels_t *kt = k->kt;
    kt->release(k->d_col); kt->release(k->d_tmp); kt->release(k->d_dmp); kt->release(k->d_diag);
    kt->release(k->d_one); kt->release(k->d_own);
    xfree(k->h_diag);
  }
  if (k->own) xfree(k->own);
  else for (int l = 0; l < k->nl; l++) { xfree(k->A[l]); xfree(k->G[l]); xfree(k->Ai[l]); xfree(k->Gi[l]); }
  xfree(k->part); xfree(k->col); xfree(k->tmp); xfree(k->dmp); xfree(k->inv_scratch);
  if (k->dev_n) { k->inv_k->release(k->dev_a); k->inv_k->release(k->dev_inv); }   /* (none without a device) */
  memset(k, 0, sizeof *k);
}

void kfac_from_flat(const kfac_t *k, int l, const float *flat, float *m) {
  const kfac_layer_t *K = &k->L[l];
  int in = K->da - 1;
  for (int o = 0; o < K->dg; o++) {
    memcpy(m + (size_t)o * K->da, flat + K->w_off + (size_t)o * in, (size_t)in * sizeof(float));
    m[(size_t)o * K->da + in] = flat[K->b_off + o];
  }
}

void kfac_to_flat(const kfac_t *k, int l, const float *m, float *flat) {
  if (k->kt) { k->dev->to_flat(k, l, m, flat); return; }   /* placed on a table (kfac_place) */
  const kfac_layer_t *K = &k->L[l];
  int in = K->da - 1;
  for (int o = 0; o < K->dg; o++) {
    memcpy(flat + K->w_off + (size_t)o * in, m + (size_t)o * K->da, (size_t)in * sizeof(float));
    flat[K->b_off + o] = m[(size_t)o * K->da + in];
  }
}

/* Lower triangle of S [n][n] copied to the upper, for the row blocks [r0, r1) of 32 rows, in
 * 32 x 32 tiles (a plain column walk of a 1153-row factor cost more than its ssyrk). */
static void mirror_lower(float *S, int n, int r0, int r1) {
  enum { TB = 32 };
  for (int ib = r0 * TB; ib < n && ib < r1 * TB; ib += TB)
    for (int jb = ib; jb < n; jb += TB) {
      int ie = ib + TB < n ? ib + TB : n, je = jb + TB < n ? jb + TB : n;
      for (int i = ib; i < ie; i++)
        for (int j = (jb > i + 1 ? jb : i + 1); j < je; j++) S[(size_t)i * n + j] = S[(size_t)j * n + i];
    }
}

/* A and G of layer K for images [b0, b1) of the batch, as sums scaled by ca and cg (lower
 * triangles only), into Ap, Gp.
 * Conv layers take their images in groups of up to FACTOR_COLS patch columns, so each ssyrk has
 * an inner dimension near FACTOR_COLS instead of one image's T (49 at 7x7: a 1153-row A ran at
 * 146 GFLOP/s per image against 190 for 21 images at once, one Xeon thread), and per-call costs
 * (the beta pass over A, packing) are paid once per group. */
static void factor_part(const kfac_layer_t *K, const layer_t *L, const float *in, const float *dout, int b0, int b1,
                        float ca, float cg, float *Ap, float *Gp, float *col) {
  int da = K->da, dg = K->dg, m = da - 1, T = K->T;
  if (b1 <= b0) {
    for (int i = 0; i < da; i++) memset(Ap + (size_t)i * da, 0, (size_t)(i + 1) * sizeof(float));
    for (int i = 0; i < dg; i++) memset(Gp + (size_t)i * dg, 0, (size_t)(i + 1) * sizeof(float));
    return;
  }
  if (!K->conv) {   /* fc: A = ca Xᵀ X over the images' input rows, G = cg Dᵀ D */
    int nb = b1 - b0;
    const float *X = in + (size_t)b0 * m, *D = dout + (size_t)b0 * dg;
    cblas_ssyrk(CblasRowMajor, CblasLower, CblasTrans, m, nb, ca, X, m, 0.0f, Ap, da);
    float *bias = Ap + (size_t)m * da;
    memset(bias, 0, (size_t)da * sizeof(float));
    cpu_sum_rows_blocked(bias, X, nb, m, 0, m); /* not one chain over the batch (test_kfac: precision) */
    for (int j = 0; j < m; j++) bias[j] *= ca;
    bias[m] = ca * (float)nb;
    cblas_ssyrk(CblasRowMajor, CblasLower, CblasTrans, dg, nb, cg, D, dg, 0.0f, Gp, dg);
    return;
  }
  /* conv: a group's patches P [da][g·T] (the last row ones, for the bias) and gradients
   * D [dg][g·T]: A += ca P Pᵀ, G += cg D Dᵀ */
  int g = group_cols(T) / T;
  for (int b = b0; b < b1; b += g) {
    int nb = b1 - b < g ? b1 - b : g;
    size_t ld = (size_t)nb * T;
    float *D = col + (size_t)da * ld;
    for (int i = 0; i < nb; i++) {
      cpu_im2col(col + (size_t)i * T, ld, in + (size_t)(b + i) * L->c * L->h * L->w, L->c, L->h, L->w, L->k, L->pad,
                 0, L->c, 0, T);
      const float *d = dout + (size_t)(b + i) * dg * T;
      for (int o = 0; o < dg; o++) memcpy(D + (size_t)o * ld + (size_t)i * T, d + (size_t)o * T, (size_t)T * sizeof(float));
    }
    for (size_t t = 0; t < ld; t++) col[(size_t)m * ld + t] = 1.0f;
    float beta = b == b0 ? 0.0f : 1.0f;
    cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, da, (int)ld, ca, col, (int)ld, beta, Ap, da);
    if (dg < SYRK_MIN)   /* the full square: OpenBLAS's sgemm beats its ssyrk there */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dg, dg, (int)ld, cg, D, (int)ld, D, (int)ld, beta, Gp, dg);
    else
      cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, dg, (int)ld, cg, D, (int)ld, beta, Gp, dg);
  }
}

void kfac_bundle(kfac_t *k, int l, const workspace_t *ws, int B, float s, const float *g, float *bundle) {
  if (k->kt) { k->dev->bundle(k, l, ws, B, s, g, bundle); return; }   /* placed on a table (kfac_place) */
  const kfac_layer_t *K = &k->L[l];
  const layer_t *L = &k->net->L[K->li];
  SHAPE_ASSERT(ws->unfused && B >= 1);
  double t0 = now_s();
  int da = K->da, dg = K->dg, T = K->T;
  float *A = bundle + (size_t)dg * da, *G = A + (size_t)da * da;
  kfac_from_flat(k, l, g, bundle);
  const float *in = ws->a[K->li], *dout = ws->da[K->li + 1];
  int nt = k->nthreads < B ? k->nthreads : B;
  /* the means: A /B, G /(B·T) with the per-example gradients da / s (hence 1 / s²), applied as
   * the ssyrk's alpha */
  float ca = 1.0f / (float)B, cg = (float)(1.0 / ((double)B * T * (double)s * (double)s));
  cpu_blas_init();
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads(), b0, b1;
    cpu_split(B, n, t, &b0, &b1);
    /* thread 0 writes A and G in place, the others partial sums added in thread order */
    float *Ap = t ? k->part + (size_t)t * k->part_n : A, *Gp = t ? Ap + (size_t)da * da : G;
    factor_part(K, L, in, dout, b0, b1, ca, cg, Ap, Gp, k->col + (size_t)t * k->col_n);
#pragma omp barrier
    int nbk_a = (da + 31) / 32, nbk_g = (dg + 31) / 32, r0, r1;
    cpu_split(da, n, t, &r0, &r1);
    for (int u = 1; u < n; u++) {
      const float *P = k->part + (size_t)u * k->part_n, *Q = P + (size_t)da * da;
      for (int i = r0; i < r1; i++) for (int j = 0; j <= i; j++) A[(size_t)i * da + j] += P[(size_t)i * da + j];
      int g0, g1;
      cpu_split(dg, n, t, &g0, &g1);
      for (int i = g0; i < g1; i++) for (int j = 0; j <= i; j++) G[(size_t)i * dg + j] += Q[(size_t)i * dg + j];
    }
#pragma omp barrier
    cpu_split(nbk_a, n, t, &r0, &r1);
    mirror_lower(A, da, r0, r1);
    cpu_split(nbk_g, n, t, &r0, &r1);
    mirror_lower(G, dg, r0, r1);
  }
  k->st.factors += now_s() - t0;
  /* the factors' flops, as the sim charges them: m(m+1)T per image for the patches' Gram (m =
   * da - 1) and mT for the bias row, dg(dg+1)T for G (whatever the kernels do for it) */
  k->st.fl_factors += (double)B * T * ((double)(da - 1) * da + (double)dg * (dg + 1) + (da - 1));
}

double kfac_pi(const float *A, int da, const float *G, int dg) {
  return kfac_pi_diag(A, (size_t)da + 1, da, G, (size_t)dg + 1, dg);
}

double kfac_pi_diag(const float *A, size_t inca, int da, const float *G, size_t incg, int dg) {
  double ta = 0, tg = 0;
  for (int i = 0; i < da; i++) ta += A[(size_t)i * inca];
  for (int i = 0; i < dg; i++) tg += G[(size_t)i * incg];
  double pi = sqrt((ta / da) / (tg / dg));
  return ta > 0 && tg > 0 && isfinite(pi) && pi > 0 ? pi : 1.0;
}

/* --kfac-inverse cuda: the registry's cuda backend (its spd_inverse: cuSOLVER) on host matrices:
 * upload, invert on the device, download; the device buffers are kept in k and grown to the largest
 * factor, so an update allocates nothing. */
static int device_inverse_host(kfac_t *k, float *inv, const float *a, int n) {
  if (!k->inv_k) {
    device_spec_t d;
    char why[256];
    if (kernels_device_parse(&d, "cuda", why, sizeof why)) die("--kfac-inverse cuda: %s", why);
    const kernels_t *t = kernels_for(&d, kernels_device_index(&d, 0, "--kfac-inverse"), "--kfac-inverse", NULL, 0);
    if (!t->spd_inverse) die("--kfac-inverse cuda: this build has no cuSOLVER (nvcc and cusolverDn.h not found)");
    k->inv_k = t;
  }
  const kernels_t *t = k->inv_k;
  size_t nn = (size_t)n * n;
  if (nn > k->dev_n) {
    if (k->dev_n) { t->release(k->dev_a); t->release(k->dev_inv); }
    k->dev_a = t->alloc(nn * sizeof(float)); k->dev_inv = t->alloc(nn * sizeof(float)); k->dev_n = nn;
  }
  t->upload(k->dev_a, a, nn * sizeof(float));
  int info = t->spd_inverse(k->dev_inv, k->dev_a, n);
  if (!info) t->download(inv, k->dev_inv, nn * sizeof(float));
  return info;
}

/* The chosen inversion of the SPD n x n matrix a into inv. */
int kfac_invert(kfac_t *k, float *inv, const float *a, int n) {
  int info;   /* --kfac-split's factors go to its hook first */
  if (k->split && n >= k->split_min && k->split(k->split_ctx, inv, a, n, &info)) return info;
  switch (k->cfg.inverse) {
  case KFAC_INV_REF: return ref_spd_inverse(inv, a, n, NULL);
  case KFAC_INV_EIG: return ref_spd_inverse_eig(inv, a, n, NULL);
  case KFAC_INV_CUDA: return device_inverse_host(k, inv, a, n);
  default: cpu_set_threads(k->nthreads); return cpu_spd_inverse(inv, a, n, k->inv_scratch);
  }
}

/* inv = (F + δ I)⁻¹; with a factor that is not SPD in float (rounding, a rank-deficient batch),
 * δ grows 10x up to 4 times. */
static int damped_inverse(kfac_t *k, float *inv, const float *F, int n, double delta) {
  int info = 0;
  if (pdl_numerics_off) {   /* a timing-only run (util/vec.h): its factors hold nothing; counted as one try */
    k->st.inversions++;
    k->st.fl_inverse += (double)n * n * n;
    return 0;
  }
  for (int tries = 0; tries < 5; tries++, delta *= 10) {
    memcpy(k->dmp, F, (size_t)n * n * sizeof(float));
    for (int i = 0; i < n; i++) k->dmp[(size_t)i * n + i] += (float)delta;
    info = kfac_invert(k, inv, k->dmp, n);
    k->st.inversions++;
    k->st.fl_inverse += (double)n * n * n;
    if (!info) return 0;
    k->st.retries++;
  }
  return info;
}

int kfac_owner_update(kfac_t *k, int l, const float *bundle, long step, float *dw) {
  if (k->kt) return k->dev->owner_update(k, l, bundle, step, dw);   /* placed on a table (kfac_place) */
  const kfac_layer_t *K = &k->L[l];
  int da = K->da, dg = K->dg;
  const float *Gw = bundle, *Ab = bundle + (size_t)dg * da, *Gb = Ab + (size_t)da * da;
  if (!k->Ai[l]) {
    SHAPE_ASSERT(!k->own);   /* (kfac_own allocated every layer this process updates) */
    k->A[l] = xmalloc((size_t)da * da * sizeof(float)); k->G[l] = xmalloc((size_t)dg * dg * sizeof(float));
    k->Ai[l] = xmalloc((size_t)da * da * sizeof(float)); k->Gi[l] = xmalloc((size_t)dg * dg * sizeof(float));
  }
  if (!k->folded[l]) {   /* the first batch: the running factors start from it */
    memcpy(k->A[l], Ab, (size_t)da * da * sizeof(float)); memcpy(k->G[l], Gb, (size_t)dg * dg * sizeof(float));
  } else {
    float e = k->cfg.stat_decay, f = 1.0f - e;
    for (size_t i = 0; i < (size_t)da * da; i++) k->A[l][i] = e * k->A[l][i] + f * Ab[i];
    for (size_t i = 0; i < (size_t)dg * dg; i++) k->G[l][i] = e * k->G[l][i] + f * Gb[i];
  }
  k->folded[l]++;
  int info = 0;
  if (k->inverted_at[l] < 0 || step % k->cfg.inv_every == 0) {
    double t0 = now_s();
    double pi = kfac_pi(k->A[l], da, k->G[l], dg), sg = sqrt((double)k->cfg.damping);
    info = damped_inverse(k, k->Ai[l], k->A[l], da, pi * sg);
    if (!info) info = damped_inverse(k, k->Gi[l], k->G[l], dg, sg / pi);
    k->st.inverse += now_s() - t0;
    if (info) { k->inverted_at[l] = -1; memcpy(dw, Gw, (size_t)dg * da * sizeof(float)); return info; }
    k->inverted_at[l] = step;
  }
  /* ΔW = Gi · Gw · Ai, rows of ΔW split over the threads */
  double t0 = now_s();
  const float *Gi = k->Gi[l], *Ai = k->Ai[l];
  float *tmp = k->tmp;
  int nt = k->nthreads < dg ? k->nthreads : dg;
  cpu_blas_init();
#pragma omp parallel num_threads(nt) if (!pdl_numerics_off)
  if (!pdl_numerics_off) {   /* a timing-only run (util/vec.h): counted below, not done */
    int r0, r1;
    cpu_split(dg, omp_get_num_threads(), omp_get_thread_num(), &r0, &r1);
    if (r1 > r0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, da, dg, 1.0f, Gi + (size_t)r0 * dg, dg, Gw, da,
                  0.0f, tmp + (size_t)r0 * da, da);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, da, da, 1.0f, tmp + (size_t)r0 * da, da, Ai, da,
                  0.0f, dw + (size_t)r0 * da, da);
    }
  }
  k->st.precond += now_s() - t0;
  k->st.fl_precond += 2.0 * dg * da * ((double)dg + da);
  return 0;
}
