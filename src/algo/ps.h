/* ps.h — the parameter-server role and the worker side of pull/commit, on the seam (rt.h).
 * Node 0 is the server; workers are nodes 1..p (p = nnodes - 1). Only main roles call these.
 *
 * Protocol (all point-to-point; a request is one fixed-size header on PS_TAG_REQ):
 *   PULL       worker -> server: header.            server -> worker: reply on PS_TAG_REPLY
 *   PUSH       worker -> server: header, then n floats on PS_TAG_VEC.       no reply
 *   PUSH_PULL  worker -> server: header, then n floats on PS_TAG_VEC.       reply
 *   DONE       worker -> server: header (the worker leaves).                no reply
 *   STOPPED    worker -> server: header (the worker leaves: a signal reached it; `sig` says
 *              which). The server stops the run: every later reply carries the signal.
 * A reply is n + 1 floats: the point the server hands out (the center, or what the algorithm
 * says, e.g. x~ + delta v for MDOWNPOUR) followed by a stop flag (0: go on; 1: stop now, e.g.
 * the run diverged; >= 2: stop, the run was interrupted by that signal on some node, which the
 * client records as its own). A worker told to stop does not apply the reply's point, so the
 * state it then saves is the state it had before the request. Every header carries the local steps and the sum of mini-batch
 * losses since the worker's previous header and the worker's clock t_i, so the server knows
 * the run's progress (evaluation points, divergence) without extra messages.
 * The server handles one request at a time, in the order they arrive (recv_any), or in a fixed
 * rotation over the workers (round_robin: request k of the server is taken from worker
 * 1 + k mod p, skipping workers that left), which makes an asynchronous run deterministic and
 * identical on both runtimes (tests; the round-robin scheme of the EASGD paper's Sec. 4).
 *
 * Why point-to-point and not RMA: every commit is a read-modify-write with algorithm logic on
 * the server (elastic difference, master momentum, running averages, master clock), which one
 * server role applies in order, so the center is always consistent; the authors' mpiT server
 * works the same way (MPI send/recv between client and server ranks). MPI RMA would need
 * passive-target locks around every accumulate and a separate progress thread for the
 * averages, and the seam (hence the sim runtime) has no one-sided operations; with send/recv
 * the sim charges each transfer on the server's link, which is where a parameter server's
 * contention comes from. */
#ifndef PDL_PS_H
#define PDL_PS_H
#include <stddef.h>
#include <stdint.h>
#include "rt/rt.h"

enum { PS_TAG_REQ = 700, PS_TAG_VEC = 701, PS_TAG_REPLY = 702 };
typedef enum { PS_PULL = 1, PS_PUSH = 2, PS_PUSH_PULL = 3, PS_DONE = 4, PS_STOPPED = 5 } ps_op_t;

typedef struct {
  int32_t op;          /* ps_op_t */
  int32_t steps;       /* local steps since this worker's previous header */
  int64_t clock;       /* the worker's clock t_i (local steps done) */
  double loss_sum;     /* sum of the mini-batch mean losses of those steps (NaN/Inf if diverged) */
  int32_t sig, pad;    /* STOPPED: the signal */
} ps_req_t;

typedef struct {
  rt_t *rt;
  size_t n;
  int p, round_robin;
  int active;          /* workers that have not sent DONE */
  int next;            /* round robin: worker whose request comes next (1..p) */
  char *left;          /* [p + 1] 1 once worker i sent DONE */
  size_t vec_n;        /* floats of a PUSH / PUSH_PULL vector (n unless ps_server_set_vec_len) */
  float *vec;          /* [vec_n] the vector of the last PUSH / PUSH_PULL */
  float *reply;        /* [n + 1] */
  int stop;            /* every later reply carries it as the stop flag: set by the caller (1,
                          or a signal number), or by a STOPPED request (its signal) */
} ps_server_t;

void ps_server_init(ps_server_t *s, rt_t *rt, size_t n, int round_robin);
void ps_server_free(ps_server_t *s);
/* 1 while some worker has not left. */
int ps_server_active(const ps_server_t *s);
/* Takes the next request; for PUSH / PUSH_PULL also receives the vector into s->vec. Returns
 * the op and sets *src (worker node) and *q. The caller applies the commit, then answers a
 * PULL / PUSH_PULL with ps_server_reply. */
int ps_server_next(ps_server_t *s, int *src, ps_req_t *q);
void ps_server_reply(ps_server_t *s, int dst, const float *point);
/* Commits of vec_n floats instead of n (e.g. ADAG Alg. 1: the update and the stale center);
 * the client must say the same (ps_client_set_vec_len). */
void ps_server_set_vec_len(ps_server_t *s, size_t vec_n);

typedef struct {
  rt_t *rt;
  size_t n, vec_n;     /* reply points of n floats; commits of vec_n (default n) */
  float *reply;        /* [n + 1] last reply: the point, then the stop flag */
} ps_client_t;

void ps_client_init(ps_client_t *c, rt_t *rt, size_t n);
void ps_client_free(ps_client_t *c);
void ps_client_set_vec_len(ps_client_t *c, size_t vec_n);
/* Each returns the stop flag of the reply (pull variants); the point is in c->reply[0..n). */
int ps_pull(ps_client_t *c, const ps_req_t *q);
void ps_push(ps_client_t *c, const ps_req_t *q, const float *vec);
int ps_push_pull(ps_client_t *c, const ps_req_t *q, const float *vec);
void ps_done(ps_client_t *c, const ps_req_t *q);
/* The worker leaves because a signal reached it (pdl_stop_signal). */
void ps_stopped(ps_client_t *c, const ps_req_t *q);
#endif
