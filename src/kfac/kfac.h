/* kfac.h — K-FAC (Martens & Grosse 2015) with KFC conv factors (Grosse & Martens 2016), the
 * optimizer of the distributed K-FAC paper (Tsuji, Osawa, Yokota, Matsuoka; docs/PAPERS.md §3).
 *
 * Per layer l with weights W [dg][da-1] (out x in, row-major, as the core stores them) and bias b:
 *   the gradient matrix  Gw = [dL/dW | dL/db]                       [dg][da]
 *   the input factor     A  = E_b[ sum_t  ã_t ã_tᵀ ]                 [da][da]
 *   the output factor    G  = E_b[ (1/T) sum_t g_t g_tᵀ ]            [dg][dg]
 * ã_t: the layer input at output position t with a 1 appended for the bias (fc: the input vector,
 * T = 1; conv: the k x k x Ci im2col patch of position t, T = Ho·Wo positions); g_t: the gradient
 * of the example's own loss w.r.t. the pre-activation output at t; E_b: the mean over the
 * mini-batch. This is KFC's normalisation (Ω sums over positions, Γ averages), so Ω ⊗ Γ has the
 * Fisher's scale: (A ⊗ G) · 1 agrees with E[vec(Gw) vec(Gw)ᵀ] in magnitude. kfac-pytorch instead
 * divides the patches by T and averages over B·T (A/T² of ours, G·T of ours: a T³/T difference in
 * the two factors, T² in their product) — see docs/REPRODUCTION-kfac.md.
 *
 * The update (the paper's eq. 9, ΔW = A⁻¹ ∇W G⁻¹ in its in x out convention) is, in ours,
 *   ΔW = (G + √γ/π I)⁻¹ · Gw · (A + π√γ I)⁻¹,   π = sqrt( (tr A / da) / (tr G / dg) )
 * (factored Tikhonov damping with the trace split, Martens & Grosse 2015 §6.3, as in the authors'
 * later chainerkfac code), then momentum SGD on ΔW (optim.c's msgd; weight decay added to ΔW).
 * Defaults follow the paper: factors from the current mini-batch only (stat_decay 0) and inverted
 * every iteration (inv_every 1); both are options. g_t is the gradient of the loss of the
 * example's label from the data (the empirical Fisher, the paper's eq. 4), or of a label drawn
 * from the model (--kfac-fisher sampled, Martens & Grosse §5: the caller backpropagates it before
 * kfac_bundle, the gradient Gw staying the data's). The paper's literal Algorithm 1 (w -= lr ΔW)
 * is the momentum step with μ 0 and no weight decay.
 *
 * The distributed form splits the work by layer: every process computes its mini-batch's bundle
 * of each layer, [Gw | A | G] (kfac_bundle), the bundles are summed over processes to their
 * layer's owner, and the owner turns the mean bundle into ΔW (kfac_owner_update). */
#ifndef PDL_KFAC_H
#define PDL_KFAC_H
#include <stddef.h>
#include "core/model.h"

typedef enum { KFAC_INV_FAST, KFAC_INV_REF, KFAC_INV_EIG, KFAC_INV_CUDA } kfac_inv_t;

typedef struct {
  float damping;       /* γ (--kfac-damping, default 0.03: docs/REPRODUCTION-kfac.md) */
  float stat_decay;    /* running average F = ε F + (1 - ε) F_batch; 0: this batch only (the paper) */
  int inv_every;       /* invert every N updates (1: the paper) */
  kfac_inv_t inverse;  /* which inversion: fast CPU (cpu_spd_inverse), LAPACKE double, eigen, cuSOLVER */
} kfac_cfg_t;

typedef struct {
  int li;              /* index in net->L */
  int conv;            /* 1: conv (KFC factors), 0: fc or softmax */
  int da, dg, T;       /* A is da x da (inputs + 1), G is dg x dg (outputs), T output positions */
  size_t w_off, b_off; /* the layer's weights and bias in the flat parameter vector */
  size_t bundle;       /* floats of [Gw | A | G] = dg*da + da*da + dg*dg */
  double cost;         /* da³ + dg³: the layer's inversion work, for the owner assignment */
} kfac_layer_t;

