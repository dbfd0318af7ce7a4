/* coll.c — `pdl coll`: MPI/NCCL collective benchmark in the style of the OSU micro-benchmarks
 * and nccl-tests (see docs/COLLECTIVES.md). Each call is the backend's run() (src/coll), the
 * function the real runtime's collectives also end in (coll_seam_t, `pdl train --coll`).
 * Per size: validate first (inputs with a known exact result, every output element compared,
 * -c times), then warm up and time each call OSU's way (MPI_Wtime): a barrier before each call,
 * outside the timed region; each rank's mean over the timed calls is reduced to min/avg/max over ranks, and
 * the per-call maximum over ranks gives p50/p99. algbw = bytes_total / avg time, busbw = algbw x
 * nccl-tests' factor. Rank 0 prints the table and appends the JSON lines.
 * Exit: 0 all correct (or "skipped: ..." for a missing device), 1 wrong elements or a run error,
 * 2 usage, 124 watchdog. Test-only hooks (environment): PDL_COLL_INJECT=R:E adds 1 to element E
 * of rank R's input after the expected result is fixed; PDL_COLL_TEST_HANG=R makes rank R stop
 * before its first collective so the others hang. */
#include "coll/coll.h"
#include "coll/mpi_util.h"
#include "rt/watchdog.h"
#include "util/util.h"
#include "util/env.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE_BYTES 8192            /* OSU's LARGE_MESSAGE_SIZE: fewer iterations above it */
#define MAX_BYTES (1ull << 30)      /* keeps MPI's int counts and the host images sane */

typedef struct {
  coll_op_t op;
  const coll_lib_t *lib;            /* --backend (src/coll/colls.def's list; default its first) */
  size_t min_b, max_b;
  long factor;
  long iters, warmup;               /* -1: OSU-like defaults by size */
  long checks;
  int inplace;
  coll_dtype_t dt;
  const char *json, *json_flag;     /* --json FILE (output_flag: given once) */
  double timeout;
  long probe;                       /* >0: only issue this many calls per size (traffic probes) */
  int thread_level;                 /* 0 single, 1 funneled, 2 serialized, 3 multiple */
  int inject_rank; long long inject_elem;
  int hang_rank;
} opts_t;

static const char *thread_level_names[4] = {"single", "funneled", "serialized", "multiple"};

static void help(void) {
  printf("usage: [mpirun -np N] pdl coll [options]\n"
         "  MPI or NCCL collective benchmark, OSU micro-benchmarks / nccl-tests style.\n\n"
         "  --op NAME          collective (default allreduce):\n");
  for (int i = 0; i < COLL_NOPS; i++)
    printf("                       %-30s busbw x %-9s %s\n", coll_ops[i].name, coll_ops[i].busbw, coll_ops[i].what);
  printf("  --backend NAME     the collective library (default %s), the one list of src/coll/colls.def:\n", coll_libs[0]->name);
  for (int i = 0; i < coll_nlibs; i++) printf("                       %-8s %s\n", coll_libs[i]->name, coll_libs[i]->what);
  printf("                     without its device a device library prints 'skipped: <why>' and exits 0.\n"
         "                     The calls are the ones pdl train --coll NAME makes (NCCL's\n"
         "                     reduce_scatterv/allgatherv: one grouped ncclReduce/ncclBroadcast per block)\n"
         "  -m MIN:MAX         sizes in bytes, K/M/G = 2^10/2^20/2^30 (default 4:4M); one value = one size\n"
         "  -f FACTOR          size multiplier between rows (default 2)\n"
         "  -i ITERS           timed calls per size (default 100 up to 8 KiB, 20 above, as OSU lowers its\n"
         "                     count for large messages); given explicitly it applies to every size\n"
         "  -x WARMUP          untimed calls before timing (default 10 up to 8 KiB, 2 above)\n"
         "  -c CHECKS          validation passes per size before timing (default 1, at least 1)\n"
         "  --inplace          in-place form (MPI_IN_PLACE / NCCL sendbuff inside recvbuff); bcast is always in place\n"
         "  --dtype float|double  element type (default float); reductions are sums\n"
         "  --json FILE        append one JSON line per size (rank 0)\n"
         "  --thread-level L   MPI thread support requested: single (default, as OSU), funneled, serialized,\n"
         "                     multiple; Open MPI 4.1 pays for anything above single on small messages\n"
         "  --timeout S        watchdog: abort naming op, size and rank after S s without progress\n"
         "                     (default 120, 0 = off)\n"
         "  --probe N          no validation or timing: N back-to-back calls per size (for traffic probes\n"
         "                     with Open MPI's pml monitoring, see bench/collectives/algo.py)\n\n"
         "Sizes follow nccl-tests: a size is the full vector (bytes_total): the allreduce/reduce/bcast\n"
         "buffer, the allgather output, the reduce_scatter input. bytes_per_rank is each rank's block\n"
         "(allgather/reduce_scatter families: total/n, the largest block for the v ops) or the full\n"
         "vector. OSU's allgather size is our bytes_per_rank; its allreduce/reduce/bcast size is ours.\n"
         "allgather/reduce_scatter round the size down to n equal blocks (at least 1 element each);\n"
         "the v ops keep it and give the first count%%n ranks one extra element.\n"
         "Columns: bytes/rank, bytes total, count (elements of the full vector), iters, avg/min/max of\n"
         "the per-rank mean time (us), p50/p99 of the per-call max over ranks (us), algbw =\n"
         "bytes_total/avg (GB/s = 1e9 B/s), busbw = algbw x factor, #wrong (elements, all ranks).\n"
         "Exit: 0 ok, 1 wrong results or run error, 2 usage, 124 watchdog.\n");
}

