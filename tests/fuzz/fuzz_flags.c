/* fuzz_flags.c — the `pdl train` flag parser (the common table and the chosen algorithm's): the
 * input, split at newlines, is argv. */
#include "tests/fuzz/fuzz.h"
#include "algo/algo.h"
#include "core/run.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static char buf[4096]; char *argv[66]; int argc = 0;
  if (n > sizeof buf - 1) n = sizeof buf - 1;
  memcpy(buf, d, n); buf[n] = 0;
  argv[argc++] = "train";
  for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t && argc < 65; t = strtok_r(NULL, "\n", &save)) argv[argc++] = t;
  argv[argc] = NULL;
  for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 0;  /* prints and exits 0 */
  static train_cfg_t c;
  /* as cmd_train: the algorithm first, then its table and the common one */
  FUZZ_CALL(train_cfg_defaults(&c); train_cfg_algo(&c, argc, argv); const algo_t *A = algo_find(c.algo);
            train_cfg_parse(&c, argc, argv, A ? A->opts : NULL, algo_refuse_flag));
  return 0;
}
