/* cuda_layers.h — the GPU path of the training core, callable from plain C.
 * cuda_* layer functions have exactly the signatures and conventions of contract/layers.h (NCHW float32,
 * param grads +=, din = and may be NULL, ...) but every tensor pointer is a DEVICE pointer (labels
 * too). They are asynchronous: work is queued on the calling thread's stream and the call returns
 * before the GPU is done, except cuda_softmax_xent_forward, which returns the loss and therefore
 * waits for its stream. Copy results to the host with cuda_download (which waits) or call cuda_sync.
 *
 * Threads: each host thread lazily gets its own context (a CUDA stream created with default flags,
 * so it is ordered with the legacy default stream, and a cuBLAS handle bound to it) on the device
 * current for that thread (cuda_set_device). Layer calls from one thread run in order; calls from
 * different threads run concurrently. cuda_thread_release frees the calling thread's context.
 *
 * Errors: every CUDA / cuBLAS call is checked; a failure prints the call, file, line and the error
 * string and exits 1. Set PDL_CUDA_SYNC=1 in the environment to synchronise after every kernel
 * launch, so an asynchronous fault is reported at the launch that caused it. */
#ifndef PDL_CUDA_LAYERS_H
#define PDL_CUDA_LAYERS_H
#include <stddef.h>
#include <stdint.h>
#include "contract/layers.h"

#ifdef __cplusplus
extern "C" {
#endif

PDL_DECLARE_LAYERS(cuda_)
/* The optimizers' updates of contract/layers.h on device arrays: the contract's expressions in its
 * order, each operation rounded on its own (__f*_rn: no contraction into fused multiply-adds), so
 * that given the same inputs they give the CPU's bits (cpu_*_step, kernels/cpu/cpu_elem.c). */
PDL_DECLARE_UPDATES(cuda_)
/* The full-size nets' layers (contract/layers.h, PDL_DECLARE_FULLNET_LAYERS): the strided conv (im2col +
 * cuBLAS or cuDNN with the stride in its descriptor, as cuda_conv_forward/backward chooses), max-pool
 * with its own window and stride, batch normalization, global average pooling. */
void cuda_conv_s_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                         int Co, int k, int pad, int st, float *scratch);
void cuda_conv_s_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                          int B, int Ci, int H, int W, int Co, int k, int pad, int st, float *scratch);
size_t cuda_conv_s_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads);
void cuda_pool_forward(float *out, const float *in, int B, int C, int H, int W, int k, int s, int ceil_mode);
void cuda_pool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H, int W,
                        int k, int s, int ceil_mode);
void cuda_bn_forward(float *out, const float *in, const float *gamma, const float *beta, float *rmean, float *rvar,
                     float *save, int B, int C, int HW, int train, float momentum, float eps);
void cuda_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in, const float *gamma,
                      const float *save, int B, int C, int HW);
void cuda_gap_forward(float *out, const float *in, int B, int C, int HW);
void cuda_gap_backward(float *din, const float *dout, int B, int C, int HW);

/* The fused conv + leaky ReLU of kernels_t (conv_act_forward/backward; issue 35 D): the bias and the
 * activation in one epilogue pass after the convolution; backward, the activation's gradient turned
 * into the pre-activation one by the bias gradient's kernel, in place in dout (which the unfused
 * sequence's in-place activation backward leaves there too: the caller's dout buffer is written),
 * then the convolution's backward. Bit for bit the unfused sequence's out, din, dw and db. keep is
 * unused (the table has no conv_keep_floats). */
void cuda_conv_act_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                           int Co, int k, int pad, float slope, float *scratch, float *keep);
void cuda_conv_act_backward(float *din, float *dw, float *db, const float *dout, const float *out, const float *in,
                            const float *w, int B, int Ci, int H, int W, int Co, int k, int pad, float slope,
                            float *scratch, const float *keep);

/* The fused conv (3x3) + leaky ReLU + 2x2 max-pool of kernels_t (conv_act_pool_*; issue 35 D):
 * forward, the fused conv + act into a full-size activation in scratch (after the convolution's own
 * scratch: cuda_conv_scratch_floats counts it for k = 3), then one kernel writes the pooled out and
 * each window's argmax, 2 bits, four to a byte of idx; backward, one kernel forms the gradient at
 * the activation's input from dout, out and idx (the pooled value is the activation at the argmax),
 * then the convolution's backward. Bit for bit cuda_conv_act_forward + cuda_maxpool_forward and
 * cuda_maxpool_backward + cuda_conv_act_backward, on either convolution path. keep is unused. */