/* "64", "4K", "64M", "1G", "8KiB", "2MB": binary multiples */
static size_t parse_size(const char *flag, const char *s) {
  char *end; errno = 0;
  if (!*s || *s == '-' || *s == '+') die_usage("%s: '%s' is not a size in bytes", flag, s);
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) die_usage("%s: '%s' is not a size in bytes", flag, s);
  unsigned long long mul = 1;
  if (*end == 'K' || *end == 'k') { mul = 1ull << 10; end++; }
  else if (*end == 'M' || *end == 'm') { mul = 1ull << 20; end++; }
  else if (*end == 'G' || *end == 'g') { mul = 1ull << 30; end++; }
  if (mul > 1 && (!strcmp(end, "iB") || !strcmp(end, "B"))) end += strlen(end);
  else if (mul == 1 && !strcmp(end, "B")) end++;
  if (*end) die_usage("%s: '%s' is not a size in bytes (use e.g. 4, 8K, 64M)", flag, s);
  if (v == 0) die_usage("%s: sizes must be at least one element, got 0", flag);
  if (v > MAX_BYTES / mul) die_usage("%s: %s is larger than the 1 GiB limit", flag, s);
  return (size_t)(v * mul);
}

static void parse_hooks(opts_t *o) {
  o->inject_rank = -1; o->inject_elem = -1; o->hang_rank = -1;
  const char *inj = env_get("PDL_COLL_INJECT"), *hang = env_get("PDL_COLL_TEST_HANG");
  if (inj && *inj) {
    int r; long long e; char extra;
    if (sscanf(inj, "%d:%lld%c", &r, &e, &extra) != 2 || r < 0 || e < 0)
      die_usage("PDL_COLL_INJECT: '%s' is not RANK:ELEMENT", inj);
    o->inject_rank = r; o->inject_elem = e;
  }
  if (hang && *hang) o->hang_rank = (int)parse_long("PDL_COLL_TEST_HANG", hang, 0, 1 << 24);
}

static void parse(opts_t *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->lib = coll_libs[0];
  o->op = COLL_ALLREDUCE; o->min_b = 4; o->max_b = 4u << 20; o->factor = 2;
  o->iters = -1; o->warmup = -1; o->checks = 1; o->dt = COLL_FLOAT; o->timeout = 120;
  const char *mspec = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!v) die_usage("%s needs a value", a); i++; } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); exit(0); }
    else if (!strcmp(a, "--op")) {
      NEED();
      int op = coll_op_by_name(v);
      if (op < 0) die_usage("--op: unknown collective '%s' (see pdl coll --help)", v);
      o->op = (coll_op_t)op;
    } else if (!strcmp(a, "--backend")) {
      NEED();
      if (!(o->lib = coll_lib_find(v))) die_usage("--backend: '%s' is not %s", v, coll_lib_names(" or "));
    } else if (!strcmp(a, "-m")) { NEED(); mspec = v; }
    else if (!strcmp(a, "-f")) { NEED(); o->factor = parse_long("-f", v, 2, 1024); }
    else if (!strcmp(a, "-i")) { NEED(); o->iters = parse_long("-i", v, 1, 100000000); }
    else if (!strcmp(a, "-x")) { NEED(); o->warmup = parse_long("-x", v, 0, 100000000); }
    else if (!strcmp(a, "-c")) { NEED(); o->checks = parse_long("-c", v, 1, 1000000); }
    else if (!strcmp(a, "--inplace")) o->inplace = 1;
    else if (!strcmp(a, "--dtype")) {
      NEED();
      if (!strcmp(v, "float")) o->dt = COLL_FLOAT;
      else if (!strcmp(v, "double")) o->dt = COLL_DOUBLE;
      else die_usage("--dtype: '%s' is not float or double", v);
    } else if (!strcmp(a, "--json")) { NEED(); output_flag("coll", &o->json_flag, &o->json, a, v); }
    else if (!strcmp(a, "--timeout")) { NEED(); o->timeout = parse_double("--timeout", v, 0, 1e7); }
    else if (!strcmp(a, "--probe")) { NEED(); o->probe = parse_long("--probe", v, 1, 1000000); }
    else if (!strcmp(a, "--thread-level")) {
      NEED();
      int k = -1;
      for (int q = 0; q < 4; q++) if (!strcmp(v, thread_level_names[q])) k = q;
      if (k < 0) die_usage("--thread-level: '%s' is not single, funneled, serialized or multiple", v);
      o->thread_level = k;
    }
    else die_usage("coll: unknown option '%s' (see pdl coll --help)", a);
