/* rt_sim.c — the sim runtime (libpdlsim.so): SimGrid engine set-up, one S4U actor per role,
 * and the rt_ops_t of src/rt/rt.h on top of SimGrid activities.
 *
 * Model (docs/SIM.md): a node's main role runs on host n<i>, a thread started on device d on
 * host n<i>-g<d> (device -1: n<i>); compute(flops) executes flops on the role's host, work(bytes)
 * executes bytes on n<i>-mem (speed = memory bandwidth, shared by the node's roles); messages
 * are SimGrid communications of their real size between the two roles' hosts.
 * Point-to-point (user channel): one mailbox per (dst node, tag); the receiver keeps messages
 * it took while waiting for another source in a per-node stash (arrival order), so recv(src)
 * and recv_any see FIFO order per (src, tag). Collectives use a second channel, one mailbox
 * per (src, dst) pair (sim_coll.c). Payloads are copied (sender mallocs, receiver frees), the
 * payload pointer is never NULL and a send blocks until the receiver has it (like MPI_Ssend).
 * All actors run one at a time on the calling OS thread (SimGrid contexts): rt ops are called
 * only from roles, never from inside an OpenMP parallel region or another pthread.
 * Once per process: SimGrid cannot unload a platform, so every run in a process must use the
 * same platform (same spec, hint and rate); runs after the first restart the clock at 0. */
#include "rt/pdlsim.h"
#include "sim/sim_internal.h"
#include "util/env.h"
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/version.h>
#include <xbt/log.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TAG 1024
/* A timing-only run's messages carry their last CUT_BYTES only: where every node program keeps what
 * is not parameters (control floats, a table, a count: algo.h's CTL_F floats ride at the end). */
#define CUT_BYTES ((size_t)64 * 1024)

typedef struct role {
  rt_t rt;
  rt_fn fn;
  void *arg;
  sg_actor_t actor;
  int is_main, finished;
  struct role *next;          /* all roles of the run */
} role_t;

/* A message: header + payload (the simulated size is bytes, the header is free). The payload is
 * bytes [off, off + kept) of what was sent: all of it, unless the run is timing-only (cut). */
typedef struct msg {
  int src, tag;
  size_t bytes, off, kept;
  struct msg *next;           /* stash link */
  unsigned char data[];
} msg_t;

typedef struct {
  sg_host_t cpu, mem;
  sg_host_t *dev;             /* [ndevices] */
  msg_t *stash_head, *stash_tail;
} node_t;

static struct {
  int sg_inited, loaded, active, broken;
  char key[1200];             /* identity of the loaded platform */
  char desc[512];
  int desc_file;              /* file: platform, described after its first run */
  char file[1024];
  int nnodes, ndev;
  int cut;                    /* timing-only run: payloads cut to their last CUT_BYTES */
  node_t *nodes;              /* [nnodes] */
  role_t *roles;
  int mains_done, threads_started, threads_done, nthreads_named;
  double t0;
} G;

static const rt_ops_t sim_ops;

void simc_fatal(const char *fmt, ...) {
  va_list ap; va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "pdl: error: sim runtime at t=%.9f s: ", simgrid_get_clock() - G.t0);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}


/* ---- time, compute, memory ---------------------------------------------------------------- */
static double s_now(rt_t *rt) { (void)rt; return simgrid_get_clock() - G.t0; }

static void s_compute(rt_t *rt, double flops) {
  (void)rt;
  if (flops > 0) sg_actor_execute(flops);
}

static void s_work(rt_t *rt, double bytes) {
  if (bytes <= 0) return;
  sg_exec_t e = sg_actor_exec_init(bytes);
  sg_exec_set_host(e, G.nodes[rt->node].mem);
  sg_exec_start(e);
  sg_exec_wait(e);
}

/* ---- roles ------------------------------------------------------------------------------------ */
static void role_main(int argc, char **argv) {
  (void)argc; (void)argv;
  role_t *r = sg_actor_self_get_data();
  r->fn(&r->rt, r->arg);
  r->finished = 1;
  if (r->is_main) G.mains_done++;
  else G.threads_done++;
}

static role_t *role_new(int node, int device, rt_fn fn, void *arg, int is_main) {
  role_t *r = calloc(1, sizeof *r);
  if (!r) simc_fatal("out of memory");
  r->rt.ops = &sim_ops;
  r->rt.node = node; r->rt.nnodes = G.nnodes;
  r->rt.device = device; r->rt.ndevices = G.ndev;
  r->rt.impl = r;
  r->fn = fn; r->arg = arg; r->is_main = is_main;
  r->next = G.roles; G.roles = r;
  return r;
}

