/* test_cuda_fail.c — a failed CUDA call ends the process with a message naming the call
 * (kernels/cuda/cuda_context.cu), and under MPI ends every rank, naming the rank (the handler
 * coll/mpi_util.c's pdl_mpi_fail_abort, which pdl train installs through the registry; issue 18). The failing call is cudaSetDevice(2^20): no machine has that
 * device, and without a driver it fails too, so this runs with or without a GPU.
 * Run directly: a forked child makes the call; the parent checks its exit status and message.
 * Under mpirun with PDL_CUDA_FAIL_RANK=r (tests/t_cuda_fail.sh): rank r makes the call while the
 * others wait in a barrier; the job must end at once with "pdl: rank r of N: CUDA failure in ...". */
#include "harness.h"
#ifdef PDL_HAVE_CUDA
#include <sys/wait.h>
#include <unistd.h>
#include "kernels/cuda/cuda_layers.h"
#include "contract/kernels.h"
#include "coll/mpi_util.h"

static void test_fail_message(void) {
  int fds[2];
  EXPECT(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2); close(fds[0]);
    cuda_set_device(1 << 20);
    _exit(0);   /* not reached when the failure is handled */
  }
  close(fds[1]);
  char buf[4096]; size_t n = 0; ssize_t r;
  while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0; close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "child status %d, want exit 1", st);
  EXPECT_MSG(strstr(buf, "pdl: CUDA failure in cudaSetDevice") != NULL, "stderr: %s", buf);
}
#else
static void test_fail_message(void) { SKIP_NO_GPU("skipped: no CUDA device (built without CUDA)"); }
#endif

int main(void) {
#if defined(PDL_HAVE_CUDA) && defined(PDL_HAVE_MPI)
  const char *r = getenv("PDL_CUDA_FAIL_RANK");
  if (r) {
    int argc = 0; char **argv = NULL;
    pdl_mpi_init(&argc, &argv, MPI_THREAD_SINGLE);
    kernels_set_fail_handler(pdl_mpi_fail_abort);   /* as pdl train's real runtime does (rt_real_init) */
    if (pdl_mpi_rank() == atoi(r)) cuda_set_device(1 << 20);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("probe: rank %d passed the barrier\n", pdl_mpi_rank());
    pdl_mpi_finalize();
    return 0;
  }
#endif
  RUN(test_fail_message);
  return harness_exit();
}
