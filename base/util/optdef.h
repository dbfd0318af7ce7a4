/* optdef.h — option tables: one descriptor per command-line flag (name, type, bounds or choices,
 * default, help, where the value is stored, whether a resume must match it). One table serves the
 * parser, --help, the checkpoint header's text of the options a resume must match, and the
 * refusal of a flag that the chosen algorithm does not read.
 *
 * Storage: a descriptor names an offset into one of two places, told by `area`: OD_CFG, the run's
 * common configuration (core/run.h train_cfg_t), or OD_ALGO, the chosen algorithm's own option
 * block (train_cfg_t.algo_opts: a struct that the algorithm's file declares and reads; nothing
 * outside that file knows its layout). An algorithm's descriptors are a NULL-terminated list of
 * pointers (algo_t.opts), so families share one descriptor (--tau) and keep their own. */
#ifndef PDL_OPTDEF_H
#define PDL_OPTDEF_H
#include <stddef.h>
#include <stdio.h>

typedef enum { OD_INT, OD_LONG, OD_FLOAT, OD_DOUBLE, OD_STR, OD_ENUM, OD_BOOL } od_type_t;
typedef enum { OD_CFG, OD_ALGO } od_area_t;

typedef struct optdef {
  const char *name;            /* "--tau" */
  od_type_t type;
  double lo, hi;               /* numeric bounds (inclusive) */
  const char *const *choices;  /* OD_ENUM: NULL-terminated names; the stored int is the index.
                                * OD_STR: if set, the value must be one of them */
  const char *def;             /* the default as text (parsed like a user's value; NULL: none) */
  const char *arg;             /* placeholder in --help ("T"); NULL for OD_BOOL */
  const char *help;            /* one line */
  od_area_t area;
  size_t off, size;            /* offset in the area; OD_STR: the buffer's size */
  int resume;                  /* 1: a resume must match it (it is in the checkpoint header) */
  /* optional: sets the value itself (flags with a special form, e.g. --warmup epoch); `type`
   * still says how the value is stored, for optdef_format */
  void (*set)(const struct optdef *d, void *area, const char *val);
} optdef_t;

/* Sets the option from text (OD_BOOL: val NULL or "1"/"0"); exits 2 naming the flag on a bad
 * value, as every pdl flag does. */
void optdef_set(const optdef_t *d, void *area, const char *val);
/* The value as canonical text (%.9g for floats, the choice's name for enums). */
void optdef_format(const optdef_t *d, const void *area, char *buf, size_t n);
/* "  --tau T        help (default)" */
void optdef_usage(FILE *f, const optdef_t *d);
/* The descriptor of `name` in a NULL-terminated list, or NULL. */
const optdef_t *optdef_find(const optdef_t *const *list, const char *name);
#endif
