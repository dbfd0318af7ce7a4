/* kernels.h — the backend contract: kernels_t, the table of one kernel backend's entry points
 * (every layer's forward and backward, the optimizers' updates, the optional fused layers, scratch
 * sizes, threads and workspace memory), and kernels_for, the registry that hands out a table by
 * device. It sits below both src/core and kernels/ (ci/layering.py): the core calls a backend only
 * through a table, each backend fills one in, and neither includes the other's headers. */
#ifndef PDL_CONTRACT_KERNELS_H
#define PDL_CONTRACT_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include "contract/layers.h"

/* Kernel implementation table: the only door from the core (model.c, optim.c) into a backend
 * (kernels_cpu in kernels/cpu/cpu_table.c, kernels_ref in reference/ref_table.c, kernels_cuda in
 * kernels/cuda/cuda_table.c). The core never names a backend: it calls these entries, and asks the
 * table for scratch sizes and workspace memory. Signatures of the layer and update entries are
 * those of contract/layers.h. */
typedef struct {
  const char *name;
  /* every layer (required) */
  void (*conv_forward)(float *, const float *, const float *, const float *, int, int, int, int, int, int, int, float *);
  void (*conv_backward)(float *, float *, float *, const float *, const float *, const float *, int, int, int, int, int, int, int, float *);
  void (*fc_forward)(float *, const float *, const float *, const float *, int, int, int);
  void (*fc_backward)(float *, float *, float *, const float *, const float *, const float *, int, int, int);
  void (*maxpool_forward)(float *, const float *, int, int, int, int, int, int);
  void (*maxpool_backward)(float *, const float *, const float *, const float *, int, int, int, int, int, int);
  void (*act_forward)(float *, const float *, size_t, float);
  void (*act_backward)(float *, const float *, const float *, size_t, float);
  void (*dropout_forward)(float *, const float *, const float *, size_t);
  void (*dropout_backward)(float *, const float *, const float *, size_t);
  double (*softmax_xent_forward)(float *, const float *, const int *, int, int);
  void (*softmax_xent_backward)(float *, const float *, const int *, int, int, float);
  /* fused layers (optional: NULL means the backend has none, and model.c runs the layers one by
   * one; a backend's fused entry must give what the unfused sequence gives): conv + leaky ReLU,
   * and conv + leaky ReLU + 2x2 max-pool where conv_act_pool_fusable says so for the shapes.
   * conv_act_backward may leave the gradient at the activation's input in dout (CUDA's does), as
   * the unfused sequence's in-place activation backward does: model.c passes that very buffer */
  void (*conv_act_forward)(float *, const float *, const float *, const float *, int, int, int, int, int, int, int,
                           float, float *, float *);
  void (*conv_act_backward)(float *, float *, float *, const float *, const float *, const float *, const float *, int,
                            int, int, int, int, int, int, float, float *, const float *);
  int (*conv_act_pool_fusable)(int, int, int, int, int, int, int, int);
  void (*conv_act_pool_forward)(float *, uint8_t *, const float *, const float *, const float *, int, int, int, int,
                                int, int, float, int, float *, float *);
  void (*conv_act_pool_backward)(float *, float *, float *, const float *, const float *, const uint8_t *,
                                 const float *, const float *, int, int, int, int, int, int, float, int, float *,
                                 const float *);
  /* optional with the fused conv entries: the floats of a conv layer's keep, their last argument
   * (cpu_conv_keep_floats; NULL: the fused entries are always given keep NULL) */
  size_t (*conv_keep_floats)(int Ci, int H, int W, int Co, int k, int pad);
  /* the optimizers' updates (contract/layers.h, PDL_DECLARE_UPDATES; required): sgd_step is also
   * what net_backward_step fuses into the backward pass, and fc_backward_sgd (optional) an fc
   * backward with it fused in, as cpu_fc_backward_sgd (NULL: fc_backward, then sgd_step on the
   * layer's weights and bias) */
  void (*sgd_step)(float *w, float *g, float *v, size_t n, float lr, float mu, float wd);
  void (*adam_step)(float *w, float *g, float *m, float *v, size_t n, float a, float b1, float b2, float eps,
                    float wd);
  void (*nag_point)(float *what, const float *w, const float *m, size_t n, float mu);
  void (*avg_step)(float *z, const float *w, size_t n, float r, int ema);
  void (*fc_backward_sgd)(float *, float *, float *, float *, float *, float *, float *, const float *, const float *,
                          int, int, int, float, float, float);
  /* 1: net_backward_step applies sgd_step once, to all the parameters after the backward pass,
   * instead of to each layer after its backward (0, the CPU backends: a layer's weights are
   * updated while still in cache). Bit-identical either way: a layer's backward reads its weights
   * before its update, sgd_step is elementwise, and the parameters are one array. For a GPU one
   * launch instead of two per layer (issue 35 D). */
  int update_once;
  /* resident batches (optional, issue 35 B/F; NULL: model.c does it on the host, which needs
   * host_memory): the batch gathered from a data set kept in workspace memory, and the softmax
   * with its labels in workspace memory and its loss left there, so that a step neither uploads
   * nor waits (model.h: net_gather, net_forward with y == NULL).
   * gather: dst[b][0..words) = src[idx[b]][0..words) for b < B, 4-byte words, every pointer
   *   workspace memory (idx too).
   * softmax_xent_forward_acc: softmax_xent_forward with labels y in workspace memory, the loss not
   *   returned: acc[0] += the batch's loss sum (the value softmax_xent_forward returns, the same
   *   bits), acc[1] += rows whose first largest probability is at their label, acc[2] += labels
   *   outside [0, N); acc: 3 doubles of workspace memory; no wait.
   * softmax_xent_backward_ws: softmax_xent_backward with labels y in workspace memory. */
  void (*gather)(void *dst, const void *src, const int *idx, int B, size_t words);
  void (*softmax_xent_forward_acc)(float *probs, const float *logits, const int *y, int B, int N, double *acc);
  void (*softmax_xent_backward_ws)(float *dlogits, const float *probs, const int *y, int B, int N, float scale);
  /* dense linear algebra on workspace memory (optional; NULL: none; issue 35 G: K-FAC's factors,
   * inversions and preconditioning where the net trains, kfac/kfac_dev.c), queued like a kernel:
   * gemm: C = alpha op(A) op(B) + beta C, row-major [M][N], op(X) = X stored transposed when tX,
   *   row strides lda, ldb, ldc as stored (a BLAS SGEMM in FP32: no TF32, no reduced precision).
   * im2col: col[(c*k + kh)*k + kw][b*T + t] = in[b][c][ho + kh - pad][wo + kw - pad] (0 outside),
   *   t = ho*Wo + wo < T = Ho*Wo, Ho = H + 2 pad - k + 1, for the B images of in (NCHW).
   * copy2d: dst[r*ldd + c] = src[r*lds + c] for r < rows, c < cols (lds 0: every row is src's).
   * axpby: y[i*incy] = a y[i*incy] + b x[i*incx] for i < n, each product and the sum rounded on
   *   its own; a == 0 (b == 0) leaves that term out and does not read y (x).
   * spd_inverse: contract/inv.h's inversion (row-major SPD a, the full inverse, its info) on
   *   workspace memory; it returns the info, so it waits for the queued work. */
  void (*gemm)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc);
  void (*im2col)(float *col, const float *in, int B, int C, int H, int W, int k, int pad);
  void (*copy2d)(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols);
  void (*axpby)(float *y, size_t incy, const float *x, size_t incx, size_t n, float a, float b);
  int (*spd_inverse)(float *inv, const float *a, int n);
  /* scratch floats the conv entries (fused ones included) need for these shapes on nthreads */
  size_t (*conv_scratch_floats)(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads);
  /* the kernels' thread count for the calling thread (NULL: the backend has no thread setting) */
  void (*set_threads)(int nthreads);
  /* wait for the calling thread's queued kernel work (an asynchronous backend; NULL: its calls
   * are done when they return). model.c calls it around each layer only when profiling
   * (workspace_t.prof), so that a layer's time is its own. */
  void (*sync)(void);
  /* the calling thread's queue as an opaque handle (a cudaStream_t), so that a collective on
   * workspace memory (NCCL) is ordered with the kernels; NULL: a host backend, nothing queued */
  void *(*stream)(void);
  /* CUDA graphs (optional; NULL: none): graph_begin records the calling thread's queued work
   * instead of running it, graph_end returns it as an executable graph, graph_launch queues one
   * replay, graph_free frees it. A recorded call must not wait or upload. */
  void (*graph_begin)(void);
  void *(*graph_end)(void);
  void (*graph_launch)(void *graph);
  void (*graph_free)(void *graph);
  /* per-step scalars for graphs of steps whose update takes one that changes every step (optional,
   * NULL: none; Adam's a, ASGD's rate): scalars_set queues the write of n <= 64 floats to the
   * calling thread's slots (before a replay, not while recording); after scalar_slot(j) the
   * thread's adam_step and avg_step read their scalar from slot j, not from their argument, until
   * scalar_slot(-1) */
  void (*scalars_set)(const float *v, int n);
  void (*scalar_slot)(int j);
  /* changes when the backend replaces a buffer of its own that queued work addresses (a grown
   * scratch or library workspace): graphs captured before are stale (NULL: never) */
  long (*buffers_epoch)(void);
  /* free workspace memory in bytes right now (a device's; NULL: host memory, not asked) */
  size_t (*mem_free)(void);
  /* a device backend's own figures and knobs (optional; NULL: none), for pdl speed and pdl inv, so
   * that no command calls a backend by name: counters, what the calling thread has asked of the
   * device so far ([0] queued operations, [1] host waits, [2] bytes uploaded, [3] bytes downloaded);
   * conv_impl, the convolution path ("auto", "cudnn", "im2col", ...); conv_algos, the library's
   * algorithm per convolution shape into buf ("" if none; returns buf); loss_defer(1): the softmax
   * forward leaves its loss in workspace memory (for a captured step; loss_last waits and returns
   * the last one); lr_resident(1): captured sgd/msgd updates read their lr from a slot lr_set
   * writes before each replay; thread_release frees the calling thread's context. */
  void (*counters)(double out[4]);
  const char *(*conv_impl)(void);
  const char *(*conv_algos)(char *buf, size_t len);
  void (*loss_defer)(int on);
  double (*loss_last)(void);
  void (*lr_resident)(int on);
  void (*lr_set)(float lr);
  void (*thread_release)(void);
  /* makes device `index` the calling thread's (a role started on another thread of a node whose
   * device the registry opened; its context is built there on first use); NULL: no devices */
  void (*bind)(int index);
  /* workspace memory: alloc returns zero-filled memory of `bytes` (never NULL), release frees it;
   * upload copies host memory into workspace memory, download the reverse, copy workspace memory
   * into workspace memory (queued like a kernel). host_memory = 1 says
   * workspace memory is host memory (model.c may then read it directly, e.g. the probabilities
   * for the argmax); a device backend sets 0 and model.c goes through download/upload. */
  void *(*alloc)(size_t bytes);
  void (*release)(void *p);
  void (*upload)(void *dst, const void *src, size_t bytes);
  void (*download)(void *dst, const void *src, size_t bytes);
  void (*copy)(void *dst, const void *src, size_t bytes);
  int host_memory;
  /* the layers of the papers' full-size nets (contract/layers.h, PDL_DECLARE_FULLNET_LAYERS;
   * optional: NULL, and model.c's ws_init refuses a net with such a layer on this backend, naming
   * it): strided conv (with its scratch floats, as conv_scratch_floats), max-pool with its own
   * window and stride, batch normalization, global average pooling. Appended here, at the end. */
  void (*conv_s_forward)(float *, const float *, const float *, const float *, int, int, int, int, int, int, int, int,
                         float *);
  void (*conv_s_backward)(float *, float *, float *, const float *, const float *, const float *, int, int, int, int,
                          int, int, int, int, float *);
  size_t (*conv_s_scratch_floats)(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads);
  void (*pool_forward)(float *, const float *, int, int, int, int, int, int, int);
  void (*pool_backward)(float *, const float *, const float *, const float *, int, int, int, int, int, int, int);
  void (*bn_forward)(float *, const float *, const float *, const float *, float *, float *, float *, int, int, int, int,
                     float, float);
  void (*bn_backward)(float *, float *, float *, const float *, const float *, const float *, const float *, int, int,
                      int);
  void (*gap_forward)(float *, const float *, int, int, int);
  void (*gap_backward)(float *, const float *, int, int, int);
  /* A timing-only backend (kernels/phantom: --device phantom, the sim runtime only) does no
   * arithmetic: each layer entry adds its cost in flops to a per-thread account instead, and
   * charged() returns what the calling thread's entries added since its last call (and starts a new
   * account). NULL for a backend that computes. */
  double (*charged)(void);
} kernels_t;
/* The layer and update entries of a backend whose functions follow contract/layers.h's naming
 * (P = cpu_, ref_), and
 * the host-memory entries: for designated initializers of a kernels_t. */
