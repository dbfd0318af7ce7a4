/* train.c — `pdl train`: parses flags and hands the run to its algorithm (src/algo: the node loop
 * runs every one, the sequential optimizers as one-node algorithms). The help text's algorithm
 * list comes from the algorithm table (src/algo/algos.def). */
#include <string.h>
#include "algo/algo.h"
#include "coll/coll.h"
#include "core/run.h"

int cmd_train(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { train_usage(stdout); algo_usage(stdout); return 0; }
  train_cfg_t c; train_cfg_defaults(&c);
  train_cfg_algo(&c, argc, argv);   /* the algorithm first: its table says which flags it reads */
  const algo_t *A = algo_find(c.algo);
  if (!A) algo_train(&c);   /* exits 2 with the list of algorithms */
  train_cfg_parse(&c, argc, argv, A->opts, algo_refuse_flag);
  if (!coll_lib_find(c.coll))   /* the collective libraries: the one list, src/coll/colls.def */
    die_usage("train: --coll: '%s' is not %s (pdl coll --help)", c.coll, coll_lib_names(" or "));
  const int one = A->shape == ALGO_ONE_NODE;
  if (!kernels_device_is_host(&c.device)) {   /* the node programs that train on a device say so (algo_t.device) */
    const char *dv = c.device.backend;
    if (!A->device) {
      char list[1024] = "";   /* the descriptors that do, in --help order */
      int m = 0, i = 0;
      for (int a = 0; a < algo_count; a++) m += algo_table[a]->device;
      for (int a = 0; a < algo_count; a++)
        if (algo_table[a]->device)
          snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i++ ? (i == m ? " and " : ", ") : "",
                   algo_table[a]->name);
      die_usage("train: --device %s trains %s, not '%s': its node program runs on the CPU (drop --device)", dv, list,
                c.algo);
    }
    if (strcmp(c.runtime, "real"))
      die_usage("train: --device %s: --algo %s trains on GPUs on --runtime real only (the sim runtime charges modelled "
                "devices)", dv, c.algo);
    if (c.device.index >= 0 && strcmp(c.coll, "mpi"))
      die_usage("train: --device %s:%d: --coll %s sets each rank up on its own GPU (its local rank modulo the host's "
                "GPUs): say --device %s, or --coll mpi", dv, c.device.index, c.coll, dv);
    if (c.grad_threads != 1)
      die_usage("train: --device %s: --algo %s runs one gradient role per rank on its GPU: --grad-threads 1 (not %d)",
                dv, c.algo, c.grad_threads);
  }
  if (kernels_device_timing(&c.device)) {   /* --device phantom: the sim runtime's timing-only backend (issue 47) */
    const char *dv = c.device.backend;
    if (strcmp(c.runtime, "sim"))
      die_usage("train: --device %s computes nothing: it charges the sim runtime's clock; add --runtime sim --platform ...",
                dv);
    if (c.checkpoint[0]) die_usage("train: --device %s: --checkpoint: a timing-only run has no state to save", dv);
    if (c.target_err > 0) die_usage("train: --device %s: --target-err: a timing-only run has no test error", dv);
    if (c.probe > 0) die_usage("train: --device %s: --probe measures parameters: a timing-only run has none", dv);
  } else if (!strncmp(c.data, "shape:", 6))
    die_usage("train: --data %s has no pixels: it is for --device phantom (timing only)", c.data);
  if (strcmp(c.coll, "mpi") && one)
    die_usage("train: --coll %s: --algo %s is sequential and makes no collective calls; --coll is for the distributed "
              "algorithms", c.coll, c.algo);
  if (strcmp(c.coll, "mpi") && strcmp(c.runtime, "real"))
    die_usage("train: --coll %s: --runtime %s models its own collectives (a ring over the platform's links); --coll "
              "chooses the real runtime's (drop --coll, or use --runtime real)", c.coll, c.runtime);
  return algo_train(&c);
}