static void role_start(role_t *r, const char *name, sg_host_t host) {
  r->actor = sg_actor_init(name, host);
  sg_actor_set_data(r->actor, r);
  sg_actor_ref(r->actor);
  sg_actor_start(r->actor, role_main, 0, NULL);
}

static void *s_thread_start(rt_t *rt, int device, rt_fn fn, void *arg) {
  if (device < -1 || device >= G.ndev)
    simc_fatal("thread_start: device %d out of range (node %d has %d devices)", device, rt->node, G.ndev);
  node_t *nd = &G.nodes[rt->node];
  role_t *r = role_new(rt->node, device, fn, arg, 0);
  char name[64];
  snprintf(name, sizeof name, "n%d-t%d", rt->node, G.nthreads_named++);
  G.threads_started++;
  role_start(r, name, device < 0 ? nd->cpu : nd->dev[device]);
  return r;
}

static void s_thread_join(rt_t *rt, void *thread) {
  (void)rt;
  role_t *r = thread;
  if (!r || r->is_main || !r->actor) simc_fatal("thread_join: not a thread from thread_start, or joined twice");
  sg_actor_join(r->actor, -1);
  sg_actor_unref(r->actor);
  r->actor = NULL;
}

static void *s_mutex_new(rt_t *rt) { (void)rt; return sg_mutex_init(); }
static void s_mutex_lock(rt_t *rt, void *m) { (void)rt; sg_mutex_lock(m); }
static void s_mutex_unlock(rt_t *rt, void *m) { (void)rt; sg_mutex_unlock(m); }
static void s_mutex_free(rt_t *rt, void *m) { (void)rt; if (m) sg_mutex_destroy(m); }
static void s_yield(rt_t *rt) { (void)rt; sg_actor_yield(); }

/* ---- messages ---------------------------------------------------------------------------------- */
/* A message of `bytes` whose payload is bytes [off, off + kept) of buf. */
static msg_t *msg_new(int src, int tag, const void *buf, size_t bytes, size_t off, size_t kept) {
  msg_t *m = malloc(sizeof *m + kept);
  if (!m) simc_fatal("out of memory for a %zu-byte message", kept);
  m->src = src; m->tag = tag; m->bytes = bytes; m->off = off; m->kept = kept; m->next = NULL;
  if (kept) memcpy(m->data, (const unsigned char *)buf + off, kept);
  return m;
}
/* What of a message of `bytes` travels: all of it, or its last CUT_BYTES in a timing-only run. */
static size_t cut_off(size_t bytes) { return G.cut && bytes > CUT_BYTES ? bytes - CUT_BYTES : 0; }
size_t simc_cut_floats(void) { return G.cut ? CUT_BYTES / sizeof(float) : 0; }

static void check_node(const rt_t *rt, int peer, const char *what) {
  if (peer < 0 || peer >= G.nnodes) simc_fatal("%s: node %d out of range 0..%d", what, peer, G.nnodes - 1);
  if (peer == rt->node) simc_fatal("%s: node %d to itself", what, peer);
}
static void check_tag(int tag, const char *what) {
  if (tag < 0 || tag >= MAX_TAG) simc_fatal("%s: tag %d out of range 0..%d", what, tag, MAX_TAG - 1);
}

static sg_mailbox_t p2p_box(int dst, int tag) {
  char name[48];
  snprintf(name, sizeof name, "p%d.%d", dst, tag);
  return sg_mailbox_by_name(name);
}

static void s_send(rt_t *rt, int dst, const void *buf, size_t bytes, int tag) {
  check_node(rt, dst, "send"); check_tag(tag, "send");
  const size_t off = cut_off(bytes);
  msg_t *m = msg_new(rt->node, tag, buf, bytes, off, bytes - off);
  sg_mailbox_put(p2p_box(dst, tag), m, (long)bytes);
}

static void deliver(msg_t *m, void *buf, size_t bytes, int node, const char *what) {
  if (m->bytes != bytes)
    simc_fatal("%s: node %d expected %zu bytes from node %d (tag %d) but %zu were sent", what, node, bytes,
               m->src, m->tag, m->bytes);
  if (m->kept) memcpy((unsigned char *)buf + m->off, m->data, m->kept);
  free(m);
}