int cuda_conv_act_pool_fusable(int B, int Ci, int H, int W, int Co, int k, int pad, int pool_s);
void cuda_conv_act_pool_forward(float *out, uint8_t *idx, const float *in, const float *w, const float *b, int B,
                                int Ci, int H, int W, int Co, int pad, float slope, int ceil_mode, float *scratch,
                                float *keep);
void cuda_conv_act_pool_backward(float *din, float *dw, float *db, const float *dout, const float *out,
                                 const uint8_t *idx, const float *in, const float *w, int B, int Ci, int H, int W,
                                 int Co, int pad, float slope, int ceil_mode, float *scratch, const float *keep);

/* Resident batches (kernels_t's gather and softmax_xent_forward_acc, contract/kernels.h; issue 35 B):
 * dst[b][0..words) = src[idx[b]][0..words) in 4-byte words (idx on the device); and the softmax of
 * cuda_softmax_xent_forward with its loss (the same bits) added to acc[0], the argmax hits to
 * acc[1] and labels outside [0, N) to acc[2] (acc: 3 device doubles), queued, no wait. */
void cuda_gather_words(void *dst, const void *src, const int *idx, int B, size_t words);
void cuda_softmax_xent_acc(float *probs, const float *logits, const int *labels, int B, int N, double *acc);

/* Dense linear algebra on device arrays (kernels_t's gemm, im2col, copy2d and axpby: contract/kernels.h
 * gives their meaning; issue 35 G, K-FAC's factors and preconditioning on the device), queued on
 * the calling thread's stream: a row-major cuBLAS SGEMM (FP32 math), im2col of B images into
 * col [C*k*k][B*Ho*Wo] (k_im2col's layout), a strided 2-D copy, and y = a y + b x with strides
 * (each product and the sum rounded on its own; a == 0 or b == 0 leaves that term out unread). */
void cuda_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc);
void cuda_im2col_batch(float *col, const float *in, int B, int C, int H, int W, int k, int pad);
void cuda_copy2d(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols);
void cuda_axpby(float *y, size_t incy, const float *x, size_t incx, size_t n, float a, float b);

/* Number of usable CUDA devices; 0 when cudaGetDeviceCount fails (no driver, driver too old for
 * this runtime, no device). cuda_no_device_reason() then says why ("" when devices exist). */
int cuda_device_count(void);
const char *cuda_no_device_reason(void);
/* A CUDA, cuBLAS or cuSOLVER call that fails ends the process. By default with the message
 * "pdl: CUDA failure in <call> at <file>:<line>: <error>" and exit(1); a handler set here gets
 * that message instead, and must not return (the MPI runtime sets one that names the rank and
 * calls MPI_Abort, so the other ranks end too instead of waiting for the watchdog). */
void cuda_set_fail_handler(void (*handler)(const char *msg));
/* Select the device for the calling thread (before its first layer call; a later switch makes the
 * thread's context be rebuilt on the new device). */
void cuda_set_device(int dev);
/* One line "name, sm_XY, N MiB" for device dev, for logs and results files. */
void cuda_describe_device(int dev, char *buf, size_t len);
/* Free memory on the calling thread's device, in bytes (cudaMemGetInfo). */
size_t cuda_mem_free(void);
/* Wait until all work queued by the calling thread is done. */
void cuda_sync(void);
/* Destroy the calling thread's stream and cuBLAS handle (after waiting for them). */
void cuda_thread_release(void);
/* The calling thread's cudaStream_t, as void * so plain C needs no CUDA header: enqueue other GPU
 * work (e.g. an NCCL all-reduce of the gradients) on it to order it after the layer kernels. */
void *cuda_current_stream(void);

/* What the calling thread has asked of the GPU since it started (or since cuda_counters_reset):
 * ops = kernel launches + library calls (a cuBLAS GEMM, a cuDNN convolution; not cuSOLVER's) +
 * memsets and device-to-device copies, each queued work item counted once where pdl queues it (a
 * library call may run several kernels of its own); syncs = times the host waited for the device
 * (an upload or download, a loss read back, cuda_sync); h2d/d2h = bytes copied each way. pdl speed
 * --device cuda reports them per training step. */
typedef struct { long ops, syncs; size_t h2d_bytes, d2h_bytes; } cuda_counters_t;
void cuda_counters_get(cuda_counters_t *out);
void cuda_counters_reset(void);

/* The convolution implementation of cuda_conv_forward/backward, for every thread: "auto" (the
 * default where pdl was built with cuDNN: for each shape, the forward and the backward each take
 * the faster of the two paths below, timed on the shape's first call), "cudnn" (cuDNN always:
 * strict FP32 (CUDNN_FMA_MATH, no TF32), deterministic algorithms only, the direct and GEMM-based
 * ones (no FFT or Winograd), each direction's chosen once per shape by cudnnFind*) or "im2col"
 * (im2col + cuBLAS SGEMM, the only one without cuDNN). Returns 0, or -1 for another name or a
 * cuDNN mode in a build without it. The environment variable PDL_CUDA_CONV sets it for pdl's
 * commands (cuda_kernels_on). */
