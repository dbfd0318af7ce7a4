/* fuzz_checkpoint.c — the checkpoint loader on hostile files, against a fixed small run (a
 * two-layer net on synthetic data, the default algorithm): header checks, checksum, lengths; the
 * seed corpus holds a real version-3 checkpoint of that run. */
#include "tests/fuzz/fuzz.h"
#include "core/run.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static run_t r; static float *w; static optim_t o; static int ready;
  static char path[128];
  if (!ready) {
    train_cfg_t c; train_cfg_defaults(&c);
    snprintf(c.data, sizeof c.data, "synthetic:n=64"); snprintf(c.net, sizeof c.net, "F2 S10");   /* small: a real checkpoint seed is 13 KB */
    c.quiet = 1; c.threads = 1;
    run_setup(&r, &c, c.batch);
    w = malloc(r.net.nparams * sizeof(float));
    optim_init(&o, OPT_MSGD, r.net.nparams, c.momentum, c.wd);
    snprintf(path, sizeof path, "%s/c.ck", fuzz_dir());
    ready = 1;
  }
  fuzz_write(path, d, n);
  ckpt_pos_t pos;
  FUZZ_CALL((void)checkpoint_load(path, &r, w, &o, &pos));
  return 0;
}
