/* replica.h — one gradient-computing role's private state: workspace, sampler, batch buffers.
 * Sampling modes:
 *   sliced (nslices > 1 or with_replacement == 0): every replica walks the SAME seeded sequence
 *     of global batches of b*nslices examples and takes slice `slice` of each, so R workers with
 *     batch b see exactly the examples that one sequential worker with batch R*b sees
 *     (what makes SSGD comparable bit-for-bit in data with sequential momentum SGD); a replica
 *     copies only its own b examples and skips the others' (sampler_skip), so the data cost per
 *     replica does not grow with the worker count;
 *   random picks (with_replacement == 1): each replica draws uniformly from the whole training
 *     set with its own stream (the PP-ASGD paper's randpick).
 * Overlap (sim runtime only, opt-in): SimGrid runs all actors on one OS thread, so the real
 * gradients of 64 simulated workers would use one core. With rp->overlap = 1, replica_grad
 * hands the real work (sampling, forward, backward) to a process-wide pool of helper pthreads
 * (one per online core), then charges the flops with rt->compute -- during which SimGrid runs
 * the other roles, which hand over their gradients too -- and waits for its result. The
 * numbers are bitwise those of the inline path (each job touches only its replica, params and
 * gacc). The caller must guarantee that no other role writes params or gacc, or uses the
 * replica, until replica_grad returns: true in SSGD (w_hat changes only after every grad role
 * was joined); NOT true where another role may publish new parameters into the buffer a grad
 * role reads while it is blocked in compute. On the real runtime overlap is ignored. */
#ifndef PDL_REPLICA_H
#define PDL_REPLICA_H
#include "core/run.h"
#include "rt/rt.h"

typedef struct {
  const net_t *net;
  workspace_t ws;
  sampler_t s;
  int b, slice, nslices;
  int overlap;  /* 1: sim gradients run on the helper pool (see above); set after replica_init */
  size_t img;
  float *x;   /* [b][img] this replica's slice of the current global batch */
  int *y;     /* [b] */
  uint64_t ws_seed;   /* the workspace's dropout seed */
  float *dw, *dg;     /* replica_grad_host on a device backend: params and gacc in its memory ([n] each) */
} replica_t;

void replica_init(replica_t *rp, const run_t *r, int b, int threads, int slice, int nslices, int with_replacement, uint64_t stream);
void replica_free(replica_t *rp);
/* Moves the replica's workspace to backend k (a CUDA device: the gradient's params and gacc are
 * then device memory; the batch is still drawn on the host and uploaded), same dropout seed. */
void replica_on(replica_t *rp, const kernels_t *k);
/* Makes the replica walk shard `shard` of `nshards` of the training set (disjoint, seeded by the
 * run's seed), whole batches of b from its own shard: gossip's nodes each own their data. */
void replica_shard(replica_t *rp, const run_t *r, int shard, int nshards);
/* Draws this replica's next b examples, computes the gradient at params, adds
 * scale * d(sum of losses)/d params into gacc, charges flops to rt (sim time) and returns the
 * SUM of the b losses. */
double replica_grad(replica_t *rp, rt_t *rt, const float *params, float *gacc, float scale);
/* replica_grad with params and gacc in host memory whatever the replica's backend: on a device
 * (replica_on) params and gacc are uploaded into the replica's own device buffers, the gradient is
 * added there and gacc comes back (one upload each way of n floats, a download); on the CPU it is
 * replica_grad itself. For node programs whose state stays on the host (the updates, the shared
 * w_hat), the gradients on the node's device. */
double replica_grad_host(replica_t *rp, rt_t *rt, const float *params, float *gacc, float scale);
/* The mini-batch MEAN gradient at params into g (overwritten), computed by a role started on
 * device `device` of this node (so the sim charges that device); returns the mean loss. On a
 * device backend (replica_on; --device, the real runtime) it runs on the calling thread instead,
 * which loop_device bound to the device (a started role would be a new device context per call),
 * through replica_grad_host. */
double replica_grad_on_device(replica_t *rp, rt_t *rt, int device, const float *params, float *g);

/* A node's G grad roles, one replica each (rp[0..G), their backend the node's: replica_on):
 * replica_group_grad sums, over the roles, scale x the gradient of each one's next batch at
 * params into sum ([n], in the replicas' backend memory) and returns the sum of their losses. On a
 * host backend each role runs on a thread started on device g (so the sim charges that device),
 * adding into its own accumulator, and the accumulators are then summed into sum in role order
 * (sum overwritten; the accumulators left zeroed). On a device backend (G must be 1) the one role
 * runs on the calling thread, which loop_device bound to the device (a started role would be a
 * new device context), adding into sum itself, which must then hold zeros (optim_step leaves its
 * gradient so; k->alloc zero-fills). */
typedef struct replica_group {
  replica_t *rp; int G; float scale; size_t n;
  struct group_role { replica_t *rp; const float *at; float *acc; float scale; double loss; } *roles;
  void **th;
} replica_group_t;
void replica_group_init(replica_group_t *rg, replica_t *rp, int G, float scale);
double replica_group_grad(replica_group_t *rg, rt_t *rt, const float *params, float *sum);
void replica_group_free(replica_group_t *rg);
#endif