/* Removes and returns the first stashed message matching (src or any if src < 0, tag). */
static msg_t *stash_take(node_t *nd, int src, int tag) {
  msg_t *prev = NULL;
  for (msg_t *m = nd->stash_head; m; prev = m, m = m->next) {
    if (m->tag != tag || (src >= 0 && m->src != src)) continue;
    if (prev) prev->next = m->next; else nd->stash_head = m->next;
    if (nd->stash_tail == m) nd->stash_tail = prev;
    m->next = NULL;
    return m;
  }
  return NULL;
}

static void stash_put(node_t *nd, msg_t *m) {
  m->next = NULL;
  if (nd->stash_tail) nd->stash_tail->next = m; else nd->stash_head = m;
  nd->stash_tail = m;
}

static void s_recv(rt_t *rt, int src, void *buf, size_t bytes, int tag) {
  check_node(rt, src, "recv"); check_tag(tag, "recv");
  node_t *nd = &G.nodes[rt->node];
  msg_t *m = stash_take(nd, src, tag);
  while (!m) {
    msg_t *got = sg_mailbox_get(p2p_box(rt->node, tag));
    if (got->src == src) m = got;
    else stash_put(nd, got);
  }
  deliver(m, buf, bytes, rt->node, "recv");
}

static int s_recv_any(rt_t *rt, void *buf, size_t bytes, int tag) {
  check_tag(tag, "recv_any");
  node_t *nd = &G.nodes[rt->node];
  msg_t *m = stash_take(nd, -1, tag);
  if (!m) m = sg_mailbox_get(p2p_box(rt->node, tag));
  int src = m->src;
  deliver(m, buf, bytes, rt->node, "recv_any");
  return src;
}

/* ---- the collective channel (used by sim_coll.c) ------------------------------------------------ */
static sg_mailbox_t coll_box(int src, int dst) {
  char name[48];
  snprintf(name, sizeof name, "c%d.%d", src, dst);
  return sg_mailbox_by_name(name);
}

void *simc_isend_part(rt_t *rt, int dst, const void *buf, size_t bytes, size_t off, size_t kept) {
  check_node(rt, dst, "collective send");
  msg_t *m = msg_new(rt->node, -1, buf, bytes, off, kept);
  return sg_mailbox_put_async(coll_box(rt->node, dst), m, (long)bytes);
}
void *simc_isend(rt_t *rt, int dst, const void *buf, size_t bytes) { return simc_isend_part(rt, dst, buf, bytes, 0, bytes); }

void simc_send_wait(void *handle) {
  if (sg_comm_wait(handle) != SG_OK) simc_fatal("collective send failed");
}

void simc_recv(rt_t *rt, int src, void *buf, size_t bytes) {
  check_node(rt, src, "collective recv");
  msg_t *m = sg_mailbox_get(coll_box(src, rt->node));
  deliver(m, buf, bytes, rt->node, "collective recv");
}

void simc_recv_add(rt_t *rt, int src, float *acc, size_t n) {
  check_node(rt, src, "collective recv");
  msg_t *m = sg_mailbox_get(coll_box(src, rt->node));
  if (m->bytes != n * sizeof(float))
    simc_fatal("collective recv: node %d expected %zu bytes from node %d but %zu were sent", rt->node,
               n * sizeof(float), src, m->bytes);
  const float *x = (const float *)m->data;   /* the floats [off, off + kept) of the n */
  float *a = acc + m->off / sizeof(float);
  for (size_t i = 0, k = m->kept / sizeof(float); i < k; i++) a[i] += x[i];
  free(m);
}

void *simc_irecv(rt_t *rt, int src, void **msgp) {
  check_node(rt, src, "collective recv");
  return sg_mailbox_get_async(coll_box(src, rt->node), msgp);
}

void simc_irecv_finish(rt_t *rt, void *handle, void **msgp, void *buf, size_t bytes) {
  if (sg_comm_wait(handle) != SG_OK) simc_fatal("collective recv failed");
  deliver(*msgp, buf, bytes, rt->node, "collective recv");
}

static const rt_ops_t sim_ops = {
    .name = "sim", .simulated = 1,
    .now = s_now, .compute = s_compute, .work = s_work,
    .thread_start = s_thread_start, .thread_join = s_thread_join,
    .mutex_new = s_mutex_new, .mutex_lock = s_mutex_lock, .mutex_unlock = s_mutex_unlock,
    .mutex_free = s_mutex_free, .yield = s_yield,
    .send = s_send, .recv = s_recv, .recv_any = s_recv_any,
    .allreduce = simc_allreduce, .reduce = simc_reduce, .bcast = simc_bcast,
    .allgatherv = simc_allgatherv, .reduce_scatterv = simc_reduce_scatterv, .barrier = simc_barrier,
};

