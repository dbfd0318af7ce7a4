/* platform.c — sim platform specs: parsing, SimGrid XML generation, one-line description.
 *
 * Grammar (docs/SIM.md has the reasons behind every default):
 *   spec    := KIND ":" [key "=" value ("," key "=" value)*]  |  "file:" PATH
 *   cluster:nodes=N,gpus=G[,rate=GFLOPS][,pcie=GBps][,pcielat=us][,ib=Gbps][,lat=us]
 *           [,cpu=GFLOPS][,cores=C][,membw=GBps]
 *       N nodes x G devices (a device is its own host), devices on their own full-duplex
 *       PCIe-class link to the node, nodes on one full-duplex InfiniBand-class link each to a
 *       non-blocking switch. Defaults model TSUBAME-KFC/DL (PP-ASGD paper): K80 die
 *       rate=1500, pcie=12 GB/s 1 us, ib=56 Gb/s, lat=0.5 us per node link (1 us node to node),
 *       2x Xeon E5-2620 v2: cores=12, cpu=16.8 GFLOP/s per core, membw=40 GB/s.
 *   links:k=K,bw=LIST[,lat=ms][,rate=..][,pcie=..][,pcielat=..][,cpu=..][,cores=..][,membw=..]
 *       K nodes with 1 device each; node i on its own link of bandwidth LIST[i] and latency lat
 *       (default 5 ms) to a central switch (node to node: lat_i + lat_j, min bandwidth).
 *       LIST := item ("+" item)*, item := VALUE["*"COUNT] (COUNT nodes with that bandwidth);
 *       a single item without COUNT applies to all K. Bandwidth default unit Gbps.
 *       k may be left out: it is then the sum of the counts.
 *       rates=LIST (the same list grammar, GFLOP/s; default unit Gf) gives node i's device its own
 *       rate (heterogeneous compute; node 0 first); without it every device has rate.
 *   machine:ranks=R[,gflops=X][,membw=GBps][,cores=C][,shmbw=GBps][,shmlat=us][,load=L]
 *       this machine as R nodes with 1 device each, all roles on one host of C cores
 *       (default: online CPUs) at X GFLOP/s per core (default 80); SimGrid shares the cores among
 *       whatever is computing at each instant (each activity gets min(X, C*X/active)).
 *       load=L (default 0): L other users' sessions keep the CPUs busy. Linux's autogroup
 *       scheduler shares the CPUs fairly among sessions, not processes, so the R ranks (one
 *       mpirun, one session) get K = C/(1+L) cores' worth together, however many they are: the
 *       host gets ceil(K) cores of K*X/ceil(K) each (K <= 1: one core of K*X shared by all ranks).
 *       Messages between ranks cross one shared loopback (shmbw default membw/2, 1 us);
 *       memory traffic (rt work) shares one memory of membw (default 10 GB/s).
 *   file:PATH  a SimGrid XML platform following the host naming of sim_internal.h.
 * Values take an optional unit: rates f/kf/Mf/Gf/Tf, bandwidths bps/Kbps/Mbps/Gbps/Tbps (bits)
 * or Bps/KBps/MBps/GBps/TBps (bytes), times s/ms/us/ns; a bare number is in the key's unit
 * above. nodes/k/ranks may be left out when the caller gives a node count (nnodes_hint). */
#include <sys/stat.h>
#include "sim/sim_internal.h"
#include "rt/pdlsim.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_NODES 4096
#define MAX_DEVICES_PER_NODE 64
#define MAX_HOSTS 16384

/* Defaults (docs/SIM.md "Platforms" gives the sources). */
#define K80_DIE_GFLOPS 1500.0     /* effective: ~34% of a K80 die's 4.37 TFLOP/s boost peak */
#define PCIE3_X16_GBPS 12.0       /* effective of 15.75 GB/s raw */
#define PCIE_LAT_US 1.0
#define FDR_IB_GBITS 56.0
#define FDR_LINK_LAT_US 0.5
#define E5_2620V2_CORE_GFLOPS 16.8 /* 2.1 GHz x 16 SP flop/cycle (AVX) x 0.5 */
#define E5_2620V2_CORES 12
#define KFC_MEMBW_GBPS 40.0
#define LINKS_LAT_MS 5.0
#define MACHINE_CORE_GFLOPS 80.0  /* docs/DESIGN.md §7: per-image GEMMs of the reference net, 1 thread */
#define MACHINE_MEMBW_GBPS 10.0   /* single-thread axpy here, ~9-10 GB/s */
#define MACHINE_SHM_LAT_US 1.0

