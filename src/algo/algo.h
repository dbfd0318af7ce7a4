/* algo.h — the algorithm layer: what every distributed algorithm declares (algo_t, one
 * descriptor per --algo name, listed once in algos.def), the job all nodes of a run share, and
 * the node loop (loop_t) that node programs call instead of re-implementing evaluation,
 * stopping, divergence, the JSON lines, the parameter dump and the thread budget.
 *
 * An algorithm is a node program `void node(rt_t *rt, void *job)` written against the runtime
 * seam (rt/rt.h): the same code runs on the real runtime (MPI ranks, pthreads) and the sim
 * runtime (SimGrid actors). What stays in an algorithm's file is its roles and its update rule;
 * see docs/DESIGN.md for a worked example of adding one (one new file plus one line in
 * algos.def). In sim mode every node runs in this process and shares one job; in real mode each
 * rank has its own. */
#ifndef PDL_ALGO_H
#define PDL_ALGO_H
#include "algo/opts.h"
#include "algo/replica.h"
#include "util/vec.h"
#include "core/run.h"
#include "core/snap.h"
#include "rt/rt.h"

typedef enum {
  ALGO_PEERS,      /* every node runs the same roles; examples per update = b x devices x nodes */
  ALGO_SERVER,     /* node 0 is a parameter server, nodes 1..N-1 workers; examples/update = b x workers */
  ALGO_ONE_NODE,   /* one node (the sequential optimizers, the p = 1 comparators); examples per update = b;
                      on the real runtime one process without MPI */
} algo_shape_t;

typedef struct job job_t;

typedef struct algo {
  const char *name;          /* --algo NAME */
  const char *help;          /* one line: what it is, with the paper's algorithm or equation */
  algo_shape_t shape;        /* its roles (and so how many examples one update consumes) */
  float momentum;            /* default mu when --momentum is not given (0: the core's default; <0: 0) */
  /* The options it reads beyond the common ones (NULL-terminated; algo/opts.h): the parser
   * accepts these and refuses any other, --help lists them, the checkpoint header records the
   * ones a resume must match. Its own (OD_ALGO) options live in train_cfg_t.algo_opts, laid out
   * by a struct in its file. */
  const optdef_t *const *opts;
  rt_fn node;                /* the node program */
  int variant;               /* for a node program that serves several algorithms */
  /* Optional: runs once in this process before the runtime starts (own flags, set-up). Returns
   * -1 to go on to the runtime, or an exit status that ends the run here. */
  int (*prepare)(job_t *job);
  /* 1: the node programs keep their state in the node loop's snapshot (loop_state...) and
   * save it (loop_checkpoint), so --checkpoint/--resume work; 0: --checkpoint is refused. */
  int checkpoint;
  /* 1: a started role (not only the main role) sends and receives (a serving role): the real
   * runtime then needs MPI_THREAD_MULTIPLE. */
  int roles_talk;
  /* 1: the node program trains on --device cuda (its parameters and gradients on each rank's
   * GPU, --grad-threads 1, the real runtime); 0: --device is refused */
  int device;
} algo_t;

/* The table (algos.def, in --help order). */
extern const algo_t *const algo_table[];
extern const int algo_count;
const algo_t *algo_find(const char *name);   /* NULL if unknown */
void algo_usage(FILE *f);                    /* the algorithm list of `pdl train --help` */

struct job {
  const algo_t *algo;
  run_t r;                   /* r.cfg is the ONE configuration: the user's flags (threads 0 =
                                not given) plus run_setup's resolved warm-up and eval interval */
  int G, nnodes;             /* devices (grad roles) per node, nodes */
  double eval_time;          /* wall seconds the reporter spent evaluating (not in real time_s) */
  int reached;               /* reporter: the test error reached --target-err */
  long param;                /* algorithm-private, set by prepare (ppasgd: S, -1 = auto) */
};

/* Runs --algo of c on --runtime real|sim; returns the process exit status. */
int algo_train(const train_cfg_t *c);

/* Sim device rate from --device-rate (GFLOP/s, 'calibrated', 'calibrated:FILE', or a device
 * name); 0 = default. */
double algo_device_rate(const train_cfg_t *c, const net_t *net);
/* The calibration file --device-rate names: 'calibrated' = results/calibration/<host>-<net>.json
 * (what `pdl calibrate` writes), 'calibrated:FILE' = FILE. 0 if it names none. */
