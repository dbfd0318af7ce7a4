/* test_sampler_skip.c — sampler_skip (src/core/data.c): skipping B examples leaves the sampler
 * exactly where sampler_next(B) would (epoch, position, this epoch's order, rng), across epoch
 * boundaries and with replacement, so a replica that copies only its slice of each global batch
 * sees the same examples as one that copies the whole batch (src/algo/replica.c). */
#include "tests/harness.h"
#include "core/data.h"

/* x[i] = {i}, y[i] = i % 5: a sample's pixel tells which example it is. */
static dataset_t index_ds(int n) {
  dataset_t ds = {.n = n, .c = 1, .h = 1, .w = 1, .classes = 5};
  ds.x = malloc(sizeof(float) * (size_t)n);
  ds.y = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) { ds.x[i] = (float)i; ds.y[i] = i % 5; }
  return ds;
}

static int same_state(const sampler_t *a, const sampler_t *b) {
  return a->epoch == b->epoch && a->pos == b->pos && a->n_shard == b->n_shard &&
         !memcmp(a->idx, b->idx, sizeof(int) * (size_t)a->n_shard) && !memcmp(&a->rng, &b->rng, sizeof a->rng);
}

/* Sliced reading: R slices of b from each global batch of R*b; slice k of replica k must equal
 * part k of the batch a full reader copies. 37 examples, so batches straddle epochs. */
static void check_slices(int with_replacement) {
  dataset_t ds = index_ds(37);
  const int R = 3, b = 5, steps = 40;
  sampler_t full, part[3];
  sampler_init(&full, &ds, 11, 0, 1, with_replacement);
  for (int k = 0; k < R; k++) sampler_init(&part[k], &ds, 11, 0, 1, with_replacement);
  float xf[15], xs[5]; int yf[15], ys[5], bad = 0;
  for (int s = 0; s < steps; s++) {
    sampler_next(&full, R * b, xf, yf);
    for (int k = 0; k < R; k++) {
      sampler_skip(&part[k], k * b);
      sampler_next(&part[k], b, xs, ys);
      sampler_skip(&part[k], (R - 1 - k) * b);
      bad += memcmp(xs, xf + k * b, sizeof xs) != 0 || memcmp(ys, yf + k * b, sizeof ys) != 0;
      bad += !same_state(&part[k], &full);
    }
  }
  EXPECT_MSG(bad == 0, "%d slice/state mismatches (with_replacement %d)", bad, with_replacement);
  EXPECT(full.epoch == (long)(steps * R * b) / 37 && full.pos == (steps * R * b) % 37);
  sampler_free(&full);
  for (int k = 0; k < R; k++) sampler_free(&part[k]);
  free(ds.x); free(ds.y);
}

static void test_skip_slices(void) { check_slices(0); }
static void test_skip_slices_with_replacement(void) { check_slices(1); }

/* One skip longer than several epochs, and a skip of 0. */
static void test_skip_long(void) {
  dataset_t ds = index_ds(37);
  sampler_t a, b;
  sampler_init(&a, &ds, 4, 1, 3, 0);   /* shard 1 of 3: 12 examples */
  sampler_init(&b, &ds, 4, 1, 3, 0);
  float x[100]; int y[100];
  sampler_next(&a, 100, x, y);
  sampler_skip(&b, 100);
  EXPECT(same_state(&a, &b));
  EXPECT(b.epoch == 8 && b.pos == 4);
  sampler_skip(&b, 0);
  EXPECT(same_state(&a, &b));
  sampler_next(&a, 7, x, y);
  float z[7]; int w[7];
  sampler_next(&b, 7, z, w);
  EXPECT(!memcmp(x, z, sizeof z) && !memcmp(y, w, sizeof w));
  sampler_free(&a); sampler_free(&b);
  free(ds.x); free(ds.y);
}

int main(void) {
  RUN(test_skip_slices);
  RUN(test_skip_slices_with_replacement);
  RUN(test_skip_long);
  return harness_exit();
}