#undef NEED
  }
  if (mspec) {
    char buf[128];
    if (strlen(mspec) >= sizeof buf) die_usage("-m: '%s' is too long", mspec);
    snprintf(buf, sizeof buf, "%s", mspec);
    char *colon = strchr(buf, ':');
    if (colon) { *colon = 0; o->min_b = parse_size("-m", buf); o->max_b = parse_size("-m", colon + 1); }
    else o->min_b = o->max_b = parse_size("-m", buf);
    if (o->min_b > o->max_b) die_usage("-m: MIN %zu is larger than MAX %zu", o->min_b, o->max_b);
  }
  size_t es = coll_elt_size(o->dt);
  if (o->min_b % es || o->max_b % es)
    die_usage("-m: sizes must be whole %s elements (multiples of %zu bytes), got %zu:%zu",
              o->dt == COLL_DOUBLE ? "double" : "float", es, o->min_b, o->max_b);
  if (o->op == COLL_MEMCPY && o->inplace) die_usage("--inplace: memcpy has no in-place form");
  parse_hooks(o);
}

#ifdef PDL_HAVE_MPI
static double pct(double *sorted, long n, double q) {  /* nearest-rank percentile */
  long k = (long)ceil(q * (double)n) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return sorted[k];
}

static long long sum_ll(long long v) {
  long long s = 0;
  CHECK_MPI(MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return s;
}

static void hang_here(const char *op, size_t total) {
  watchdog_context("%s %zu B validation (PDL_COLL_TEST_HANG: this rank stopped before the call)", op, total);
  for (;;) pause();
}

/* One row: validate, warm up, time. Returns this size's wrong count (same on all ranks). */
static long long run_size(const opts_t *o, const coll_backend_t *b, coll_call_t *c, size_t requested,
                          void *h_send, void *h_recv, double *t, double *tmax, results_t *res, int *first_row) {
  int rank = c->rank, n = c->nranks;
  size_t es = coll_elt_size(c->dt);
  coll_plan(c, requested / es);
  size_t total = c->count * es;
  size_t per_rank = (coll_ops[c->op].blocked_input || coll_ops[c->op].blocked_output ? c->counts[0] : c->count) * es;
  const char *op = coll_ops[c->op].name;
  int large = total > LARGE_BYTES;
  long iters = o->iters > 0 ? o->iters : large ? 20 : 100;
  long warm = o->warmup >= 0 ? o->warmup : large ? 2 : 10;

  if (o->probe) {
    coll_fill(c, b, h_send, h_recv, -1);
    if (c->has_send) b->upload(c->send, h_send, c->send_count * es);
    b->upload(c->recv, h_recv, c->recv_count * es);
    for (long k = 0; k < o->probe; k++) {
      watchdog_context("%s %zu B probe call %ld/%ld", op, total, k + 1, o->probe);
      b->run(c);
    }
    if (rank == 0) { printf("probe: %ld call(s) of %s, %zu B total, %d ranks\n", o->probe, op, total, n); fflush(stdout); }
    return 0;
  }

  /* validation */
  long long wrong = 0;
  for (long k = 0; k < o->checks; k++) {
    watchdog_context("%s %zu B validation %ld/%ld: building inputs", op, total, k + 1, o->checks);
    coll_fill(c, b, h_send, h_recv, rank == o->inject_rank ? o->inject_elem : -1);
    if (c->has_send) b->upload(c->send, h_send, c->send_count * es);
    b->upload(c->recv, h_recv, c->recv_count * es);
    watchdog_context("%s %zu B validation %ld/%ld: collective", op, total, k + 1, o->checks);
    b->barrier();
    if (rank == o->hang_rank) hang_here(op, total);
    b->run(c);
    b->download(h_recv, c->recv, c->recv_count * es);
    watchdog_context("%s %zu B validation %ld/%ld: checking", op, total, k + 1, o->checks);
    wrong += coll_check(c, b, h_recv);
  }
  watchdog_context("%s %zu B validation: summing wrong counts", op, total);
  wrong = sum_ll(wrong);

  /* timing, OSU style */
  for (long k = 0; k < warm + iters; k++) {
    watchdog_context("%s %zu B %s call %ld/%ld", op, total, k < warm ? "warm-up" : "timed",
                     k < warm ? k + 1 : k - warm + 1, k < warm ? warm : iters);
    b->barrier();
    double t0 = MPI_Wtime();  /* OSU's timer; in A/B runs here it read ~0.2-0.4 us less per tiny call than now_s() */
    b->run(c);
    double t1 = MPI_Wtime();
    if (k >= warm) t[k - warm] = t1 - t0;
  }
  watchdog_context("%s %zu B: reducing timings", op, total);
  double mean = 0;
  for (long k = 0; k < iters; k++) mean += t[k];
  mean /= (double)iters;
  double mn = 0, mx = 0, sum = 0;
  CHECK_MPI(MPI_Reduce(&mean, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(&mean, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(&mean, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Reduce(t, tmax, (int)iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  if (rank == 0) {
    double avg = sum / n;
    qsort(tmax, (size_t)iters, sizeof(double), cmp_double);
    double p50 = pct(tmax, iters, 0.50), p99 = pct(tmax, iters, 0.99);
    double algbw = (double)total / avg / 1e9, busbw = algbw * coll_busbw_factor(c->op, n);
    if (*first_row) {
      printf("# %12s %13s %11s %6s %10s %10s %10s %10s %10s %12s %12s %7s\n", "bytes/rank", "bytes total", "count",
             "iters", "avg(us)", "min(us)", "max(us)", "p50(us)", "p99(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
      *first_row = 0;
    }
    printf("  %12zu %13zu %11zu %6ld %10.2f %10.2f %10.2f %10.2f %10.2f %12.3f %12.3f %7lld\n", per_rank, total,
           c->count, iters, avg * 1e6, mn * 1e6, mx * 1e6, p50 * 1e6, p99 * 1e6, algbw, busbw, wrong);
    fflush(stdout);
    json_t j;
    json_begin(&j);
    json_str(&j, "op", op);
    json_str(&j, "backend", b->name);
    json_int(&j, "ranks", n);
    json_int(&j, "bytes_per_rank", (long long)per_rank);
    json_int(&j, "bytes_total", (long long)total);
    json_int(&j, "count", (long long)c->count);
    json_num(&j, "avg_us", avg * 1e6);
    json_num(&j, "min_us", mn * 1e6);
    json_num(&j, "max_us", mx * 1e6);
    json_num(&j, "p50_us", p50 * 1e6);
    json_num(&j, "p99_us", p99 * 1e6);
    json_num(&j, "algbw_gbs", algbw);
    json_num(&j, "busbw_gbs", busbw);
    json_int(&j, "wrong", wrong);
    json_str(&j, "dtype", c->dt == COLL_DOUBLE ? "double" : "float");
    json_bool(&j, "inplace", c->inplace || c->op == COLL_BCAST);
    json_int(&j, "root", c->root);
    json_int(&j, "iters", iters);
    json_int(&j, "warmup", warm);
    json_int(&j, "checks", o->checks);
    json_str(&j, "thread_level", thread_level_names[o->thread_level]);
    json_num(&j, "busbw_factor", coll_busbw_factor(c->op, n));
    json_bool(&j, "simulated", 0);
    json_meta(&j);
    results_write(res, json_end(&j));
  }
  return wrong;
}
#endif

int cmd_coll(int argc, char **argv) {
  opts_t o;
  parse(&o, argc, argv);
#ifndef PDL_HAVE_MPI
  if (!o.lib->host) { char why[256]; o.lib->open(why, sizeof why); printf("skipped: %s\n", why); return 0; }
  die("pdl coll needs MPI: this build has none (rebuild without NO_MPI=1, with libopenmpi-dev installed)");
#else
  /* The watchdog thread calls MPI only when it fires (MPI_Abort, a last resort), so the level
   * the timed code needs is single; higher levels are there to measure what they cost. */
  static const int levels[4] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
  int provided = pdl_mpi_init(NULL, NULL, levels[o.thread_level]);
  int rank = pdl_mpi_rank(), n = pdl_mpi_size();
  if (rank == 0 && !o.probe) results_probe(o.json, "--json");   /* before any work (its only writer) */
  watchdog_start(o.timeout);
  watchdog_context("%s backend start-up", o.lib->name);
  char why[512];
  const coll_backend_t *b = o.lib->open(why, sizeof why);
  if (!b) {   /* a device library without its device (or build): every rank alike */
    if (rank == 0) { printf("skipped: %s\n", why); fflush(stdout); }
    watchdog_stop();
    pdl_mpi_finalize();
    return 0;
  }
  size_t es = coll_elt_size(o.dt);
  long max_iters = o.iters > 0 ? o.iters : 100;

  coll_call_t c;
  memset(&c, 0, sizeof c);
  c.op = o.op; c.dt = o.dt; c.inplace = o.inplace; c.root = 0; c.rank = rank; c.nranks = n;
  c.counts = xmalloc(sizeof(size_t) * (size_t)n);   /* [n] */
  c.displs = xmalloc(sizeof(size_t) * (size_t)n);   /* [n] */
  /* buffers for the largest size: the full vector, plus one element per rank of rounding slack */
  size_t cap = (o.max_b / es + (size_t)n) * es;
  void *h_send = xmalloc(cap), *h_recv = xmalloc(cap);  /* host images [cap bytes] */
  c.send = b->alloc(cap);
  c.recv = b->alloc(cap);
  double *t = xmalloc(sizeof(double) * (size_t)max_iters);     /* [iters] this rank's call times */
  double *tmax = xmalloc(sizeof(double) * (size_t)max_iters);  /* [iters] max over ranks (rank 0) */
  results_t res;
  results_open(&res, rank == 0 && !o.probe ? o.json : NULL);

  if (rank == 0 && !o.probe) {
    printf("# pdl coll: op %s, backend %s, %d rank%s, %s, %s, root 0, checks %ld, iters %s, warmup %s\n",
           coll_ops[o.op].name, b->name, n, n == 1 ? "" : "s", o.dt == COLL_DOUBLE ? "double" : "float",
           o.inplace || o.op == COLL_BCAST ? "in place" : "out of place", o.checks,
           o.iters > 0 ? "as given" : "100 (<= 8 KiB) / 20", o.warmup >= 0 ? "as given" : "10 / 2");
    printf("# size = full vector (nccl-tests convention); busbw = algbw x %s = %.4g; MPI thread level %s "
           "(provided %s)\n", coll_ops[o.op].busbw, coll_busbw_factor(o.op, n), thread_level_names[o.thread_level],
           provided == MPI_THREAD_MULTIPLE ? "multiple" : provided == MPI_THREAD_SERIALIZED ? "serialized"
           : provided == MPI_THREAD_FUNNELED ? "funneled" : "single");
    fflush(stdout);
  }
  long long wrong_total = 0;
  int first_row = 1;
  size_t last_total = 0;
  for (size_t s = o.min_b;; s *= (size_t)o.factor) {
    coll_plan(&c, s / es);
    if (c.count * es != last_total) {  /* rounding to equal blocks can repeat a size: run it once */
      last_total = c.count * es;
      wrong_total += run_size(&o, b, &c, s, h_send, h_recv, t, tmax, &res, &first_row);
    }
    if (s > o.max_b / (size_t)o.factor) break;
  }
  results_close(&res);
  watchdog_context("tearing down the %s backend", b->name);
  b->release(c.send);
  b->release(c.recv);
  b->teardown();
  xfree(h_send); xfree(h_recv); xfree(t); xfree(tmax); xfree(c.counts); xfree(c.displs);
  if (rank == 0 && !o.probe) {
    printf("# #wrong total: %lld%s\n", wrong_total, wrong_total ? "  <-- WRONG RESULTS" : "");
    fflush(stdout);
  }
  watchdog_stop();
  pdl_mpi_finalize();
  if (wrong_total) {
    if (rank == 0) fprintf(stderr, "pdl: coll: %lld wrong element(s): results are not valid\n", wrong_total);
    return PDL_EXIT_ERROR;
  }
  return 0;
#endif
}
