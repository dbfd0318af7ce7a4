/* main.c — the `pdl` command: dispatches to sub-commands. Each sub-command lives in its own
 * file in src/cli and is declared weak here, so a part that is not built reports itself
 * instead of breaking the link. */
#include <stdio.h>
#include <string.h>
#include "util/util.h"
#include "util/env.h"

typedef int (*cmd_fn)(int argc, char **argv);
#define WEAK __attribute__((weak))
WEAK int cmd_train(int argc, char **argv);
WEAK int cmd_speed(int argc, char **argv);
WEAK int cmd_nets(int argc, char **argv);
WEAK int cmd_calibrate(int argc, char **argv);
WEAK int cmd_stability(int argc, char **argv);
WEAK int cmd_coll(int argc, char **argv);
WEAK int cmd_toy(int argc, char **argv);
WEAK int cmd_inverse(int argc, char **argv);

static const struct { const char *name; cmd_fn fn; const char *help; } cmds[] = {
  {"train", cmd_train, "train a net (sequential or distributed: --algo, --runtime real|sim)"},
  {"speed", cmd_speed, "training-step throughput of a net vs OpenBLAS sgemm"},
  {"nets", cmd_nets, "list net presets with parameter counts and FLOPs/image"},
  {"calibrate", cmd_calibrate, "measure this machine's compute rate for the sim runtime"},
  {"stability", cmd_stability, "EASGD/ADMM round-robin stability maps (EASGD paper Sec. 4)"},
  {"coll", cmd_coll, "MPI/NCCL collective benchmark (OSU/nccl-tests style)"},
  {"toy", cmd_toy, "async PS workers on Booth/a quadratic (Hermans: staleness, momentum)"},
  {"inverse", cmd_inverse, "SPD inversion speed: double LAPACKE reference vs the fast CPU path, cuSOLVER"},
};
#define NCMDS (int)(sizeof cmds / sizeof cmds[0])

static void usage(FILE *f) {
  fprintf(f, "usage: pdl <command> [options]   (pdl <command> --help)\n\ncommands:\n");
  for (int i = 0; i < NCMDS; i++)
    if (cmds[i].fn) fprintf(f, "  %-14s %s\n", cmds[i].name, cmds[i].help);
  fprintf(f, "\npdl --help-env lists the environment variables pdl reads, with their bounds\n");
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--help-env")) { env_help(stdout); return 0; }
  env_check_all();   /* a bad environment variable exits 2 naming it, before any work */
  if (argc < 2) { usage(stderr); return PDL_EXIT_USAGE; }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) { usage(stdout); return 0; }
  for (int i = 0; i < NCMDS; i++) {
    if (strcmp(argv[1], cmds[i].name)) continue;
    if (!cmds[i].fn) die("'%s' is not part of this build", argv[1]);
    return cmds[i].fn(argc - 1, argv + 1);
  }
  fprintf(stderr, "pdl: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return PDL_EXIT_USAGE;
}
