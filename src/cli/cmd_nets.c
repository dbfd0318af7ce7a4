/* nets.c — `pdl nets`: the presets with their input, parameter counts, FLOPs per image and sources. */
#include <stdio.h>
#include <string.h>
#include "core/model.h"
#include "util/util.h"

int cmd_nets(int argc, char **argv) {
  int c = 0, h = 0, w = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: pdl nets [--input CxHxW]\n  lists the net presets with parameter counts and forward / training MFLOPs per image,\n"
             "  each at the input it is laid out for (its paper's: 3x32x32 CIFAR, 3x224x224 ImageNet crops, ...;\n"
             "  1x28x28 Fashion-MNIST for the benches' stand-ins), or every preset at --input CxHxW (a preset\n"
             "  that does not fit it says why). FLOPs: 2 per multiply-add of conv and fc, batch norm 8 per value\n"
             "  forward and 10 backward, global average pooling 1 each way; pools, activations, dropout none.\n");
      return 0;
    } else if (!strcmp(argv[i], "--input") && i + 1 < argc) {
      if (sscanf(argv[++i], "%dx%dx%d", &c, &h, &w) != 3 || c < 1 || h < 1 || w < 1)
        die_usage("nets: --input wants CxHxW, e.g. 3x32x32, not '%s'", argv[i]);
    } else die_usage("nets: unknown flag '%s' (pdl nets --help)", argv[i]);
  }
  printf("%-26s %-10s %11s %12s %12s  %s\n", "preset", "input", "params", "fwd MFLOP", "train MFLOP", "spec / note");
  int bad = 0;
  for (int i = 0; i < net_npresets; i++) {
    const preset_t *p = &net_presets[i];
    int pc = c, ph = h, pw = w;
    if (!c && sscanf(p->input, "%dx%dx%d", &pc, &ph, &pw) != 3) die("nets: preset '%s' has a bad input '%s'", p->name, p->input);
    char in[32], err[512];
    snprintf(in, sizeof in, "%dx%dx%d", pc, ph, pw);
    static net_t n;   /* large: not on the stack */
    if (net_parse(&n, p->name, pc, ph, pw, err, sizeof err)) {
      printf("%-26s %-10s %11s %12s %12s  does not build at this input: %s\n", p->name, in, "-", "-", "-", err);
      bad += !c;   /* at its own input every preset must build */
      continue;
    }
    printf("%-26s %-10s %11zu %12.2f %12.2f  %s\n%-26s %-10s %11s %12s %12s    %s\n", n.name, in, n.nparams,
           n.flops_fwd / 1e6, n.flops_train / 1e6, n.spec, "", "", "", "", "", p->note);
  }
  if (bad) die("nets: %d preset(s) do not build at their own input", bad);
  return 0;
}
