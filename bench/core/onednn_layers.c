/* bench/core/onednn_layers.c — oneDNN's convolutions on the reference net's conv layers, one
 * thread (issue 19: "if oneDNN beats us on a layer, take it"). Per layer and batch: forward
 * (training, with bias), backward data (not for the first layer, whose input needs no gradient)
 * and backward weights + bias, each the median of 15 timed runs after 3 warm-ups, in ms; no
 * activation or pooling, which our figures (pdl speed --profile, the same layers) include; the
 * algorithm oneDNN's choice (convolution_auto). Twice: with every tensor in the layout oneDNN asks
 * for (format "any": blocked nChw16c / nChw8c; its best case, no reorders timed, as in a net that
 * kept its layouts throughout), and with ours (nchw, oihw), as a drop-in layer would get them. Build and run
 * (libdnnl-dev; ONEDNN_MAX_CPU_ISA=AVX2 for its AVX2 kernels):
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

static dnnl_memory_t mem(const_dnnl_primitive_desc_t pd, dnnl_query_t q) {
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q, 0);
  dnnl_memory_t m;
  CK(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
  void *h;
  CK(dnnl_memory_get_data_handle(m, &h));
  size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
  for (size_t i = 0; i < n; i++) ((float *)h)[i] = (float)rand() / RAND_MAX - 0.5f;
  return m;
}
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

static int plain; /* 1: our layouts (nchw, oihw), as a drop-in layer would get them */

