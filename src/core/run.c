/* run.c — configuration parsing, set-up, evaluation, summary and checkpoints shared by every
 * training run (see run.h). */
#include "core/run.h"
#include "kfac/kfac.h"
#include "core/snap.h"
#include <sys/stat.h>
#include <zlib.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void train_state_init(train_state_t *d, const kernels_t *k, float *w, float *g, float *M, size_t n) {
  d->k = k; d->w = w; d->g = g; d->v = M; d->device = !k->host_memory;
  if (!d->device) return;
  d->w = k->alloc(n * sizeof(float));
  d->g = k->alloc(n * sizeof(float)); /* zero-filled, as net_backward_step wants it */
  d->v = M ? k->alloc(n * sizeof(float)) : NULL;
}
void train_state_upload(train_state_t *d, const float *w, const float *M, size_t n) {
  if (!d->device) return;
  d->k->upload(d->w, w, n * sizeof(float));
  if (d->v) d->k->upload(d->v, M, n * sizeof(float));
}
void train_state_download(const train_state_t *d, float *w, float *M, size_t n) {
  if (!d->device) return;
  d->k->download(w, d->w, n * sizeof(float));
  if (d->v) d->k->download(M, d->v, n * sizeof(float));
}
void train_state_free(train_state_t *d) {
  if (!d->device) return;
  d->k->release(d->w); d->k->release(d->g);
  if (d->v) d->k->release(d->v);
}

int parse_device(const char *flag, const char *v) {
  if (!strcmp(v, "cpu")) return -1;
  if (!strncmp(v, "cuda", 4) && (v[4] == 0 || v[4] == ':'))
    return v[4] == ':' ? (int)parse_long(flag, v + 5, 0, 63) : 0;
  die_usage("%s must be cpu or cuda[:N], not '%s'", flag, v);
  return -1;
}

void train_cfg_defaults(train_cfg_t *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->data, sizeof c->data, "fashion-mnist");
  snprintf(c->net, sizeof c->net, "ppasgd-cifar");
  snprintf(c->algo, sizeof c->algo, "msgd");
  snprintf(c->runtime, sizeof c->runtime, "real");
  snprintf(c->staleness, sizeof c->staleness, "auto");
  c->batch = 128; c->lr = 0.01f; c->momentum = 0.9f; c->wd = 0; c->warmup = 0;
  c->epochs = 1; c->seed = 1; c->threads = 0; c->diverge_loss = 1e3; c->cuda_device = -1;
  snprintf(c->worker_opt, sizeof c->worker_opt, "adam"); c->gamma = 1e-4f;
  c->gossip_warmup = -1; c->gossip_threshold = 0.1f; c->gossip_servers = 8;
  c->kfac_damping = 0.03f; c->kfac_inv_every = 1;
  c->workers = 0; c->grad_threads = 1; c->tau = 1; c->alpha = -1; c->beta = 0.9f; c->delta = 0.99f;
}