typedef struct {
  double factors, inverse, precond;      /* seconds spent in each (this process) */
  double fl_factors, fl_inverse, fl_precond; /* their flop counts, for the sim runtime's charges */
  long inversions, retries;              /* factor inversions; ones redone with 10x the damping */
} kfac_stats_t;

typedef struct {
  const net_t *net;
  kfac_cfg_t cfg;
  int nl;
  kfac_layer_t L[NET_MAX_LAYERS];
  int max_da, max_dg;
  /* owner state of layer l (kfac_own, or allocated on first use): running factors and damped
   * inverses; with `folded` and `inverted_at` all that a bit-identical resume needs (kfac_own) */
  float *A[NET_MAX_LAYERS], *G[NET_MAX_LAYERS], *Ai[NET_MAX_LAYERS], *Gi[NET_MAX_LAYERS];
  long inverted_at[NET_MAX_LAYERS];      /* update of the inverses held (-1: none) */
  long folded[NET_MAX_LAYERS];           /* mini-batch bundles folded into A and G (0: none yet) */
  float *own; size_t own_n;              /* kfac_own: one block holding every owned layer's A, G, Ai, Gi */
  float *tmp, *dmp, *inv_scratch;        /* [max_dg][max_da]; a damped factor; the inversion's scratch */
  float *part;                           /* per-thread partial factors */
  float *col;                            /* per-thread im2col patches */
  size_t part_n, col_n;
  /* --kfac-inverse cuda: the registry's cuda table (device 0, opened at the first inversion) and
   * buffers in its memory, grown on demand */
  const kernels_t *inv_k;
  float *dev_a, *dev_inv; size_t dev_n;
  int nthreads;
  kfac_stats_t st;
  /* --kfac-split (src/algo/kfac_split.c): factors of order >= split_min go to split(), which
   * returns 1 with the info in *info when it inverted the factor, 0 to invert it here */
  int (*split)(void *ctx, float *inv, const float *a, int n, int *info);
  void *split_ctx;
  int split_min;
  /* kfac_dev.c (kfac_on_device): the owner state and scratch in kt's workspace memory, d_own
   * holding A, G, Ai, Gi of the owned layers in kfac_own's layout (dA..dGi point into it) */
  const kernels_t *kt;
  const struct kfac_dev_ops *dev;   /* kfac_dev.c's entry points, set with kt (kfac.c calls them through it) */
  float *dA[NET_MAX_LAYERS], *dG[NET_MAX_LAYERS], *dAi[NET_MAX_LAYERS], *dGi[NET_MAX_LAYERS];
  float *d_own, *d_col, *d_tmp, *d_dmp, *d_diag, *d_one, *h_diag;
} kfac_t;

/* The K-FAC layers of net (every conv, fc and softmax layer, in order). */
void kfac_init(kfac_t *k, const net_t *net, const kfac_cfg_t *cfg, int nthreads);
void kfac_free(kfac_t *k);

/* Allocates the owner state of the layers with mine[l] != 0 up front, as one block of k->own_n
 * floats at k->own (A, G, Ai, Gi of each such layer in layer order, zeros), so that a checkpoint
 * can hold it: that block with k->folded and k->inverted_at is the whole state of the owner's
 * updates (running factors, the inverses held between refreshes, and when they were made; the
 * update count that schedules the refreshes is the caller's). Call once, before any update. */
void kfac_own(kfac_t *k, const int *mine);

/* After a resume (issue 46: a checksummed file can still be crafted): the owner state read from a
 * checkpoint against the net and the update count. The layers kfac_own gave this process: at most
 * one folded batch per update, the inverses' update in [-1, updates] (and only of folded factors),
 * every entry of A, G (and of the inverses, when held) finite, the factors' diagonals >= 0; the
 * other layers and the slots past the net's K-FAC layers untouched (0 folded, -1 or 0 inverted).
 * Returns 0, or 1 with the field and its value in why. */
int kfac_state_check(const kfac_t *k, long updates, char *why, size_t n);

/* Layer l's bundle [Gw | A | G] of a mini-batch of B: Gw from the flat gradient g (the batch mean),
 * A and G from ws after net_forward(train = 1) and net_backward(scale s) on that batch, with
 * ws->unfused set (the per-example loss gradients are da / s; of whichever labels that backward
 * was given: the data's, or --kfac-fisher sampled's). */
void kfac_bundle(kfac_t *k, int l, const workspace_t *ws, int B, float s, const float *g, float *bundle);

