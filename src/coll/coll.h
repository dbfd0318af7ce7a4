/* coll.h — the collective layer: the MPI and NCCL backends, which `pdl coll` times, and the
 * training seam over them (coll_seam_t, at the end), which the real runtime's collectives
 * (src/rt/rt_real.c) call. Both end in the same backend->run(), so pdl coll measures the code
 * training runs. This layer sits below src/rt: it includes base/util only.
 *
 * Size convention (nccl-tests'): every op works on a "full vector" of `count` elements
 * (bytes_total = count * element size): the allreduce/reduce/bcast buffer, the allgather
 * output, the reduce_scatter input. Rank r's block of it is [displs[r], displs[r] + counts[r]).
 * allgather and reduce_scatter need equal blocks: count is rounded down to a multiple of the
 * rank count (at least one element per rank) and the row reports the size actually moved.
 * The "v" ops (reduce_scatterv, allgatherv and the K-FAC workarounds *_via_allreduce) keep the
 * exact count and give the first count % n ranks one extra element.
 *
 * Buffers (element counts; "recv" is the output buffer, "send" the separate input buffer):
 *   allreduce, reduce, *_via_allreduce, memcpy: send[count] recv[count]
 *   allgather(v), allgatherv_via_allreduce:     send[counts[rank]] recv[count]
 *   reduce_scatter(v):                          send[count] recv[counts[rank]]
 *   bcast:                                      recv[count] only (always in place)
 * --inplace drops send and puts the input into recv where the API expects it (see coll.c).
 *
 * Validation inputs are small integers, v(r, g) = ((h(g) + 13 r) mod 31) - 15 for rank r and
 * global element g, with h a multiplicative hash of g: every sum is exact in float and double
 * whatever the reduction order (a run of 31 ranks sums to 0, so |sum| <= 450 for any n), and a
 * misplaced or shifted block shows because the value depends on r and on g itself. Outputs
 * start as NaN so an element nobody wrote is wrong too. */
#ifndef PDL_COLL_H
#define PDL_COLL_H
#include <stddef.h>

typedef enum {
  COLL_ALLREDUCE, COLL_REDUCE, COLL_ALLGATHER, COLL_REDUCE_SCATTER, COLL_BCAST,
  COLL_REDUCE_SCATTERV, COLL_ALLGATHERV, COLL_RSV_VIA_ALLREDUCE, COLL_AGV_VIA_ALLREDUCE,
  COLL_MEMCPY, COLL_NOPS
} coll_op_t;

typedef enum { COLL_FLOAT, COLL_DOUBLE } coll_dtype_t;

typedef struct {
  const char *name;
  int equal_blocks;     /* count rounded to a multiple of the rank count */
  int blocked_input;    /* each rank contributes only its block (allgather family) */
  int blocked_output;   /* each rank receives only its block (reduce_scatter family) */
  int reduces;          /* the result is a sum over ranks */
  const char *busbw;    /* nccl-tests' bus-bandwidth factor, as text */
  const char *what;     /* one line for --help */
} coll_op_info_t;

extern const coll_op_info_t coll_ops[COLL_NOPS];
int coll_op_by_name(const char *name);               /* -1 when unknown */
double coll_busbw_factor(coll_op_t op, int nranks);  /* nccl-tests' factors */
size_t coll_elt_size(coll_dtype_t dt);

/* One planned call: the op, the vector layout and the backend buffers. */
typedef struct {
  coll_op_t op;
  coll_dtype_t dt;
  int inplace, root, rank, nranks;
  size_t count;          /* elements of the full vector */
  size_t *counts;        /* [nranks] block sizes */
  size_t *displs;        /* [nranks] block offsets */
  int has_send;           /* a separate input buffer exists (not in place, not bcast) */
  size_t send_count;     /* elements of send (may be 0 for a v op's empty block) */
  size_t recv_count;     /* elements of recv */
  void *send, *recv;     /* backend memory (host for MPI, device for NCCL) */
} coll_call_t;

/* Fill counts/displs/send_count/recv_count for a requested full-vector size; returns the
 * element count actually used (see the rounding above). counts/displs must hold nranks. */
size_t coll_plan(coll_call_t *c, size_t requested_count);

/* A backend runs planned calls on its own memory. run() issues the op and returns when its
 * result is usable on this rank (stream synchronised for NCCL). */
typedef struct {
  const char *name;
  int inplace_rs_at_block;  /* in-place reduce_scatter leaves rank r's block at displs[r] (NCCL)
                               rather than at the start of recv (MPI) */
  int (*supports)(coll_op_t op);
  void *(*alloc)(size_t bytes);
  void (*release)(void *p);
  void (*upload)(void *dst, const void *host_src, size_t bytes);
  void (*download)(void *host_dst, const void *src, size_t bytes);
  void (*run)(const coll_call_t *c);
  void (*barrier)(void);
  void (*teardown)(void);
  /* Device backends (NULL for a host-memory backend, MPI: coll_seam then hands it the caller's
   * buffers, else it stages them through alloc'd ones): run_on queues a call on the caller's CUDA stream (a
   * cudaStream_t of the device device() returns, buffers in its memory) and returns without
   * waiting; device() is the CUDA device this rank's backend set up on. */
  void (*run_on)(const coll_call_t *c, void *stream);
  int (*device)(void);
} coll_backend_t;

