/* phantom.h — the timing-only backend (issue 47): `--device phantom` on the sim runtime.
 * kernels_phantom does no arithmetic: every conv and fc entry adds the flops it stands for to the
 * calling thread's account (2 per multiply-add, as model.c's net_t.flops_train counts them), which
 * kernels_t.charged reads; the other layers and the updates do nothing; all its workspace memory is
 * one shared scratch that nothing computes in. A numerics sim run charges flops_train x b per
 * gradient after computing it; a phantom run charges the same flops, layer by layer, without it
 * (docs/SIM.md, "The phantom backend"). Nothing of src/ is included here (ci/layering.py). */
#ifndef PDL_PHANTOM_H
#define PDL_PHANTOM_H
#include <stddef.h>
#include "contract/kernels.h"

extern const kernels_t kernels_phantom;
#endif
