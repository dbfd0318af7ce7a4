/* coll_seam.c — the training seam of the collective layer (see coll.h, "the training seam"): the
 * real runtime's collectives as planned calls (coll_call_t) run by the chosen backend's run(),
 * the function pdl coll times. On host-memory backends (MPI) the call works on the caller's
 * buffers; on device-memory backends (NCCL) it is staged: the input is uploaded into a device
 * buffer of the backend, the collective runs there, the output is downloaded. The device buffers
 * grow to the largest call seen and are kept, so a training loop allocates only in its first
 * steps. Layouts: allreduce/reduce/bcast are in place (recv = buf); allgatherv and
 * reduce_scatterv are out of place with displacements = prefix sums of counts. */
#include "coll/coll.h"
#include "coll/mpi_util.h"
#include "util/util.h"
#include <stdio.h>
#include <string.h>

struct coll_seam {
  const coll_backend_t *b;
  int device;                  /* the backend's buffers are device memory: stage */
  coll_call_t c;               /* the call being made; counts/displs [nranks] */
  void *dsend, *drecv;         /* device buffers (device backends only) */
  size_t dsend_cap, drecv_cap; /* their sizes in bytes */
};

coll_seam_t *coll_seam_open(const char *name, char *why, size_t why_len) {
  const coll_lib_t *lib = coll_lib_find(name);   /* the one list (colls.def) */
  if (!lib) { snprintf(why, why_len, "'%s' is not %s", name, coll_lib_names(" or ")); return NULL; }
  const coll_backend_t *b = lib->open(why, why_len);
  if (!b) return NULL;
  coll_seam_t *s = xcalloc(1, sizeof *s);
  s->b = b;
  s->device = b->device != NULL;   /* the backend says so: device() only where its memory is a device's */
  s->c.dt = COLL_FLOAT;
  s->c.rank = pdl_mpi_rank();
  s->c.nranks = pdl_mpi_size();
  s->c.counts = xcalloc((size_t)s->c.nranks, sizeof(size_t));   /* [nranks] */
  s->c.displs = xcalloc((size_t)s->c.nranks, sizeof(size_t));   /* [nranks] */
  return s;
}

const char *coll_seam_name(const coll_seam_t *s) { return s->b->name; }

static void *grow(const coll_backend_t *b, void *p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return p;
  if (p) b->release(p);
  *cap = bytes;
  return b->alloc(bytes);
}

/* Runs s->c with host buffers send (send_count elements, may be NULL) and recv (recv_count);
 * up_recv: recv carries input (the in-place ops); down_recv: recv gets output on this rank. */
static void go(coll_seam_t *s, const float *send, float *recv, int up_recv, int down_recv) {
  coll_call_t *c = &s->c;
  if (!s->device) {
    c->send = (void *)send; c->recv = recv;
    s->b->run(c);
    return;
  }
  size_t sb = c->send_count * sizeof(float), rb = c->recv_count * sizeof(float);
  s->dsend = grow(s->b, s->dsend, &s->dsend_cap, sb ? sb : sizeof(float));
  s->drecv = grow(s->b, s->drecv, &s->drecv_cap, rb ? rb : sizeof(float));
  c->send = c->has_send ? s->dsend : NULL;
  c->recv = s->drecv;
  if (c->has_send && sb) s->b->upload(s->dsend, send, sb);
  if (up_recv && rb) s->b->upload(s->drecv, recv, rb);
  s->b->run(c);
  if (down_recv && rb) s->b->download(recv, s->drecv, rb);
}

/* the full vector of n elements, in place (allreduce, reduce, bcast) */
static void whole(coll_seam_t *s, coll_op_t op, size_t n, int root) {
  coll_call_t *c = &s->c;
  c->op = op; c->inplace = 1; c->has_send = 0; c->root = root;
  c->count = n; c->send_count = 0; c->recv_count = n;
}

/* uneven blocks: counts as given, displacements their prefix sums */
static void blocks(coll_seam_t *s, coll_op_t op, const size_t *counts) {
  coll_call_t *c = &s->c;
  size_t d = 0;
  for (int r = 0; r < c->nranks; r++) { c->counts[r] = counts[r]; c->displs[r] = d; d += counts[r]; }
  c->op = op; c->inplace = 0; c->has_send = 1; c->root = 0; c->count = d;
  c->send_count = op == COLL_ALLGATHERV ? counts[c->rank] : d;
  c->recv_count = op == COLL_ALLGATHERV ? d : counts[c->rank];
}

void coll_seam_allreduce(coll_seam_t *s, float *buf, size_t n) {
  whole(s, COLL_ALLREDUCE, n, 0);
  go(s, NULL, buf, 1, 1);
}
void coll_seam_reduce(coll_seam_t *s, float *buf, size_t n, int root) {
  whole(s, COLL_REDUCE, n, root);
  go(s, NULL, buf, 1, s->c.rank == root);     /* elsewhere buf stays as it was, as with MPI */
}
void coll_seam_bcast(coll_seam_t *s, float *buf, size_t n, int root) {
  whole(s, COLL_BCAST, n, root);
  go(s, NULL, buf, s->c.rank == root, 1);
}
void coll_seam_allgatherv(coll_seam_t *s, const float *mine, float *all, const size_t *counts) {
  blocks(s, COLL_ALLGATHERV, counts);
  go(s, mine, all, 0, 1);
}
void coll_seam_reduce_scatterv(coll_seam_t *s, const float *buf, float *mine, const size_t *counts) {
  blocks(s, COLL_REDUCE_SCATTERV, counts);
  go(s, buf, mine, 0, 1);
}
void coll_seam_barrier(coll_seam_t *s) { s->b->barrier(); }

int coll_seam_device(const coll_seam_t *s) { return s->b->device ? s->b->device() : -1; }

int coll_seam_allreduce_dev(coll_seam_t *s, float *dev, size_t n, void *stream) {
  if (!s->b->run_on) return 0;
  coll_call_t *c = &s->c;
  whole(s, COLL_ALLREDUCE, n, 0);
  c->send = NULL; c->recv = dev;
  s->b->run_on(c, stream);
  return 1;
}

void coll_seam_close(coll_seam_t *s) {
  if (!s) return;
  if (s->dsend) s->b->release(s->dsend);
  if (s->drecv) s->b->release(s->drecv);
  s->b->teardown();
  xfree(s->c.counts); xfree(s->c.displs);
  xfree(s);
}