int pdlsim_seterr(char *err, size_t n, int code, const char *fmt, ...) {
  if (err && n) {
    va_list ap; va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return code;
}

typedef enum { Q_RATE, Q_BW, Q_TIME, Q_COUNT, Q_NUM } qty_t; /* Q_NUM: plain number >= 0 */
typedef struct { const char *suffix; double mult; } unit_t;
static const unit_t RATE_UNITS[] = {{"Tf", 1e12}, {"Gf", 1e9}, {"Mf", 1e6}, {"kf", 1e3}, {"f", 1}, {0, 0}};
static const unit_t BW_UNITS[] = {{"Tbps", 1e12 / 8}, {"Gbps", 1e9 / 8}, {"Mbps", 1e6 / 8},
                                  {"Kbps", 1e3 / 8}, {"bps", 1.0 / 8}, {"TBps", 1e12}, {"GBps", 1e9},
                                  {"MBps", 1e6}, {"KBps", 1e3}, {"Bps", 1}, {0, 0}};
static const unit_t TIME_UNITS[] = {{"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"s", 1}, {0, 0}};

/* Parses "VALUE[unit]" of quantity q; bare numbers are multiplied by defmult. Returns 0 ok. */
static int parse_qty(const char *s, size_t len, qty_t q, double defmult, double *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len); buf[len] = 0;
  char *end; errno = 0;
  double v = strtod(buf, &end);
  if (end == buf || errno || !isfinite(v)) return -1;
  if (*end == 0) { *out = v * defmult; return 0; }
  const unit_t *u = q == Q_RATE ? RATE_UNITS : q == Q_BW ? BW_UNITS : q == Q_TIME ? TIME_UNITS : NULL;
  for (; u && u->suffix; u++)
    if (strcmp(end, u->suffix) == 0) { *out = v * u->mult; return 0; }
  return -1;
}

static int parse_int(const char *s, size_t len, long lo, long hi, long *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len); buf[len] = 0;
  char *end; errno = 0;
  long v = strtol(buf, &end, 10);
  if (*end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* One key of a kind: where it lands in plat_t and how it is read. */
/* lo/hi bound counts; hi bounds quantities (in SI units). */
typedef struct {
  const char *key; qty_t q; double defmult; double lo, hi; size_t off; const char *unit_help;
} keydef_t;
#define OFF(f) offsetof(plat_t, f)
#define NO_OFF ((size_t)-1)

static const keydef_t CLUSTER_KEYS[] = {
    {"nodes", Q_COUNT, 1, 1, MAX_NODES, OFF(nnodes), "a node count"},
    {"gpus", Q_COUNT, 1, 1, MAX_DEVICES_PER_NODE, OFF(ndevices), "devices per node"},
    {"rate", Q_RATE, 1e9, 1e3, 1e18, OFF(dev_flops), "GFLOP/s per device"},
    {"pcie", Q_BW, 1e9, 1, 1e15, OFF(pcie_bw), "GB/s"},
    {"pcielat", Q_TIME, 1e-6, 0, 10, OFF(pcie_lat), "us"},
    {"ib", Q_BW, 1e9 / 8, 1, 1e15, NO_OFF, "Gb/s"},
    {"lat", Q_TIME, 1e-6, 0, 10, OFF(net_lat), "us per node link"},
    {"cpu", Q_RATE, 1e9, 1e3, 1e18, OFF(cpu_flops), "GFLOP/s per core"},
    {"cores", Q_COUNT, 1, 1, 4096, OFF(cpu_cores), "a core count"},
    {"membw", Q_BW, 1e9, 1, 1e15, OFF(membw), "GB/s"},
    {0, 0, 0, 0, 0, 0, 0}};
static const keydef_t LINKS_KEYS[] = {
    {"k", Q_COUNT, 1, 1, MAX_NODES, OFF(nnodes), "a node count"},
    {"bw", Q_BW, 1e9 / 8, 1, 1e15, NO_OFF, "a list VALUE[*COUNT]+... in Gb/s"},
    {"rates", Q_RATE, 1e9, 1e3, 1e18, NO_OFF, "a list VALUE[*COUNT]+... of device rates in GFLOP/s"},
    {"lat", Q_TIME, 1e-3, 0, 100, OFF(net_lat), "ms per node link"},
    {"rate", Q_RATE, 1e9, 1e3, 1e18, OFF(dev_flops), "GFLOP/s per device"},
    {"pcie", Q_BW, 1e9, 1, 1e15, OFF(pcie_bw), "GB/s"},
    {"pcielat", Q_TIME, 1e-6, 0, 10, OFF(pcie_lat), "us"},
    {"cpu", Q_RATE, 1e9, 1e3, 1e18, OFF(cpu_flops), "GFLOP/s per core"},
    {"cores", Q_COUNT, 1, 1, 4096, OFF(cpu_cores), "a core count"},
    {"membw", Q_BW, 1e9, 1, 1e15, OFF(membw), "GB/s"},
    {0, 0, 0, 0, 0, 0, 0}};
static const keydef_t MACHINE_KEYS[] = {
    {"ranks", Q_COUNT, 1, 1, MAX_NODES, OFF(nnodes), "a rank count"},
    {"gflops", Q_RATE, 1e9, 1e3, 1e18, OFF(dev_flops), "GFLOP/s per core"},
    {"membw", Q_BW, 1e9, 1, 1e15, OFF(membw), "GB/s"},
    {"cores", Q_COUNT, 1, 1, 4096, OFF(cpu_cores), "a core count"},
    {"shmbw", Q_BW, 1e9, 1, 1e15, OFF(shm_bw), "GB/s"},
    {"shmlat", Q_TIME, 1e-6, 0, 10, OFF(shm_lat), "us"},
    {"load", Q_NUM, 1, 0, 256, OFF(bg_load), "other busy sessions"},
    {0, 0, 0, 0, 0, 0, 0}};

/* "1Gbps*2+10Gbps*6" or "10Gbps": fills p->net_bw (allocated here) for k nodes (k = 0: the
 * sum of the counts decides). */
static int parse_list(const char *what, qty_t q, double scale, const char *eg, const char *s, size_t len, int *k,
                      double **out, char *err, size_t errlen) {
  double vals[MAX_NODES]; long counts[MAX_NODES]; int nitems = 0; long total = 0; int bare = 0;
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && s[j] != '+') j++;
    const char *item = s + i; size_t ilen = j - i;
    const char *star = memchr(item, '*', ilen);
    size_t vlen = star ? (size_t)(star - item) : ilen;
    if (nitems >= MAX_NODES)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s: more than %d items", what, MAX_NODES);
    if (parse_qty(item, vlen, q, scale, &vals[nitems]) || vals[nitems] <= 0)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s: bad value '%.*s' (want e.g. %s)", what, (int)vlen, item, eg);
    if (star) {
      if (parse_int(star + 1, ilen - vlen - 1, 1, MAX_NODES, &counts[nitems]))
        return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s: bad count in '%.*s'", what, (int)ilen, item);
    } else {
      counts[nitems] = 1; bare++;
    }
    total += counts[nitems];
    nitems++;
    i = j + 1;
  }
  if (nitems == 1 && bare == 1) {          /* one value for all */
    if (*k <= 0) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "links: a single %s needs k=K", what);
    total = *k; counts[0] = *k;
  }
  if (total > MAX_NODES)
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s: more than %d nodes", what, MAX_NODES);
  if (*k > 0 && total != *k)
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s: the list gives %ld nodes but k=%d", what, total, *k);
  *k = (int)total;
  double *bw = malloc(sizeof(double) * (size_t)total);
  if (!bw) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "out of memory");
  int pos = 0;
  for (int it = 0; it < nitems; it++)
    for (long c = 0; c < counts[it]; c++) bw[pos++] = vals[it];
  *out = bw;
  return 0;
}

