/* cli/cmd_toy.c — `pdl toy`: n asynchronous workers and a parameter server on a 2-D toy objective
 * (Hermans 2017, docs/PAPERS.md §4: DOWNPOUR, AGN, DynSGD, ADAG and the Booth script's
 * asynchronous EASGD). Prints one JSON line; with --ensemble S it adds the implicit-momentum fit
 * over S seeds. The simulator and its conventions: src/analysis/toy_async.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "analysis/toy_async.h"
#include "util/util.h"

static void usage(FILE *f) {
  fprintf(f,
"usage: pdl toy [--fn booth|quadratic] [--rule downpour|agn|dynsgd|adag|easgd] [--workers N]\n"
"               [--lambda L] [--lr X] [--gamma G] [--alpha A] [--commits K]\n"
"               [--order round-robin|random] [--seed S] [--ensemble E]\n"
"\n"
"Deterministic simulation of N asynchronous workers and one parameter server (no threads): one\n"
"event = one worker computes its update from its own stale copy, commits it, and pulls the new\n"
"center. Round-robin order gives every commit after the first N staleness exactly N-1.\n"
"\n"
"  --fn F          booth: (x+2y-7)^2 + (2x+y-5)^2 from (90, 90), minimum 0 at (1, 3);\n"
"                  quadratic: 0.5 (x1^2 + 0.1 x2^2) from (1, 1)   (default booth)\n"
"  --rule R        downpour: commit the sum of L SGD steps (L = 1: -lr grad(copy));\n"
"                  agn: that sum / L; dynsgd: downpour scaled by 1/(staleness+1) at the server;\n"
"                  adag: agn scaled per coordinate by 1/((center - pulled)^2/G + 1);\n"
"                  easgd: e = A (x_i - center), x_i -= e, center += e, then L local SGD steps\n"
"                  (the Booth script: A = 1)   (default downpour)\n"
"  --workers N     1..%d (default 40)\n"
"  --lambda L      local steps per commit, 1..1000000 (default 1)\n"
"  --lr X          learning rate, (0, 100] (default 0.01)\n"
"  --gamma G       adag's gamma, (0, 1e6] (default 1e-4)\n"
"  --alpha A       easgd's moving rate, [0, 2] (default 1)\n"
"  --commits K     total commits, 1..1000000000 (default 2000, the Booth script's stop)\n"
"  --order O       round-robin or random (uniform worker per event) (default round-robin)\n"
"  --seed S        seed of the random order, 0..2^62 (default 1)\n"
"  --ensemble E    also fit the implicit momentum over E runs (seeds S..S+E-1; even, 2..100000;\n"
"                  needs --order random): d_{t+1} = mu d_t + beta grad(theta_t) on the mean\n"
"                  trajectory, split-sample IV. Mitliagkas et al. (Hermans eq. 1.1) predict\n"
"                  mu = 1 - 1/N, beta = -lr/N for downpour with L = 1 on the quadratic.\n"
"\n"
"Output fields: fn, rule, workers, lambda, lr, gamma, alpha, order, seed, commits (made),\n"
"final_f, x, staleness_mean (commits after the first N), staleness_max, momentum_slope\n"
"(sum <d_{t+1},d_t> / sum <d_t,d_t> of this run after a 10%% burn-in: the trajectory's lag-1\n"
"slope, which on these exact gradients tracks the slow decay, not 1-1/N), momentum_expected\n"
"(1 - 1/N), converged (final_f < 1e-6), diverged (f became non-finite; the run stops there);\n"
"with --ensemble: ensemble, momentum_fit, momentum_fit_beta, beta_expected (-lr/N),\n"
"ensemble_diverged.\n"
"\n"
"exit status: 0 ok, 2 bad flags\n", TOY_MAX_WORKERS);
}

int cmd_toy(int argc, char **argv) {
  toy_cfg_t c;
  toy_defaults(&c);
  long ensemble = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *eq = strchr(a, '='), *val;
    char flag[64];
    if (eq) {
      size_t l = (size_t)(eq - a);
      if (l >= sizeof flag) die_usage("unknown flag '%s' (pdl toy --help)", a);
      memcpy(flag, a, l); flag[l] = 0; val = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", a);
      val = i + 1 < argc ? argv[i + 1] : NULL;
    }
    int v;
    if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) { usage(stdout); return 0; }
    else if (!strcmp(flag, "--fn")) {
      if ((v = toy_fn_parse(val)) < 0) die_usage("--fn: '%s' is not booth or quadratic", val ? val : "");
      c.fn = (toy_fn)v;
    }
    else if (!strcmp(flag, "--rule")) {
      if ((v = toy_rule_parse(val)) < 0) die_usage("--rule: '%s' is not downpour, agn, dynsgd, adag or easgd", val ? val : "");
      c.rule = (toy_rule)v;
    }
    else if (!strcmp(flag, "--order")) {
      if ((v = toy_order_parse(val)) < 0) die_usage("--order: '%s' is not round-robin or random", val ? val : "");
      c.order = (toy_order)v;
    }
    else if (!strcmp(flag, "--workers")) c.workers = (int)parse_long("--workers", val, 1, TOY_MAX_WORKERS);
    else if (!strcmp(flag, "--lambda")) c.lambda = (int)parse_long("--lambda", val, 1, 1000000);
    else if (!strcmp(flag, "--lr")) c.lr = parse_double("--lr", val, 0.0, 100.0);
    else if (!strcmp(flag, "--gamma")) c.gamma = parse_double("--gamma", val, 0.0, 1e6);
    else if (!strcmp(flag, "--alpha")) c.alpha = parse_double("--alpha", val, 0.0, 2.0);
    else if (!strcmp(flag, "--commits")) c.commits = parse_long("--commits", val, 1, 1000000000);
    else if (!strcmp(flag, "--seed")) c.seed = (uint64_t)parse_long("--seed", val, 0, 1L << 62);
    else if (!strcmp(flag, "--ensemble")) ensemble = parse_long("--ensemble", val, 2, 100000);
    else die_usage("unknown flag '%s' (pdl toy --help)", a);
    if (!eq) i++;
  }
  if (c.lr <= 0) die_usage("--lr: must be > 0");
  if (c.gamma <= 0) die_usage("--gamma: must be > 0");
  if (ensemble % 2) die_usage("--ensemble: %ld is odd (the runs are split into two halves)", ensemble);
  if (ensemble && c.order != TOY_RANDOM) die_usage("--ensemble needs --order random (round-robin runs are all identical)");
  if (ensemble && (double)ensemble * (double)c.commits > 2e9) die_usage("--ensemble: %ld runs of %ld commits is more than 2e9 events", ensemble, c.commits);
  if (ensemble && c.commits > 50000000) die_usage("--ensemble: --commits %ld is more than 5e7 (the mean trajectories are kept)", c.commits);

  toy_result_t r;
  toy_run(&c, &r);
  json_t j;
  json_begin(&j);
  json_str(&j, "fn", toy_fn_name(c.fn));
  json_str(&j, "rule", toy_rule_name(c.rule));
  json_int(&j, "workers", c.workers);
  json_int(&j, "lambda", c.lambda);
  json_num(&j, "lr", c.lr);
  json_num(&j, "gamma", c.gamma);
  json_num(&j, "alpha", c.alpha);
  json_str(&j, "order", toy_order_name(c.order));
  json_int(&j, "seed", (long long)c.seed);
  json_int(&j, "commits", r.commits);
  json_num(&j, "final_f", r.f);
  json_num_array(&j, "x", r.x, TOY_DIM, 17);
  json_num(&j, "staleness_mean", r.staleness_mean);
  json_int(&j, "staleness_max", r.staleness_max);
  json_num(&j, "momentum_slope", r.momentum_slope);
  json_num(&j, "momentum_expected", 1.0 - 1.0 / c.workers);
  json_bool(&j, "converged", !r.diverged && r.f < 1e-6);
  json_bool(&j, "diverged", r.diverged);
  if (ensemble) {
    toy_momentum_t m;
    toy_momentum_ensemble(&c, (int)ensemble, &m);
    json_int(&j, "ensemble", ensemble);
    json_num(&j, "momentum_fit", m.mu);
    json_num(&j, "momentum_fit_beta", m.beta);
    json_num(&j, "beta_expected", -c.lr / c.workers);
    json_int(&j, "ensemble_diverged", m.diverged);
  }
  printf("%s\n", json_end(&j));
  return 0;
}
