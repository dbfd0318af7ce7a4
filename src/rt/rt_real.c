/* rt_real.c — the real runtime (see src/rt/rt.h): a node is an MPI rank (or the only process
 * without mpirun / without MPI), roles inside a node are pthreads, time is the wall clock.
 * MPI is initialised with MPI_THREAD_FUNNELED: by the seam's contract only a node's main role
 * communicates, so no two threads of a rank ever call MPI. Collectives go through the collective
 * layer's training seam (src/coll/coll.h, coll_seam_t) on the backend rt_real_set_coll chose
 * (--coll): mpi (default) makes the MPI calls on the algorithm's host buffers (MPI_Allreduce,
 * MPI_Reduce, MPI_Bcast, MPI_Allgatherv, MPI_Reduce_scatter), nccl stages them through device
 * buffers and runs NCCL; either is the backend->run() that pdl coll times. The parameter server
 * of the algorithms is point-to-point (send/recv/recv_any), MPI always, see src/algo/ps.c. */
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "contract/kernels.h"
#include "coll/coll.h"
#include "coll/mpi_util.h"
#include "rt/rt.h"
#include "util/env.h"
#include "util/util.h"

static double g_t0;
static char g_coll_name[8] = "mpi";   /* --coll */
#ifdef PDL_HAVE_MPI
static coll_seam_t *g_coll;           /* open while rt_real_run runs */
#endif

static double r_now(rt_t *rt) { (void)rt; return now_s() - g_t0; }
void rt_real_clock_start(void) { g_t0 = now_s(); }
static void r_compute(rt_t *rt, double flops) { (void)rt; (void)flops; }
static void r_work(rt_t *rt, double bytes) { (void)rt; (void)bytes; }

/* Roles: a pool of pthreads kept for the run, so that starting a role on the hot path (ssgd's
 * grad roles every update, replica_grad_on_device every gradient) creates no thread and
 * allocates nothing (rt.h). thread_start hands (rt, fn, arg) to an idle pool thread under that
 * thread's mutex (it creates one only when none is idle: the first update that starts that many
 * roles at once); thread_join waits until fn has returned and gives the thread back. The pool
 * ends with rt_real_run (pool_end joins every thread).
 * Thread budget: OpenMP's thread count (nthreads-var) is per thread, and a new pthread starts with
 * the default (every core, or OMP_NUM_THREADS) whatever its starter set; so the started role's
 * thread runs with its starter's count (omp_get_max_threads() when thread_start was called, which
 * loop_threads set to the role's share of the budget), applied with omp_set_num_threads in the
 * role's own thread before fn. */
enum { SLOT_IDLE, SLOT_RUN, SLOT_DONE, SLOT_QUIT };
typedef struct {
  pthread_t th; pthread_mutex_t mu; pthread_cond_t cv;
  int state;     /* SLOT_*, under mu */
  int busy;      /* handed out by thread_start and not yet joined, under g_pool_mu */
  int omp;       /* the starter's OpenMP thread count */
  rt_t rt; rt_fn fn; void *arg;
} rslot_t;
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static rslot_t **g_pool;
static int g_npool, g_pool_cap;

static void *r_role_thread(void *p) {
  rslot_t *s = p;
  int omp = 0;   /* the count this thread has now: 0 = OpenMP's default */
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->state != SLOT_RUN && s->state != SLOT_QUIT) pthread_cond_wait(&s->cv, &s->mu);
    if (s->state == SLOT_QUIT) break;
    pthread_mutex_unlock(&s->mu);
    if (s->omp != omp) { omp_set_num_threads(s->omp); omp = s->omp; }
    s->fn(&s->rt, s->arg);
    pthread_mutex_lock(&s->mu);
    s->state = SLOT_DONE;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}
