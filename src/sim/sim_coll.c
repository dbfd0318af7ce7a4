/* sim_coll.c — collectives of the sim runtime among the N nodes' calling roles, with real data
 * moving over the per-pair collective mailboxes of rt_sim.c, so the network model charges
 * every byte on the links it crosses.
 * Algorithms (the textbook ones MPI libraries use; docs/SIM.md):
 *   allreduce      ring reduce-scatter + ring allgather when the message is >= SMALL_BYTES and
 *                  n >= N; else binomial reduce to node 0 + binomial bcast
 *   reduce         ring reduce-scatter + gather of the reduced chunks at root (large);
 *                  binomial tree (small); non-root buffers are left unchanged
 *   bcast          scatter from root + ring allgather (large); binomial tree (small)
 *   allgatherv     ring (N-1 steps)
 *   reduce_scatterv ring (N-1 steps), node r ends with the full sum of block r
 *   barrier        dissemination, 0-byte messages (ceil(log2 N) rounds)
 * Sums are deterministic for a given N and n (fixed order per element); every node ends with
 * bitwise identical results. Chunk c of a ring over n elements: n/N elements, +1 for c < n%N. */
#include "sim/sim_internal.h"
#include <stdlib.h>
#include <string.h>

#define SMALL_BYTES (32 * 1024)

/* A timing-only run (simc_cut_floats() > 0) moves and adds only the last T floats of a buffer (win.lo
 * = n - T) or, per_block, of each block (allgatherv, reduce_scatterv: kfac-dist's control floats end
 * each node's block); the network still charges every chunk's full size. Numerics on: everything. */
typedef struct { size_t lo; int per_block; } win_t;
static win_t win_tail(size_t n) { size_t T = simc_cut_floats(); win_t w = {T && n > T ? n - T : 0, 0}; return w; }
static const win_t WIN_BLOCKS = {0, 1};
/* The part of chunk [off, off + cnt) that moves, as floats [*lo, *hi). */
static void chunk_part(win_t w, size_t off, size_t cnt, size_t *lo, size_t *hi) {
  const size_t T = simc_cut_floats();
  *hi = off + cnt;
  *lo = !T ? off : w.per_block ? (cnt > T ? off + cnt - T : off) : (w.lo > off ? w.lo : off);
  if (*lo > *hi) *lo = *hi;
}
static void *isend_chunk(rt_t *rt, int dst, float *buf, size_t off, size_t cnt, win_t w) {
  size_t lo, hi;
  chunk_part(w, off, cnt, &lo, &hi);
  return simc_isend_part(rt, dst, buf + off, cnt * sizeof(float), (lo - off) * sizeof(float), (hi - lo) * sizeof(float));
}
/* A copy of the n floats of x (the parts that move, in a timing-only run; the rest is not read). */
static float *fdup(const float *x, size_t n, const size_t *off, const size_t *cnt, int N, win_t w) {
  float *y = malloc(n ? n * sizeof(float) : 1);
  if (!y) simc_fatal("out of memory for a %zu-float collective buffer", n);
  if (!simc_cut_floats()) { if (n) memcpy(y, x, n * sizeof(float)); return y; }
  for (int i = 0; i < (off ? N : 1); i++) {
    size_t lo, hi;
    chunk_part(w, off ? off[i] : 0, off ? cnt[i] : n, &lo, &hi);
    if (hi > lo) memcpy(y + lo, x + lo, (hi - lo) * sizeof(float));
  }
  return y;
}

static size_t *offsets_of(const size_t *counts, int N, size_t *total) {
  size_t *off = malloc(sizeof(size_t) * (size_t)(N + 1));
  if (!off) simc_fatal("out of memory");
  off[0] = 0;
  for (int i = 0; i < N; i++) off[i + 1] = off[i] + counts[i];
  if (total) *total = off[N];
  return off;
}

static size_t *ring_counts(size_t n, int N) {
  size_t *c = malloc(sizeof(size_t) * (size_t)N);
  if (!c) simc_fatal("out of memory");
  for (int i = 0; i < N; i++) c[i] = n / (size_t)N + ((size_t)i < n % (size_t)N);
  return c;
}

