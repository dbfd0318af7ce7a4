/* seq.c — the one-node algorithms on the node loop:
 *   - the sequential optimizers of `pdl train` (sgd, msgd, nag, adam, asgd, mvasgd): one replica,
 *     one optimizer, bit-identical for a seed and thread count, on the CPU or on --device cuda
 *     (every optimizer: the parameters, gradients and the optimizer's state on the device, the
 *     steps in resident chunks replayed as CUDA graphs, below). Checkpoints (the loop's snapshot)
 *     at each epoch end, at the last update and on SIGINT/SIGTERM with --checkpoint;
 *   - the EASGD paper's p = 1 comparators (seq-sgd, seq-msgd, seq-nag, seq-asgd, seq-mvasgd; its
 *     supplement's Fig. 6): the core's optimizer, its time simulated like the distributed runs' and
 *     its evaluation that of a parameter server's center (LOOP_CLOCK), so its curves sit on the
 *     same axes as EASGD's. A run with --threads 1 and a net without dropout equals `pdl train
 *     --algo <opt>` bit for bit. Checkpoints (x, the optimizer, the replica) at the run's end and
 *     on a stop, as a parameter server's. Not a distributed algorithm: an analysis that reuses
 *     the algorithm layer. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "algo/algo.h"
#include "util/env.h"
#include "rt/watchdog.h"

/* ---- the sequential optimizers (pdl train --algo sgd ...) ---------------------------------- */
/* Resident batches (issue 35 B, F): the training set kept in the backend's memory
 * (resident_set_t), each chunk of up to CHUNK steps gathered there from one upload of their
 * indices, the chunk's losses read back together (train_state_steps), and every evaluation run
 * there (loop_on_device: the test set resident too). A chunk never crosses an evaluation, an epoch
 * end (a checkpoint) or the last step, so those see the same state as the step-by-step loop;
 * divergence is still reported at its exact step (the parameters of a diverged run are then those
 * at the chunk's end, up to CHUNK - 1 updates later), and the watchdog (--timeout) sees progress
 * once per chunk (a device's queued steps are only known done at the chunk's read back). The
 * default on a device; PDL_TRAIN_RESIDENT=1 runs the same loop on the CPU (t_train_resident.sh: the
 * same results as the step-by-step loop), 0 turns it off (a device then gets each batch uploaded
 * and the loss read back every step, and still evaluates there). */
enum { CHUNK = 64 };
static int resident_mode(const train_state_t *d) {
  const char *e = env_get("PDL_TRAIN_RESIDENT");
  if (!e || !*e) return d->device;
  if (strcmp(e, "0") && strcmp(e, "1")) die("PDL_TRAIN_RESIDENT=%s: say 0 (batches from the host) or 1 (resident)", e);
  return e[0] == '1';
}
/* The first update count after `done` at which the loop looks at the state: an epoch end, an
 * --eval-every evaluation or the last update. */
static long next_look(const run_t *r, long done) {
  const long spe = r->steps_per_epoch, ev = r->cfg.eval_every;
  long b = (done / spe + 1) * spe;
  if (ev > 0 && (done / ev + 1) * ev < b) b = (done / ev + 1) * ev;
  return b < r->total_steps ? b : r->total_steps;
}
/* Test hook (t_train_cli.sh: the watchdog): PDL_TEST_HANG_STEP=N makes update N hang (until a
 * signal). Unset or empty: off; anything but an integer >= 0 exits 2 naming the variable. */
static long test_hang_step(void) {
  return env_long("PDL_TEST_HANG_STEP", -1);   /* base/util/env.c: an integer in [0, LONG_MAX] */
}

typedef struct { train_state_t d; int res; } opt_run_t;
static void opt_summary_json(json_t *j, const loop_t *L, void *arg) {
  (void)L; const opt_run_t *x = arg;
  if (x->res) json_int(j, "graph_chunks", x->d.graph_launches);   /* chunks run as one CUDA graph replay */
}

/* The device state brought to the host (loop_device_state): w and the optimizer's vectors. */
typedef struct { train_state_t *d; float *w; optim_t *o; } seq_host_t;
static void seq_to_host(void *arg) { seq_host_t *h = arg; train_state_download(h->d, h->w, h->o); }