static void set_defaults(plat_t *p) {
  p->dev_flops = K80_DIE_GFLOPS * 1e9;
  p->cpu_flops = E5_2620V2_CORE_GFLOPS * 1e9;
  p->cpu_cores = E5_2620V2_CORES;
  p->membw = KFC_MEMBW_GBPS * 1e9;
  p->pcie_bw = PCIE3_X16_GBPS * 1e9;
  p->pcie_lat = PCIE_LAT_US * 1e-6;
  p->net_lat = FDR_LINK_LAT_US * 1e-6;
  if (p->kind == PLAT_LINKS) p->net_lat = LINKS_LAT_MS * 1e-3;
  if (p->kind == PLAT_MACHINE) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    p->cpu_cores = c > 0 ? (int)c : 1;
    p->dev_flops = MACHINE_CORE_GFLOPS * 1e9;
    p->membw = MACHINE_MEMBW_GBPS * 1e9;
    p->shm_lat = MACHINE_SHM_LAT_US * 1e-6;
  }
}

/* Host names in a file: platform: n<i> for i = 0.. and n0-g<d> for d = 0.. (checked fully when
 * the platform is loaded). */
static int file_shape(const char *path, int *nnodes, int *ndev, char *err, size_t errlen) {
  struct stat st;   /* a FIFO would block fopen, a directory reads as empty */
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file:%s: not a regular file", path);
  FILE *f = fopen(path, "r");
  if (!f) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file:%s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (sz <= 0 || sz > (64L << 20)) {
    fclose(f);
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file:%s: empty or larger than 64 MiB", path);
  }
  char *txt = malloc((size_t)sz + 1);
  if (!txt) { fclose(f); return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "out of memory"); }
  size_t got = fread(txt, 1, (size_t)sz, f);
  fclose(f);
  txt[got] = 0;
  /* SimGrid accepts a zero or negative speed or bandwidth and then aborts in the middle of the
   * run ("The Impossible Did Happen"): refuse them here, naming the attribute */
  static const char *const positive[] = {"speed=\"", "bandwidth=\""};
  for (int a = 0; a < 2; a++)
    for (const char *q = txt; (q = strstr(q, positive[a])) != NULL; q++) {
      const char *v = q + strlen(positive[a]);
      char *end; double x = strtod(v, &end);
      if (end == v || !(x > 0)) {
        int vl = 0; while (v[vl] && v[vl] != '"' && vl < 40) vl++;
        free(txt);
        return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file:%s: %s%.*s\": must be a positive number with a unit",
                             path, positive[a], vl, v);
      }
    }
  int n = 0, g = 0;
  char pat[64];
  for (;;) {
    snprintf(pat, sizeof pat, "id=\"n%d\"", n);
    if (!strstr(txt, pat)) break;
    n++;
  }
  for (;;) {
    snprintf(pat, sizeof pat, "id=\"n0-g%d\"", g);
    if (!strstr(txt, pat)) break;
    g++;
  }
  free(txt);
  if (n == 0 || g == 0)
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC,
                  "file:%s: no hosts named n0, n1, ... with devices n0-g0, ... (see docs/SIM.md)", path);
  *nnodes = n; *ndev = g;
  return 0;
}

