/* run.h — what every training run shares, sequential or distributed: the parsed
 * configuration, data, net, the results file, evaluation and the last-line JSON summary. The
 * algorithms (src/algo, every one on the node loop) receive a run_t and report through it. */
#ifndef PDL_RUN_H
#define PDL_RUN_H
#include <stdint.h>
#include "core/data.h"
#include "core/model.h"
#include "optim/optim.h"
#include "util/util.h"

typedef struct {
  /* data / net */
  char data[512], net[256];
  int train_subset, test_subset;
  int val;                 /* --val N: evaluate on N held-out training examples (after train_subset) */
  /* optimisation */
  char algo[32];
  int batch;               /* per worker (sub-batch b for the PP-ASGD algorithms) */
  float lr, momentum, wd;
  int momentum_set;        /* --momentum given explicitly */
  long warmup;             /* steps of linear warm-up; -1 = one epoch (resolved in run_setup) */
  double epochs; long steps; /* steps > 0 overrides epochs */
  uint64_t seed;
  int threads;             /* OpenMP threads per replica as the user gave them; 0 = not given
                              (the resolved count is run_t.threads) */
  long eval_every;         /* evaluate every N updates (0: each epoch) */
  double diverge_loss;     /* a train loss above this (or NaN) stops the run as diverged */
  /* output */
  char results[1024], checkpoint[1024], tag[128];
  int resume, overwrite, quiet;
  double timeout;          /* watchdog seconds (0 = off) */
  device_spec_t device;    /* --device: the backend (contract/kernels.h's registry; "cpu" by default),
                              its device index (-1: each rank's local rank modulo the devices) */
  /* distributed: the options the algorithm families share (their descriptors, which say which
   * algorithm reads which, are in src/algo/opts.c; an algorithm lists them in algo_t.opts) */
  char runtime[16];        /* "real" | "sim" */
  char coll[8];            /* --coll: the real runtime's collective backend, "mpi" | "nccl" */
  char platform[256];      /* sim platform spec */
  char device_rate[64];    /* sim device rate: number (GFLOP/s) or name */
  int grad_threads;        /* G */
  char staleness[32];      /* "auto" | "S" | "emulate:S" */
  int tau;                 /* communication period */
  float alpha, beta, delta;/* elastic moving rate, EASGD beta, EAMSGD momentum */
  int with_replacement;
  int probe;               /* ppasgd/asgd-dist: P1 prediction-error measurements after epoch 1 */
  long eval_every_examples;/* evaluate every N training examples (distributed algorithms) */
  double target_err;       /* distributed algorithms: stop once the test error is <= this (0: off) */
  int ps_round_robin;      /* easgd family: the parameter server serves workers in a fixed rotation */
  char worker_opt[16];     /* agn/adag/dynsgd: the workers' own optimizer (sgd, msgd, nag, adam) */
  float gamma;             /* adag: the per-weight staleness scale gamma */
  float noniid;            /* gossip: fraction of the training set dealt out by label (sampler_skew) */
  /* The chosen algorithm's option descriptors (NULL-terminated; util/optdef.h): what the parser
   * accepted beyond the common flags, and what the checkpoint header records. Static data. */
  const struct optdef *const *algo_optdefs;
  /* The chosen algorithm's own options (OD_ALGO descriptors), laid out by its file's struct. */
  _Alignas(16) unsigned char algo_opts[2048];
} train_cfg_t;

typedef struct {
  train_cfg_t cfg;         /* the user's flags, with warmup and eval_every resolved; never the
                              thread count: that is `threads` below */
  int threads;             /* OpenMP threads this process computes with (cfg.threads, or all
                              cores); the "threads" figure of the JSON lines (an algorithm's
                              thread budget sets it to what its roles use) */
  data_t data;
  net_t net;
  results_t res;
  workspace_t eval_ws;
  long steps_per_epoch;    /* examples per epoch / (batch * workers) */
  long total_steps;
  double t0;
  int rank, nranks;        /* MPI (1 rank without) */
  int simulated;
  /* latest figures */
  double test_err, test_loss, train_loss;
  long updates; double epochs_done;
  int diverged; long diverged_at;
} run_t;

void train_cfg_defaults(train_cfg_t *c);
/* Parses `pdl train` flags into c (exit 2 on anything bad): the common flags (train_opts) and
 * the chosen algorithm's (algo_opts, NULL-terminated; their OD_ALGO defaults are applied first).
 * Any other flag goes to refuse(flag, algo), which exits 2 saying who reads it; NULL: "unknown
 * flag". c->algo must already hold the chosen algorithm (train_cfg_algo). */
struct optdef;
void train_cfg_parse(train_cfg_t *c, int argc, char **argv, const struct optdef *const *algo_opts,
                     void (*refuse)(const char *flag, const char *algo));
/* --algo from argv (either form), or the default, into c->algo; exits 2 on a bad value. */
void train_cfg_algo(train_cfg_t *c, int argc, char **argv);
/* Common flags (every --algo) and the sequential optimizers' own (NULL-terminated). */
extern const struct optdef *const train_opts[];
extern const struct optdef *const train_seq_opts[];
extern const struct optdef od_with_replacement;
/* An output path an algorithm adds (e.g. --gossip-timeline) must be none of the run's other outputs
 * (--results, --checkpoint and its .prev/.node<k> files, PDL_DUMP_PARAMS): exit 2 naming both. */
