/* rt_sim_loader.c — placeholder until the SimGrid runtime lands: says the sim runtime is not
 * part of this build. */
#include "dist/rt.h"
#include "util/util.h"
int rt_sim_run(rt_sim_cfg_t *cfg, int n, rt_fn f, void *a) {
  (void)cfg; (void)n; (void)f; (void)a;
  die("the sim runtime (SimGrid) is not part of this build");
}
int rt_sim_platform_shape(const char *p, int *n, int *g) { (void)p; (void)n; (void)g; return 1; }
