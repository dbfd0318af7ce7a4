/* dist.c — distributed training entry: picks the algorithm and the runtime, sets up the run on
 * each node, and reports through run_t (same last-line JSON as sequential `pdl train`).
 * The algorithms live one per file (ssgd.c, ppasgd.c, ...) as node programs on the seam (rt.h).
 * Gradients are normalised by the nominal global batch (b x G x nodes): for SSGD this makes the
 * update equal to sequential NAG with batch b x G x nodes; for the asynchronous algorithms the
 * step grows with the sub-batches an update gathers, as the PP-ASGD paper's summed D does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "comm/mpi_util.h"
#include "comm/watchdog.h"
#include "dist/dist.h"
#include "dist/dist_internal.h"

static const dist_algo_t algos[] = {
  {"ssgd", ssgd_node, 0, "synchronous data-parallel SGD with allreduce and NAG (PP-ASGD paper Alg. 4)"},
  {"ppasgd", ppasgd_node, 0, "asynchronous SGD with allreduce and parameter prediction f_S (Alg. 1-3, eq. 2)"},
  {"asgd-dist", ppasgd_node, 0, "asynchronous SGD with allreduce, no prediction (w_hat = w)"},
  {"easgd", easgd_node, 1, "asynchronous EASGD (EASGD paper Alg. 1): elastic pull/commit with the server every tau steps"},
  {"easgd-sync", easgd_node, 1, "synchronous EASGD (eq. 5-6) every tau steps: bcast the center, reduce the elastic differences"},
  {"eamsgd", easgd_node, 1, "asynchronous EAMSGD (Alg. 2): EASGD with local Nesterov momentum delta"},
  {"downpour", easgd_node, 1, "DOWNPOUR as in mpiT: local SGD, the accumulated step pushed and the center pulled every tau steps"},
  {"mdownpour", easgd_node, 1, "DOWNPOUR with Nesterov momentum delta on the master"},
  {"adownpour", easgd_node, 1, "DOWNPOUR; the master keeps the running average of the center (evaluated)"},
  {"mvadownpour", easgd_node, 1, "DOWNPOUR; the master keeps a moving average (rate 0.001) of the center (evaluated)"},
  {"seq-sgd", easgd_node, 0, "p = 1 comparator on the seam: the core's sgd (simulated time, center-style evaluation)"},
  {"seq-msgd", easgd_node, 0, "p = 1 comparator on the seam: the core's msgd"},
  {"seq-nag", easgd_node, 0, "p = 1 comparator on the seam: the core's nag (Nesterov MSGD)"},
  {"seq-asgd", easgd_node, 0, "p = 1 comparator on the seam: the core's asgd (evaluated at the average)"},
  {"seq-mvasgd", easgd_node, 0, "p = 1 comparator on the seam: the core's mvasgd (evaluated at the average)"},
};
#define NALGOS (int)(sizeof algos / sizeof algos[0])

int dist_thread_budget(const train_cfg_t *c, int roles_per_rank, int simulated) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN); if (cores < 1) cores = 1;
  if (simulated) return c->threads > 0 ? c->threads : 1;   /* actors run one at a time on one OS thread */
  const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int local = ls ? atoi(ls) : 1; if (local < 1) local = 1;
  int t = c->threads > 0 ? c->threads : (int)(cores / (local * roles_per_rank));
  if (t < 1) t = 1;
  if (pdl_mpi_rank() == 0 && !c->quiet)
    fprintf(stderr, "pdl: thread budget: %ld cores for %d rank(s) here x %d role(s) x %d OpenMP thread(s)%s\n",
            cores, local, roles_per_rank, t, (long)local * roles_per_rank * t > cores ? " -- OVERSUBSCRIBED" : "");
  return t;
}

int dist_diverged(const train_cfg_t *c, double loss) { return !(isfinite(loss) && loss <= c->diverge_loss); }

double dist_device_rate(const train_cfg_t *c, const net_t *net) {
  const char *d = c->device_rate;
  if (!d[0]) return 0;
  char *end; double v = strtod(d, &end);
  if (end != d && !*end && v > 0) return v;
  if (!strcmp(d, "calibrated")) {
    char path[1200], host[256] = "host"; gethostname(host, sizeof host);
    snprintf(path, sizeof path, "results/calibration/%s-%s.json", host, net->name);
    FILE *f = fopen(path, "r");
    if (!f) die("--device-rate calibrated: %s not found (run: bin/pdl calibrate --net %s)", path, net->name);
    char line[4096]; double g = 0;
    if (fgets(line, sizeof line, f)) { char *p = strstr(line, "\"gflops\":"); if (p) g = atof(p + 9); }
    fclose(f);
    if (!(g > 0)) die("%s: no gflops figure", path);
    return g;
  }
  if (!strcmp(d, "k80")) return 1500;  /* one K80 die: 4.37 TFLOP/s peak fp32, ~1/3 achieved on CNN training */
  die_usage("--device-rate: '%s' is not a number, 'calibrated' or a known device (k80)", d);
}

