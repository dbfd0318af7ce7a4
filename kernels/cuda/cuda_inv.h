/* cuda_inv.h — cuda_spd_inverse, the GPU path of contract/inv.h (cuSOLVER potrf + potri), callable from
 * plain C. Exactly the convention and error model of contract/inv.h (row-major SPD a, full symmetric
 * inverse into inv, inv == a allowed, 0 / -1 / k > 0), but inv and a are DEVICE pointers and
 * scratch is ignored (may be NULL): cuSOLVER's workspace is the calling thread's context scratch
 * (cuda_internal.h), grown on demand.
 * Unlike the layers of cuda_layers.h the call is synchronous: it returns the info, so it waits for
 * the calling thread's stream (twice: after potrf, to skip potri on a failed factor, and at the
 * end). Work queued earlier on that stream by the same thread (uploads, layer kernels) is ordered
 * before it.
 * Declared only in builds with cuSOLVER (PDL_HAVE_CUSOLVER, set by the Makefile when nvcc and
 * cusolverDn.h are found), so a caller without it fails to compile rather than to link. */
#ifndef PDL_CUDA_INV_H
#define PDL_CUDA_INV_H
#include "contract/inv.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PDL_HAVE_CUSOLVER
PDL_DECLARE_INV(cuda_)
#endif

#ifdef __cplusplus
}
#endif
#endif
