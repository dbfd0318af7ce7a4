/* optdef.c — see optdef.h. */
#include "util/optdef.h"
#include <stdint.h>
#include <string.h>
#include "util/util.h"

void optdef_set(const optdef_t *d, void *area, const char *val) {
  char *p = (char *)area + d->off;
  if (d->set) { d->set(d, area, val); return; }
  if (d->type != OD_BOOL && !val) die_usage("train: %s needs a value", d->name);
  if (d->type == OD_STR && d->choices) {
    int ok = 0;
    for (int i = 0; d->choices[i]; i++) ok |= !strcmp(val, d->choices[i]);
    if (!ok) {
      char list[256]; size_t k = 0; list[0] = 0;
      for (int i = 0; d->choices[i] && k < sizeof list; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", i ? ", " : "", d->choices[i]);
      die_usage("train: %s must be one of %s, not '%s'", d->name, list, val);
    }
  }
  switch (d->type) {
    case OD_INT: *(int *)p = (int)parse_long(d->name, val, (long)d->lo, (long)d->hi); break;
    case OD_LONG: *(long *)p = parse_long(d->name, val, (long)d->lo, (long)d->hi); break;
    case OD_FLOAT: *(float *)p = (float)parse_double(d->name, val, d->lo, d->hi); break;
    case OD_DOUBLE: *(double *)p = parse_double(d->name, val, d->lo, d->hi); break;
    case OD_BOOL:
      if (val && strcmp(val, "1") && strcmp(val, "0")) die_usage("train: %s takes no value, not '%s'", d->name, val);
      *(int *)p = !val || !strcmp(val, "1");
      break;
    case OD_STR: {
      size_t bad = 0;
      if (!utf8_valid(val, &bad))
        die_usage("train: %s: not valid UTF-8 (byte 0x%02x at offset %zu); it goes into JSON lines, which are UTF-8",
                  d->name, (unsigned char)val[bad], bad);
      if (strlen(val) >= d->size) die_usage("train: %s: %zu characters; at most %zu are allowed", d->name, strlen(val), d->size - 1);
      snprintf(p, d->size, "%s", val);
      break;
    }
    case OD_ENUM: {
      char list[256]; size_t k = 0; list[0] = 0;
      for (int i = 0; d->choices[i]; i++) {
        if (!strcmp(val, d->choices[i])) { *(int *)p = i; return; }
        if (k < sizeof list) k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", i ? ", " : "", d->choices[i]);
      }
      die_usage("train: %s must be one of %s, not '%s'", d->name, list, val);
    }
  }
}

void optdef_format(const optdef_t *d, const void *area, char *buf, size_t n) {
  const char *p = (const char *)area + d->off;
  switch (d->type) {
    case OD_INT: case OD_BOOL: snprintf(buf, n, "%d", *(const int *)p); break;
    case OD_LONG: snprintf(buf, n, "%ld", *(const long *)p); break;
    case OD_FLOAT: snprintf(buf, n, "%.9g", (double)*(const float *)p); break;
    case OD_DOUBLE: snprintf(buf, n, "%.17g", *(const double *)p); break;
    case OD_STR: snprintf(buf, n, "%s", p); break;
    case OD_ENUM: snprintf(buf, n, "%s", d->choices[*(const int *)p]); break;
  }
}

void optdef_usage(FILE *f, const optdef_t *d) {
  char head[64];
  snprintf(head, sizeof head, "%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
  fprintf(f, "  %-22s %s", head, d->help);
  if (d->def && *d->def && d->type != OD_BOOL) fprintf(f, " (%s)", d->def);
  fprintf(f, "\n");
}

const optdef_t *optdef_find(const optdef_t *const *list, const char *name) {
  for (int i = 0; list && list[i]; i++) if (!strcmp(list[i]->name, name)) return list[i];
  return NULL;
}