void train_output_distinct(const train_cfg_t *c, const char *flag, const char *path);
/* The checkpoint header's text of c's resume-relevant algorithm options: "--name=value\n"... */
void train_cfg_resume_text(const train_cfg_t *c, char *buf, size_t n);
/* The area an option descriptor points into (c itself, or c->algo_opts). */
void *train_cfg_area(train_cfg_t *c, const struct optdef *d);
void train_usage(FILE *f);

/* Loads data and builds the net; examples_per_update = batch x workers per update. */
void run_setup(run_t *r, const train_cfg_t *c, int examples_per_update);
void run_free(run_t *r);
/* Common JSON fields (algo, net, data, seed, batch, lr, ...) for any line of this run. */
void run_json_common(run_t *r, json_t *j, const char *event);
/* The training state on a backend (train_state.c): parameters, gradients (zero between steps) and
 * the optimizer the steps run. On a host-memory backend they are the caller's w, g and optimizer
 * themselves; on a device backend (kernels_t.host_memory 0) device copies (the optimizer one of
 * optim_init_on's on that backend, every state vector in device memory), brought over by
 * train_state_upload (after initialising or resuming) and back by train_state_download (to
 * evaluate, checkpoint, finish). */
typedef struct {
  const kernels_t *k;
  float *w, *g;
  optim_t *o;      /* the caller's optimizer, or &dev */
  optim_t dev;
  int device;
  void *chunk, *chunk_host; size_t chunk_bytes;   /* train_state_steps' slots and indices */
  /* train_state_steps' CUDA graphs of whole chunks (sgd/msgd, no dropout, one lr in the chunk):
   * up to 4, by (K, lr, workspace); warm: an eager chunk ran (plans, scratch exist) */
  struct { void *g; int K; float lr; const workspace_t *ws; long used; } graphs[4];
  long graph_clock, graph_epoch; int warm;   /* graph_epoch: the backend's buffers_epoch they were captured at */
  long graph_launches;   /* chunks run as a graph replay */
} train_state_t;
void train_state_init(train_state_t *d, const kernels_t *k, float *w, float *g, optim_t *o);
void train_state_upload(train_state_t *d, const float *w, const optim_t *o);
void train_state_download(const train_state_t *d, float *w, optim_t *o);
void train_state_free(train_state_t *d);
/* One sequential training step on the batch (x, y) of B at lr, on d's backend: net_forward at the
 * optimizer's gradient point, then net_backward_step with the update fused in (sgd, msgd), or
 * net_backward and optim_step (the other kinds). Returns the batch's mean loss. The same on every
 * backend, so pdl train --device and the tests run one code path. */
double train_state_step(train_state_t *d, workspace_t *ws, const float *x, const int *y, int B, float lr);
/* A data set in workspace memory of backend k (issue 35 B/F: on a device, uploaded once, so that
 * no step uploads its batch and evaluation reads nothing from the host). */
typedef struct { const kernels_t *k; float *x; int *y; int n; } resident_set_t;
void resident_set_init(resident_set_t *s, const kernels_t *k, const dataset_t *ds);
void resident_set_free(resident_set_t *s);
/* K steps of train_state_step on batches of s: step j's batch is the rows idx[j B .. (j + 1) B)
 * (host indices, e.g. sampler_next_idx's), at lr[j]; each step's loss is left in workspace memory
 * and the K mean losses come back into loss[] together after the K steps. On a device backend the
 * K steps' only waits are one upload (the indices) and that one read back, instead of three per
 * step. The same parameters and losses, bit for bit, as K train_state_step calls on those batches.
 * The steps' dropout masks are drawn ahead on the host (net_draw_masks: the same draws) and come in
 * the same upload. Where the backend has CUDA graphs, the optimizer is sgd, msgd, nag or mvasgd
 * (their steps' only per-step argument is the lr) and lr is one value
 * over the chunk, the K steps are captured once as one graph (after a first eager chunk) and
 * replayed by later chunks of the same K and lr: one launch per chunk, the same bits.
 * PDL_TRAIN_GRAPH=0 turns that off. */
void train_state_steps(train_state_t *d, workspace_t *ws, const resident_set_t *s, const int *idx, int K, int B,
                       const float *lr, double *loss);

/* --device NAME[:N] (the registry's backends: cpu | cuda[:N] | ...) into d; a bad value dies_usage
 * (exit 2) naming flag. */
void parse_device(const char *flag, const char *v, device_spec_t *d);
/* Evaluates params on the test set, updates r->test_err/test_loss, writes an "eval" line with
 * extra raw JSON pairs (may be NULL, e.g. "\"S_bar\":7.2"), prints progress. Rank 0 only writes. */
void run_eval(run_t *r, const float *params, double wall_or_sim_time, const char *extra);
/* run_eval's line and progress for r->test_err/test_loss already computed (e.g. on a device). */
void run_eval_write(run_t *r, double wall_or_sim_time, const char *extra);
/* Writes the summary line to the results file and prints it as the LAST line of stdout. */
void run_summary(run_t *r, double time_s, const char *extra);
/* Test hook for equivalence tests: PDL_DUMP_PARAMS=FILE writes the final parameters as raw floats. */
void run_dump_params(const float *w, size_t n);
/* Records divergence: returns 1 if loss is NaN/Inf or above cfg.diverge_loss. */
int run_check_diverged(run_t *r, double loss, long step);

#endif