static int md(int a, int N) { return ((a % N) + N) % N; }

/* Ring reduce-scatter on buf (chunks off/cnt): afterwards node r holds the full sum of chunk
 * (r + shift) mod N, shift = 1 for allreduce's layout, 0 for reduce_scatterv's. */
static void ring_reduce_scatter(rt_t *rt, float *buf, const size_t *off, const size_t *cnt, int shift, win_t w) {
  int N = rt->nnodes, r = rt->node, right = md(r + 1, N), left = md(r - 1, N);
  for (int k = 0; k < N - 1; k++) {
    int s = md(r - k - 1 + shift, N), g = md(r - k - 2 + shift, N);
    void *h = isend_chunk(rt, right, buf, off[s], cnt[s], w);
    simc_recv_add(rt, left, buf + off[g], cnt[g]);
    simc_send_wait(h);
  }
}

/* Ring allgather: node r starts owning chunk (r + shift) mod N, ends with all chunks. */
static void ring_allgather(rt_t *rt, float *buf, const size_t *off, const size_t *cnt, int shift, win_t w) {
  int N = rt->nnodes, r = rt->node, right = md(r + 1, N), left = md(r - 1, N);
  for (int k = 0; k < N - 1; k++) {
    int s = md(r - k + shift, N), g = md(r - k - 1 + shift, N);
    void *h = isend_chunk(rt, right, buf, off[s], cnt[s], w);
    simc_recv(rt, left, buf + off[g], cnt[g] * sizeof(float));
    simc_send_wait(h);
  }
}

/* Binomial-tree reduce of acc (n floats) to root; acc is the working buffer. */
static void binomial_reduce(rt_t *rt, float *acc, size_t n, int root) {
  int N = rt->nnodes, v = md(rt->node - root, N);
  for (int mask = 1; mask < N; mask <<= 1) {
    if (v & mask) {
      void *h = simc_isend(rt, md(v - mask + root, N), acc, n * sizeof(float));
      simc_send_wait(h);
      break;
    }
    if (v + mask < N) simc_recv_add(rt, md(v + mask + root, N), acc, n);
  }
}

static void binomial_bcast(rt_t *rt, float *buf, size_t n, int root) {
  int N = rt->nnodes, v = md(rt->node - root, N), mask = 1;
  while (mask < N) {
    if (v & mask) { simc_recv(rt, md(v - mask + root, N), buf, n * sizeof(float)); break; }
    mask <<= 1;
  }
  void *h[32]; int nh = 0;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < N) h[nh++] = simc_isend(rt, md(v + mask + root, N), buf, n * sizeof(float));
  for (int i = 0; i < nh; i++) simc_send_wait(h[i]);
}

static int is_small(size_t n, int N) { return n * sizeof(float) < SMALL_BYTES || n < (size_t)N; }

static void check_root(rt_t *rt, int root, const char *what) {
  if (root < 0 || root >= rt->nnodes) simc_fatal("%s: root %d out of range 0..%d", what, root, rt->nnodes - 1);
}

void simc_allreduce(rt_t *rt, float *buf, size_t n) {
  int N = rt->nnodes;
  if (N == 1 || n == 0) return;
  if (is_small(n, N)) {
    binomial_reduce(rt, buf, n, 0);
    binomial_bcast(rt, buf, n, 0);
    return;
  }
  size_t *cnt = ring_counts(n, N), *off = offsets_of(cnt, N, NULL);
  ring_reduce_scatter(rt, buf, off, cnt, 1, win_tail(n));
  ring_allgather(rt, buf, off, cnt, 1, win_tail(n));
  free(cnt); free(off);
}

