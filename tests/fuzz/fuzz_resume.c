/* fuzz_resume.c — the whole resume path of a checkpoint (loop_resume, src/algo/loop.c: snap_probe of
 * the file and its .prev, the fall-back to .prev, snap_read, then the range checks of every saved
 * figure) on hostile files, for the run fuzz_checkpoint.c uses (msgd on one node, a two-layer net on
 * synthetic data). An input is a mode byte, then the file: mode bit 0 clear recomputes the file's
 * checksum after mutation, so the fuzzer reaches the fields behind it (the header, the sections'
 * sizes, and the loop's figures -- update counts, positions, flags -- that a crafted but
 * checksummed file can set to anything); bit 1 set keeps the file as the .prev of a newest file
 * that fails its checksum, so the fall-back reads it; bit 2 set registers the local-steps loop's
 * section "loop.local" after "loop" (LOOP_LOCAL, gossip's schedule); bit 3 set appends K-FAC's owner
 * sections (kfac_state in algo/kfac_dist.c, here for the net's softmax layer only: its fc layer is
 * another node's) and runs kfac_state_check on them after the resume. Seeds (tests/fuzz/corpus/resume):
 * a real version-5 checkpoint of the run in both modes, and that file with the loop.local section
 * (v5-msgd-local) and with K-FAC sections (v5-msgd-kfac) inserted (CRC recomputed). */
#include "tests/fuzz/fuzz.h"
#include <zlib.h>
#include "algo/algo.h"
#include "core/run.h"
#include "core/snap.h"
#include "kfac/kfac.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static job_t job; static float *w; static optim_t o; static sampler_t sm; static rng_t rng;
  static char path[128], prev[140]; static int ready;
  static loop_t L;
  static rt_t self;
  static kfac_t k;
  if (!ready) {
    train_cfg_t c; train_cfg_defaults(&c);
    snprintf(c.data, sizeof c.data, "synthetic:n=64"); snprintf(c.net, sizeof c.net, "F2 S10");   /* as fuzz_checkpoint.c */
    c.quiet = 1; c.threads = 1; c.algo_optdefs = train_seq_opts;
    c.steps = 1 << 20;   /* the seed (at update 2) resumes, so mutations reach the loop's figures */
    run_setup(&job.r, &c, c.batch);
    snprintf(path, sizeof path, "%s/r.ck", fuzz_dir());
    snprintf(prev, sizeof prev, "%s.prev", path);
    snprintf(job.r.cfg.checkpoint, sizeof job.r.cfg.checkpoint, "%s", path);   /* after run_setup: no probe files */
    job.r.cfg.resume = 1;
    job.algo = algo_find("msgd"); job.G = 1; job.nnodes = 1;
    w = malloc(job.r.net.nparams * sizeof(float));
    optim_init(&o, OPT_MSGD, job.r.net.nparams, c.momentum, c.wd);
    sampler_init(&sm, &job.r.data.train, c.seed, 0, 1, 0);
    rt_t s = {rt_real_ops(), 0, 1, -1, 1, NULL};
    self = s;
    kfac_cfg_t kc = {0.03f, 0, 1, KFAC_INV_FAST};
    kfac_init(&k, &job.r.net, &kc, 1);
    int mine[NET_MAX_LAYERS] = {0, 1};   /* the softmax layer's factors (3x3, 10x10), not the fc's (785x785) */
    kfac_own(&k, mine);
    ready = 1;
  }
  if (n < 1) return 0;
  const int mode = d[0];
  d++; n--;
  static uint8_t *buf; static size_t cap;
  const uint8_t *file = d;
  if (n >= 8 && !(mode & 1)) {   /* the checksum recomputed: the fields behind it are reached */
    if (n > cap) { free(buf); buf = malloc(n); cap = n; }
    memcpy(buf, d, n);
    uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(n - 4));
    memcpy(buf + n - 4, &crc, 4);
    file = buf;
  }
  if (mode & 2) {   /* this file as the .prev of a newest file that fails its checksum */
    fuzz_write(prev, file, n);
    static const uint8_t broken[16] = {'P', 'D', 'L', 'C', 'K', 'P', 'T', '1', 5, 0, 0, 0, 1, 2, 3, 4};
    fuzz_write(path, broken, sizeof broken);
  } else {
    unlink(prev);
    fuzz_write(path, file, n);
  }
  FUZZ_CALL({
    loop_init(&L, &self, &job, mode & 4 ? LOOP_LOCAL : LOOP_UPDATES, NULL, NULL, NULL);   /* the sections seq.c's opt_node registers */
    loop_state(&L, "params", w, job.r.net.nparams * sizeof(float));
    loop_state_optim(&L, "optimizer", &o);
    snap_add_sampler(&L.snap, "sampler", &sm);
    loop_state(&L, "rng", &rng, sizeof rng);
    if (mode & 8) {   /* K-FAC's owner state, as kfac_state registers it */
      loop_state(&L, "kfac.factors", k.own, k.own_n * sizeof(float));
      loop_state(&L, "kfac.folded", k.folded, sizeof k.folded);
      loop_state(&L, "kfac.inverted_at", k.inverted_at, sizeof k.inverted_at);
    }
    char why[400];
    if (loop_resume(&L) && (mode & 8) && kfac_state_check(&k, L.updates, why, sizeof why)) die("checkpoint: %s", why);
  });
  return 0;
}
