/* test_pp.c — the PP-ASGD prediction (eq. 2) and the P1 probe:
 *   c_S = sum_{s=1}^{S+1} mu^s equals mu (1 - mu^(S+1)) / (1 - mu);
 *   f_0(w, M) is bit-identical to the NAG look-ahead of optim.c;
 *   on a pure-momentum trajectory (zero gradients: M <- mu M, w <- w + M) f_{S0}(w_t, M_t) is
 *   exactly w_{t+S0+1}, so the probe's error is ~0 at S = S0 and its argmin is S0. */
#include "harness.h"
#include "util/rng.h"
#include "algo/pp.h"
#include "algo/pp_probe.h"
#include "optim/optim.h"
#include "util/util.h"

static void test_coef_formula(void) {
  float mus[] = {0.5f, 0.9f, 0.99f};
  for (int i = 0; i < 3; i++)
    for (int S = 0; S <= 30; S++) {
      double mu = mus[i], want = mu * (1 - pow(mu, S + 1)) / (1 - mu);
      /* c_S is rounded once to float from a double sum */
      EXPECT_NEAR(pp_coef(mus[i], S), want, 2e-7 * want + 1e-12, "float rounding of c_S");
    }
  EXPECT(pp_coef(0.99f, 0) == 0.99f);
}

static void test_f0_is_nag(void) {
  size_t n = 1000;
  optim_t o; optim_init(&o, OPT_NAG, n, 0.99f, 0);
  float *w = xmalloc(n * 4), *g = xmalloc(n * 4), *what = xmalloc(n * 4);
  rng_t r; rng_seed(&r, 5, 0);
  for (size_t i = 0; i < n; i++) w[i] = rng_normal(&r);
  for (int step = 0; step < 3; step++) {
    for (size_t i = 0; i < n; i++) g[i] = rng_normal(&r);
    optim_step(&o, w, g, 0.01f);
  }
  pp_predict(what, w, o.M, pp_coef(0.99f, 0), n);
  EXPECT_MSG(memcmp(what, optim_grad_point(&o, w), n * 4) == 0, "f_0 differs from NAG's w + mu M");
  optim_free(&o); xfree(w); xfree(g); xfree(what);
}

static void test_probe_momentum_trajectory(void) {
  size_t n = 64; float mu = 0.9f;
  float *w = xmalloc(n * 4), *M = xmalloc(n * 4);
  for (size_t i = 0; i < n; i++) { w[i] = (float)i; M[i] = 1.0f / (1 + (float)i); }
  for (int S0 = 0; S0 <= 9; S0 += 3) {
    pp_probe_t p; pp_probe_init(&p, n, S0, 20, 5, mu);
    float *ww = xmalloc(n * 4), *MM = xmalloc(n * 4);
    memcpy(ww, w, n * 4); memcpy(MM, M, n * 4);
    for (long t = 0; t < 60; t++) {
      for (size_t i = 0; i < n; i++) { MM[i] *= mu; ww[i] += MM[i]; }
      pp_probe_step(&p, t, ww, MM);
    }
    EXPECT(p.count == 20);
    json_t jj; json_frag_begin(&jj); pp_probe_json(&p, &jj); const char *buf = json_frag(&jj);
    int arg = 0;
    for (int S = 1; S < p.ns; S++) if (p.sum_err[S] < p.sum_err[arg]) arg = S;
    EXPECT_MSG(arg == S0, "S0 %d: argmin %d (%s)", S0, arg, buf);
    /* exact in real arithmetic; float trajectory + double distance leave ~1e-5 */
    EXPECT_NEAR(p.sum_err[S0] / p.count, 0, 1e-4, "float rounding of the trajectory");
    EXPECT(p.sum_asgd > 0);
    pp_probe_free(&p); xfree(ww); xfree(MM);
  }
  xfree(w); xfree(M);
}

int main(void) {
  RUN(test_coef_formula);
  RUN(test_f0_is_nag);
  RUN(test_probe_momentum_trajectory);
  return harness_exit();
}
