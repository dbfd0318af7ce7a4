/* env.c — the table of every environment variable pdl reads (see env.h): each row gives the
 * variable's type, its bounds or choices, its default and what it is for. A value outside the row
 * exits 2 naming the variable, before any work (env_check_all from main) and again at the read
 * (env_get), so a call site only ever sees a value its row allows. For every value a row allows,
 * the call site behaves as it did when it read the variable with getenv itself.
 * Self-contained (libc only, no die()): libpdlsim.so links its own copy. */
#include "util/env.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum {
  ENV_FLAG,     /* "0" or "1"; empty = the default */
  ENV_SET,      /* set (any value, empty too) = on */
  ENV_INT,      /* a decimal integer in [lo, hi]; empty = the default */
  ENV_CHOICE,   /* one of `choices` (|-separated); empty = the default */
  ENV_PATH,     /* a path (or one of `choices`, when given); empty = the default */
  ENV_OUTPATH,  /* a path to write; empty refused */
  ENV_TEXT,     /* printable ASCII, at most hi characters */
  ENV_XBT,      /* a SimGrid log control string (env_check_xbt_log) */
  ENV_RANKELEM, /* RANK:ELEMENT, two integers >= 0 */
  ENV_EXTERNAL, /* someone else's (the shell, CUDA, libxsmm): listed, read as is */
} env_kind_t;

typedef struct {
  const char *name;
  env_kind_t kind;
  long lo, hi;
  const char *choices;
  const char *dflt;
  const char *what;
} env_row_t;

