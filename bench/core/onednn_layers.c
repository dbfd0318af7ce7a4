/* bench/core/onednn_layers.c — oneDNN on the reference net's conv layers as a training step runs
 * them, one thread (issue 19: "if oneDNN beats us on a layer, take it"). Per layer and batch:
 * forward = conv + bias + leaky ReLU (+ 2x2 max pool with its workspace), backward = pool,
 * activation, data (not for the first layer, whose input needs no gradient), weights + bias; each
 * primitive the median of 15 timed runs after 3 warm-ups, in ms. The activation both as the
 * conv's post-op and as its own in-place pass (oneDNN's Winograd takes no post-ops). The
 * algorithm is oneDNN's choice (convolution_auto). Twice: in the layouts oneDNN asks for (format
 * any: nChw16c / nChw8c) plus every reorder a drop-in layer needs at its edges in a training step
 * (weights included: they change every step), and in ours (nchw, oihw), where it needs none.
 * Compare with pdl speed --profile --update separate (our layers without the fused update).
 * Build and run (libdnnl-dev; ONEDNN_MAX_CPU_ISA=AVX2 for its AVX2 kernels):
 *   gcc -O2 bench/core/onednn_layers.c -o /tmp/onednn_layers -ldnnl
 *   OMP_NUM_THREADS=1 /tmp/onednn_layers
 * Results and the decision: docs/DESIGN.md ("oneDNN"). */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { dnnl_status_t s_ = (x); if (s_ != dnnl_success) { \
  fprintf(stderr, "onednn_layers: %s failed (status %d)\n", #x, (int)s_); exit(1); } } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static dnnl_engine_t eng;
static dnnl_stream_t st;

/* a memory for argument (q, index) of pd, filled with values in [-0.5, 0.5] */
static dnnl_memory_t mem_i(const_dnnl_primitive_desc_t pd, dnnl_query_t q, int index) {
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q, index);
  dnnl_memory_t m;
  CK(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
  void *h;
  CK(dnnl_memory_get_data_handle(m, &h));
  size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
  for (size_t i = 0; i < n; i++) ((float *)h)[i] = (float)rand() / RAND_MAX - 0.5f;
  return m;
}
static dnnl_memory_t mem(const_dnnl_primitive_desc_t pd, dnnl_query_t q) { return mem_i(pd, q, 0); }
/* median ms of one primitive */
static double timed(dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args) {
  double t[15];
  for (int r = 0; r < 18; r++) {
    double t0 = now();
    CK(dnnl_primitive_execute(p, st, nargs, args));
    CK(dnnl_stream_wait(st));
    if (r >= 3) t[r - 3] = now() - t0;
  }
  qsort(t, 15, sizeof t[0], cmp);
  return t[7] * 1e3;
}

/* median ms of one reorder between two layouts (a no-op if they are the same) */
static double reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
  if (dnnl_memory_desc_equal(from, to)) return 0;
  dnnl_primitive_desc_t rpd;
  CK(dnnl_reorder_primitive_desc_create(&rpd, from, eng, to, eng, NULL));
  dnnl_memory_t a, b;
  CK(dnnl_memory_create(&a, from, eng, DNNL_MEMORY_ALLOCATE));
  CK(dnnl_memory_create(&b, to, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_t p;
  CK(dnnl_primitive_create(&p, rpd));
  dnnl_exec_arg_t x[] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
  const double t = timed(p, 2, x);
  dnnl_primitive_destroy(p);
  dnnl_primitive_desc_destroy(rpd);
  dnnl_memory_destroy(a);
  dnnl_memory_destroy(b);
  return t;
}

static int plain; /* 1: our layouts (nchw, oihw), as a drop-in layer would get them */
static const float slope = 0.01f; /* the reference net's leaky ReLU */

static dnnl_primitive_t prim(const_dnnl_primitive_desc_t pd) {
  dnnl_primitive_t p;
  CK(dnnl_primitive_create(&p, pd));
  return p;
}

/* One layer of the reference net as a training step sees it: conv + bias + leaky ReLU (a
 * post-op), then the 2x2 max pool if `pool`; backward: pool, activation, data (not for the first
 * layer), weights + bias. In our layouts everything is nchw/oihw; in oneDNN's, the primitives pick
 * (format any) and the reorders a drop-in layer needs at its edges are timed as well. */
static void layer(const char *name, int B, int Ci, int Co, int H, int first, int pool, int postop) {
  dnnl_memory_desc_t src, wei, bia, dst, pdst;
  const int Hp = H / 2;
  dnnl_dims_t ds = {B, Ci, H, H}, dw = {Co, Ci, 3, 3}, db = {Co}, dd = {B, Co, H, H}, dp = {B, Co, Hp, Hp};
  dnnl_dims_t strides = {1, 1}, pad = {1, 1}, k2 = {2, 2}, s2 = {2, 2}, p0 = {0, 0};
  const dnnl_format_tag_t dtag = plain ? dnnl_nchw : dnnl_format_tag_any;
  CK(dnnl_memory_desc_init_by_tag(&src, 4, ds, dnnl_f32, dtag));
  CK(dnnl_memory_desc_init_by_tag(&wei, 4, dw, dnnl_f32, plain ? dnnl_oihw : dnnl_format_tag_any));
  CK(dnnl_memory_desc_init_by_tag(&bia, 1, db, dnnl_f32, dnnl_x));
  CK(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dtag));
  CK(dnnl_memory_desc_init_by_tag(&pdst, 4, dp, dnnl_f32, dtag));
  /* forward: conv + bias + leaky ReLU */
  dnnl_post_ops_t po;
  dnnl_primitive_attr_t attr;
  CK(dnnl_post_ops_create(&po));
  CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, slope, 0.0f));
  CK(dnnl_primitive_attr_create(&attr));
  CK(dnnl_primitive_attr_set_post_ops(attr, po));
  dnnl_convolution_desc_t fd, bd, wd;
  CK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_auto, &src, &wei, &bia, &dst,
                                        strides, pad, pad));
  dnnl_primitive_desc_t fpd, bpd = NULL, wpd;
  CK(dnnl_primitive_desc_create(&fpd, &fd, postop ? attr : NULL, eng, NULL));
  const dnnl_memory_desc_t *cdst = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
  dnnl_memory_t ms = mem(fpd, dnnl_query_src_md), mw = mem(fpd, dnnl_query_weights_md), md = mem(fpd, dnnl_query_dst_md),
                mbias = mem_i(fpd, dnnl_query_weights_md, 1);
  dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mbias}, {DNNL_ARG_DST, md}};
  const double tf = timed(prim(fpd), 4, fa);
  const char *impl = NULL;
  CK(dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &impl));
  /* the pool, forward (with its workspace) and backward */
  double tpf = 0, tpb = 0;
  const dnnl_memory_desc_t *out_md = cdst; /* what leaves the layer */
  if (pool) {
    dnnl_pooling_desc_t pf, pb;
    dnnl_primitive_desc_t ppd, pbpd;
    CK(dnnl_pooling_forward_desc_init(&pf, dnnl_forward_training, dnnl_pooling_max, cdst, &pdst, s2, k2, p0, p0));
    CK(dnnl_primitive_desc_create(&ppd, &pf, NULL, eng, NULL));
    dnnl_memory_t pout = mem(ppd, dnnl_query_dst_md), ws = mem(ppd, dnnl_query_workspace_md);
    dnnl_exec_arg_t pa[] = {{DNNL_ARG_SRC, md}, {DNNL_ARG_DST, pout}, {DNNL_ARG_WORKSPACE, ws}};
    tpf = timed(prim(ppd), 3, pa);
    out_md = dnnl_primitive_desc_query_md(ppd, dnnl_query_dst_md, 0);
    CK(dnnl_pooling_backward_desc_init(&pb, dnnl_pooling_max, cdst, out_md, s2, k2, p0, p0));
    CK(dnnl_primitive_desc_create(&pbpd, &pb, NULL, eng, ppd));
    dnnl_memory_t pdd = mem(pbpd, dnnl_query_diff_dst_md), pds = mem(pbpd, dnnl_query_diff_src_md);
    dnnl_exec_arg_t pba[] = {{DNNL_ARG_DIFF_DST, pdd}, {DNNL_ARG_DIFF_SRC, pds}, {DNNL_ARG_WORKSPACE, ws}};
    tpb = timed(prim(pbpd), 3, pba);
  }
  /* the activation's backward, from its output (which the conv's post-op wrote) */
  dnnl_eltwise_desc_t ef, eb;
  dnnl_primitive_desc_t efpd, ebpd;
  CK(dnnl_eltwise_forward_desc_init(&ef, dnnl_forward_training, dnnl_eltwise_relu_use_dst_for_bwd, cdst, slope, 0));
  CK(dnnl_primitive_desc_create(&efpd, &ef, NULL, eng, NULL));
  CK(dnnl_eltwise_backward_desc_init(&eb, dnnl_eltwise_relu_use_dst_for_bwd, cdst, cdst, slope, 0));
  CK(dnnl_primitive_desc_create(&ebpd, &eb, NULL, eng, efpd));
  dnnl_memory_t edd = mem(ebpd, dnnl_query_diff_dst_md), eds = mem(ebpd, dnnl_query_diff_src_md);
  dnnl_exec_arg_t ea[] = {{DNNL_ARG_DST, md}, {DNNL_ARG_DIFF_DST, edd}, {DNNL_ARG_DIFF_SRC, eds}};
  const double te = timed(prim(ebpd), 3, ea);
  double tef = 0; /* the activation's forward, when it is not the conv's post-op (in place) */
  if (!postop) {
    dnnl_exec_arg_t efa[] = {{DNNL_ARG_SRC, md}, {DNNL_ARG_DST, md}};
    tef = timed(prim(efpd), 2, efa);
  }
  /* backward data and weights + bias */
  double tb = 0;
  if (!first) {
    CK(dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_auto, &src, &wei, &dst, strides, pad, pad));
    CK(dnnl_primitive_desc_create(&bpd, &bd, NULL, eng, fpd));
    dnnl_memory_t dsrc = mem(bpd, dnnl_query_diff_src_md), bw = mem(bpd, dnnl_query_weights_md),
                  ddst = mem(bpd, dnnl_query_diff_dst_md);
    dnnl_exec_arg_t ba[] = {{DNNL_ARG_DIFF_SRC, dsrc}, {DNNL_ARG_WEIGHTS, bw}, {DNNL_ARG_DIFF_DST, ddst}};
    tb = timed(prim(bpd), 3, ba);
  }
  CK(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_auto, &src, &wei, &bia, &dst, strides, pad, pad));
  CK(dnnl_primitive_desc_create(&wpd, &wd, NULL, eng, fpd));
  dnnl_memory_t wsrc = mem(wpd, dnnl_query_src_md), dwei = mem(wpd, dnnl_query_diff_weights_md),
                dbias = mem_i(wpd, dnnl_query_diff_weights_md, 1), wdd = mem(wpd, dnnl_query_diff_dst_md);
  dnnl_exec_arg_t wa[] = {{DNNL_ARG_SRC, wsrc}, {DNNL_ARG_DIFF_WEIGHTS, dwei}, {DNNL_ARG_DIFF_BIAS, dbias}, {DNNL_ARG_DIFF_DST, wdd}};
  const double tw = timed(prim(wpd), 4, wa);
  /* the reorders a drop-in layer with oneDNN's layouts adds, each way between our layouts (nchw
   * data, oihw weights) and the primitives' choice: forward input, weights, output; backward
   * the incoming gradient, the conv gradient into the layouts the two backward convs want (if
   * not the activation's), the data primitive's weights (if not the forward's), diff_src, and
   * diff_weights back to oihw */
  double tr = 0, trw = 0; /* all reorders; those of the weights and their gradient */
  if (!plain) {
    dnnl_memory_desc_t nsrc, nout, nwei;
    CK(dnnl_memory_desc_init_by_tag(&nsrc, 4, ds, dnnl_f32, dnnl_nchw));
    CK(dnnl_memory_desc_init_by_tag(&nout, 4, pool ? dp : dd, dnnl_f32, dnnl_nchw));
    CK(dnnl_memory_desc_init_by_tag(&nwei, 4, dw, dnnl_f32, dnnl_oihw));
    const dnnl_memory_desc_t *fwe = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0),
                             *wdd_md = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0);
    tr += reorder(&nsrc, dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0));
    trw += reorder(&nwei, fwe);
    tr += reorder(out_md, &nout);
    tr += reorder(&nout, out_md);
    tr += reorder(cdst, wdd_md);
    trw += reorder(dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0), &nwei);
    if (bpd) {
      const dnnl_memory_desc_t *bdd = dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_dst_md, 0),
                               *bwe = dnnl_primitive_desc_query_md(bpd, dnnl_query_weights_md, 0);
      tr += reorder(cdst, bdd);
      if (!dnnl_memory_desc_equal(bwe, fwe)) trw += reorder(&nwei, bwe);
      tr += reorder(dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_src_md, 0), &nsrc);
    }
    tr += trw;
  }
  const double tfw = tf + tef + tpf, tbw = tpb + te + tb + tw;
  printf("%-19s b%-4d %s layer %7.3f = fwd %7.3f (conv %7.3f, act %6.3f, pool %6.3f)  bwd %7.3f (pool %6.3f, act %6.3f, "
         "data %7.3f, weights %7.3f)  reorders %6.3f (weights %6.3f) ms  [%s]\n",
         name, B, postop ? "act post-op" : "act apart  ", tfw + tbw + tr, tfw, tf, tef, tpf, tbw, tpb, te, tb, tw, tr, trw, impl ? impl : "?");
  fflush(stdout);
}

int main(void) {
  CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  const dnnl_version_t *v = dnnl_version();
  printf("oneDNN %d.%d.%d, conv + leaky ReLU + 2x2 max pool per layer, 1 thread if OMP_NUM_THREADS=1\n", v->major, v->minor,
         v->patch);
  for (int b = 0; b < 4; b++) {
    plain = b >= 2;
    if (b % 2 == 0) printf("%s\n", plain ? "our layouts (nchw data, oihw weights):" : "oneDNN's own layouts (format any):");
    const int B = b % 2 ? 1 : 128;
    for (int postop = 1; postop >= 0; postop--) {
      layer("conv1 1->32 28x28", B, 1, 32, 28, 1, 0, postop);
      layer("conv2 32->32 28x28", B, 32, 32, 28, 0, 1, postop);
      layer("conv3 32->64 14x14", B, 32, 64, 14, 0, 1, postop);
      layer("conv4 64->128 7x7", B, 64, 128, 7, 0, 1, postop);
    }
  }
  return 0;
}
