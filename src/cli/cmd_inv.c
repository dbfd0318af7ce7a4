/* inv.c — `pdl inverse`: speed of the SPD inversions of contract/inv.h, measured in one run: the double
 * LAPACKE oracle (ref_spd_inverse), the fast CPU path on 1 and on T threads (cpu_spd_inverse) and
 * cuSOLVER (the registry's cuda table's spd_inverse) where a device exists, on the test matrices of ref_spd_random.
 * Each time is the median over --reps repeats; a repeat runs the call enough times to last
 * ~50 ms (small orders take well under a millisecond) and divides. The three CPU variants'
 * repeats alternate, and each one's best repeat is reported too: the CI gate judges the ratio of
 * the bests (as ci/regress.sh's ab does), because on a 2-vCPU VM the two-thread medians of one
 * machine ranged 1.67x-3.17x over ten quiet runs while the bests stayed within 2.48x-2.77x.
 * OpenBLAS is single-threaded, as everywhere in pdl, so the reference is one core's double LAPACK. One JSON line per order on
 * stdout (and appended to --json FILE); the table and progress go to stderr. The speed ratio
 * ref_s / fast_s is the CI gate's "fast-vs-reference inversion speed ratio". */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kernels/cpu/cpu_layers.h"
#include "kernels/cpu/cpu.h"
#include "reference/ref.h"
#include "util/util.h"
#include "contract/kernels.h"

#define INV_MAX_SIZES 32
#define INV_MAX_N 8192
#define INV_MAX_REPS 100
#define INV_REP_S 0.05 /* least duration of one timed repeat */
#define INV_BUSY 0.10  /* steal + other load (fractions of all CPUs) above which the timing is flagged */
#define INV_CORES 0.85 /* ... and the control's cores as a fraction of T under which it is */

static void usage(FILE *f) {
  fprintf(f,
"usage: pdl inverse [--sizes N,N,...] [--cond C] [--reps R] [--threads T] [--json FILE]\n"
"\n"
"Times the SPD inversions of src/contract/inv.h on A = Q diag(lambda) Q^T (Q random orthogonal,\n"
"eigenvalues log-spaced from 1 down to 1/C), in float except the reference:\n"
"  ref    ref_spd_inverse: LAPACKE dpotrf + dpotri in double (one thread: OpenBLAS is\n"
"         single-threaded in pdl), the oracle\n"
"  fast1  cpu_spd_inverse on 1 thread;  fast  the same on T threads\n"
"  cuda   the registry's cuda backend's spd_inverse (cuSOLVER) on device 0, when one exists\n"
"Each time is the median of R repeats (a repeat lasts >= 50 ms: short calls are repeated and\n"
"averaged inside it); the repeats of ref, fast1 and fast alternate, so interference from other\n"
"processes falls on all three alike. The best (shortest) repeat of each is also reported: on a\n"
"shared machine it is the least disturbed figure (the CI gate's).\n"
"\n"
"  --sizes N,...   orders, 1..%d, at most %d of them (default 256,1024,2048)\n"
"  --cond C        condition number of A, 1..1e7 (default 1e4)\n"
"  --reps R        repeats, 1..%d (default 5)\n"
"  --threads T     threads of the fast path, 1..1024 (default: online cores)\n"
"  --json FILE     also append the JSON lines to FILE\n"
"\n"
"Output: a table on stderr; per order one JSON line on stdout with event \"inverse\", n, cond,\n"
"threads, reps, ref_s, fast1_s, fast_s, cuda_s (null without a device), speedup (ref_s / fast_s),\n"
"speedup_1t (ref_s / fast1_s), ref_best_s, fast1_best_s, fast_best_s, speedup_best\n"
"(ref_best_s / fast_best_s), speedup_1t_best, fast_max_err (||X - Xref||_max / ||Xref||_max of\n"
"the T-thread result against the reference), fast_resid (||A X - I||_max / (||A||_max ||X||_max)), cuda_max_err,\n"
"cuda_resid, steal and other_load (fractions of all CPUs' time, while the CPU variants were timed,\n"
"that the hypervisor gave to another guest and that other processes used; -1 when /proc/stat\n"
"is unreadable), cores (T x the 1-thread time / the T-thread time of a control loop of\n"
"independent vector multiply-adds timed in the same alternation: the cores the run really had,\n"
"T when they were free; a warning on stderr when under 0.85 T or when steal + other_load is\n"
"over 10%%), and the run's metadata (git revision, host, cpu, isa).\n"
"\n"
"exit status: 0 ok, 1 an inversion failed, 2 bad flags\n", INV_MAX_N, INV_MAX_SIZES, INV_MAX_REPS);
}