int algo_calibration_path(const train_cfg_t *c, const net_t *net, char *path, size_t len);

/* ---- the node loop ---------------------------------------------------------------------------
 * One per node program. The reporter (node 0) evaluates and writes; every node may call the
 * functions (the others return at once where only the reporter acts). When an evaluation is due
 * is fixed by the schedule:
 *   LOOP_UPDATES   synchronous updates: an epoch is steps_per_epoch updates; evaluate at each
 *                  epoch end, every --eval-every updates and after the last update.
 *   LOOP_EXAMPLES  updates of varying size (PP-ASGD's gathered sub-batches): epochs counted in
 *                  examples; evaluate at each epoch end, every --eval-every-examples (else every
 *                  --eval-every updates) and when the run is done.
 *   LOOP_CLOCK     a clock of local steps summed over workers (parameter server, comparators):
 *                  evaluate at the start, every --eval-every steps (default: an epoch's worth)
 *                  and at the end; "train_loss" is the evaluated point's loss on the training
 *                  set (as the EASGD paper plots the center) and the workers' running mean loss
 *                  is "worker_loss".
 *   LOOP_LOCAL     local steps (gossip): every node steps on its own shard and counts its own
 *                  steps; every node evaluates its own model every --eval-every local steps
 *                  (default: an epoch of a shard) and after its last one. An eval line is the
 *                  mean over the nodes at one evaluation point (time_s the mean, time_max_s the
 *                  latest; test_err_nodes each node's). No collective runs during training unless
 *                  the nodes must agree (--target-err, --checkpoint): then each evaluation is one
 *                  allreduce of every node's record and the control floats, so all nodes stop at
 *                  the same point (the target reached, a divergence, a signal) and a snapshot is
 *                  one cut; otherwise the records are gathered when the run ends (loop_finish).
 * The algorithm adds its own fields to the eval lines and the summary through the two hooks,
 * with the JSON writer (util.h json_*). */
typedef enum { LOOP_UPDATES, LOOP_EXAMPLES, LOOP_CLOCK, LOOP_LOCAL } loop_sched_t;
enum { LOOP_LOCAL_F = 4 };   /* a LOOP_LOCAL evaluation record: local step, time, test error, test loss */
typedef struct loop loop_t;
typedef void (*loop_json_fn)(json_t *j, const loop_t *L, void *arg);

struct loop {
  rt_t *rt; job_t *job; run_t *r;
  loop_sched_t sched;
  int reporter;              /* this node evaluates and writes */
  loop_json_fn eval_json, summary_json;   /* may be NULL */
  void *arg;                 /* passed to the hooks */
  long updates;              /* progress as last reported */
  double examples;
  double loss_acc; long loss_n;   /* train-loss samples since the last evaluation */
  long last_eval;            /* updates at the last evaluation; -1 before the first */
  long next_eval, eval_every;     /* LOOP_CLOCK */
  long next_epoch, next_eval_ex;  /* LOOP_EXAMPLES */
  int stop;                  /* reporter: stop requested (divergence seen at an evaluation); LOOP_LOCAL:
                                every node, after an agreed evaluation */
  /* LOOP_LOCAL */
  int agree;                 /* the nodes agree at each evaluation (one allreduce): --target-err, --checkpoint */
  float *ev; long ev_n, ev_cap;   /* this node's evaluation records, LOOP_LOCAL_F floats each (not agreeing) */
  double t_node;             /* this node's time at its latest progress (its end, once it stops) */
  struct loop_local { double diverged; } local;   /* saved: this node's loss left the range at some step */
  double t_end;              /* loop_finish: the run's time, for the summary hook */
  int keep_diverged;         /* set by the node: a diverged run ends without evaluating the diverged
                                parameters (its summary keeps the last evaluation's test figures, with
                                the updates and train loss up to the divergence: pdl train's
                                sequential optimizers, as they always reported) */
  /* checkpoints */
  snap_t snap;               /* this node's state: the loop's own section, then the algorithm's */
  long gen;                  /* generation of the last snapshot saved or resumed (0: none) */
  long saved_epoch;          /* epoch boundary of the last periodic save */
  long saved_updates;        /* progress at the last save or resume (-1: none) */
  double time_base;          /* run time before a resume */
  int resumed, resumed_prev;   /* resumed_prev: from the kept .prev generation */
  struct loop_persist {      /* the loop's and the run's figures, as saved */
    long updates, loss_n, last_eval, next_eval, next_epoch, next_eval_ex, saved_epoch, diverged_at, r_updates;
    double examples, loss_acc, time, test_err, test_loss, train_loss, epochs_done;
    int reached, diverged;
  } persist;
  /* loop_on_device: the reporter evaluates on that backend (w_eval is its memory) */
  const kernels_t *dk;
  const kernels_t *pk; int dev;   /* loop_device: the table and device index this node trains on (NULL, -1: the host) */
  void (*to_host)(void *); void *to_host_arg;   /* loop_device_state */
  workspace_t dws;           /* the evaluation workspace there */
  resident_set_t dte;        /* the test set there */
  workspace_t *bn_src;       /* loop_state_ws: the workspace whose batch norm running statistics this
                                node's evaluations use (NULL: none registered) */
};