/* Named platforms (issue 47): the papers' clusters, as a generated kind with keys fixed in front of the
 * user's (which may override any of them: a later key wins) and device and CPU defaults that are
 * not "given in the spec" (so calibration or a phantom cost model still sets the device rate).
 * Sources (docs/SIM.md, "Named platforms"):
 *   tsubame-kfc  TSUBAME-KFC/DL, PP-ASGD's ImageNet runs (the paper's footnote 4: 2 Xeon E5-2620 v2 and
 *                4 K80 = 8 GPUs per node, FDR InfiniBand): cluster:'s own defaults, 8 dies per node.
 *   tsubame3     TSUBAME3.0, the K-FAC paper's (its Table 1: 2 Xeon E5-2680 v4 of 14 cores at 2.4 GHz,
 *                4 P100 (SXM2), 4 Omni-Path HFI 100 Gb/s): 400 Gb/s per node, 0.5 us per link
 *                (~1 us MPI latency node to node); 28 cores x 38.4 GFLOP/s (2.4 GHz x 32 SP flop/cycle
 *                AVX2 FMA, half of it, as cluster:'s CPU); memory 61.4 GB/s (2 x 4 channels DDR4-2400
 *                = 153.6 GB/s peak, 40% as cluster:'s); device 3638 GFLOP/s = 10.6 TFLOP/s (P100 SXM2
 *                datasheet) x 1500/4370, the share of peak cluster:'s K80 default assumes.
 *   gossip8      the gossip paper's 8 nodes (its Sec. 5: narrow nodes 1.0 Gb/s, wide 10 Gb/s, delay
 *                5.0 ms on every node; Fig. 1a: node IDs below 6 wide): links:k=8 with 6 wide nodes
 *                first, lat 5 ms per node link; its Table 1 (Xeon E5-2698 v4: 20 cores at 2.2 GHz,
 *                P100-PCIE-16GB): 20 cores x 35.2 GFLOP/s, memory 30.7 GB/s (4 channels DDR4-2400,
 *                40%), device 3192 GFLOP/s = 9.3 TFLOP/s (P100 PCIe datasheet) x 1500/4370. */
