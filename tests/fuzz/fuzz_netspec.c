/* fuzz_netspec.c — the net-spec parser (net_build) and the memory estimate, on arbitrary specs. */
#include "tests/fuzz/fuzz.h"
#include "core/model.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  const char *spec = fuzz_str(d, n, 400);
  static net_t net;
  FUZZ_CALL(net_build(&net, spec, 1, 28, 28); (void)net_memory_bytes(&net, 128));
  return 0;
}
