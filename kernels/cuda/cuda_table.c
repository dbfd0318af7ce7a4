/* cuda_table.c — kernels_cuda (cuda_table.h): cuda_layers.h's entries in the kernel table (layers
 * and the optimizers' updates), device memory for the workspace, and the labels uploaded for the
 * softmax. C, so that it can use contract/kernels.h's designated-initializer macros; built where nvcc is (Makefile: LIB_C). */
#ifdef PDL_HAVE_CUDA
#include "kernels/cuda/cuda_table.h"
#include "kernels/cuda/cuda_layers.h"
#ifdef PDL_HAVE_CUSOLVER
#include "kernels/cuda/cuda_inv.h"
static int cu_spd_inverse(float *inv, const float *a, int n) { return cuda_spd_inverse(inv, a, n, NULL); }
#endif
#include "util/util.h"
#include <stdio.h>
#include "util/env.h"
#include <stdlib.h>
#include <string.h>

/* The labels, on the device: one buffer per host thread, grown as needed (model.c passes host
 * labels; cuda_softmax_xent_* read device ones). The forward and the backward of a step pass the
 * same labels, so a host copy of the last upload lets the backward skip its copy (each upload
 * waits for the thread's queued work). */
static _Thread_local int *t_labels, *t_labels_host;
static _Thread_local size_t t_labels_n;
static _Thread_local int t_labels_b; /* labels in the device buffer now (0: none) */
static const int *device_labels(const int *y, int B) {
  if ((size_t)B > t_labels_n) {
    cuda_free(t_labels);
    xfree(t_labels_host);
    t_labels_n = B > 1024 ? (size_t)B : 1024;
    t_labels = cuda_alloc_ints(t_labels_n);
    t_labels_host = xmalloc(t_labels_n * sizeof(int));
    t_labels_b = 0;
  }
  if (B == t_labels_b && !memcmp(y, t_labels_host, (size_t)B * sizeof(int))) return t_labels;
  cuda_upload_ints(t_labels, y, (size_t)B);
  memcpy(t_labels_host, y, (size_t)B * sizeof(int));
  t_labels_b = B;
  return t_labels;
}
static double cu_softmax_xent_forward(float *probs, const float *logits, const int *y, int B, int N) {
  return cuda_softmax_xent_forward(probs, logits, device_labels(y, B), B, N);
}
static void cu_softmax_xent_backward(float *dlogits, const float *probs, const int *y, int B, int N, float scale) {
  cuda_softmax_xent_backward(dlogits, probs, device_labels(y, B), B, N, scale);
}

/* Workspace memory: device floats, zero-filled (the memset is queued before any later use). */
static void *cu_alloc(size_t bytes) {
  const size_t n = (bytes + sizeof(float) - 1) / sizeof(float);
  float *p = cuda_alloc_floats(n ? n : 1);
  cuda_zero_floats(p, n ? n : 1);
  return p;
}
static void cu_release(void *p) { cuda_free(p); }
static void cu_copy(void *dst, const void *src, size_t bytes) {
  SHAPE_ASSERT(bytes % sizeof(float) == 0);
  cuda_copy_floats(dst, src, bytes / sizeof(float));
}
static void cu_upload(void *dst, const void *src, size_t bytes) {
  SHAPE_ASSERT(bytes % sizeof(float) == 0);
  cuda_upload(dst, src, bytes / sizeof(float));
}
static void cu_download(void *dst, const void *src, size_t bytes) {
  SHAPE_ASSERT(bytes % sizeof(float) == 0);
  cuda_download(dst, src, bytes / sizeof(float));
}

static void cu_counters(double out[4]) {
  cuda_counters_t c;
  cuda_counters_get(&c);
  out[0] = (double)c.ops; out[1] = (double)c.syncs; out[2] = (double)c.h2d_bytes; out[3] = (double)c.d2h_bytes;
}

void cuda_kernels_fail_handler(void (*handler)(const char *msg)) { cuda_set_fail_handler(handler); }

int cuda_kernels_devices(char *why, size_t len) {
  const int n = cuda_device_count();
  if (why && len) snprintf(why, len, "%s", n > 0 ? "" : cuda_no_device_reason());
  return n;
}

