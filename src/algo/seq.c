/* seq.c — the EASGD paper's p = 1 comparators (sgd, msgd, nag, asgd, mvasgd; its supplement's
 * Fig. 6) as node programs on the seam: one node, no server, the core's optimizer, its time
 * simulated like the distributed runs' and its evaluation that of a parameter server's center
 * (LOOP_CLOCK), so its curves sit on the same axes as EASGD's. A run with --threads 1 and a net
 * without dropout equals `pdl train --algo <opt>` bit for bit. Not a distributed algorithm: an
 * analysis that reuses the algorithm layer. */
#include <string.h>
#include "algo/algo.h"
#include "rt/watchdog.h"

static void seq_summary_json(json_t *j, const loop_t *L, void *arg) {
  const optim_t *o = arg; const train_cfg_t *c = &L->r->cfg;
  double steps = (double)L->updates;
  json_int(j, "nodes", L->rt->nnodes); json_int(j, "workers", 1); json_int(j, "tau", c->tau);
  float alpha = c->alpha >= 0 ? c->alpha : c->beta;
  json_num(j, "alpha", alpha); json_num(j, "beta", alpha); json_num(j, "delta", c->delta);
  json_num(j, "steps_per_worker", steps); json_int(j, "master_clock", 0);
  json_num(j, "time_per_step_s", steps > 0 ? L->t_end / steps : 0.0);
  json_str(j, "eval_point", o->kind == OPT_ASGD || o->kind == OPT_MVASGD ? "average" : "iterate");
  json_str(j, "ps_order", c->ps_round_robin ? "round-robin" : "any");
}

static void seq_eval_json(json_t *j, const loop_t *L, void *arg) {
  (void)arg; const train_cfg_t *c = &L->r->cfg;
  json_int(j, "master_clock", 0); json_int(j, "tau", c->tau); json_int(j, "workers", 1);
}

static void seq_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  if (rt->nnodes != 1) die_usage("train: --algo %s runs on one node (no mpirun -np > 1; a sim platform of one node)", c->algo);
  size_t n = r->net.nparams;
  optim_t o; optim_init(&o, (opt_kind_t)job->algo->variant, n, c->momentum, c->wd);
  loop_t L; loop_init(&L, rt, job, LOOP_CLOCK, seq_eval_json, seq_summary_json, &o);
  float *x = xmalloc(n * sizeof(float)), *g = xmalloc(n * sizeof(float));   /* [n] */
  net_init_params(&r->net, x, c->seed);
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 1), 0, 1, c->with_replacement, 0);
  const kernels_t *dk = loop_device(&L, "gradients", 0);   /* --device: the gradients there, x on the host */
  if (dk) replica_on(&rep, dk);
  loop_begin(&L, x);
  for (long t = 0; t < r->total_steps && !pdl_stop_signal; t++) {
    watchdog_context("%s: step %ld of %ld", c->algo, t, r->total_steps);
    double loss = replica_grad_on_device(&rep, rt, 0, optim_grad_point(&o, x), g);
    optim_step(&o, x, g, lr_at(c->lr, t, c->warmup));
    rt->ops->work(rt, 4.0 * n * 6);
    loop_advance(&L, t + 1, (double)(t + 1) * c->batch);
    loop_loss(&L, loss, 1);
    if (loop_diverged(&L, loss, t + 1)) break;
    if (loop_progress(&L, optim_eval_point(&o, x), t + 1, (double)(t + 1) * c->batch, 0)) break;
  }
  loop_finish(&L, optim_eval_point(&o, x), x);
  optim_free(&o); replica_free(&rep); xfree(x); xfree(g);
}

static const optdef_t *const seq_opts[] = {ALGO_OPTS_DIST, &od_with_replacement, NULL};
#define SEQ_ALGO(cname, aname, kind, text) \
  const algo_t algo_##cname = {.name = aname, .shape = ALGO_ONE_NODE, .node = seq_node, .variant = kind, .device = 1, \
                               .opts = seq_opts, .help = text};
SEQ_ALGO(seq_sgd, "seq-sgd", OPT_SGD, "p = 1 comparator on the seam: the core's sgd (simulated time, center-style evaluation)")
SEQ_ALGO(seq_msgd, "seq-msgd", OPT_MSGD, "p = 1 comparator on the seam: the core's msgd")
SEQ_ALGO(seq_nag, "seq-nag", OPT_NAG, "p = 1 comparator on the seam: the core's nag (Nesterov MSGD)")
SEQ_ALGO(seq_asgd, "seq-asgd", OPT_ASGD, "p = 1 comparator on the seam: the core's asgd (evaluated at the average)")
SEQ_ALGO(seq_mvasgd, "seq-mvasgd", OPT_MVASGD, "p = 1 comparator on the seam: the core's mvasgd (evaluated at the average)")
