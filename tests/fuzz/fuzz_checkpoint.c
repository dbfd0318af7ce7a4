/* fuzz_checkpoint.c — the checkpoint loader (snap_read) on hostile files, against a fixed small run
 * (a two-layer net on synthetic data, the default algorithm msgd, with the sections its node
 * program registers on the loop, src/algo/seq.c): header checks, checksum, lengths; the seed corpus
 * holds a real version-5 checkpoint of that run (and an older version-3 one, refused). */
#include "tests/fuzz/fuzz.h"
#include <zlib.h>
#include "algo/algo.h"
#include "core/run.h"
#include "core/snap.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static run_t r; static float *w; static optim_t o; static int ready;
  static snap_t s; static struct loop_persist lp; static sampler_t sm; static rng_t rng;
  static char path[128];
  if (!ready) {
    train_cfg_t c; train_cfg_defaults(&c);
    snprintf(c.data, sizeof c.data, "synthetic:n=64"); snprintf(c.net, sizeof c.net, "F2 S10");   /* small: a real checkpoint seed is 13 KB */
    c.quiet = 1; c.threads = 1; c.algo_optdefs = train_seq_opts;
    run_setup(&r, &c, c.batch);
    w = malloc(r.net.nparams * sizeof(float));
    optim_init(&o, OPT_MSGD, r.net.nparams, c.momentum, c.wd);
    sampler_init(&sm, &r.data.train, c.seed, 0, 1, 0);
    snap_init(&s);   /* as the loop and seq.c's opt_node register them */
    snap_add(&s, "loop", &lp, sizeof lp);
    snap_add(&s, "params", w, r.net.nparams * sizeof(float));
    snap_add_optim(&s, "optimizer", &o);
    snap_add_sampler(&s, "sampler", &sm);
    snap_add(&s, "rng", &rng, sizeof rng);
    snprintf(path, sizeof path, "%s/c.ck", fuzz_dir());
    ready = 1;
  }
  /* Most mutations would only meet the CRC check; an input whose first byte is even gets its
   * last 4 bytes replaced by the CRC32 of the rest, so the header and section checks behind
   * the checksum are fuzzed too (odd first bytes keep the raw bytes: the checksum itself). */
  static uint8_t *buf; static size_t cap;
  if (n >= 8 && !(d[0] & 1)) {
    if (n > cap) { free(buf); buf = malloc(n); cap = n; }
    memcpy(buf, d, n);
    uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(n - 4));
    memcpy(buf + n - 4, &crc, 4);
    fuzz_write(path, buf, n);
  } else fuzz_write(path, d, n);
  FUZZ_CALL(if (snap_read(path, &r, 0, 1, &s, 0) >= 0) (void)snap_read(path, &r, 0, 1, &s, 1));
  return 0;
}
