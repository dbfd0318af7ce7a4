/* model.c — spec parsing, presets, parameter layout, forward/backward orchestration.
 * See model.h for the spec grammar and buffer conventions. */
#include "core/model.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/util.h"
#include "util/vec.h"

/* Two kinds: the stand-ins laid out for 28x28 Fashion-MNIST that the benches run on 2 cores (widths
 * the papers leave out chosen here), and the papers' nets at full size for their own inputs (the
 * "-paper" ones, vgg16-*; easgd-cifar and hermans-mlp are both). Sources, and whose widths where a
 * paper gives none, in each note (docs/PAPERS.md). */
const preset_t net_presets[] = {
  {"ppasgd-cifar", "leaky C32 C32 P C64 P C128 P F256 F256 S10",
   "PP-ASGD CIFAR-10 net CCPCPCPFFF (3x3 convs, leaky 0.01); widths ours; = the speed reference net", "1x28x28"},
  {"ppasgd-imagenet32", "leaky C32 Pc C64 Pc C96 Pc C128 Pc C160 Pc C192 Pc C256 C256 S10",
   "PP-ASGD ImageNet-32 net CPCPCPCPCPCPCCF; ceil-mode pools so 6 pools fit 28x28 (28-14-7-4-2-1-1); widths ours", "1x28x28"},
  {"ppasgd-imagenet1000", "leaky C32 C32 P C64 P C96 P C128 P C192 S10",
   "PP-ASGD ImageNet-1000 net CCPCPCPCPCF (28-14-7-3-1); widths ours", "1x28x28"},
  {"easgd-cifar", "relu C64k5p0 P C128k5p0 P C64k3p0 F256 D0.5 S10",
   "EASGD CIFAR net (3,28)C(64,24)P(64,12)C(128,8)P(128,4)C(64,2)D(256,1)S(10,1): 5x5,5x5,3x3 valid convs, dropout 0.5 before softmax; the paper's net at full width (the bench runs it at 1/16)", "3x28x28"},
  {"hermans-mlp", "relu F1000 F2000 F1000 S10", "Hermans' MNIST MLP 784-1000-2000-1000-10 (ReLU)", "1x28x28"},
  {"vgg-small", "relu C32 C32 P C64 C64 P C128 C128 P F256 S10",
   "small VGG-style net for K-FAC and gossip (VGG16 is too large for 2 cores); widths ours", "1x28x28"},
  {"vgg-quarter", "relu C8 C8 P C16 C16 P C32 C32 P F64 S10",
   "vgg-small at a quarter of its widths (1/16 of its FLOPs): the gossip bench's 3 seeds in its budget", "1x28x28"},
  {"tiny", "leaky C8 P F32 S10", "a tiny net for tests", "1x28x28"},
  {"vgg16-cifar10",
   "relu C64b D0.3 C64b P C128b D0.4 C128b P C256b D0.4 C256b D0.4 C256b P C512b D0.4 C512b D0.4 C512b P "
   "C512b D0.4 C512b D0.4 C512b P D0.5 F512b D0.5 S10",
   "Chainer's CIFAR VGG (examples/cifar/models/VGG.py: conv-BN-ReLU blocks, Zagoruyko's cifar.torch net), the "
   "K-FAC paper's VGG and the gossip paper's VGG16: 15.0M parameters = 57.2 MiB in float32, the paper's 54 MiB "
   "npz after compression (Chainer's final fc has no bias; ours has 10)", "3x32x32"},
  {"vgg16-cifar100",
   "relu C64b D0.3 C64b P C128b D0.4 C128b P C256b D0.4 C256b D0.4 C256b P C512b D0.4 C512b D0.4 C512b P "
   "C512b D0.4 C512b D0.4 C512b P D0.5 F512b D0.5 S100",
   "vgg16-cifar10 with 100 classes: the gossip paper's CIFAR-100 runs", "3x32x32"},
  {"ppasgd-cifar-paper", "leaky C64 C64 P C128 P C256 P F512 F512 S10",
   "PP-ASGD CIFAR-10 net CCPCPCPFFF (3x3 convs, 2x2 pools, leaky 0.01) at 32x32; the paper gives no widths: "
   "VGG's (64, doubled after each pool; fc 512 as Chainer's CIFAR VGG), ours", "3x32x32"},
  {"ppasgd-imagenet32-paper", "leaky C64 P C128 P C256 P C512 P C512 P C512 P C512 C512 S32",
   "PP-ASGD ImageNet-32 net CPCPCPCPCPCPCCF, 32 classes, 224x224 crops (224-112-56-28-14-7-3); the paper gives "
   "neither widths nor crop size: VGG's widths (64 doubled to 512) and its 224 crop, ours", "3x224x224"},
  {"ppasgd-imagenet1000-paper", "leaky C64 C64 P C128 P C256 P C512 P C512 S1000",
   "PP-ASGD ImageNet-1000 net CCPCPCPCPCF, 224x224 crops (224-112-56-28-14; the F on 14x14x512 holds 100M of "
   "its weights); widths and crop VGG's, ours, as ppasgd-imagenet32-paper", "3x224x224"},
  {"easgd-imagenet-paper", "relu C96k7s2p0 P3 C256k5p0 P C384k3p0 C384k2p0 C256k2p0 P F4096 D0.5 F4096 D0.5 S1000",
   "EASGD 11-layer ImageNet net (3,221)C(96,108)P(96,36)C(256,32)P(256,16)C(384,14)C(384,13)C(256,12)P(256,6)"
   "D(4096,1)D(4096,1)S(1000,1): kernels and strides from the sizes (7x7 stride 2 as OverFeat's accurate net, "
   "then 5, 3, 2, 2 valid); the paper's biases start at 0.1, ours at 0", "3x221x221"},
};
const int net_npresets = (int)(sizeof net_presets / sizeof net_presets[0]);