static void opt_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  if (rt->nnodes != 1) die_usage("train: --algo %s is sequential: one process (no mpirun -np > 1)", c->algo);
  const net_t *net = &r->net;
  const size_t n = net->nparams;
  const int B = c->batch;
  opt_run_t X; memset(&X, 0, sizeof X);
  loop_t L; loop_init(&L, rt, job, LOOP_UPDATES, NULL, opt_summary_json, &X);
  L.keep_diverged = 1;   /* a diverged run's summary: the last evaluation's figures (as pdl train always gave) */
  loop_threads(&L, 1);
  float *w = xmalloc(n * sizeof(float)), *g = xcalloc(n, sizeof(float));   /* optim_step leaves g zeroed */
  float *x = xmalloc((size_t)B * dataset_image_floats(&r->data.train) * sizeof(float));
  int *y = xmalloc((size_t)B * sizeof(int));
  net_init_params(net, w, c->seed);
  optim_t o; optim_init(&o, (opt_kind_t)job->algo->variant, n, c->momentum, c->wd);
  char desc[256];   /* the backend of --device (the registry, contract/kernels.h kernels_for) */
  const int dev = kernels_device_index(&c->device, 0, "--device");   /* one process: device 0 unless named */
  const kernels_t *k = kernels_for(&c->device, dev, "--device", desc, sizeof desc);
  if (dev >= 0 && !c->quiet) fprintf(stderr, "pdl: training on %s:%d (%s)\n", c->device.backend, dev, desc);
  train_state_t *d = &X.d;
  train_state_init(d, k, w, g, &o);
  workspace_t ws; ws_init(&ws, net, B, r->threads, d->k, c->seed);
  sampler_t s; sampler_init(&s, &r->data.train, c->seed, 0, 1, c->with_replacement);
  X.res = resident_mode(d) && !r->data.train.aug.on && !r->data.train.lazy;   /* augmentation and lazy decoding are sampler_next's (host batches) */
  if (X.res && d->k->mem_free) {   /* the data sets must leave the device room: at most half its free memory */
    const dataset_t *tr = &r->data.train, *te = &r->data.test;
    const double img = (double)dataset_image_floats(tr) * sizeof(float) + sizeof(int);
    const double need = ((double)tr->n + te->n) * img, avail = (double)d->k->mem_free();
    if (need > avail / 2) {
      if (!c->quiet)
        fprintf(stderr, "pdl: the data sets (%.0f MiB) would take over half the device's free memory (%.0f MiB): "
                "batches uploaded every step instead of resident\n", need / 1048576, avail / 1048576);
      X.res = 0;
    }
  }
  resident_set_t S_tr; memset(&S_tr, 0, sizeof S_tr);
  int *idx = NULL;
  if (X.res) { resident_set_init(&S_tr, d->k, &r->data.train); idx = xmalloc((size_t)CHUNK * B * sizeof(int)); }
  if (X.res || d->device) loop_on_device(&L, d->k);   /* the evaluations where the parameters are */
  seq_host_t H = {d, w, &o};   /* a snapshot reads w and o on the host: the loop asks for them right before */
  if (d->device) loop_device_state(&L, seq_to_host, &H);
  loop_state(&L, "params", w, n * sizeof(float));
  loop_state_optim(&L, "optimizer", &o);
  snap_add_sampler(&L.snap, "sampler", &s);
  loop_state(&L, "rng", &ws.rng, sizeof ws.rng);
  loop_state_ws(&L, "bn", &ws);   /* batch norm's running statistics (a net with batch norm only) */
  long step = 0;
  if (loop_resume(&L)) { optim_refresh(&o, w); step = L.updates; }
  train_state_upload(d, w, &o);
  if (L.reporter) {
    json_t j; run_json_common(r, &j, "config");
    json_int(&j, "nparams", (long long)n);
    json_int(&j, "steps_per_epoch", r->steps_per_epoch);
    json_int(&j, "total_steps", r->total_steps);
    json_int(&j, "resumed_at", step);
    if (X.res) json_int(&j, "resident_chunk", CHUNK);   /* resident batches, up to CHUNK steps a read back */
    results_write(&r->res, json_end(&j));
  }
  const long hang_at = test_hang_step();
  float lrs[CHUNK]; double losses[CHUNK];
  int diverged = 0;
  while (step < r->total_steps && !pdl_stop_signal && !diverged) {
    int K = 1;
    if (X.res) {   /* a chunk of resident steps, up to the next look at the state */
      const long b = next_look(r, step);
      K = b - step < CHUNK ? (int)(b - step) : CHUNK;
    }
    if (K == 1) watchdog_context("sequential %s: step %ld of %ld", c->algo, step, r->total_steps);
    else watchdog_context("sequential %s: steps %ld-%ld of %ld", c->algo, step, step + K - 1, r->total_steps);
    while (hang_at >= 0 && hang_at >= step && hang_at < step + K && !pdl_stop_signal) sleep(1);
    if (pdl_stop_signal) break;
    if (X.res) {
      for (int j = 0; j < K; j++) { sampler_next_idx(&s, B, idx + (size_t)j * B); lrs[j] = loop_lr(&L, step + j); }
      train_state_steps(d, &ws, &S_tr, idx, K, B, lrs, losses);
    } else {
      sampler_next(&s, B, x, y);
      losses[0] = train_state_step(d, &ws, x, y, B, loop_lr(&L, step));
    }
    for (int j = 0; j < K; j++, step++) {
      const int last = step + 1 == r->total_steps;
      loop_loss(&L, losses[j], 1);
      if (loop_diverged(&L, losses[j], step)) { step++; diverged = 1; break; }
      loop_progress(&L, optim_eval_point(d->o, d->w), step + 1, (double)(step + 1) * B, last);
      loop_checkpoint(&L, last);   /* epoch ends, and the final state (mid-epoch too) */
    }
  }
  train_state_download(d, w, &o);   /* what follows reads w (and o) on the host */
  if (pdl_stop_signal) loop_checkpoint(&L, 1);
  loop_finish(&L, optim_eval_point(d->o, d->w), w);
  if (X.res) { resident_set_free(&S_tr); xfree(idx); }
  sampler_free(&s); ws_free(&ws); train_state_free(d); optim_free(&o);
  xfree(w); xfree(g); xfree(x); xfree(y);
}

