/* layers.h — the layer and update contract: forward/backward of every layer and the optimizers'
 * element-wise parameter updates, declared once through macros that each backend instantiates
 * with its prefix in its own header:
 *   ref_*  reference/ref.h             naive loops, the oracle (never used for training speed)
 *   cpu_*  kernels/cpu/cpu_layers.h    im2col + OpenBLAS sgemm, OpenMP, vectorised element-wise
 *   cuda_* kernels/cuda/cuda_layers.h  (device pointers)
 * This header sits below both src/core and kernels/ (ci/layering.py): it includes nothing of the
 * project, and no backend's own entry points (fused kernels, scratch sizes, threads) live here.
 * Signatures are identical between implementations. Conventions:
 *   - tensors are NCHW float32, row-major; outputs first; gradient buffers prefixed d.
 *   - parameter gradients (dw, db) are ACCUMULATED (+=) so sub-batches can be summed in place;
 *     input gradients (din) are OVERWRITTEN (=), which spares a memset of every activation
 *     gradient each step. din may be NULL (first layer: input gradient not needed).
 *   - conv: stride 1, square kernel k, zero padding pad; Ho = H + 2*pad - k + 1.
 *     weights w[Co][Ci][k][k], bias b[Co].
 *   - fc: w[N][M] (out x in), b[N]; out[B][N] = in[B][M] * w^T + b.
 *   - maxpool: non-overlapping s x s windows; Ho = ceil_mode ? ceil(H/s) : floor(H/s); windows
 *     clipped at the border in ceil mode. Backward routes dout to the first maximum of each
 *     window (recomputed from in, so no index buffer is kept).
 *   - act: leaky ReLU out = in > 0 ? in : slope*in (slope 0.01 = the papers' max(a, 0.01a),
 *     slope 0 = ReLU). Backward uses out's sign, so in-place (out == in) forward is allowed.
 *   - dropout: out = in * mask, mask[i] in {0, 1/(1-p)} drawn by the caller (model.c) so the
 *     random stream stays in one place.
 *   - softmax_xent: probs = softmax(logits); returns the SUM over the batch of -log p[label]
 *     (callers divide); backward dlogits = (probs - onehot) * scale (overwritten).
 *   - scratch: per-call work memory supplied by the caller, size from the backend's
 *     conv_scratch_floats (contract/kernels.h). The reference ignores it. */
#ifndef PDL_CONTRACT_LAYERS_H
#define PDL_CONTRACT_LAYERS_H
#include <stddef.h>
#include <stdint.h>

#define PDL_DECLARE_LAYERS(P) \
  void P##conv_forward(float *out, const float *in, const float *w, const float *b, \
                       int B, int Ci, int H, int W, int Co, int k, int pad, float *scratch); \
  void P##conv_backward(float *din, float *dw, float *db, const float *dout, const float *in, \
                        const float *w, int B, int Ci, int H, int W, int Co, int k, int pad, \
                        float *scratch); \
  void P##fc_forward(float *out, const float *in, const float *w, const float *b, int B, int M, int N); \
  void P##fc_backward(float *din, float *dw, float *db, const float *dout, const float *in, \
                      const float *w, int B, int M, int N); \
  void P##maxpool_forward(float *out, const float *in, int B, int C, int H, int W, int s, int ceil_mode); \
  void P##maxpool_backward(float *din, const float *dout, const float *in, const float *out, \
                           int B, int C, int H, int W, int s, int ceil_mode); \
  void P##act_forward(float *out, const float *in, size_t n, float slope); \
  void P##act_backward(float *din, const float *dout, const float *out, size_t n, float slope); \
  void P##dropout_forward(float *out, const float *in, const float *mask, size_t n); \
  void P##dropout_backward(float *din, const float *dout, const float *mask, size_t n); \
  double P##softmax_xent_forward(float *probs, const float *logits, const int *labels, int B, int N); \
  void P##softmax_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int N, \
                                float scale);

