/* cpu_layers.h — the fast CPU backend's entry points (kernels/cpu/): the layer, update and
 * inversion contracts instantiated with cpu_ (contract/layers.h, contract/inv.h), the table
 * kernels_cpu (cpu_table.c; the rest of the tree gets it from kernels_for), and what only this
 * backend has: the fc backward with the update fused, the fused conv kernels, the conv scratch and
 * keep sizes, the inversion's scratch and the OpenMP thread count. Internal helpers of the
 * kernels/cpu files are in cpu.h. */
#ifndef PDL_KERNELS_CPU_LAYERS_H
#define PDL_KERNELS_CPU_LAYERS_H
#include <stddef.h>
#include <stdint.h>
#include "contract/inv.h"
#include "contract/kernels.h"
#include "contract/layers.h"

PDL_DECLARE_LAYERS(cpu_)
/* the full-size nets' layers (cpu_fullnet.c) and the strided conv's scratch floats for nthreads */
PDL_DECLARE_FULLNET_LAYERS(cpu_)
size_t cpu_conv_s_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads);
/* optim_step's updates (contract/layers.h); the expressions are those of the contract, written
 * once in cpu_elem.c (-std=c11: no FMA contraction), so every caller rounds alike. */
PDL_DECLARE_UPDATES(cpu_)
PDL_DECLARE_INV(cpu_)
/* Scratch (floats) cpu_spd_inverse needs for order n, for any thread count. */
size_t cpu_spd_inverse_scratch_floats(int n);

extern const kernels_t kernels_cpu;
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
