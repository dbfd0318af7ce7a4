/* pdlsim.h — the entry points libpdlsim.so exports (plain C, no MPI, no SimGrid types), called
 * by the loader src/rt/rt_sim_loader.c through dlsym. The loader checks pdl_sim_abi() against
 * PDL_SIM_ABI so a stale .so from an older build is refused instead of misbehaving.
 * Errors: functions return 0 on success, PDL_SIM_EBADSPEC for a bad platform spec (the caller
 * exits 2) and PDL_SIM_EFAIL for anything else (file, SimGrid, deadlock), with a one-line
 * reason written to err (always NUL-terminated). Nothing is printed by these functions except
 * SimGrid's own warnings and criticals (e.g. its deadlock report). */
#ifndef PDL_SIM_API_H
#define PDL_SIM_API_H
#include <stddef.h>
#include "rt/rt.h"

#define PDL_SIM_ABI 2   /* 2: rt_sim_cfg_t.timing_only */
#define PDL_SIM_EBADSPEC 2
#define PDL_SIM_EFAIL 1

int pdl_sim_abi(void);
/* Nodes and devices per node a spec describes; nnodes_hint > 0 fills in an unstated node count
 * and must agree with a stated one. */
int pdl_sim_platform_shape(const char *spec, int nnodes_hint, int *nnodes, int *ndevices,
                           char *err, size_t errlen);
/* Writes the SimGrid XML a generated spec stands for to path (to edit and reuse as file:PATH);
 * device_gflops as in rt_sim_cfg_t. desc (may be NULL) gets the one-line description. */
int pdl_sim_platform_xml(const char *spec, int nnodes_hint, double device_gflops, const char *path,
                         char *desc, size_t desclen, char *err, size_t errlen);
/* Runs node_main once per node as SimGrid actors; see rt.h and docs/SIM.md. */
int pdl_sim_run(rt_sim_cfg_t *cfg, int nnodes_hint, rt_fn node_main, void *arg, char *err,
                size_t errlen);

typedef int (*pdl_sim_abi_fn)(void);
typedef int (*pdl_sim_platform_shape_fn)(const char *, int, int *, int *, char *, size_t);
typedef int (*pdl_sim_platform_xml_fn)(const char *, int, double, const char *, char *, size_t,
                                       char *, size_t);
typedef int (*pdl_sim_run_fn)(rt_sim_cfg_t *, int, rt_fn, void *, char *, size_t);
#endif
