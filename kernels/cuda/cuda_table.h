/* cuda_table.h — kernels_cuda, the CUDA backend's kernel table (contract/kernels.h), for the
 * registry (kernels_for, src/core/backend.c) and tests/test_cuda_net.c; the core never names it.
 * Only where the build has CUDA (PDL_HAVE_CUDA). */
#ifndef PDL_CUDA_TABLE_H
#define PDL_CUDA_TABLE_H
#include "contract/kernels.h"

#ifdef PDL_HAVE_CUDA
/* Every workspace buffer is device memory (host_memory = 0); the parameters, gradients and
 * optimizer state given to net_forward / net_backward_step / optim_step must be device memory too
 * (alloc + upload through the table; optim_init_on with this table). Layers:
 * kernels/cuda/cuda_layers.cu (conv = cuDNN or im2col + cuBLAS, fc = cuBLAS), the fused conv + leaky
 * ReLU (no conv + act + pool), resident batches (gather, the softmax's sums left on the device). Labels arrive as host memory (model.c's contract) and are uploaded per
 * call; dropout masks are drawn on the host and uploaded by model.c. All calls queue work on the
 * calling thread's stream (cuda_layers.h); the softmax forward waits for it (it returns the loss).
 * A thread keeps its label buffer on the device it first used: it must not switch devices
 * (cuda_set_device) after training through this table. */
extern const kernels_t kernels_cuda;
/* kernels_cuda on CUDA device dev for the calling thread, after checking that it exists (else
 * dies naming `flag`, e.g. "--device cuda:1", and why); names it in the JSON metadata
 * (json_meta_set_gpu) and writes its one-line description into desc. */
const kernels_t *cuda_kernels_on(int dev, const char *flag, char *desc, size_t len);
/* The usable CUDA devices (cuda_device_count), for the registry; without one why gets the reason. */
int cuda_kernels_devices(char *why, size_t len);
/* cuda_set_fail_handler (cuda_layers.h), for the registry's kernels_set_fail_handler. */
void cuda_kernels_fail_handler(void (*handler)(const char *msg));
#endif
#endif
