/* test_sim_rt.c — the sim runtime through the real path: rt_sim_run -> the loader -> dlopen'ed
 * libpdlsim.so -> SimGrid actors. SimGrid loads one platform per process, so every simulation
 * runs in a forked child; the child's EXPECT failures print there and come back as its exit
 * status, and values to compare across runs come back through a shared mapping.
 * Collective inputs are small integers, so every sum is exact whatever the reduction order. */
#include "harness.h"
#include "rt/rt.h"
#include "util/util.h"
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn(ctx) in a child; fails the current test unless the child exits with want_status. */
static void in_child_status(void (*fn)(void *), void *ctx, int want_status) {
  fflush(stdout); fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { h_cur_failed++; printf("  FAIL fork\n"); return; }
  if (pid == 0) {
    h_cur_failed = 0;
    fn(ctx);
    fflush(stdout);
    _exit(h_cur_failed ? 3 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  int got = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  if (got != want_status) {
    h_cur_failed++;
    printf("  FAIL child exited %d, wanted %d%s\n", got, want_status, got == 3 ? " (checks failed above)" : "");
  }
}
static void in_child(void (*fn)(void *), void *ctx) { in_child_status(fn, ctx, 0); }

static void *shared_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap %zu bytes", bytes);
  memset(p, 0, bytes);
  return p;
}

static int run_sim_hint(const char *platform, int hint, double gflops, rt_fn fn, void *arg, char *desc, size_t n) {
  rt_sim_cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.platform = platform;
  cfg.device_gflops = gflops;
  cfg.seed = 1;
  int rc = rt_sim_run(&cfg, hint, fn, arg);
  if (desc) snprintf(desc, n, "%s", cfg.platform_desc);
  return rc;
}
static int run_sim(const char *platform, double gflops, rt_fn fn, void *arg, char *desc, size_t n) {
  return run_sim_hint(platform, 0, gflops, fn, arg, desc, n);
}

/* A file of the source tree: relative to the working directory (tests/run.sh runs from the
 * repository root), else to the binary (BUILD/tests/test_sim_rt, two levels down). */
static const char *repo_file(const char *rel, char *out, size_t n) {
  if (access(rel, F_OK) == 0) { snprintf(out, n, "%s", rel); return out; }
  char exe[512];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) { snprintf(out, n, "%s", rel); return out; }
  exe[len] = 0;
  char *slash = strrchr(exe, '/');
  if (slash) *slash = 0;
  snprintf(out, n, "%s/../../%s", exe, rel);
  return out;
}

/* ---- availability and platform specs ----------------------------------------------------- */
static int sim_ok;

static void test_library_loads(void) {
  char why[3072];
  sim_ok = rt_sim_available(why, sizeof why);
  if (!sim_ok) {
    if (access("/usr/include/simgrid/engine.h", F_OK) == 0) {
      h_cur_failed++;
      printf("  FAIL SimGrid is installed but the sim runtime does not load: %s\n", why);
      return;
    }
    SKIP("SimGrid not installed (libsimgrid-dev): %s", why);
  }
  printf("  # loaded %s\n", rt_sim_library());
}

static void test_platform_shapes(void) {
  if (!sim_ok) SKIP("no sim runtime");
  struct { const char *spec; int n, g; } good[] = {
      {"cluster:nodes=4,gpus=8", 4, 8},
      {"cluster:nodes=32,gpus=8,rate=1200,pcie=10,ib=56Gbps,lat=0.7", 32, 8},
      {"links:bw=1Gbps*2+10Gbps*6,lat=5ms", 8, 1},
      {"links:k=5,bw=10", 5, 1},
      {"links:k=3,bw=100Mbps*1+1GBps*2", 3, 1},
      {"machine:ranks=3", 3, 1},
      {"machine:ranks=6,gflops=50Gf,membw=8,cores=2", 6, 1},
      {"src/sim/platforms/kfc-4x8.xml", 4, 8},
      {"src/sim/platforms/gossip-8.xml", 8, 1},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int n = -1, g = -1;
    char spec[700], path[600];
    if (good[i].spec[0] == 's') snprintf(spec, sizeof spec, "file:%s", repo_file(good[i].spec, path, sizeof path));
    else snprintf(spec, sizeof spec, "%s", good[i].spec);
    int rc = rt_sim_platform_shape(spec, &n, &g);
    EXPECT_MSG(rc == 0 && n == good[i].n && g == good[i].g, "%s -> rc %d, %d x %d", good[i].spec, rc, n, g);
  }
  const char *bad[] = {
      "", "cluster", "cluster:nodes=4", "cluster:nodes=0,gpus=1", "cluster:nodes=2,gpus=1,bogus=3",
      "cluster:nodes=2,gpus=1,rate=abc", "cluster:nodes=2,gpus=1,rate=-5", "cluster:nodes=2,gpus=1,",
      "cluster:nodes=2;gpus=1", "links:k=3,bw=1Gbps*2", "links:k=2,bw=1Gbps,lat=-1ms", "links:k=2",
      "links:bw=1Gbps", "links:k=2,bw=1Gparsecs", "machine:", "machine:ranks=2,gflops=0", "torus:n=4",
      "file:/nonexistent/platform.xml", "file:",
  };
  printf("  # the next lines on stderr are the expected error messages\n");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int n = -1, g = -1;
    int rc = rt_sim_platform_shape(bad[i], &n, &g);
    EXPECT_MSG(rc == 2, "'%s' gave rc %d (want 2)", bad[i], rc);
  }
}