/* ---- engine and platform --------------------------------------------------------------------- */
/* exit() called by a role (die(), simc_fatal) runs SimGrid 3.32's exit-time engine shutdown
 * from inside an actor, which aborts with a backtrace. This handler, registered after SimGrid's,
 * runs first: during a simulation it flushes stdio and leaves with the same status. */
static void exit_during_sim(int status, void *arg) {
  (void)arg;
  if (!G.active) return;
  fflush(stdout);
  fflush(stderr);
  _exit(status);
}

static void sg_init_once(void) {
  if (G.sg_inited) return;
  G.sg_inited = 1;
  const char *logc = env_get("PDL_SIM_LOG");
  xbt_log_control_set(logc && *logc ? logc : "root.thresh:warning");
  /* CM02: the plain max-min flow model (time = latency + size / bottleneck bandwidth, fair
   * sharing), without LV08's TCP slow-start factors; no TCP window bound; no reverse-direction
   * ACK traffic. docs/SIM.md "Network model" says why. The window is lifted with a huge gamma,
   * not with TCP-gamma:0: SimGrid 3.32's lazy update with gamma 0 ends one flow of a cycle of
   * simultaneous transfers after its latency alone (tests/test_sim_rt.c, six 4-cycles). */
  static char stack[64];
  snprintf(stack, sizeof stack, "--cfg=contexts/stack-size:%ld", env_long("PDL_SIM_STACK_KB", 8192L));
  /* PDL_SIM_CONTEXTS=thread runs every actor on its own OS thread (still one at a time): slower,
   * but ThreadSanitizer follows it, which it cannot through SimGrid's stack-switching contexts
   * (tests/t_threads.sh). */
  static char factory[96];
  const char *cx = env_get("PDL_SIM_CONTEXTS");
  snprintf(factory, sizeof factory, "--cfg=contexts/factory:%s", cx && *cx ? cx : "");
  static char *argv[] = {"pdl-sim", "--cfg=network/model:CM02", "--cfg=network/TCP-gamma:1e18",
                         "--cfg=network/crosstraffic:0", stack, NULL, NULL};
  int argc = 5;
  if (cx && *cx) argv[argc++] = factory;
  struct sigaction old_int, old_term;   /* SimGrid installs a SIGINT handler that exit(1)s: */
  sigaction(SIGINT, NULL, &old_int); sigaction(SIGTERM, NULL, &old_term);
  simgrid_init(&argc, argv);
  sigaction(SIGINT, &old_int, NULL); sigaction(SIGTERM, &old_term, NULL);   /* pdl's own stop handlers stay */
  on_exit(exit_during_sim, NULL);
}

static int resolve_hosts(const plat_t *p, char *err, size_t errlen) {
  G.nnodes = p->nnodes; G.ndev = p->ndevices;
  G.nodes = calloc((size_t)p->nnodes, sizeof(node_t));
  if (!G.nodes) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "out of memory");
  char name[64];
  for (int i = 0; i < p->nnodes; i++) {
    node_t *nd = &G.nodes[i];
    nd->dev = calloc((size_t)p->ndevices, sizeof(sg_host_t));
    if (!nd->dev) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "out of memory");
    if (p->kind == PLAT_MACHINE) {
      nd->cpu = sg_host_by_name("cpu");
      nd->mem = sg_host_by_name("mem");
      for (int d = 0; d < p->ndevices; d++) nd->dev[d] = nd->cpu;
    } else {
      snprintf(name, sizeof name, "n%d", i);
      nd->cpu = sg_host_by_name(name);
      snprintf(name, sizeof name, "n%d-mem", i);
      nd->mem = sg_host_by_name(name);
      for (int d = 0; d < p->ndevices; d++) {
        snprintf(name, sizeof name, "n%d-g%d", i, d);
        if (!(nd->dev[d] = sg_host_by_name(name)))
          return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "platform has no host %s", name);
      }
    }
    if (!nd->cpu) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "platform has no CPU host for node %d", i);
    if (!nd->mem) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "platform has no host n%d-mem (node memory)", i);
  }
  return 0;
}

/* Description of a file: platform from what was loaded (after a run: routes need a sealed
 * platform). */