static void *r_thread_start(rt_t *rt, int device, rt_fn fn, void *arg) {
  const int omp = omp_get_max_threads();
  rslot_t *s = NULL;
  pthread_mutex_lock(&g_pool_mu);
  for (int i = 0; i < g_npool && !s; i++) if (!g_pool[i]->busy) s = g_pool[i];
  if (!s) {   /* none idle: one more thread for the rest of the run */
    if (g_npool == g_pool_cap) {
      g_pool_cap = g_pool_cap ? 2 * g_pool_cap : 8;
      rslot_t **grown = xmalloc((size_t)g_pool_cap * sizeof *grown);
      if (g_npool) memcpy(grown, g_pool, (size_t)g_npool * sizeof *grown);
      xfree(g_pool); g_pool = grown;
    }
    s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL); pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->th, NULL, r_role_thread, s)) die("pthread_create failed on rank %d", rt->node);
    g_pool[g_npool++] = s;
  }
  s->busy = 1;
  pthread_mutex_unlock(&g_pool_mu);
  pthread_mutex_lock(&s->mu);
  s->rt = *rt; s->rt.device = device; s->fn = fn; s->arg = arg; s->omp = omp;
  s->state = SLOT_RUN;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return s;
}
static void r_thread_join(rt_t *rt, void *th) {
  (void)rt;
  rslot_t *s = th;
  pthread_mutex_lock(&s->mu);
  while (s->state != SLOT_DONE) pthread_cond_wait(&s->cv, &s->mu);
  s->state = SLOT_IDLE;
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&g_pool_mu);
  s->busy = 0;
  pthread_mutex_unlock(&g_pool_mu);
}
static void pool_end(void) {
  pthread_mutex_lock(&g_pool_mu);
  for (int i = 0; i < g_npool; i++) {
    rslot_t *s = g_pool[i];
    if (s->busy) die("internal: a role started on rank %d was never joined", pdl_mpi_rank());
    pthread_mutex_lock(&s->mu);
    s->state = SLOT_QUIT;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    pthread_mutex_destroy(&s->mu); pthread_cond_destroy(&s->cv);
    xfree(s);
  }
  xfree(g_pool);
  g_pool = NULL; g_npool = g_pool_cap = 0;
  pthread_mutex_unlock(&g_pool_mu);
}
static void *r_mutex_new(rt_t *rt) { (void)rt; pthread_mutex_t *m = xmalloc(sizeof *m); pthread_mutex_init(m, NULL); return m; }
static void r_mutex_lock(rt_t *rt, void *m) { (void)rt; pthread_mutex_lock(m); }
static void r_mutex_unlock(rt_t *rt, void *m) { (void)rt; pthread_mutex_unlock(m); }
static void r_mutex_free(rt_t *rt, void *m) { (void)rt; pthread_mutex_destroy(m); xfree(m); }
static void r_yield(rt_t *rt) { (void)rt; sched_yield(); }

#ifdef PDL_HAVE_MPI
static void r_send(rt_t *rt, int dst, const void *buf, size_t bytes, int tag) {
  (void)rt; CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, dst, tag, MPI_COMM_WORLD));
}
static void r_recv(rt_t *rt, int src, void *buf, size_t bytes, int tag) {
  (void)rt; CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}
static int r_recv_any(rt_t *rt, void *buf, size_t bytes, int tag) {
  (void)rt; MPI_Status st;
  CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
  return st.MPI_SOURCE;
}
/* One node without rt_real_run (the emulated-staleness mode) has no seam open: its collectives
 * are the one-node results (nothing to sum), made locally. */
static void r_allreduce(rt_t *rt, float *buf, size_t n) {
  if (rt->nnodes > 1) coll_seam_allreduce(g_coll, buf, n);
}
static void r_reduce(rt_t *rt, float *buf, size_t n, int root) {
  if (rt->nnodes > 1) coll_seam_reduce(g_coll, buf, n, root);
}
static void r_bcast(rt_t *rt, float *buf, size_t n, int root) {
  if (rt->nnodes > 1) coll_seam_bcast(g_coll, buf, n, root);
}
static void r_allgatherv(rt_t *rt, const float *mine, float *all, const size_t *counts) {
  if (g_coll) coll_seam_allgatherv(g_coll, mine, all, counts);
  else if (rt->nnodes == 1) memmove(all, mine, counts[0] * sizeof(float));
  else die("internal: allgatherv on %d nodes outside rt_real_run", rt->nnodes);
}
static void r_reduce_scatterv(rt_t *rt, const float *buf, float *mine, const size_t *counts) {
  if (g_coll) coll_seam_reduce_scatterv(g_coll, buf, mine, counts);
  else if (rt->nnodes == 1) memmove(mine, buf, counts[0] * sizeof(float));
  else die("internal: reduce_scatterv on %d nodes outside rt_real_run", rt->nnodes);
}
static void r_barrier(rt_t *rt) {
  if (g_coll) coll_seam_barrier(g_coll);
  else if (rt->nnodes > 1) die("internal: barrier on %d nodes outside rt_real_run", rt->nnodes);
}
#else
static void r_send(rt_t *rt, int dst, const void *buf, size_t bytes, int tag) {
  (void)rt; (void)dst; (void)buf; (void)bytes; (void)tag; die("send: built without MPI (one node only)");
}
static void r_recv(rt_t *rt, int src, void *buf, size_t bytes, int tag) {
  (void)rt; (void)src; (void)buf; (void)bytes; (void)tag; die("recv: built without MPI (one node only)");
}
static int r_recv_any(rt_t *rt, void *buf, size_t bytes, int tag) { r_recv(rt, 0, buf, bytes, tag); return 0; }
static void r_allreduce(rt_t *rt, float *buf, size_t n) { (void)rt; (void)buf; (void)n; }
static void r_reduce(rt_t *rt, float *buf, size_t n, int root) { (void)rt; (void)buf; (void)n; (void)root; }
static void r_bcast(rt_t *rt, float *buf, size_t n, int root) { (void)rt; (void)buf; (void)n; (void)root; }
static void r_allgatherv(rt_t *rt, const float *mine, float *all, const size_t *counts) { (void)rt; memmove(all, mine, counts[0] * sizeof(float)); }
static void r_reduce_scatterv(rt_t *rt, const float *buf, float *mine, const size_t *counts) { (void)rt; memmove(mine, buf, counts[0] * sizeof(float)); }
static void r_barrier(rt_t *rt) { (void)rt; }
#endif

