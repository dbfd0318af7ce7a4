/* model.h — nets built from spec strings, one flat parameter vector, a workspace sized once.
 *
 * Spec grammar (tokens separated by spaces):
 *   C<n>[k<k>][p<p>][s<s>][b]  conv, n filters, k x k (default 3), zero padding p (default k/2),
 *                     stride s (default 1: Ho = (H + 2p - k) / s + 1), followed by the current
 *                     activation; b: batch normalization between the conv and its activation
 *                     (the conv then has no bias; BN's gamma and beta are parameters)
 *   P[<s>][c]         non-overlapping s x s max-pool (default 2); suffix c = ceil mode
 *   P<k>s<s>[c]       k x k max-pool with stride s (k > s: overlapping, e.g. P3s2), Ho =
 *                     (H - k) / s + 1, ceil mode c: (H - k + s - 1) / s + 1 (P<s>s<s> == P<s>)
 *   F<n>[b]           fully connected to n units, followed by the current activation; b: batch
 *                     normalization before it, as for C
 *   G                 global average pooling: C x H x W -> C x 1 x 1
 *   D[<p>]            dropout with drop probability p (default 0.5), training only
 *   S<n>              fully connected to n classes + softmax cross-entropy; must be last
 *   leaky | relu      activation for the layers that follow (default leaky, slope 0.01)
 * or a preset name (see `pdl nets`). Input shape comes from the data set.
 * Batch normalization (layer type L_BN, contract/layers.h's bn): training mode (net_forward with
 * train = 1) normalizes with the batch's statistics and moves the running ones, PyTorch's rule
 * with momentum NET_BN_MOMENTUM (= Chainer's decay 0.9) and eps NET_BN_EPS; evaluation mode
 * (train = 0) uses the running statistics. They are state, not parameters: each workspace keeps
 * its own (ws->bn_run, mean 0 and variance 1 at ws_init), so each replica of an algorithm has its
 * own and an evaluation uses those of the workspace it runs on.
 * FLOPs: 2 per multiply-add of conv and fc; batch norm NET_BN_FLOPS_FWD per value forward and
 * NET_BN_FLOPS_BWD backward; global average pooling 1 per value each way; pools, activations and
 * dropout count none.
 *
 * Parameters: one contiguous float array; layer l owns w[w_off .. w_off+n_w) then its bias.
 * Gradients: a second array of the same layout, accumulated (+=) by net_backward.
 * Workspace: activations a[0..L] (a[0] = input batch) and their gradients, dropout masks,
 * softmax probabilities and conv scratch, all sized once for max_batch; nothing is allocated
 * by net_forward/net_backward. Activation layers run in place (a[i+1] aliases a[i]).
 * With the CPU kernels, a conv followed by its activation runs fused (cpu_conv_act_*), and a 3x3
 * conv + act + 2x2 max-pool on the Winograd path runs as one kernel (cpu_conv_act_pool_*) that
 * writes only the pooled output: a[] of the conv/act output is then not written. */
#ifndef PDL_MODEL_H
#define PDL_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "contract/kernels.h"
#include "util/rng.h"

typedef enum { L_CONV, L_POOL, L_FC, L_ACT, L_DROPOUT, L_SOFTMAX, L_BN, L_GAP } ltype_t;

#define NET_BN_EPS 1e-5f        /* PyTorch's default (Chainer's is 2e-5) */
#define NET_BN_MOMENTUM 0.1f    /* running = (1 - m) running + m batch: PyTorch's 0.1, Chainer's decay 0.9 */
#define NET_BN_FLOPS_FWD PDL_BN_FLOPS_FWD   /* per value (contract/layers.h): mean 1, variance 3, normalize and scale 4 */
#define NET_BN_FLOPS_BWD PDL_BN_FLOPS_BWD   /* per value: the two sums 4, the input gradient 6 */

typedef struct {
  ltype_t type;
  int c, h, w;          /* input shape per image */
  int oc, oh, ow;       /* output shape per image */
  int k, pad, s, ceil_mode;  /* conv: kernel, padding, stride; pool: window k, stride s */
  float slope, drop_p;
  size_t w_off, n_w, b_off, n_b;
  int inplace;          /* output aliases input (activation layers) */
} layer_t;

