/* sim_internal.h — shared between the files of libpdlsim.so (platform.c: spec parsing and XML
 * generation; rt_sim.c: engine, actors and rt ops; sim_coll.c: collectives over mailboxes).
 * Units inside the .so are SI base units: flop/s, bytes/s, seconds. */
#ifndef PDL_SIM_INTERNAL_H
#define PDL_SIM_INTERNAL_H
#include <stddef.h>
#include "rt/rt.h"

typedef enum { PLAT_CLUSTER, PLAT_LINKS, PLAT_MACHINE, PLAT_FILE } plat_kind_t;

/* A parsed platform spec. Host naming in generated (and file:) platforms:
 *   n<i>        node i's CPU host (main role, device -1 threads)
 *   n<i>-g<d>   device d of node i
 *   n<i>-mem    node i's memory (speed = bytes/s; rt work() executes there)
 * machine: every node role and device runs on the one host "cpu" (cores shared), memory "mem". */
typedef struct {
  plat_kind_t kind;
  int nnodes, ndevices;
  double dev_flops;             /* per device */
  int dev_rate_from_spec;       /* rate/gflops given in the spec (wins over cfg->device_gflops) */
  double cpu_flops;             /* per core of a node CPU host */
  int cpu_cores;
  double membw;                 /* node memory, bytes/s */
  double pcie_bw, pcie_lat;     /* device <-> node, per device, full duplex */
  double *net_bw;               /* [nnodes] node <-> switch, bytes/s, full duplex */
  double *dev_flops_node;       /* [nnodes] links: rates=LIST, each node's device; NULL: dev_flops */
  double net_lat;               /* per node link */
  double shm_bw, shm_lat;       /* machine: the loopback that carries messages between ranks */
  double bg_load;               /* machine: other users' busy sessions (load=L, 0: idle) */
  char file[1024];              /* PLAT_FILE */
} plat_t;

/* 0 ok; PDL_SIM_EBADSPEC with err filled. device_gflops > 0 replaces the default device rate.
 * Free with plat_free. */
int plat_parse(const char *spec, int nnodes_hint, double device_gflops, plat_t *p, char *err,
               size_t errlen);
void plat_free(plat_t *p);
/* Writes the SimGrid XML (generated kinds only). 0 ok, else PDL_SIM_EFAIL with err. */
int plat_write_xml(const plat_t *p, const char *path, char *err, size_t errlen);
/* One-line description of a generated platform (file: platforms are described after loading). */
void plat_describe(const plat_t *p, char *out, size_t n);

/* Collectives (sim_coll.c) over the per-pair collective mailboxes of rt_sim.c. */
void simc_allreduce(rt_t *rt, float *buf, size_t n);
void simc_reduce(rt_t *rt, float *buf, size_t n, int root);
void simc_bcast(rt_t *rt, float *buf, size_t n, int root);
void simc_allgatherv(rt_t *rt, const float *mine, float *all, const size_t *counts);
void simc_reduce_scatterv(rt_t *rt, const float *buf, float *mine, const size_t *counts);
void simc_barrier(rt_t *rt);

/* Point-to-point on the collective channel (rt_sim.c): ordered per (src, dst) pair, separate
 * from the user send/recv channel. isend copies buf and returns a handle for simc_send_wait. */
void *simc_isend(rt_t *rt, int dst, const void *buf, size_t bytes);
/* isend of `bytes` (the time the network charges) whose payload is only bytes [off, off + kept) of
 * buf: the receiver's recv / recv_add / irecv_finish write only those (a timing-only run's cut). */
void *simc_isend_part(rt_t *rt, int dst, const void *buf, size_t bytes, size_t off, size_t kept);
/* Floats at the end of a buffer (or of each block of an allgatherv / reduce_scatterv) that a
 * timing-only run's collectives move and add; 0: all of them (numerics on). */
size_t simc_cut_floats(void);
void simc_send_wait(void *handle);
void simc_recv(rt_t *rt, int src, void *buf, size_t bytes);
/* Receives n floats from src and adds them: acc[i] += incoming[i]. */
void simc_recv_add(rt_t *rt, int src, float *acc, size_t n);
/* Posts a receive so several can proceed at once; finish copies bytes into buf. */
void *simc_irecv(rt_t *rt, int src, void **msgp);
void simc_irecv_finish(rt_t *rt, void *handle, void **msgp, void *buf, size_t bytes);
/* Fatal runtime misuse (bad rank, size mismatch): message on stderr, exit 1. */
void simc_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Writes the message into err (n bytes) and returns code: the .so's error convention (platform.c). */
int pdlsim_seterr(char *err, size_t n, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