void train_usage(FILE *f) {
  fprintf(f,
    "usage: pdl train [options]\n"
    "  --data D          fashion-mnist[:DIR] | cifar10:DIR | synthetic[:n=N,...]   (fashion-mnist)\n"
    "  --net N           preset (pdl nets) or spec, e.g. 'C32 C32 P C64 P C128 P F256 F256 S10' (ppasgd-cifar)\n"
    "  --algo A          sequential: sgd msgd nag adam asgd mvasgd, or a distributed\n"
    "                    algorithm from the list below                                (msgd)\n"
    "  --batch B         mini-batch per worker (sub-batch b for ssgd/ppasgd)          (128)\n"
    "  --lr L            learning rate                                                 (0.01)\n"
    "  --momentum M      momentum mu (msgd, nag; algorithms below may default otherwise) (0.9)\n"
    "  --wd W            L2 weight decay                                               (0)\n"
    "  --warmup W        linear learning-rate warm-up: 'epoch' (the first epoch), N steps, or 0 (0)\n"
    "  --epochs E        epochs (fractional allowed)                                   (1)\n"
    "  --steps K         updates (overrides --epochs)\n"
    "  --seed S          seed for init, shuffling, dropout                             (1)\n"
    "  --threads T       OpenMP threads per replica                        (cores / replicas)\n"
    "  --device D        cpu | cuda[:N]: train on CUDA device N (sequential sgd and msgd only yet;\n"
    "                    parameters, gradients, momentum on the device; evaluation on the CPU) (cpu)\n"
    "  --eval-every N    also evaluate every N updates                                 (each epoch)\n"
    "  --train-subset N, --test-subset N   use only the first N examples\n"
    "  --results FILE    append JSON lines (config, eval, summary)\n"
    "  --checkpoint FILE save state each epoch and on SIGINT/SIGTERM (temp file + rename);\n"
    "                    distributed: one file per node (FILE, FILE.node<k>), previous kept as .prev\n"
    "  --resume          continue from --checkpoint FILE if it exists (all nodes' files)\n"
    "  --diverge-loss X  stop as diverged when the train loss exceeds X or is NaN       (1000)\n"
    "  --tag T           free-form label copied into every JSON line\n"
    " distributed:\n"
    "  --runtime R       real (pthreads + MPI ranks) | sim (SimGrid, real numerics)   (real)\n"
    "  --platform P      sim platform: cluster:nodes=N,gpus=G[,rate=GFLOPS] | star:k=K,bw=...  \n"
    "  --device-rate R   sim device rate: GFLOP/s number, 'calibrated' (pdl calibrate's file),\n"
    "                    'calibrated:FILE', or a device name (k80)\n"
    "  --workers P       workers (threads in a rank, or sim workers)\n"
    "  --grad-threads G  grad threads per rank (ssgd/ppasgd)                           (1)\n"
    "  --staleness S     ppasgd: auto (S = floor(1 + F_U/F_G)) | N | emulate:N         (auto)\n"
    "  --tau T           communication period (easgd family, downpour)                 (1)\n"
    "  --alpha A, --beta B, --delta D   elastic moving rate, EASGD beta, EAMSGD momentum\n"
    "  --eval-every-examples N  distributed: evaluate every N training examples processed\n"
    "  --target-err E    distributed: stop once the test error is <= E (time-to-accuracy runs)\n"
    "  --worker-opt O    agn/adag/dynsgd: the workers' own optimizer sgd|msgd|nag|adam  (adam)\n"
    "  --gamma G         adag: per-weight staleness scale gamma                        (1e-4)\n"
    "  --gossip-warmup W gossip-warmup: peers chosen by measured time for W local steps (an epoch)\n"
    "  --gossip-threshold X  gossip-warmup: UPDATE_TIME's threshold                    (0.1)\n"
    "  --gossip-timeline FILE  gossip: write every transfer (node,peer,start_s,end_s) as CSV\n"
    "  --noniid S        gossip: deal a fraction S of the training set out by label (class skew) (0)\n"
    "  --gossip-servers S  gossip: serving roles per node, pulls served at once (K-1, at most 8)\n"
    "  --kfac-damping D  kfac: Tikhonov damping, split between A and G by pi      (0.03)\n"
    "  --kfac-stat-decay E  kfac: running average of the factors (0: this batch only) (0)\n"
    "  --kfac-inv-every N  kfac: invert the factors every N updates                (1)\n"
    "  --kfac-inverse I  kfac: fast (float, ours) | ref (LAPACKE double) | eig | cuda (fast)\n"
    "  --kfac-comm C     kfac-dist: reduce-scatterv (+ allgatherv) | allreduce (NCCL style) (reduce-scatterv)\n"
    "  --kfac-assign A   kfac-dist: layer owners: layer (l mod R, the paper) | lpt (by cost) (layer)\n"
    "  --ps-order O      easgd family: any (requests as they arrive) | round-robin\n"
    "                    (a fixed worker rotation: deterministic, same on both runtimes) (any)\n"
    "  --probe N         ppasgd/asgd-dist: after one epoch, measure the prediction error\n"
    "                    ||w_{t+S0+1} - f_S(w_t, M_t)|| for S = 0..13, mean of N updates (P1)\n"
    "  --timeout S       watchdog: fail a run that makes no progress for S seconds\n"
    "Prints a progress line on a terminal; the last stdout line is a JSON summary.\n");
}