#define KERNELS_LAYERS(P) \
  .conv_forward = P##conv_forward, .conv_backward = P##conv_backward, .fc_forward = P##fc_forward, \
  .fc_backward = P##fc_backward, .maxpool_forward = P##maxpool_forward, .maxpool_backward = P##maxpool_backward, \
  .act_forward = P##act_forward, .act_backward = P##act_backward, .dropout_forward = P##dropout_forward, \
  .dropout_backward = P##dropout_backward, .softmax_xent_forward = P##softmax_xent_forward, \
  .softmax_xent_backward = P##softmax_xent_backward, .sgd_step = P##sgd_step, .adam_step = P##adam_step, \
  .nag_point = P##nag_point, .avg_step = P##avg_step
/* The full-size nets' layers of a backend named like that (P = cpu_, ref_), without the scratch size. */
#define KERNELS_FULLNET_LAYERS(P) \
  .conv_s_forward = P##conv_s_forward, .conv_s_backward = P##conv_s_backward, .pool_forward = P##pool_forward, \
  .pool_backward = P##pool_backward, .bn_forward = P##bn_forward, .bn_backward = P##bn_backward, \
  .gap_forward = P##gap_forward, .gap_backward = P##gap_backward
/* (host_alloc, host_release, host_copy: util/util.h, included where the table is defined) */
#define KERNELS_HOST_MEMORY \
  .alloc = host_alloc, .release = host_release, .upload = host_copy, .download = host_copy, .copy = host_copy, \
  .host_memory = 1