/* The spec's one integer reader: digits only, checked for overflow and against [lo, hi]; -1 if
 * there is no number or it is out of range (the caller names the token). Advances *p. */
static int spec_int(const char **p, long lo, long hi) {
  if (!isdigit((unsigned char)**p)) return -1;
  errno = 0;
  long v = strtol(*p, (char **)p, 10);
  return errno || v < lo || v > hi ? -1 : (int)v;
}
static int parse_int_at(const char **p) { return spec_int(p, 1, 999999); }

/* Limits that keep every size product of a layer far from overflow (size_t and the int shapes
 * the kernels take): per layer at most NET_MAX_ELEMS output elements per image and weights. */
#define NET_MAX_K 255
#define NET_MAX_PAD 255
#define NET_MAX_ELEMS (1L << 30)

/* A parse error: its text into err (naming the spec and token), and net_parse returns -1. */
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)
#define BAD_TOKEN(tok) BAD("net spec '%s': bad token '%s' (expected C<n>[k<k>][p<p>][s<s>][b], P[<s>][c], " \
                           "P<k>s<s>[c], F<n>[b], G, D[<p>], S<n>, relu, leaky, or a preset: pdl nets)", spec, tok)

/* The layer after L: a batch normalization of L's n x oh x ow output (its gamma, then beta, at off),
 * then the activation; the float operations of both added to *ff (forward) and *ft (training). */
static void add_bn(net_t *net, int n, int oh, int ow, size_t *off, double *ff, double *ft) {
  layer_t *N = &net->L[net->nlayers++];
  memset(N, 0, sizeof *N);
  N->type = L_BN; N->c = N->oc = n; N->h = N->oh = oh; N->w = N->ow = ow;
  N->w_off = *off; N->n_w = (size_t)n; N->b_off = *off + (size_t)n; N->n_b = (size_t)n;
  *off += 2 * (size_t)n;
  const double e = (double)n * oh * ow;
  *ff += NET_BN_FLOPS_FWD * e; *ft += (NET_BN_FLOPS_FWD + NET_BN_FLOPS_BWD) * e;
}
static void add_act(net_t *net, float slope, int c, int h, int w) {
  layer_t *A = &net->L[net->nlayers++];
  memset(A, 0, sizeof *A);
  A->type = L_ACT; A->slope = slope; A->c = A->oc = c; A->h = A->oh = h; A->w = A->ow = w; A->inplace = 1;
}

