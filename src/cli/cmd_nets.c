/* nets.c — `pdl nets`: the presets with parameter counts and FLOPs per image. */
#include <stdio.h>
#include <string.h>
#include "core/model.h"
#include "util/util.h"

int cmd_nets(int argc, char **argv) {
  int c = 1, h = 28, w = 28;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: pdl nets [--input CxHxW]\n  lists the net presets for inputs of CxHxW (default 1x28x28, Fashion-MNIST;\n"
             "  3x32x32 for CIFAR-10) with parameter counts and forward / training MFLOPs per image.\n");
      return 0;
    } else if (!strcmp(argv[i], "--input") && i + 1 < argc) {
      if (sscanf(argv[++i], "%dx%dx%d", &c, &h, &w) != 3 || c < 1 || h < 1 || w < 1)
        die_usage("nets: --input wants CxHxW, e.g. 3x32x32, not '%s'", argv[i]);
    } else die_usage("nets: unknown flag '%s' (pdl nets --help)", argv[i]);
  }
  printf("%-20s %10s %12s %12s  %s\n", "preset", "params", "fwd MFLOP", "train MFLOP", "spec / note");
  for (int i = 0; i < net_npresets; i++) {
    net_t n; net_build(&n, net_presets[i].name, c, h, w);
    printf("%-20s %10zu %12.2f %12.2f  %s\n%-20s %10s %12s %12s    %s\n", n.name, n.nparams, n.flops_fwd / 1e6,
           n.flops_train / 1e6, n.spec, "", "", "", "", net_presets[i].note);
  }
  return 0;
}