void simc_reduce(rt_t *rt, float *buf, size_t n, int root) {
  check_root(rt, root, "reduce");
  int N = rt->nnodes, r = rt->node;
  if (N == 1 || n == 0) return;
  float *acc = r == root ? buf : fdup(buf, n, NULL, NULL, 1, win_tail(n));
  if (is_small(n, N)) {
    binomial_reduce(rt, acc, n, root);
  } else {
    size_t *cnt = ring_counts(n, N), *off = offsets_of(cnt, N, NULL);
    ring_reduce_scatter(rt, acc, off, cnt, 1, win_tail(n));
    int mine = md(r + 1, N);
    if (r != root) {
      void *h = isend_chunk(rt, root, acc, off[mine], cnt[mine], win_tail(n));
      simc_send_wait(h);
    } else {
      void **hs = malloc(sizeof(void *) * (size_t)N), **ms = malloc(sizeof(void *) * (size_t)N);
      if (!hs || !ms) simc_fatal("out of memory");
      for (int s = 0; s < N; s++)
        if (s != root) hs[s] = simc_irecv(rt, s, &ms[s]);
      for (int s = 0; s < N; s++) {
        if (s == root) continue;
        int c = md(s + 1, N);
        simc_irecv_finish(rt, hs[s], &ms[s], buf + off[c], cnt[c] * sizeof(float));
      }
      free(hs); free(ms);
    }
    free(cnt); free(off);
  }
  if (acc != buf) free(acc);
}

void simc_bcast(rt_t *rt, float *buf, size_t n, int root) {
  check_root(rt, root, "bcast");
  int N = rt->nnodes, r = rt->node;
  if (N == 1 || n == 0) return;
  if (is_small(n, N)) { binomial_bcast(rt, buf, n, root); return; }
  size_t *cnt = ring_counts(n, N), *off = offsets_of(cnt, N, NULL);
  /* scatter: node i gets chunk i */
  if (r == root) {
    void **hs = malloc(sizeof(void *) * (size_t)N);
    if (!hs) simc_fatal("out of memory");
    for (int i = 0; i < N; i++)
      if (i != root) hs[i] = isend_chunk(rt, i, buf, off[i], cnt[i], win_tail(n));
    for (int i = 0; i < N; i++)
      if (i != root) simc_send_wait(hs[i]);
    free(hs);
  } else {
    simc_recv(rt, root, buf + off[r], cnt[r] * sizeof(float));
  }
  ring_allgather(rt, buf, off, cnt, 0, win_tail(n));
  free(cnt); free(off);
}

void simc_allgatherv(rt_t *rt, const float *mine, float *all, const size_t *counts) {
  int N = rt->nnodes, r = rt->node;
  size_t *off = offsets_of(counts, N, NULL);
  size_t lo, hi;   /* (lo relative to the block, for mine) */
  chunk_part(WIN_BLOCKS, 0, counts[r], &lo, &hi);
  if (all + off[r] != mine && hi > lo) memmove(all + off[r] + lo, mine + lo, (hi - lo) * sizeof(float));
  if (N > 1) ring_allgather(rt, all, off, counts, 0, WIN_BLOCKS);
  free(off);
}

void simc_reduce_scatterv(rt_t *rt, const float *buf, float *mine, const size_t *counts) {
  int N = rt->nnodes, r = rt->node;
  size_t total;
  size_t *off = offsets_of(counts, N, &total);
  size_t lo, hi;   /* this node's block: what moves of it (relative to the block) */
  chunk_part(WIN_BLOCKS, 0, counts[r], &lo, &hi);
  if (N == 1) {
    if (hi > lo && mine != buf) memmove(mine + lo, buf + lo, (hi - lo) * sizeof(float));
    free(off);
    return;
  }
  float *acc = fdup(buf, total, off, counts, N, WIN_BLOCKS);
  ring_reduce_scatter(rt, acc, off, counts, 0, WIN_BLOCKS);
  if (hi > lo) memcpy(mine + lo, acc + off[r] + lo, (hi - lo) * sizeof(float));
  free(acc); free(off);
}

void simc_barrier(rt_t *rt) {
  int N = rt->nnodes, r = rt->node;
  char dummy = 0;
  for (int d = 1; d < N; d <<= 1) {
    void *h = simc_isend(rt, md(r + d, N), &dummy, 0);
    simc_recv(rt, md(r - d, N), &dummy, 0);
    simc_send_wait(h);
  }
}