static void layer(const char *name, int B, int Ci, int Co, int H, int first) {
  dnnl_memory_desc_t src, wei, bia, dst;
  dnnl_dims_t ds = {B, Ci, H, H}, dw = {Co, Ci, 3, 3}, db = {Co}, dd = {B, Co, H, H};
  dnnl_dims_t strides = {1, 1}, pad = {1, 1};
  CK(dnnl_memory_desc_init_by_tag(&src, 4, ds, dnnl_f32, plain ? dnnl_nchw : dnnl_format_tag_any));
  CK(dnnl_memory_desc_init_by_tag(&wei, 4, dw, dnnl_f32, plain ? dnnl_oihw : dnnl_format_tag_any));
  CK(dnnl_memory_desc_init_by_tag(&bia, 1, db, dnnl_f32, dnnl_x));
  CK(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, plain ? dnnl_nchw : dnnl_format_tag_any));
  dnnl_convolution_desc_t fd, bd, wd;
  CK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_auto, &src, &wei, &bia, &dst,
                                        strides, pad, pad));
  dnnl_primitive_desc_t fpd, bpd = NULL, wpd;
  CK(dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL));
  dnnl_memory_t ms = mem(fpd, dnnl_query_src_md), mw = mem(fpd, dnnl_query_weights_md), mb = mem(fpd, dnnl_query_weights_md + 0),
                md = mem(fpd, dnnl_query_dst_md);
  (void)mb;
  dnnl_memory_t mbias;
  CK(dnnl_memory_create(&mbias, &bia, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_t fp;
  CK(dnnl_primitive_create(&fp, fpd));
  dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mbias}, {DNNL_ARG_DST, md}};
  const double tf = timed(fp, 4, fa);
  const char *impl = NULL;
  CK(dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &impl));
  double tb = 0;
  if (!first) {
    CK(dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_auto, &src, &wei, &dst, strides, pad, pad));
    CK(dnnl_primitive_desc_create(&bpd, &bd, NULL, eng, fpd));
    dnnl_memory_t dsrc = mem(bpd, dnnl_query_diff_src_md), bw = mem(bpd, dnnl_query_weights_md),
                  ddst = mem(bpd, dnnl_query_diff_dst_md);
    dnnl_primitive_t bp;
    CK(dnnl_primitive_create(&bp, bpd));
    dnnl_exec_arg_t ba[] = {{DNNL_ARG_DIFF_SRC, dsrc}, {DNNL_ARG_WEIGHTS, bw}, {DNNL_ARG_DIFF_DST, ddst}};
    tb = timed(bp, 3, ba);
  }
  CK(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_auto, &src, &wei, &bia, &dst, strides, pad, pad));
  CK(dnnl_primitive_desc_create(&wpd, &wd, NULL, eng, fpd));
  dnnl_memory_t wsrc = mem(wpd, dnnl_query_src_md), dwei = mem(wpd, dnnl_query_diff_weights_md),
                dbia = mem(wpd, dnnl_query_diff_weights_md + 0), wdd = mem(wpd, dnnl_query_diff_dst_md);
  (void)dbia;
  dnnl_memory_t dbias;
  CK(dnnl_memory_create(&dbias, &bia, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_t wp;
  CK(dnnl_primitive_create(&wp, wpd));
  dnnl_exec_arg_t wa[] = {{DNNL_ARG_SRC, wsrc}, {DNNL_ARG_DIFF_WEIGHTS, dwei}, {DNNL_ARG_DIFF_BIAS, dbias}, {DNNL_ARG_DIFF_DST, wdd}};
  const double tw = timed(wp, 4, wa);
  /* the reorders a drop-in layer with oneDNN's layouts would add: our nchw input into the conv's
   * source layout, and its output back (the backward has the same two for diff_dst and diff_src) */
  double tr = 0;
  if (!plain) {
    dnnl_memory_desc_t nsrc, ndst;
    CK(dnnl_memory_desc_init_by_tag(&nsrc, 4, ds, dnnl_f32, dnnl_nchw));
    CK(dnnl_memory_desc_init_by_tag(&ndst, 4, dd, dnnl_f32, dnnl_nchw));
    const dnnl_memory_desc_t *csrc = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0),
                             *cdst = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
    dnnl_primitive_desc_t r1, r2;
    CK(dnnl_reorder_primitive_desc_create(&r1, &nsrc, eng, csrc, eng, NULL));
    CK(dnnl_reorder_primitive_desc_create(&r2, cdst, eng, &ndst, eng, NULL));
    dnnl_memory_t a1, a2;
    CK(dnnl_memory_create(&a1, &nsrc, eng, DNNL_MEMORY_ALLOCATE));
    CK(dnnl_memory_create(&a2, &ndst, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_t p1, p2;
    CK(dnnl_primitive_create(&p1, r1));
    CK(dnnl_primitive_create(&p2, r2));
    dnnl_exec_arg_t x1[] = {{DNNL_ARG_FROM, a1}, {DNNL_ARG_TO, ms}}, x2[] = {{DNNL_ARG_FROM, md}, {DNNL_ARG_TO, a2}};
    tr = timed(p1, 2, x1) + timed(p2, 2, x2);
  }
  printf("%-22s b%-4d fwd %7.3f  bwd %7.3f (data %7.3f + weights %7.3f)", name, B, tf, tb + tw, tb, tw);
  if (!plain) printf("  reorders in+out %6.3f", tr);
  printf(" ms  [%s]\n", impl ? impl : "?");
}

int main(void) {
  CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  const dnnl_version_t *v = dnnl_version();
  printf("oneDNN %d.%d.%d, conv only (no activation, no pool), 1 thread if OMP_NUM_THREADS=1\n", v->major, v->minor,
         v->patch);
  for (int b = 0; b < 4; b++) {
    plain = b >= 2;
    if (b % 2 == 0) printf("%s\n", plain ? "our layouts (nchw data, oihw weights):" : "oneDNN's own layouts (format any):");
    const int B = b % 2 ? 1 : 128;
    layer("conv1 1->32 28x28", B, 1, 32, 28, 1);
    layer("conv2 32->32 28x28", B, 32, 32, 28, 0);
    layer("conv3 32->64 14x14", B, 32, 64, 14, 0);
    layer("conv4 64->128 7x7", B, 64, 128, 7, 0);
  }
  return 0;
}
