/* kfac_split.h — --kfac-split for kfac-dist (issue 33 item 4, beyond the paper): the factors that
 * bound the step are each inverted by all processes together instead of by their layer's owner
 * alone. Real runtime: ScaLAPACK pspotrf + pspotri on a BLACS grid from the runtime's MPI
 * communicator (src/kfac/split_inv.c). Sim runtime: the owner inverts (the numerics are real), and
 * every node is charged the model of src/kfac/split_inv.h (its share of the flops at the
 * calibrated inversion rate, the block-cyclic pieces and the panel traffic as messages over the
 * platform's links). docs/REPRODUCTION-kfac.md, "Split inversion".
 *
 * Protocol, per update (ksplit_phase, called by every node at the start of steps 4-5): the layers
 * with a split factor are taken in layer order, all nodes together; the owner runs its usual
 * owner update of the layer (kfac_owner_update), whose inversions of split factors reach the hook
 * (kfac_t.split), which broadcasts a header {n} to the other nodes and runs the inversion with
 * them; the owner's header {0} (sent as soon as the layer's last split factor is inverted, or
 * after its update) releases them. So retries (10x the damping), --kfac-inv-every and a refused
 * factor need no other agreement. The other layers then go on as before. */
#ifndef PDL_ALGO_KFAC_SPLIT_H
#define PDL_ALGO_KFAC_SPLIT_H
#include "kfac/kfac.h"
#include "rt/rt.h"
#include "util/util.h"

#define KFAC_SPLIT_OFF 0
#define KFAC_SPLIT_AUTO (-1)

typedef struct ksplit ksplit_t;

/* thr: --kfac-split (KFAC_SPLIT_OFF; KFAC_SPLIT_AUTO: every factor whose n^3 exceeds the mean
 * inversion work per process, sum over layers of da^3 + dg^3 over N; N >= 2: every factor of
 * order >= N). With one node, or no factor chosen, nothing is split and k is left as it is.
 * Else installs the hook in k and lowers the split layers' k->L[l].cost to what their owner still
 * does alone (+ its 1/N share), for --kfac-assign lpt. Call on every node, after kfac_init and
 * before the owners are assigned; on the real runtime it is collective (the BLACS grid) and exits
 * 2 naming libscalapack-openmpi-dev when the build has no ScaLAPACK. */
void ksplit_open(rt_t *rt, kfac_t *k, int thr);
void ksplit_close(kfac_t *k);   /* collective on the real runtime, like ksplit_open */

/* Steps 4-5's split layers (see above), every node. update(ctx, l) is the owner's update of
 * layer l; done[l] is set for each split layer (the caller's loop skips them); rel(kr, n) is the
 * inversion rate of order n relative to the device's training rate (the sim's charges). Returns
 * the flops the caller charges on top (the sim: the owner's unsplit factors of the split layers;
 * the split factors themselves are charged inside, between their messages). */
double ksplit_phase(kfac_t *k, rt_t *rt, long step, const int *owner, void (*update)(void *ctx, int l), void *ctx,
                    double (*rel)(const void *kr, int n), const void *kr, int *done);

/* The summary's fields: kfac_split (the threshold, 0 none) and kfac_split_factors ("l:A1153,..."). */
void ksplit_summary(json_t *j, const kfac_t *k);
#endif
