/* dist.c — distributed training entry: picks the algorithm and the runtime, sets up the run on
 * each node, and reports through run_t (same last-line JSON as sequential `pdl train`).
 *   ssgd      Algorithm 4 of the PP-ASGD paper: per step each of G grad roles per node computes
 *             one sub-batch gradient at w_hat, the node sums them, allreduce, NAG update
 *             (M = mu M - lr D; w += M; w_hat = w + mu M).
 *   ppasgd / asgd-dist with --staleness emulate:S   one process, deterministic: the gradient
 *             applied at step t is taken at w_hat of step t-S (f_S(w,M) for ppasgd, w for asgd).
 * Gradients are normalised by the nominal global batch (b x G x nodes): for SSGD this makes the
 * update equal to sequential NAG with batch b x G x nodes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "comm/mpi_util.h"
#include "comm/watchdog.h"
#include "dist/dist.h"
#include "dist/pp.h"
#include "dist/replica.h"
#include "dist/rt.h"

typedef struct gthread_s gthread_t;
typedef struct {
  train_cfg_t cfg;
  run_t r;
  int G, nnodes;
  double eval_time;          /* wall time spent evaluating (excluded from real time_s) */
} job_t;

typedef struct {
  job_t *job;
  int node;
  float *w, *buf;            /* buf: [n + 1]: summed gradient, then the loss sum */
  float **D;                 /* [G][n] per grad role */
  double *loss;              /* [G] */
  replica_t *rep;            /* [G] */
  optim_t o;
  const float *what;
} node_t;

struct gthread_s { node_t *nd; int g; float scale; };

static int thread_budget(const train_cfg_t *c, int roles_per_rank, int simulated) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN); if (cores < 1) cores = 1;
  if (simulated) return c->threads > 0 ? c->threads : (int)cores;
  const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int local = ls ? atoi(ls) : 1; if (local < 1) local = 1;
  int t = c->threads > 0 ? c->threads : (int)(cores / (local * roles_per_rank));
  if (t < 1) t = 1;
  if (pdl_mpi_rank() == 0 && !c->quiet)
    fprintf(stderr, "pdl: thread budget: %ld cores for %d rank(s) here x %d grad role(s) x %d OpenMP thread(s)%s\n",
            cores, local, roles_per_rank, t, (long)local * roles_per_rank * t > cores ? " -- OVERSUBSCRIBED" : "");
  return t;
}

static void ssgd_grad_role(rt_t *rt, void *arg) {
  gthread_t *t = arg; node_t *nd = t->nd;
  nd->loss[t->g] = replica_grad(&nd->rep[t->g], rt, nd->what, nd->D[t->g], t->scale);
}