static int g_local_rank;   /* this rank's index among the ranks of its host (rt_real_run: MPI's shared-memory
                              split; without MPI OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID) */
static int r_gpu(rt_t *rt, int ndev) {
  (void)rt;
#ifdef PDL_HAVE_MPI
  if (g_coll && coll_seam_device(g_coll) >= 0) return coll_seam_device(g_coll);
#endif
  return ndev > 0 ? g_local_rank % ndev : 0;
}
static int r_allreduce_dev(rt_t *rt, float *dev, size_t n, void *stream) {
  if (rt->nnodes == 1) return 1;
#ifdef PDL_HAVE_MPI
  if (g_coll) return coll_seam_allreduce_dev(g_coll, dev, n, stream);
#endif
  (void)dev; (void)n; (void)stream;
  return 0;
}

static const rt_ops_t real_ops = {
  "real", 0, r_now, r_compute, r_work, r_thread_start, r_thread_join, r_mutex_new, r_mutex_lock,
  r_mutex_unlock, r_mutex_free, r_yield, r_send, r_recv, r_recv_any, r_allreduce, r_reduce, r_bcast,
  r_allgatherv, r_reduce_scatterv, r_barrier, r_gpu, r_allreduce_dev,
};

const rt_ops_t *rt_real_ops(void) { return &real_ops; }
int rt_real_mpi_comm_f(void) {
#ifdef PDL_HAVE_MPI
  if (pdl_mpi_active()) return (int)MPI_Comm_c2f(MPI_COMM_WORLD);
#endif
  return -1;
}

int rt_real_init(int roles_talk) {
#ifdef PDL_HAVE_MPI
  int need = roles_talk ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
  if (pdl_mpi_init(NULL, NULL, need) < need) return -1;
  kernels_set_fail_handler(pdl_mpi_fail_abort);   /* a device's failure on one rank ends every rank */
  return 0;
#else
  (void)roles_talk;
  return 0;
#endif
}
int rt_real_node(void) { return pdl_mpi_rank(); }
int rt_real_nnodes(void) { return pdl_mpi_size(); }
void rt_real_finalize(void) { pdl_mpi_finalize(); }

int rt_real_set_coll(const char *name) {
  if (!coll_lib_find(name)) return 2;   /* the one list (src/coll/colls.def) */
  snprintf(g_coll_name, sizeof g_coll_name, "%s", name);
  return 0;
}

int rt_real_run(rt_fn node_main, void *arg, int *argc, char ***argv) {
#ifdef PDL_HAVE_MPI
  pdl_mpi_init(argc, argv, MPI_THREAD_FUNNELED);
  char why[512];
  g_coll = coll_seam_open(g_coll_name, why, sizeof why);
  if (!g_coll) {   /* every rank alike (coll_backend_nccl agrees over MPI first) */
    const coll_lib_t *lib = coll_lib_find(g_coll_name);
    if (pdl_mpi_rank() == 0) fprintf(stderr, "pdl: --coll %s: %s%s%s%s\n", g_coll_name, why,
                                     lib && !lib->host ? " (the default --coll " : "", lib && !lib->host ? coll_libs[0]->name : "",
                                     lib && !lib->host ? " needs no device)" : "");
    fflush(stderr);
    pdl_mpi_finalize();
    exit(PDL_EXIT_USAGE);
  }
  {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, pdl_mpi_rank(), MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_local_rank);
    MPI_Comm_free(&node);
  }
#else
  (void)argc; (void)argv;
  {   /* no MPI: the launcher's own word for this process's index on its host, if any */
    const char *lr = env_get("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!lr) lr = env_get("SLURM_LOCALID");
    g_local_rank = lr ? atoi(lr) : 0;
  }
  if (strcmp(g_coll_name, "mpi")) die_usage("--coll %s: this build has no MPI (built with NO_MPI=1), so no NCCL bootstrap", g_coll_name);
#endif
  rt_t rt = {&real_ops, pdl_mpi_rank(), pdl_mpi_size(), -1, 1, NULL};
  rt.ops->barrier(&rt);
  g_t0 = now_s();
  node_main(&rt, arg);
  pool_end();
  rt.ops->barrier(&rt);
#ifdef PDL_HAVE_MPI
  coll_seam_close(g_coll);
  g_coll = NULL;
#endif
  return 0;
}
