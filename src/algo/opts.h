/* opts.h — the option descriptors that several algorithm families share (util/optdef.h), stored
 * in the run's configuration (core/run.h train_cfg_t). An algorithm lists the ones it reads in
 * algo_t.opts (with its own OD_ALGO options, declared in its file); the parser accepts those and
 * refuses every other non-common flag, --help prints them, and those marked `resume` go into the
 * checkpoint header. ALGO_OPTS_DIST: what the dispatcher and the node loop read for every
 * algorithm on the loop (sim platform, device rate, evaluation by examples, --target-err). */
#ifndef PDL_ALGO_OPTS_H
#define PDL_ALGO_OPTS_H
#include "util/optdef.h"

extern const optdef_t od_platform, od_device_rate, od_eval_every_examples, od_target_err, od_grad_threads,
  od_staleness, od_probe, od_tau, od_alpha, od_beta, od_delta, od_ps_order, od_worker_opt, od_gamma, od_noniid;
extern const optdef_t od_with_replacement;   /* core/run.c: the sequential optimizers read it too */

#define ALGO_OPTS_SIM &od_platform, &od_device_rate, &od_eval_every_examples
#define ALGO_OPTS_DIST ALGO_OPTS_SIM, &od_target_err

/* A flag that --algo `algo` does not read: exits 2 naming the flag, the algorithm and the
 * algorithms that do read it (or "unknown flag"). For train_cfg_parse. */
void algo_refuse_flag(const char *flag, const char *algo);
#endif
