/* run.c — configuration parsing, set-up, evaluation and summary shared by every training run (see
 * run.h; checkpoints are snap.c's files, which the node loop saves and loads). */
#include "core/run.h"
#include "util/vec.h"
#include "util/env.h"
#include "core/data_img.h"
#include <stddef.h>
#include "util/optdef.h"
#include <sys/stat.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void parse_device(const char *flag, const char *v, device_spec_t *d) {
  char why[320];
  if (kernels_device_parse(d, v, why, sizeof why)) die_usage("%s %s", flag, why);
}

void train_cfg_defaults(train_cfg_t *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->data, sizeof c->data, "fashion-mnist");
  snprintf(c->net, sizeof c->net, "ppasgd-cifar");
  snprintf(c->algo, sizeof c->algo, "msgd");
  snprintf(c->runtime, sizeof c->runtime, "real");
  snprintf(c->coll, sizeof c->coll, "mpi");
  snprintf(c->staleness, sizeof c->staleness, "auto");
  c->batch = 128; c->lr = 0.01f; c->momentum = 0.9f; c->wd = 0; c->warmup = 0;
  c->epochs = 1; c->seed = 1; c->threads = 0; c->diverge_loss = 1e3; c->device.index = -1;
  snprintf(c->device.backend, sizeof c->device.backend, "cpu");
  snprintf(c->worker_opt, sizeof c->worker_opt, "adam"); c->gamma = 1e-4f;
  c->grad_threads = 1; c->tau = 1; c->alpha = -1; c->beta = 0.9f; c->delta = 0.99f;
}

