/* gpu_check.h — what the GPU test files share (include after tests/harness.h and, in builds with
 * CUDA, kernels/cuda/cuda_layers.h): the device count, with device 0 selected and described on
 * stdout when there is one. */
#ifndef PDL_TESTS_GPU_CHECK_H
#define PDL_TESTS_GPU_CHECK_H
#ifdef PDL_HAVE_CUDA
static inline int gpu_test_devices(void) {
  const int n = cuda_device_count();
  if (n > 0) {
    char desc[256];
    cuda_set_device(0);
    cuda_describe_device(0, desc, sizeof desc);
    printf("# device 0 of %d: %s\n", n, desc);
  }
  return n;
}
#endif
#endif
