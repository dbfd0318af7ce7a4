/* rt.h — the runtime seam. Every distributed algorithm is written once, as the programs of
 * its roles, against these operations; two runtimes implement them:
 *   real (src/rt/rt_real.c): a node is an MPI rank (or the only process without mpirun);
 *        roles inside a node are pthreads of a pool kept for the run (thread_start hands the
 *        role to an idle one; none is created per update), each running with its starter's
 *        OpenMP thread count (loop_threads sets the main role's to its share); collectives go
 *        through the collective layer's seam (src/coll/coll.h: MPI on host memory, or NCCL
 *        staged through device memory, chosen by --coll), point-to-point maps to MPI; time is
 *        the wall clock; rt_compute() is a no-op (the work already took its time).
 *   sim  (src/sim, libpdlsim.so, dlopen'ed): a node is a SimGrid host; roles are S4U actors on
 *        that node's hosts (device d of node i is its own host, with the device's FLOP rate);
 *        messages take the network model's time with contention; rt_compute(flops) advances the
 *        calling actor's clock by flops / its host's rate. The numerics are real in both.
 *
 * CONTRACT
 *  - Every call is made by a role (the node's main role, or a thread started by
 *    rt->ops->thread_start) and passes that role's own rt_t.
 *  - Collectives (allreduce, reduce, bcast, allgatherv, reduce_scatterv, barrier) are called
 *    by exactly ONE role per node, by all nodes, in the same order. Sums are of floats; the
 *    reduction order is the runtime's (MPI's or NCCL's algorithm, or the sim's ring), so results
 *    agree across runtimes and --coll backends within float rounding, not bit for bit (at 2
 *    nodes every sum is a + b: bit for bit).
 *  - send/recv are between the main roles of two nodes (tag < 1024), blocking, matched in
 *    order per (src, tag); recv_any receives from any node and reports the source.
 *  - Shared memory inside a node is visible to all its roles; guard it with rt mutexes
 *    (pthread mutexes in real, sg_mutex in sim so a blocked actor costs simulated time).
 *  - now() is seconds since the run started (wall or simulated). compute(flops) must be called
 *    after doing flops of real work that a device would do (the gradient of a sub-batch);
 *    work(bytes) after touching `bytes` of memory in vector updates (modelled at the node's
 *    memory rate in sim; no-op in real).
 *  - Nothing here allocates per call on the real runtime's hot path. */
#ifndef PDL_RT_H
#define PDL_RT_H
#include <stddef.h>

typedef struct rt rt_t;
typedef void (*rt_fn)(rt_t *rt, void *arg);

typedef struct rt_ops {
  const char *name;        /* "real" | "sim" */
  int simulated;
  double (*now)(rt_t *rt);
  void (*compute)(rt_t *rt, double flops);
  void (*work)(rt_t *rt, double bytes);
  /* roles inside this node: device >= 0 runs on that device (sim host), -1 on the node CPU */
  void *(*thread_start)(rt_t *rt, int device, rt_fn fn, void *arg);
  void (*thread_join)(rt_t *rt, void *thread);
  void *(*mutex_new)(rt_t *rt);
  void (*mutex_lock)(rt_t *rt, void *m);
  void (*mutex_unlock)(rt_t *rt, void *m);
  void (*mutex_free)(rt_t *rt, void *m);
  void (*yield)(rt_t *rt);                                   /* let other roles run */
  /* between nodes */
  void (*send)(rt_t *rt, int dst, const void *buf, size_t bytes, int tag);
  void (*recv)(rt_t *rt, int src, void *buf, size_t bytes, int tag);
  int (*recv_any)(rt_t *rt, void *buf, size_t bytes, int tag); /* returns the source node */
  void (*allreduce)(rt_t *rt, float *buf, size_t n);
  void (*reduce)(rt_t *rt, float *buf, size_t n, int root);   /* result at root only */
  void (*bcast)(rt_t *rt, float *buf, size_t n, int root);
  void (*allgatherv)(rt_t *rt, const float *mine, float *all, const size_t *counts); /* all = concat */
  void (*reduce_scatterv)(rt_t *rt, const float *buf, float *mine, const size_t *counts); /* sum, my part */
  void (*barrier)(rt_t *rt);
  /* Training on a CUDA device (issue 35 G; the real runtime only, NULL on sim): gpu gives the
   * device this node trains on out of ndev visible ones (its collectives' device where they run
   * on one, NCCL; else the node's index among the ranks of its host, modulo ndev); allreduce_dev
   * sums dev[0..n) (device memory) over the nodes in place, queued on the CUDA stream `stream` after
   * its work, and returns 1 (also at one node: nothing to sum), or returns 0 doing nothing when the
   * collectives run on host memory (MPI): the caller then stages through host memory and
   * allreduce. */
  int (*gpu)(rt_t *rt, int ndev);
  int (*allreduce_dev)(rt_t *rt, float *dev, size_t n, void *stream);
} rt_ops_t;

