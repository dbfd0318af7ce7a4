/* loop.c — the node loop every node program calls (algo.h): thread budget, stop and divergence
 * agreement, the evaluation schedule, the eval and summary lines (through the JSON writer, with
 * the algorithm's hooks), and the parameter dump. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "algo/algo.h"
#include "rt/mpi_util.h"

/* Workers whose local steps a LOOP_CLOCK sums: all but the server. */
static int clock_workers(const loop_t *L) {
  return L->job->algo->shape == ALGO_SERVER ? L->rt->nnodes - 1 : L->job->algo->shape == ALGO_ONE_NODE ? 1 : L->rt->nnodes;
}

void loop_init(loop_t *L, rt_t *rt, job_t *job, loop_sched_t sched, loop_json_fn eval_json,
               loop_json_fn summary_json, void *arg) {
  memset(L, 0, sizeof *L);
  L->rt = rt; L->job = job; L->r = &job->r; L->sched = sched;
  L->reporter = rt->node == 0;
  L->eval_json = eval_json; L->summary_json = summary_json; L->arg = arg;
  L->last_eval = -1;
  const train_cfg_t *c = &job->r.cfg;
  L->eval_every = c->eval_every > 0 ? c->eval_every : job->r.steps_per_epoch * clock_workers(L);
  L->next_eval = L->eval_every;
  L->next_epoch = 1;
  L->next_eval_ex = c->eval_every_examples;
}

int loop_threads(loop_t *L, int roles_per_rank) {
  const train_cfg_t *c = &L->r->cfg;   /* the user's: threads 0 = not given */
  int t;
  if (L->rt->ops->simulated) t = c->threads > 0 ? c->threads : 1;   /* actors run one at a time */
  else {
    long cores = sysconf(_SC_NPROCESSORS_ONLN); if (cores < 1) cores = 1;
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int local = ls ? atoi(ls) : 1; if (local < 1) local = 1;
    t = c->threads > 0 ? c->threads : (int)(cores / (local * roles_per_rank));
    if (t < 1) t = 1;
    if (pdl_mpi_rank() == 0 && L->reporter && !c->quiet)
      fprintf(stderr, "pdl: thread budget: %ld cores for %d rank(s) here x %d role(s) x %d OpenMP thread(s)%s\n",
              cores, local, roles_per_rank, t, (long)local * roles_per_rank * t > cores ? " -- OVERSUBSCRIBED" : "");
  }
  if (L->reporter) L->r->threads = t;   /* the "threads" figure: what each role uses */
  return t;
}

float loop_stop_flag(const loop_t *L) { return pdl_stop_signal || L->job->reached ? 1.0f : 0.0f; }

double loop_time(const loop_t *L) {
  return L->rt->ops->now(L->rt) - (L->rt->ops->simulated ? 0 : L->job->eval_time);
}

void loop_loss(loop_t *L, double loss_sum, long count) { L->loss_acc += loss_sum; L->loss_n += count; }

int loop_diverged(loop_t *L, double loss, long step) {
  if (isfinite(loss) && loss <= L->r->cfg.diverge_loss) return 0;
  if (L->sched != LOOP_CLOCK) L->updates = step + 1;
  if (L->reporter) run_check_diverged(L->r, loss, step);
  return 1;
}

static double epochs_of(const loop_t *L) {
  return L->sched == LOOP_UPDATES ? (double)L->updates / (double)L->r->steps_per_epoch
                                  : L->examples / (double)L->r->data.train.n;
}

/* Evaluates w at the current progress (reporter only) and writes the eval line. */
static void evaluate(loop_t *L, const float *w) {
  run_t *r = L->r;
  double t = loop_time(L), t0 = now_s();
  r->updates = L->updates;
  r->epochs_done = epochs_of(L);
  json_t x; json_frag_begin(&x);
  double train_loss_at_w = NAN;
  if (L->sched == LOOP_CLOCK) {   /* the point's own loss on the training set, as the EASGD paper plots the center */
    const dataset_t *tr = &r->data.train;
    int ntr = tr->n < r->data.test.n ? tr->n : r->data.test.n;
    double terr;
    net_evaluate(&r->eval_ws, w, tr->x, tr->y, ntr, &terr, &train_loss_at_w);
    r->train_loss = train_loss_at_w;
    json_num(&x, "worker_loss", L->loss_n ? L->loss_acc / (double)L->loss_n : NAN);
    json_num(&x, "train_err", terr);
  } else if (L->loss_n) r->train_loss = L->loss_acc / (double)L->loss_n;
  L->loss_acc = 0; L->loss_n = 0;
  if (L->eval_json) L->eval_json(&x, L, L->arg);
  run_eval(r, w, t, json_frag(&x));
  L->job->eval_time += now_s() - t0;
  L->last_eval = L->updates;
  if (L->sched == LOOP_CLOCK && run_check_diverged(r, train_loss_at_w, L->updates / clock_workers(L))) L->stop = 1;
  if (r->cfg.target_err > 0 && r->test_err <= r->cfg.target_err) L->job->reached = 1;
}

void loop_begin(loop_t *L, const float *w_eval) {
  if (L->reporter && L->sched == LOOP_CLOCK) evaluate(L, w_eval);
}

void loop_advance(loop_t *L, long updates, double examples) { L->updates = updates; L->examples = examples; }

int loop_progress(loop_t *L, const float *w_eval, long updates, double examples, int last) {
  loop_advance(L, updates, examples);
  if (!L->reporter) return 0;
  run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  int due = 0;
  switch (L->sched) {
    case LOOP_UPDATES:
      due = updates % r->steps_per_epoch == 0 || (c->eval_every && updates % c->eval_every == 0) || last;
      break;
    case LOOP_EXAMPLES: {
      double ep = examples / (double)r->data.train.n;
      int epoch_end = ep >= (double)L->next_epoch;
      if (epoch_end) L->next_epoch = (long)floor(ep) + 1;
      int ex_due = c->eval_every_examples > 0 && examples >= (double)L->next_eval_ex;
      if (ex_due) L->next_eval_ex = ((long)examples / c->eval_every_examples + 1) * c->eval_every_examples;
      due = epoch_end || last || ex_due || (c->eval_every_examples <= 0 && c->eval_every && updates % c->eval_every == 0);
      break;
    }
    case LOOP_CLOCK:
      due = updates >= L->next_eval;
      if (due) L->next_eval = (updates / L->eval_every + 1) * L->eval_every;
      break;
  }
  if (due) evaluate(L, w_eval);
  else if (!c->quiet) {
    r->epochs_done = epochs_of(L);
    progress("%s: update %ld  epoch %.2f  loss %.4f", c->algo, updates, r->epochs_done,
             L->loss_n ? L->loss_acc / (double)L->loss_n : NAN);
  }
  return L->stop;
}

void loop_finish(loop_t *L, const float *w_eval, const float *w_final) {
  if (!L->reporter) return;
  run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  if (L->updates != L->last_eval) evaluate(L, w_eval);
  L->t_end = loop_time(L);
  json_t x; json_frag_begin(&x);
  if (L->summary_json) L->summary_json(&x, L, L->arg);
  if (L->rt->ops->simulated) {
    json_str(&x, "platform", c->platform);
    json_str(&x, "device_rate", c->device_rate[0] ? c->device_rate : "platform default");
  }
  run_summary(r, L->t_end, json_frag(&x));
  run_dump_params(w_final, r->net.nparams);
}
