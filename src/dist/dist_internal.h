/* dist_internal.h — what the algorithm files in src/dist share: the job (one per process, shared
 * by all nodes of a sim run), the algorithm table, and small helpers.
 * An algorithm is a node program `void fn(rt_t *rt, void *job)` written against rt.h; node 0
 * evaluates and writes the summary through job->r (run.h). In sim mode every node runs in this
 * process and shares job; in real mode each rank has its own job. */
#ifndef PDL_DIST_INTERNAL_H
#define PDL_DIST_INTERNAL_H
#include "core/run.h"
#include "dist/replica.h"
#include "dist/rt.h"

typedef struct {
  train_cfg_t cfg;
  run_t r;
  int G, nnodes;             /* grad roles (devices) per node, nodes */
  double eval_time;          /* wall seconds node 0 spent evaluating (excluded from real time_s) */
  int staleness;             /* S for --staleness N / emulate:N; -1 = auto */
  void *algo_state;          /* algorithm-private, shared by the nodes of a sim run */
  int reached;               /* node 0: the test error reached --target-err */
} job_t;

typedef struct {
  const char *name;
  rt_fn node_main;
  int needs_server;          /* 1: node 0 is a parameter server, workers are nodes 1..N-1 */
  const char *help;
} dist_algo_t;

/* OpenMP threads per grad role so roles x threads fit the cores of this machine (printed).
 * c must be the USER's configuration (job->cfg: threads 0 = not given), not run_t's resolved one.
 * Sim: 1 unless --threads is given (actors run one at a time; a team per small kernel only spins). */
int dist_thread_budget(const train_cfg_t *c, int roles_per_rank, int simulated);
/* 1 when an (allreduced, hence node-identical) loss means the run diverged: NaN/Inf or above
 * --diverge-loss. Every node evaluates it on the same value, so all stop at the same update. */
int dist_diverged(const train_cfg_t *c, double loss);
/* Sim device rate from --device-rate (GFLOP/s, 'calibrated', or a device name); 0 = default. */
double dist_device_rate(const train_cfg_t *c, const net_t *net);
/* Test hook: PDL_DUMP_PARAMS=FILE writes the final parameters as raw floats. */
void dist_dump_params(const float *w, size_t n);
/* Wall or simulated seconds for reporting (wall minus evaluation time on the real runtime). */
double dist_time(rt_t *rt, const job_t *job);
/* Node 0: evaluate if this update ends an epoch / eval interval (or force); returns 1 if it did. */
int dist_maybe_eval(rt_t *rt, job_t *job, const float *w, long update, int epoch_end, int force,
                    double *loss_acc, long *loss_n, const char *extra);

void ssgd_node(rt_t *rt, void *job);
void ppasgd_node(rt_t *rt, void *job);
void easgd_node(rt_t *rt, void *job);   /* easgd.c: EASGD/DOWNPOUR families and the seq-* comparators */
int pp_emulate(job_t *job, int S, int predict);
#endif
