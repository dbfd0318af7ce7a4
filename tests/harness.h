/* harness.h — the tiny C test harness. A test file defines static test functions and a main
 * that calls RUN(fn) for each and returns harness_exit(). Each test prints "ok - name" or
 * "not ok - name"; SKIP prints "skip - name: reason". tests/run.sh counts these lines.
 * Tolerance checks take a reason string that is printed on failure. */
#ifndef PDL_HARNESS_H
#define PDL_HARNESS_H
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int h_failed_total, h_cur_failed, h_cur_skipped;
static const char *h_cur_name;

#define EXPECT(cond) do { if (!(cond)) { h_cur_failed++; \
  printf("  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define EXPECT_MSG(cond, ...) do { if (!(cond)) { h_cur_failed++; \
  printf("  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); printf(__VA_ARGS__); printf("\n"); } } while (0)
/* |a-b| <= tol, reason says why that tolerance */
#define EXPECT_NEAR(a, b, tol, reason) do { double _a = (a), _b = (b); \
  if (!(fabs(_a - _b) <= (tol))) { h_cur_failed++; \
  printf("  FAIL %s:%d: %s = %.9g vs %s = %.9g (tol %.3g: %s)\n", __FILE__, __LINE__, #a, _a, #b, _b, (double)(tol), reason); } } while (0)
#define SKIP(...) do { h_cur_skipped = 1; printf("skip - %s: ", h_cur_name); printf(__VA_ARGS__); printf("\n"); return; } while (0)

/* PDL_REQUIRE_GPU=1 on a machine with a /dev/nvidia* device node (PDL_REQUIRE_GPU=force on any
 * machine): a GPU test that cannot use the device fails instead of skipping, so a GPU CI host
 * whose driver broke does not pass by skipping. */
static inline int h_gpu_required(void) {
  const char *e = getenv("PDL_REQUIRE_GPU");
  if (!e || !*e || !strcmp(e, "0")) return 0;
  if (!strcmp(e, "force")) return 1;
  glob_t g;
  const int found = glob("/dev/nvidia[0-9]*", 0, NULL, &g) == 0 && g.gl_pathc > 0;
  globfree(&g);
  return found;
}
/* SKIP_NO_GPU("skipped: no CUDA device (%s)", why): a skip, or with h_gpu_required() a failure */
#define SKIP_NO_GPU(...) do { if (h_gpu_required()) { h_cur_failed++; \
  printf("  FAIL %s:%d: PDL_REQUIRE_GPU is set and a GPU is required here, but: ", __FILE__, __LINE__); \
  printf(__VA_ARGS__); printf("\n"); return; } SKIP(__VA_ARGS__); } while (0)

static inline void harness_run(void (*fn)(void), const char *name) {
  h_cur_name = name; h_cur_failed = 0; h_cur_skipped = 0;
  fflush(stdout);
  fn();
  if (!h_cur_skipped) printf("%s - %s\n", h_cur_failed ? "not ok" : "ok", name);
  if (h_cur_failed) h_failed_total++;
  fflush(stdout);
}
#define RUN(fn) harness_run(fn, #fn)

static inline int harness_exit(void) { return h_failed_total ? 1 : 0; }

/* Max relative error between arrays, relative to max(|ref|, floor). */
static inline double max_rel_err(const float *got, const float *ref, size_t n, double floor_) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)ref[i]);
    double s = fabs((double)ref[i]); if (s < floor_) s = floor_;
    if (d / s > m || isnan(d)) m = isnan(d) ? INFINITY : d / s;
  }
  return m;
}

/* max |got - ref| over max(max |ref|, 1) (INFINITY on a NaN): a float computation's error scales with
 * its terms, i.e. with the output's scale, not with one element's value */
static inline double scaled_err(const float *got, const float *ref, size_t n) {
  double m = 0, scale = 1;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)got[i] - (double)ref[i]);
    if (d > m || isnan(d)) m = isnan(d) ? INFINITY : d;
    if (fabs((double)ref[i]) > scale) scale = fabs((double)ref[i]);
  }
  return m / scale;
}
#endif
