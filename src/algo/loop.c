/* loop.c — the node loop every node program calls (algo.h): thread budget, stop and divergence
 * agreement, the learning-rate schedule, the evaluation schedule, the eval and summary lines
 * (through the JSON writer, with the algorithm's hooks), the parameter dump, checkpoints, and the
 * control floats. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>
#include "algo/algo.h"
#include "util/env.h"

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
  L->last_eval = -1; L->dev = -1;
  const train_cfg_t *c = &job->r.cfg;
  L->eval_every = c->eval_every > 0 ? c->eval_every : job->r.steps_per_epoch * clock_workers(L);
  L->next_eval = L->eval_every;
  L->next_epoch = 1;
  L->next_eval_ex = c->eval_every_examples;
  L->saved_updates = -1;
  if (sched == LOOP_LOCAL) {   /* local steps: every --eval-every of them, default an epoch of a shard */
    long shard = job->r.data.train.n / rt->nnodes / c->batch;
    L->eval_every = c->eval_every > 0 ? c->eval_every : shard < 1 ? 1 : shard;
    L->agree = c->target_err > 0 || c->checkpoint[0];
  }
  snap_init(&L->snap);
  snap_add(&L->snap, "loop", &L->persist, sizeof L->persist);
  if (sched == LOOP_LOCAL) snap_add(&L->snap, "loop.local", &L->local, sizeof L->local);
}

int loop_threads(loop_t *L, int roles_per_rank) {
  const train_cfg_t *c = &L->r->cfg;   /* the user's: threads 0 = not given */
  int t;
  if (L->rt->ops->simulated) t = c->threads > 0 ? c->threads : 1;   /* actors run one at a time */
  else {
    long cores = sysconf(_SC_NPROCESSORS_ONLN); if (cores < 1) cores = 1;
    const char *ls = env_get("OMPI_COMM_WORLD_LOCAL_SIZE");
    int local = ls ? atoi(ls) : 1; if (local < 1) local = 1;
    t = c->threads > 0 ? c->threads : (int)(cores / (local * roles_per_rank));
    if (t < 1) t = 1;
    /* The share, applied in this thread (the node's main role): OpenMP's count, which is per
     * thread (a role started from here inherits it: rt_real.c's thread_start), the CPU kernels'
     * own per-thread count (which also switches OpenBLAS to one thread, once: cpu_threads.c),
     * and the evaluations' workspace (sized for r->threads >= t at run set-up; evaluation
     * results do not depend on its thread count: the forward pass has no reduction across
     * threads, kernels/cpu). */
    omp_set_num_threads(t);
    const kernels_t *k = kernels_for(NULL, -1, NULL, NULL, 0);
    if (k->set_threads) k->set_threads(t);
    if (t < L->r->eval_ws.nthreads) L->r->eval_ws.nthreads = t;
    if (rt_real_node() == 0 && L->reporter && !c->quiet) {
      /* BLAS: Debian's OpenBLAS pthreads build has one thread count for the whole process (no
       * per-thread setting), kept at 1: the kernels call it from their own OpenMP regions. An
       * OpenMP build would follow each calling thread's OpenMP count, the share, instead. */
      const int bp = openblas_get_parallel();
      const char *wp = env_get("OMP_WAIT_POLICY");
      fprintf(stderr, "pdl: thread budget: %ld cores for %d rank(s) here x %d role(s) x %d OpenMP thread(s)%s; "
              "set in every role's thread; BLAS %d thread(s) (OpenBLAS %s); OMP_WAIT_POLICY %s\n",
              cores, local, roles_per_rank, t, (long)local * roles_per_rank * t > cores ? " -- OVERSUBSCRIBED" : "",
              openblas_get_num_threads(), bp == 0 ? "sequential" : bp == 1 ? "pthreads: one count per process" :
              "OpenMP: each thread's OpenMP count", wp && *wp ? wp : "unset (libgomp: spin briefly, then sleep)");
    }
  }
  if (L->reporter) L->r->threads = t;   /* the "threads" figure: what each role uses */
  return t;
}


/* The learning-rate schedule, the only one: lr, or a linear warm-up from lr/warmup to lr over the
 * first `warmup` steps, then held. */
static float lr_at(float lr, long step, long warmup) {
  if (warmup <= 0 || step >= warmup) return lr;
  return lr * (float)(step + 1) / (float)warmup;
}
float loop_lr(const loop_t *L, long step) { return lr_at(L->r->cfg.lr, step, L->r->cfg.warmup); }

double loop_time(const loop_t *L) {
  return L->time_base + L->rt->ops->now(L->rt) - (L->rt->ops->simulated ? 0 : L->job->eval_time);
}

void loop_loss(loop_t *L, double loss_sum, long count) { L->loss_acc += loss_sum; L->loss_n += count; }

