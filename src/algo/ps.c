/* ps.c — parameter server transport: see ps.h for the protocol and why it is point-to-point. */
#include "algo/ps.h"
#include "algo/algo.h"
#include <string.h>
#include "util/util.h"

void ps_server_init(ps_server_t *s, rt_t *rt, size_t n, int round_robin) {
  memset(s, 0, sizeof *s);
  s->rt = rt; s->n = n; s->p = rt->nnodes - 1; s->round_robin = round_robin;
  if (s->p < 1) die("parameter server: no workers (%d node(s); workers are nodes 1..N-1)", rt->nnodes);
  s->active = s->p; s->next = 1;
  s->left = xcalloc((size_t)s->p + 1, 1);
  s->vec_n = n;
  s->vec = xmalloc(n * sizeof(float));
  s->reply = xmalloc((n + 1) * sizeof(float));
}

void ps_server_set_vec_len(ps_server_t *s, size_t vec_n) {
  xfree(s->vec); s->vec_n = vec_n; s->vec = xmalloc(vec_n * sizeof(float));
}

void ps_server_free(ps_server_t *s) { xfree(s->left); xfree(s->vec); xfree(s->reply); memset(s, 0, sizeof *s); }

int ps_server_active(const ps_server_t *s) { return s->active > 0; }

int ps_server_next(ps_server_t *s, int *src, ps_req_t *q) {
  const rt_ops_t *o = s->rt->ops;
  int from;
  if (s->round_robin) {
    while (s->left[s->next]) s->next = s->next % s->p + 1;
    from = s->next;
    o->recv(s->rt, from, q, sizeof *q, PS_TAG_REQ);
    s->next = s->next % s->p + 1;
  } else {
    from = o->recv_any(s->rt, q, sizeof *q, PS_TAG_REQ);
  }
  if (from < 1 || from > s->p || s->left[from]) die("parameter server: request from node %d, which is not an active worker", from);
  if (q->op == PS_PUSH || q->op == PS_PUSH_PULL) o->recv(s->rt, from, s->vec, s->vec_n * sizeof(float), PS_TAG_VEC);
  else if (q->op == PS_DONE || q->op == PS_STOPPED) {
    s->left[from] = 1; s->active--;
    if (q->op == PS_STOPPED) { s->stop = q->sig >= 2 ? q->sig : 2; loop_interrupted((float)s->stop); }
  }
  else if (q->op != PS_PULL) die("parameter server: bad request op %d from node %d", q->op, from);
  *src = from;
  return q->op;
}

void ps_server_reply(ps_server_t *s, int dst, const float *point) {
  memcpy(s->reply, point, s->n * sizeof(float));
  s->reply[s->n] = (float)s->stop;
  s->rt->ops->send(s->rt, dst, s->reply, (s->n + 1) * sizeof(float), PS_TAG_REPLY);
}

void ps_client_init(ps_client_t *c, rt_t *rt, size_t n) {
  c->rt = rt; c->n = n; c->vec_n = n; c->reply = xmalloc((n + 1) * sizeof(float));
}

void ps_client_set_vec_len(ps_client_t *c, size_t vec_n) { c->vec_n = vec_n; }

void ps_client_free(ps_client_t *c) { xfree(c->reply); c->reply = NULL; }

static void send_req(ps_client_t *c, const ps_req_t *q, ps_op_t op) {
  ps_req_t h = *q; h.op = op;
  c->rt->ops->send(c->rt, 0, &h, sizeof h, PS_TAG_REQ);
}

static int get_reply(ps_client_t *c) {
  c->rt->ops->recv(c->rt, 0, c->reply, (c->n + 1) * sizeof(float), PS_TAG_REPLY);
  loop_interrupted(c->reply[c->n]);   /* a signal elsewhere is this node's too */
  return c->reply[c->n] != 0.0f;
}

int ps_pull(ps_client_t *c, const ps_req_t *q) { send_req(c, q, PS_PULL); return get_reply(c); }

void ps_push(ps_client_t *c, const ps_req_t *q, const float *vec) {
  send_req(c, q, PS_PUSH);
  c->rt->ops->send(c->rt, 0, vec, c->vec_n * sizeof(float), PS_TAG_VEC);
}

int ps_push_pull(ps_client_t *c, const ps_req_t *q, const float *vec) {
  send_req(c, q, PS_PUSH_PULL);
  c->rt->ops->send(c->rt, 0, vec, c->vec_n * sizeof(float), PS_TAG_VEC);
  return get_reply(c);
}

void ps_done(ps_client_t *c, const ps_req_t *q) { send_req(c, q, PS_DONE); }

void ps_stopped(ps_client_t *c, const ps_req_t *q) {
  ps_req_t h = *q; h.sig = pdl_stop_signal;
  send_req(c, &h, PS_STOPPED);
}