struct rt {
  const rt_ops_t *ops;
  int node, nnodes;        /* this role's node and the node count */
  int device, ndevices;    /* device of this role (-1: node CPU) and devices per node */
  void *impl;              /* runtime-private */
};

/* Runs node_main(rt, arg) once per node on the chosen runtime and returns when all are done.
 * real: this process is one node (MPI rank); sim: cfg describes the platform. */
typedef struct {
  const char *platform;    /* sim platform spec (see src/sim/platform.c) */
  double device_gflops;    /* device rate for platforms that take it (0: platform default) */
  unsigned long seed;
  int timing_only;         /* 1: no numerics (--device phantom): messages take the time of their
                              full size but carry only their last 64 KiB (where node programs keep
                              their control floats), and collectives add and copy only those */
  char platform_desc[512]; /* out: what was simulated (hosts, rates, links), for results */
} rt_sim_cfg_t;

int rt_real_run(rt_fn node_main, void *arg, int *argc, char ***argv);
/* The real runtime's nodes, for the dispatcher that sizes a run before rt_real_run starts it (so
 * the layers above the runtime never include MPI): rt_real_init joins the job (MPI_Init_thread,
 * idempotent; nothing without MPI) at the thread level the roles need, roles_talk 1 = a role's own
 * thread talks to other nodes (MPI_THREAD_MULTIPLE), 0 = only the node's main role does
 * (MPI_THREAD_FUNNELED), and returns 0, or -1 when this MPI does not provide that level.
 * rt_real_node / rt_real_nnodes: this process's node and the node count (0 and 1 without MPI or
 * without mpirun). rt_real_finalize leaves the job (idempotent). */
int rt_real_init(int roles_talk);
int rt_real_node(void);
int rt_real_nnodes(void);
void rt_real_finalize(void);
/* --coll: the collective backend rt_real_run's collectives run on, "mpi" (default) or "nccl";
 * 2 for another name. rt_real_run exits 2 on every rank, naming --coll and why, when the backend
 * cannot start (nccl without a CUDA device, or a build without NCCL). */
int rt_real_set_coll(const char *name);
const rt_ops_t *rt_real_ops(void);
/* The real runtime's MPI communicator as a Fortran handle (MPI_Comm_c2f), for a library that
 * builds its own process grid on it (--kfac-split's BLACS grid, src/kfac/split_inv.c); -1 when
 * MPI is not running (no MPI build, or one process without mpirun). */
int rt_real_mpi_comm_f(void);
/* Starts the real runtime's clock (now() = 0) for a caller that runs roles itself, in this
 * process, without rt_real_run (the emulated-staleness mode). */
void rt_real_clock_start(void);
/* Loads libpdlsim.so (never linked into this MPI binary: libsimgrid exports MPI_* symbols). */
int rt_sim_run(rt_sim_cfg_t *cfg, int nnodes_hint, rt_fn node_main, void *arg);
/* Nodes the sim platform spec describes (e.g. cluster:nodes=4,gpus=8 -> 4 nodes x 8 devices). */
int rt_sim_platform_shape(const char *platform, int *nnodes, int *ndevices);
/* Sim runtime notes (src/rt/rt_sim_loader.c, docs/SIM.md): rt_sim_run and
 * rt_sim_platform_shape print their reason and return 2 for a bad platform spec (caller exits 2)
 * and 1 for a failed run (deadlock, a second platform in one process); a missing libpdlsim.so
 * dies. One platform per process: later runs must use the same spec, hint and rate. */
/* 1 when libpdlsim.so loads; else 0 with the reason in why. */
int rt_sim_available(char *why, size_t n);
/* The path libpdlsim.so was loaded from (NULL before the first load). */
const char *rt_sim_library(void);
/* Writes the SimGrid XML of a generated platform spec to path (to edit and run as file:PATH);
 * desc (may be NULL) gets the one-line description. 0 ok, 2 bad spec, 1 write error. */
int rt_sim_platform_xml(const char *platform, double device_gflops, const char *path, char *desc,
                        size_t desclen);

#endif