/* ---- the backend registry (src/core/backend.c), the one place outside the tests that names a
 * backend; everything else asks it, by a parsed --device value. */
/* A --device value, parsed once (kernels_device_parse): the backend's registered name ("cpu",
 * "cuda", ...), the index of one of its devices (-1: not given; a run then takes its local rank
 * modulo the backend's devices) and a backend's own text after ':' that is not an index (e.g. a
 * model name; "" if none). */
typedef struct { char backend[16]; int index; char suffix[48]; } device_spec_t;
/* Parses "NAME", "NAME:N" or "NAME:TEXT" into d for a backend the registry holds (a build without
 * it still parses its name; opening it dies saying so). Returns 0, or -1 with a one-line reason in
 * why (the accepted forms, kernels_device_forms). NULL or "" parses as the default, "cpu". */
int kernels_device_parse(device_spec_t *d, const char *v, char *why, size_t len);
/* The accepted --device forms, e.g. "cpu | cuda[:N]", for help texts and errors. */
const char *kernels_device_forms(void);
/* 1 if d names a backend whose workspace memory is host memory and which has no devices (the
 * default, cpu; d NULL too). */
int kernels_device_is_host(const device_spec_t *d);
/* The device of d a run takes: d's index if given, else local_rank modulo the backend's devices
 * (the rank -> device mapping; -1 for a host backend). Dies naming flag when the backend has no
 * device (and why) or the index is beyond its devices. */