int loop_diverged(loop_t *L, double loss, long step) {
  if (pdl_numerics_off) return 0;   /* a timing-only run has no loss: nothing stops it but its length */
  if (isfinite(loss) && loss <= L->r->cfg.diverge_loss) return 0;
  if (L->sched == LOOP_LOCAL) { L->local.diverged = 1; return 1; }   /* this node's own: it goes on */
  if (L->sched != LOOP_CLOCK) L->updates = step + 1;
  if (L->reporter) run_check_diverged(L->r, loss, step);
  return 1;
}

static double epochs_of(const loop_t *L) {
  return L->sched == LOOP_UPDATES ? (double)L->updates / (double)L->r->steps_per_epoch
                                  : L->examples / (double)L->r->data.train.n;
}

/* Evaluates w at the current progress (reporter only) and writes the eval line. */
/* Before an evaluation: the evaluation workspaces take the batch norm running statistics of this
 * node's training workspace (loop_state_ws); a net with batch norm on a node that has none dies
 * rather than evaluate with statistics nothing trained. */
static void bn_sync(loop_t *L) {
  run_t *r = L->r;
  if (!net_state_floats(&r->net)) return;
  if (!L->bn_src)
    die("%s: net '%s' has batch normalization, and this node evaluates without a replica whose running statistics it "
        "could use (not supported for this algorithm yet)", r->cfg.algo, r->net.spec);
  ws_state_copy(&r->eval_ws, L->bn_src);
  if (L->dk) ws_state_copy(&L->dws, L->bn_src);
}


/* A timing-only run's lines (--device phantom, issue 47): no numbers but times and counts, and they
 * say so. */
static void timing_json(json_t *x, const train_cfg_t *c) {
  if (!pdl_numerics_off) return;
  json_bool(x, "numerics", 0);
  json_bool(x, "timing_only", 1);
  json_str(x, "device", c->device.backend);
}

/* Evaluates w at the current progress (reporter only) and writes the eval line. A timing-only run
 * evaluates nothing (test and train figures null) but writes the line at the same point, so that
 * the schedule, and the eval lines' own figures (F_U, S_bar, ...), are those of a numerics run. */
