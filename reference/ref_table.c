/* ref_table.c — kernels_ref, the reference oracle as a backend (contract/kernels.h): the ref_*
 * layers and updates of contract/layers.h, no fused layers (model.c runs them one by one), no
 * scratch, no threads, host memory. */
#include "reference/ref.h"
#include "util/util.h"

static size_t ref_conv_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int nthreads) {
  (void)B; (void)Ci; (void)H; (void)W; (void)Co; (void)k; (void)pad; (void)nthreads;
  return 0;   /* the reference ignores scratch */
}

static size_t ref_conv_s_scratch_floats(int B, int Ci, int H, int W, int Co, int k, int pad, int st, int nthreads) {
  (void)st;
  return ref_conv_scratch_floats(B, Ci, H, W, Co, k, pad, nthreads);
}

const kernels_t kernels_ref = {
  .name = "ref",
  KERNELS_LAYERS(ref_),
  .conv_scratch_floats = ref_conv_scratch_floats,
  KERNELS_FULLNET_LAYERS(ref_),
  .conv_s_scratch_floats = ref_conv_s_scratch_floats,
  KERNELS_HOST_MEMORY,
};