#define TABLE_END {NULL, ENV_EXTERNAL, 0, 0, NULL, NULL, NULL}
static const env_row_t ROWS[] = {
  /* ---- kernels ---- */
  {"PDL_CONV", ENV_CHOICE, 0, 0, "auto|im2col|winograd|winograd4", "auto",
   "the CPU convolution algorithm (kernels/cpu/cpu_mode.c); auto picks per shape"},
  {"PDL_SMM", ENV_CHOICE, 0, 0, "auto|libxsmm|openblas", "auto",
   "the small GEMMs of the Winograd convolutions (kernels/cpu/cpu_smm.c); auto = libxsmm where built"},
  {"PDL_CUDA_CONV", ENV_CHOICE, 0, 0, "auto|cudnn|im2col", "auto",
   "the GPU convolutions (kernels/cuda/cuda_table.c); cudnn needs a build with cuDNN"},
  {"PDL_CUDA_SYNC", ENV_FLAG, 0, 1, NULL, "0",
   "1: synchronise after every CUDA kernel launch, so an error names its launch (debugging)"},
  {"PDL_EMU_FREE_MIB", ENV_INT, 0, 1L << 20, NULL, "1024",
   "the free memory the emulated CUDA device reports, MiB (build/cuda-emu/pdl only; tests)"},
  /* ---- training ---- */
  {"PDL_TRAIN_RESIDENT", ENV_FLAG, 0, 1, NULL, "the device's choice",
   "1: the training data resident on the device and steps chunked; 0: batches uploaded from the host each step"},
  {"PDL_TRAIN_GRAPH", ENV_FLAG, 0, 1, NULL, "1",
   "0: no CUDA graph replay of a chunk of resident steps (src/core/train_state.c)"},
  {"PDL_KFAC_DEV", ENV_FLAG, 0, 1, NULL, "0",
   "1: K-FAC's factors and inversions on the device backend's path even on the CPU (src/algo/kfac_dist.c; tests)"},
  {"PDL_PP_PHASES", ENV_FLAG, 0, 1, NULL, "0",
   "1: PP-ASGD writes its per-phase timing (src/algo/ppasgd.c)"},
  {"PDL_SIM_OVERLAP", ENV_FLAG, 0, 1, NULL, "1",
   "0: the sim runtime computes the replicas' gradients one after another, not on helper threads (src/algo/replica.c)"},
  {"PDL_DUMP_PARAMS", ENV_OUTPATH, 0, 0, NULL, "none",
   "a file to which the final parameters are written as raw float32 (tests compare runs bit for bit)"},
  {"PDL_DATA_CACHE", ENV_PATH, 0, 0, "off|0", "$XDG_CACHE_HOME/pdlbench/data or ~/.cache/pdlbench/data",
   "the folder of decompressed data sets; off or 0: no cache (the .gz read every time)"},
  /* ---- test hooks: unset = off ---- */
  {"PDL_TEST_HANG_STEP", ENV_INT, 0, LONG_MAX, NULL, "off",
   "test hook: update N hangs until a signal (tests/t_train_cli.sh: the watchdog)"},
  {"PDL_TEST_SAVE_PAUSE_MS", ENV_INT, 1, 600000, NULL, "off",
   "test hook: a checkpoint save made after a stop signal waits N ms before each of its renames (tests/t_hostile.sh)"},
  {"PDL_COLL_TEST_HANG", ENV_INT, 0, 1L << 24, NULL, "off",
   "test hook of pdl coll: that rank hangs (tests/t_coll.sh: the watchdog)"},
  {"PDL_COLL_INJECT", ENV_RANKELEM, 0, 0, NULL, "off",
   "test hook of pdl coll: RANK:ELEMENT, that rank corrupts that element (its checks must fail)"},
  /* ---- the sim runtime (SimGrid) ---- */
  {"PDL_SIMLIB", ENV_PATH, 0, 0, NULL, "next to pdl: build/libpdlsim.so",
   "the sim runtime's shared library (src/rt/rt_sim_loader.c)"},
  {"PDL_SIM_LOG", ENV_XBT, 0, 0, NULL, "root.thresh:warning",
   "SimGrid's log control: space-separated CATEGORY.thresh:LEVEL, LEVEL one of trace, debug, verbose, info, "
   "warning, error, critical"},
  /* lower bound: vgg-small's ppasgd and gossip actors overflow 64 KiB (segfault) and run in 256; 4x that
   * margin. Upper: 1 GiB ran 64 actors (virtual memory, mapped lazily); 99999999999 aborts in SimGrid */
  {"PDL_SIM_STACK_KB", ENV_INT, 1024, 1L << 20, NULL, "8192",
   "KiB of stack for each simulated actor (SimGrid's contexts/stack-size)"},
  {"PDL_SIM_CONTEXTS", ENV_CHOICE, 0, 0, "thread|raw|ucontext|boost", "raw, SimGrid's",
   "SimGrid's context factory; thread runs each actor on an OS thread (ThreadSanitizer follows it)"},
  /* ---- output ---- */
  {"PDL_GIT_REV", ENV_TEXT, 0, 63, NULL, "the build's git revision",
   "the revision recorded in results lines (\"git\")"},
  {"PDL_NO_PROGRESS", ENV_SET, 0, 0, NULL, "a progress line on a terminal",
   "set (any value): no progress line on stderr"},
  /* ---- set by others ---- */
  {"OMPI_COMM_WORLD_LOCAL_SIZE", ENV_INT, 1, 1L << 20, NULL, "1",
   "set by Open MPI's mpirun: ranks on this node (the thread budget divides the cores among them)"},
  {"OMPI_COMM_WORLD_SIZE", ENV_INT, 1, 1L << 24, NULL, "1", "set by Open MPI's mpirun: ranks in the job"},
  {"PMI_SIZE", ENV_INT, 1, 1L << 24, NULL, "1", "set by a PMI launcher (srun, MPICH): ranks in the job"},
  {"OMPI_COMM_WORLD_LOCAL_RANK", ENV_INT, 0, 1L << 20, NULL, "0",
   "set by Open MPI's mpirun: this rank's index on its node (--device: local rank modulo the node's GPUs, without MPI)"},
  {"SLURM_LOCALID", ENV_INT, 0, 1L << 20, NULL, "0",
   "set by srun: this task's index on its node (--device: local rank modulo the node's GPUs, without MPI)"},
  {"HOME", ENV_EXTERNAL, 0, 0, NULL, NULL, "the data cache's default folder is under it"},
  {"XDG_CACHE_HOME", ENV_EXTERNAL, 0, 0, NULL, NULL, "the data cache's default folder is under it"},
  {"TMPDIR", ENV_EXTERNAL, 0, 0, NULL, "/tmp", "the sim runtime's temporary platform files"},
  {"LIBXSMM_TARGET", ENV_EXTERNAL, 0, 0, NULL, NULL, "libxsmm's own; pdl sets it on AVX2 machines unless given"},
  {"CUDA_VISIBLE_DEVICES", ENV_EXTERNAL, 0, 0, NULL, NULL, "CUDA's own; empty hides every GPU"},
  {"OMP_WAIT_POLICY", ENV_EXTERNAL, 0, 0, NULL, NULL, "OpenMP's own; pdl only reports it in the thread budget line"},
  TABLE_END,
};

