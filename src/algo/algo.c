/* algo.c — the algorithm table (algos.def) and the dispatcher: finds --algo, sets up the run
 * (examples per update from the algorithm's shape), lets the algorithm prepare, and starts its
 * node program on the real runtime (this process is one MPI rank) or the sim runtime (every
 * node an actor in this process). Nothing here knows an individual algorithm.
 * Gradients are normalised by the nominal global batch (b x G x nodes for ALGO_PEERS): for SSGD
 * this makes the update equal to sequential NAG with that batch; for the asynchronous
 * algorithms the step grows with the sub-batches an update gathers, as the PP-ASGD paper's
 * summed D does. */
#include "algo/algo.h"
#include "util/env.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rt/watchdog.h"

#define ALGO(x) extern const algo_t algo_##x;
#include "algo/algos.def"
#undef ALGO
#define ALGO(x) &algo_##x,
const algo_t *const algo_table[] = {
#include "algo/algos.def"
};
#undef ALGO
const int algo_count = (int)(sizeof algo_table / sizeof algo_table[0]);

const algo_t *algo_find(const char *name) {
  for (int i = 0; i < algo_count; i++) if (!strcmp(algo_table[i]->name, name)) return algo_table[i];
  return NULL;
}

static const char *shape_name(algo_shape_t s) {
  return s == ALGO_SERVER ? "server + workers" : s == ALGO_ONE_NODE ? "one node" : "peers";
}

void algo_usage(FILE *f) {
  fprintf(f, "algorithms (--algo; roles; the options each reads beyond the common ones):\n");
  for (int i = 0; i < algo_count; i++) {
    const algo_t *a = algo_table[i];
    fprintf(f, "  %-12s %s\n", a->name, a->help);
    fprintf(f, "  %-12s   [%s", "", shape_name(a->shape));
    for (int o = 0; a->opts && a->opts[o]; o++) fprintf(f, "%s%s", o ? " " : "; ", a->opts[o]->name);
    if (a->momentum != 0) fprintf(f, "; default --momentum %g", a->momentum < 0 ? 0 : a->momentum);
    fprintf(f, "]\n");
  }
  fprintf(f, "the algorithms' options (each reads those listed beside it):\n");
  for (int i = 0; i < algo_count; i++)   /* each descriptor once, in table order */
    for (int o = 0; algo_table[i]->opts && algo_table[i]->opts[o]; o++) {
      const optdef_t *d = algo_table[i]->opts[o];
      int seen = 0;
      for (int j = 0; j <= i && !seen; j++)
        for (int q = 0; algo_table[j]->opts && algo_table[j]->opts[q] && !seen; q++)
          seen = (j < i || q < o) && algo_table[j]->opts[q] == d;
      if (!seen) optdef_usage(f, d);
    }
}

/* The names for an error message: "ssgd ppasgd ..." */
static void algo_names(char *buf, size_t len) {
  size_t k = 0; buf[0] = 0;
  for (int i = 0; i < algo_count && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? " " : "", algo_table[i]->name);
}

int algo_calibration_path(const train_cfg_t *c, const net_t *net, char *path, size_t len) {
  const char *d = c->device_rate;
  if (!strncmp(d, "calibrated:", 11) && d[11]) { snprintf(path, len, "%s", d + 11); return 1; }
  if (strcmp(d, "calibrated")) return 0;
  char host[256] = "host"; gethostname(host, sizeof host);
  snprintf(path, len, "results/calibration/%s-%s.json", host, net->name);
  return 1;
}

double algo_device_rate(const train_cfg_t *c, const net_t *net) {
  const char *d = c->device_rate;
  if (!d[0]) return 0;
  char *end; double v = strtod(d, &end);
  if (end != d && !*end && v > 0) return v;
  char path[1200];
  if (algo_calibration_path(c, net, path, sizeof path)) {
    FILE *f = fopen(path, "r");
    if (!f) die("--device-rate calibrated: %s not found (run: bin/pdl calibrate --net %s)", path, net->name);
    char line[4096]; double g = 0;
    if (fgets(line, sizeof line, f)) { char *p = strstr(line, "\"gflops\":"); if (p) g = atof(p + 9); }
    fclose(f);
    if (!(g > 0)) die("%s: no gflops figure", path);
    return g;
  }
  if (!strcmp(d, "k80")) return 1500;  /* one K80 die: 4.37 TFLOP/s peak fp32, ~1/3 achieved on CNN training */
  die_usage("--device-rate: '%s' is not a number, 'calibrated', 'calibrated:FILE' or a known device (k80)", d);
}

/* Examples one update consumes, from the algorithm's shape. */
static int examples_per_update(const algo_t *A, const train_cfg_t *c, int G, int N) {
  switch (A->shape) {
    case ALGO_SERVER: return c->batch * (N - 1);
    case ALGO_ONE_NODE: return c->batch;
    default: return c->batch * G * N;
  }
}

