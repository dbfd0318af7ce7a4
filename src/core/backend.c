/* backend.c — the backend registry (contract/kernels.h): the one place outside the tests and the
 * NCCL collective backend that names a kernel backend. --device is parsed here once into a
 * device_spec_t; everything that trains, evaluates or steps an optimizer asks for a table by it.
 * A new backend is one row of `backends` (and its own folder under kernels/). */
#include "core/model.h"
#include "kernels/cpu/cpu_layers.h"
#include "kernels/phantom/phantom.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#ifdef PDL_HAVE_CUDA
#include "kernels/cuda/cuda_table.h"
#endif

typedef struct {
  const char *name;     /* --device NAME[:N] */
  const char *form;     /* its accepted forms, for the help and the errors */
  const char *label;    /* its devices in messages ("no CUDA device") */
  int host;             /* workspace memory is host memory and there are no devices to choose */
  int suffix;           /* 1: NAME:TEXT (a non-numeric suffix) is the backend's own */
  /* NULL where this build lacks the backend (the name still parses; opening it dies) */
  const kernels_t *(*open)(int index, const char *suffix, const char *flag, char *desc, size_t len);
  int (*devices)(char *why, size_t len);
  void (*fail_handler)(void (*handler)(const char *msg));
  const char *missing;  /* why this build lacks it */
  int timing;           /* a timing-only backend (kernels_t.charged): opened only by a sim run (kernels_timing_on) */
} backend_t;

static const kernels_t *timing_default;   /* kernels_timing_on's: what kernels_for(NULL) hands out */

static const kernels_t *cpu_open(int index, const char *suffix, const char *flag, char *desc, size_t len) {
  (void)index; (void)suffix; (void)flag;
  if (desc && len) snprintf(desc, len, "cpu");
  return &kernels_cpu;
}
#ifdef PDL_HAVE_CUDA
static const kernels_t *cuda_open(int index, const char *suffix, const char *flag, char *desc, size_t len) {
  (void)suffix;
  char d[256], f[64];
  snprintf(f, sizeof f, "%s cuda:%d", flag, index);
  return cuda_kernels_on(index, f, desc && len ? desc : d, desc && len ? len : sizeof d);
}
#endif

static const kernels_t *phantom_open(int index, const char *suffix, const char *flag, char *desc, size_t len) {
  (void)index; (void)suffix;
  if (!timing_default)
    die_usage("%s phantom: the timing-only backend computes nothing; it runs under pdl train --runtime sim only", flag);
  if (desc && len) snprintf(desc, len, "phantom: timing only, each layer's counted flops at the platform's device rate");
  return &kernels_phantom;
}

static const backend_t backends[] = {
  {"cpu", "cpu", "CPU", 1, 0, cpu_open, NULL, NULL, NULL, 0},
#ifdef PDL_HAVE_CUDA
  {"cuda", "cuda[:N]", "CUDA", 0, 0, cuda_open, cuda_kernels_devices, cuda_kernels_fail_handler, NULL, 0},
#else
  {"cuda", "cuda[:N]", "CUDA", 0, 0, NULL, NULL, NULL, "this pdl was built without CUDA (no nvcc when it was built)", 0},
#endif
  {"phantom", "phantom", "phantom", 1, 0, phantom_open, NULL, NULL, NULL, 1},
};
enum { NBACKENDS = (int)(sizeof backends / sizeof backends[0]) };

static const backend_t *find(const char *name) {
  for (int i = 0; i < NBACKENDS; i++) if (!strcmp(backends[i].name, name)) return &backends[i];
  return NULL;
}
static const backend_t *must_find(const device_spec_t *d) {
  const backend_t *b = find(d && d->backend[0] ? d->backend : "cpu");
  if (!b) die("internal: device backend '%s' is not in the registry", d->backend);
  return b;
}

const char *kernels_device_forms(void) {
  static char forms[256];
  if (!forms[0])
    for (int i = 0; i < NBACKENDS; i++)
      snprintf(forms + strlen(forms), sizeof forms - strlen(forms), "%s%s", i ? " | " : "", backends[i].form);
  return forms;
}