static void evaluate(loop_t *L, const float *w) {
  run_t *r = L->r;
  if (!pdl_numerics_off) bn_sync(L);
  double t = loop_time(L), t0 = now_s();
  r->updates = L->updates;
  r->epochs_done = epochs_of(L);
  json_t x; json_frag_begin(&x);
  double train_loss_at_w = NAN;
  if (pdl_numerics_off) {
    r->train_loss = r->test_err = r->test_loss = NAN;
    timing_json(&x, &r->cfg);
  } else if (L->sched == LOOP_CLOCK) {   /* the point's own loss on the training set, as the EASGD paper plots the center */
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
  if (pdl_numerics_off) {
    run_eval_write(r, t, json_frag(&x));
  } else if (L->dk) {   /* w in the device's memory */
    net_evaluate_ws(&L->dws, w, L->dte.x, L->dte.y, L->dte.n, &r->test_err, &r->test_loss);
    run_eval_write(r, t, json_frag(&x));
  } else {
    run_eval(r, w, t, json_frag(&x));
  }
  L->job->eval_time += now_s() - t0;
  L->last_eval = L->updates;
  if (L->sched == LOOP_CLOCK && !pdl_numerics_off && run_check_diverged(r, train_loss_at_w, L->updates / clock_workers(L)))
    L->stop = 1;
  if (r->cfg.target_err > 0 && r->test_err <= r->cfg.target_err) L->job->reached = 1;
}

/* ---- LOOP_LOCAL: every node evaluates its own model ------------------------------------------ */
/* Node 0: eval line e from every node's records, node k's at ev[(k m + e) LOOP_LOCAL_F]: the
 * mean test error and loss over the nodes at that point, mean and latest time, each node's error. */
static void local_line(loop_t *L, const float *ev, long m, long e) {
  run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  int K = L->rt->nnodes;
  double err = 0, loss = 0, tm = 0, tmax = 0, *errs = xmalloc((size_t)K * sizeof(double));
  for (int k = 0; k < K; k++) {
    const float *x = ev + ((size_t)k * m + e) * LOOP_LOCAL_F;
    err += x[2]; loss += x[3]; tm += x[1]; if (x[1] > tmax) tmax = x[1]; errs[k] = x[2];
  }
  const float *x0 = ev + (size_t)e * LOOP_LOCAL_F;
  r->updates = (long)x0[0]; r->epochs_done = (double)x0[0] * K * c->batch / r->data.train.n;
  r->test_err = err / K; r->test_loss = loss / K;
  json_t j; run_json_common(r, &j, "eval");
  json_int(&j, "updates", r->updates); json_num(&j, "epochs", r->epochs_done);
  json_num(&j, "time_s", tm / K); json_num(&j, "time_max_s", tmax);
  json_num(&j, "test_err", r->test_err); json_num(&j, "test_loss", r->test_loss);
  json_num_array(&j, "test_err_nodes", errs, K, 5);
  timing_json(&j, c);
  results_write(&r->res, json_end(&j));
  if (!c->quiet) fprintf(stderr, "%s: step %ld  time %.4g s  mean test_err %.4f\n", c->algo, r->updates, tm / K, r->test_err);
  xfree(errs);
}

/* Agreeing nodes: every node's record and control floats in one allreduce; node 0 writes the
 * line; every node reads the same stop (the mean error at --target-err, a node's divergence, a
 * signal anywhere) from the same sums. */
static void local_agree(loop_t *L, const float *rec) {
  rt_t *rt = L->rt; run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  int K = rt->nnodes;
  size_t nf = (size_t)K * LOOP_LOCAL_F;
  float *v = xcalloc(nf + CTL_F, sizeof(float));
  memcpy(v + (size_t)rt->node * LOOP_LOCAL_F, rec, LOOP_LOCAL_F * sizeof(float));
  ctl_pack(v + nf, 0, (float)L->local.diverged);   /* (the eval lines carry no train loss) */
  if (K > 1) rt->ops->allreduce(rt, v, nf + CTL_F);
  ctl_t x = ctl_unpack(v + nf);
  double err = 0;
  for (int k = 0; k < K; k++) err += v[(size_t)k * LOOP_LOCAL_F + 2];
  err /= K;
  int reached = c->target_err > 0 && err <= c->target_err;
  if (L->reporter) {
    local_line(L, v, 1, 0);
    if (reached) L->job->reached = 1;
    if (x.stop > 0 && !r->diverged) { r->diverged = 1; r->diverged_at = L->updates; }
  }
  if (x.signal > 0) loop_interrupted(x.signal);
  L->stop = reached || x.stop > 0 || x.signal > 0;
  xfree(v);
}

static void local_evaluate(loop_t *L, const float *w) {
  run_t *r = L->r; const train_cfg_t *c = &r->cfg; const dataset_t *te = &r->data.test;
  double err = NAN, loss = NAN;   /* a timing-only run: none */
  if (!pdl_numerics_off) {
    bn_sync(L);
    net_evaluate(&r->eval_ws, w, te->x, te->y, te->n, &err, &loss);
  }
  float rec[LOOP_LOCAL_F] = {(float)L->updates, (float)(L->time_base + L->rt->ops->now(L->rt)), (float)err, (float)loss};
  if (L->reporter && !c->quiet) progress("%s: node 0 step %ld/%ld  test_err %.4f", c->algo, L->updates, r->total_steps, err);
  L->last_eval = L->updates;
  if (L->agree) { local_agree(L, rec); return; }
  if (L->ev_n + LOOP_LOCAL_F > L->ev_cap) {
    L->ev_cap = (L->ev_cap + LOOP_LOCAL_F) * 2;
    float *v = xmalloc((size_t)L->ev_cap * sizeof(float));
    if (L->ev_n) memcpy(v, L->ev, (size_t)L->ev_n * sizeof(float));
    xfree(L->ev); L->ev = v;
  }
  memcpy(L->ev + L->ev_n, rec, sizeof rec); L->ev_n += LOOP_LOCAL_F;
}

int loop_due(const loop_t *L, long updates, int last) {
  return L->sched == LOOP_LOCAL && (updates % L->eval_every == 0 || last);
}

int loop_eval_due(const loop_t *L, long updates, int last) {
  const run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  if (L->sched == LOOP_LOCAL) return loop_due(L, updates, last);
  return L->sched == LOOP_UPDATES &&
         (updates % r->steps_per_epoch == 0 || (c->eval_every && updates % c->eval_every == 0) || last);
}

void loop_device_state(loop_t *L, void (*to_host)(void *arg), void *arg) { L->to_host = to_host; L->to_host_arg = arg; }

void allreduce_ws(rt_t *rt, const kernels_t *k, float *x, float *host, size_t m) {
  if (k->host_memory) { rt->ops->allreduce(rt, x, m); return; }
  if (rt->ops->allreduce_dev && rt->ops->allreduce_dev(rt, x, m, k->stream ? k->stream() : NULL)) return;
  k->download(host, x, m * sizeof(float));
  rt->ops->allreduce(rt, host, m);
  k->upload(x, host, m * sizeof(float));
}

static int local_progress(loop_t *L, const float *w, long updates, int last) {
  L->updates = updates;
  if (loop_due(L, updates, last)) local_evaluate(L, w);
  L->t_node = L->time_base + L->rt->ops->now(L->rt);
  return L->agree ? L->stop : pdl_stop_signal != 0;   /* not agreeing: a signal stops this node alone */
}

/* Every node: the records (unless written as agreed), end times and divergence flags to node 0,
 * which writes the eval lines (up to the point every node reached) and takes the last end. */
static void local_finish(loop_t *L, const float *w) {
  rt_t *rt = L->rt; run_t *r = L->r;
  int K = rt->nnodes;
  if (L->updates != L->last_eval) { local_evaluate(L, w); L->t_node = L->time_base + rt->ops->now(rt); }
  float mine[3] = {(float)(L->ev_n / LOOP_LOCAL_F), (float)L->t_node, (float)L->local.diverged};
  float *info = xmalloc(3 * (size_t)K * sizeof(float));
  size_t *cnt = xmalloc((size_t)K * sizeof(size_t)), tot = 0;
  for (int k = 0; k < K; k++) cnt[k] = 3;
  rt->ops->allgatherv(rt, mine, info, cnt);
  long m = LONG_MAX;
  for (int k = 0; k < K; k++) { cnt[k] = (size_t)info[3 * k] * LOOP_LOCAL_F; tot += cnt[k]; if ((long)info[3 * k] < m) m = (long)info[3 * k]; }
  float *all = NULL;
  if (!L->agree) {
    all = xmalloc((tot ? tot : 1) * sizeof(float));
    if (!L->ev) L->ev = xmalloc(sizeof(float));
    rt->ops->allgatherv(rt, L->ev, all, cnt);
  }
  if (L->reporter) {
    if (all) {   /* node k's first m records, [K][m] */
      float *ev = xmalloc(((size_t)K * m + 1) * LOOP_LOCAL_F * sizeof(float));
      for (size_t k = 0, off = 0; k < (size_t)K; off += cnt[k], k++) memcpy(ev + k * m * LOOP_LOCAL_F, all + off, (size_t)m * LOOP_LOCAL_F * sizeof(float));
      for (long e = 0; e < m; e++) local_line(L, ev, m, e);
      xfree(ev);
    }
    L->t_end = L->t_node;
    for (int k = 0; k < K; k++) {
      if (info[3 * k + 1] > L->t_end) L->t_end = info[3 * k + 1];   /* the last node's end */
      if (info[3 * k + 2] != 0 && !r->diverged) { r->diverged = 1; r->diverged_at = -1; }
    }
  }
  xfree(all); xfree(info); xfree(cnt); xfree(L->ev); L->ev = NULL; L->ev_n = L->ev_cap = 0;
}

void loop_begin(loop_t *L, const float *w_eval) {
  if (L->reporter && !L->resumed && L->sched == LOOP_CLOCK) evaluate(L, w_eval);
}

void loop_advance(loop_t *L, long updates, double examples) { L->updates = updates; L->examples = examples; }

int loop_progress(loop_t *L, const float *w_eval, long updates, double examples, int last) {
  loop_advance(L, updates, examples);
  if (L->sched == LOOP_LOCAL) return local_progress(L, w_eval, updates, last);
  if (!L->reporter) return 0;
  run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  int due = 0;
  switch (L->sched) {
    case LOOP_UPDATES:
      due = loop_eval_due(L, updates, last);
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
    case LOOP_LOCAL: break;
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
  if (L->to_host) L->to_host(L->to_host_arg);   /* w_final (and the state) from the device */
  if (L->sched == LOOP_LOCAL) local_finish(L, w_eval);   /* every node */
  if (!L->reporter) return;
  run_t *r = L->r; const train_cfg_t *c = &r->cfg;
  if (L->sched != LOOP_LOCAL) {
    if (L->updates != L->last_eval && L->keep_diverged && r->diverged) {   /* no evaluation of the diverged point */
      r->updates = L->updates; r->epochs_done = epochs_of(L);
      if (L->loss_n) r->train_loss = L->loss_acc / (double)L->loss_n;
    } else if (L->updates != L->last_eval) evaluate(L, w_eval);
    L->t_end = loop_time(L);
  }
  json_t x; json_frag_begin(&x);
  timing_json(&x, c);
  if (L->summary_json) L->summary_json(&x, L, L->arg);
  if (L->rt->ops->simulated) {
    json_str(&x, "platform", c->platform);
    json_str(&x, "device_rate", c->device_rate[0] ? c->device_rate : "platform default");
  }
  run_summary(r, L->t_end, json_frag(&x));
  run_dump_params(w_final, r->net.nparams);
  if (L->dk) { ws_free(&L->dws); resident_set_free(&L->dte); L->dk = NULL; }
}

void loop_on_device(loop_t *L, const kernels_t *k) {
  if (L->sched != LOOP_UPDATES) die("internal: loop_on_device is for LOOP_UPDATES nodes");
  if (!L->reporter) return;
  run_t *r = L->r;
  L->dk = k;
  ws_init(&L->dws, &r->net, r->eval_ws.max_batch, r->eval_ws.nthreads, k, r->cfg.seed);
  resident_set_init(&L->dte, k, &r->data.test);
}

const kernels_t *loop_device(loop_t *L, const char *what, int keep) {
  const train_cfg_t *c = &L->r->cfg;
  L->dev = -1;
  if (kernels_device_is_host(&c->device)) return NULL;
  rt_t *rt = L->rt;
  if (!rt->ops->gpu) die("internal: --device %s needs the real runtime's device choice", c->device.backend);
  const int nd = kernels_devices(c->device.backend, NULL, 0);
  L->dev = kernels_device_index(&c->device, rt->ops->gpu(rt, nd), "--device");
  char desc[256] = "";
  const kernels_t *k = L->pk = kernels_for(&c->device, L->dev, "--device", desc, sizeof desc);
  if (!c->quiet)
    fprintf(stderr, "pdl: rank %d of %d: %s on %s:%d (%s)\n", rt->node, rt->nnodes, what, c->device.backend, L->dev, desc);
  if (keep && !k->host_memory) loop_on_device(L, k);
  return k;
}

void loop_device_thread(const loop_t *L) {
  if (L->pk && L->pk->bind) L->pk->bind(L->dev);
}

void loop_device_replica(const loop_t *L, replica_t *rp) {
  if (L->pk) replica_on(rp, L->pk);
}

/* ---- placement ------------------------------------------------------------------------------ */
static void place_to_host(void *arg) { loop_place_download(arg); }

const kernels_t *loop_place(loop_t *L, loop_place_t *P, const char *what, float *w, optim_t *o, size_t m) {
  memset(P, 0, sizeof *P);
  const kernels_t *dk = loop_device(L, what, 1);
  P->k = dk ? dk : kernels_for(NULL, -1, NULL, NULL, 0);
  P->hw = w; P->ho = o; P->m = m;
  train_state_init(&P->d, P->k, w, NULL, o);   /* on the host: w and o themselves */
  P->w = P->d.w; P->o = P->d.o;
  if (m) { P->xh = xcalloc(m, sizeof(float)); P->x = loop_twin(P->k, P->xh, m); }
  if (P->d.device) loop_device_state(L, place_to_host, P);   /* w and o come to the host only to be read there */
  return P->k;
}
void loop_place_upload(loop_place_t *P) { train_state_upload(&P->d, P->hw, P->ho); }
void loop_place_download(loop_place_t *P) { train_state_download(&P->d, P->hw, P->ho); }
void loop_place_free(loop_place_t *P) {
  if (P->m) { loop_twin_free(P->k, P->x, P->xh); xfree(P->xh); }
  train_state_free(&P->d);
  memset(P, 0, sizeof *P);
}

float *loop_twin(const kernels_t *k, float *h, size_t n) {
  return k->host_memory ? h : k->alloc((n ? n : 1) * sizeof(float));
}
void loop_twin_free(const kernels_t *k, float *x, float *h) { if (x && x != h) k->release(x); }
void loop_twin_down(const kernels_t *k, float *h, const float *x, size_t n) { if (h != x) k->download(h, x, n * sizeof(float)); }
void loop_twin_up(const kernels_t *k, float *x, const float *h, size_t n) { if (x != h) k->upload(x, h, n * sizeof(float)); }
void loop_zero(const kernels_t *k, float *x, size_t n) {
  if (k->host_memory) vec_zero(x, n);
  else k->axpby(x, 1, NULL, 0, n, 0.0f, 0.0f);
}
void loop_scale(const kernels_t *k, float *x, float s, size_t n) {
  if (k->host_memory) vec_scale(x, s, n);
  else k->axpby(x, 1, NULL, 0, n, s, 0.0f);
}
const float *loop_host_view(const kernels_t *k, float *h, const float *x, size_t n) {
  if (k->host_memory) return x;
  k->download(h, x, n * sizeof(float));
  return h;
}

/* ---- checkpoints ---------------------------------------------------------------------------- */
void loop_state(loop_t *L, const char *name, void *p, size_t bytes) { snap_add(&L->snap, name, p, bytes); }
void loop_state_optim(loop_t *L, const char *name, optim_t *o) { snap_add_optim(&L->snap, name, o); }
void loop_state_replica(loop_t *L, const char *name, replica_t *rp) {
  char b[32];
  snprintf(b, sizeof b, "%.20s.sampler", name); snap_add_sampler(&L->snap, b, &rp->s);
  snprintf(b, sizeof b, "%.20s.rng", name); snap_add(&L->snap, b, &rp->ws.rng, sizeof rp->ws.rng);
  snprintf(b, sizeof b, "%.20s.bn", name); loop_state_ws(L, b, &rp->ws);
}
void loop_state_ws(loop_t *L, const char *name, workspace_t *ws) {
  if (!net_state_floats(ws->net)) return;
  snap_add_ws(&L->snap, name, ws);
  if (!L->bn_src) L->bn_src = ws;
}

float loop_signal_flag(void) { return (float)pdl_stop_signal; }
void loop_interrupted(float flag) {
  if (flag >= 2 && !pdl_stop_signal) pdl_stop_signal = flag < 64 ? (int)flag : SIGTERM;
}

void ctl_pack(float *p, double loss, float stop) { p[0] = (float)loss; p[1] = stop; p[2] = loop_signal_flag(); }
ctl_t ctl_unpack(const float *p) { ctl_t x = {p[0], p[1], p[2]}; return x; }
void ctl_merge(ctl_t *acc, const float *p) {
  acc->loss += p[0];
  if (p[1] > acc->stop) acc->stop = p[1];
  if (p[2] > acc->signal) acc->signal = p[2];
}
ctl_t loop_allreduce_ctl(rt_t *rt, const kernels_t *k, float *x, float *xh, size_t n, double loss, float stop) {
  ctl_pack(xh + n, loss, stop);
  loop_twin_up(k, x + n, xh + n, CTL_F);
  allreduce_ws(rt, k, x, xh, n + CTL_F);
  loop_twin_down(k, xh + n, x + n, CTL_F);   /* (a wait for the sum on a device) */
  return ctl_unpack(xh + n);
}

static void persist_out(loop_t *L) {   /* loop -> the saved section */
  struct loop_persist *P = &L->persist; run_t *r = L->r;
  P->updates = L->updates; P->examples = L->examples; P->loss_acc = L->loss_acc; P->loss_n = L->loss_n;
  P->last_eval = L->last_eval; P->next_eval = L->next_eval; P->next_epoch = L->next_epoch;
  P->next_eval_ex = L->next_eval_ex; P->saved_epoch = L->saved_epoch;
  P->time = L->sched == LOOP_LOCAL ? L->t_node : loop_time(L);   /* local steps: at the node's latest progress */
  P->reached = L->job->reached;
  P->test_err = r->test_err; P->test_loss = r->test_loss; P->train_loss = r->train_loss;
  P->r_updates = r->updates; P->epochs_done = r->epochs_done; P->diverged = r->diverged; P->diverged_at = r->diverged_at;
}

static void persist_in(loop_t *L) {
  const struct loop_persist *P = &L->persist; run_t *r = L->r;
  L->updates = P->updates; L->examples = P->examples; L->loss_acc = P->loss_acc; L->loss_n = P->loss_n;
  L->last_eval = P->last_eval; L->next_eval = P->next_eval; L->next_epoch = P->next_epoch;
  L->next_eval_ex = P->next_eval_ex; L->saved_epoch = P->saved_epoch; L->time_base = P->time;
  if (L->reporter) {
    L->job->reached = P->reached;
    r->test_err = P->test_err; r->test_loss = P->test_loss; r->train_loss = P->train_loss;
    r->updates = P->r_updates; r->epochs_done = P->epochs_done; r->diverged = P->diverged; r->diverged_at = P->diverged_at;
  }
}

/* Every figure of the saved "loop" section against what a run can hold (issue 46: a checksummed
 * file can still be crafted): exit 1 naming the checkpoint and the field. */
static void persist_check(const loop_t *L, const char *path) {
  const struct loop_persist *P = &L->persist;
  const double big = (double)(1L << 40);   /* --steps' own bound */
#define RANGE(field, lo, hi) do { double v_ = (double)P->field; if (!(v_ >= (lo) && v_ <= (hi))) \
    die("checkpoint %s: field '%s' of section 'loop' is %g, out of range [%g, %g]: a damaged or crafted file; start " \
        "over without --resume", path, #field, v_, (double)(lo), (double)(hi)); } while (0)
#define RANGE_NAN(field, lo, hi) do { if (!isnan(P->field)) RANGE(field, lo, hi); } while (0)
  RANGE(updates, 0, big);
  RANGE(examples, 0, big * 65536);
  RANGE(loss_n, 0, big * 65536);
  RANGE(last_eval, -1, P->updates);
  RANGE(next_eval, 0, 2 * big);
  RANGE(next_epoch, 0, 2 * big);
  RANGE(next_eval_ex, 0, big * 65536);
  RANGE(saved_epoch, -1, 2 * big);
  RANGE(diverged_at, -1, P->updates);
  RANGE(r_updates, 0, big);
  RANGE(time, -1, 1e12);
  RANGE_NAN(test_err, 0, 1);
  RANGE_NAN(test_loss, 0, INFINITY);
  RANGE_NAN(train_loss, 0, INFINITY);
  RANGE(epochs_done, 0, big);
  RANGE(reached, 0, 1);
  RANGE(diverged, 0, 1);
#undef RANGE_NAN
#undef RANGE
}

/* snap_probe of a node's file; a corrupt one (checksum, length) counts as missing when its other
 * generation is whole, and the node says so: a distributed resume falls back to the kept .prev. */
static long probe_generation(loop_t *L, const char *path, char *why, size_t n, long *updates) {
  long g = snap_probe(path, L->r, L->rt->node, L->rt->nnodes, &L->snap, why, n, updates);   /* ("loop" is the first section) */
  return g;
}

int loop_resume(loop_t *L) {
  const train_cfg_t *c = &L->r->cfg;
  if (!c->checkpoint[0] || !c->resume) return 0;
  rt_t *rt = L->rt;
  int me = rt->node, N = rt->nnodes;
  char cur[4200], prev[4200];
  snap_path(cur, sizeof cur, c->checkpoint, me, N, 0);
  snap_path(prev, sizeof prev, c->checkpoint, me, N, 1);
  char wc[600] = "", wp[600] = "";
  long uc, up;   /* each generation's update count */
  long gc = probe_generation(L, cur, wc, sizeof wc, &uc), gp = probe_generation(L, prev, wp, sizeof wp, &up);
  if (gc == -2 && gp >= 0) {
    fprintf(stderr, "pdl: checkpoint %s: %s; falling back to the kept previous generation %s (snapshot %ld)\n", cur, wc, prev, gp);
    gc = -1;
  } else if (gc == -2) die("checkpoint %s: %s%s%s; start over without --resume", cur, wc, gp == -2 ? ", and so is its .prev: " : "", gp == -2 ? wp : "");
  if (gp == -2) {
    fprintf(stderr, "pdl: checkpoint %s: %s; the newest generation %s is whole and is used\n", prev, wp, cur);
    gp = -1;
  }
  /* every node's two generations (0: no file), summed into one vector that all nodes see; but on a
   * clock of local steps (a server and its workers, each at its own count), their update counts */
  const int cut = L->sched != LOOP_CLOCK;   /* a snapshot is one cut: every node at the same update */
  float *v = xcalloc((cut ? 4 : 2) * (size_t)N, sizeof(float));
  v[2 * me] = (float)(gc + 1); v[2 * me + 1] = (float)(gp + 1);
  if (cut) { v[2 * N + 2 * me] = (float)uc; v[2 * N + 2 * me + 1] = (float)up; }
  if (N > 1) rt->ops->allreduce(rt, v, (cut ? 4 : 2) * (size_t)N);
  long best = 0; int any = 0;
  for (int k = 0; k < 2 * N; k++) {   /* the newest generation every node holds */
    long g = (long)v[k] - 1;
    if (g > 0) any = 1;
    if (g <= best) continue;
    int all = 1;
    for (int i = 0; i < N && all; i++) all = (long)v[2 * i] - 1 == g || (long)v[2 * i + 1] - 1 == g;
    if (all) best = g;
  }
  if (!best && any) {
    char list[2048]; size_t o = 0; list[0] = 0;
    for (int i = 0; i < N && o < sizeof list - 64; i++)
      o += (size_t)snprintf(list + o, sizeof list - o, "%snode %d: %ld/%ld", i ? ", " : "", i, (long)v[2 * i] - 1, (long)v[2 * i + 1] - 1);
    xfree(v);
    die("checkpoint %s: the nodes' files hold no common snapshot generation (file/.prev per node, -1 = missing: %s); "
        "start over without --resume", c->checkpoint, list);
  }
  for (int i = 1; cut && best && i < N; i++) {   /* a crafted count in one node's file: the nodes would wait on each
                                                     other for ever (a collective that one node no longer calls) */
    const int ip = (long)v[2 * i] - 1 != best, i0p = (long)v[0] - 1 != best;
    const float ui = v[2 * N + 2 * i + ip], u0 = v[2 * N + i0p];
    if (ui == u0) continue;
    char f[4200]; snap_path(f, sizeof f, c->checkpoint, i, N, ip);
    xfree(v);
    die("checkpoint %s: snapshot %ld is at update %.0f there but at update %.0f in node 0's file: the nodes' files are "
        "not one cut (a damaged or crafted file); start over without --resume", f, best, ui, u0);
  }
  xfree(v);
  if (!best) {
    if (L->reporter && !c->quiet) fprintf(stderr, "pdl: no checkpoint at %s: starting from update 0\n", c->checkpoint);
    return 0;
  }
  snap_read(best == gc ? cur : prev, L->r, me, N, &L->snap, 1);
  L->gen = best;
  L->resumed_prev = best != gc;   /* loop_node_file names the file read */
  persist_check(L, best == gc ? cur : prev);   /* a checksummed file can still be crafted */
  if (L->sched == LOOP_LOCAL && !(L->local.diverged == 0 || L->local.diverged == 1))   /* a flag */
    die("checkpoint %s: field 'diverged' of section 'loop.local' is %g, not 0 or 1: a damaged or crafted file; start "
        "over without --resume", best == gc ? cur : prev, L->local.diverged);
  persist_in(L);
  if (L->sched == LOOP_LOCAL) {
    /* the cut again: the nodes leave an allreduce of an agreed evaluation's size together, as they
     * left the one they saved after (the sim's small allreduce ends with a bcast from node 0, so
     * the nodes' relative times then do not depend on when each entered) */
    size_t nf = (size_t)N * LOOP_LOCAL_F + CTL_F;
    float *z = xcalloc(nf, sizeof(float));
    if (N > 1) rt->ops->allreduce(rt, z, nf);
    xfree(z);
    L->time_base -= rt->ops->now(rt);   /* the records' clock goes on from the snapshot's */
  }
  L->resumed = 1;
  L->saved_updates = L->updates;
  if (L->reporter) {
    long limit = L->sched == LOOP_CLOCK ? L->r->total_steps * clock_workers(L) : L->r->total_steps;
    if (L->sched != LOOP_EXAMPLES && L->updates > limit)
      die("checkpoint %s is at update %ld, past this run's %ld updates: nothing to resume (ask for more "
          "--steps/--epochs, or drop --resume to start over)", c->checkpoint, L->updates, limit);
    if (!c->quiet) fprintf(stderr, "pdl: resumed from %s (snapshot %ld%s, %d node file%s) at update %ld\n", c->checkpoint, best,
                           best == gc ? "" : ", the kept .prev generation", N, N > 1 ? "s" : "", L->updates);
    json_t j; run_json_common(L->r, &j, "resume");
    json_int(&j, "resumed_at", L->updates); json_int(&j, "snapshot", best); json_int(&j, "nodes", N);
    results_write(&L->r->res, json_end(&j));
  }
  return 1;
}

const char *loop_node_file(const loop_t *L) {
  static char path[4200];   /* (sim: actors run one at a time; real: one node per process) */
  snap_path(path, sizeof path, L->r->cfg.checkpoint, L->rt->node, L->rt->nnodes, L->resumed_prev);
  return path;
}

void loop_check(const loop_t *L, double v, double lo, double hi, const char *field, ...) {
  if (v >= lo && v <= hi) return;   /* (NaN fails both) */
  char name[160];
  va_list ap; va_start(ap, field); vsnprintf(name, sizeof name, field, ap); va_end(ap);
  die("checkpoint %s: field '%s' is %.15g, out of range [%.15g, %.15g]: a damaged or crafted file; start over without "
      "--resume", loop_node_file(L), name, v, lo, hi);
}

int loop_checkpoint(loop_t *L, int now) {
  const train_cfg_t *c = &L->r->cfg;
  if (!c->checkpoint[0]) return 0;
  long epoch = L->sched == LOOP_UPDATES || L->sched == LOOP_LOCAL ? L->updates / L->r->steps_per_epoch
             : (long)(L->examples / (double)L->r->data.train.n);
  if (!now && (L->sched == LOOP_CLOCK || epoch <= L->saved_epoch)) return 0;
  if (!now && L->sched == LOOP_LOCAL && L->last_eval != L->updates) return 0;   /* a cut: just after an agreed evaluation */
  if (now && L->updates == L->saved_updates && !pdl_stop_signal) return 0;   /* this state is saved already */
  L->saved_epoch = epoch; L->saved_updates = L->updates;
  if (L->to_host) L->to_host(L->to_host_arg);   /* the device's state into the snapshot's host memory */
  L->gen++;
  persist_out(L);
  char path[4200];
  snap_path(path, sizeof path, c->checkpoint, L->rt->node, L->rt->nnodes, 0);
  /* the first save of a run that did not resume keeps no .prev: a file there is another run's
   * (--overwrite), whose generations must not mix with this run's at a later --resume */
  const int fresh = !L->resumed && L->gen == 1;
  if (fresh) { char prev[4200]; snap_path(prev, sizeof prev, c->checkpoint, L->rt->node, L->rt->nnodes, 1); unlink(prev); }
  snap_save(path, L->r, L->rt->node, L->rt->nnodes, L->gen, &L->snap, !fresh);
  if (L->reporter && pdl_stop_signal)
    fprintf(stderr, "pdl: signal %d: checkpoint saved to %s%s at update %ld\n", pdl_stop_signal, c->checkpoint,
            L->rt->nnodes > 1 ? " (and .node<k> per node)" : "", L->updates);
  return 1;
}