/* --sizes: comma-separated orders. */
static int parse_sizes(const char *v, int *out) {
  if (!v || !*v) die_usage("--sizes needs a value, e.g. 256,1024");
  int k = 0;
  const char *p = v;
  for (;;) {
    char item[32];
    const char *comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= sizeof item) die_usage("--sizes '%s': want orders separated by commas, e.g. 256,1024", v);
    if (k == INV_MAX_SIZES) die_usage("--sizes '%s': more than %d orders", v, INV_MAX_SIZES);
    memcpy(item, p, len);
    item[len] = 0;
    out[k++] = (int)parse_long("--sizes", item, 1, INV_MAX_N);
    if (!comma) break;
    p = comma + 1;
  }
  return k;
}

typedef int (*inv_fn)(float *, const float *, int, float *);

/* One timed variant: its function, buffers, thread count, and the calls per repeat (set by its
 * untimed first call: a repeat lasts >= INV_REP_S). */
typedef struct {
  const char *what;
  inv_fn fn;
  float *x, *s;
  int threads, calls;
  double v[INV_MAX_REPS];
} inv_timer_t;

/* One untimed call (dies if it does not return 0), which sets t->calls. */
static void timer_prime(inv_timer_t *t, const float *a, int n) {
  cpu_set_threads(t->threads);
  const double t0 = now_s();
  const int info = t->fn(t->x, a, n, t->s);
  if (info) die("%s: inversion of order %d returned %d (not SPD in its precision: lower --cond)", t->what, n, info);
  const double once = now_s() - t0;
  t->calls = once >= INV_REP_S ? 1 : once * 1000 < INV_REP_S ? 1000 : (int)(INV_REP_S / once) + 1;
}

/* Repeat r of t: seconds per call into t->v[r]. */
static void timer_repeat(inv_timer_t *t, const float *a, int n, int r) {
  cpu_set_threads(t->threads);
  int info = 0;
  const double t0 = now_s();
  for (int c = 0; c < t->calls; c++) info |= t->fn(t->x, a, n, t->s);
  t->v[r] = (now_s() - t0) / t->calls;
  if (info) die("%s: inversion of order %d failed on a repeat (%d)", t->what, n, info);
}

static double vmin(const double *v, int k) {
  double m = v[0];
  for (int i = 1; i < k; i++) m = v[i] < m ? v[i] : m;
  return m;
}

/* Times the k variants with their repeats interleaved (repeat r of each, then repeat r + 1), so
 * that a stretch of interference on a shared machine (another process, a busy sibling vCPU) falls
 * on all of them alike instead of on one variant's block of repeats. */
static void time_interleaved(inv_timer_t *t, int k, const float *a, int n, int reps) {
  for (int i = 0; i < k; i++) timer_prime(&t[i], a, n);
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < k; i++) {
      progress("n=%d repeat %d/%d: %s", n, r + 1, reps, t[i].what);
      timer_repeat(&t[i], a, n, r);
    }
}

/* The machine's control: every thread of the team runs the same fixed amount of independent
 * vector multiply-adds (no memory traffic, nothing shared), so T threads take as long as one when
 * T cores are free. T * t(1 thread) / t(T threads) is the number of cores the run actually had:
 * T on a quiet machine, towards 1 when the vCPUs share cores with other work that this guest does
 * not see as its own load (another guest on the sibling hyperthread, or steal). n scales it. */
static volatile float g_ctrl_sink;
static int ctrl_spin(float *x, const float *a, int n, float *s) {
  (void)x; (void)a; (void)s;
  const long iters = (long)n * 256;
#pragma omp parallel num_threads(cpu_get_threads())
  {
    float v[128];
    for (int k = 0; k < 128; k++) v[k] = (float)k;
    for (long i = 0; i < iters; i++) {
#pragma omp simd
      for (int k = 0; k < 128; k++) v[k] = v[k] * 0.999f + 0.5f;
    }
    float acc = 0;
    for (int k = 0; k < 128; k++) acc += v[k];
    g_ctrl_sink = acc;
  }
  return 0;
}

/* ||x - ref||_max / ||ref||_max */
static double max_rel_diff(const float *x, const float *ref, size_t nn) {
  double d = 0, m = 0;
  for (size_t i = 0; i < nn; i++) {
    d = fmax(d, fabs((double)x[i] - (double)ref[i]));
    m = fmax(m, fabs((double)ref[i]));
  }
  return d / m;
}

