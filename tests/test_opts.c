/* test_opts.c — algorithm-owned options (util/optdef.h, algo/opts.h): every algorithm's table is
 * well formed; every option marked `resume` of every algorithm is in the checkpoint header, and a
 * checkpoint written with one value and resumed with another is refused naming that option (a
 * real snap_save / snap_read pair in a child process, which must exit 1 with the option's name on
 * stderr); an option not marked `resume` does not block a resume. */
#include <sys/wait.h>
#include <unistd.h>
#include "algo/algo.h"
#include "core/snap.h"
#include "harness.h"

/* A value for d different from the one in `area` (text), from its type, bounds or choices. */
static void other_value(const optdef_t *d, const void *area, char *buf, size_t n) {
  char cur[512]; optdef_format(d, area, cur, sizeof cur);
  switch (d->type) {
    case OD_BOOL: snprintf(buf, n, "%s", strcmp(cur, "0") ? "0" : "1"); return;
    case OD_ENUM: {
      int k = 0; while (d->choices[k]) k++;
      snprintf(buf, n, "%s", d->choices[(*(const int *)((const char *)area + d->off) + 1) % k]); return;
    }
    case OD_STR:
      if (d->choices) { for (int i = 0; d->choices[i]; i++) if (strcmp(cur, d->choices[i])) { snprintf(buf, n, "%s", d->choices[i]); return; } }
      snprintf(buf, n, "%s", strcmp(cur, "7") ? "7" : "8");   /* --staleness 7, --device-rate 7 */
      return;
    default: {
      double v = atof(cur), alt = d->hi;
      if (alt == v) alt = d->lo;
      if (alt == v) alt = (d->lo + d->hi) / 2;
      snprintf(buf, n, d->type == OD_INT || d->type == OD_LONG ? "%.0f" : "%.9g", alt);
    }
  }
}

static void cfg_for(train_cfg_t *c, const algo_t *A, const char *flag, const char *val) {
  char *argv[6] = {"train", "--algo", (char *)A->name, (char *)flag, (char *)val, NULL};
  int argc = flag ? (val ? 5 : 4) : 3;
  train_cfg_defaults(c);
  train_cfg_algo(c, argc, argv);
  train_cfg_parse(c, argc, argv, A->opts, algo_refuse_flag);
}

static void test_tables_well_formed(void) {
  for (int i = 0; i < algo_count; i++) {
    const algo_t *A = algo_table[i];
    EXPECT_MSG(A->opts != NULL, "--algo %s has no option table", A->name);
    for (int o = 0; A->opts && A->opts[o]; o++) {
      const optdef_t *d = A->opts[o];
      EXPECT_MSG(!strncmp(d->name, "--", 2) && d->help && *d->help, "--algo %s: option %d", A->name, o);
      EXPECT_MSG(!optdef_find(train_opts, d->name), "%s is both common and --algo %s's", d->name, A->name);
      for (int q = 0; q < o; q++) EXPECT_MSG(strcmp(A->opts[q]->name, d->name), "--algo %s lists %s twice", A->name, d->name);
      if (d->area == OD_ALGO && d->def) {   /* its default parses, within its bounds */
        train_cfg_t c; cfg_for(&c, A, NULL, NULL);
        char v[512]; optdef_format(d, train_cfg_area(&c, d), v, sizeof v);
        EXPECT_MSG(v[0], "%s of --algo %s: empty default", d->name, A->name);
      }
    }
  }
}

/* Saves a checkpoint under c1, reads it back under c2 in a child; returns the child's exit
 * status and its stderr's first line in msg. */