/* ---- the common flags' table (util/optdef.h) ---- */
#define CFG(field) OD_CFG, offsetof(train_cfg_t, field), sizeof(((train_cfg_t *)0)->field)
static void set_momentum(const optdef_t *d, void *area, const char *v) {
  train_cfg_t *c = area;
  c->momentum = (float)parse_double(d->name, v, 0, 0.999999); c->momentum_set = 1;
}
static void set_warmup(const optdef_t *d, void *area, const char *v) {
  ((train_cfg_t *)area)->warmup = !strcmp(v, "epoch") ? -1 : parse_long(d->name, v, 0, 1L << 40);
}
static void set_seed(const optdef_t *d, void *area, const char *v) {
  ((train_cfg_t *)area)->seed = (uint64_t)parse_long(d->name, v, 0, 1L << 62);
}
static void set_device(const optdef_t *d, void *area, const char *v) {
  parse_device(d->name, v, &((train_cfg_t *)area)->device);
}
static const char *const runtimes[] = {"real", "sim", NULL};
static const optdef_t
  od_data = {"--data", OD_STR, 0, 0, NULL, "fashion-mnist", "D", "fashion-mnist[:DIR] | cifar10:DIR | cifar100:DIR | imagenet32:DIR | imagenet64:DIR | imagenet:DIR[,size=S,classes=FILE,decoders=N] (each DIR form also ,aug=...) | synthetic[:n=N,...] | shape:k=v,... (no pixels: --device phantom)", CFG(data), 0, NULL},
  od_net = {"--net", OD_STR, 0, 0, NULL, "ppasgd-cifar", "N", "preset (pdl nets) or spec, e.g. 'C32 C32 P C64 P C128 P F256 F256 S10'", CFG(net), 0, NULL},
  od_algo = {"--algo", OD_STR, 0, 0, NULL, "msgd", "A", "sequential: sgd msgd nag adam asgd mvasgd, or a distributed algorithm below", CFG(algo), 0, NULL},
  od_batch = {"--batch", OD_INT, 1, 1 << 20, NULL, "128", "B", "mini-batch per worker (sub-batch b for ssgd/ppasgd)", CFG(batch), 0, NULL},
  od_lr = {"--lr", OD_FLOAT, 0, 1e6, NULL, "0.01", "L", "learning rate", CFG(lr), 0, NULL},
  od_momentum = {"--momentum", OD_FLOAT, 0, 0.999999, NULL, "0.9", "M", "momentum mu (msgd, nag; an algorithm may default otherwise)", CFG(momentum), 0, set_momentum},
  od_wd = {"--wd", OD_FLOAT, 0, 1, NULL, "0", "W", "L2 weight decay", CFG(wd), 0, NULL},
  od_warmup = {"--warmup", OD_LONG, 0, 0, NULL, "0", "W", "linear learning-rate warm-up: 'epoch' (the first epoch), N steps, or 0", CFG(warmup), 0, set_warmup},
  od_epochs = {"--epochs", OD_DOUBLE, 1e-9, 1e6, NULL, "1", "E", "epochs (fractional allowed)", CFG(epochs), 0, NULL},
  od_steps = {"--steps", OD_LONG, 1, (double)(1L << 40), NULL, NULL, "K", "updates (overrides --epochs)", CFG(steps), 0, NULL},
  od_seed = {"--seed", OD_LONG, 0, 0, NULL, "1", "S", "seed for init, shuffling, dropout", CFG(seed), 0, set_seed},
  od_threads = {"--threads", OD_INT, 1, 1024, NULL, "cores / replicas", "T", "OpenMP threads per replica", CFG(threads), 0, NULL},
  od_device = {"--device", OD_STR, 0, 0, NULL, "cpu", "D", "cpu | cuda[:N] | phantom: phantom (with --runtime sim only) computes nothing and charges the simulated clock what each layer would cost, for the papers' nets at full size (timing only: no loss or accuracy; docs/SIM.md); cuda: train on CUDA device N (the sequential optimizers, the data sets and the evaluation on the device too; the distributed algorithms (their descriptors' .device) with --device cuda, each rank on a GPU of its host (its local rank modulo the host's GPUs; cuda:N puts every rank on N): ssgd, kfac and kfac-dist keep their parameters and optimizer state there, the others compute their gradients there and keep the rest on the host (a parameter server's state on its rank's host); kfac's factors and preconditioning by cuBLAS and its inversions by cuSOLVER there; conv by cuDNN or im2col + cuBLAS, the faster per shape; PDL_CUDA_CONV=cudnn|im2col forces one; the batches gathered on the device in chunks of up to 64 steps, PDL_TRAIN_RESIDENT=0 uploads each; the chunks replayed as CUDA graphs, PDL_TRAIN_GRAPH=0 runs them eagerly)", CFG(device), 0, set_device},
  od_eval_every = {"--eval-every", OD_LONG, 0, (double)(1L << 40), NULL, "each epoch", "N", "also evaluate every N updates", CFG(eval_every), 0, NULL},
  od_train_subset = {"--train-subset", OD_INT, 1, 1 << 30, NULL, NULL, "N", "use only the first N training examples", CFG(train_subset), 0, NULL},
  od_test_subset = {"--test-subset", OD_INT, 1, 1 << 30, NULL, NULL, "N", "use only the first N test examples", CFG(test_subset), 0, NULL},
  od_val = {"--val", OD_INT, 1, 1 << 30, NULL, NULL, "N", "evaluate on a validation split instead of the test set: the N training examples after --train-subset's, held out from training (the JSON lines then say \"eval_set\":\"validation\" and their test_* are the split's); for picking settings", CFG(val), 0, NULL},
  od_results = {"--results", OD_STR, 0, 0, NULL, NULL, "FILE", "append JSON lines (config, eval, summary)", CFG(results), 0, NULL},
  od_checkpoint = {"--checkpoint", OD_STR, 0, 0, NULL, NULL, "FILE", "save state each epoch, at the end and on SIGINT/SIGTERM (temp file + rename); distributed: one file per node (FILE, FILE.node<k>), previous kept as .prev", CFG(checkpoint), 0, NULL},
  od_resume = {"--resume", OD_BOOL, 0, 0, NULL, NULL, NULL, "continue from --checkpoint FILE if it exists (all nodes' files); every option a resume must match is checked", CFG(resume), 0, NULL},
  od_overwrite = {"--overwrite", OD_BOOL, 0, 0, NULL, NULL, NULL, "start over although --checkpoint FILE exists, replacing it (without --resume or this, an existing checkpoint is refused)", CFG(overwrite), 0, NULL},
  od_quiet = {"--quiet", OD_BOOL, 0, 0, NULL, NULL, NULL, "no progress or eval lines on stderr", CFG(quiet), 0, NULL},
  od_diverge = {"--diverge-loss", OD_DOUBLE, 0, 1e30, NULL, "1000", "X", "stop as diverged when the train loss exceeds X or is NaN", CFG(diverge_loss), 0, NULL},
  od_tag = {"--tag", OD_STR, 0, 0, NULL, NULL, "T", "free-form label copied into every JSON line", CFG(tag), 0, NULL},
  od_timeout = {"--timeout", OD_DOUBLE, 0, 1e7, NULL, NULL, "S", "watchdog: fail a run that makes no progress for S seconds", CFG(timeout), 0, NULL},
  od_runtime = {"--runtime", OD_STR, 0, 0, runtimes, "real", "R", "real (pthreads + MPI ranks) | sim (SimGrid, real numerics)", CFG(runtime), 0, NULL},
  /* not in the checkpoint header (resume 0): the state is the same whichever backend summed it,
   * so a resume may switch backends; sums agree bit for bit at 2 ranks, within rounding above */
  od_coll = {"--coll", OD_STR, 0, 0, NULL, "mpi", "C", "the real runtime's collective library, one of src/coll/colls.def's (pdl coll --help lists them; pdl train checks the name): mpi (MPI on host buffers), nccl (NCCL on one CUDA device per rank, host buffers staged through it; exits 2 without a device), ...; distributed algorithms on --runtime real only", CFG(coll), 0, NULL};
