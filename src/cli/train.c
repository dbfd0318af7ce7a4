/* train.c — `pdl train`: parses flags, sets up the run and hands it to the sequential trainer
 * or to a distributed algorithm (src/dist). */
#include <string.h>
#include "core/run.h"
#include "dist/dist.h"

int cmd_train(int argc, char **argv) {
  train_cfg_t c; train_cfg_defaults(&c);
  train_cfg_parse(&c, argc, argv);
  opt_kind_t k;
  if (optim_parse(c.algo, &k) == 0) {
    if (strcmp(c.runtime, "real")) die_usage("train: --algo %s is sequential; --runtime sim needs a distributed algo", c.algo);
    run_t r; run_setup(&r, &c, c.batch);
    int rc = train_sequential(&r);
    run_free(&r);
    return rc;
  }
  return dist_train(&c);
}