void train_cfg_parse(train_cfg_t *c, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    char *a = argv[i], *val = NULL, key[64];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { train_usage(stdout); exit(0); }
    if (strncmp(a, "--", 2)) die_usage("train: unexpected argument '%s' (pdl train --help)", a);
    char *eq = strchr(a, '=');
    if (eq) { snprintf(key, sizeof key, "%.*s", (int)(eq - a), a); val = eq + 1; }
    else snprintf(key, sizeof key, "%s", a);
#define FLAG(name) (!strcmp(key, name))
#define VAL() (val ? val : (i + 1 < argc ? argv[++i] : (die_usage("train: %s needs a value", key), (char *)0)))
#define STR(dst) do { const char *v_ = VAL(); \
    if (strlen(v_) >= sizeof dst) { die_usage("train: %s: %zu characters; at most %zu are allowed", key, strlen(v_), sizeof dst - 1); } \
    snprintf(dst, sizeof dst, "%s", v_); } while (0)
    if (FLAG("--resume")) { c->resume = 1; continue; }
    if (FLAG("--quiet")) { c->quiet = 1; continue; }
    if (FLAG("--with-replacement")) { c->with_replacement = 1; continue; }
    if (FLAG("--data")) STR(c->data);
    else if (FLAG("--net")) STR(c->net);
    else if (FLAG("--algo")) STR(c->algo);
    else if (FLAG("--batch")) c->batch = (int)parse_long(key, VAL(), 1, 1 << 20);
    else if (FLAG("--lr")) c->lr = (float)parse_double(key, VAL(), 0, 1e6);
    else if (FLAG("--momentum")) { c->momentum = (float)parse_double(key, VAL(), 0, 0.999999); c->momentum_set = 1; }
    else if (FLAG("--wd")) c->wd = (float)parse_double(key, VAL(), 0, 1);
    else if (FLAG("--warmup")) { const char *v = VAL(); c->warmup = !strcmp(v, "epoch") ? -1 : parse_long(key, v, 0, 1L << 40); }
    else if (FLAG("--epochs")) c->epochs = parse_double(key, VAL(), 1e-9, 1e6);
    else if (FLAG("--steps")) c->steps = parse_long(key, VAL(), 1, 1L << 40);
    else if (FLAG("--seed")) c->seed = (uint64_t)parse_long(key, VAL(), 0, 1L << 62);
    else if (FLAG("--threads")) c->threads = (int)parse_long(key, VAL(), 1, 1024);
    else if (FLAG("--eval-every")) c->eval_every = parse_long(key, VAL(), 0, 1L << 40);
    else if (FLAG("--train-subset")) c->train_subset = (int)parse_long(key, VAL(), 1, 1 << 30);
    else if (FLAG("--test-subset")) c->test_subset = (int)parse_long(key, VAL(), 1, 1 << 30);
    else if (FLAG("--results")) STR(c->results);
    else if (FLAG("--checkpoint")) STR(c->checkpoint);
    else if (FLAG("--diverge-loss")) c->diverge_loss = parse_double(key, VAL(), 0, 1e30);
    else if (FLAG("--tag")) STR(c->tag);
    else if (FLAG("--runtime")) STR(c->runtime);
    else if (FLAG("--platform")) STR(c->platform);
    else if (FLAG("--device-rate")) STR(c->device_rate);
    else if (FLAG("--device")) c->cuda_device = parse_device(key, VAL());
    else if (FLAG("--workers")) c->workers = (int)parse_long(key, VAL(), 1, 4096);
    else if (FLAG("--grad-threads")) c->grad_threads = (int)parse_long(key, VAL(), 1, 1024);
    else if (FLAG("--staleness")) STR(c->staleness);
    else if (FLAG("--tau")) c->tau = (int)parse_long(key, VAL(), 1, 1 << 20);
    else if (FLAG("--alpha")) c->alpha = (float)parse_double(key, VAL(), 0, 1);
    else if (FLAG("--beta")) c->beta = (float)parse_double(key, VAL(), 0, 1);
    else if (FLAG("--delta")) c->delta = (float)parse_double(key, VAL(), 0, 0.999999);
    else if (FLAG("--eval-every-examples")) c->eval_every_examples = parse_long(key, VAL(), 1, 1L << 40);
    else if (FLAG("--target-err")) c->target_err = parse_double(key, VAL(), 0, 1);
    else if (FLAG("--ps-order")) {
      const char *v = VAL();
      if (!strcmp(v, "round-robin")) c->ps_round_robin = 1;
      else if (!strcmp(v, "any")) c->ps_round_robin = 0;
      else die_usage("train: --ps-order must be 'any' or 'round-robin', not '%s'", v);
    }
    else if (FLAG("--probe")) c->probe = (int)parse_long(key, VAL(), 0, 100000);
    else if (FLAG("--worker-opt")) {
      const char *v = VAL(); opt_kind_t k;
      if (optim_parse(v, &k) != 0 || (k != OPT_SGD && k != OPT_MSGD && k != OPT_NAG && k != OPT_ADAM))
        die_usage("train: --worker-opt must be sgd, msgd, nag or adam, not '%s'", v);
      snprintf(c->worker_opt, sizeof c->worker_opt, "%s", v);
    }
    else if (FLAG("--gamma")) c->gamma = (float)parse_double(key, VAL(), 1e-30, 1e30);
    else if (FLAG("--gossip-warmup")) c->gossip_warmup = parse_long(key, VAL(), 0, 1000000000L);
    else if (FLAG("--gossip-threshold")) c->gossip_threshold = (float)parse_double(key, VAL(), 0, 1);
    else if (FLAG("--gossip-timeline")) STR(c->gossip_timeline);
    else if (FLAG("--noniid")) c->noniid = (float)parse_double(key, VAL(), 0, 1);
    else if (FLAG("--gossip-servers")) c->gossip_servers = (int)parse_long(key, VAL(), 1, 4096);
    else if (FLAG("--kfac-damping")) c->kfac_damping = (float)parse_double(key, VAL(), 1e-12, 1e6);
    else if (FLAG("--kfac-stat-decay")) c->kfac_stat_decay = (float)parse_double(key, VAL(), 0, 0.999999);
    else if (FLAG("--kfac-inv-every")) c->kfac_inv_every = (int)parse_long(key, VAL(), 1, 1 << 30);
    else if (FLAG("--kfac-inverse")) {
      const char *v = VAL(); kfac_inv_t k;
      if (kfac_inv_parse(v, &k)) die_usage("train: --kfac-inverse must be fast, ref, eig or cuda, not '%s'", v);
      c->kfac_inverse = (int)k;
    }
    else if (FLAG("--kfac-comm")) {
      const char *v = VAL();
      if (!strcmp(v, "allreduce")) c->kfac_comm_allreduce = 1;
      else if (!strcmp(v, "reduce-scatterv")) c->kfac_comm_allreduce = 0;
      else die_usage("train: --kfac-comm must be 'reduce-scatterv' or 'allreduce', not '%s'", v);
    }
    else if (FLAG("--kfac-assign")) {
      const char *v = VAL();
      if (!strcmp(v, "lpt")) c->kfac_assign_lpt = 1;
      else if (!strcmp(v, "layer")) c->kfac_assign_lpt = 0;
      else die_usage("train: --kfac-assign must be 'layer' or 'lpt', not '%s'", v);
    }
    else if (FLAG("--timeout")) c->timeout = parse_double(key, VAL(), 0, 1e7);
    else die_usage("train: unknown flag '%s' (pdl train --help)", key);
