/* backend.c — the backend registry (contract/kernels.h kernels_for): the one place outside the
 * tests that names a kernel backend. Everything that trains, evaluates or steps an optimizer asks
 * it for a table by device. */
#include "core/model.h"
#include "kernels/cpu/cpu_layers.h"
#include <stdio.h>
#include "util/util.h"
#ifdef PDL_HAVE_CUDA
#include "kernels/cuda/cuda_table.h"
#endif

const kernels_t *kernels_for(int device, const char *flag, char *desc, size_t len) {
  if (device < 0) {
    if (desc && len) snprintf(desc, len, "cpu");
    return &kernels_cpu;
  }
#ifdef PDL_HAVE_CUDA
  char d[256];
  return cuda_kernels_on(device, flag ? flag : "--device", desc && len ? desc : d, desc && len ? len : sizeof d);
#else
  (void)desc; (void)len;
  die("%s cuda:%d: this pdl was built without CUDA (no nvcc when it was built)", flag ? flag : "--device", device);
#endif
}

int kernels_device_count(void) {
#ifdef PDL_HAVE_CUDA
  return cuda_kernels_devices();
#else
  return 0;
#endif
}