static const env_row_t *row_of(const char *name) {
  for (const env_row_t *r = ROWS; r->name; r++)
    if (!strcmp(r->name, name)) return r;
  return NULL;
}

static void refuse(const env_row_t *r, const char *v, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void refuse(const env_row_t *r, const char *v, const char *fmt, ...) {
  char why[512];
  va_list ap; va_start(ap, fmt); vsnprintf(why, sizeof why, fmt, ap); va_end(ap);
  fflush(stdout);
  fprintf(stderr, "pdl: environment variable %s='%.200s': %s; unset it for the default (%s). `pdl --help-env` lists them\n",
          r->name, v, why, r->dflt ? r->dflt : "none");
  exit(2);
}

/* Is v one of the |-separated words of list? */
static int in_choices(const char *list, const char *v) {
  size_t n = strlen(v);
  for (const char *p = list; p && *p;) {
    const char *bar = strchr(p, '|');
    size_t l = bar ? (size_t)(bar - p) : strlen(p);
    if (l == n && !strncmp(p, v, n)) return 1;
    p = bar ? bar + 1 : NULL;
  }
  return 0;
}

static int parse_int(const char *v, long *out) {
  char *end; errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || *v == ' ' || *v == '\t' || *v == '+') return 0;
  *out = x;
  return 1;
}

int env_check_xbt_log(const char *value, char *why, size_t n) {
  static const char *levels[] = {"trace", "debug", "verbose", "info", "warning", "error", "critical"};
  const char *p = value;
  int settings = 0;
  while (*p) {
    if (*p == ' ') { p++; continue; }
    const char *end = strchr(p, ' ');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char tok[256];
    if (len >= sizeof tok) { snprintf(why, n, "a setting longer than %zu characters", sizeof tok - 1); return 1; }
    memcpy(tok, p, len); tok[len] = 0;
    p += len;
    char *colon = strchr(tok, ':');
    char *dot = colon ? memchr(tok, '.', (size_t)(colon - tok)) : NULL;
    if (!colon || !dot) { snprintf(why, n, "'%s' is not CATEGORY.thresh:LEVEL", tok); return 1; }
    for (char *c = tok; c < dot; c++)
      if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) {
        snprintf(why, n, "'%s': a category is letters, digits and _", tok); return 1;
      }
    if (dot == tok) { snprintf(why, n, "'%s' names no category", tok); return 1; }
    *colon = 0;
    if (strcmp(dot + 1, "thresh") && strcmp(dot + 1, "threshold")) {
      snprintf(why, n, "'%s:%s': pdl passes on thresholds only (CATEGORY.thresh:LEVEL)", tok, colon + 1); return 1;
    }
    int ok = 0;
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) ok |= !strcasecmp(colon + 1, levels[i]);
    if (!ok) { snprintf(why, n, "'%s' is not a level (trace, debug, verbose, info, warning, error, critical)", colon + 1); return 1; }
    settings++;
  }
  (void)settings;
  return 0;
}