static void describe_loaded_file(char *out, size_t n) {
  const node_t *n0 = &G.nodes[0];
  sg_host_t h1 = G.nnodes > 1 ? G.nodes[1].cpu : NULL;
  snprintf(out, n,
           "simgrid file %.160s: %d nodes x %d device(s) @ %.4g GFLOP/s (n0-g0); node CPU %d x %.4g GFLOP/s, "
           "memory %.4g GB/s; n0-n1 %s %.4g Gb/s %.6g us; CM02 flow model, no TCP window",
           G.file, G.nnodes, G.ndev, sg_host_get_speed(n0->dev[0]) / 1e9, sg_host_core_count(n0->cpu),
           sg_host_get_speed(n0->cpu) / 1e9, sg_host_get_speed(n0->mem) / 1e9, h1 ? "route" : "(one node)",
           h1 ? sg_host_get_route_bandwidth(n0->cpu, h1) * 8 / 1e9 : 0.0,
           h1 ? sg_host_get_route_latency(n0->cpu, h1) * 1e6 : 0.0);
}

/* SimGrid's platform parser aborts the whole process on a bad file (truncated XML, an unknown
 * link, a zero speed, a duplicate host, ...). So a file: platform is parsed first in a forked
 * child, with its own SimGrid, whose output is captured: if the child does not exit 0, its last
 * lines become our error message and this process never hands the file to SimGrid. */
static int check_platform_file(const char *path, char *err, size_t errlen) {
  int pfd[2];
  if (pipe(pfd) != 0) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "file:%s: pipe: %s", path, strerror(errno));
  fflush(stdout); fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { close(pfd[0]); close(pfd[1]); return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "file:%s: fork: %s", path, strerror(errno)); }
  if (pid == 0) {
    dup2(pfd[1], 1); dup2(pfd[1], 2); close(pfd[0]); close(pfd[1]);
    sg_init_once();
    simgrid_load_platform(path);
    _exit(0);
  }
  close(pfd[1]);
  char out[8192]; size_t len = 0; ssize_t k;
  while ((k = read(pfd[0], out + len, sizeof out - 1 - len)) > 0 || (k < 0 && errno == EINTR)) {
    if (k > 0) len += (size_t)k;
    if (len >= sizeof out - 1) { memmove(out, out + sizeof out / 2, len - sizeof out / 2); len -= sizeof out / 2; }
  }
  close(pfd[0]);
  out[len] = 0;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  /* SimGrid's own error line (its "[...CRITICAL] " or "[...ERROR] " message, before the backtrace),
   * else the first line it printed */
  char *last = out;
  for (char *q = out; *q; ) {
    char *nl = strchr(q, '\n'); if (nl) *nl = 0;
    if (strstr(q, "CRITICAL]") || strstr(q, "ERROR]") || strstr(q, "rror:")) { last = q; break; }
    if (!nl) break;
    *nl = '\n'; q = nl + 1;
  }
  char *nl = strchr(last, '\n'); if (nl) *nl = 0;
  char *tag = strstr(last, "] ");   /* drop "[0.000000] file.cpp:99: [root/CRITICAL] " */
  while (tag && strstr(tag + 2, "] ")) tag = strstr(tag + 2, "] ");
  if (tag) last = tag + 2;
  return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file:%s: SimGrid cannot load it (%s%s): %s", path,
                       WIFSIGNALED(st) ? "its parser aborted, signal " : "exit ",
                       WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : (WEXITSTATUS(st) ? "non-zero" : "0"),
                       *last ? last : "no message");
}

static int load_platform(const plat_t *p, char *err, size_t errlen) {
  if (p->kind == PLAT_FILE && !G.loaded) {
    int rc = check_platform_file(p->file, err, errlen);
    if (rc) return rc;
  }
  sg_init_once();
  if (p->kind == PLAT_FILE) {
    simgrid_load_platform(p->file);
  } else {
    const char *tmpdir = env_get("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/pdlsim-XXXXXX.xml", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(path, 4);
    if (fd < 0) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "temporary platform file %s: %s", path, strerror(errno));
    close(fd);
    int rc = plat_write_xml(p, path, err, errlen);
    if (rc == 0) simgrid_load_platform(path);
    unlink(path);
    if (rc) return rc;
  }
  G.loaded = 1;
  int rc = resolve_hosts(p, err, errlen);
  if (rc) { G.broken = 1; return rc; }
  G.desc_file = p->kind == PLAT_FILE;   /* routes are known once the run sealed the platform */
  if (!G.desc_file) plat_describe(p, G.desc, sizeof G.desc);
  else snprintf(G.file, sizeof G.file, "%s", p->file);
  return 0;
}