void loop_init(loop_t *L, rt_t *rt, job_t *job, loop_sched_t sched, loop_json_fn eval_json,
               loop_json_fn summary_json, void *arg);
/* OpenMP threads per role so that roles x threads fit this machine's cores (printed on real);
 * 1 on sim unless --threads is given (actors run one at a time). Sets the "threads" figure. */
int loop_threads(loop_t *L, int roles_per_rank);
/* The learning rate of the update at `step` (0-based; the node program says what its steps count:
 * updates, a worker's local steps, SSGD-equivalent steps): --lr, linearly warmed up over the first
 * --warmup steps (run_setup resolved 'epoch'), then held. Every node program takes its lr here. */
float loop_lr(const loop_t *L, long step);
/* Seconds for reporting: simulated, or wall minus the reporter's evaluation time. */
double loop_time(const loop_t *L);
/* A train-loss sample (mean loss of a mini-batch, or a sum over count mini-batches). */
void loop_loss(loop_t *L, double loss_sum, long count);
/* 1 if loss (an agreed value: allreduced, or seen by the reporter) says the run diverged: NaN,
 * Inf or above --diverge-loss; the reporter records it at update `step` (which then counts as
 * done, except on LOOP_CLOCK where the caller's progress already counts it). LOOP_LOCAL: this
 * node's own loss; the node records it and goes on (the summary says "diverged"; agreeing nodes
 * all stop at the next evaluation). */
int loop_diverged(loop_t *L, double loss, long step);
/* LOOP_CLOCK: the evaluation at the start. */
void loop_begin(loop_t *L, const float *w_eval);
/* Records progress without evaluating (a server counts a commit before it applies it). */
void loop_advance(loop_t *L, long updates, double examples);
/* After progress: `updates` so far, `examples` consumed so far (all nodes), `last` if the run
 * is done. Evaluates w_eval when due, or shows the progress line. Returns 1 if the reporter
 * wants to stop (a LOOP_CLOCK evaluation found the run diverged). */
int loop_progress(loop_t *L, const float *w_eval, long updates, double examples, int last);
/* LOOP_LOCAL: 1 if loop_progress at this progress will evaluate (a node whose model another
 * role writes takes its copy for w_eval only then). */
int loop_due(const loop_t *L, long updates, int last);
/* LOOP_UPDATES (and LOOP_LOCAL, as loop_due): 1 if loop_progress at `updates` will evaluate (an
 * epoch end, --eval-every, the last update), so that a node keeping its parameters on a device
 * brings them to the host only then; 0 for the other schedules. */
int loop_eval_due(const loop_t *L, long updates, int last);
/* A node keeping state on its device (loop_device with keep) hands the loop the function that brings
 * that state into the host memory its snapshot and w_final name (to_host(arg)); the loop calls it
 * only where the host copy is read: right before it saves a snapshot (loop_checkpoint) and at
 * loop_finish (the parameter dump), on every node. */
void loop_device_state(loop_t *L, void (*to_host)(void *arg), void *arg);
/* The sum over nodes of x [m] in k's workspace memory: in place on host memory (host unused);
 * NCCL on k's stream where the runtime has a device collective (rt->ops->allreduce_dev) and k is a
 * device, else staged through host [m] (download, rt->ops->allreduce, upload). */
void allreduce_ws(rt_t *rt, const kernels_t *k, float *x, float *host, size_t m);
/* The node keeps its parameters on backend k (a CUDA device; LOOP_UPDATES): from now on the w_eval
 * of loop_progress and loop_finish is k's memory, and the reporter evaluates there, on a resident
 * copy of the test set (issue 35 F: the same figures as on a host copy through the same table). */