int kernels_device_parse(device_spec_t *d, const char *v, char *why, size_t len) {
  memset(d, 0, sizeof *d);
  d->index = -1;
  if (!v || !*v) v = "cpu";
  const char *colon = strchr(v, ':');
  const size_t nl = colon ? (size_t)(colon - v) : strlen(v);
  const backend_t *b = NULL;
  for (int i = 0; i < NBACKENDS && !b; i++)
    if (strlen(backends[i].name) == nl && !strncmp(backends[i].name, v, nl)) b = &backends[i];
  if (!b) { snprintf(why, len, "must be %s, not '%s'", kernels_device_forms(), v); return -1; }
  snprintf(d->backend, sizeof d->backend, "%s", b->name);
  if (!colon) return 0;
  const char *t = colon + 1;
  char *end = NULL;
  const long n = *t >= '0' && *t <= '9' ? strtol(t, &end, 10) : -1;
  if (!b->host && end && !*end && n >= 0 && n <= 63) { d->index = (int)n; return 0; }
  if (b->suffix && *t && !(*t >= '0' && *t <= '9') && strlen(t) < sizeof d->suffix) {
    snprintf(d->suffix, sizeof d->suffix, "%s", t);
    return 0;
  }
  if (b->host) snprintf(why, len, "'%s': %s takes no index (%s)", v, b->name, kernels_device_forms());
  else snprintf(why, len, "'%s': %s takes %s (N an index 0..63)", v, b->name, b->form);
  return -1;
}

int kernels_device_is_host(const device_spec_t *d) { return must_find(d)->host; }

int kernels_device_index(const device_spec_t *d, int local_rank, const char *flag) {
  const backend_t *b = must_find(d);
  if (b->host) return -1;
  if (!b->open) die("%s %s: %s", flag, b->name, b->missing);
  char why[256] = "";
  const int nd = b->devices ? b->devices(why, sizeof why) : 0;
  if (nd <= 0)   /* usage: exit 2, as --coll nccl without a device (issue 46) */
    die_usage("%s %s: no %s device found (%s)", flag, b->name, b->label, why);
  if (d->index >= 0) {
    if (d->index >= nd) die("%s %s:%d: this machine has %d %s device(s) (0..%d)", flag, b->name, d->index, nd, b->label, nd - 1);
    return d->index;
  }
  return (local_rank > 0 ? local_rank : 0) % nd;
}

int kernels_device_timing(const device_spec_t *d) { return must_find(d)->timing; }

const kernels_t *kernels_timing_on(const device_spec_t *d, const char *flag) {
  const backend_t *b = must_find(d);
  if (!b->timing) die("internal: kernels_timing_on: %s is not a timing-only backend", b->name);
  static const kernels_t dummy;   /* lets the backend's open through */
  if (!timing_default) timing_default = &dummy;
  char desc[512];
  timing_default = b->open(-1, d->suffix, flag ? flag : "--device", desc, sizeof desc);
  return timing_default;
}

const kernels_t *kernels_for(const device_spec_t *d, int index, const char *flag, char *desc, size_t len) {
  if (!d && timing_default) return timing_default;   /* a timing-only run: nothing computes */
  const backend_t *b = must_find(d);
  if (!flag) flag = "--device";
  if (!b->open) {
    char nm[32];
    snprintf(nm, sizeof nm, index >= 0 ? "%s:%d" : "%s", b->name, index);
    die("%s %s: %s", flag, nm, b->missing);
  }
  return b->open(index, d ? d->suffix : "", flag, desc, len);
}

int kernels_devices(const char *name, char *why, size_t len) {
  const backend_t *b = find(name);
  if (why && len) why[0] = 0;
  if (!b || b->host) return 0;
  if (!b->open || !b->devices) { if (why && len) snprintf(why, len, "%s", b->missing ? b->missing : "no devices"); return 0; }
  char w[256] = "";
  const int n = b->devices(w, sizeof w);
  if (why && len) snprintf(why, len, "%s", w);
  return n;
}

void kernels_set_fail_handler(void (*handler)(const char *msg)) {
  for (int i = 0; i < NBACKENDS; i++) if (backends[i].open && backends[i].fail_handler) backends[i].fail_handler(handler);
}
