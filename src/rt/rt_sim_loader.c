/* rt_sim_loader.c — the MPI binary's side of the sim runtime: finds libpdlsim.so, dlopen()s it
 * RTLD_NOW | RTLD_LOCAL (libsimgrid exports the MPI API, so it must never join this process's
 * global symbol scope) and forwards rt_sim_run / rt_sim_platform_shape / rt_sim_platform_xml
 * to its pdl_sim_* entry points (src/rt/pdlsim.h).
 * Search order: $PDL_SIMLIB; <exe dir>/libpdlsim.so (build-tsan/pdl); <exe dir>/../build/libpdlsim.so
 * (bin/pdl); <exe dir>/../libpdlsim.so (build/tests/test_*). The handle is kept for the process's life
 * (SimGrid cannot be unloaded). */
#include "rt/rt.h"
#include "rt/pdlsim.h"
#include "util/util.h"
#include "util/env.h"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAND_MAX 1024   /* longer library paths are refused (snprintf bounds below) */

static struct {
  void *h;
  char path[CAND_MAX];
  pdl_sim_run_fn run;
  pdl_sim_platform_shape_fn shape;
  pdl_sim_platform_xml_fn xml;
} L;

static const char NOT_BUILT[] =
    "SimGrid support was not built (no libpdlsim.so). Install it with `apt-get install libsimgrid-dev` "
    "(or `make deps`), then run `make` to build build/libpdlsim.so, or point PDL_SIMLIB at an existing "
    "libpdlsim.so";

/* Tries the candidates; 0 and the reason in why when none loads. */
static int sim_load(char *why, size_t n) {
  if (L.h) return 1;
  char cand[4][CAND_MAX]; int nc = 0;
  const char *env = env_get("PDL_SIMLIB");
  if (env && *env) snprintf(cand[nc++], CAND_MAX, "%.1000s", env);
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) {
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(cand[nc++], CAND_MAX, "%.900s/libpdlsim.so", exe);   /* build-tsan/pdl next to its own .so */
    snprintf(cand[nc++], CAND_MAX, "%.900s/../build/libpdlsim.so", exe);
    snprintf(cand[nc++], CAND_MAX, "%.900s/../libpdlsim.so", exe);
  }
  char tried[2048] = ""; size_t tl = 0;
  for (int i = 0; i < nc; i++) {
    if (access(cand[i], F_OK) != 0) {
      if (env && *env && i == 0) {   /* an explicit PDL_SIMLIB is the only candidate: say that file is missing */
        snprintf(why, n, "PDL_SIMLIB=%.1000s: %s; unset PDL_SIMLIB to use the libpdlsim.so built beside pdl", cand[i], strerror(errno));
        return 0;
      }
      if (tl < sizeof tried)
        tl += (size_t)snprintf(tried + tl, sizeof tried - tl, "%s%.1000s (absent)", tl ? "; " : "", cand[i]);
      continue;
    }
    void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      snprintf(why, n, "%.1000s could not be loaded: %.1000s", cand[i], dlerror());
      return 0;
    }
    pdl_sim_abi_fn abi = (pdl_sim_abi_fn)dlsym(h, "pdl_sim_abi");
    L.run = (pdl_sim_run_fn)dlsym(h, "pdl_sim_run");
    L.shape = (pdl_sim_platform_shape_fn)dlsym(h, "pdl_sim_platform_shape");
    L.xml = (pdl_sim_platform_xml_fn)dlsym(h, "pdl_sim_platform_xml");
    if (!abi || !L.run || !L.shape || !L.xml || abi() != PDL_SIM_ABI) {
      snprintf(why, n, "%.1000s is stale or not a pdlbench sim runtime (ABI %d wanted); rebuild it with `make`",
               cand[i], PDL_SIM_ABI);
      dlclose(h);
      return 0;
    }
    L.h = h;
    memcpy(L.path, cand[i], CAND_MAX);
    return 1;
  }
  snprintf(why, n, "%s; tried %.2000s", NOT_BUILT, tried);
  return 0;
}

static void sim_need(void) {
  char why[3072];
  if (!sim_load(why, sizeof why)) die("%s", why);
}

int rt_sim_available(char *why, size_t n) {
  char buf[3072];
  int ok = sim_load(buf, sizeof buf);
  if (!ok && why && n) snprintf(why, n, "%s", buf);
  return ok;
}

const char *rt_sim_library(void) { return L.h ? L.path : NULL; }

int rt_sim_platform_shape(const char *platform, int *nnodes, int *ndevices) {
  sim_need();
  char err[512];
  int rc = L.shape(platform, 0, nnodes, ndevices, err, sizeof err);
  if (rc) fprintf(stderr, "pdl: sim platform '%s': %s\n", platform ? platform : "", err);
  return rc;
}

int rt_sim_platform_xml(const char *platform, double device_gflops, const char *path, char *desc, size_t desclen) {
  sim_need();
  char err[512];
  int rc = L.xml(platform, 0, device_gflops, path, desc, desclen, err, sizeof err);
  if (rc) fprintf(stderr, "pdl: sim platform '%s': %s\n", platform ? platform : "", err);
  return rc;
}

int rt_sim_run(rt_sim_cfg_t *cfg, int nnodes_hint, rt_fn node_main, void *arg) {
  sim_need();
  char err[1024];
  fflush(stdout);
  int rc = L.run(cfg, nnodes_hint, node_main, arg, err, sizeof err);
  if (rc == PDL_SIM_EBADSPEC)
    fprintf(stderr, "pdl: sim platform '%s': %s\n", cfg->platform ? cfg->platform : "", err);
  else if (rc)
    fprintf(stderr, "pdl: error: sim runtime: %s\n", err);
  return rc;
}