int net_parse(net_t *net, const char *spec_or_preset, int c, int h, int w, char *err, size_t errlen) {
  memset(net, 0, sizeof *net);
  const char *spec = spec_or_preset;
  snprintf(net->name, sizeof net->name, "custom");
  for (int i = 0; i < net_npresets; i++)
    if (!strcmp(spec_or_preset, net_presets[i].name)) {
      spec = net_presets[i].spec;
      snprintf(net->name, sizeof net->name, "%s", net_presets[i].name);
    }
  net->in_c = c; net->in_h = h; net->in_w = w;
  float slope = 0.01f;
  char buf[sizeof net->spec];
  if (strlen(spec) >= sizeof buf) BAD("net spec is %zu characters; at most %zu are allowed", strlen(spec), sizeof buf - 1);
  snprintf(net->spec, sizeof net->spec, "%s", spec);
  snprintf(buf, sizeof buf, "%s", spec);
  size_t off = 0;
  int cc = c, hh = h, ww = w, done = 0;
  double ff = 0, ft = 0;
  for (char *save = NULL, *tok = strtok_r(buf, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
    if (done) BAD("net spec '%s': nothing may follow the S layer (token '%s')", spec, tok);
    if (!strcmp(tok, "leaky")) { slope = 0.01f; continue; }
    if (!strcmp(tok, "relu")) { slope = 0.0f; continue; }
    if (net->nlayers + 3 > NET_MAX_LAYERS) BAD("net spec '%s': more than %d layers", spec, NET_MAX_LAYERS);
    layer_t *L = &net->L[net->nlayers];
    memset(L, 0, sizeof *L);
    L->c = cc; L->h = hh; L->w = ww;
    const char *p = tok + 1;
    int first = net->nlayers == 0;
    switch (tok[0]) {
    case 'C': {
      int n = parse_int_at(&p), k = 3, pad = -1, st = 1, bn = 0;
      if (n < 0) BAD_TOKEN(tok);
      while (*p) {
        char f = *p++;
        if (f == 'k' && (k = spec_int(&p, 1, NET_MAX_K)) > 0) continue;
        if (f == 'p' && (pad = spec_int(&p, 0, NET_MAX_PAD)) >= 0) continue;
        if (f == 's' && (st = spec_int(&p, 1, NET_MAX_K)) > 0) continue;
        if (f == 'b' && !bn) { bn = 1; continue; }
        BAD("net spec '%s': conv '%s': flags are k<1..%d>, p<0..%d>, s<1..%d> (stride) and b (batch norm), "
            "each once", spec, tok, NET_MAX_K, NET_MAX_PAD, NET_MAX_K);
      }
      if (pad < 0) pad = k / 2;
      if (hh + 2 * pad < k || ww + 2 * pad < k)
        BAD("net spec '%s': conv '%s' on %dx%d input gives an empty output", spec, tok, hh, ww);
      const int oh = (hh + 2 * pad - k) / st + 1, ow = (ww + 2 * pad - k) / st + 1;
      if ((double)n * oh * ow > NET_MAX_ELEMS || (double)n * cc * k * k > NET_MAX_ELEMS)
        BAD("net spec '%s': conv '%s' on %dx%dx%d is too large (over %ld outputs or weights per image)", spec, tok, cc,
            hh, ww, NET_MAX_ELEMS);
      L->type = L_CONV; L->k = k; L->pad = pad; L->s = st; L->oc = n; L->oh = oh; L->ow = ow;
      L->w_off = off; L->n_w = (size_t)n * cc * k * k; L->b_off = off + L->n_w; L->n_b = bn ? 0 : (size_t)n;
      off += L->n_w + L->n_b;
      double mac = (double)n * oh * ow * cc * k * k;
      ff += 2 * mac; ft += 2 * mac + 2 * mac + (first ? 0 : 2 * mac);
      cc = n; hh = oh; ww = ow;
      net->nlayers++;
      if (bn) add_bn(net, cc, hh, ww, &off, &ff, &ft);
      add_act(net, slope, cc, hh, ww);
      break;
    }
    case 'P': {
      int s = 2, k, cm = 0;
      const int num = isdigit((unsigned char)*p);
      if (num && (s = spec_int(&p, 1, 65536)) < 1) BAD_TOKEN(tok);
      k = s;
      if (num && *p == 's') {   /* P<k>s<s>: window k, stride s */
        p++;
        if ((s = spec_int(&p, 1, 65536)) < 1) BAD_TOKEN(tok);
      }
      if (*p == 'c') { cm = 1; p++; }
      if (*p) BAD_TOKEN(tok);
      if ((hh < k || ww < k) && !(cm && k == s))   /* P<s>c: a window clipped to the input, as before */
        BAD("net spec '%s': pool '%s' on %dx%d input: the %dx%d window does not fit%s", spec, tok, hh, ww, k, k,
            k == s && !cm ? " (try 'Pc')" : "");
      /* k == s: today's non-overlapping pool (floor or ceil of H / s), the same formula */
      const int oh = (hh - k + (cm ? s - 1 : 0)) / s + 1, ow = (ww - k + (cm ? s - 1 : 0)) / s + 1;
      L->type = L_POOL; L->k = k; L->s = s; L->ceil_mode = cm; L->oc = cc; L->oh = oh; L->ow = ow;
      hh = oh; ww = ow; net->nlayers++;
      break;
    }
    case 'G': {
      if (*p) BAD_TOKEN(tok);
      L->type = L_GAP; L->oc = cc; L->oh = L->ow = 1;
      ff += PDL_GAP_FLOPS * cc * hh * ww; ft += 2 * PDL_GAP_FLOPS * cc * hh * ww;
      hh = ww = 1; net->nlayers++;
      break;
    }
    case 'F': case 'S': {
      int n = parse_int_at(&p), bn = 0;
      if (n < 0) BAD_TOKEN(tok);
      if (*p == 'b' && tok[0] == 'F') { bn = 1; p++; }
      else if (*p == 'b') BAD("net spec '%s': '%s': the S layer takes no b (no batch norm before the softmax)", spec, tok);
      if (*p) BAD_TOKEN(tok);
      size_t m = (size_t)cc * hh * ww;
      if ((double)n * (double)m > NET_MAX_ELEMS)
        BAD("net spec '%s': '%s' on %zu inputs is too large (over %ld weights)", spec, tok, m, NET_MAX_ELEMS);
      L->type = tok[0] == 'F' ? L_FC : L_SOFTMAX; L->oc = n; L->oh = L->ow = 1;
      L->w_off = off; L->n_w = (size_t)n * m; L->b_off = off + L->n_w; L->n_b = bn ? 0 : (size_t)n;
      off += L->n_w + L->n_b;
      double mac = (double)n * m;
      ff += 2 * mac; ft += 4 * mac + (first ? 0 : 2 * mac);
      cc = n; hh = ww = 1; net->nlayers++;
      if (tok[0] == 'S') { done = 1; net->classes = n; break; }
      if (bn) add_bn(net, cc, 1, 1, &off, &ff, &ft);
      add_act(net, slope, cc, 1, 1);
      break;
    }
    case 'D': {
      double pr = 0.5;
      if (*p) { char *e; pr = strtod(p, &e); if (*e || !(pr >= 0 && pr < 1)) BAD_TOKEN(tok); }
      L->type = L_DROPOUT; L->drop_p = (float)pr; L->oc = cc; L->oh = hh; L->ow = ww; net->nlayers++;
      break;
    }
    default: BAD_TOKEN(tok);
    }
  }
  if (!done) BAD("net spec '%s' must end with an S<classes> layer (or name a preset: pdl nets)", spec);
  net->nparams = off; net->flops_fwd = ff; net->flops_train = ft;
  return 0;
}
#undef BAD
#undef BAD_TOKEN

void net_build(net_t *net, const char *spec_or_preset, int c, int h, int w) {
  char err[512];
  if (net_parse(net, spec_or_preset, c, h, w, err, sizeof err)) {
    const preset_t *ps = net_preset(spec_or_preset);
    if (ps && ps->input) die_usage("%s (at input %dx%dx%d; preset '%s' is for %s)", err, c, h, w, ps->name, ps->input);
    die_usage("%s (at input %dx%dx%d)", err, c, h, w);
  }
}

const preset_t *net_preset(const char *name) {
  for (int i = 0; i < net_npresets; i++)
    if (!strcmp(name, net_presets[i].name)) return &net_presets[i];
  return NULL;
}

double net_memory_bytes(const net_t *net, int batch) {
  double params = (double)net->nparams, act = 0, col = 0, keep = 0;
  for (int i = 0; i < net->nlayers; i++) {
    const layer_t *L = &net->L[i];
    act += (double)L->oc * L->oh * L->ow;
    if (L->type == L_CONV) { double c = (double)L->c * L->k * L->k * L->oh * L->ow; if (c > col) col = c; }
    /* a 3x3 conv's keep (cpu_conv_keep_floats): transformed weights, about 36 floats per filter,
     * and one image's transformed input, at most about 4 floats per input channel and position */
    if (L->type == L_CONV && L->k == 3 && L->s == 1) keep += 36.0 * L->c * L->oc + 4.0 * L->c * (L->oh + 2) * (L->ow + 2);
    if (L->type == L_BN) keep += 4.0 * L->oc;   /* running and batch statistics */
  }
  /* parameters, gradients, two optimizer vectors (Adam's M and V); activations and their
   * gradients for the batch; one image's im2col buffer per core */
  return 4.0 * (4 * params + 2 * act * (batch > 0 ? batch : 1) + col * sysconf(_SC_NPROCESSORS_ONLN) + keep);
}

void net_check_memory(const net_t *net, int batch) {
  double need = net_memory_bytes(net, batch);
  double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
  if (ram > 0 && need > ram)
    die_usage("net '%s' at batch %d needs about %.1f GiB (parameters, gradients, optimizer state, activations); "
              "this machine has %.1f GiB of RAM", net->spec, batch, need / 1073741824.0, ram / 1073741824.0);
}

void net_init_params(const net_t *net, float *params, uint64_t seed) {
  if (pdl_numerics_off) return;   /* a timing-only run (util/vec.h): nothing reads them */
  rng_t r; rng_seed(&r, seed, 0x1417);
  memset(params, 0, net->nparams * sizeof(float));
  for (int i = 0; i < net->nlayers; i++) {
    const layer_t *L = &net->L[i];
    if (L->type == L_BN) {   /* gamma 1, beta 0: the identity at the start, as Ioffe & Szegedy */
      for (size_t j = 0; j < L->n_w; j++) params[L->w_off + j] = 1.0f;
      continue;
    }
    if (!L->n_w) continue;
    double fan_in = L->type == L_CONV ? (double)L->c * L->k * L->k : (double)L->c * L->h * L->w;
    float bound = (float)sqrt(6.0 / fan_in);  /* He-uniform */
    if (L->type == L_SOFTMAX) bound = (float)sqrt(3.0 / fan_in);
    for (size_t j = 0; j < L->n_w; j++) params[L->w_off + j] = bound * (float)(2.0 * rng_uniform(&r) - 1.0);
  }
}

static size_t in_size(const layer_t *L) { return (size_t)L->c * L->h * L->w; }
static size_t out_size(const layer_t *L) { return (size_t)L->oc * L->oh * L->ow; }

/* n floats of workspace memory from the backend, zero-filled, freed by ws_free */
static float *ws_alloc(workspace_t *ws, size_t n) {
  float *p = ws->k->alloc((n ? n : 1) * sizeof(float));
  SHAPE_ASSERT(ws->nowned < (int)(sizeof ws->owned / sizeof ws->owned[0]));
  ws->owned[ws->nowned++] = p;
  return p;
}

/* Dies (exit 2) when layer i of net needs an entry the backend lacks (contract/kernels.h: the
 * full-size nets' layers are optional), naming the layer. */
static void need_layer(const kernels_t *k, const net_t *net, int i) {
  const layer_t *L = &net->L[i];
  const char *what = NULL;
  if (L->type == L_BN && !(k->bn_forward && k->bn_backward)) what = "batch normalization (b)";
  if (L->type == L_GAP && !(k->gap_forward && k->gap_backward)) what = "global average pooling (G)";
  if (L->type == L_POOL && L->k != L->s && !(k->pool_forward && k->pool_backward))
    what = "a max-pool whose window differs from its stride (P<k>s<s>)";
  if (L->type == L_CONV && L->s != 1 && !(k->conv_s_forward && k->conv_s_backward && k->conv_s_scratch_floats))
    what = "a strided conv (C..s<s>)";
  if (what) die_usage("net '%s': layer %d needs %s, which the %s backend does not have", net->spec, i, what, k->name);
}

/* Batch norm layer i's running statistics back to mean 0, variance 1 (PyTorch's and Chainer's start). */
static void bn_reset(workspace_t *ws, int i) {
  const size_t C = (size_t)ws->net->L[i].oc;
  float *h = xmalloc(2 * C * sizeof(float));
  for (size_t j = 0; j < C; j++) { h[j] = 0.0f; h[C + j] = 1.0f; }
  ws->k->upload(ws->bn_run[i], h, 2 * C * sizeof(float));
  xfree(h);
}

size_t net_state_floats(const net_t *net) {
  size_t n = 0;
  for (int i = 0; i < net->nlayers; i++) if (net->L[i].type == L_BN) n += 2 * (size_t)net->L[i].oc;
  return n;
}
void ws_state_get(const workspace_t *ws, float *s) {
  for (int i = 0; i < ws->net->nlayers; i++)
    if (ws->net->L[i].type == L_BN) {
      const size_t n = 2 * (size_t)ws->net->L[i].oc;
      ws->k->download(s, ws->bn_run[i], n * sizeof(float));
      s += n;
    }
}
void ws_state_set(workspace_t *ws, const float *s) {
  for (int i = 0; i < ws->net->nlayers; i++)
    if (ws->net->L[i].type == L_BN) {
      const size_t n = 2 * (size_t)ws->net->L[i].oc;
      ws->k->upload(ws->bn_run[i], s, n * sizeof(float));
      s += n;
    }
}

void ws_state_copy(workspace_t *dst, const workspace_t *src) {
  const size_t n = net_state_floats(src->net);
  SHAPE_ASSERT(n == net_state_floats(dst->net));
  if (!n || dst == src) return;
  float *h = xmalloc(n * sizeof(float));
  ws_state_get(src, h);
  ws_state_set(dst, h);
  xfree(h);
}

/* A conv or fc layer's bias in the parameters, or zeros for one without (b); its gradient likewise. */
static const float *bias_of(const workspace_t *ws, const layer_t *L, const float *params) {
  return L->n_b ? params + L->b_off : ws->zbias;
}
static float *dbias_of(const workspace_t *ws, const layer_t *L, float *grads) {
  return L->n_b ? grads + L->b_off : ws->dbsink;
}

void ws_init(workspace_t *ws, const net_t *net, int max_batch, int nthreads, const kernels_t *k, uint64_t seed) {
  memset(ws, 0, sizeof *ws);
  SHAPE_ASSERT(k && k->alloc && k->release && k->upload && k->download && k->conv_scratch_floats);
  ws->net = net; ws->k = k; ws->max_batch = max_batch; ws->nthreads = nthreads;
  rng_seed(&ws->rng, seed, 0xd50);
  size_t B = (size_t)max_batch;
  ws->a[0] = ws_alloc(ws, B * in_size(&net->L[0]));
  ws->da[0] = ws_alloc(ws, B * in_size(&net->L[0]));
  size_t scratch = 0, host = (size_t)max_batch * net->classes, nozb = 0;
  for (int i = 0; i < net->nlayers; i++) {
    const layer_t *L = &net->L[i];
    need_layer(k, net, i);
    if ((L->type == L_CONV || L->type == L_FC) && !L->n_b && (size_t)L->oc > nozb) nozb = (size_t)L->oc;
    if (L->type == L_BN) {
      const size_t C = (size_t)L->oc;
      ws->bn_run[i] = ws_alloc(ws, 2 * C);
      ws->bn_save[i] = ws_alloc(ws, 2 * C);
      bn_reset(ws, i);
    }
    if (L->inplace) { ws->a[i + 1] = ws->a[i]; ws->da[i + 1] = ws->da[i]; }
    else { ws->a[i + 1] = ws_alloc(ws, B * out_size(L)); ws->da[i + 1] = ws_alloc(ws, B * out_size(L)); }
    if (L->type == L_DROPOUT) {
      ws->mask[i] = ws_alloc(ws, B * out_size(L));
      if (B * out_size(L) > host) host = B * out_size(L);
    }
    if (L->type == L_CONV && k->conv_act_pool_forward && L->k == 3 && L->s == 1 && i + 2 < net->nlayers &&
        net->L[i + 1].type == L_ACT && net->L[i + 2].type == L_POOL && net->L[i + 2].s == 2 &&
        net->L[i + 2].k == 2) /* bytes, in whole floats */
      ws->pidx[i] = (uint8_t *)ws_alloc(ws, (B * out_size(&net->L[i + 2]) + 3) / 4);
    if (L->type == L_CONV && L->s != 1) {
      const size_t s = k->conv_s_scratch_floats(max_batch, L->c, L->h, L->w, L->oc, L->k, L->pad, L->s, nthreads);
      if (s > scratch) scratch = s;
    } else if (L->type == L_CONV) {
      size_t s = k->conv_scratch_floats(max_batch, L->c, L->h, L->w, L->oc, L->k, L->pad, nthreads);
      if (s > scratch) scratch = s;
      const size_t kn = k->conv_keep_floats && (k->conv_act_forward || k->conv_act_pool_forward)
                            ? k->conv_keep_floats(L->c, L->h, L->w, L->oc, L->k, L->pad) : 0;
      if (kn) ws->keep[i] = ws_alloc(ws, kn);
    }
  }
  ws->probs = ws_alloc(ws, B * (size_t)net->classes);
  ws->ylab = (int *)ws_alloc(ws, B);          /* ints: one float's bytes each */
  ws->acc = (double *)ws_alloc(ws, 2 * 3);    /* 3 doubles */
  ws->scratch_n = scratch; ws->scratch = ws_alloc(ws, scratch);
  if (nozb) { ws->zbias = ws_alloc(ws, nozb); ws->dbsink = ws_alloc(ws, nozb); }
  if (!k->host_memory) ws->host = xcalloc(host, sizeof(float));
}

void ws_free(workspace_t *ws) {
  for (int i = 0; i < ws->nowned; i++) ws->k->release(ws->owned[i]);
  xfree(ws->host);
  memset(ws, 0, sizeof *ws);
}

/* The time for a layer's profile: after the backend's queued work (k->sync), so that each layer
 * is charged its own kernels. */
static double prof_now(const kernels_t *k) {
  if (k->sync) k->sync();
  return now_s();
}

/* rows of probs [B][C] whose first largest probability is at their label */
static int argmax_hits(const float *probs, const int *y, int B, int C) {
  int hits = 0;
  for (int b = 0; b < B; b++) {
    const float *pr = probs + (size_t)b * C;
    int arg = 0;
    for (int j = 1; j < C; j++) if (pr[j] > pr[arg]) arg = j;
    hits += arg == y[b];
  }
  return hits;
}

/* net_forward's softmax on a resident batch: labels in ws->ylab, the loss, hits and bad labels
 * added to ws->acc (the backend's entry, or on the host where workspace memory is host memory) */
static void xent_forward_acc(workspace_t *ws, const float *logits, int B, int C) {
  const kernels_t *k = ws->k;
  if (k->softmax_xent_forward_acc) { k->softmax_xent_forward_acc(ws->probs, logits, ws->ylab, B, C, ws->acc); return; }
  if (!k->host_memory) die("net_forward: the %s backend has no softmax_xent_forward_acc (labels in its memory)", k->name);
  int bad = 0;
  for (int b = 0; b < B; b++) bad += ws->ylab[b] < 0 || ws->ylab[b] >= C;
  if (bad) { ws->acc[0] += NAN; ws->acc[2] += bad; return; }
  ws->acc[0] += k->softmax_xent_forward(ws->probs, logits, ws->ylab, B, C);
  ws->acc[1] += argmax_hits(ws->probs, ws->ylab, B, C);
}

/* A dropout layer's mask for a batch of n values: train, the layer's keep-or-drop draws from
 * ws->rng (scaled by 1 / (1 - p)); else ones */
static void fill_mask(workspace_t *ws, const layer_t *L, int train, float *m, size_t n) {
  if (train && L->drop_p > 0) {
    float keep = 1.0f / (1.0f - L->drop_p);
    for (size_t j = 0; j < n; j++) m[j] = rng_uniform(&ws->rng) < L->drop_p ? 0.0f : keep;
  } else {
    for (size_t j = 0; j < n; j++) m[j] = 1.0f;
  }
}

size_t net_mask_floats(const workspace_t *ws, int B) {
  size_t n = 0;
  for (int i = 0; i < ws->net->nlayers; i++)
    if (ws->net->L[i].type == L_DROPOUT) n += (size_t)B * in_size(&ws->net->L[i]);
  return n;
}

void net_draw_masks(workspace_t *ws, int B, float *m) {
  for (int i = 0; i < ws->net->nlayers; i++) {
    const layer_t *L = &ws->net->L[i];
    if (L->type != L_DROPOUT) continue;
    const size_t n = (size_t)B * in_size(L);
    fill_mask(ws, L, 1, m, n);
    m += n;
  }
}

void net_masks_at(workspace_t *ws, int B, const float *base) {
  for (int i = 0; i < ws->net->nlayers; i++) {
    const layer_t *L = &ws->net->L[i];
    if (L->type != L_DROPOUT) continue;
    ws->mask_at[i] = base;
    if (base) base += (size_t)B * in_size(L);
  }
}

void net_gather(workspace_t *ws, const float *xs, const int *ys, const int *idx, int B) {
  const kernels_t *k = ws->k;
  SHAPE_ASSERT(B >= 1 && B <= ws->max_batch);
  const size_t img = in_size(&ws->net->L[0]);
  if (k->gather) {
    k->gather(ws->a[0], xs, idx, B, img);
    k->gather(ws->ylab, ys, idx, B, 1);
    return;
  }
  if (!k->host_memory) die("net_gather: the %s backend has no gather entry", k->name);
  for (int b = 0; b < B; b++) {
    memcpy(ws->a[0] + (size_t)b * img, xs + (size_t)idx[b] * img, img * sizeof(float));
    ws->ylab[b] = ys[idx[b]];
  }
}

double net_forward(workspace_t *ws, const float *params, const float *x, const int *y, int B, int train, int *correct) {
  const net_t *net = ws->net; const kernels_t *k = ws->k;
  SHAPE_ASSERT(B >= 1 && B <= ws->max_batch);
  if (k->set_threads) k->set_threads(ws->nthreads);
  if (x) k->upload(ws->a[0], x, (size_t)B * in_size(&net->L[0]) * sizeof(float));
  double loss = 0;
  for (int i = 0; i < net->nlayers; i++) {
    const layer_t *L = &net->L[i];
    float *in = ws->a[i], *out = ws->a[i + 1];
    const int li = i;
    const double t0 = ws->prof ? prof_now(k) : 0.0;
    switch (L->type) {
    case L_CONV:
      ws->fused[i] = 0;
      if (L->s != 1) {
        k->conv_s_forward(out, in, params + L->w_off, bias_of(ws, L, params), B, L->c, L->h, L->w, L->oc, L->k, L->pad,
                          L->s, ws->scratch);
        break;
      }
      if (ws->pidx[i] && k->conv_act_pool_fusable && !ws->unfused &&
          k->conv_act_pool_fusable(B, L->c, L->h, L->w, L->oc, L->k, L->pad, net->L[i + 2].s)) {
        /* conv + act + pool in one kernel: the full-size activation is never stored */
        k->conv_act_pool_forward(ws->a[i + 3], ws->pidx[i], in, params + L->w_off, params + L->b_off, B, L->c, L->h,
                                 L->w, L->oc, L->pad, net->L[i + 1].slope, net->L[i + 2].ceil_mode, ws->scratch,
                                 ws->keep[i]);
        ws->fused[i] = 2;
        i += 2;
        break;
      }
      if (k->conv_act_forward && !ws->unfused && L->n_b && i + 1 < net->nlayers && net->L[i + 1].type == L_ACT) {
        /* fused conv + activation: one pass less over the activations (bit-identical) */
        k->conv_act_forward(out, in, params + L->w_off, params + L->b_off, B, L->c, L->h, L->w, L->oc, L->k, L->pad,
                            net->L[i + 1].slope, ws->scratch, ws->keep[i]);
        ws->fused[i] = 1;
        i++;
        break;
      }
      k->conv_forward(out, in, params + L->w_off, bias_of(ws, L, params), B, L->c, L->h, L->w, L->oc, L->k, L->pad,
                      ws->scratch);
      break;
    case L_POOL:
      if (L->k == L->s) k->maxpool_forward(out, in, B, L->c, L->h, L->w, L->s, L->ceil_mode);
      else k->pool_forward(out, in, B, L->c, L->h, L->w, L->k, L->s, L->ceil_mode);
      break;
    case L_BN:
      k->bn_forward(out, in, params + L->w_off, params + L->b_off, ws->bn_run[i], ws->bn_run[i] + L->oc, ws->bn_save[i],
                    B, L->oc, L->oh * L->ow, train, NET_BN_MOMENTUM, NET_BN_EPS);
      break;
    case L_GAP: k->gap_forward(out, in, B, L->c, L->h * L->w); break;
    case L_FC: case L_SOFTMAX:
      k->fc_forward(out, in, params + L->w_off, bias_of(ws, L, params), B, (int)in_size(L), L->oc);
      if (L->type == L_SOFTMAX) {
        if (y) loss = k->softmax_xent_forward(ws->probs, out, y, B, L->oc);
        else { xent_forward_acc(ws, out, B, L->oc); loss = NAN; }
      }
      break;
    case L_ACT: k->act_forward(out, in, (size_t)B * in_size(L), L->slope); break;
    case L_DROPOUT: {
      size_t n = (size_t)B * in_size(L);
      if (train && ws->mask_at[i]) { k->dropout_forward(out, in, ws->mask_at[i], n); break; }   /* drawn ahead */
      float *m = k->host_memory ? ws->mask[i] : ws->host;   /* drawn on the host */
      fill_mask(ws, L, train, m, n);
      if (!k->host_memory) k->upload(ws->mask[i], m, n * sizeof(float));
      k->dropout_forward(out, in, ws->mask[i], n);
      break;
    }
    }
    if (ws->prof) ws->prof[li] += prof_now(k) - t0;
  }
  if (correct) {
    SHAPE_ASSERT(y);   /* a resident batch's hits are in ws->acc */
    const int C = net->classes;
    const float *probs = ws->probs;
    if (!k->host_memory) { k->download(ws->host, ws->probs, (size_t)B * C * sizeof(float)); probs = ws->host; }
    *correct = argmax_hits(probs, y, B, C);
  }
  return loss;
}

/* The update *st of layer L's weights and bias, from its complete gradient. */
static void layer_step(const kernels_t *k, const layer_t *L, float *params, float *grads, const net_step_t *st) {
  k->sgd_step(params + L->w_off, grads + L->w_off, st->v ? st->v + L->w_off : NULL, L->n_w, st->lr, st->mu, st->wd);
  if (L->n_b)   /* a layer with batch norm after it has no bias */
    k->sgd_step(params + L->b_off, grads + L->b_off, st->v ? st->v + L->b_off : NULL, L->n_b, st->lr, st->mu, st->wd);
}

/* The backward pass; with st, each layer's update follows its backward (params is written only
 * then: net_backward passes st == NULL), or with k->update_once one update of all the parameters
 * follows the whole pass (the same values: contract/kernels.h). */
static void backward_pass(workspace_t *ws, float *params, float *grads, const int *y, int B, float scale,
                          const net_step_t *st_in) {
  const net_t *net = ws->net; const kernels_t *k = ws->k;
  const net_step_t *st = k->update_once ? NULL : st_in;   /* per-layer updates, or none here */
  if (k->set_threads) k->set_threads(ws->nthreads);
  for (int i = net->nlayers - 1; i >= 0; i--) {
    const layer_t *L = &net->L[i];
    float *din = i == 0 ? NULL : ws->da[i];
    const float *dout = ws->da[i + 1], *in = ws->a[i], *out = ws->a[i + 1];
    const double t0 = ws->prof ? prof_now(k) : 0.0;
    switch (L->type) {
    case L_SOFTMAX: case L_FC:
      if (L->type == L_SOFTMAX) {
        if (y) k->softmax_xent_backward(ws->da[i + 1], ws->probs, y, B, L->oc, scale);
        else if (k->softmax_xent_backward_ws) k->softmax_xent_backward_ws(ws->da[i + 1], ws->probs, ws->ylab, B, L->oc, scale);
        else if (k->host_memory) k->softmax_xent_backward(ws->da[i + 1], ws->probs, ws->ylab, B, L->oc, scale);
        else die("net_backward: the %s backend has no softmax_xent_backward_ws (labels in its memory)", k->name);
      }
      if (st && k->fc_backward_sgd && L->n_b) {
        k->fc_backward_sgd(din, params + L->w_off, params + L->b_off, grads + L->w_off, grads + L->b_off,
                           st->v ? st->v + L->w_off : NULL, st->v ? st->v + L->b_off : NULL, dout, in, B,
                           (int)in_size(L), L->oc, st->lr, st->mu, st->wd);
        break;
      }
      k->fc_backward(din, grads + L->w_off, dbias_of(ws, L, grads), dout, in, params + L->w_off, B, (int)in_size(L),
                     L->oc);
      if (st) layer_step(k, L, params, grads, st);
      break;
    case L_CONV:
      if (L->s != 1)
        k->conv_s_backward(din, grads + L->w_off, dbias_of(ws, L, grads), dout, in, params + L->w_off, B, L->c, L->h,
                           L->w, L->oc, L->k, L->pad, L->s, ws->scratch);
      else
        k->conv_backward(din, grads + L->w_off, dbias_of(ws, L, grads), dout, in, params + L->w_off, B, L->c, L->h,
                         L->w, L->oc, L->k, L->pad, ws->scratch);
      if (st) layer_step(k, L, params, grads, st);
      break;
    case L_BN:
      k->bn_backward(din, grads + L->w_off, grads + L->b_off, dout, in, params + L->w_off, ws->bn_save[i], B, L->oc,
                     L->oh * L->ow);
      if (st) layer_step(k, L, params, grads, st);
      break;
    case L_GAP:
      if (din) k->gap_backward(din, dout, B, L->c, L->h * L->w);
      break;
    case L_POOL:
      if (i >= 2 && ws->fused[i - 2] == 2) { /* the fused conv + act + pool of net_forward */
        const layer_t *C = &net->L[i - 2];
        k->conv_act_pool_backward(i - 2 == 0 ? NULL : ws->da[i - 2], grads + C->w_off, grads + C->b_off, dout, out,
                                  ws->pidx[i - 2], ws->a[i - 2], params + C->w_off, B, C->c, C->h, C->w, C->oc, C->pad,
                                  net->L[i - 1].slope, L->ceil_mode, ws->scratch, ws->keep[i - 2]);
        if (st) layer_step(k, C, params, grads, st);
        i -= 2;
        break;
      }
      if (din && L->k == L->s) k->maxpool_backward(din, dout, in, out, B, L->c, L->h, L->w, L->s, L->ceil_mode);
      else if (din) k->pool_backward(din, dout, in, out, B, L->c, L->h, L->w, L->k, L->s, L->ceil_mode);
      break;
    case L_ACT:
      if (i > 0 && ws->fused[i - 1] == 1) {  /* the fused pair, see net_forward */
        const layer_t *C = &net->L[i - 1];
        k->conv_act_backward(i - 1 == 0 ? NULL : ws->da[i - 1], grads + C->w_off, grads + C->b_off, dout, out,
                             ws->a[i - 1], params + C->w_off, B, C->c, C->h, C->w, C->oc, C->k, C->pad, L->slope,
                             ws->scratch, ws->keep[i - 1]);
        if (st) layer_step(k, C, params, grads, st);
        i--;
        break;
      }
      if (din) k->act_backward(din, dout, out, (size_t)B * in_size(L), L->slope);
      break;
    case L_DROPOUT:
      if (din) k->dropout_backward(din, dout, ws->mask_at[i] ? ws->mask_at[i] : ws->mask[i], (size_t)B * in_size(L));
      break;
    }
    if (ws->prof) ws->prof[NET_MAX_LAYERS + i] += prof_now(k) - t0; /* i: the conv of a fused pair */
  }
  if (st_in && k->update_once)
    k->sgd_step(params, grads, st_in->v, net->nparams, st_in->lr, st_in->mu, st_in->wd);
}

void net_backward(workspace_t *ws, const float *params, float *grads, const int *y, int B, float scale) {
  backward_pass(ws, (float *)params, grads, y, B, scale, NULL);   /* not written without a step */
}

void net_backward_step(workspace_t *ws, float *params, float *grads, const int *y, int B, float scale,
                       const net_step_t *st) {
  if (!ws->k->sgd_step) die("net_backward_step: the %s backend has no sgd_step", ws->k->name);
  backward_pass(ws, params, grads, y, B, scale, st);
}

void net_evaluate(workspace_t *ws, const float *params, const float *x, const int *y, int n, double *err, double *loss) {
  size_t img = in_size(&ws->net->L[0]);
  long hits = 0; double tot = 0;
  for (int i = 0; i < n; i += ws->max_batch) {
    int B = n - i < ws->max_batch ? n - i : ws->max_batch, c = 0;
    tot += net_forward(ws, params, x + (size_t)i * img, y + i, B, 0, &c);
    hits += c;
  }
  *err = n ? 1.0 - (double)hits / n : NAN;
  *loss = n ? tot / n : NAN;
}

void net_evaluate_ws(workspace_t *ws, const float *params, const float *xs, const int *ys, int n, double *err,
                     double *loss) {
  const kernels_t *k = ws->k;
  const size_t img = in_size(&ws->net->L[0]);
  double h[3] = {0, 0, 0};
  k->upload(ws->acc, h, sizeof h);
  for (int i = 0; i < n; i += ws->max_batch) {
    const int B = n - i < ws->max_batch ? n - i : ws->max_batch;
    k->copy(ws->a[0], xs + (size_t)i * img, (size_t)B * img * sizeof(float));
    k->copy(ws->ylab, ys + i, (size_t)B * sizeof(int));
    net_forward(ws, params, NULL, NULL, B, 0, NULL);
  }
  k->download(h, ws->acc, sizeof h);
  if (h[2] > 0) die("evaluation: %.0f of %d labels are outside [0, %d)", h[2], n, ws->net->classes);
  *err = n ? 1.0 - h[1] / n : NAN;
  *loss = n ? h[0] / n : NAN;
}
