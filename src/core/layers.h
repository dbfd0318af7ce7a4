/* layers.h — forward/backward of every layer, declared once for each implementation:
 *   ref_*  in reference/     naive loops, the oracle (never used for training speed)
 *   cpu_*  in kernels/cpu/   im2col + OpenBLAS sgemm, OpenMP, vectorised element-wise
 *   cuda_* in kernels/cuda/  (device pointers; see kernels/cuda/cuda_layers.h)
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
 *   - scratch: per-call work memory supplied by the caller, size from *_scratch_floats().
 *     The reference ignores it. */
#ifndef PDL_LAYERS_H
#define PDL_LAYERS_H
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

PDL_DECLARE_LAYERS(ref_)
PDL_DECLARE_LAYERS(cpu_)

/* The parameter update of optim_step's sgd and msgd (optim/optim.h) on n parameters, element by
 * element: gi = g + wd w (when wd != 0); then v = mu v - lr gi, w += v (v != NULL) or w -= lr gi
 * (v == NULL, plain SGD); g = 0. optim_step calls cpu_sgd_step, and the expressions are written
 * once here (-std=c11: no FMA contraction), so every caller rounds alike. net_backward_step
 * (core/model.h) runs it on each layer's parameters as soon as their gradient is complete. */
void cpu_sgd_step(float *w, float *g, float *v, size_t n, float lr, float mu, float wd);
void ref_sgd_step(float *w, float *g, float *v, size_t n, float lr, float mu, float wd);
/* fc backward with that update fused: what cpu_fc_backward(din, dw, db, dout, in, w, B, M, N)
 * followed by cpu_sgd_step on (w, dw, vw, N*M) and (b, db, vb, N) gives, bit for bit (vw and vb
 * NULL together: plain SGD). dw and db must be zero on entry; they are zero on return. At batch 1
 * it is one pass over the rows of w that never touches dw: din takes each block of 4 rows before
 * the rows are updated, so a weight is read and written once (w, and v with momentum), where the
 * unfused pair streams w twice and dw three times; several threads split the columns. Other
 * batches run the unfused pair. */
void cpu_fc_backward_sgd(float *din, float *w, float *b, float *dw, float *db, float *vw, float *vb,
                         const float *dout, const float *in, int B, int M, int N, float lr, float mu, float wd);

/* Scratch (floats) that cpu_conv_forward/backward need for these shapes when called with up to
 * nthreads OpenMP threads. */
size_t cpu_conv_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads);

/* The keep of a conv layer: floats (0: none) that its fused forward (cpu_conv_act_forward,
 * cpu_conv_act_pool_forward) may leave for its backward, so that the backward does not redo what
 * the forward did (on the Winograd path: the transformed weights, and at batch 1 the transformed
 * input). The fused entries take keep as their last argument: NULL (compute everything), or
 * this many floats owned by the layer. A backward given a keep must follow the forward that
 * filled it, on the same layer, batch, input and weights, with nothing else writing it in
 * between (net_forward then net_backward on one workspace is that); it only reads it. Results
 * are bit-identical with and without a keep. */
size_t cpu_conv_keep_floats(int Ci, int H, int W, int Co, int k, int pad);

/* CPU-only fused conv + activation (a conv followed by leaky ReLU/ReLU with this slope), each
 * bit-identical to the unfused pair but without a separate pass over the activations:
 *   cpu_conv_act_forward  = cpu_conv_forward, then cpu_act_forward(out, out, ..., slope);
 *   cpu_conv_act_backward = cpu_act_backward(g, dout, out, ..., slope), then
 *                           cpu_conv_backward(din, dw, db, g, in, ...) without storing g;
 *                           dout/out are the gradient w.r.t. and the value of the activation output
 *                           [B][Co][Ho][Wo]; dout is not modified.
 * Scratch as cpu_conv_scratch_floats. */
void cpu_conv_act_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                          int Co, int k, int pad, float slope, float *scratch, float *keep);
void cpu_conv_act_backward(float *din, float *dw, float *db, const float *dout, const float *out, const float *in,
                           const float *w, int B, int Ci, int H, int W, int Co, int k, int pad, float slope,
                           float *scratch, const float *keep);

/* CPU-only fused conv (3x3) + activation + 2x2 max-pool, for the shapes where
 * cpu_conv_act_pool_fusable() is 1 (the conv takes Winograd, whose output tiles hold whole pool
 * windows: one per F(2x2,3x3) tile, 2x2 per F(4x4,3x3) tile):
 *   cpu_conv_act_pool_forward  = cpu_conv_act_forward, then cpu_maxpool_forward(out, ..., 2, ceil_mode),
 *                                without storing the full-size activation: out is the pooled
 *                                [B][Co][Hp][Wp]; idx [B][Co][Hp][Wp] receives each window's argmax
 *                                (row-major position 0..3, the first maximum as in the reference);
 *   cpu_conv_act_pool_backward = cpu_maxpool_backward, cpu_act_backward and cpu_conv_backward, from the
 *                                pooled gradient dout, the pooled out and idx of the forward; conv
 *                                outputs no pool window covers (floor mode) get gradient 0, as there.
 * Results equal the unfused sequence up to float rounding (db sums only the windows' maxima;
 * everything else is the same arithmetic); scratch as cpu_conv_scratch_floats(k = 3), keep as
 * cpu_conv_keep_floats(k = 3). */
int cpu_conv_act_pool_fusable(int B, int Ci, int H, int W, int Co, int k, int pad, int pool_s);
void cpu_conv_act_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B, int Ci,
                               int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch, float *keep);
void cpu_conv_act_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out,
                                const uint8_t *idx, const float *in, const float *w, int B, int Ci, int H, int W,
                                int Co, int pad, float slope, int ceil_mode, float *scratch, const float *keep);

/* Pick OpenMP thread count used by cpu_* kernels in the calling thread (per-thread ICV). */
void cpu_set_threads(int nthreads);
int cpu_get_threads(void);

#endif