void dist_dump_params(const float *w, size_t n) {
  const char *p = getenv("PDL_DUMP_PARAMS");
  if (!p) return;
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(w, sizeof(float), n, f) != n || fclose(f)) die("cannot write %s", p);
}

double dist_time(rt_t *rt, const job_t *job) {
  return rt->ops->now(rt) - (rt->ops->simulated ? 0 : job->eval_time);
}

int dist_maybe_eval(rt_t *rt, job_t *job, const float *w, long update, int epoch_end, int force,
                    double *loss_acc, long *loss_n, const char *extra) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  if (!(epoch_end || force || (c->eval_every && (update + 1) % c->eval_every == 0))) return 0;
  if (*loss_n) r->train_loss = *loss_acc / (double)*loss_n;
  *loss_acc = 0; *loss_n = 0;
  double t0 = now_s();
  run_eval(r, w, dist_time(rt, job), extra);
  job->eval_time += now_s() - t0;
  if (c->target_err > 0 && r->test_err <= c->target_err) job->reached = 1;
  return 1;
}

int dist_train(const train_cfg_t *c) {
  const dist_algo_t *A = NULL;
  for (int i = 0; i < NALGOS; i++) if (!strcmp(c->algo, algos[i].name)) A = &algos[i];
  if (!A) die_usage("train: unknown --algo '%s' (pdl train --help)", c->algo);
  job_t *job = xcalloc(1, sizeof *job);
  job->cfg = *c;
  train_cfg_t *cf = &job->cfg;
  int is_pp = !strcmp(c->algo, "ppasgd"), is_asgd = !strcmp(c->algo, "asgd-dist");
  if (!cf->momentum_set && (is_pp || is_asgd || !strcmp(c->algo, "ssgd"))) cf->momentum = 0.99f; /* the PP-ASGD paper's mu */
  int sim = !strcmp(c->runtime, "sim");
  job->staleness = -1;
  if (is_pp || is_asgd) {
    const char *s = c->staleness;
    int emulate = !strncmp(s, "emulate:", 8);
    if (emulate) s += 8;
    if (strcmp(s, "auto") || emulate) job->staleness = (int)parse_long("--staleness", s, 0, 4096);
    if (emulate) {
      if (sim) die_usage("train: --staleness emulate runs in one process; drop --runtime sim");
      run_setup(&job->r, cf, cf->batch);
      int rc = pp_emulate(job, job->staleness, is_pp);
      run_free(&job->r);
      return rc;
    }
  }
  job->G = cf->grad_threads;
  if (sim) {
    int N = 0, G = 0;
    if (!cf->platform[0]) die_usage("train: --runtime sim needs --platform (e.g. cluster:nodes=2,gpus=4)");
    if (rt_sim_platform_shape(cf->platform, &N, &G) != 0) die_usage("train: bad --platform '%s'", cf->platform);
    job->G = G; job->nnodes = N;
    if (A->needs_server && N < 2) die_usage("train: --algo %s needs a server node and >= 1 worker node (platform of >= 2 nodes)", c->algo);
    run_setup(&job->r, cf, A->node_main == easgd_node ? cf->batch * (N - A->needs_server) : cf->batch * G * N);
    job->r.simulated = 1; job->r.nranks = N;
    rt_sim_cfg_t sc; memset(&sc, 0, sizeof sc);
    sc.platform = cf->platform; sc.device_gflops = dist_device_rate(cf, &job->r.net); sc.seed = cf->seed;
    int rc = rt_sim_run(&sc, N, A->node_main, job);
    run_free(&job->r);
    return rc;
  }
  int argc = 0; char **argv = NULL;
#ifdef PDL_HAVE_MPI
  pdl_mpi_init(&argc, &argv, MPI_THREAD_FUNNELED);
#endif
  if (cf->timeout > 0) watchdog_start(cf->timeout);
  int R = pdl_mpi_size();
  job->nnodes = R;
  if (A->needs_server && R < 2)
    die_usage("train: --algo %s needs a parameter server and p >= 1 workers: run it with mpirun -np p+1 "
              "(or --runtime sim --platform links:k=P+1,...)", c->algo);
  run_setup(&job->r, cf, A->node_main == easgd_node ? cf->batch * (R - A->needs_server) : cf->batch * job->G * R);
  job->r.rank = pdl_mpi_rank(); job->r.nranks = R;
  if (job->r.rank != 0) results_close(&job->r.res);
  install_stop_handlers();
  rt_real_run(A->node_main, job, &argc, &argv);
  watchdog_stop();
  run_free(&job->r);
  pdl_mpi_finalize();
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}
