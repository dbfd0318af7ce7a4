/* opts.c — the shared algorithm option descriptors (opts.h) and the refusal of a flag the chosen
 * algorithm does not read. */
#include "algo/opts.h"
#include <stddef.h>
#include <string.h>
#include "algo/algo.h"

#define CFG(field) OD_CFG, offsetof(train_cfg_t, field), sizeof(((train_cfg_t *)0)->field)
static const char *const ps_orders[] = {"any", "round-robin", NULL};
static const char *const worker_opts[] = {"sgd", "msgd", "nag", "adam", NULL};
const optdef_t
  od_platform = {"--platform", OD_STR, 0, 0, NULL, NULL, "P", "sim platform: cluster:nodes=N,gpus=G[,rate=GFLOPS] | links:k=K,bw=...", CFG(platform), 0, NULL},
  od_device_rate = {"--device-rate", OD_STR, 0, 0, NULL, NULL, "R", "sim device rate: GFLOP/s, 'calibrated' (pdl calibrate's file), 'calibrated:FILE' or a device name (k80)", CFG(device_rate), 1, NULL},
  od_eval_every_examples = {"--eval-every-examples", OD_LONG, 1, (double)(1L << 40), NULL, NULL, "N", "evaluate every N training examples processed", CFG(eval_every_examples), 0, NULL},
  od_target_err = {"--target-err", OD_DOUBLE, 0, 1, NULL, NULL, "E", "stop once the test error is <= E (time-to-accuracy runs)", CFG(target_err), 0, NULL},
  od_grad_threads = {"--grad-threads", OD_INT, 1, 1024, NULL, "1", "G", "grad threads (devices) per rank", CFG(grad_threads), 1, NULL},
  od_staleness = {"--staleness", OD_STR, 0, 0, NULL, "auto", "S", "auto (S = floor(1 + F_U/F_G)) | N | emulate:N", CFG(staleness), 1, NULL},
  od_probe = {"--probe", OD_INT, 0, 100000, NULL, "0", "N", "after one epoch, the prediction error ||w_{t+S0+1} - f_S(w_t, M_t)|| for S = 0..13, mean of N updates (P1)", CFG(probe), 0, NULL},
  od_tau = {"--tau", OD_INT, 1, 1 << 20, NULL, "1", "T", "communication period (lambda for agn/adag/dynsgd)", CFG(tau), 1, NULL},
  od_alpha = {"--alpha", OD_FLOAT, 0, 1, NULL, "beta / workers", "A", "elastic moving rate", CFG(alpha), 1, NULL},
  od_beta = {"--beta", OD_FLOAT, 0, 1, NULL, "0.9", "B", "EASGD beta (alpha = beta / p when --alpha is not given)", CFG(beta), 1, NULL},
  od_delta = {"--delta", OD_FLOAT, 0, 0.999999, NULL, "0.99", "D", "Nesterov momentum (EAMSGD locally, MDOWNPOUR on the master)", CFG(delta), 1, NULL},
  od_ps_order = {"--ps-order", OD_ENUM, 0, 0, ps_orders, "any", "O", "the server takes requests as they arrive (any) or in a fixed worker rotation (round-robin: deterministic, same on both runtimes)", CFG(ps_round_robin), 1, NULL},
  od_worker_opt = {"--worker-opt", OD_STR, 0, 0, worker_opts, "adam", "O", "the workers' own optimizer: sgd | msgd | nag | adam", CFG(worker_opt), 1, NULL},
  od_gamma = {"--gamma", OD_FLOAT, 1e-30, 1e30, NULL, "0.0001", "G", "ADAG's per-weight staleness scale gamma", CFG(gamma), 1, NULL},
  od_noniid = {"--noniid", OD_FLOAT, 0, 1, NULL, "0", "S", "deal a fraction S of the training set out by label (class skew per node)", CFG(noniid), 1, NULL};

void algo_refuse_flag(const char *flag, const char *algo) {
  char who[1024]; size_t k = 0; who[0] = 0;
  for (int i = 0; i < algo_count && k < sizeof who; i++)
    if (optdef_find(algo_table[i]->opts, flag))
      k += (size_t)snprintf(who + k, sizeof who - k, "%s%s", k ? " " : "", algo_table[i]->name);
  if (!k) die_usage("train: unknown flag '%s' (pdl train --help)", flag);
  die_usage("train: --algo %s does not read %s (read by: %s)", algo, flag, who);
}