typedef struct { const char *name, *expand; double dev_gflops, cpu_gflops, membw_gbps; int cores; } named_t;
static const named_t NAMED[] = {
  {"tsubame-kfc", "cluster:gpus=8", K80_DIE_GFLOPS, E5_2620V2_CORE_GFLOPS, KFC_MEMBW_GBPS, E5_2620V2_CORES},
  {"tsubame3", "cluster:gpus=4,ib=400,lat=0.5", 10600.0 * K80_DIE_GFLOPS / 4370.0, 38.4, 61.4, 28},
  {"gossip8", "links:k=8,bw=10Gbps*6+1Gbps*2,lat=5ms", 9300.0 * K80_DIE_GFLOPS / 4370.0, 35.2, 30.7, 20},
};

int plat_parse(const char *spec, int nnodes_hint, double device_gflops, plat_t *p, char *err,
               size_t errlen) {
  memset(p, 0, sizeof *p);
  if (!spec || !*spec)
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC,
                  "empty sim platform (want cluster:..., links:..., machine:..., file:PATH, or a named one: "
                  "tsubame-kfc:, tsubame3:, gossip8:)");
  const named_t *named = NULL;
  char expanded[1200];
  for (size_t i = 0; i < sizeof NAMED / sizeof NAMED[0]; i++) {
    size_t nl = strlen(NAMED[i].name);
    if (strncmp(spec, NAMED[i].name, nl) || (spec[nl] && spec[nl] != ':')) continue;
    const char *user = spec[nl] ? spec + nl + 1 : "";
    if ((size_t)snprintf(expanded, sizeof expanded, "%s%s%s", NAMED[i].expand, *user ? "," : "", user) >= sizeof expanded)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s: spec too long", NAMED[i].name);
    named = &NAMED[i];
    spec = expanded;
  }
  const char *colon = strchr(spec, ':');
  size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
  const char *rest = colon ? colon + 1 : "";
  const keydef_t *keys = NULL;
  if (klen == 7 && !strncmp(spec, "cluster", 7)) { p->kind = PLAT_CLUSTER; keys = CLUSTER_KEYS; }
  else if (klen == 5 && !strncmp(spec, "links", 5)) { p->kind = PLAT_LINKS; keys = LINKS_KEYS; }
  else if (klen == 7 && !strncmp(spec, "machine", 7)) { p->kind = PLAT_MACHINE; keys = MACHINE_KEYS; }
  else if (klen == 4 && !strncmp(spec, "file", 4)) p->kind = PLAT_FILE;
  else
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC,
                  "unknown sim platform kind '%.*s' (want cluster, links, machine or file)",
                  (int)klen, spec);
  if (p->kind == PLAT_FILE) {
    if (!*rest) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file: needs a path (file:PATH)");
    if (strlen(rest) >= sizeof p->file)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file: path too long");
    strcpy(p->file, rest);
    int rc = file_shape(p->file, &p->nnodes, &p->ndevices, err, errlen);
    if (rc) return rc;
    if (nnodes_hint > 0 && nnodes_hint != p->nnodes)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "file:%s describes %d nodes but %d were asked for",
                    p->file, p->nnodes, nnodes_hint);
    return 0;
  }
  set_defaults(p);
  if (named) {
    p->dev_flops = named->dev_gflops * 1e9; p->cpu_flops = named->cpu_gflops * 1e9;
    p->membw = named->membw_gbps * 1e9; p->cpu_cores = named->cores;
  }
  double ib_bw = FDR_IB_GBITS * 1e9 / 8;
  const char *bwlist = NULL, *ratelist = NULL; size_t bwlen = 0, ratelen = 0;
  const char *s = rest;
  while (*s) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    const char *eq = memchr(s, '=', len);
    if (!eq || eq == s)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%.*s: bad item '%.*s' (want key=value)",
                    (int)klen, spec, (int)len, s);
    size_t kl = (size_t)(eq - s);
    const char *v = eq + 1; size_t vl = len - kl - 1;
    const keydef_t *kd = keys;
    while (kd->key && !(strlen(kd->key) == kl && !strncmp(kd->key, s, kl))) kd++;
    if (!kd->key) {
      char known[256] = ""; size_t kn = 0;
      for (const keydef_t *q = keys; q->key; q++)
        kn += (size_t)snprintf(known + kn, sizeof known - kn, "%s%s", kn ? ", " : "", q->key);
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%.*s: unknown key '%.*s' (known: %s)", (int)klen,
                    spec, (int)kl, s, known);
    }
    if (!strcmp(kd->key, "bw")) { bwlist = v; bwlen = vl; }
    else if (!strcmp(kd->key, "rates")) { ratelist = v; ratelen = vl; }
    else if (kd->q == Q_COUNT) {
      long c;
      if (parse_int(v, vl, (long)kd->lo, (long)kd->hi, &c))
        return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s=%.*s: want %s in %.0f..%.0f", kd->key, (int)vl, v,
                      kd->unit_help, kd->lo, kd->hi);
      *(int *)((char *)p + kd->off) = (int)c;
    } else {
      double x;
      int bad = parse_qty(v, vl, kd->q, kd->defmult, &x) || x > kd->hi ||
                (kd->q == Q_TIME || kd->q == Q_NUM ? x < 0 : x <= 0);
      if (bad && kd->q == Q_NUM)
        return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s=%.*s: want %s, a number in %.0f..%.0f", kd->key, (int)vl,
                      v, kd->unit_help, kd->lo, kd->hi);
      if (bad)
        return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%s=%.*s: want a %s number in %s (or with a unit)",
                      kd->key, (int)vl, v, kd->q == Q_TIME ? "non-negative" : "positive", kd->unit_help);
      if (!strcmp(kd->key, "ib")) ib_bw = x;
      else *(double *)((char *)p + kd->off) = x;
      if (kd->off == OFF(dev_flops)) p->dev_rate_from_spec = 1;
    }
    s += len;
    if (*s == ',') {
      s++;
      if (!*s) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%.*s: trailing comma", (int)klen, spec);
    }
  }
  if (!p->dev_rate_from_spec && device_gflops > 0) p->dev_flops = device_gflops * 1e9;
  if (p->nnodes == 0 && p->kind == PLAT_LINKS && bwlist) {
    /* k from the list */
  } else if (p->nnodes == 0) {
    if (nnodes_hint <= 0)
      return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%.*s: needs %s=N", (int)klen, spec,
                    p->kind == PLAT_CLUSTER ? "nodes" : p->kind == PLAT_LINKS ? "k" : "ranks");
    p->nnodes = nnodes_hint;
  }
  if (p->kind == PLAT_LINKS) {
    if (!bwlist) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "links: needs bw=LIST (e.g. bw=1Gbps*2+10Gbps*6)");
    int k = p->nnodes;
    int rc = parse_list("bw", Q_BW, 1e9 / 8, "1Gbps, 10Gbps*6, 1Gbps*2+10Gbps*6", bwlist, bwlen, &k, &p->net_bw, err, errlen);
    if (rc) return rc;
    if (ratelist) {
      int kr = k;
      rc = parse_list("rates", Q_RATE, 1e9, "100Gf, 50Gf*4+100Gf*4", ratelist, ratelen, &kr, &p->dev_flops_node, err, errlen);
      if (rc) { free(p->net_bw); p->net_bw = NULL; return rc; }
    }
    p->nnodes = k;
    p->ndevices = 1;
  }
  if (nnodes_hint > 0 && nnodes_hint != p->nnodes) {
    plat_free(p);
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%.*s describes %d nodes but %d were asked for", (int)klen,
                  spec, p->nnodes, nnodes_hint);
  }
  if (p->kind == PLAT_CLUSTER) {
    if (p->ndevices == 0) return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "cluster: needs gpus=G");
    p->net_bw = malloc(sizeof(double) * (size_t)p->nnodes);
    if (!p->net_bw) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "out of memory");
    for (int i = 0; i < p->nnodes; i++) p->net_bw[i] = ib_bw;
  }
  if (p->kind == PLAT_MACHINE) {
    p->ndevices = 1;
    if (p->shm_bw == 0) p->shm_bw = p->membw / 2;
  }
  if ((long)p->nnodes * (p->ndevices + 2) > MAX_HOSTS) {
    plat_free(p);
    return pdlsim_seterr(err, errlen, PDL_SIM_EBADSPEC, "%.*s: %d nodes x %d devices is more than %d hosts",
                  (int)klen, spec, p->nnodes, p->ndevices, MAX_HOSTS);
  }
  return 0;
}