/* The owner's work for layer l at update `step`, from the mean bundle: folds A and G into the
 * running factors, inverts the damped factors when due (step % inv_every == 0 or none held) and
 * writes ΔW into dw [dg][da]. Returns 0, or the inversion's non-zero info if even 1e4x the
 * damping did not give an SPD factor (then dw is the unpreconditioned Gw). */
int kfac_owner_update(kfac_t *k, int l, const float *bundle, long step, float *dw);

/* The configured inversion of the SPD n x n matrix a into inv (contract/inv.h's return value). */
int kfac_invert(kfac_t *k, float *inv, const float *a, int n);

/* Layer l's [dg][da] matrix to/from its weights and bias in a flat vector. */
void kfac_to_flat(const kfac_t *k, int l, const float *m, float *flat);
void kfac_from_flat(const kfac_t *k, int l, const float *flat, float *m);

/* Damping split of a factor pair: π = sqrt((tr A / da) / (tr G / dg)), 1 if either trace is not
 * positive and finite. */
double kfac_pi(const float *A, int da, const float *G, int dg);

/* π from the factors' diagonals read with strides (inca, incg): kfac_pi's sums, in its order. */
double kfac_pi_diag(const float *a, size_t inca, int da, const float *g, size_t incg, int dg);

/* kfac_dev.c: the same per-layer work in a kernels_t's workspace memory (issue 35 G), through its
 * gemm, im2col, copy2d, axpby and spd_inverse (kt must have them all). kfac_on_device, after
 * kfac_own: allocates the owner state there (uploaded from k->own) and the scratch for batches of
 * up to B. kfac_bundle_dev and kfac_owner_update_dev are kfac_bundle and kfac_owner_update with
 * every pointer in workspace memory (ws on kt) and the inversions by kt->spd_inverse (whatever
 * cfg.inverse says); kfac_to_flat_dev / kfac_from_flat_dev likewise. kfac_dev_state copies the
 * owner state to (1) or from (0) the device: upload after a resume, download before a checkpoint.
 * kfac_free (kfac.c) releases it with the rest. */
void kfac_on_device(kfac_t *k, const kernels_t *kt, int B);
void kfac_dev_state(kfac_t *k, int to_device);
/* Where K-FAC works (issue 50: the node program names no device): on kt, the table the node trains
 * on (loop_place), after kfac_own. A host table keeps kfac.c's own host code (ssyrk factors,
 * --kfac-inverse's inversion) unless `table` asks for the table path there too (PDL_KFAC_DEV=1);
 * a device table, or `table`, gets kfac_on_device, after which kfac_bundle, kfac_owner_update and
 * kfac_to_flat run their _dev forms (pointers in kt's memory). Dies naming the backend when kt lacks
 * the dense linear algebra. Returns 1 on the table path. kfac_inverse_name: the inversion the
 * summary names (the device table's, or --kfac-inverse's). */
int kfac_place(kfac_t *k, const kernels_t *kt, int B, int table);
const char *kfac_inverse_name(const kfac_t *k);
/* The placed state's entry points, handed to kfac.c by kfac_on_device: kfac.c's kfac_to_flat,
 * kfac_bundle and kfac_owner_update call through them when k->kt is set, so kfac.c never names
 * kfac_dev.c (the dependency runs one way: kfac_dev.c -> kfac.c). */
struct kfac_dev_ops {
  void (*to_flat)(const kfac_t *k, int l, const float *m, float *flat);
  void (*bundle)(kfac_t *k, int l, const workspace_t *ws, int B, float s, const float *g, float *bundle);
  int (*owner_update)(kfac_t *k, int l, const float *bundle, long step, float *dw);
};
void kfac_bundle_dev(kfac_t *k, int l, const workspace_t *ws, int B, float s, const float *g, float *bundle);
int kfac_owner_update_dev(kfac_t *k, int l, const float *bundle, long step, float *dw);
void kfac_to_flat_dev(const kfac_t *k, int l, const float *m, float *flat);
void kfac_from_flat_dev(const kfac_t *k, int l, const float *flat, float *m);

/* Parses --kfac-inverse (fast|ref|eig|cuda); 0 ok. */
int kfac_inv_parse(const char *s, kfac_inv_t *out);
const char *kfac_inv_name(kfac_inv_t i);
#endif
