/* membw.c — single-thread memory bandwidth of this machine for the sim `machine:` platform's
 * membw: memcpy of a 64 MiB buffer into another (well beyond the caches), best of 15 copies after
 * one warm-up. Counted as bytes touched (read + write = 2 x size), the unit of the rt work()
 * calls (ssgd.c charges 4 n bytes per float vector touched). Prints GB/s (1e9 bytes/s) on stdout.
 * Built and run by bench/runtimes/validate.sh: gcc -O2 -o build/membw bench/runtimes/membw.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
  const size_t bytes = (size_t)64 << 20;
  char *a = malloc(bytes), *b = malloc(bytes); /* [bytes] each */
  if (!a || !b) { fprintf(stderr, "membw: out of memory\n"); return 1; }
  memset(a, 1, bytes); memset(b, 2, bytes);
  memcpy(b, a, bytes);
  double best = 1e30;
  for (int r = 0; r < 15; r++) {
    a[r] = (char)r; /* the copy cannot be elided: b is read below */
    double t0 = now();
    memcpy(b, a, bytes);
    double t = now() - t0;
    if (t < best) best = t;
  }
  if (b[3] != 3) { fprintf(stderr, "membw: copy check failed\n"); return 1; }
  printf("%.4f\n", 2.0 * (double)bytes / best / 1e9);
  free(a); free(b);
  return 0;
}