void plat_free(plat_t *p) {
  free(p->net_bw);
  p->net_bw = NULL;
  free(p->dev_flops_node);
  p->dev_flops_node = NULL;
}

/* The shortest %g text that reads back as the same double (the XML stays exact and readable). */
static const char *num(char *buf, double v) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  return buf;
}

static void link_xml(FILE *f, const char *id, double bw, double lat, const char *policy) {
  char a[32], b[32];
  fprintf(f, "  <link id=\"%s\" bandwidth=\"%sBps\" latency=\"%ss\" sharing_policy=\"%s\"/>\n", id, num(a, bw),
          num(b, lat), policy);
}
static void route_xml(FILE *f, const char *a, const char *b, const char *link) {
  fprintf(f, "  <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\"><link_ctn id=\"%s\" direction=\"UP\"/></route>\n",
          a, b, link);
  fprintf(f, "  <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\"><link_ctn id=\"%s\" direction=\"DOWN\"/></route>\n",
          b, a, link);
}

/* machine: the cores and per-core speed the ranks' host gets: all C cores at X without load;
 * with load=L, K = C/(1+L) cores' worth as ceil(K) cores of K*X/ceil(K) (see the header). */
static void machine_cpu(const plat_t *p, int *cores, double *speed) {
  *cores = p->cpu_cores; *speed = p->dev_flops;
  if (p->bg_load <= 0) return;
  double K = p->cpu_cores / (1.0 + p->bg_load);
  int n = (int)K;
  if (n < K) n++;
  *cores = n; *speed = p->dev_flops * K / n;
}

