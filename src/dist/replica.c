/* replica.c — see replica.h. */
#include "dist/replica.h"

void replica_init(replica_t *rp, const run_t *r, int b, int threads, int slice, int nslices, int with_replacement, uint64_t stream) {
  rp->net = &r->net; rp->b = b; rp->slice = slice; rp->nslices = with_replacement ? 1 : nslices;
  rp->img = dataset_image_floats(&r->data.train);
  ws_init(&rp->ws, &r->net, b, threads, &kernels_cpu, r->cfg.seed * 1000003u + stream);
  uint64_t seed = with_replacement ? r->cfg.seed ^ (0x9e3779b97f4a7c15ULL * (stream + 1)) : r->cfg.seed;
  sampler_init(&rp->s, &r->data.train, seed, 0, 1, with_replacement);
  rp->x = xmalloc((size_t)b * rp->img * sizeof(float));
  rp->y = xmalloc((size_t)b * sizeof(int));
}

void replica_free(replica_t *rp) {
  ws_free(&rp->ws); sampler_free(&rp->s); xfree(rp->x); xfree(rp->y);
}

double replica_grad(replica_t *rp, rt_t *rt, const float *params, float *gacc, float scale) {
  int b = rp->b;
  /* global batch [nslices][b]: skip the slices before ours, copy ours, skip the rest */
  sampler_skip(&rp->s, rp->slice * b);
  sampler_next(&rp->s, b, rp->x, rp->y);
  sampler_skip(&rp->s, (rp->nslices - 1 - rp->slice) * b);
  double loss = net_forward(&rp->ws, params, rp->x, rp->y, b, 1, NULL);
  net_backward(&rp->ws, params, gacc, rp->y, b, scale);
  rt->ops->compute(rt, rp->net->flops_train * b);
  return loss;
}
