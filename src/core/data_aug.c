/* data_aug.c — online augmentation of training images (aug_t, dataset.h): random crop with zero
 * padding and horizontal flip (the usual CIFAR recipe: pad 4, crop 32x32, flip with p = 1/2), and
 * random scaling then cropping and elastic distortion (PP-ASGD, Sato et al. 2017, §4: "random
 * scaling, cropping and weak elastic distortion [18]" for ImageNet; [18] is Simard, Steinkraus and
 * Platt 2003, whose elastic distortion is implemented as they define it: alpha x the U(-1, 1)
 * displacement fields convolved with a normalised Gaussian of std sigma, bilinear resampling;
 * the paper gives neither value, so a run names them: elasticA-S).
 * Images are normalised floats [c][h][w]; a padded or uncovered pixel is 0, the train set's mean
 * (torchvision pads the raw image with black, which normalises to -mean/std instead: a constant
 * either way). Each call's draws come from one rng stream named by `key` (the sampler derives it from
 * its seed, shard, epoch and position), so augmentation is reproducible and needs no
 * state of its own. Order: scale, elastic, crop, flip. */
#include "core/dataset.h"
#include "util/util.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_AUG_DRAWS 0x41554731ull

void aug_parse(aug_t *a, const char *text, const char *spec) {
  memset(a, 0, sizeof *a);
  char buf[256];
  if (strlen(text) >= sizeof buf) die_usage("data set spec '%s': aug=%.40s... is too long", spec, text);
  snprintf(buf, sizeof buf, "%s", text);
  if (!strcmp(buf, "none")) return;
  char *save = NULL;
  for (char *it = strtok_r(buf, "+", &save); it; it = strtok_r(NULL, "+", &save)) {
    char *end;
    errno = 0;
    if (!strcmp(it, "flip")) a->flip = 1;
    else if (!strncmp(it, "crop", 4)) {
      long p = strtol(it + 4, &end, 10);
      if (errno || end == it + 4 || *end || p < 1 || p > 64)
        die_usage("data set spec '%s': aug item '%s': expected cropP with a padding P in [1, 64] (e.g. crop4)", spec, it);
      a->pad = (int)p;
    } else if (!strncmp(it, "scale", 5)) {
      double lo = strtod(it + 5, &end), hi = 0;
      if (end == it + 5 || *end != '-') lo = -1;
      else {
        const char *h = end + 1;
        hi = strtod(h, &end);
        if (end == h || *end) lo = -1;
      }
      if (errno || !(lo >= 0.25 && hi <= 4 && lo <= hi))
        die_usage("data set spec '%s': aug item '%s': expected scaleA-B with 0.25 <= A <= B <= 4 (e.g. scale0.8-1.25)", spec, it);
      a->smin = (float)lo; a->smax = (float)hi;
    } else if (!strncmp(it, "elastic", 7)) {
      double al = strtod(it + 7, &end), sg = 0;
      if (end == it + 7 || *end != '-') al = -1;
      else {
        const char *h = end + 1;
        sg = strtod(h, &end);
        if (end == h || *end) al = -1;
      }
      if (errno || !(al > 0 && al <= 100 && sg >= 0.5 && sg <= 32))
        die_usage("data set spec '%s': aug item '%s': expected elasticA-S with 0 < A <= 100 and 0.5 <= S <= 32 (e.g. elastic2-4)", spec, it);
      a->ealpha = (float)al; a->esigma = (float)sg;
    } else
      die_usage("data set spec '%s': unknown aug item '%s' (items: cropP, flip, scaleA-B, elasticA-S, joined by +; or none)", spec, it);
  }
  a->on = a->flip || a->pad > 0 || a->smax > 0 || a->ealpha > 0;
}

void aug_format(const aug_t *a, char *out, size_t cap) {
  size_t k = 0;
  out[0] = 0;
  if (!a->on) { snprintf(out, cap, "none"); return; }
  if (a->smax > 0) k += (size_t)snprintf(out + k, cap - k, "scale%g-%g", a->smin, a->smax);
  if (a->ealpha > 0 && k < cap) k += (size_t)snprintf(out + k, cap - k, "%selastic%g-%g", k ? "+" : "", a->ealpha, a->esigma);
  if (a->pad > 0 && k < cap) k += (size_t)snprintf(out + k, cap - k, "%scrop%d", k ? "+" : "", a->pad);
  if (a->flip && k < cap) snprintf(out + k, cap - k, "%sflip", k ? "+" : "");
}

/* Bilinear sample of plane p [h][w] at (y, x) in pixel-centre coordinates, clamped at the edges. */
static float bilinear(const float *p, int h, int w, double y, double x) {
  if (y < 0) y = 0;
  if (x < 0) x = 0;
  if (y > h - 1) y = h - 1;
  if (x > w - 1) x = w - 1;
  int y0 = (int)y, x0 = (int)x, y1 = y0 + 1 < h ? y0 + 1 : y0, x1 = x0 + 1 < w ? x0 + 1 : x0;
  double fy = y - y0, fx = x - x0;
  double a = p[(size_t)y0 * w + x0] * (1 - fx) + p[(size_t)y0 * w + x1] * fx;
  double b = p[(size_t)y1 * w + x0] * (1 - fx) + p[(size_t)y1 * w + x1] * fx;
  return (float)(a * (1 - fy) + b * fy);
}