#undef FLAG
#undef VAL
#undef STR
  }
  if (strcmp(c->runtime, "real") && strcmp(c->runtime, "sim"))
    die_usage("train: --runtime must be 'real' or 'sim', not '%s'", c->runtime);
  if (c->resume && !c->checkpoint[0]) die_usage("train: --resume needs --checkpoint FILE");
}

void run_setup(run_t *r, const train_cfg_t *c, int examples_per_update) {
  memset(r, 0, sizeof *r);
  r->cfg = *c; r->nranks = 1;
  data_load(&r->data, c->data);
  data_truncate(&r->data, c->train_subset, c->test_subset);
  const dataset_t *tr = &r->data.train;
  net_build(&r->net, c->net, tr->c, tr->h, tr->w);
  net_check_memory(&r->net, examples_per_update > c->batch ? examples_per_update : c->batch);
  if (c->checkpoint[0]) outfile_check(c->checkpoint, "checkpoint");
  if (c->gossip_timeline[0]) outfile_check(c->gossip_timeline, "--gossip-timeline");
  if (r->net.classes != tr->classes)
    die_usage("train: net '%s' has %d outputs but data set %s has %d classes", c->net, r->net.classes, r->data.name, tr->classes);
  if (c->threads > 0) r->threads = c->threads;
  else { long n = sysconf(_SC_NPROCESSORS_ONLN); r->threads = n > 0 ? (int)n : 1; }
  if (examples_per_update < 1) examples_per_update = 1;
  r->steps_per_epoch = tr->n / examples_per_update;
  if (r->steps_per_epoch < 1) r->steps_per_epoch = 1;
  r->total_steps = c->steps > 0 ? c->steps : (long)ceil(c->epochs * (double)r->steps_per_epoch);
  if (r->cfg.warmup < 0) r->cfg.warmup = r->steps_per_epoch;
  if (c->eval_every_examples > 0 && c->eval_every == 0) {
    r->cfg.eval_every = c->eval_every_examples / examples_per_update;
    if (r->cfg.eval_every < 1) r->cfg.eval_every = 1;
  }
  ws_init(&r->eval_ws, &r->net, 256, r->threads, &kernels_cpu, c->seed);
  results_open(&r->res, c->results);
  r->t0 = now_s();
  r->test_err = r->test_loss = r->train_loss = NAN;
}

void run_free(run_t *r) {
  ws_free(&r->eval_ws);
  results_close(&r->res);
  data_free(&r->data);
}