int algo_train(const train_cfg_t *c) {
  const algo_t *A = algo_find(c->algo);
  if (!A) {
    char names[1024]; algo_names(names, sizeof names);
    die_usage("train: unknown --algo '%s'; the algorithms: %s (pdl train --help)", c->algo, names);
  }
  if (c->checkpoint[0] && !A->checkpoint) {
    char names[1024]; size_t k = 0; names[0] = 0;
    for (int i = 0; i < algo_count; i++)
      if (algo_table[i]->checkpoint) k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", k ? " " : "", algo_table[i]->name);
    die_usage("train: --algo %s does not save checkpoints (--checkpoint); the algorithms that do: %s", c->algo, names);
  }
  job_t *job = xcalloc(1, sizeof *job);
  job->algo = A;
  job->param = -1;
  train_cfg_t cf = *c;
  if (!cf.momentum_set && A->momentum != 0) cf.momentum = A->momentum < 0 ? 0 : A->momentum;
  int sim = !strcmp(cf.runtime, "sim");
  job->G = cf.grad_threads;
  job->r.cfg = cf;   /* what prepare sees; run_setup below sets up the rest from it */
  if (A->prepare) {
    int rc = A->prepare(job);
    if (rc >= 0) { xfree(job); return rc; }
  }
  if (sim) {
    int N = 0, G = 0;
    if (!cf.platform[0]) die_usage("train: --runtime sim needs --platform (e.g. cluster:nodes=2,gpus=4)");
    if (rt_sim_platform_shape(cf.platform, &N, &G) != 0) die_usage("train: bad --platform '%s'", cf.platform);
    /* --device phantom (issue 47): from here on the process's default backend is the timing-only one
     * (every replica, optimizer and workspace), and vectors, parameter set-up and payloads compute
     * nothing (util/vec.h); set before run_setup, whose evaluation workspace is the default's too */
    const kernels_t *tk = kernels_device_timing(&cf.device) ? kernels_timing_on(&cf.device, "--device") : NULL;
    if (tk) {
      pdl_numerics_off = 1;
      if (!cf.quiet)
        fprintf(stderr, "pdl: --device %s: timing only: no arithmetic, so no loss and no accuracy (the test and "
                "train figures are null); evaluations are skipped at their usual points, and no divergence or "
                "--target-err can stop the run: it runs its --steps/--epochs\n", cf.device.backend);
    }
    job->G = G; job->nnodes = N;
    if (A->shape == ALGO_SERVER && N < 2)
      die_usage("train: --algo %s needs a server node and >= 1 worker node (platform of >= 2 nodes)", cf.algo);
    run_setup(&job->r, &cf, examples_per_update(A, &cf, G, N));
    job->r.simulated = 1; job->r.nranks = N;
    rt_sim_cfg_t sc; memset(&sc, 0, sizeof sc);
    sc.platform = cf.platform; sc.device_gflops = algo_device_rate(&cf, &job->r.net); sc.seed = cf.seed;
    sc.timing_only = tk != NULL;
    install_stop_handlers();   /* (rt_sim keeps them across SimGrid's own set-up) */
    int rc = rt_sim_run(&sc, N, A->node, job);
    run_free(&job->r);
    xfree(job);
    return rc == 0 && pdl_stop_signal ? 128 + pdl_stop_signal : rc;
  }
  if (A->shape == ALGO_ONE_NODE) {   /* one process, no MPI (a one-node run makes no collective call) */
    const char *ranks = env_get("OMPI_COMM_WORLD_SIZE");
    if (!ranks) ranks = env_get("PMI_SIZE");
    if (ranks && atoi(ranks) > 1) {
      char dist[64];   /* its distributed form, where the table has one (kfac -> kfac-dist) */
      snprintf(dist, sizeof dist, "%.50s-dist", cf.algo);
      const int has = algo_find(dist) != NULL;
      die_usage("train: --algo %s runs on one node: one process (no mpirun -np %s)%s%s", cf.algo, ranks,
                has ? "; its distributed form is --algo " : "", has ? dist : "");
    }
    if (cf.timeout > 0) watchdog_start(cf.timeout);
    watchdog_context("%s: loading data and building the net", cf.algo);
    job->nnodes = 1;
    run_setup(&job->r, &cf, examples_per_update(A, &cf, job->G, 1));
    install_stop_handlers();
    rt_t self = {rt_real_ops(), 0, 1, -1, 1, NULL};
    rt_real_clock_start();
    A->node(&self, job);
    watchdog_stop();
    run_free(&job->r);
    xfree(job);
    return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
  }
  int argc = 0; char **argv = NULL;
  if (rt_real_init(A->roles_talk) != 0)
    die("train: --algo %s needs MPI_THREAD_MULTIPLE (a serving thread talks to other ranks), which this MPI "
        "does not provide", cf.algo);
  if (cf.timeout > 0) watchdog_start(cf.timeout);
  int R = rt_real_nnodes();
  job->nnodes = R;
  if (A->shape == ALGO_SERVER && R < 2)
    die_usage("train: --algo %s needs a parameter server and p >= 1 workers: run it with mpirun -np p+1 "
              "(or --runtime sim --platform links:k=P+1,...)", cf.algo);
  run_setup(&job->r, &cf, examples_per_update(A, &cf, job->G, R));
  job->r.rank = rt_real_node(); job->r.nranks = R;
  if (job->r.rank != 0) results_close(&job->r.res);
  install_stop_handlers();
  rt_real_set_coll(cf.coll);   /* checked by the parser: mpi or nccl */
  rt_real_run(A->node, job, &argc, &argv);
  watchdog_stop();
  run_free(&job->r);
  xfree(job);
  rt_real_finalize();
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}
