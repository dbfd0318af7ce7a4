/* test_cuda_lazy.c — cuBLAS and cuSOLVER are loaded on first use (kernels/cuda/cuda_lazy.c), not
 * at program start: before any call neither library is mapped into the process; the first call
 * maps it and reaches the real function (a status name comes back as the library spells it;
 * creating a handle succeeds on a GPU machine and fails with the library's own status without
 * one). Runs with or without a device; the emulator does not use cuda_lazy.c. */
#include "harness.h"
#ifdef PDL_HAVE_CUDA
#include <cublas_v2.h>
#ifdef PDL_HAVE_CUSOLVER
#include <cusolverDn.h>
#endif

/* Whether a mapping of the process names `lib` (/proc/self/maps). */
static int mapped(const char *lib) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[1024];
  int found = 0;
  while (fgets(line, sizeof line, f)) found |= strstr(line, lib) != NULL;
  fclose(f);
  return found;
}

static void test_not_loaded_at_start(void) {
  EXPECT_MSG(mapped("libcublas") == 0, "libcublas is mapped before any cuBLAS call (linked, not loaded lazily?)");
  EXPECT_MSG(mapped("libcusolver") == 0, "libcusolver is mapped before any cuSOLVER call");
}

static void test_cublas_first_call(void) {
  const char *s = cublasGetStatusName(CUBLAS_STATUS_SUCCESS);
  EXPECT_MSG(s && !strcmp(s, "CUBLAS_STATUS_SUCCESS"), "cublasGetStatusName gave '%s'", s ? s : "(null)");
  EXPECT_MSG(mapped("libcublas") == 1, "libcublas not mapped after the first call");
  cublasHandle_t h = NULL;
  const cublasStatus_t st = cublasCreate(&h);
  if (st == CUBLAS_STATUS_SUCCESS) EXPECT(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
  else EXPECT_MSG(st == CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate without a device: %s", cublasGetStatusName(st));
}

#ifdef PDL_HAVE_CUSOLVER
static void test_cusolver_first_call(void) {
  cusolverDnHandle_t h = NULL;
  const cusolverStatus_t st = cusolverDnCreate(&h);
  EXPECT_MSG(mapped("libcusolver") == 1, "libcusolver not mapped after the first call");
  if (st == CUSOLVER_STATUS_SUCCESS) EXPECT(cusolverDnDestroy(h) == CUSOLVER_STATUS_SUCCESS);
  else EXPECT_MSG(st == CUSOLVER_STATUS_NOT_INITIALIZED || st == CUSOLVER_STATUS_INTERNAL_ERROR,
                  "cusolverDnCreate without a device: status %d", (int)st);
}
#endif
#endif

int main(void) {
#ifdef PDL_HAVE_CUDA
  RUN(test_not_loaded_at_start);
  RUN(test_cublas_first_call);
#ifdef PDL_HAVE_CUSOLVER
  RUN(test_cusolver_first_call);
#endif
#else
  printf("skip - test_cuda_lazy: built without CUDA\n");
#endif
  return harness_exit();
}