const optdef_t od_with_replacement = {"--with-replacement", OD_BOOL, 0, 0, NULL, NULL, NULL,
  "draw mini-batches with replacement (default: shuffled epochs)", CFG(with_replacement), 1, NULL};
const optdef_t *const train_opts[] = {
  &od_data, &od_net, &od_algo, &od_batch, &od_lr, &od_momentum, &od_wd, &od_warmup, &od_epochs, &od_steps, &od_seed,
  &od_threads, &od_device, &od_eval_every, &od_train_subset, &od_test_subset, &od_val, &od_results, &od_checkpoint, &od_resume,
  &od_overwrite, &od_quiet, &od_diverge, &od_tag, &od_timeout, &od_runtime, &od_coll, NULL};
const optdef_t *const train_seq_opts[] = {&od_with_replacement, NULL};

void *train_cfg_area(train_cfg_t *c, const optdef_t *d) { return d->area == OD_ALGO ? (void *)c->algo_opts : (void *)c; }

void train_usage(FILE *f) {
  fprintf(f, "usage: pdl train [options]   (common options; an algorithm's own are listed below it, and\n"
             "                              a flag the chosen --algo does not read is refused)\n");
  for (int i = 0; train_opts[i]; i++) optdef_usage(f, train_opts[i]);
  fprintf(f, "Prints a progress line on a terminal; the last stdout line is a JSON summary.\n");
}

/* the value of flag argv[*i] ("--k=v" or "--k v"), NULL for a flag that takes none */
static const char *flag_value(const optdef_t *d, const char *eqval, int *i, int argc, char **argv) {
  if (eqval || d->type == OD_BOOL) return eqval;
  if (*i + 1 >= argc) die_usage("train: %s needs a value", d->name);
  return argv[++*i];
}

void train_cfg_algo(train_cfg_t *c, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    if (!strncmp(argv[i], "--algo=", 7)) v = argv[i] + 7;
    else if (!strcmp(argv[i], "--algo")) { if (i + 1 >= argc) die_usage("train: --algo needs a value"); v = argv[++i]; }
    if (v) optdef_set(&od_algo, c, v);
  }
}

static void outputs_check(const train_cfg_t *c);
void train_cfg_parse(train_cfg_t *c, int argc, char **argv, const optdef_t *const *algo_opts,
                     void (*refuse)(const char *flag, const char *algo)) {
  c->algo_optdefs = algo_opts;
  for (int i = 0; algo_opts && algo_opts[i]; i++)
    if (algo_opts[i]->area == OD_ALGO && algo_opts[i]->def) optdef_set(algo_opts[i], c->algo_opts, algo_opts[i]->def);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    char key[64];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { train_usage(stdout); exit(0); }
    if (strncmp(a, "--", 2)) die_usage("train: unexpected argument '%s' (pdl train --help)", a);
    const char *eq = strchr(a, '=');
    if (eq) { snprintf(key, sizeof key, "%.*s", (int)(eq - a), a); val = eq + 1; }
    else snprintf(key, sizeof key, "%s", a);
    const optdef_t *d = optdef_find(train_opts, key);
    if (!d) d = optdef_find(algo_opts, key);
    if (!d) {
      if (refuse) refuse(key, c->algo);
      die_usage("train: unknown flag '%s' (pdl train --help)", key);
    }
    optdef_set(d, train_cfg_area(c, d), flag_value(d, val, &i, argc, argv));
  }
  if (c->resume && !c->checkpoint[0]) die_usage("train: --resume needs --checkpoint FILE");
  outputs_check(c);
}

