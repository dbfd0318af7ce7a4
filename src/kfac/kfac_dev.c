/* kfac_dev.c — K-FAC's per-layer work where the net trains (issue 35 G: kfac-dist --device cuda):
 * the bundles [Gw | A | G], the owner's running factors, damped inversions and ΔW, in a kernels_t's
 * workspace memory through its dense linear algebra entries (contract/kernels.h: gemm, im2col,
 * copy2d, axpby, spd_inverse). On CUDA that is cuBLAS SGEMM in FP32 and cuSOLVER potrf + potri;
 * run with the CPU table (PDL_KFAC_DEV=1, its test) it is OpenBLAS and the fast float inverse.
 *
 * The same mathematics as kfac.c, in another order of operations:
 *   conv: the patches of a chunk of images P [da][cb·T] (im2col, a row of ones for the bias) and
 *         their gradients D [dg][cb·T] (one 2-D copy per image), then A (+)= ca P Pᵀ and
 *         G (+)= cg D Dᵀ as full GEMMs (kfac.c: ssyrk on lower triangles in groups of <= 512
 *         columns, per-thread partial sums, mirrored);
 *   fc:   X with a column of ones, A = ca Xᵀ X, G = cg Dᵀ D;
 *   owner: the traces for π from the factors' diagonals (downloaded: da + dg floats, summed in
 *         double in kfac_pi's order), F + δI by a strided axpby, the inversion (waits for its
 *         info), ΔW = Gi Gw Ai by two GEMMs.
 * So the bundles agree with kfac.c's to float rounding, not bit for bit (tests/t_kfac.sh and
 * tests/t_cuda_emu_pdl.sh compare whole runs within bounds). The times in k->st are host times
 * of queued work: the inversions wait, the GEMMs do not, so on a device the factor and
 * preconditioning times are those of queueing, and the waits land in the inversions'. */
#include <math.h>
#include <string.h>
#include "kfac/kfac.h"
#include "util/util.h"

/* Images per chunk of a conv layer's patches: as many as keep P and D under this many floats. */
#define DEV_COL_FLOATS ((size_t)1 << 24)
static int dev_chunk(const kfac_layer_t *K, int B) {
  const size_t per = (size_t)K->T * (size_t)(K->da + K->dg);
  size_t cb = DEV_COL_FLOATS / (per ? per : 1);
  if (cb < 1) cb = 1;
  return cb < (size_t)B ? (int)cb : B;
}

void kfac_on_device(kfac_t *k, const kernels_t *kt, int B) {
  SHAPE_ASSERT(kt && kt->gemm && kt->im2col && kt->copy2d && kt->axpby && kt->spd_inverse && k->own && B >= 1);
  static const struct kfac_dev_ops ops = {kfac_to_flat_dev, kfac_bundle_dev, kfac_owner_update_dev};
  k->kt = kt;
  k->dev = &ops;
  size_t col = 1, m = 1;
  for (int l = 0; l < k->nl; l++) {
    const kfac_layer_t *K = &k->L[l];
    const size_t c = K->conv ? (size_t)dev_chunk(K, B) * K->T * (size_t)(K->da + K->dg) : (size_t)B * K->da;
    if (c > col) col = c;
  }
  m = (size_t)(k->max_da > k->max_dg ? k->max_da : k->max_dg);
  k->d_col = kt->alloc(col * sizeof(float));
  k->d_tmp = kt->alloc((size_t)k->max_dg * k->max_da * sizeof(float));
  k->d_dmp = kt->alloc(m * m * sizeof(float));
  k->d_diag = kt->alloc((size_t)(k->max_da + k->max_dg) * sizeof(float));
  k->h_diag = xmalloc((size_t)(k->max_da + k->max_dg) * sizeof(float));
  const float one = 1.0f;
  k->d_one = kt->alloc(sizeof(float));
  kt->upload(k->d_one, &one, sizeof one);
  k->d_own = kt->alloc((k->own_n ? k->own_n : 1) * sizeof(float));   /* kfac_own's layout */
  for (int l = 0; l < k->nl; l++) {
    if (!k->A[l]) continue;
    k->dA[l] = k->d_own + (k->A[l] - k->own); k->dG[l] = k->d_own + (k->G[l] - k->own);
    k->dAi[l] = k->d_own + (k->Ai[l] - k->own); k->dGi[l] = k->d_own + (k->Gi[l] - k->own);
  }
  kfac_dev_state(k, 1);
}