static void ssgd_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  int G = job->G, me = rt->node, N = rt->nnodes;
  size_t n = r->net.nparams;
  node_t nd; memset(&nd, 0, sizeof nd);
  nd.job = job; nd.node = me;
  nd.w = xmalloc(n * sizeof(float)); nd.buf = xmalloc((n + 1) * sizeof(float));
  nd.D = xmalloc((size_t)G * sizeof(float *)); nd.loss = xcalloc((size_t)G, sizeof(double));
  nd.rep = xmalloc((size_t)G * sizeof(replica_t));
  int threads = thread_budget(c, G, rt->ops->simulated);
  for (int g = 0; g < G; g++) {
    nd.D[g] = xcalloc(n, sizeof(float));
    replica_init(&nd.rep[g], r, c->batch, threads, me * G + g, N * G, 0, (uint64_t)(me * G + g));
  }
  net_init_params(&r->net, nd.w, c->seed);   /* every node starts from the same parameters */
  optim_init(&nd.o, OPT_NAG, n, c->momentum, c->wd);
  gthread_t *gt = xmalloc((size_t)G * sizeof(gthread_t));
  void **th = xmalloc((size_t)G * sizeof(void *));
  float scale = 1.0f / (float)(c->batch * G * N);
  double loss_acc = 0; long loss_n = 0, step;
  for (step = 0; step < r->total_steps && !pdl_stop_signal; step++) {
    watchdog_context("ssgd update %ld on node %d", step, me);
    nd.what = optim_grad_point(&nd.o, nd.w);
    for (int g = 0; g < G; g++) { gt[g].nd = &nd; gt[g].g = g; gt[g].scale = scale; th[g] = rt->ops->thread_start(rt, g, ssgd_grad_role, &gt[g]); }
    for (int g = 0; g < G; g++) rt->ops->thread_join(rt, th[g]);
    /* D_L = D_1 + ... + D_G; D_g = 0 */
    vec_copy(nd.buf, nd.D[0], n); vec_zero(nd.D[0], n);
    for (int g = 1; g < G; g++) { vec_add(nd.buf, nd.D[g], n); vec_zero(nd.D[g], n); }
    double ls = 0; for (int g = 0; g < G; g++) ls += nd.loss[g];
    nd.buf[n] = (float)ls;
    rt->ops->work(rt, 4.0 * n * (2 * G + 1));
    rt->ops->allreduce(rt, nd.buf, n + 1);
    double loss = nd.buf[n] / (double)(c->batch * G * N);
    optim_step(&nd.o, nd.w, nd.buf, lr_at(c->lr, step, c->warmup));
    rt->ops->work(rt, 4.0 * n * 6);
    loss_acc += loss; loss_n++;
    if (me != 0) continue;
    r->updates = step + 1;
    r->epochs_done = (double)(step + 1) / (double)r->steps_per_epoch;
    if (run_check_diverged(r, loss, step)) { pdl_stop_signal = pdl_stop_signal ? pdl_stop_signal : 0; break; }
    int epoch_end = (step + 1) % r->steps_per_epoch == 0;
    if (epoch_end || (c->eval_every && (step + 1) % c->eval_every == 0) || step + 1 == r->total_steps) {
      r->train_loss = loss_acc / (double)loss_n; loss_acc = 0; loss_n = 0;
      double t0 = now_s(), tt = rt->ops->now(rt) - (rt->ops->simulated ? 0 : job->eval_time);
      run_eval(r, nd.w, tt, NULL);
      job->eval_time += now_s() - t0;
    } else if (!c->quiet) {
      progress("step %ld/%ld  epoch %.2f  loss %.4f", step + 1, r->total_steps, r->epochs_done, loss);
    }
  }
  if (r->diverged && N > 1) die("ssgd: diverged at step %ld (multi-node runs stop as a whole)", r->diverged_at);
  if (me == 0) {
    double tt = rt->ops->now(rt) - (rt->ops->simulated ? 0 : job->eval_time);
    char extra[1024];
    int k = snprintf(extra, sizeof extra, "\"nodes\":%d,\"grad_threads\":%d,\"workers\":%d,\"time_per_update_s\":%.9g", N, G,
                     N * G, r->updates ? tt / (double)r->updates : 0.0);
    if (rt->ops->simulated)
      snprintf(extra + k, sizeof extra - (size_t)k, ",\"platform\":\"%s\",\"device_rate\":\"%s\"", c->platform,
               c->device_rate[0] ? c->device_rate : "platform default");
    run_summary(r, tt, extra);
    if (getenv("PDL_DUMP_PARAMS")) {
      FILE *f = fopen(getenv("PDL_DUMP_PARAMS"), "wb");
      if (!f || fwrite(nd.w, sizeof(float), n, f) != n || fclose(f)) die("cannot write %s", getenv("PDL_DUMP_PARAMS"));
    }
  }
  for (int g = 0; g < G; g++) { replica_free(&nd.rep[g]); xfree(nd.D[g]); }
  optim_free(&nd.o);
  xfree(nd.w); xfree(nd.buf); xfree(nd.D); xfree(nd.loss); xfree(nd.rep); xfree(gt); xfree(th);
}