const kernels_t *cuda_kernels_on(int dev, const char *flag, char *desc, size_t len) {
  const int nd = cuda_device_count();
  if (nd <= 0) die_usage("%s: no CUDA device found (%s)", flag, cuda_no_device_reason());   /* exit 2, as --coll nccl */
  if (dev < 0 || dev >= nd) die("%s: this machine has %d CUDA device(s) (0..%d)", flag, nd, nd - 1);
  const char *impl = env_get("PDL_CUDA_CONV");
  if (impl && *impl && cuda_conv_set_impl(impl) != 0)
    die("PDL_CUDA_CONV=%s: the GPU convolutions are 'auto' (the default where built with cuDNN: the faster of the two per "
        "shape), 'cudnn' or 'im2col'%s", impl,
#ifdef PDL_HAVE_CUDNN
        ""
#else
        " (this pdl was built without cuDNN: im2col only)"
#endif
    );
  cuda_set_device(dev);
  cuda_describe_device(dev, desc, len);
  json_meta_set_gpu(desc);
  return &kernels_cuda;
}

const kernels_t kernels_cuda = {
  .name = "cuda",
  .conv_forward = cuda_conv_forward, .conv_backward = cuda_conv_backward,
  .fc_forward = cuda_fc_forward, .fc_backward = cuda_fc_backward,
  .maxpool_forward = cuda_maxpool_forward, .maxpool_backward = cuda_maxpool_backward,
  .act_forward = cuda_act_forward, .act_backward = cuda_act_backward,
  .dropout_forward = cuda_dropout_forward, .dropout_backward = cuda_dropout_backward,
  .softmax_xent_forward = cu_softmax_xent_forward, .softmax_xent_backward = cu_softmax_xent_backward,
  .sgd_step = cuda_sgd_step, .adam_step = cuda_adam_step, .nag_point = cuda_nag_point, .avg_step = cuda_avg_step,
  .conv_act_forward = cuda_conv_act_forward, .conv_act_backward = cuda_conv_act_backward,
  .conv_act_pool_fusable = cuda_conv_act_pool_fusable,
  .conv_act_pool_forward = cuda_conv_act_pool_forward, .conv_act_pool_backward = cuda_conv_act_pool_backward,
  .gather = cuda_gather_words, .softmax_xent_forward_acc = cuda_softmax_xent_acc,
  .softmax_xent_backward_ws = cuda_softmax_xent_backward,   /* its labels are device memory */
  .conv_scratch_floats = cuda_conv_scratch_floats,
  .sync = cuda_sync, .stream = cuda_current_stream, .mem_free = cuda_mem_free,
  .graph_begin = cuda_graph_begin, .graph_end = cuda_graph_end, .graph_launch = cuda_graph_launch,
  .graph_free = cuda_graph_free, .buffers_epoch = cuda_buffers_epoch,
  .scalars_set = cuda_scalars_set, .scalar_slot = cuda_scalar_slot,
  .counters = cu_counters, .conv_impl = cuda_conv_impl, .conv_algos = cuda_conv_algos,
  .loss_defer = cuda_loss_defer, .loss_last = cuda_loss_last, .lr_resident = cuda_lr_resident, .lr_set = cuda_lr_set,
  .thread_release = cuda_thread_release, .bind = cuda_set_device,
  .alloc = cu_alloc, .release = cu_release, .upload = cu_upload, .download = cu_download, .copy = cu_copy,
  .host_memory = 0,
  .update_once = 1,   /* one update launch per step, not two per layer (issue 35 D) */
  .gemm = cuda_gemm, .im2col = cuda_im2col_batch, .copy2d = cuda_copy2d, .axpby = cuda_axpby,
#ifdef PDL_HAVE_CUSOLVER
  .spd_inverse = cu_spd_inverse,   /* cuSOLVER potrf + potri (cuda_inv.h) */
#endif
  /* the full-size nets' layers */
  .conv_s_forward = cuda_conv_s_forward, .conv_s_backward = cuda_conv_s_backward,
  .conv_s_scratch_floats = cuda_conv_s_scratch_floats, .pool_forward = cuda_pool_forward, .pool_backward = cuda_pool_backward, .bn_forward = cuda_bn_forward,
  .bn_backward = cuda_bn_backward, .gap_forward = cuda_gap_forward, .gap_backward = cuda_gap_backward,
};
#else
typedef int pdl_cuda_table_empty; /* ISO C: no empty translation unit */
#endif