/* ||A X - I||_max / (||A||_max ||X||_max), in double (dgemm on panels of 64 rows of A). */
static double resid(const float *a, const float *x, int n) {
  enum { PANEL = 64 };
  const size_t nn = (size_t)n * n;
  double am = 0, xm = 0, r = 0;
  double *xd = xmalloc(nn * sizeof *xd), *ap = xmalloc((size_t)PANEL * n * sizeof *ap);
  double *pp = xmalloc((size_t)PANEL * n * sizeof *pp);
  for (size_t i = 0; i < nn; i++) {
    xd[i] = x[i];
    am = fmax(am, fabs((double)a[i]));
    xm = fmax(xm, fabs(xd[i]));
  }
  for (int i0 = 0; i0 < n; i0 += PANEL) {
    const int rows = n - i0 < PANEL ? n - i0 : PANEL;
    for (size_t k = 0; k < (size_t)rows * n; k++) ap[k] = a[(size_t)i0 * n + k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, n, 1.0, ap, n, xd, n, 0.0, pp, n);
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < n; j++) r = fmax(r, fabs(pp[(size_t)i * n + j] - (i0 + i == j ? 1.0 : 0.0)));
  }
  xfree(xd); xfree(ap); xfree(pp);
  return r / (am * xm);
}

/* The device backend's table (the registry's "cuda", device 0) whose spd_inverse is timed; NULL: none. */
static const kernels_t *g_dk;
static int dev_spd_inverse(float *inv, const float *a, int n, float *scratch) {
  (void)scratch;
  return g_dk->spd_inverse(inv, a, n);
}
/* Median seconds of the device's spd_inverse (synchronous: it returns the info) on copies in its
 * memory; x receives the result. */
static double time_device(float *x, const float *a, int n, int reps) {
  const size_t bytes = (size_t)n * n * sizeof(float);
  float *d_a = g_dk->alloc(bytes), *d_x = g_dk->alloc(bytes);
  g_dk->upload(d_a, a, bytes);
  inv_timer_t t1 = {.what = "cuda", .fn = dev_spd_inverse, .x = d_x, .threads = 1};
  time_interleaved(&t1, 1, d_a, n, reps);
  const double t = median(t1.v, reps);
  g_dk->download(x, d_x, bytes);
  g_dk->release(d_a);
  g_dk->release(d_x);
  return t;
}