/* ---- collectives ------------------------------------------------------------------------------ */
typedef struct { int nnodes; size_t n; } coll_ctx_t;

static size_t gv_count(int node, int big) { return (size_t)(node % 3) + (big ? 5000 : 0); }

static void coll_node(rt_t *rt, void *arg) {
  const coll_ctx_t *c = arg;
  int N = rt->nnodes, r = rt->node;
  EXPECT(N == c->nnodes);
  long tri = (long)N * (N + 1) / 2;
  for (int big = 0; big <= 1; big++) {
    size_t n = big ? c->n : 5;                /* 5 floats: binomial paths; c->n: ring paths */
    float *buf = xmalloc(n * sizeof(float));
    /* allreduce: node r contributes r+1 + (i % 7) */
    for (size_t i = 0; i < n; i++) buf[i] = (float)(r + 1 + (int)(i % 7));
    rt->ops->allreduce(rt, buf, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += buf[i] != (float)(tri + N * (long)(i % 7));
    EXPECT_MSG(bad == 0, "allreduce N=%d n=%zu node %d: %zu wrong", N, n, r, bad);
    /* reduce to the last node; the others' buffers stay as they were */
    int root = N - 1;
    for (size_t i = 0; i < n; i++) buf[i] = (float)(2 * r + (int)(i % 3));
    rt->ops->reduce(rt, buf, n, root);
    bad = 0;
    for (size_t i = 0; i < n; i++)
      bad += buf[i] != (r == root ? (float)(2 * (tri - N) + N * (long)(i % 3)) : (float)(2 * r + (int)(i % 3)));
    EXPECT_MSG(bad == 0, "reduce N=%d n=%zu node %d: %zu wrong", N, n, r, bad);
    /* bcast from the middle node */
    root = N / 2;
    for (size_t i = 0; i < n; i++) buf[i] = r == root ? (float)(i % 1000) : -1.0f;
    rt->ops->bcast(rt, buf, n, root);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += buf[i] != (float)(i % 1000);
    EXPECT_MSG(bad == 0, "bcast N=%d n=%zu node %d: %zu wrong", N, n, r, bad);
    xfree(buf);
    /* allgatherv / reduce_scatterv with uneven counts, some of them 0 */
    size_t *counts = xmalloc(sizeof(size_t) * (size_t)N), total = 0, myoff = 0;
    for (int j = 0; j < N; j++) {
      counts[j] = gv_count(j, big);
      if (j < r) myoff += counts[j];
      total += counts[j];
    }
    float *mine = xmalloc((counts[r] + 1) * sizeof(float)), *all = xmalloc((total + 1) * sizeof(float));
    for (size_t k = 0; k < counts[r]; k++) mine[k] = (float)(r * 10000 + (int)k);
    rt->ops->allgatherv(rt, mine, all, counts);
    bad = 0;
    size_t off = 0;
    for (int j = 0; j < N; j++) {
      for (size_t k = 0; k < counts[j]; k++) bad += all[off + k] != (float)(j * 10000 + (int)k);
      off += counts[j];
    }
    EXPECT_MSG(bad == 0, "allgatherv N=%d node %d: %zu wrong", N, r, bad);
    for (size_t i = 0; i < total; i++) all[i] = (float)(r + 1 + (int)(i % 5));
    rt->ops->reduce_scatterv(rt, all, mine, counts);
    bad = 0;
    for (size_t k = 0; k < counts[r]; k++) bad += mine[k] != (float)(tri + N * (long)((myoff + k) % 5));
    EXPECT_MSG(bad == 0, "reduce_scatterv N=%d node %d: %zu wrong", N, r, bad);
    xfree(mine); xfree(all); xfree(counts);
  }
  /* barrier: nobody leaves before the slowest has arrived (main roles run on the node CPU,
   * cpu=10 GFLOP/s) */
  double t_in = rt->ops->now(rt);
  rt->ops->compute(rt, 1e8 * r);
  double arrive = rt->ops->now(rt);
  rt->ops->barrier(rt);
  double leave = rt->ops->now(rt);
  double slowest = t_in + 1e8 * (N - 1) / 10e9;
  EXPECT_MSG(leave >= arrive && leave + 1e-12 >= slowest, "barrier node %d left at %.9g before %.9g", r, leave,
             slowest);
}

static void coll_child(void *arg) {
  coll_ctx_t *c = arg;
  char spec[128];
  snprintf(spec, sizeof spec, "cluster:nodes=%d,gpus=1,rate=1000,cpu=10", c->nnodes);
  EXPECT(run_sim(spec, 0, coll_node, c, NULL, 0) == 0);
}

static void test_collectives_exact(void) {
  if (!sim_ok) SKIP("no sim runtime");
  int Ns[] = {1, 2, 3, 8, 64};
  for (size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++) {
    coll_ctx_t c = {Ns[i], 20011};   /* 80 KB, not a multiple of N: uneven ring chunks */
    in_child(coll_child, &c);
  }
}

/* ---- point-to-point ----------------------------------------------------------------------------- */
static void p2p_node(rt_t *rt, void *arg) {
  (void)arg;
  int v;
  if (rt->node == 1) {
    v = 99; rt->ops->send(rt, 0, &v, sizeof v, 6);
    for (v = 10; v <= 12; v++) rt->ops->send(rt, 0, &v, sizeof v, 5);
  } else if (rt->node == 2) {
    for (v = 20; v <= 21; v++) rt->ops->send(rt, 0, &v, sizeof v, 5);
  } else if (rt->node == 3) {
    char z;
    rt->ops->recv(rt, 0, &z, 0, 7);           /* a 0-byte message */
    double big[4096];
    rt->ops->recv(rt, 0, big, sizeof big, 8);
    EXPECT(big[0] == 1.5 && big[4095] == 4095.5);
  } else {
    rt->ops->recv(rt, 2, &v, sizeof v, 5);
    EXPECT_MSG(v == 20, "recv(src=2) got %d", v);
    int src = rt->ops->recv_any(rt, &v, sizeof v, 6);
    EXPECT_MSG(src == 1 && v == 99, "recv_any(tag 6) got %d from %d", v, src);
    rt->ops->recv(rt, 1, &v, sizeof v, 5);
    EXPECT_MSG(v == 10, "recv(src=1) got %d", v);
    int last1 = 10, last2 = 20, got = 0;
    for (int k = 0; k < 3; k++) {
      src = rt->ops->recv_any(rt, &v, sizeof v, 5);
      if (src == 1) { EXPECT_MSG(v == last1 + 1, "from 1: %d after %d", v, last1); last1 = v; }
      else if (src == 2) { EXPECT_MSG(v == last2 + 1, "from 2: %d after %d", v, last2); last2 = v; }
      else EXPECT_MSG(0, "recv_any reported source %d", src);
      got++;
    }
    EXPECT(got == 3 && last1 == 12 && last2 == 21);
    char z = 0;
    rt->ops->send(rt, 3, &z, 0, 7);
    double big[4096];
    for (int i = 0; i < 4096; i++) big[i] = i + 0.5;
    big[0] = 1.5;
    rt->ops->send(rt, 3, big, sizeof big, 8);
  }
}
static void p2p_child(void *arg) { (void)arg; EXPECT(run_sim("links:k=4,bw=10Gbps,lat=10us", 0, p2p_node, NULL, NULL, 0) == 0); }

static void mismatch_node(rt_t *rt, void *arg) {
  (void)arg;
  double d = 1;
  float f;
  if (rt->node == 0) rt->ops->send(rt, 1, &d, sizeof d, 0);
  else rt->ops->recv(rt, 0, &f, sizeof f, 0);
}
static void mismatch_child(void *arg) { (void)arg; run_sim("links:k=2,bw=1Gbps", 0, mismatch_node, NULL, NULL, 0); }

static void deadlock_node(rt_t *rt, void *arg) {
  (void)arg;
  int v = 0;
  rt->ops->recv(rt, 1 - rt->node, &v, sizeof v, 0);   /* both wait: never completes */
}
static void deadlock_child(void *arg) {
  (void)arg;
  printf("  # SimGrid's deadlock report on stderr is expected\n");
  fflush(stdout);
  int rc = run_sim("links:k=2,bw=1Gbps", 0, deadlock_node, NULL, NULL, 0);
  EXPECT_MSG(rc == 1, "deadlock gave rc %d", rc);
}

static void test_p2p_order(void) {
  if (!sim_ok) SKIP("no sim runtime");
  in_child(p2p_child, NULL);
  printf("  # a size-mismatch error on stderr is expected\n");
  in_child_status(mismatch_child, NULL, 1);
  in_child(deadlock_child, NULL);
}

/* ---- network timing ------------------------------------------------------------------------------ */
/* CM02 without TCP window or ACK cross-traffic (docs/SIM.md): a message of S bytes on an idle
 * route takes sum(latencies) + S / min(bandwidths). The tolerance is SimGrid's own rounding of
 * event times (maxmin/precision, precision/timing; far below a nanosecond at these sizes). */
#define NET_TOL 1e-9
typedef struct { double t[8]; } times_t;

/* links:k=4, bw 1,1,10,10 Gb/s, 5 ms per node link */
static void net_node(rt_t *rt, void *arg) {
  times_t *T = arg;
  const size_t S = 1000000;
  char *buf = xmalloc(S);
  memset(buf, 1, S);
  int r = rt->node;
  double t0 = rt->ops->now(rt);                      /* (a) 0 -> 1, idle 1 Gb/s links */
  if (r == 0) { rt->ops->send(rt, 1, buf, S, 1); T->t[4] = rt->ops->now(rt) - t0; }
  if (r == 1) { rt->ops->recv(rt, 0, buf, S, 1); T->t[0] = rt->ops->now(rt) - t0; }
  rt->ops->barrier(rt);
  t0 = rt->ops->now(rt);                             /* (b) 2 -> 3 on 10 Gb/s */
  if (r == 2) rt->ops->send(rt, 3, buf, S, 2);
  if (r == 3) { rt->ops->recv(rt, 2, buf, S, 2); T->t[1] = rt->ops->now(rt) - t0; }
  rt->ops->barrier(rt);
  t0 = rt->ops->now(rt);                             /* (c) 2 -> 0: bottleneck 1 Gb/s */
  if (r == 2) rt->ops->send(rt, 0, buf, S, 3);
  if (r == 0) { rt->ops->recv(rt, 2, buf, S, 3); T->t[2] = rt->ops->now(rt) - t0; }
  rt->ops->barrier(rt);
  t0 = rt->ops->now(rt);                             /* (d) 2 and 3 -> 0: rendezvous, one at a time */
  if (r == 2 || r == 3) rt->ops->send(rt, 0, buf, S, 4);
  if (r == 0) {
    rt->ops->recv(rt, 2, buf, S, 4);
    rt->ops->recv(rt, 3, buf, S, 4);
    T->t[3] = rt->ops->now(rt) - t0;
  }
  xfree(buf);
}

/* links:k=2, 1 Gb/s, 5 ms: a ring allreduce of S bytes sends S/2 both ways at once, twice */
static void duplex_node(rt_t *rt, void *arg) {
  times_t *T = arg;
  size_t n = 250000;
  float *x = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = 1.0f;
  double t0 = rt->ops->now(rt);
  rt->ops->allreduce(rt, x, n);
  T->t[rt->node] = rt->ops->now(rt) - t0;
  EXPECT(x[0] == 2.0f && x[n - 1] == 2.0f);
  xfree(x);
}

/* machine:ranks=4,shmbw=1,shmlat=1: 0 -> 1 and 2 -> 3 at once on the one shared loopback */
static void shared_node(rt_t *rt, void *arg) {
  times_t *T = arg;
  const size_t S = 1000000;
  char *buf = xmalloc(S);
  memset(buf, 2, S);
  double t0 = rt->ops->now(rt);
  if (rt->node % 2 == 0) rt->ops->send(rt, rt->node + 1, buf, S, 0);
  else rt->ops->recv(rt, rt->node - 1, buf, S, 0);
  T->t[rt->node] = rt->ops->now(rt) - t0;
  xfree(buf);
}

/* links:k=4, 1 Gb/s, 5 ms: each of the six 4-cycles i -> to[i] in turn, all transfers of a round
 * at once (every node sends one and receives one, so each link direction carries exactly one
 * flow). SimGrid 3.32's lazy flow update with network/TCP-gamma:0 finished one flow of such a
 * cycle after its latency alone (docs/SIM.md); every transfer must take lat + S/bw.
 * T->t[r] = node r's shortest and t[4 + r] its longest send over the six rounds. */
static const int cyc_to[6][4] = {{1, 2, 3, 0}, {1, 3, 0, 2}, {2, 3, 1, 0}, {2, 0, 3, 1}, {3, 2, 0, 1}, {3, 0, 1, 2}};
typedef struct { char *buf; int round; } cyc_arg_t;
static void cyc_recv(rt_t *rt, void *arg) {
  cyc_arg_t *a = arg;
  int from = 0;
  for (int k = 0; k < 4; k++) if (cyc_to[a->round][k] == rt->node) from = k;
  rt->ops->recv(rt, from, a->buf, 1000000, 5);
}
static void cycle_node(rt_t *rt, void *arg) {
  times_t *T = arg;
  const size_t S = 1000000;
  char *in = xmalloc(S), *out = xmalloc(S);
  memset(out, 3, S);
  T->t[rt->node] = 1e9; T->t[4 + rt->node] = 0;
  for (int round = 0; round < 6; round++) {
    rt->ops->barrier(rt);
    cyc_arg_t a = {in, round};
    double t0 = rt->ops->now(rt);
    void *th = rt->ops->thread_start(rt, -1, cyc_recv, &a);
    rt->ops->send(rt, cyc_to[round][rt->node], out, S, 5);
    double dt = rt->ops->now(rt) - t0;
    if (dt < T->t[rt->node]) T->t[rt->node] = dt;
    if (dt > T->t[4 + rt->node]) T->t[4 + rt->node] = dt;
    rt->ops->thread_join(rt, th);
  }
  xfree(in); xfree(out);
}

static times_t *g_times;
static void net_child(void *arg) {
  (void)arg;
  char desc[512];
  EXPECT(run_sim("links:k=4,bw=1Gbps*2+10Gbps*2,lat=5ms", 0, net_node, g_times, desc, sizeof desc) == 0);
  printf("  # %s\n", desc);
}
static void duplex_child(void *arg) {
  (void)arg;
  EXPECT(run_sim("links:k=2,bw=1Gbps,lat=5ms", 0, duplex_node, g_times, NULL, 0) == 0);
}

static void cycle_child(void *arg) {
  (void)arg;
  EXPECT(run_sim("links:k=4,bw=1Gbps,lat=5ms", 0, cycle_node, g_times, NULL, 0) == 0);
}

static void shared_child(void *arg) {
  (void)arg;
  EXPECT(run_sim("machine:ranks=4,shmbw=1,shmlat=1", 0, shared_node, g_times, NULL, 0) == 0);
}

static void test_message_times(void) {
  if (!sim_ok) SKIP("no sim runtime");
  g_times = shared_alloc(sizeof(times_t));
  in_child(net_child, NULL);
  const double S = 1e6, lat = 2 * 5e-3, g1 = 1e9 / 8, g10 = 1e10 / 8;
  EXPECT_NEAR(g_times->t[0], lat + S / g1, NET_TOL, "idle 1 Gb/s route: latency + S/bw");
  EXPECT_NEAR(g_times->t[4], g_times->t[0], NET_TOL, "a send returns when the receiver has the data");
  EXPECT_NEAR(g_times->t[1], lat + S / g10, NET_TOL, "idle 10 Gb/s route");
  EXPECT_NEAR(g_times->t[2], lat + S / g1, NET_TOL, "10 -> 1 Gb/s route: the narrow link decides");
  EXPECT_NEAR(g_times->t[3], 2 * (lat + S / g1), NET_TOL,
              "rendezvous: the second transfer starts when node 0 posts its second recv");
  printf("  # 1 MB: 1 Gb/s %.6f s, 10 Gb/s %.6f s\n", g_times->t[0], g_times->t[1]);
  memset(g_times, 0, sizeof *g_times);
  in_child(duplex_child, NULL);
  for (int r = 0; r < 2; r++)
    EXPECT_NEAR(g_times->t[r], 2 * (lat + 0.5e6 / g1), NET_TOL, "full duplex: each ring step costs lat + (S/2)/bw");
  memset(g_times, 0, sizeof *g_times);
  in_child(cycle_child, NULL);
  for (int r = 0; r < 8; r++)
    EXPECT_NEAR(g_times->t[r], lat + S / g1, NET_TOL, "a cycle of simultaneous transfers: each takes lat + S/bw");
  printf("  # six 4-cycles of simultaneous 1 MB transfers: %.6f .. %.6f s\n", g_times->t[0], g_times->t[4]);
  memset(g_times, 0, sizeof *g_times);
  in_child(shared_child, NULL);
  for (int r = 1; r < 4; r += 2)
    EXPECT_NEAR(g_times->t[r], 1e-6 + 2 * S / 1e9, NET_TOL, "0->1 and 2->3 at once share the 1 GB/s loopback");
  munmap(g_times, sizeof(times_t));
}

/* ---- compute, memory, devices, threads, mutexes -------------------------------------------------- */
/* SimGrid's CPU model: an activity of F flops on an otherwise idle host of speed v takes F / v;
 * k activities on a host of c cores each get min(v, c v / k). The tolerance is SimGrid's event
 * time rounding. */
#define CPU_TOL 1e-9

typedef struct { void *mu; int inside, max_inside, count; } shared_t;
typedef struct { shared_t *sh; int id; double flops, elapsed; } th_arg_t;

static void locker(rt_t *rt, void *arg) {
  th_arg_t *a = arg;
  shared_t *sh = a->sh;
  EXPECT(rt->node == 0 && rt->nnodes == 2 && rt->ndevices == 2);
  EXPECT(rt->device == (a->id < 2 ? a->id : -1));
  for (int k = 0; k < 50; k++) {
    rt->ops->mutex_lock(rt, sh->mu);
    sh->inside++;
    if (sh->inside > sh->max_inside) sh->max_inside = sh->inside;
    rt->ops->compute(rt, 1e6);          /* simulated time passes while the lock is held */
    sh->count++;
    sh->inside--;
    rt->ops->mutex_unlock(rt, sh->mu);
    rt->ops->yield(rt);
  }
}

static void burner(rt_t *rt, void *arg) {
  th_arg_t *a = arg;
  double t0 = rt->ops->now(rt);
  rt->ops->compute(rt, a->flops);
  a->elapsed = rt->ops->now(rt) - t0;
}

/* T: results for the parent. cluster:nodes=2,gpus=2,rate=1000,cpu=10,cores=1,membw=20 */
static void compute_node(rt_t *rt, void *arg) {
  double *T = arg;
  if (rt->node == 1) {
    double t0 = rt->ops->now(rt);
    rt->ops->compute(rt, 1e10);                    /* node CPU: 10 GFLOP/s */
    T[0] = rt->ops->now(rt) - t0;
    t0 = rt->ops->now(rt);
    rt->ops->work(rt, 2e10);                       /* 20 GB at 20 GB/s */
    T[1] = rt->ops->now(rt) - t0;
    return;
  }
  shared_t sh = {0};
  sh.mu = rt->ops->mutex_new(rt);
  th_arg_t a[3] = {{&sh, 0, 0, 0}, {&sh, 1, 0, 0}, {&sh, 2, 0, 0}};
  void *th[3];
  double t0 = rt->ops->now(rt);
  for (int i = 0; i < 3; i++) th[i] = rt->ops->thread_start(rt, i < 2 ? i : -1, locker, &a[i]);
  for (int i = 0; i < 3; i++) rt->ops->thread_join(rt, th[i]);
  T[2] = rt->ops->now(rt) - t0;
  T[3] = 100 * 1e6 / 1e12 + 50 * 1e6 / 10e9;   /* the critical sections, one at a time */
  EXPECT(sh.count == 150);
  EXPECT_MSG(sh.max_inside == 1, "%d roles inside the critical section at once", sh.max_inside);
  rt->ops->mutex_free(rt, sh.mu);
  /* 2e12 flops on device 0 twice at once (shared) and once on device 1 (alone) */
  th_arg_t b[3] = {{NULL, 0, 2e12, 0}, {NULL, 0, 2e12, 0}, {NULL, 0, 2e12, 0}};
  int dev[3] = {0, 0, 1};
  for (int i = 0; i < 3; i++) th[i] = rt->ops->thread_start(rt, dev[i], burner, &b[i]);
  for (int i = 0; i < 3; i++) rt->ops->thread_join(rt, th[i]);
  T[4] = b[0].elapsed; T[5] = b[1].elapsed; T[6] = b[2].elapsed;
  t0 = rt->ops->now(rt);
  rt->ops->work(rt, 1e10);
  T[7] = rt->ops->now(rt) - t0;
}

static double *g_T;
static void compute_child(void *arg) {
  (void)arg;
  EXPECT(run_sim("cluster:nodes=2,gpus=2,rate=1000,cpu=10,cores=1,membw=20", 0, compute_node, g_T, NULL, 0) == 0);
}

static void test_compute_threads_mutex(void) {
  if (!sim_ok) SKIP("no sim runtime");
  g_T = shared_alloc(16 * sizeof(double));
  in_child(compute_child, NULL);
  EXPECT_NEAR(g_T[0], 1.0, CPU_TOL, "1e10 flops at 10 GFLOP/s");
  EXPECT_NEAR(g_T[1], 1.0, CPU_TOL, "20 GB at 20 GB/s");
  EXPECT_NEAR(g_T[2], g_T[3], CPU_TOL, "critical sections serialised by the sim mutex");
  EXPECT_NEAR(g_T[4], 4.0, CPU_TOL, "two threads share device 0: 2e12 flops at 500 GFLOP/s each");
  EXPECT_NEAR(g_T[5], 4.0, CPU_TOL, "two threads share device 0");
  EXPECT_NEAR(g_T[6], 2.0, CPU_TOL, "device 1 alone: 2e12 flops at 1000 GFLOP/s");
  EXPECT_NEAR(g_T[7], 0.5, CPU_TOL, "10 GB at 20 GB/s");
  munmap(g_T, 16 * sizeof(double));
}

/* machine:ranks=R,gflops=10,cores=2: R ranks computing at once share 2 cores */
static void machine_node(rt_t *rt, void *arg) {
  double *T = arg;
  double t0 = rt->ops->now(rt);
  rt->ops->compute(rt, 1e10);
  T[rt->node] = rt->ops->now(rt) - t0;
}
static int g_ranks;
static void machine_child(void *arg) {
  (void)arg;
  char spec[96], desc[512];
  /* R = 3 comes from the caller's node count (nnodes_hint) instead of the spec */
  if (g_ranks == 3) snprintf(spec, sizeof spec, "machine:gflops=10,cores=2");
  else snprintf(spec, sizeof spec, "machine:ranks=%d,gflops=10,cores=2", g_ranks);
  EXPECT(run_sim_hint(spec, g_ranks == 3 ? 3 : 0, 0, machine_node, g_T, desc, sizeof desc) == 0);
  if (g_ranks == 4) printf("  # %s\n", desc);
}

static void test_machine_core_sharing(void) {
  if (!sim_ok) SKIP("no sim runtime");
  g_T = shared_alloc(16 * sizeof(double));
  int Rs[] = {1, 2, 3, 4};
  for (int i = 0; i < 4; i++) {
    g_ranks = Rs[i];
    in_child(machine_child, NULL);
    double want = 1.0 * (Rs[i] > 2 ? Rs[i] / 2.0 : 1.0);
    for (int r = 0; r < Rs[i]; r++)
      EXPECT_NEAR(g_T[r], want, CPU_TOL, "1e10 flops per rank, 2 cores of 10 GFLOP/s shared by R ranks");
  }
  munmap(g_T, 16 * sizeof(double));
}

/* ---- determinism ----------------------------------------------------------------------------------- */
#define DET_N 8
typedef struct { double clock[DET_N]; uint32_t sum[DET_N]; int src_order[DET_N * 4]; } det_t;

static uint32_t fnv(const void *p, size_t n) {
  const unsigned char *b = p;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

/* Irregular compute sizes drawn from the seed, recv_any races, and a float allreduce whose
 * rounding depends on the reduction order. */
static void det_node(rt_t *rt, void *arg) {
  det_t *D = arg;
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(rt->node + 1);
  size_t n = 30001;
  float *x = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    x[i] = (float)((s >> 40) & 0xffff) / 977.0f;
  }
  rt->ops->compute(rt, 1e7 * (double)(s % 97));
  if (rt->node != 0) {
    for (int k = 0; k < 4; k++) {
      rt->ops->send(rt, 0, x + k, sizeof(float), 9);
      rt->ops->compute(rt, 1e6 * (double)((s >> (8 * k)) % 13));
    }
  } else {
    for (int k = 0; k < 4 * (DET_N - 1); k++) {
      float v;
      D->src_order[k % (DET_N * 4)] = rt->ops->recv_any(rt, &v, sizeof v, 9);
    }
  }
  rt->ops->allreduce(rt, x, n);
  D->sum[rt->node] = fnv(x, n * sizeof(float));
  D->clock[rt->node] = rt->ops->now(rt);
  xfree(x);
}

static det_t *g_det;
static void det_child(void *arg) {
  det_t *out = arg;
  EXPECT(run_sim("cluster:nodes=8,gpus=1", 0, det_node, out, NULL, 0) == 0);
  /* the same platform again in this process: allowed, the clock restarts at 0 */
  det_t again;
  memset(&again, 0, sizeof again);
  EXPECT(run_sim("cluster:nodes=8,gpus=1", 0, det_node, &again, NULL, 0) == 0);
  for (int i = 0; i < DET_N; i++) {
    EXPECT_NEAR(again.clock[i], out->clock[i], 1e-12 * out->clock[i] + 1e-15,
                "a second run restarts the clock (subtracting the start time rounds)");
    EXPECT(again.sum[i] == out->sum[i]);
  }
  /* a different platform in the same process is refused with a reason */
  printf("  # the 'one platform per process' error on stderr is expected\n");
  fflush(stdout);
  EXPECT(run_sim("cluster:nodes=4,gpus=1", 0, det_node, &again, NULL, 0) == 1);
}

static void test_deterministic(void) {
  if (!sim_ok) SKIP("no sim runtime");
  g_det = shared_alloc(2 * sizeof(det_t));
  in_child(det_child, &g_det[0]);
  in_child(det_child, &g_det[1]);
  EXPECT(memcmp(&g_det[0], &g_det[1], sizeof(det_t)) == 0);
  for (int i = 1; i < DET_N; i++) EXPECT_MSG(g_det[0].sum[i] == g_det[0].sum[0], "node %d's allreduce differs", i);
  int srcs = 0;
  for (int k = 0; k < 4 * (DET_N - 1); k++) srcs |= 1 << g_det[0].src_order[k];
  EXPECT(srcs == 0xfe);
  printf("  # clocks identical across runs: node 0 ended at %.9f s\n", g_det[0].clock[0]);
  munmap(g_det, 2 * sizeof(det_t));
}

/* ---- scale: 64 nodes x 8 devices, and a 64-node allreduce of 1M floats ----------------------------- */
typedef struct { double t_dev, t_allreduce, wall_setup, wall_allreduce; int threads_ok, wrong; } scale_t;

static void dev_burn(rt_t *rt, void *arg) {
  int *ok = arg;
  rt->ops->compute(rt, 1e9);
  if (rt->device >= 0 && rt->device < 8) (*ok)++;
}

static void scale_node(rt_t *rt, void *arg) {
  scale_t *S = arg;
  int ok = 0;
  void *th[8];
  double t0 = rt->ops->now(rt);
  for (int d = 0; d < 8; d++) th[d] = rt->ops->thread_start(rt, d, dev_burn, &ok);
  for (int d = 0; d < 8; d++) rt->ops->thread_join(rt, th[d]);
  if (rt->node == 0) S->t_dev = rt->ops->now(rt) - t0;
  EXPECT(ok == 8);
  __atomic_add_fetch(&S->threads_ok, ok, __ATOMIC_RELAXED);
  if (rt->node == 0) S->wall_setup = now_s() - S->wall_setup;
  size_t n = 1 << 20;
  float *x = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = (float)(rt->node + (int)(i & 3));
  rt->ops->barrier(rt);
  double w0 = now_s();
  t0 = rt->ops->now(rt);
  rt->ops->allreduce(rt, x, n);
  double t1 = rt->ops->now(rt);
  if (rt->node == 63) { S->t_allreduce = t1 - t0; S->wall_allreduce = now_s() - w0; }
  int wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += x[i] != (float)(2016 + 64 * (int)(i & 3));
  if (wrong) __atomic_add_fetch(&S->wrong, wrong, __ATOMIC_RELAXED);
  xfree(x);
}

static void scale_child(void *arg) {
  scale_t *S = arg;
  S->wall_setup = now_s();
  char desc[512];
  EXPECT(run_sim("cluster:nodes=64,gpus=8", 1000, scale_node, S, desc, sizeof desc) == 0);
  printf("  # %s\n", desc);
}

static void test_scale_64x8(void) {
  if (!sim_ok) SKIP("no sim runtime");
  scale_t *S = shared_alloc(sizeof(scale_t));
  double w = now_s();
  in_child(scale_child, S);
  w = now_s() - w;
  EXPECT(S->threads_ok == 512);
  EXPECT(S->wrong == 0);
  EXPECT_NEAR(S->t_dev, 1e9 / 1e12, CPU_TOL, "each device alone: 1e9 flops at cfg device_gflops=1000");
  /* ring: 2 (N-1) steps, each a 2^20/64-float chunk over one 56 Gb/s link, 1 us node to node */
  double step = 1e-6 + (double)(1 << 20) / 64 * 4 / (56e9 / 8);
  EXPECT_NEAR(S->t_allreduce, 2 * 63 * step, 1e-12, "ring model: 126 steps of latency + chunk/bw (event-time rounding)");
  printf("  # ring allreduce: simulated - model = %.3g s\n", S->t_allreduce - 2 * 63 * step);
  printf("  # 64x8 set-up + device compute: %.2f s wall; allreduce 1M floats over 64 nodes: %.6f s simulated, "
         "%.2f s wall; whole child %.2f s wall (timings informative, machine shared)\n",
         S->wall_setup, S->t_allreduce, S->wall_allreduce, w);
  munmap(S, sizeof(scale_t));
}

/* ---- platform XML round trip ------------------------------------------------------------------------ */
static void file_node(rt_t *rt, void *arg) {
  double *T = arg;
  double t0 = rt->ops->now(rt);
  float x[4] = {1, 2, 3, 4};
  rt->ops->allreduce(rt, x, 4);
  T[rt->node] = rt->ops->now(rt) - t0;
  EXPECT(x[3] == 4.0f * rt->nnodes);
}
static char g_path[600];
static void file_child(void *arg) {
  (void)arg;
  char spec[700], desc[512];
  snprintf(spec, sizeof spec, "file:%s", g_path);
  EXPECT(run_sim(spec, 0, file_node, g_T, desc, sizeof desc) == 0);
  printf("  # %s\n", desc);
}
static void gen_child(void *arg) {
  (void)arg;
  EXPECT(run_sim("links:k=3,bw=1Gbps*1+10Gbps*2,lat=2ms", 0, file_node, g_T + 8, NULL, 0) == 0);
}

static void test_platform_file(void) {
  if (!sim_ok) SKIP("no sim runtime");
  g_T = shared_alloc(16 * sizeof(double));
  snprintf(g_path, sizeof g_path, "/tmp/pdl-test-sim-%d.xml", (int)getpid());
  char desc[512];
  EXPECT(rt_sim_platform_xml("links:k=3,bw=1Gbps*1+10Gbps*2,lat=2ms", 0, g_path, desc, sizeof desc) == 0);
  in_child(file_child, NULL);
  in_child(gen_child, NULL);
  for (int r = 0; r < 3; r++) EXPECT_NEAR(g_T[r], g_T[8 + r], 0, "file written from a spec simulates as the spec");
  EXPECT(g_T[0] > 0);
  unlink(g_path);
  printf("  # shipped platforms:\n");
  const char *shipped[] = {"src/sim/platforms/kfc-4x8.xml", "src/sim/platforms/gossip-8.xml"};
  for (int i = 0; i < 2; i++) {
    repo_file(shipped[i], g_path, sizeof g_path);
    in_child(file_child, NULL);
  }
  munmap(g_T, 16 * sizeof(double));
}

int main(void) {
  RUN(test_library_loads);
  RUN(test_platform_shapes);
  RUN(test_collectives_exact);
  RUN(test_p2p_order);
  RUN(test_message_times);
  RUN(test_compute_threads_mutex);
  RUN(test_machine_core_sharing);
  RUN(test_deterministic);
  RUN(test_scale_64x8);
  RUN(test_platform_file);
  return harness_exit();
}
