/* train.c — `pdl train`: parses flags and hands the run to its algorithm (src/algo: the node loop
 * runs every one, the sequential optimizers as one-node algorithms). The help text's algorithm
 * list comes from the algorithm table (src/algo/algos.def). */
#include <string.h>
#include "algo/algo.h"
#include "core/run.h"

int cmd_train(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { train_usage(stdout); algo_usage(stdout); return 0; }
  train_cfg_t c; train_cfg_defaults(&c);
  train_cfg_algo(&c, argc, argv);   /* the algorithm first: its table says which flags it reads */
  const algo_t *A = algo_find(c.algo);
  if (!A) algo_train(&c);   /* exits 2 with the list of algorithms */
  train_cfg_parse(&c, argc, argv, A->opts, algo_refuse_flag);
  const int one = A->shape == ALGO_ONE_NODE;
  if (c.cuda_device >= 0) {   /* the node programs that train on a device say so (algo_t.device) */
    if (!A->device)
      die_usage("train: --device cuda trains the sequential optimizers (--algo sgd, msgd, nag, adam, asgd, mvasgd), "
                "ssgd, kfac and kfac-dist, not '%s': its node program runs on the CPU (drop --device)", c.algo);
    if (strcmp(c.runtime, "real"))
      die_usage("train: --device cuda: --algo %s trains on GPUs on --runtime real only (the sim runtime charges modelled "
                "devices)", c.algo);
    if (c.cuda_device > 0 && !one)
      die_usage("train: --device cuda:%d: a distributed run puts each rank on its own GPU (NCCL's, or the rank's index on "
                "its host modulo the GPUs): say --device cuda", c.cuda_device);
    if (c.grad_threads != 1)
      die_usage("train: --device cuda: --algo %s runs one gradient role per rank on its GPU: --grad-threads 1 (not %d)",
                c.algo, c.grad_threads);
  }
  if (strcmp(c.coll, "mpi") && one)
    die_usage("train: --coll %s: --algo %s is sequential and makes no collective calls; --coll is for the distributed "
              "algorithms", c.coll, c.algo);
  if (strcmp(c.coll, "mpi") && strcmp(c.runtime, "real"))
    die_usage("train: --coll %s: --runtime %s models its own collectives (a ring over the platform's links); --coll "
              "chooses the real runtime's (drop --coll, or use --runtime real)", c.coll, c.runtime);
  return algo_train(&c);
}