int kfac_place(kfac_t *k, const kernels_t *kt, int B, int table) {
  if (kt->host_memory && !table) return 0;
  if (!kt->gemm || !kt->im2col || !kt->copy2d || !kt->axpby || !kt->spd_inverse)
    die("--device: the %s backend has no dense linear algebra for K-FAC's factors and inversions (a build without "
        "cuSOLVER?)", kt->name);
  kfac_on_device(k, kt, B);
  return 1;
}

const char *kfac_inverse_name(const kfac_t *k) {
  return k->kt && !k->kt->host_memory ? k->kt->name : kfac_inv_name(k->cfg.inverse);
}

void kfac_dev_state(kfac_t *k, int to_device) {
  if (!k->kt || !k->own_n) return;
  if (to_device) k->kt->upload(k->d_own, k->own, k->own_n * sizeof(float));
  else k->kt->download(k->own, k->d_own, k->own_n * sizeof(float));
}

void kfac_from_flat_dev(const kfac_t *k, int l, const float *flat, float *m) {
  const kfac_layer_t *K = &k->L[l];
  const int in = K->da - 1;
  k->kt->copy2d(m, (size_t)K->da, flat + K->w_off, (size_t)in, K->dg, in);
  k->kt->copy2d(m + in, (size_t)K->da, flat + K->b_off, 1, K->dg, 1);
}

void kfac_to_flat_dev(const kfac_t *k, int l, const float *m, float *flat) {
  const kfac_layer_t *K = &k->L[l];
  const int in = K->da - 1;
  k->kt->copy2d(flat + K->w_off, (size_t)in, m, (size_t)K->da, K->dg, in);
  k->kt->copy2d(flat + K->b_off, 1, m + in, (size_t)K->da, K->dg, 1);
}

void kfac_bundle_dev(kfac_t *k, int l, const workspace_t *ws, int B, float s, const float *g, float *bundle) {
  const kernels_t *kt = k->kt;
  const kfac_layer_t *K = &k->L[l];
  const layer_t *L = &k->net->L[K->li];
  SHAPE_ASSERT(kt && ws->unfused && B >= 1 && ws->k == kt);
  const double t0 = now_s();
  const int da = K->da, dg = K->dg, T = K->T, m = da - 1;
  float *A = bundle + (size_t)dg * da, *G = A + (size_t)da * da;
  kfac_from_flat_dev(k, l, g, bundle);
  const float *in = ws->a[K->li], *dout = ws->da[K->li + 1];
  const float ca = 1.0f / (float)B, cg = (float)(1.0 / ((double)B * T * (double)s * (double)s));   /* kfac_bundle's */
  if (!K->conv) {   /* X [B][da] with a column of ones; A = ca Xᵀ X, G = cg Dᵀ D */
    float *X = k->d_col;
    kt->copy2d(X, (size_t)da, in, (size_t)m, B, m);
    kt->copy2d(X + m, (size_t)da, k->d_one, 0, B, 1);
    kt->gemm(1, 0, da, da, B, ca, X, da, X, da, 0.0f, A, da);
    kt->gemm(1, 0, dg, dg, B, cg, dout, dg, dout, dg, 0.0f, G, dg);
  } else {
    const int cb = dev_chunk(K, B);
    for (int b = 0; b < B; b += cb) {
      const int nb = B - b < cb ? B - b : cb;
      const size_t ld = (size_t)nb * T;
      float *P = k->d_col, *D = P + (size_t)da * ld;
      kt->im2col(P, in + (size_t)b * L->c * L->h * L->w, nb, L->c, L->h, L->w, L->k, L->pad);
      kt->copy2d(P + (size_t)m * ld, 1, k->d_one, 0, (int)ld, 1);   /* the bias row: ones */
      for (int i = 0; i < nb; i++)
        kt->copy2d(D + (size_t)i * T, ld, dout + (size_t)(b + i) * dg * T, (size_t)T, dg, T);
      const float beta = b ? 1.0f : 0.0f;
      kt->gemm(0, 1, da, da, (int)ld, ca, P, (int)ld, P, (int)ld, beta, A, da);
      kt->gemm(0, 1, dg, dg, (int)ld, cg, D, (int)ld, D, (int)ld, beta, G, dg);
    }
  }
  k->st.factors += now_s() - t0;
  k->st.fl_factors += (double)B * T * ((double)(da - 1) * da + (double)dg * (dg + 1) + (da - 1));   /* kfac_bundle's count */
}