/* PP-ASGD / ASGD under emulated staleness S (one process, deterministic). */
static int pp_emulate(job_t *job, int S, int predict) {
  run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  size_t n = r->net.nparams;
  float *w = xmalloc(n * sizeof(float)), *g = xmalloc(n * sizeof(float));
  float *hist = xmalloc((size_t)(S + 1) * n * sizeof(float));   /* ring of the last S+1 w_hat */
  int threads = thread_budget(c, 1, 1);
  replica_t rep; replica_init(&rep, r, c->batch, threads, 0, 1, 0, 0);
  net_init_params(&r->net, w, c->seed);
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  float coef = pp_coef(c->momentum, S);
  rt_t dummy = {rt_real_ops(), 0, 1, 0, 1, NULL};   /* compute()/work() are no-ops in real */
  for (int k = 0; k <= S; k++) vec_copy(hist + (size_t)k * n, w, n);
  double loss_acc = 0; long loss_n = 0, step;
  double t_start = now_s();
  for (step = 0; step < r->total_steps && !pdl_stop_signal; step++) {
    const float *stale = hist + (size_t)((step + 1) % (S + 1)) * n;  /* w_hat published S steps ago */
    if (S == 0) stale = hist;
    vec_zero(g, n);
    double loss = replica_grad(&rep, &dummy, stale, g, 1.0f / (float)c->batch) / c->batch;
    optim_step(&o, w, g, lr_at(c->lr, step, c->warmup));
    float *slot = hist + (size_t)((step + 1) % (S + 1)) * n;
    if (S == 0) slot = hist;
    if (predict) pp_predict(slot, w, o.M, coef, n); else vec_copy(slot, w, n);
    loss_acc += loss; loss_n++;
    r->updates = step + 1;
    r->epochs_done = (double)(step + 1) / (double)r->steps_per_epoch;
    if (run_check_diverged(r, loss, step)) break;
    int epoch_end = (step + 1) % r->steps_per_epoch == 0;
    if (epoch_end || (c->eval_every && (step + 1) % c->eval_every == 0) || step + 1 == r->total_steps) {
      r->train_loss = loss_acc / (double)loss_n; loss_acc = 0; loss_n = 0;
      char extra[128]; snprintf(extra, sizeof extra, "\"staleness\":%d,\"emulated\":true", S);
      run_eval(r, w, now_s() - t_start, extra);
    } else if (!c->quiet) progress("step %ld/%ld  epoch %.2f  loss %.4f", step + 1, r->total_steps, r->epochs_done, loss);
  }
  char extra[128]; snprintf(extra, sizeof extra, "\"staleness\":%d,\"emulated\":true,\"S_bar\":%d", S, S);
  run_summary(r, now_s() - t_start, extra);
  if (getenv("PDL_DUMP_PARAMS")) {
    FILE *f = fopen(getenv("PDL_DUMP_PARAMS"), "wb");
    if (!f || fwrite(w, sizeof(float), n, f) != n || fclose(f)) die("cannot write %s", getenv("PDL_DUMP_PARAMS"));
  }
  replica_free(&rep); optim_free(&o); xfree(w); xfree(g); xfree(hist);
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}

static double device_rate(const train_cfg_t *c, const net_t *net) {
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
  if (!strcmp(d, "k80")) return 1400;  /* one K80 die: ~4.4 TFLOP/s peak fp32 x ~1/3 achieved on CNN training */
  die_usage("--device-rate: '%s' is not a number, 'calibrated' or a known device (k80)", d);
}

int dist_train(const train_cfg_t *c) {
  job_t *job = xcalloc(1, sizeof *job);
  job->cfg = *c;
  train_cfg_t *cf = &job->cfg;
  int is_pp = !strcmp(c->algo, "ppasgd"), is_asgd = !strcmp(c->algo, "asgd-dist");
  if (strcmp(c->algo, "ssgd") && !is_pp && !is_asgd)
    die_usage("train: unknown --algo '%s' (pdl train --help)", c->algo);
  if (!cf->momentum_set) cf->momentum = 0.99f;   /* the PP-ASGD paper's mu */
  int sim = !strcmp(c->runtime, "sim");
  if (is_pp || is_asgd) {
    if (strncmp(c->staleness, "emulate:", 8))
      die_usage("train: --algo %s currently runs with --staleness emulate:S (threaded/MPI PP-ASGD is not built yet)", c->algo);
    int S = (int)parse_long("--staleness emulate:S", c->staleness + 8, 0, 4096);
    if (sim) die_usage("train: --staleness emulate runs in one process; drop --runtime sim");
    run_setup(&job->r, cf, cf->batch);
    return pp_emulate(job, S, is_pp);
  }
  job->G = cf->grad_threads;
  if (sim) {
    int N = 0, G = 0;
    if (!cf->platform[0]) die_usage("train: --runtime sim needs --platform (e.g. cluster:nodes=2,gpus=4)");
    if (rt_sim_platform_shape(cf->platform, &N, &G) != 0) die_usage("train: bad --platform '%s'", cf->platform);
    job->G = G; job->nnodes = N;
    run_setup(&job->r, cf, cf->batch * G * N);
    job->r.simulated = 1; job->r.nranks = N;
    rt_sim_cfg_t sc; memset(&sc, 0, sizeof sc);
    sc.platform = cf->platform; sc.device_gflops = device_rate(cf, &job->r.net); sc.seed = cf->seed;
    int rc = rt_sim_run(&sc, N, ssgd_node, job);
    run_free(&job->r);
    return rc;
  }
  int argc = 0; char **argv = NULL;
#ifdef PDL_HAVE_MPI
  pdl_mpi_init(&argc, &argv, MPI_THREAD_FUNNELED);
#endif
  if (cf->timeout > 0) watchdog_start(cf->timeout);
  int R = pdl_mpi_size();
  run_setup(&job->r, cf, cf->batch * job->G * R);
  job->r.rank = pdl_mpi_rank(); job->r.nranks = R;
  if (job->r.rank != 0) results_close(&job->r.res);
  rt_real_run(ssgd_node, job, &argc, &argv);
  watchdog_stop();
  run_free(&job->r);
  pdl_mpi_finalize();
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}