/* ---- the collective libraries: the one list (colls.def) ----
 * Every name that pdl train --coll and pdl coll --backend accept is a row of coll_libs, built
 * from colls.def (the default, mpi, first); each row is the library's own descriptor, defined in
 * its file. open returns its backend, or NULL with the reason in why when this build or machine
 * lacks it (every rank alike); host: its memory is host memory (no device to set up: coll_seam
 * hands it the caller's buffers and the other libraries need a device). */
typedef struct {
  const char *name;      /* --coll NAME, --backend NAME */
  const char *what;      /* one line for the help */
  int host;
  const coll_backend_t *(*open)(char *why, size_t why_len);
} coll_lib_t;
extern const coll_lib_t *const coll_libs[];
extern const int coll_nlibs;
const coll_lib_t *coll_lib_find(const char *name);        /* NULL when no row has that name */
const char *coll_lib_names(const char *sep);              /* "mpi<sep>nccl" (static storage) */

/* MPI backend: needs MPI initialised (pdl_mpi_init). NULL in builds without MPI. */
const coll_backend_t *coll_backend_mpi(void);
/* NCCL backend: sets one device per rank and builds the communicator over MPI. Returns NULL
 * and writes the reason into why when there is no usable device on some rank (all ranks agree)
 * or the build has no NCCL. Dies with a message on real errors. NCCL has no v collectives: the
 * backend builds reduce_scatterv from one ncclReduce per block (root = the block's rank) and
 * allgatherv from one ncclBroadcast per block, each set in one NCCL group. Built against the
 * stand-in kernels/cuda/emu/nccl.h (NCCL as MPI calls on host memory) it is $(BUILD)/nccl-emu/pdl. */
const coll_backend_t *coll_backend_nccl(char *why, size_t why_len);

/* Validation. coll_fill builds the host images of send and recv for one checked call (recv
 * pre-filled with NaN where the op must write). inject >= 0 adds 1 to that element of this
 * rank's input afterwards (the test-only hook). coll_check counts the wrong elements of the
 * downloaded recv image on this rank. */
void coll_fill(const coll_call_t *c, const coll_backend_t *b, void *h_send, void *h_recv, long long inject);
long long coll_check(const coll_call_t *c, const coll_backend_t *b, const void *h_recv);
/* Where this rank's result lives in recv, in elements, and how many (0: nothing to check). */
void coll_result_region(const coll_call_t *c, const coll_backend_t *b, size_t *off, size_t *len);


/* ---- the training seam ----
 * The collectives of the real runtime (src/rt/rt.h's allreduce, reduce, bcast, allgatherv,
 * reduce_scatterv, barrier) on float host buffers, run by the backend --coll chose: "mpi" runs the
 * planned call on the host buffers themselves (the MPI calls the runtime always made: the same
 * results bit for bit); "nccl" stages through device buffers of the backend (upload the input,
 * the collective on the device, download the output; grown as needed, never freed before close),
 * since the algorithms' buffers are host memory today. Every call is backend->run() on a
 * coll_call_t, the function pdl coll times. Called by one thread per process, all ranks in the
 * same order (the runtime's contract). */
typedef struct coll_seam coll_seam_t;
/* name: a row of coll_libs; must be called by every rank (NCCL sets up collectively). Returns NULL
 * with the reason in why when the name is no row's or the backend is not available (no MPI build;
 * no device or no NCCL build for nccl), on every rank alike. */
coll_seam_t *coll_seam_open(const char *name, char *why, size_t why_len);
const char *coll_seam_name(const coll_seam_t *s);     /* the backend's name */
void coll_seam_allreduce(coll_seam_t *s, float *buf, size_t n);                 /* sum, in place */
void coll_seam_reduce(coll_seam_t *s, float *buf, size_t n, int root);          /* sum at root only */
void coll_seam_bcast(coll_seam_t *s, float *buf, size_t n, int root);
void coll_seam_allgatherv(coll_seam_t *s, const float *mine, float *all, const size_t *counts);
void coll_seam_reduce_scatterv(coll_seam_t *s, const float *buf, float *mine, const size_t *counts);
void coll_seam_barrier(coll_seam_t *s);
/* Training on a device (issue 35 G): the CUDA device this rank's backend uses (-1: a host-memory
 * backend, MPI), and the sum in place of dev[0..n) in that device's memory, queued on the
 * caller's stream after the work already there (NCCL on the compute stream; no wait). Returns 0,
 * doing nothing, on a host-memory backend: the caller stages through host memory and
 * coll_seam_allreduce. */
int coll_seam_device(const coll_seam_t *s);
int coll_seam_allreduce_dev(coll_seam_t *s, float *dev, size_t n, void *stream);
void coll_seam_close(coll_seam_t *s);                 /* frees the buffers, tears the backend down */

#endif
