/* coll_common.c — op table, vector layout, validation inputs and checks for pdl coll (see
 * coll.h for the size convention and the input formula). Host images only: backends move
 * them to and from their own memory. */
#include "coll/coll.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the collective libraries (colls.def), in help order */
#define COLL(x) extern const coll_lib_t coll_lib_##x;
#include "coll/colls.def"
#undef COLL
#define COLL(x) &coll_lib_##x,
const coll_lib_t *const coll_libs[] = {
#include "coll/colls.def"
};
#undef COLL
const int coll_nlibs = (int)(sizeof coll_libs / sizeof coll_libs[0]);

const coll_lib_t *coll_lib_find(const char *name) {
  for (int i = 0; i < coll_nlibs; i++) if (!strcmp(coll_libs[i]->name, name)) return coll_libs[i];
  return NULL;
}

const char *coll_lib_names(const char *sep) {
  static char names[256];
  names[0] = 0;
  for (int i = 0; i < coll_nlibs; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? sep : "", coll_libs[i]->name);
  return names;
}

const coll_op_info_t coll_ops[COLL_NOPS] = {
  [COLL_ALLREDUCE] = {"allreduce", 0, 0, 0, 1, "2(n-1)/n", "sum of all ranks' vectors, on every rank"},
  [COLL_REDUCE] = {"reduce", 0, 0, 0, 1, "1", "sum of all ranks' vectors, on the root"},
  [COLL_ALLGATHER] = {"allgather", 1, 1, 0, 0, "(n-1)/n", "every rank's equal block, on every rank"},
  [COLL_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1, 1, "(n-1)/n", "sum of all vectors, rank r keeps equal block r"},
  [COLL_BCAST] = {"bcast", 0, 0, 0, 0, "1", "the root's vector, on every rank"},
  [COLL_REDUCE_SCATTERV] = {"reduce_scatterv", 0, 0, 1, 1, "(n-1)/n", "reduce_scatter with uneven blocks (MPI: Reduce+Scatterv in one call)"},
  [COLL_ALLGATHERV] = {"allgatherv", 0, 1, 0, 0, "(n-1)/n", "allgather with uneven blocks"},
  [COLL_RSV_VIA_ALLREDUCE] = {"reduce_scatterv_via_allreduce", 0, 0, 1, 1, "(n-1)/n",
                              "K-FAC workaround: allreduce the vector, keep your block"},
  [COLL_AGV_VIA_ALLREDUCE] = {"allgatherv_via_allreduce", 0, 1, 0, 0, "(n-1)/n",
                              "K-FAC workaround: zero vector + your block, allreduce"},
  [COLL_MEMCPY] = {"memcpy", 0, 0, 0, 0, "1", "local copy on every rank at once (the memory-bandwidth limit)"},
};

int coll_op_by_name(const char *name) {
  for (int i = 0; i < COLL_NOPS; i++)
    if (!strcmp(name, coll_ops[i].name)) return i;
  return -1;
}

double coll_busbw_factor(coll_op_t op, int n) {
  switch (op) {
  case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
  case COLL_ALLGATHER: case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV: case COLL_ALLGATHERV:
  case COLL_RSV_VIA_ALLREDUCE: case COLL_AGV_VIA_ALLREDUCE: return (double)(n - 1) / n;
  default: return 1.0;
  }
}

size_t coll_elt_size(coll_dtype_t dt) { return dt == COLL_DOUBLE ? sizeof(double) : sizeof(float); }

size_t coll_plan(coll_call_t *c, size_t requested) {
  const coll_op_info_t *oi = &coll_ops[c->op];
  size_t n = (size_t)c->nranks;
  if (requested < 1) requested = 1;
  if (oi->equal_blocks) {
    size_t block = requested / n;
    if (block == 0) block = 1;
    c->count = block * n;
    for (size_t r = 0; r < n; r++) c->counts[r] = block;
  } else {
    c->count = requested;
    for (size_t r = 0; r < n; r++) c->counts[r] = requested / n + (r < requested % n);
  }
  size_t d = 0;
  for (size_t r = 0; r < n; r++) { c->displs[r] = d; d += c->counts[r]; }
  c->has_send = !c->inplace && c->op != COLL_BCAST;
  c->send_count = !c->has_send ? 0 : oi->blocked_input ? c->counts[c->rank] : c->count;
  int block_recv = (c->op == COLL_REDUCE_SCATTER || c->op == COLL_REDUCE_SCATTERV) && !c->inplace;
  c->recv_count = block_recv ? c->counts[c->rank] : c->count;
  return c->count;
}

