/* env.h — the one table of environment variables pdl reads (base/util/env.c), each with its type,
 * bounds or choices, default and purpose. Every read of a variable goes through env_get/env_long
 * here, which check the value against the table and exit 2 naming the variable when it is out of
 * bounds, so a typo never reaches a test hook, SimGrid or a kernel as garbage. `pdl --help-env`
 * prints the table (env_help). Self-contained (libc only): the SimGrid runtime (libpdlsim.so,
 * src/sim) links its own copy. */
#ifndef PDL_ENV_H
#define PDL_ENV_H
#include <stdio.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The variable's value, checked against the table; NULL when unset. An empty value is returned as
 * is (each variable's row says what empty means: for all but PDL_DUMP_PARAMS, the default). A name
 * missing from the table is a programming error (exit 1, "internal"). */
const char *env_get(const char *name);
/* An integer variable's value (checked against its range); dflt when unset or empty. */
long env_long(const char *name, long dflt);
/* Checks every variable of the table that is set; exits 2 naming the first bad one. pdl's main()
 * calls it first, so a bad value is refused before any work, whichever command reads it. */
void env_check_all(void);
/* The table, one variable a paragraph (pdl --help-env). */
void env_help(FILE *f);
/* 0 when value is a valid SimGrid log control string as pdl accepts it (PDL_SIM_LOG): space-separated
 * CATEGORY.thresh:LEVEL settings; otherwise why, in why. */
int env_check_xbt_log(const char *value, char *why, size_t n);

#ifdef __cplusplus
}
#endif
#endif