#define NET_MAX_LAYERS 64
typedef struct {
  char name[48];        /* preset name or "custom" */
  char spec[256];       /* expanded spec */
  int in_c, in_h, in_w, classes;
  int nlayers;
  layer_t L[NET_MAX_LAYERS];
  size_t nparams;
  double flops_fwd;     /* per image, 2 flops per multiply-add */
  double flops_train;   /* per image, forward + backward (no input gradient for the first layer) */
} net_t;

/* input: the input the preset is laid out for ("CxHxW", the paper's), shown by `pdl nets` */
typedef struct { const char *name, *spec, *note, *input; } preset_t;
extern const preset_t net_presets[];
extern const int net_npresets;
const preset_t *net_preset(const char *name);   /* NULL if no preset has this name */

/* Build from a preset name or spec for inputs c x h x w; bad spec -> die_usage naming the token. */
void net_build(net_t *net, const char *spec_or_preset, int c, int h, int w);
/* The same, returning -1 with the one-line reason in err instead of exiting (0: built). */
int net_parse(net_t *net, const char *spec_or_preset, int c, int h, int w, char *err, size_t errlen);
/* He-uniform weights from seed (fan-in scaled), zero biases. */
/* Up-front memory estimate of training net at batch (bytes: parameters, gradients, optimizer
 * state, activations and their gradients, im2col scratch); net_check_memory refuses (exit 2,
 * naming both figures) a net that would not fit this machine's RAM, before anything is allocated. */
double net_memory_bytes(const net_t *net, int batch);
void net_check_memory(const net_t *net, int batch);
void net_init_params(const net_t *net, float *params, uint64_t seed);


typedef struct {
  const net_t *net;
  const kernels_t *k;
  int max_batch, nthreads;
  float *a[NET_MAX_LAYERS + 1];   /* a[i]: [max_batch][layer i input shape]; a[L] = logits */
  float *da[NET_MAX_LAYERS + 1];  /* gradients w.r.t. a[i] */
  float *mask[NET_MAX_LAYERS];    /* dropout masks */
  const float *mask_at[NET_MAX_LAYERS]; /* a dropout layer's mask drawn ahead, in workspace memory, for
                                   * the next training net_forward and its net_backward (net_masks_at);
                                   * NULL: net_forward draws it into mask[] */
  uint8_t *pidx[NET_MAX_LAYERS];  /* conv l followed by act + 2x2 pool: [max_batch][pooled shape] window
                                   * argmax of the fused kernel (cpu_conv_act_pool_*), else NULL */
  float *keep[NET_MAX_LAYERS];    /* conv l: its keep for the fused entries (k->conv_keep_floats), or NULL */
  unsigned char fused[NET_MAX_LAYERS]; /* per conv, what the last net_forward ran: 0 conv alone,
                                   * 1 conv + act, 2 conv + act + pool; net_backward follows it */
  float *probs;                   /* [max_batch][classes] */
  float *scratch; size_t scratch_n;
  rng_t rng;                      /* dropout masks */
  int unfused;                    /* 1: net_forward runs no fused conv kernels, so after net_backward
                                   * da[i + 1] of every conv/fc/softmax layer i holds the gradient
                                   * w.r.t. its pre-activation output and a[i] its input (K-FAC's
                                   * factors read both); set after ws_init */
  double *prof;                   /* NULL, or [2][NET_MAX_LAYERS] seconds: forward/backward time of
                                   * each layer is ADDED to prof[l] / prof[NET_MAX_LAYERS + l] (a
                                   * fused conv + activation is charged to the conv); `pdl speed
                                   * --profile` sets it */
  int *ylab;                      /* [max_batch] labels in workspace memory (a resident batch: net_gather) */
  double *acc;                    /* 3 doubles of workspace memory that net_forward(y == NULL) adds the
                                   * batch's loss sum, argmax hits and bad labels to; ws_init points it
                                   * at its own (zeroed), the caller may point it elsewhere (a slot per step) */
  float *host;                    /* host staging for a backend without host memory: probabilities
                                   * for the argmax, dropout masks (NULL when k->host_memory) */
  void *owned[4 * NET_MAX_LAYERS + 8]; int nowned;
  float *bn_run[NET_MAX_LAYERS];  /* a batch norm layer's running mean [C] then variance [C] (its state) */
  float *bn_save[NET_MAX_LAYERS]; /* its last training forward's batch mean and 1/sqrt(var + eps) [2][C] */
  float *zbias, *dbsink;          /* zeros as the bias of a layer without one (b), and where its
                                   * kernels' bias gradient goes (never read) */
} workspace_t;