int plat_write_xml(const plat_t *p, const char *path, char *err, size_t errlen) {
  if (p->kind == PLAT_FILE)
    return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "file: platforms are already XML (%s)", p->file);
  FILE *f = fopen(path, "w");
  if (!f) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "%s: %s", path, strerror(errno));
  char desc[512], nb[32];
  plat_describe(p, desc, sizeof desc);
  fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
             "<!-- generated by pdlbench libpdlsim (src/sim/platform.c): %s -->\n"
             "<!-- Run it with the sim platform spec file:PATH. Speeds (f = flop/s; n<i>-mem: bytes/s), bandwidths\n"
             "     and latencies may be edited; keep the host names: n<i> node CPU, n<i>-g<d> device d of node i,\n"
             "     n<i>-mem node memory (docs/SIM.md). -->\n<platform version=\"4.1\">\n",
          desc);
  if (p->kind == PLAT_MACHINE) {
    /* One host for all ranks: SimGrid shares its cores among the running activities. */
    fprintf(f, "<zone id=\"machine\" routing=\"Full\">\n");
    int cores; double speed;
    machine_cpu(p, &cores, &speed);
    fprintf(f, "  <host id=\"cpu\" speed=\"%sf\" core=\"%d\"/>\n", num(nb, speed), cores);
    fprintf(f, "  <host id=\"mem\" speed=\"%sf\"/>\n", num(nb, p->membw));
    link_xml(f, "shm", p->shm_bw, p->shm_lat, "SHARED");
    fprintf(f, "  <route src=\"cpu\" dst=\"cpu\"><link_ctn id=\"shm\"/></route>\n");
  } else {
    /* A tree: device -pcie- node router -net- switch; the node CPU reaches its router through a
     * FATPIPE bus that never limits. Dijkstra routing computes routes on demand. */
    fprintf(f, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
    fprintf(f, "  <router id=\"sw\"/>\n");
    char a[64], b[64], l[64];
    for (int i = 0; i < p->nnodes; i++) {
      fprintf(f, "  <host id=\"n%d\" speed=\"%sf\" core=\"%d\"/>\n", i, num(nb, p->cpu_flops), p->cpu_cores);
      fprintf(f, "  <host id=\"n%d-mem\" speed=\"%sf\"/>\n", i, num(nb, p->membw));
      for (int d = 0; d < p->ndevices; d++)
        fprintf(f, "  <host id=\"n%d-g%d\" speed=\"%sf\"/>\n", i, d, num(nb, p->dev_flops_node ? p->dev_flops_node[i] : p->dev_flops));
      fprintf(f, "  <router id=\"n%d-r\"/>\n", i);
      snprintf(l, sizeof l, "n%d-bus", i);
      link_xml(f, l, p->membw, 0, "FATPIPE");
      snprintf(l, sizeof l, "n%d-net", i);
      link_xml(f, l, p->net_bw[i], p->net_lat, "SPLITDUPLEX");
      for (int d = 0; d < p->ndevices; d++) {
        snprintf(l, sizeof l, "n%d-pcie%d", i, d);
        link_xml(f, l, p->pcie_bw, p->pcie_lat, "SPLITDUPLEX");
      }
    }
    for (int i = 0; i < p->nnodes; i++) {
      snprintf(a, sizeof a, "n%d", i); snprintf(b, sizeof b, "n%d-r", i);
      fprintf(f, "  <route src=\"%s\" dst=\"%s\"><link_ctn id=\"n%d-bus\"/></route>\n", a, b, i);
      snprintf(l, sizeof l, "n%d-net", i);
      route_xml(f, b, "sw", l);
      for (int d = 0; d < p->ndevices; d++) {
        snprintf(a, sizeof a, "n%d-g%d", i, d);
        snprintf(l, sizeof l, "n%d-pcie%d", i, d);
        route_xml(f, a, b, l);
      }
    }
  }
  fprintf(f, "</zone>\n</platform>\n");
  if (fclose(f) != 0) return pdlsim_seterr(err, errlen, PDL_SIM_EFAIL, "%s: write failed", path);
  return 0;
}