void run_json_common(run_t *r, json_t *j, const char *event) {
  const train_cfg_t *c = &r->cfg;
  json_begin(j);
  json_str(j, "event", event);
  json_str(j, "algo", c->algo);
  json_str(j, "net", r->net.name);
  json_str(j, "net_spec", r->net.spec);
  json_str(j, "data", r->data.name);
  json_int(j, "seed", (long long)c->seed);
  json_int(j, "batch", c->batch);
  json_num(j, "lr", c->lr);
  json_num(j, "momentum", c->momentum);
  json_num(j, "wd", c->wd);
  json_int(j, "threads", r->threads);
  json_int(j, "ranks", r->nranks);
  json_str(j, "runtime", r->simulated ? "sim" : "real");
  json_bool(j, "simulated", r->simulated);
  if (c->tag[0]) json_str(j, "tag", c->tag);
  json_meta(j);
}

void run_eval(run_t *r, const float *params, double t, const char *extra) {
  const dataset_t *te = &r->data.test;
  net_evaluate(&r->eval_ws, params, te->x, te->y, te->n, &r->test_err, &r->test_loss);
  if (r->rank != 0) return;
  json_t j; run_json_common(r, &j, "eval");
  json_num(&j, "epoch", r->epochs_done);
  json_int(&j, "updates", r->updates);
  json_num(&j, "time_s", t);
  json_num(&j, "train_loss", r->train_loss);
  json_num(&j, "test_err", r->test_err);
  json_num(&j, "test_loss", r->test_loss);
  json_pairs(&j, extra);
  const char *line = json_end(&j);
  results_write(&r->res, line);
  progress_done();
  if (!r->cfg.quiet)
    fprintf(stderr, "epoch %.2f  updates %ld  train_loss %.4f  test_err %.4f  test_loss %.4f  %.1fs\n",
            r->epochs_done, r->updates, r->train_loss, r->test_err, r->test_loss, t);
}

void run_summary(run_t *r, double time_s, const char *extra) {
  if (r->rank != 0) return;
  json_t j; run_json_common(r, &j, "summary");
  json_num(&j, "test_acc", 1.0 - r->test_err);
  json_num(&j, "test_err", r->test_err);
  json_num(&j, "test_loss", r->test_loss);
  json_num(&j, "train_loss", r->train_loss);
  json_num(&j, "epochs", r->epochs_done);
  json_int(&j, "updates", r->updates);
  json_num(&j, "time_s", time_s);
  json_bool(&j, "diverged", r->diverged);
  if (r->diverged) json_int(&j, "diverged_at", r->diverged_at);
  if (pdl_stop_signal) json_int(&j, "interrupted_by_signal", pdl_stop_signal);
  json_pairs(&j, extra);
  const char *line = json_end(&j);
  results_write(&r->res, line);
  progress_done();
  printf("%s\n", line);
  fflush(stdout);
}

void run_dump_params(const float *w, size_t n) {
  const char *p = getenv("PDL_DUMP_PARAMS");
  if (!p) return;
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(w, sizeof(float), n, f) != n || fclose(f)) die("cannot write %s", p);
}

int run_check_diverged(run_t *r, double loss, long step) {
  if (isfinite(loss) && loss <= r->cfg.diverge_loss) return 0;
  if (!r->diverged) { r->diverged = 1; r->diverged_at = step; }
  if (r->rank == 0 && !r->cfg.quiet) fprintf(stderr, "pdl: diverged at step %ld (train loss %g)\n", step, loss);
  return 1;
}

/* ---- checkpoints (sequential: one node's file; the format is snap.c's) ---- */
static void seq_snap(snap_t *s, const run_t *r, float *w, optim_t *o, ckpt_pos_t *pos) {
  snap_init(s);
  snap_add(s, "position", pos, sizeof *pos);
  snap_add(s, "params", w, r->net.nparams * sizeof(float));
  snap_add_optim(s, "optimizer", o);
}

void checkpoint_save(const char *path, const run_t *r, const float *w, const optim_t *o, const ckpt_pos_t *pos) {
  snap_t s; seq_snap(&s, r, (float *)w, (optim_t *)o, (ckpt_pos_t *)pos);   /* only read */
  snap_save(path, r, 0, 1, pos->step, &s, 0);
}

int checkpoint_load(const char *path, const run_t *r, float *w, optim_t *o, ckpt_pos_t *pos) {
  snap_t s; seq_snap(&s, r, w, o, pos);
  if (snap_read(path, r, 0, 1, &s, 0) < 0) return -1;   /* everything checked before anything changes */
  snap_read(path, r, 0, 1, &s, 1);
  optim_refresh(o, w);
  return 0;
}