/* ---- exported entry points ----------------------------------------------------------------------- */
int pdl_sim_abi(void) { return PDL_SIM_ABI; }

int pdl_sim_platform_shape(const char *spec, int nnodes_hint, int *nnodes, int *ndevices, char *err,
                           size_t errlen) {
  plat_t p;
  int rc = plat_parse(spec, nnodes_hint, 0, &p, err, errlen);
  if (rc) return rc;
  *nnodes = p.nnodes; *ndevices = p.ndevices;
  plat_free(&p);
  return 0;
}

int pdl_sim_platform_xml(const char *spec, int nnodes_hint, double device_gflops, const char *path, char *desc,
                         size_t desclen, char *err, size_t errlen) {
  plat_t p;
  int rc = plat_parse(spec, nnodes_hint, device_gflops, &p, err, errlen);
  if (rc) return rc;
  rc = plat_write_xml(&p, path, err, errlen);
  if (rc == 0 && desc && desclen) plat_describe(&p, desc, desclen);
  plat_free(&p);
  return rc;
}

int pdl_sim_run(rt_sim_cfg_t *cfg, int nnodes_hint, rt_fn node_main, void *arg, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (G.active) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "rt_sim_run called from inside a simulation");
  if (G.broken)
    return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "an earlier simulation in this process failed; start a new process");
  plat_t p;
  int rc = plat_parse(cfg->platform, nnodes_hint, cfg->device_gflops, &p, err, errlen);
  if (rc) return rc;
  char key[sizeof G.key];
  snprintf(key, sizeof key, "%s|%d|%.17g", cfg->platform, nnodes_hint, cfg->device_gflops);
  if (G.loaded && strcmp(key, G.key) != 0) {
    plat_free(&p);
    return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL,
                  "SimGrid loads one platform per process: this process already simulated '%s'; run '%s' in a "
                  "new process",
                  G.key, cfg->platform);
  }
  if (!G.loaded) {
    rc = load_platform(&p, err, errlen);
    if (rc) { plat_free(&p); return rc; }
    snprintf(G.key, sizeof G.key, "%s", key);
  }
  plat_free(&p);

  G.active = 1;
  G.cut = cfg->timing_only != 0;
  G.roles = NULL;
  G.mains_done = G.threads_started = G.threads_done = G.nthreads_named = 0;
  G.t0 = simgrid_get_clock();
  char name[32];
  for (int i = 0; i < G.nnodes; i++) {
    role_t *r = role_new(i, -1, node_main, arg, 1);
    snprintf(name, sizeof name, "n%d", i);
    role_start(r, name, G.nodes[i].cpu);
  }
  struct sigaction old_int, old_term;   /* in case the engine installs its handlers late */
  sigaction(SIGINT, NULL, &old_int); sigaction(SIGTERM, NULL, &old_term);
  simgrid_run();
  sigaction(SIGINT, &old_int, NULL); sigaction(SIGTERM, &old_term, NULL);
  G.active = 0;
  if (G.desc_file && !G.desc[0]) describe_loaded_file(G.desc, sizeof G.desc);
  snprintf(cfg->platform_desc, sizeof cfg->platform_desc, "%s", G.desc);
  int stashed = 0;
  for (int i = 0; i < G.nnodes; i++)
    for (msg_t *m = G.nodes[i].stash_head; m; m = m->next) stashed++;
  if (G.mains_done != G.nnodes || G.threads_done != G.threads_started) {
    G.broken = 1;  /* blocked actors keep their roles: leave them be */
    return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL,
                  "simulation deadlocked at t=%.9f s: %d of %d node roles and %d of %d threads never finished "
                  "(blocked in recv, a collective, lock or join)",
                  simgrid_get_clock() - G.t0, G.nnodes - G.mains_done, G.nnodes,
                  G.threads_started - G.threads_done, G.threads_started);
  }
  for (role_t *r = G.roles, *nx; r; r = nx) {
    nx = r->next;
    if (r->actor) sg_actor_unref(r->actor);
    free(r);
  }
  G.roles = NULL;
  if (stashed) {
    G.broken = 1;
    return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "%d message(s) were sent but never received", stashed);
  }
  return 0;
}