/* pdl train runs them on the real runtime only (algo_train: one process, no MPI). */
static int opt_prepare(job_t *job) {
  const train_cfg_t *c = &job->r.cfg;
  if (strcmp(c->runtime, "real")) die_usage("train: --algo %s is sequential; --runtime sim needs a distributed algo", c->algo);
  return -1;
}

#define OPT_ALGO(cname, kind, text) \
  const algo_t algo_##cname = {.name = #cname, .shape = ALGO_ONE_NODE, .node = opt_node, .variant = kind, \
                               .opts = train_seq_opts, .prepare = opt_prepare, .checkpoint = 1, .device = 1, .help = text};
OPT_ALGO(sgd, OPT_SGD, "sequential SGD, w -= lr g (--device cuda: on that GPU, resident batches, CUDA graphs)")
OPT_ALGO(msgd, OPT_MSGD, "sequential momentum SGD, M = mu M - lr g; w += M (the PP-ASGD paper's form)")
OPT_ALGO(nag, OPT_NAG, "sequential Nesterov momentum: msgd with the gradient at w + mu M (PP-ASGD paper f_0)")
OPT_ALGO(adam, OPT_ADAM, "sequential Adam (Kingma & Ba, bias-corrected)")
OPT_ALGO(asgd, OPT_ASGD, "sequential SGD with Polyak averaging, evaluated at the average")
OPT_ALGO(mvasgd, OPT_MVASGD, "sequential SGD with a moving-rate average, evaluated at the average")

/* ---- the p = 1 comparators on the seam ----------------------------------------------------- */

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
  loop_device(&L, "gradients", 0);   /* --device: the gradients there, x on the host */
  loop_device_replica(&L, &rep);
  /* checkpoints: x, the optimizer and the replica at the run's end (the clock's last step) or a stop */
  loop_state(&L, "x", x, n * sizeof(float));
  loop_state_optim(&L, "optimizer", &o);
  loop_state_replica(&L, "replica", &rep);
  long t = 0;
  if (loop_resume(&L)) { t = L.updates; optim_refresh(&o, x); }
  loop_begin(&L, x);   /* (not after a resume) */
  for (; t < r->total_steps && !pdl_stop_signal;) {
    watchdog_context("%s: step %ld of %ld", c->algo, t, r->total_steps);
    double loss = replica_grad_on_device(&rep, rt, 0, optim_grad_point(&o, x), g);
    optim_step(&o, x, g, loop_lr(&L, t));
    rt->ops->work(rt, 4.0 * n * 6);
    t++;
    loop_advance(&L, t, (double)t * c->batch);
    loop_loss(&L, loss, 1);
    if (loop_diverged(&L, loss, t)) break;
    if (loop_progress(&L, optim_eval_point(&o, x), t, (double)t * c->batch, 0)) break;
  }
  loop_checkpoint(&L, 1);
  loop_finish(&L, optim_eval_point(&o, x), x);
  optim_free(&o); replica_free(&rep); xfree(x); xfree(g);
}

static const optdef_t *const seq_opts[] = {ALGO_OPTS_DIST, &od_with_replacement, NULL};
#define SEQ_ALGO(cname, aname, kind, text) \
  const algo_t algo_##cname = {.name = aname, .shape = ALGO_ONE_NODE, .node = seq_node, .variant = kind, .device = 1, \
                               .opts = seq_opts, .checkpoint = 1, .help = text};
SEQ_ALGO(seq_sgd, "seq-sgd", OPT_SGD, "p = 1 comparator on the seam: the core's sgd (simulated time, center-style evaluation)")
SEQ_ALGO(seq_msgd, "seq-msgd", OPT_MSGD, "p = 1 comparator on the seam: the core's msgd")
SEQ_ALGO(seq_nag, "seq-nag", OPT_NAG, "p = 1 comparator on the seam: the core's nag (Nesterov MSGD)")
SEQ_ALGO(seq_asgd, "seq-asgd", OPT_ASGD, "p = 1 comparator on the seam: the core's asgd (evaluated at the average)")
SEQ_ALGO(seq_mvasgd, "seq-mvasgd", OPT_MVASGD, "p = 1 comparator on the seam: the core's mvasgd (evaluated at the average)")