int kernels_device_index(const device_spec_t *d, int local_rank, const char *flag);
/* The table of d's backend on device `index` (kernels_device_index's) for the calling thread, after
 * checking it (else dies naming flag, e.g. "--device", and why; a build without the backend dies
 * saying so); d NULL: the CPU's (in a timing-only run, kernels_timing_on's). desc (may be NULL) gets a one-line description. A device backend
 * keeps one context per device and thread for the run (the tables' contexts are persistent). */
const kernels_t *kernels_for(const device_spec_t *d, int index, const char *flag, char *desc, size_t len);
/* 1 if d names a timing-only backend (kernels_t.charged: no arithmetic, the sim runtime only). */
int kernels_device_timing(const device_spec_t *d);
/* A timing-only run (the sim runtime's, algo.c) makes d's timing-only backend the process's default
 * table: from then on kernels_for(NULL, ...) hands out d's table (every replica, optimizer and
 * workspace of the run, none of them computing), and the backend may be opened at all (before, opening
 * it dies with exit 2 naming flag: it has nothing to run but a simulation). Returns the table. */
const kernels_t *kernels_timing_on(const device_spec_t *d, const char *flag);
/* The devices backend `name` can hand out now (0: none, with the reason in why; a host backend: 0,
 * why ""), for commands that time a device where one exists (pdl inv). */
int kernels_devices(const char *name, char *why, size_t len);
/* A failed call of any device backend ends the process through handler(msg) (which must not
 * return) instead of exit(1): the MPI runtime's names the rank and aborts every rank. NULL: back to
 * the default. */
void kernels_set_fail_handler(void (*handler)(const char *msg));
#endif