int cuda_conv_set_impl(const char *name);
const char *cuda_conv_impl(void);
/* The algorithms cuDNN was given for each convolution shape so far, one "BxCixHxW->Co kK pP:
 * fwd=A bwd_data=B bwd_filter=C" entry per shape, and under "auto" one per timed choice ("...: auto
 * fwd = im2col (cuDNN 0.1 ms, im2col 0.05 ms)"), separated by "; " ("" if none); returns buf. */
const char *cuda_conv_algos(char *buf, size_t len);

/* CUDA graphs: cuda_graph_begin starts capturing the calling thread's stream (thread-local mode);
 * the layer and update calls that follow are recorded, not run, until cuda_graph_end, which
 * returns the instantiated graph; cuda_graph_launch queues one replay of it on the stream. A captured
 * call must not wait for the device: an upload or download during capture ends the process naming
 * it, and the softmax's loss must be deferred (cuda_loss_defer). Everything a step allocates
 * (cuDNN plans and workspace, scratch) must exist before capture: run the step once first. */
void cuda_graph_begin(void);
void *cuda_graph_end(void);
void cuda_graph_launch(void *graph);
void cuda_graph_free(void *graph);
/* Changes whenever the calling thread's context replaces a buffer its kernels address (its
 * scratch, grown for a larger batch; cuDNN's workspace, grown for a new shape): a graph captured
 * before the change would replay with the old, freed address and must be captured again. */
long cuda_buffers_epoch(void);
/* A learning rate a graph can change: after cuda_lr_resident(1), an sgd/msgd update captured by this
 * thread reads its learning rate from a device slot (not the value it was captured with), which
 * cuda_lr_set(lr) writes with one kernel queued before the next replay. Eager updates take their lr
 * argument as always. cuda_lr_resident(0) frees the slot. */
void cuda_lr_resident(int on);
void cuda_lr_set(float lr);
/* Per-step scalars of a captured chunk (kernels_t's scalars_set / scalar_slot; issue 35 E for Adam
 * and ASGD in pdl train): cuda_scalars_set queues one kernel writing n <= 64 floats to the calling
 * thread's slots; after cuda_scalar_slot(j) the thread's cuda_adam_step (its a) and cuda_avg_step
 * (its r) read slot j on the device instead of their argument, until cuda_scalar_slot(-1). The
 * value read is the float the eager call would pass, so replays give its bits. */
void cuda_scalars_set(const float *v, int n);
void cuda_scalar_slot(int j);
/* With on = 1, cuda_softmax_xent_forward leaves the loss on the device (returns NaN; no wait, no
 * label check: a step checked eagerly first) so that a step can be captured; cuda_loss_last then
 * waits and returns the last loss computed (the batch sum of -log p). */
void cuda_loss_defer(int on);
double cuda_loss_last(void);

/* Device memory. Allocation failures exit 1 with the size asked for; n == 0 returns NULL. */
float *cuda_alloc_floats(size_t n);
int *cuda_alloc_ints(size_t n);
void cuda_free(void *dev); /* NULL is fine */
/* Copies ordered after the calling thread's queued work; they return when the copy is done. */
void cuda_upload(float *dev, const float *host, size_t n);
void cuda_download(float *host, const float *dev, size_t n);
void cuda_upload_ints(int *dev, const int *host, size_t n);
void cuda_download_ints(int *host, const int *dev, size_t n);
/* dev[0..n) = 0, queued on the calling thread's stream (e.g. gradients before a step). */
void cuda_zero_floats(float *dev, size_t n);
/* dst[0..n) = src[0..n), device to device, queued on the calling thread's stream (no wait). */
void cuda_copy_floats(float *dst, const float *src, size_t n);

/* Device scratch (floats) that cuda_conv_forward/backward need for these shapes. Same parameters as
 * cpu_conv_scratch_floats so callers can select the implementation by pointer; nthreads is ignored.
 * The batch is processed in chunks so that the scratch stays under the cap below. */
size_t cuda_conv_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads);
/* Cap (floats) on conv scratch; default 1<<25 (128 MiB). Set it before sizing scratch buffers: the
 * chunking of conv calls follows the cap at the time of the call. At least one image is always
 * processed per chunk, so the scratch may exceed the cap for one huge image. */
void cuda_conv_set_scratch_cap(size_t floats);
size_t cuda_conv_get_scratch_cap(void);

#ifdef __cplusplus
}
#endif
#endif