/* inv = (F + δ I)⁻¹ on the backend, δ 10x up to 4 times when F + δ I is not SPD in float
 * (kfac.c's damped_inverse). */
static int damped_dev(kfac_t *k, float *inv, const float *F, int n, double delta) {
  const kernels_t *kt = k->kt;
  int info = 0;
  for (int tries = 0; tries < 5; tries++, delta *= 10) {
    kt->copy(k->d_dmp, F, (size_t)n * n * sizeof(float));
    kt->axpby(k->d_dmp, (size_t)n + 1, k->d_one, 0, (size_t)n, 1.0f, (float)delta);   /* the diagonal += δ */
    info = kt->spd_inverse(inv, k->d_dmp, n);
    k->st.inversions++;
    k->st.fl_inverse += (double)n * n * n;
    if (!info) return 0;
    k->st.retries++;
  }
  return info;
}

int kfac_owner_update_dev(kfac_t *k, int l, const float *bundle, long step, float *dw) {
  const kernels_t *kt = k->kt;
  const kfac_layer_t *K = &k->L[l];
  const int da = K->da, dg = K->dg;
  const size_t aa = (size_t)da * da, gg = (size_t)dg * dg;
  SHAPE_ASSERT(kt && k->dA[l]);   /* (kfac_own and kfac_on_device: every layer this process owns) */
  const float *Gw = bundle, *Ab = bundle + (size_t)dg * da, *Gb = Ab + aa;
  if (!k->folded[l]) {
    kt->copy(k->dA[l], Ab, aa * sizeof(float)); kt->copy(k->dG[l], Gb, gg * sizeof(float));
  } else {
    const float e = k->cfg.stat_decay, f = 1.0f - e;
    kt->axpby(k->dA[l], 1, Ab, 1, aa, e, f); kt->axpby(k->dG[l], 1, Gb, 1, gg, e, f);
  }
  k->folded[l]++;
  int info = 0;
  if (k->inverted_at[l] < 0 || step % k->cfg.inv_every == 0) {
    const double t0 = now_s();
    kt->copy2d(k->d_diag, 1, k->dA[l], (size_t)da + 1, da, 1);
    kt->copy2d(k->d_diag + da, 1, k->dG[l], (size_t)dg + 1, dg, 1);
    kt->download(k->h_diag, k->d_diag, (size_t)(da + dg) * sizeof(float));
    const double pi = kfac_pi_diag(k->h_diag, 1, da, k->h_diag + da, 1, dg), sg = sqrt((double)k->cfg.damping);
    info = damped_dev(k, k->dAi[l], k->dA[l], da, pi * sg);
    if (!info) info = damped_dev(k, k->dGi[l], k->dG[l], dg, sg / pi);
    k->st.inverse += now_s() - t0;
    if (info) { k->inverted_at[l] = -1; kt->copy(dw, Gw, (size_t)dg * da * sizeof(float)); return info; }
    k->inverted_at[l] = step;
  }
  const double t0 = now_s();   /* ΔW = Gi · Gw · Ai */
  kt->gemm(0, 0, dg, da, dg, 1.0f, k->dGi[l], dg, Gw, da, 0.0f, k->d_tmp, da);
  kt->gemm(0, 0, dg, da, da, 1.0f, k->d_tmp, da, k->dAi[l], da, 0.0f, dw, da);
  k->st.precond += now_s() - t0;
  k->st.fl_precond += 2.0 * dg * da * ((double)dg + da);
  return 0;
}