void loop_on_device(loop_t *L, const kernels_t *k);
/* Placement (issue 50): the backend this node trains on, from --device through the registry
 * (contract/kernels.h), or NULL for a host backend (the CPU, the default: nothing to bind). Its
 * device is --device's index if given, else the runtime's choice for this rank (rt->ops->gpu: the
 * device collective backend's, NCCL's, else the rank's index on its host modulo the host's
 * devices); the table is opened on the calling thread, which keeps its context for the run. Says
 * "pdl: rank R of N: <what> on NAME:D (desc)" on stderr (unless --quiet). keep: the node keeps its
 * parameters in the device's memory (LOOP_UPDATES: the w_eval of loop_progress and loop_finish is
 * device memory, and the reporter evaluates there, loop_on_device); 0: its parameters stay on the
 * host (only gradients on the device). Dies where the runtime has no device choice (sim). */
const kernels_t *loop_device(loop_t *L, const char *what, int keep);
/* A role started on another thread binds that thread to the node's device (the same table, the
 * thread's own context, kept while the role runs); nothing on a host backend. */
void loop_device_thread(const loop_t *L);
/* After loop_device: the replica's gradients on the node's device (replica_on with loop_device's
 * table; nothing on the host, where the replica already is). */
void loop_device_replica(const loop_t *L, replica_t *rp);

/* ---- placement: the node's state where it trains (issue 50) ----------------------------------
 * A node program that keeps its parameters and optimizer where it trains writes its update once,
 * against a loop_place_t; the loop decides what lives where. loop_place calls loop_device(L, what,
 * 1) and returns the table the node trains on (the CPU's on the host). On a device: P->w and P->o
 * are twins of the caller's w and o (host memory, the ones the snapshot registers) in the device's
 * memory, uploaded by loop_place_upload (after loop_resume) and brought back by the loop right
 * before a snapshot and at loop_finish (loop_device_state; a node with more device state registers
 * its own function and calls loop_place_download from it); P->x is a zero-filled buffer of m floats
 * there (m 0: none) and P->xh its host twin. On the host: P->w = w, P->o = o, P->x = P->xh one host
 * buffer, and the transfers do nothing. */
typedef struct {
  const kernels_t *k;        /* the node's table */
  train_state_t d;           /* (d.w, d.o: the twins on a device) */
  float *w; optim_t *o;      /* where the node trains: what its update, gradient point and evaluations read */
  float *hw; optim_t *ho;    /* the caller's host copies */
  float *x, *xh; size_t m;   /* the exchange buffer there and its host twin */
} loop_place_t;
const kernels_t *loop_place(loop_t *L, loop_place_t *P, const char *what, float *w, optim_t *o, size_t m);
void loop_place_upload(loop_place_t *P);
void loop_place_download(loop_place_t *P);
void loop_place_free(loop_place_t *P);
/* Buffers in k's memory twinned with host buffers (what a node stages collectives through): the
 * twin of n floats at h (h itself on host memory, else k->alloc, zero-filled), freed by
 * loop_twin_free; down/up copy n floats between a twin and its host buffer (nothing when they are
 * one); loop_zero and loop_scale are x = 0 and x *= s in k's memory (vec_zero, vec_scale on the
 * host; k->axpby on a device); loop_host_view is x readable on the host: x on host memory, else
 * downloaded into h (n floats). */
float *loop_twin(const kernels_t *k, float *h, size_t n);
void loop_twin_free(const kernels_t *k, float *x, float *h);
void loop_twin_down(const kernels_t *k, float *h, const float *x, size_t n);
void loop_twin_up(const kernels_t *k, float *x, const float *h, size_t n);
void loop_zero(const kernels_t *k, float *x, size_t n);
void loop_scale(const kernels_t *k, float *x, float s, size_t n);
const float *loop_host_view(const kernels_t *k, float *h, const float *x, size_t n);
/* Ends the run: a last evaluation unless the latest progress was just evaluated, the summary
 * line (with platform and device rate on sim), and PDL_DUMP_PARAMS of w_final. LOOP_LOCAL: every
 * node calls it (it gathers the evaluation records and the nodes' end times; the run's time is
 * the last node's end); an interrupted node that did not agree evaluates where it stopped. */
