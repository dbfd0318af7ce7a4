/* phantom.c — kernels_phantom, the timing-only backend's table (phantom.h, issue 47): layer entries
 * that charge their cost to the calling thread's account and compute nothing, update entries that do
 * nothing, and workspace memory that is one shared scratch. */
#include "kernels/phantom/phantom.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "util/util.h"

/* ---- the account -------------------------------------------------------------------------------- */
static _Thread_local double account;   /* SimGrid runs every actor on one thread: roles read it at once */
static double ph_charged(void) { double a = account; account = 0; return a; }

/* ---- layers: their flops as net_t.flops_train counts them (2 per multiply-add; conv and fc only;
 * the backward 2 for the weight gradient and 2 more for the input gradient, which the first layer,
 * din NULL, does not get), from the shapes contract/layers.h's entries are called with --------------- */
static void ph_conv_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                            int Co, int k, int pad, float *scratch) {
  (void)out; (void)in; (void)w; (void)b; (void)scratch;
  const double Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  account += 2 * ((double)B * Co * Ho * Wo * Ci * k * k);
}
static void ph_conv_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                             int Ci, int H, int W, int Co, int k, int pad, float *scratch) {
  (void)dw; (void)db; (void)dout; (void)in; (void)w; (void)scratch;
  const double Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
  account += (din ? 4 : 2) * ((double)B * Co * Ho * Wo * Ci * k * k);
}
static void ph_fc_forward(float *out, const float *in, const float *w, const float *b, int B, int M, int N) {
  (void)out; (void)in; (void)w; (void)b;
  account += 2.0 * B * M * N;
}
static void ph_fc_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                           int M, int N) {
  (void)dw; (void)db; (void)dout; (void)in; (void)w;
  account += (din ? 4.0 : 2.0) * B * M * N;
}
/* Pooling, activations, dropout, softmax: no counted flops (model.c counts none for them). */
static void ph_maxpool_forward(float *out, const float *in, int B, int C, int H, int W, int s, int ceil_mode) {
  (void)out; (void)in; (void)B; (void)C; (void)H; (void)W; (void)s; (void)ceil_mode;
}
static void ph_maxpool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H,
                                int W, int s, int ceil_mode) {
  (void)din; (void)dout; (void)in; (void)out; (void)B; (void)C; (void)H; (void)W; (void)s; (void)ceil_mode;
}
static void ph_act_forward(float *out, const float *in, size_t n, float slope) { (void)out; (void)in; (void)n; (void)slope; }
static void ph_act_backward(float *din, const float *dout, const float *out, size_t n, float slope) {
  (void)din; (void)dout; (void)out; (void)n; (void)slope;
}
static void ph_dropout_forward(float *out, const float *in, const float *mask, size_t n) { (void)out; (void)in; (void)mask; (void)n; }
static void ph_dropout_backward(float *din, const float *dout, const float *mask, size_t n) {
  (void)din; (void)dout; (void)mask; (void)n;
}
static double ph_softmax_xent_forward(float *probs, const float *logits, const int *labels, int B, int N) {
  (void)probs; (void)logits; (void)labels; (void)B; (void)N;
  return 0.0;   /* no loss: a timing-only run has none (loop.c reports null) */
}
static void ph_softmax_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int N, float scale) {
  (void)dlogits; (void)probs; (void)labels; (void)B; (void)N; (void)scale;
}
/* The optimizers' updates: nothing (the node programs charge their vector work with rt->work). */
static void ph_sgd_step(float *w, float *g, float *v, size_t n, float lr, float mu, float wd) {
  (void)w; (void)g; (void)v; (void)n; (void)lr; (void)mu; (void)wd;
}
static void ph_adam_step(float *w, float *g, float *m, float *v, size_t n, float a, float b1, float b2, float eps, float wd) {
  (void)w; (void)g; (void)m; (void)v; (void)n; (void)a; (void)b1; (void)b2; (void)eps; (void)wd;
}
static void ph_nag_point(float *what, const float *w, const float *m, size_t n, float mu) {
  (void)what; (void)w; (void)m; (void)n; (void)mu;
}
static void ph_avg_step(float *z, const float *w, size_t n, float r, int ema) { (void)z; (void)w; (void)n; (void)r; (void)ema; }
static size_t ph_conv_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads) {
  (void)B; (void)Ci; (void)H; (void)W; (void)Co; (void)k; (void)pad; (void)nthreads;
  return 0;
}

/* ---- the full-size nets' layers (contract/layers.h, PDL_DECLARE_FULLNET_LAYERS), charged as
 * net_t.flops_train counts them: the strided conv as the conv at its output size, batch norm
 * PDL_BN_FLOPS_FWD / _BWD and global average pooling PDL_GAP_FLOPS per value each way, the max-pool
 * nothing. So vgg16-cifar10 (batch norm) and the strided ImageNet nets run timing-only. */