int cmd_inverse(int argc, char **argv) {
  int sizes[INV_MAX_SIZES] = {256, 1024, 2048}, nsizes = 3, reps = 5, T = (int)sysconf(_SC_NPROCESSORS_ONLN);
  double cond = 1e4;
  const char *json_path = NULL, *json_flag = NULL;
  if (T < 1) T = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else if (!strcmp(a, "--sizes")) { nsizes = parse_sizes(v, sizes); i++; }
    else if (!strcmp(a, "--cond")) { cond = parse_double(a, v, 1.0, 1e7); i++; }
    else if (!strcmp(a, "--reps")) { reps = (int)parse_long(a, v, 1, INV_MAX_REPS); i++; }
    else if (!strcmp(a, "--threads")) { T = (int)parse_long(a, v, 1, 1024); i++; }
    else if (!strcmp(a, "--json")) {
      if (!v) die_usage("--json needs a value");
      output_flag("inverse", &json_flag, &json_path, a, v); i++;
    }
    else die_usage("inverse: unknown flag '%s' (pdl inverse --help)", a);
  }
  results_probe(json_path, "--json");   /* before any work, naming the flag */
  cpu_blas_init();
  results_t out;
  results_open(&out, json_path);
  char cuda_why[300] = "";
  if (kernels_devices("cuda", cuda_why, sizeof cuda_why) > 0) {   /* the registry's device backend */
    const device_spec_t d = {.backend = "cuda", .index = 0};
    g_dk = kernels_for(&d, 0, "inverse", NULL, 0);   /* device 0, named in the JSON metadata */
    if (!g_dk->spd_inverse) { snprintf(cuda_why, sizeof cuda_why, "built without cuSOLVER"); g_dk = NULL; }
  }
  const int have_cuda = g_dk != NULL;
  if (!have_cuda) fprintf(stderr, "cuda: skipped: no CUDA device (%s)\n", cuda_why);
  fprintf(stderr, "%6s %8s %10s %10s %10s %10s %8s %8s %9s %10s %10s\n", "n", "cond", "ref_s", "fast1_s", "fast_s",
          "cuda_s", "x(T)", "x(1)", "best x(T)", "fast_err", "fast_res");
  for (int si = 0; si < nsizes; si++) {
    const int n = sizes[si];
    const size_t nn = (size_t)n * n;
    progress("n=%d: building the test matrix", n);
    double *ad = xmalloc(nn * sizeof *ad);
    ref_spd_random(ad, NULL, n, cond, 1);
    float *a = xmalloc(nn * sizeof *a), *ref = xmalloc(nn * sizeof *ref), *x = xmalloc(nn * sizeof *x);
    for (size_t i = 0; i < nn; i++) a[i] = (float)ad[i];
    xfree(ad);
    float *s = xmalloc((cpu_spd_inverse_scratch_floats(n) + 1) * sizeof *s);
    /* fast on T threads last: x holds its result for the errors below */
    inv_timer_t tm[5] = {{.what = "ref", .fn = ref_spd_inverse, .x = ref, .threads = 1},
                         {.what = "fast, 1 thread", .fn = cpu_spd_inverse, .x = x, .s = s, .threads = 1},
                         {.what = "fast", .fn = cpu_spd_inverse, .x = x, .s = s, .threads = T},
                         {.what = "control, 1 thread", .fn = ctrl_spin, .threads = 1},
                         {.what = "control", .fn = ctrl_spin, .threads = T}};
    host_load_t load;
    host_load_begin(&load);
    time_interleaved(tm, 5, a, n, reps);
    double steal, other;
    host_load_end(&load, &steal, &other);
    const double cores = T * vmin(tm[3].v, reps) / vmin(tm[4].v, reps);
    if (steal + other > INV_BUSY || (T > 1 && cores < INV_CORES * T))
      fprintf(stderr, "inverse: n=%d: the machine was busy while timing: steal %.0f%%, other processes %.0f%% of "
              "all CPUs, and the control loop found %.2f of %d cores; the T-thread figures are those of a shared "
              "machine\n", n, 100 * steal, 100 * other, cores, T);
    const double ref_s = median(tm[0].v, reps), fast1_s = median(tm[1].v, reps), fast_s = median(tm[2].v, reps);
    const double ref_b = vmin(tm[0].v, reps), fast1_b = vmin(tm[1].v, reps), fast_b = vmin(tm[2].v, reps);
    progress("n=%d: errors", n);
    const double err = max_rel_diff(x, ref, nn), res = resid(a, x, n);
    double cuda_s = -1, cuda_err = -1, cuda_res = -1;
    if (have_cuda) {
      cuda_s = time_device(x, a, n, reps);
      cuda_err = max_rel_diff(x, ref, nn);
      cuda_res = resid(a, x, n);
    }
    progress_done();
    char cs[16] = "-";
    if (have_cuda) snprintf(cs, sizeof cs, "%.5f", cuda_s);
    fprintf(stderr, "%6d %8.0e %10.5f %10.5f %10.5f %10s %8.2f %8.2f %9.2f %10.2e %10.2e\n", n, cond, ref_s, fast1_s,
            fast_s, cs, ref_s / fast_s, ref_s / fast1_s, ref_b / fast_b, err, res);
    json_t j;
    json_begin(&j);
    json_str(&j, "event", "inverse");
    json_int(&j, "n", n);
    json_num(&j, "cond", cond);
    json_int(&j, "threads", T);
    json_int(&j, "reps", reps);
    json_num(&j, "ref_s", ref_s);
    json_num(&j, "fast1_s", fast1_s);
    json_num(&j, "fast_s", fast_s);
    if (have_cuda) json_num(&j, "cuda_s", cuda_s); else json_raw(&j, "cuda_s", "null");
    json_num(&j, "speedup", ref_s / fast_s);
    json_num(&j, "speedup_1t", ref_s / fast1_s);
    json_num(&j, "ref_best_s", ref_b);
    json_num(&j, "fast1_best_s", fast1_b);
    json_num(&j, "fast_best_s", fast_b);
    json_num(&j, "speedup_best", ref_b / fast_b);
    json_num(&j, "speedup_1t_best", ref_b / fast1_b);
    json_num(&j, "fast_max_err", err);
    json_num(&j, "fast_resid", res);
    json_num(&j, "steal", steal);
    json_num(&j, "other_load", other);
    json_num(&j, "cores", cores);
    if (have_cuda) { json_num(&j, "cuda_max_err", cuda_err); json_num(&j, "cuda_resid", cuda_res); }
    else { json_raw(&j, "cuda_max_err", "null"); json_raw(&j, "cuda_resid", "null"); }
    json_str(&j, "ref", "LAPACKE dpotrf+dpotri, double, 1 thread");
    json_meta(&j);
    const char *line = json_end(&j);
    printf("%s\n", line);
    fflush(stdout);
    results_write(&out, line);
    xfree(a); xfree(ref); xfree(x); xfree(s);
  }
  if (have_cuda && g_dk->thread_release) g_dk->thread_release();
  results_close(&out);
  return 0;
}