/* ---- outputs (issue 46 item 1): never the same file twice, never a saved run replaced by mistake ---- */
/* 1 when canonical path x is the checkpoint ck or one of its files: ck.prev, ck.node<k>, ck.node<k>.prev */
static int ck_family(const char *x, const char *ck) {
  size_t l = strlen(ck);
  if (strncmp(x, ck, l)) return 0;
  const char *t = x + l;
  if (!*t || !strcmp(t, ".prev")) return 1;
  if (strncmp(t, ".node", 5) || !isdigit((unsigned char)t[5])) return 0;
  for (t += 5; isdigit((unsigned char)*t); t++) {}
  return !*t || !strcmp(t, ".prev");
}

/* dies (exit 2) when output `path` of `flag` is output `path2` of `flag2` (ck2: a checkpoint, whose
 * .prev and .node<k> files count as well) */
static void distinct(const char *flag, const char *path, const char *flag2, const char *path2, int ck2) {
  if (!path || !*path || !path2 || !*path2) return;
  char a[4096], b[4096];
  path_canonical(path, a, sizeof a); path_canonical(path2, b, sizeof b);
  char prev[4200]; snprintf(prev, sizeof prev, "%s.prev", path2);
  if (path_same_file(path, path2))
    die_usage("train: %s %s and %s %s name the same file (%s): one would overwrite the other; give two different files",
              flag, path, flag2, path2, a);
  if (ck2 && (path_same_file(path, prev) || ck_family(a, b)))
    die_usage("train: %s %s is one of the files of %s %s (its .prev or a node's .node<k>): the checkpoint would "
              "overwrite it; give another file", flag, path, flag2, path2);
}

void train_output_distinct(const train_cfg_t *c, const char *flag, const char *path) {
  distinct(flag, path, "--checkpoint", c->checkpoint, 1);
  distinct(flag, path, "--results", c->results, 0);
  distinct(flag, path, "PDL_DUMP_PARAMS", env_get("PDL_DUMP_PARAMS"), 0);
}

static void outputs_check(const train_cfg_t *c) {
  distinct("--results", c->results, "--checkpoint", c->checkpoint, 1);
  distinct("PDL_DUMP_PARAMS", env_get("PDL_DUMP_PARAMS"), "--checkpoint", c->checkpoint, 1);
  distinct("PDL_DUMP_PARAMS", env_get("PDL_DUMP_PARAMS"), "--results", c->results, 0);
  if (c->overwrite && !c->checkpoint[0]) die_usage("train: --overwrite needs --checkpoint FILE");
  if (c->overwrite && c->resume)
    die_usage("train: --overwrite and --resume: give one (--resume continues --checkpoint %s, --overwrite replaces it)", c->checkpoint);
  if (c->checkpoint[0] && !c->resume && !c->overwrite) {   /* a run's saved state, in any of its files */
    static const char *const sfx[] = {"", ".prev", ".node1", ".node1.prev"};
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
      char p[1100]; struct stat st;
      snprintf(p, sizeof p, "%s%s", c->checkpoint, sfx[i]);
      if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)   /* (an empty file holds nothing to lose) */
        die_usage("train: --checkpoint %s exists (%s, %lld bytes: a saved run); give --resume to continue it, or "
                  "--overwrite to start over and replace it", c->checkpoint, p, (long long)st.st_size);
    }
  }
}

void train_cfg_resume_text(const train_cfg_t *c, char *buf, size_t n) {
  size_t k = 0; buf[0] = 0;
  for (int i = 0; c->algo_optdefs && c->algo_optdefs[i]; i++) {
    const optdef_t *d = c->algo_optdefs[i];
    if (!d->resume) continue;
    char v[512]; optdef_format(d, train_cfg_area((train_cfg_t *)c, d), v, sizeof v);
    int w = snprintf(buf + k, n - k, "%s=%s\n", d->name, v);
    if (w < 0 || (size_t)w >= n - k) die("internal: the resume options of --algo %s exceed %zu bytes", c->algo, n);
    k += (size_t)w;
  }
}

