/* cpu_table.c — kernels_cpu, the fast CPU backend's table (contract/kernels.h): the cpu_* layers
 * and updates of contract/layers.h, the fused conv + leaky ReLU (+ 2x2 max-pool, where the conv
 * takes Winograd), cpu_conv_scratch_floats, the fc backward with the update fused, the OpenMP
 * thread count, and host memory. */
#include "kernels/cpu/cpu_layers.h"
#include "util/util.h"

const kernels_t kernels_cpu = {
  .name = "cpu",
  KERNELS_LAYERS(cpu_),
  .conv_act_forward = cpu_conv_act_forward, .conv_act_backward = cpu_conv_act_backward,
  .conv_act_pool_fusable = cpu_conv_act_pool_fusable,
  .conv_act_pool_forward = cpu_conv_act_pool_forward, .conv_act_pool_backward = cpu_conv_act_pool_backward,
  .conv_keep_floats = cpu_conv_keep_floats,
  .fc_backward_sgd = cpu_fc_backward_sgd,
  .conv_scratch_floats = cpu_conv_scratch_floats,
  .set_threads = cpu_set_threads,
  KERNELS_HOST_MEMORY,
};