static void check_row(const env_row_t *r, const char *v) {
  switch (r->kind) {
  case ENV_SET: case ENV_EXTERNAL: return;
  case ENV_FLAG:
    if (*v && strcmp(v, "0") && strcmp(v, "1")) refuse(r, v, "say 0 or 1");
    return;
  case ENV_INT: {
    long x;
    if (!*v) return;
    if (!parse_int(v, &x)) refuse(r, v, "not an integer");
    if (x < r->lo || x > r->hi) refuse(r, v, "out of range [%ld, %ld]", r->lo, r->hi);
    return;
  }
  case ENV_CHOICE:
    if (*v && !in_choices(r->choices, v)) refuse(r, v, "expected one of %s", r->choices);
    return;
  case ENV_PATH: case ENV_OUTPATH:
    if (r->kind == ENV_OUTPATH && !*v) refuse(r, v, "an empty path");
    if (strlen(v) > 1000) refuse(r, v, "a path longer than 1000 characters");
    return;
  case ENV_TEXT:
    if ((long)strlen(v) > r->hi) refuse(r, v, "longer than %ld characters", r->hi);
    for (const char *c = v; *c; c++)
      if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) refuse(r, v, "printable ASCII only");
    return;
  case ENV_XBT: {
    char why[400];
    if (*v && env_check_xbt_log(v, why, sizeof why)) refuse(r, v, "%s", why);
    return;
  }
  case ENV_RANKELEM: {
    int rank; long long e; char extra;
    if (*v && (sscanf(v, "%d:%lld%c", &rank, &e, &extra) != 2 || rank < 0 || e < 0)) refuse(r, v, "not RANK:ELEMENT");
    return;
  }
  }
}

const char *env_get(const char *name) {
  const env_row_t *r = row_of(name);
  if (!r) {
    fflush(stdout);
    fprintf(stderr, "pdl: error: internal: environment variable %s is read but not in base/util/env.c's table\n", name);
    exit(1);
  }
  const char *v = getenv(name);
  if (v) check_row(r, v);
  return v;
}

long env_long(const char *name, long dflt) {
  const env_row_t *r = row_of(name);
  const char *v = env_get(name);
  if (!r || r->kind != ENV_INT) {
    fprintf(stderr, "pdl: error: internal: env_long(%s) on a variable that is not an integer\n", name);
    exit(1);
  }
  long x;
  return v && *v && parse_int(v, &x) ? x : dflt;
}

void env_check_all(void) {
  for (const env_row_t *r = ROWS; r->name; r++) (void)env_get(r->name);
}

void env_help(FILE *f) {
  static const char *kinds[] = {"0 or 1", "set or unset", "integer", "one of", "path", "path to write", "text",
                                "SimGrid log control", "RANK:ELEMENT", "read as is"};
  fprintf(f, "Environment variables pdl reads (base/util/env.c). A value outside its bounds exits 2 naming the\n"
             "variable; an empty value means the default unless said otherwise.\n\n");
  for (const env_row_t *r = ROWS; r->name; r++) {
    fprintf(f, "  %-26s %s", r->name, kinds[r->kind]);
    if (r->kind == ENV_INT) fprintf(f, " in [%ld, %ld]", r->lo, r->hi);
    if (r->kind == ENV_TEXT) fprintf(f, ", at most %ld characters", r->hi);
    if (r->kind == ENV_CHOICE) fprintf(f, " %s", r->choices);
    if (r->kind == ENV_PATH && r->choices) fprintf(f, " (or %s)", r->choices);
    if (r->dflt) fprintf(f, "; default %s", r->dflt);
    fprintf(f, "\n      %s\n", r->what);
  }
}