void aug_apply(const aug_t *a, float *img, int c, int h, int w, uint64_t key) {
  if (!a->on) return;
  rng_t r;
  rng_seed(&r, key, STREAM_AUG_DRAWS);
  const size_t hw = (size_t)h * w;
  float *tmp = NULL;
  if (a->smax > 0) {   /* scale by s: the scaled image is (h s) x (w s); a random h x w window of it (s > 1), or it at a random place on a zero canvas (s < 1) */
    const double s = a->smin + (a->smax - a->smin) * rng_uniform(&r);
    const int hs = (int)lround(h * s), wsz = (int)lround(w * s);
    const int oy = (int)rng_below(&r, (uint64_t)abs(hs - h) + 1), ox = (int)rng_below(&r, (uint64_t)abs(wsz - w) + 1);
    tmp = xmalloc(sizeof(float) * (size_t)c * hw);
    for (int ch = 0; ch < c; ch++) {
      const float *src = img + (size_t)ch * hw;
      float *dst = tmp + (size_t)ch * hw;
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          const int si = hs >= h ? i + oy : i - oy, sj = wsz >= w ? j + ox : j - ox;   /* in the scaled image */
          if (si < 0 || si >= hs || sj < 0 || sj >= wsz) { dst[(size_t)i * w + j] = 0; continue; }
          dst[(size_t)i * w + j] = bilinear(src, h, w, (si + 0.5) * h / hs - 0.5, (sj + 0.5) * w / wsz - 0.5);
        }
    }
    memcpy(img, tmp, sizeof(float) * (size_t)c * hw);
  }
  if (a->ealpha > 0) {   /* elastic: fields dx, dy = alpha (G_sigma * U(-1, 1)), then in(i + dy, j + dx) bilinear */
    const int R = (int)ceilf(3 * a->esigma);
    float *g = xmalloc(sizeof(float) * (size_t)(2 * R + 1)), *fld = xmalloc(sizeof(float) * 2 * hw), *t = xmalloc(sizeof(float) * hw);
    double gs = 0;
    for (int k = -R; k <= R; k++) gs += g[k + R] = expf(-0.5f * (float)k * k / (a->esigma * a->esigma));
    for (int k = 0; k <= 2 * R; k++) g[k] = (float)(g[k] / gs);
    for (int f = 0; f < 2; f++) {
      float *F = fld + (size_t)f * hw;
      for (size_t q = 0; q < hw; q++) F[q] = (float)(2 * rng_uniform(&r) - 1);
      for (int i = 0; i < h; i++)   /* rows, then columns; zero outside */
        for (int j = 0; j < w; j++) {
          float v = 0;
          for (int k = -R; k <= R; k++) if (j + k >= 0 && j + k < w) v += g[k + R] * F[(size_t)i * w + j + k];
          t[(size_t)i * w + j] = v;
        }
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          float v = 0;
          for (int k = -R; k <= R; k++) if (i + k >= 0 && i + k < h) v += g[k + R] * t[(size_t)(i + k) * w + j];
          F[(size_t)i * w + j] = a->ealpha * v;
        }
    }
    if (!tmp) tmp = xmalloc(sizeof(float) * (size_t)c * hw);
    for (int ch = 0; ch < c; ch++)
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          const size_t q = (size_t)i * w + j;
          tmp[(size_t)ch * hw + q] = bilinear(img + (size_t)ch * hw, h, w, i + fld[hw + q], j + fld[q]);
        }
    memcpy(img, tmp, sizeof(float) * (size_t)c * hw);
    xfree(g); xfree(fld); xfree(t);
  }
  if (a->pad > 0) {   /* pad by P, crop h x w at offset (dy, dx) in [0, 2P]: out[i][j] = in[i + dy - P][j + dx - P] */
    const int P = a->pad;
    const int dy = (int)rng_below(&r, 2 * (uint64_t)P + 1) - P, dx = (int)rng_below(&r, 2 * (uint64_t)P + 1) - P;
    if (!tmp) tmp = xmalloc(sizeof(float) * (size_t)c * hw);
    for (int ch = 0; ch < c; ch++) {
      const float *src = img + (size_t)ch * hw;
      float *dst = tmp + (size_t)ch * hw;
      for (int i = 0; i < h; i++) {
        const int si = i + dy;
        for (int j = 0; j < w; j++) {
          const int sj = j + dx;
          dst[(size_t)i * w + j] = si >= 0 && si < h && sj >= 0 && sj < w ? src[(size_t)si * w + sj] : 0.0f;
        }
      }
    }
    memcpy(img, tmp, sizeof(float) * (size_t)c * hw);
  }
  if (a->flip && rng_below(&r, 2)) {
    for (int ch = 0; ch < c; ch++)
      for (int i = 0; i < h; i++) {
        float *row = img + (size_t)ch * hw + (size_t)i * w;
        for (int j = 0, k = w - 1; j < k; j++, k--) { float t = row[j]; row[j] = row[k]; row[k] = t; }
      }
  }
  xfree(tmp);
}