void run_setup(run_t *r, const train_cfg_t *c, int examples_per_update) {
  memset(r, 0, sizeof *r);
  r->cfg = *c; r->nranks = 1;
  if (c->val > 0) {
    if (c->train_subset <= 0) die_usage("train: --val %d needs --train-subset N (the validation split is the %d examples after the first N)", c->val, c->val);
    if (c->test_subset > 0) die_usage("train: --val and --test-subset both choose the evaluation set; give one");
    data_load_first(&r->data, c->data, c->train_subset + c->val, 1);
    data_hold_out(&r->data, c->train_subset, c->val);
  } else
    data_load_first(&r->data, c->data, (int)c->train_subset, (int)c->test_subset);
  const dataset_t *tr = &r->data.train;
  net_build(&r->net, c->net, tr->c, tr->h, tr->w);
  if (!pdl_numerics_off)   /* (a timing-only run allocates no such memory: docs/SIM.md, the phantom backend) */
    net_check_memory(&r->net, examples_per_update > c->batch ? examples_per_update : c->batch);
  /* every output can be written, checked before the first step (not at the first save, an epoch later) */
  if (c->checkpoint[0]) outfile_probe(c->checkpoint, "checkpoint");
  { const char *dp = env_get("PDL_DUMP_PARAMS"); if (dp && *dp) outfile_probe(dp, "PDL_DUMP_PARAMS file"); }
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
  ws_init(&r->eval_ws, &r->net, 256, r->threads, kernels_for(NULL, -1, NULL, NULL, 0), c->seed);
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
  if (r->data.train.aug.on) { char a[96]; aug_format(&r->data.train.aug, a, sizeof a); json_str(j, "aug", a); }   /* only when on */
  json_int(j, "seed", (long long)c->seed);
  json_int(j, "batch", c->batch);
  json_num(j, "lr", c->lr);
  json_num(j, "momentum", c->momentum);
  json_num(j, "wd", c->wd);
  json_int(j, "threads", r->threads);
  json_int(j, "ranks", r->nranks);
  json_str(j, "runtime", r->simulated ? "sim" : "real");
  json_bool(j, "simulated", r->simulated);
  if (strcmp(c->coll, "mpi")) json_str(j, "coll", c->coll);   /* only when not the default */
  if (c->val > 0) {   /* --val: test_* are the validation split's, not the test set's */
    json_str(j, "eval_set", "validation");
    json_int(j, "val", c->val);
  }
  if (c->tag[0]) json_str(j, "tag", c->tag);
  json_meta(j);
}

void run_eval(run_t *r, const float *params, double t, const char *extra) {
  const dataset_t *te = &r->data.test;
  net_evaluate(&r->eval_ws, params, te->x, te->y, te->n, &r->test_err, &r->test_loss);
  run_eval_write(r, t, extra);
}

void run_eval_write(run_t *r, double t, const char *extra) {
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
    fprintf(stderr, "epoch %.2f  updates %ld  train_loss %.4f  %s_err %.4f  %s_loss %.4f  %.1fs\n",
            r->epochs_done, r->updates, r->train_loss, r->cfg.val > 0 ? "val" : "test", r->test_err,
            r->cfg.val > 0 ? "val" : "test", r->test_loss, t);
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
  if (r->data.train.lazy) {   /* decoders=D: this process's decoding and the steps' wait for it (data_pipe.c) */
    long dec, hits, misses; double wait;
    lazy_stats(r->data.train.lazy, &dec, &hits, &misses, &wait);
    json_int(&j, "data_decoded", dec); json_int(&j, "data_batches_prefetched", hits);
    json_int(&j, "data_batches_on_demand", misses); json_num(&j, "data_wait_s", wait);
    json_num(&j, "data_wait_frac", time_s > 0 ? wait / time_s : NAN);
  }
  json_pairs(&j, extra);
  const char *line = json_end(&j);
  results_write(&r->res, line);
  progress_done();
  printf("%s\n", line);
  fflush(stdout);
}

void run_dump_params(const float *w, size_t n) {
  const char *p = env_get("PDL_DUMP_PARAMS");
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