static void ph_conv_s_forward(float *out, const float *in, const float *w, const float *b, int B, int Ci, int H, int W,
                              int Co, int k, int pad, int st, float *scratch) {
  (void)out; (void)in; (void)w; (void)b; (void)scratch;
  const double Ho = (H + 2 * pad - k) / st + 1, Wo = (W + 2 * pad - k) / st + 1;
  account += 2 * ((double)B * Co * Ho * Wo * Ci * k * k);
}
static void ph_conv_s_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                               int B, int Ci, int H, int W, int Co, int k, int pad, int st, float *scratch) {
  (void)dw; (void)db; (void)dout; (void)in; (void)w; (void)scratch;
  const double Ho = (H + 2 * pad - k) / st + 1, Wo = (W + 2 * pad - k) / st + 1;
  account += (din ? 4 : 2) * ((double)B * Co * Ho * Wo * Ci * k * k);
}
static size_t ph_conv_s_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads) {
  (void)B; (void)Ci; (void)H; (void)W; (void)Co; (void)k; (void)pad; (void)st; (void)nthreads;
  return 0;
}
static void ph_pool_forward(float *out, const float *in, int B, int C, int H, int W, int k, int s, int ceil_mode) {
  (void)out; (void)in; (void)B; (void)C; (void)H; (void)W; (void)k; (void)s; (void)ceil_mode;
}
static void ph_pool_backward(float *din, const float *dout, const float *in, const float *out, int B, int C, int H,
                             int W, int k, int s, int ceil_mode) {
  (void)din; (void)dout; (void)in; (void)out; (void)B; (void)C; (void)H; (void)W; (void)k; (void)s; (void)ceil_mode;
}
static void ph_bn_forward(float *out, const float *in, const float *gamma, const float *beta, float *rmean, float *rvar,
                          float *save, int B, int C, int HW, int train, float momentum, float eps) {
  (void)out; (void)in; (void)gamma; (void)beta; (void)rmean; (void)rvar; (void)save; (void)train; (void)momentum; (void)eps;
  account += PDL_BN_FLOPS_FWD * B * C * HW;
}
static void ph_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                           const float *gamma, const float *save, int B, int C, int HW) {
  (void)din; (void)dgamma; (void)dbeta; (void)dout; (void)in; (void)gamma; (void)save;
  account += PDL_BN_FLOPS_BWD * B * C * HW;
}
static void ph_gap_forward(float *out, const float *in, int B, int C, int HW) {
  (void)out; (void)in;
  account += PDL_GAP_FLOPS * B * C * HW;
}
static void ph_gap_backward(float *din, const float *dout, int B, int C, int HW) {
  (void)din; (void)dout;
  account += PDL_GAP_FLOPS * B * C * HW;
}

/* ---- memory: one scratch for every buffer ---------------------------------------------------------
 * Every alloc returns the start of the newest mapping, grown (a new, larger mapping) when a request
 * is larger; older mappings stay, so a pointer handed out stays valid for its size. Nothing computes
 * in it; what the core itself writes there (dropout masks) lands in the same pages. The mapping is
 * MAP_NORESERVE: pages never written cost no memory, pages written once are shared by every buffer. */
static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static void *scratch;
static size_t scratch_cap;

static void *ph_alloc(size_t bytes) {
  pthread_mutex_lock(&mem_mu);
  if (bytes > scratch_cap || !scratch) {
    size_t c = scratch_cap ? scratch_cap : (size_t)1 << 20;
    while (c < bytes) c *= 2;
    void *p = mmap(NULL, c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) die("phantom backend: cannot map %zu bytes of address space for its scratch", c);
    scratch = p; scratch_cap = c;
  }
  void *r = scratch;
  pthread_mutex_unlock(&mem_mu);
  return r;
}
static void ph_release(void *p) { (void)p; }
static void ph_copy(void *dst, const void *src, size_t bytes) { (void)dst; (void)src; (void)bytes; }

const kernels_t kernels_phantom = {
  .name = "phantom", KERNELS_LAYERS(ph_), .conv_scratch_floats = ph_conv_scratch_floats,
  .conv_s_forward = ph_conv_s_forward, .conv_s_backward = ph_conv_s_backward,
  .conv_s_scratch_floats = ph_conv_s_scratch_floats, .pool_forward = ph_pool_forward, .pool_backward = ph_pool_backward,
  .bn_forward = ph_bn_forward, .bn_backward = ph_bn_backward, .gap_forward = ph_gap_forward, .gap_backward = ph_gap_backward,
  .alloc = ph_alloc, .release = ph_release, .upload = ph_copy, .download = ph_copy, .copy = ph_copy,
  .host_memory = 1, .charged = ph_charged,
};
