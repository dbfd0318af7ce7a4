/* fuzz_platform.c — the sim platform spec parser (plat_parse); inputs starting with '<' are a
 * file: platform's XML (checked up to SimGrid, which the forked child parses in a real run). */
#include "tests/fuzz/fuzz.h"
#include "sim/sim_internal.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  char spec[4200], err[512];
  plat_t p; memset(&p, 0, sizeof p);
  if (n && d[0] == '<') {
    char path[128]; snprintf(path, sizeof path, "%s/p.xml", fuzz_dir());
    fuzz_write(path, d, n);
    snprintf(spec, sizeof spec, "file:%s", path);
  } else snprintf(spec, sizeof spec, "%s", fuzz_str(d, n, 400));
  FUZZ_CALL(if (plat_parse(spec, 0, 0, &p, err, sizeof err) == 0) plat_free(&p));
  return 0;
}