void loop_finish(loop_t *L, const float *w_eval, const float *w_final);

/* ---- checkpoints (--checkpoint FILE, --resume) --------------------------------------------
 * A node registers the state it needs to continue (parameters, centers, counters, optimizers,
 * replicas: their samplers and dropout rngs) once, after allocating it; the loop adds its own
 * (progress, evaluation schedule, loss accumulators, run time, latest figures). Node k's file
 * is snap.h's (PATH for node 0, PATH.node<k>), so every rank writes its own; the algorithm
 * decides where a cut is consistent and calls loop_checkpoint there. */
void loop_state(loop_t *L, const char *name, void *p, size_t bytes);
void loop_state_optim(loop_t *L, const char *name, optim_t *o);
void loop_state_replica(loop_t *L, const char *name, replica_t *rp);
/* A training workspace's batch norm state (nothing for a net without batch norm): saved in the
 * node's checkpoints, and the first one registered on a node is what its evaluations use (each
 * replica keeps its own running statistics; an evaluation uses those of this node's replica,
 * docs/DESIGN.md). loop_state_replica registers its replica's. */
void loop_state_ws(loop_t *L, const char *name, workspace_t *ws);
/* Every node calls it once, after registering its state and before its first message. With
 * --resume, the nodes agree (one allreduce) on the newest generation that every node holds
 * (its file or the kept .prev) and load it; returns 1 if resumed, 0 for a fresh start (no file
 * anywhere). Dies naming the file on a mismatch or an inconsistent set (but on LOOP_CLOCK, every
 * node's file of that generation must be at the same update: a snapshot is one cut). LOOP_LOCAL: a
 * resume ends with an allreduce of an agreed evaluation's size (the saved run left its cut through
 * one), so no node goes on before every node has loaded and, on sim, they leave it as they left
 * the cut. */
int loop_resume(loop_t *L);
/* This node's checkpoint file (FILE or FILE.node<k>; after a resume from the kept generation, its
 * .prev), for a message about a figure it held. */
const char *loop_node_file(const loop_t *L);
/* After loop_resume (issue 46: a checksummed file can still be crafted): a figure read from this
 * node's checkpoint against what the run can hold. Dies (exit 1) naming the file and the field
 * (printf-style) when v is NaN or outside [lo, hi]. */
void loop_check(const loop_t *L, double v, double lo, double hi, const char *field, ...) __attribute__((format(printf, 5, 6)));
/* Saves this node's snapshot when --checkpoint is given and `now` is set (a stop, the run's
 * end) or an epoch boundary was crossed since the last save. No communication: the caller
 * calls it where every node's state belongs to the same cut. Returns 1 if it saved. */
int loop_checkpoint(loop_t *L, int now);
/* The signal a node passes along with its stop flag (pdl_stop_signal as a float), and what a
 * node does with one it receives: records it as its own, so every rank ends "interrupted". */
float loop_signal_flag(void);
void loop_interrupted(float flag);

/* ---- control floats -------------------------------------------------------------------------
 * What rides at the end of an allreduced or gathered buffer beside the payload, CTL_F floats in
 * this order: the loss (a sum over the node's examples or mini-batches), a stop flag (the sender
 * wants every node to stop before the update: --target-err reached, a divergence) and the
 * signal flag (loop_signal_flag). An allreduce sums them: loss summed, stop and signal > 0 if
 * any node's is; a gathered set of records is merged with ctl_merge (flags: the largest). */
enum { CTL_F = 3 };
typedef struct { double loss; float stop, signal; } ctl_t;
void ctl_pack(float *p, double loss, float stop);   /* p[0..CTL_F): loss, stop, loop_signal_flag() */
ctl_t ctl_unpack(const float *p);                   /* one record, or the allreduced sum */
void ctl_merge(ctl_t *acc, const float *p);         /* adds one node's record (start from ctl_t{0}) */
/* The allreduce of a node's buffer x [n + CTL_F] in k's memory (xh: its host twin, loop_twin) with
 * this node's control floats (ctl_pack(loss, stop)) behind its n floats: allreduce_ws (in place on
 * the host; on a device the control floats go up before and come back after). Returns the sums. */
ctl_t loop_allreduce_ctl(rt_t *rt, const kernels_t *k, float *x, float *xh, size_t n, double loss, float stop);
#endif