/* The layers of the papers' full-size nets (issue 51), a second group so that a backend can come
 * without them (kernels_t's entries are then NULL and model.c refuses a net that needs one, naming
 * the layer). Same conventions as above (NCHW float32, parameter gradients +=, din = or NULL):
 *   - conv_s: the conv above with stride st >= 1: Ho = (H + 2*pad - k) / st + 1 (floor), output
 *     (oh, ow) reads in[oh*st + kh - pad][ow*st + kw - pad]; scratch from the backend's
 *     conv_s_scratch_floats (contract/kernels.h).
 *   - pool: max-pool with a k x k window and stride s (windows may overlap, k > s, or leave gaps,
 *     k < s): Ho = (H - k) / s + 1, or ceil_mode: (H - k + s - 1) / s + 1 with windows clipped at
 *     the border (H >= k). Backward routes each window's dout to its first maximum (row-major,
 *     recomputed from in); where windows overlap the contributions add; din is overwritten.
 *   - bn: batch normalization (Ioffe & Szegedy 2015) of C channels over B images of HW positions
 *     each (after a conv: HW = Ho*Wo; after an fc: HW = 1, C = units), with the per-channel
 *     gamma, beta (parameters) and running mean/variance rmean, rvar [C] (state, not parameters).
 *     train = 1: mean and biased variance over the N = B*HW values of the channel, out = gamma
 *     (in - mean) / sqrt(var + eps) + beta; save [2][C] receives mean and 1/sqrt(var + eps) for
 *     the backward; rmean = (1 - m) rmean + m mean, rvar = (1 - m) rvar + m var N / max(N - 1, 1)
 *     (the unbiased variance, as PyTorch and Chainer; Chainer's max(., 1) at N = 1).
 *     train = 0: out = gamma (in - rmean) / sqrt(rvar + eps) + beta; nothing else written.
 *     Backward (after a train = 1 forward on the same in, with its save): xhat = (in - mean) inv,
 *     dbeta += sum dout, dgamma += sum dout xhat, din = gamma inv / N (N dout - sum dout - xhat
 *     sum dout xhat), the sums per channel over the batch.
 *   - gap: global average pooling, out[b][c] = mean over the HW positions of in[b][c];
 *     backward din[b][c][p] = dout[b][c] / HW. */
/* The flops a batch norm layer stands for, per value (B*C*HW of them), as net_t.flops_train counts
 * them and the timing-only backend charges them: forward mean 1, variance 3, normalize and scale 4;
 * backward the two sums 4, the input gradient 6. Global average pooling: 1 per value each way. */
#define PDL_BN_FLOPS_FWD 8.0
#define PDL_BN_FLOPS_BWD 10.0
#define PDL_GAP_FLOPS 1.0
#define PDL_DECLARE_FULLNET_LAYERS(P) \
  void P##conv_s_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, \
                         int W, int Co, int k, int pad, int st, float *scratch); \
  void P##conv_s_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, \
                          int B, int Ci, int H, int W, int Co, int k, int pad, int st, float *scratch); \
  void P##pool_forward(float *out, const float *in, int B, int C, int H, int W, int k, int s, int ceil_mode); \
  void P##pool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H, \
                        int W, int k, int s, int ceil_mode); \
  void P##bn_forward(float *out, const float *in, const float *gamma, const float *beta, float *rmean, \
                     float *rvar, float *save, int B, int C, int HW, int train, float momentum, float eps); \
  void P##bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in, \
                      const float *gamma, const float *save, int B, int C, int HW); \
  void P##gap_forward(float *out, const float *in, int B, int C, int HW); \
  void P##gap_backward(float *din, const float *dout, int B, int C, int HW);

/* The optimizers' updates (optim/optim.h runs them through the table), element by element on n
 * parameters in the backend's memory. Each expression is written once here, and every backend
 * evaluates it in this order with each operation rounded on its own (C: -std=c11, no FMA
 * contraction; CUDA: the __f*_rn intrinsics), so the backends give the same bits for the same
 * inputs:
 *   sgd_step   gi = g + wd w (when wd != 0, else gi = g); then v = mu v - lr gi, w += v
 *              (v != NULL: msgd, nag) or w -= lr gi (v == NULL: sgd); g = 0.
 *              net_backward_step (core/model.h) runs it on each layer as soon as its gradient
 *              is complete.
 *   adam_step  gi = g + wd w (when wd != 0); m = b1 m + (1 - b1) gi;
 *              v = b2 v + ((1 - b2) gi) gi; w -= (a m) / (sqrt(v) + eps); g = 0
 *              (a: the step size with the bias corrections, computed by the caller).
 *   nag_point  what = w + mu m (the point NAG differentiates next).
 *   avg_step   the averaged iterate: z += r (w - z) (ema 0: Polyak, asgd with r = 1/t) or
 *              z = (1 - r) z + r w (ema 1: constant moving rate, mvasgd). */
#define PDL_DECLARE_UPDATES(P) \
  void P##sgd_step(float *w, float *g, float *v, size_t n, float lr, float mu, float wd); \
  void P##adam_step(float *w, float *g, float *m, float *v, size_t n, float a, float b1, float b2, float eps, \
                    float wd); \
  void P##nag_point(float *what, const float *w, const float *m, size_t n, float mu); \
  void P##avg_step(float *z, const float *w, size_t n, float r, int ema);

/* The update net_backward_step (core/model.h) fuses into the backward pass, sgd_step's: momentum
 * SGD with weight decay, v = mu v - lr (g + wd w), w += v (v == NULL: plain SGD,
 * w -= lr (g + wd w)), i.e. optim_step's msgd and sgd (optim_fused_step fills one for an
 * optimizer). v has the layout of the parameters. */
typedef struct net_step { float lr, mu, wd; float *v; } net_step_t;

#endif