/* Bandwidth in the units people quote: Gb/s for networks, GB/s for buses. */
void plat_describe(const plat_t *p, char *out, size_t n) {
  switch (p->kind) {
  case PLAT_CLUSTER:
    snprintf(out, n,
             "simgrid cluster: %d nodes x %d device(s) @ %.4g GFLOP/s; node CPU %d x %.4g GFLOP/s, memory %.4g GB/s; "
             "PCIe %.4g GB/s %.3g us per device; net %.4g Gb/s %.3g us per node link, non-blocking switch; "
             "full duplex; CM02 flow model, no TCP window",
             p->nnodes, p->ndevices, p->dev_flops / 1e9, p->cpu_cores, p->cpu_flops / 1e9, p->membw / 1e9,
             p->pcie_bw / 1e9, p->pcie_lat * 1e6, p->net_bw[0] * 8 / 1e9, p->net_lat * 1e6);
    break;
  case PLAT_LINKS: {
    char bws[256] = ""; size_t k = 0;
    for (int i = 0; i < p->nnodes && k < sizeof bws - 16;) {
      int j = i;
      while (j < p->nnodes && p->net_bw[j] == p->net_bw[i]) j++;
      k += (size_t)snprintf(bws + k, sizeof bws - k, "%s%.4gGbps*%d", k ? "+" : "", p->net_bw[i] * 8 / 1e9, j - i);
      i = j;
    }
    char rates[256] = ""; k = 0;
    if (!p->dev_flops_node) snprintf(rates, sizeof rates, "%.4g", p->dev_flops / 1e9);
    for (int i = 0; p->dev_flops_node && i < p->nnodes && k < sizeof rates - 16;) {
      int j = i;
      while (j < p->nnodes && p->dev_flops_node[j] == p->dev_flops_node[i]) j++;
      k += (size_t)snprintf(rates + k, sizeof rates - k, "%s%.4g*%d", k ? "+" : "", p->dev_flops_node[i] / 1e9, j - i);
      i = j;
    }
    snprintf(out, n,
             "simgrid links: %d nodes x 1 device @ %s GFLOP/s; node links %s, %.4g ms each to one switch; "
             "full duplex; CM02 flow model, no TCP window",
             p->nnodes, rates, bws, p->net_lat * 1e3);
    break;
  }
  case PLAT_MACHINE: {
    int cores; double speed;
    machine_cpu(p, &cores, &speed);
    snprintf(out, n,
             "simgrid machine: %d ranks sharing %d cores @ %.4g GFLOP/s per core (%d x %.4g with %.3g other busy "
             "session(s)); memory %.4g GB/s; rank-to-rank loopback %.4g GB/s %.3g us (shared); CM02 flow model",
             p->nnodes, cores, speed / 1e9, p->cpu_cores, p->dev_flops / 1e9, p->bg_load, p->membw / 1e9,
             p->shm_bw / 1e9, p->shm_lat * 1e6);
    break;
  }
  case PLAT_FILE:
    snprintf(out, n, "simgrid file %.300s: %d nodes x %d device(s)", p->file, p->nnodes, p->ndevices);
    break;
  }
}
