/* dist.h — entry point of the distributed algorithms (one file each in src/dist). */
#ifndef PDL_DIST_H
#define PDL_DIST_H
#include "core/run.h"
/* Runs the distributed --algo of c on --runtime real|sim; returns the process exit status. */
int dist_train(const train_cfg_t *c);
#endif