/* ---- values ---- */
static inline unsigned hash31(size_t g) {
  return (unsigned)((((uint64_t)g * 0x9E3779B97F4A7C15ull) >> 40) % 31u);
}
static inline int val(int r, size_t g) { return (int)((hash31(g) + 13u * (unsigned)(r % 31)) % 31u) - 15; }

/* sum over r < n of val(r, g), tabulated by hash31(g): 31 consecutive ranks sum to 0. */
static void sum_table(int n, int tab[31]) {
  for (unsigned h = 0; h < 31; h++) {
    int s = 0;
    for (int r = 0; r < n % 31; r++) s += (int)((h + 13u * (unsigned)r) % 31u) - 15;
    tab[h] = s;
  }
}

static inline void put(void *buf, coll_dtype_t dt, size_t i, double v) {
  if (dt == COLL_DOUBLE) ((double *)buf)[i] = v; else ((float *)buf)[i] = (float)v;
}
static inline double get(const void *buf, coll_dtype_t dt, size_t i) {
  return dt == COLL_DOUBLE ? ((const double *)buf)[i] : (double)((const float *)buf)[i];
}

void coll_result_region(const coll_call_t *c, const coll_backend_t *b, size_t *off, size_t *len) {
  size_t r = (size_t)c->rank;
  *off = 0; *len = c->count;
  switch (c->op) {
  case COLL_REDUCE: if (c->rank != c->root) *len = 0; break;
  case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
    *off = c->inplace && b->inplace_rs_at_block ? c->displs[r] : 0;
    *len = c->counts[r];
    break;
  case COLL_RSV_VIA_ALLREDUCE: *off = c->displs[r]; *len = c->counts[r]; break;
  default: break;
  }
}

void coll_fill(const coll_call_t *c, const coll_backend_t *b, void *h_send, void *h_recv, long long inject) {
  (void)b;
  const coll_op_info_t *oi = &coll_ops[c->op];
  int r = c->rank;
  size_t es = coll_elt_size(c->dt);
  /* NaN everywhere in recv: bytes 0xff are a NaN in both float and double */
  memset(h_recv, 0xff, c->recv_count * es);
  /* the input of this rank: global elements [g0, g0 + len) */
  size_t g0 = oi->blocked_input ? c->displs[r] : 0;
  size_t len = oi->blocked_input ? c->counts[r] : c->count;
  if (c->op == COLL_BCAST && r != c->root) len = 0;
  void *dst = c->has_send ? h_send : h_recv;
  size_t at = c->has_send ? 0 : g0;          /* in place: the block sits at its own offset */
  for (size_t i = 0; i < len; i++) put(dst, c->dt, at + i, (double)val(r, g0 + i));
  if (inject >= 0 && len > 0) {
    size_t i = at + (size_t)inject % len;
    put(dst, c->dt, i, get(dst, c->dt, i) + 1.0);
  }
}

long long coll_check(const coll_call_t *c, const coll_backend_t *b, const void *h_recv) {
  size_t off, len;
  coll_result_region(c, b, &off, &len);
  const coll_op_info_t *oi = &coll_ops[c->op];
  /* global index of the region's first element */
  size_t g0 = (oi->blocked_output) ? c->displs[c->rank] : 0;
  int tab[31];
  sum_table(c->nranks, tab);
  long long wrong = 0;
  int owner = 0;
  for (size_t i = 0; i < len; i++) {
    size_t g = g0 + i;
    double want;
    if (oi->reduces) want = (double)tab[hash31(g)];
    else if (c->op == COLL_BCAST) want = (double)val(c->root, g);
    else if (c->op == COLL_MEMCPY) want = (double)val(c->rank, g);
    else {  /* gathers: the block owner's value */
      while (owner + 1 < c->nranks && g >= c->displs[owner + 1]) owner++;
      want = (double)val(owner, g);
    }
    double got = get(h_recv, c->dt, off + i);
    if (!(got == want)) wrong++;
  }
  return wrong;
}