static int resume_with(const train_cfg_t *c1, const train_cfg_t *c2, char *msg, size_t n) {
  static int serial;
  char path[256], errf[256];
  snprintf(path, sizeof path, "/tmp/pdl_test_opts_%d_%d.ckpt", (int)getpid(), serial);
  snprintf(errf, sizeof errf, "/tmp/pdl_test_opts_%d_%d.err", (int)getpid(), serial++);
  run_t r1, r2; memset(&r1, 0, sizeof r1); memset(&r2, 0, sizeof r2);
  r1.cfg = *c1; r2.cfg = *c2; r1.nranks = r2.nranks = 1;
  r1.net.nparams = r2.net.nparams = 4;
  snprintf(r1.net.spec, sizeof r1.net.spec, "F4 S2"); snprintf(r2.net.spec, sizeof r2.net.spec, "F4 S2");
  float w[4] = {1, 2, 3, 4};
  snap_t s; snap_init(&s); snap_add(&s, "params", w, sizeof w);
  snap_save(path, &r1, 0, 1, 1, &s, 0);
  fflush(stdout);
  pid_t p = fork();
  if (p == 0) {
    if (!freopen(errf, "w", stderr)) _exit(3);
    /* unbuffered, as stderr was: freopen made it a buffered file stream, and under make asan the
     * leak check at exit ends the process before stdio's flush, so the message never got there */
    setvbuf(stderr, NULL, _IONBF, 0);
    snap_read(path, &r2, 0, 1, &s, 0);
    _exit(0);
  }
  int st = 0; waitpid(p, &st, 0);
  msg[0] = 0;
  FILE *f = fopen(errf, "r");
  if (f) { if (!fgets(msg, (int)n, f)) msg[0] = 0; fclose(f); }
  unlink(path); unlink(errf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_every_resume_option_refused(void) {
  int checked = 0;
  for (int i = 0; i < algo_count; i++) {
    const algo_t *A = algo_table[i];
    train_cfg_t base; cfg_for(&base, A, NULL, NULL);
    char msg[1024];
    EXPECT_MSG(resume_with(&base, &base, msg, sizeof msg) == 0, "--algo %s: same options refused: %s", A->name, msg);
    for (int o = 0; A->opts && A->opts[o]; o++) {
      const optdef_t *d = A->opts[o];
      if (!strcmp(d->name, "--platform")) continue;   /* a sim-only fixed field, checked on its own */
      char alt[512]; other_value(d, train_cfg_area(&base, d), alt, sizeof alt);
      train_cfg_t c2; cfg_for(&c2, A, d->name, d->type == OD_BOOL ? NULL : alt);
      if (d->type == OD_BOOL && !strcmp(alt, "0")) continue;   /* a flag cannot be given as off */
      const int rc = resume_with(&base, &c2, msg, sizeof msg);
      if (d->resume) {
        EXPECT_MSG(rc == 1 && strstr(msg, d->name), "--algo %s: resume with %s %s: exit %d, '%s'", A->name, d->name, alt,
                   rc, msg);
        checked++;
      } else {
        EXPECT_MSG(rc == 0, "--algo %s: %s is not resume-relevant but blocked the resume: %s", A->name, d->name, msg);
      }
    }
  }
  printf("  # %d (algorithm, option) pairs refused on resume with a changed value\n", checked);
  EXPECT(checked > 60);
}

/* The sequential optimizers' option (--with-replacement) is in their header too. */
static void test_sequential_resume_option(void) {
  train_cfg_t a, b; train_cfg_defaults(&a); train_cfg_defaults(&b);
  char *argv[4] = {"train", "--algo", "msgd", "--with-replacement"};
  train_cfg_algo(&a, 3, argv); train_cfg_parse(&a, 3, argv, train_seq_opts, algo_refuse_flag);
  train_cfg_algo(&b, 4, argv); train_cfg_parse(&b, 4, argv, train_seq_opts, algo_refuse_flag);
  char msg[1024];
  EXPECT_MSG(resume_with(&a, &b, msg, sizeof msg) == 1 && strstr(msg, "--with-replacement"), "msgd: '%s'", msg);
}

int main(void) {
  RUN(test_tables_well_formed);
  RUN(test_every_resume_option_refused);
  RUN(test_sequential_resume_option);
  return harness_exit();
}
