/* osu_loop.c — an independent, minimal re-implementation of the OSU micro-benchmarks' blocking
 * collective latency loop (osu_allreduce / osu_reduce / osu_allgather), used by run.sh to check
 * pdl coll's MPI figures against the OSU method on the same machine in the same run. It shares
 * no code with pdl. OSU's method: for each size, skip+iterations calls; each call is timed with
 * MPI_Wtime and followed by an untimed MPI_Barrier; a rank's latency is its mean over the timed
 * calls; min/avg/max over ranks are printed. Like OSU, allreduce and reduce sum MPI_FLOATs
 * (count = size / 4) and allgather sends `size` MPI_CHARs per rank (OSU's size is per rank).
 * usage: osu_loop allreduce|reduce|allgather MIN MAX FACTOR ITERS ITERS_LARGE SKIP SKIP_LARGE
 * (sizes in bytes; ITERS/SKIP apply up to 8192 bytes, OSU's LARGE_MESSAGE_SIZE). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc != 9) {
    if (!rank) fprintf(stderr, "usage: osu_loop allreduce|reduce|allgather MIN MAX FACTOR ITERS ITERS_LARGE SKIP SKIP_LARGE\n");
    MPI_Finalize();
    return 2;
  }
  const char *op = argv[1];
  long min = atol(argv[2]), max = atol(argv[3]), f = atol(argv[4]);
  long it_s = atol(argv[5]), it_l = atol(argv[6]), sk_s = atol(argv[7]), sk_l = atol(argv[8]);
  int ar = !strcmp(op, "allreduce"), rd = !strcmp(op, "reduce"), ag = !strcmp(op, "allgather");
  if (!(ar || rd || ag) || min < 1 || max < min || f < 2) {
    if (!rank) fprintf(stderr, "osu_loop: bad arguments\n");
    MPI_Finalize();
    return 2;
  }
  size_t rbytes = ag ? (size_t)max * (size_t)n : (size_t)max;
  char *sbuf = malloc((size_t)max), *rbuf = malloc(rbytes);
  if (!sbuf || !rbuf) { fprintf(stderr, "osu_loop: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  memset(sbuf, 1, (size_t)max);
  memset(rbuf, 0, rbytes);
  if (!rank) {
    printf("# OSU-style MPI %s latency loop (bench/collectives/osu_loop.c), %d ranks\n", op, n);
    printf("%-10s %18s %18s %18s %12s\n", "# Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations");
  }
  for (long size = min; size <= max; size *= f) {
    long iters = size > 8192 ? it_l : it_s, skip = size > 8192 ? sk_l : sk_s;
    int count = ar || rd ? (int)(size / (long)sizeof(float)) : (int)size;
    if (count < 1) continue;
    double timer = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < iters + skip; i++) {
      double t0 = MPI_Wtime();
      if (ar) MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (rd) MPI_Reduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
      else MPI_Allgather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, MPI_COMM_WORLD);
      double t1 = MPI_Wtime();
      if (i >= skip) timer += t1 - t0;
      MPI_Barrier(MPI_COMM_WORLD);
    }
    double lat = timer * 1e6 / (double)iters, mn, mx, sum;
    MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank) { printf("%-10ld %18.2f %18.2f %18.2f %12ld\n", size, sum / n, mn, mx, iters); fflush(stdout); }
    if (size > max / f) break;
  }
  free(sbuf); free(rbuf);
  MPI_Finalize();
  return 0;
}
