/* example.c — the worked example of docs/DESIGN.md ("Adding an algorithm"): local SGD with
 * periodic averaging, an algorithm with two flags of its own that runs on the CPU and on
 * --device. It is NOT built into pdl: tests/t_example_algo.sh copies it to src/algo/example.c of a
 * temporary copy of the tree, adds the line ALGO(example) to src/algo/algos.def, builds bin/pdl and
 * build/cuda-emu/pdl there and trains with it, proving that a new algorithm is one file and one
 * line in src/.
 *   every node:  g = grad J(x; w) over its own slice of the global batch;  M = mu M - lr g; w += M
 *   every P steps (--example-period):  w = (1 - B) w + B mean_nodes(w)   (--example-beta B)
 * Every update is one allreduce: of the control floats (loss, stop, signal: every node stops at
 * the same update), and at an averaging step of w too. The reporter evaluates its own w (equal
 * on every node right after an averaging step with B = 1). --device: the gradients on each
 * rank's device (loop_device, replica_grad_host: w up, the gradient down); w and the momentum
 * stay on the host, where the allreduce reads them. Checkpoints at epoch ends and on a signal. */
#include <stddef.h>
#include <string.h>
#include "algo/algo.h"

/* its own options: only this file knows the layout (train_cfg_t.algo_opts) */
typedef struct { int period; float beta; } example_opts_t;
_Static_assert(sizeof(example_opts_t) <= sizeof(((train_cfg_t *)0)->algo_opts), "example_opts_t fits algo_opts");

typedef struct { long averages; } example_stats_t;
static void example_summary(json_t *j, const loop_t *L, void *arg) {
  const example_stats_t *s = arg; const example_opts_t *eo = (const example_opts_t *)L->r->cfg.algo_opts;
  json_int(j, "nodes", L->rt->nnodes);
  json_int(j, "example_period", eo->period); json_num(j, "example_beta", eo->beta);
  json_int(j, "averages", s->averages);
}

static void example_node(rt_t *rt, void *arg) {
  job_t *job = arg; run_t *r = &job->r; const train_cfg_t *c = &r->cfg;
  const example_opts_t *eo = (const example_opts_t *)c->algo_opts;
  const int me = rt->node, N = rt->nnodes;
  const size_t n = r->net.nparams;
  example_stats_t st = {0};
  loop_t L; loop_init(&L, rt, job, LOOP_UPDATES, NULL, example_summary, &st);
  float *w = xmalloc(n * sizeof(float)), *g = xcalloc(n, sizeof(float));   /* optim_step leaves g zeroed */
  float *buf = xmalloc((n + CTL_F) * sizeof(float));                        /* [n] w to average, control floats */
  replica_t rep; replica_init(&rep, r, c->batch, loop_threads(&L, 1), me, N, 0, (uint64_t)me);
  const kernels_t *dk = loop_device(&L, "gradients", 0);   /* --device: this rank's device, else NULL (the CPU) */
  if (dk) replica_on(&rep, dk);
  net_init_params(&r->net, w, c->seed);   /* every node starts from the same parameters */
  optim_t o; optim_init(&o, OPT_MSGD, n, c->momentum, c->wd);
  loop_state(&L, "w", w, n * sizeof(float));
  loop_state_optim(&L, "msgd", &o);
  loop_state_replica(&L, "replica", &rep);
  loop_state(&L, "averages", &st.averages, sizeof st.averages);
  long step = 0;
  if (loop_resume(&L)) { optim_refresh(&o, w); step = L.updates; }
  for (; step < r->total_steps; step++) {
    const double ls = replica_grad_host(&rep, rt, w, g, 1.0f / (float)c->batch);   /* the sum of b losses */
    optim_step(&o, w, g, loop_lr(&L, step));                                        /* M = mu M - lr g; w += M */
    const int last = step + 1 == r->total_steps, avg = (step + 1) % eo->period == 0 || last;
    float *ctl = avg ? buf + n : buf;   /* the control floats ride behind w, or alone */
    if (avg) memcpy(buf, w, n * sizeof(float));
    ctl_pack(ctl, ls, job->reached ? 1.0f : 0.0f);
    rt->ops->allreduce(rt, buf, (avg ? n : 0) + CTL_F);
    const ctl_t x = ctl_unpack(ctl);
    if (x.stop > 0) break;
    if (avg) {   /* w = (1 - B) w + B mean(w) */
      const float b = eo->beta, s = b / (float)N;
      for (size_t i = 0; i < n; i++) w[i] = (1.0f - b) * w[i] + s * buf[i];
      st.averages++;
    }
    const double loss = x.loss / (double)(c->batch * N);
    loop_loss(&L, loss, 1);
    if (loop_diverged(&L, loss, step)) break;   /* the same allreduced loss on every node */
    loop_progress(&L, w, step + 1, (double)(step + 1) * c->batch * N, last);
    if (x.signal > 0) { loop_interrupted(x.signal); step++; break; }   /* every node: this update done */
    loop_checkpoint(&L, 0);                                           /* epoch ends */
  }
  loop_checkpoint(&L, pdl_stop_signal || step == r->total_steps);
  loop_finish(&L, w, w);
  replica_free(&rep); optim_free(&o);
  xfree(w); xfree(g); xfree(buf);
}

#define EX(f) OD_ALGO, offsetof(example_opts_t, f), sizeof(((example_opts_t *)0)->f)
static const optdef_t
  od_example_period = {"--example-period", OD_INT, 1, 1 << 20, NULL, "4", "P", "average the nodes' models every P local steps", EX(period), 1, NULL},
  od_example_beta = {"--example-beta", OD_FLOAT, 0, 1, NULL, "1", "B", "averaging weight: w = (1 - B) w + B mean(w)", EX(beta), 1, NULL};
static const optdef_t *const example_opts[] = {ALGO_OPTS_DIST, &od_example_period, &od_example_beta, NULL};
const algo_t algo_example = {
  .name = "example", .shape = ALGO_PEERS, .node = example_node, .opts = example_opts, .checkpoint = 1, .device = 1,
  .help = "local SGD with periodic averaging (docs/DESIGN.md's worked example, tests/example_algo)",
};
