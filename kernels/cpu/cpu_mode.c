/* cpu_mode.c — the process-wide convolution algorithm (PDL_CONV=auto|im2col|winograd|winograd4,
 * read once; cpu_conv_set_mode for tests and benchmarks). Its own file so that cpu_conv.c (which
 * dispatches) and cpu_winograd.c (which picks its tile size by the mode) both depend on it and
 * not on each other. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu/cpu.h"
#include "util/util.h"
#include "util/env.h"

static int conv_mode = CPU_CONV_AUTO;
static pthread_once_t conv_mode_once = PTHREAD_ONCE_INIT;

static void conv_mode_from_env(void) {
  const char *e = env_get("PDL_CONV");
  if (!e || !*e || !strcmp(e, "auto")) conv_mode = CPU_CONV_AUTO;
  else if (!strcmp(e, "im2col")) conv_mode = CPU_CONV_IM2COL;
  else if (!strcmp(e, "winograd")) conv_mode = CPU_CONV_WINOGRAD;
  else if (!strcmp(e, "winograd4")) conv_mode = CPU_CONV_WINOGRAD4;
  else die("PDL_CONV='%s': expected auto, im2col, winograd or winograd4", e);
}

int cpu_conv_get_mode(void) {
  pthread_once(&conv_mode_once, conv_mode_from_env);
  return conv_mode;
}

void cpu_conv_set_mode(int mode) {
  SHAPE_ASSERT(mode == CPU_CONV_IM2COL || mode == CPU_CONV_AUTO || mode == CPU_CONV_WINOGRAD || mode == CPU_CONV_WINOGRAD4);
  pthread_once(&conv_mode_once, conv_mode_from_env);
  conv_mode = mode;
}