/* k: the backend (required), e.g. &kernels_cpu; every buffer comes from k->alloc. */
void ws_init(workspace_t *ws, const net_t *net, int max_batch, int nthreads, const kernels_t *k, uint64_t seed);
void ws_free(workspace_t *ws);
/* The batch norm state of a net (running means and variances, the layers in order, mean then
 * variance of each): its floats, and copies of it out of and into a workspace (host memory s). */
size_t net_state_floats(const net_t *net);
void ws_state_get(const workspace_t *ws, float *s);
void ws_state_set(workspace_t *ws, const float *s);
/* dst's batch norm state = src's (workspaces of one net, on any backends): an evaluation workspace
 * given the running statistics of the replica whose parameters it evaluates. */
void ws_state_copy(workspace_t *dst, const workspace_t *src);

/* Forward pass on x [B][c][h][w] with labels y; returns the SUM over the batch of the
 * cross-entropy loss; probabilities in ws->probs. train=1 enables dropout. If correct != NULL
 * it receives the number of argmax hits. x == NULL: the batch is already in ws->a[0] (a device
 * backend's resident batch, e.g. a step replayed as a CUDA graph, which must not upload). */
double net_forward(workspace_t *ws, const float *params, const float *x, const int *y, int B, int train, int *correct);
/* y == NULL (a resident batch, issue 35 B): the labels are in ws->ylab, and net_forward neither
 * waits nor returns the loss (NaN): it adds the batch's loss sum (the bits it would have returned),
 * its argmax hits and its labels outside [0, classes) to ws->acc[0..2]; correct must be NULL.
 * net_backward and net_backward_step with y == NULL likewise read ws->ylab. */
/* The batch of rows idx[0..B) of a data set kept in workspace memory (xs [n][c][h][w], ys [n];
 * idx in workspace memory too) into ws->a[0] and ws->ylab, queued (k->gather, or memcpy on a host
 * backend): then net_forward(ws, params, NULL, NULL, ...). */
void net_gather(workspace_t *ws, const float *xs, const int *ys, const int *idx, int B);
/* Dropout masks drawn ahead (a chunk of resident steps: one upload for all of them): the floats of
 * one training step's masks at batch B (0 without dropout); net_draw_masks draws them into m
 * (host memory), exactly the draws a training net_forward would make from ws->rng, layer after
 * layer; net_masks_at points the next training step's layers at them in workspace memory (base, as
 * net_draw_masks laid them out; NULL: drawn by net_forward again). */
size_t net_mask_floats(const workspace_t *ws, int B);
void net_draw_masks(workspace_t *ws, int B, float *m);
void net_masks_at(workspace_t *ws, int B, const float *base);
/* Backward after net_forward(train=1) on the same batch: grads += scale * d(sum loss)/d params. */
void net_backward(workspace_t *ws, const float *params, float *grads, const int *y, int B, float scale);

/* (net_step_t, the update fused into the backward pass, is contract/layers.h's.)
 * net_backward, then the update *st of params, with each layer's update run right after that
 * layer's backward (its weights are not read again in the pass), while its gradient is still in
 * cache; the backend's fc_backward_sgd, where it has one, never stores the fc gradient at all.
 * grads must be zero on entry and are zero on return (as optim_step leaves them). The result is
 * bit-identical to net_backward followed by optim_step (sgd/msgd) on the same thread count. */
void net_backward_step(workspace_t *ws, float *params, float *grads, const int *y, int B, float scale,
                       const net_step_t *st);

/* Test error and mean loss of params over a data set (batched by ws->max_batch). */
void net_evaluate(workspace_t *ws, const float *params, const float *x, const int *y, int n, double *err, double *loss);
/* The same over a data set kept in workspace memory (xs [n][c][h][w], ys [n]): its batches copied
 * on the backend, the loss and hits summed in ws->acc, read back once: the same err and loss bits as
 * net_evaluate on a host copy of the set, with no upload and one wait (issue 35 F). */
void net_evaluate_ws(workspace_t *ws, const float *params, const float *xs, const int *ys, int n, double *err,
                     double *loss);

#endif
