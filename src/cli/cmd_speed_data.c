/* cmd_speed_data.c — `pdl speed --data imagenet:DIR[,size=N][,classes=FILE][,aug=...]`: the lazy
 * JPEG path's rates (data_img.h). Two measurements on the train split, with `decoders` decoder
 * threads (data_pipe.c) beside the step's `threads` OpenMP threads (both printed: the thread budget
 * is decoders + threads):
 *   1. decode: batches consumed as fast as they come (no step), so the figure is the pipeline's
 *      throughput, images decoded (resized, normalised, augmented) per second;
 *   2. the step's wait: the net's training step (forward + backward, as pdl speed times it) on each
 *      prefetched batch; wait_frac = time blocked in pipe_next / wall time (the target is
 *      under 5% when the decoders keep up with the step).
 * Each window runs at least `window_s` seconds (and one batch); the last stdout line is JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/speed_data.h"
#include "core/data.h"
#include "core/data_img.h"
#include "core/model.h"
#include "util/util.h"

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int speed_data(const char *spec, const char *netname, int B, int threads, int decoders, double window_s) {
  if (strncmp(spec, "imagenet:", 9))
    die_usage("speed --data '%s': only imagenet:DIR[,size=N][,classes=FILE][,aug=...] is timed (the lazy JPEG path); "
              "the other sets are decoded once, into memory, at load", spec);
  /* the spec's options, as data_load reads them */
  char dir[1100], opts[512] = "";
  const char *rest = spec + 9, *comma = strchr(rest, ',');
  size_t len = comma ? (size_t)(comma - rest) : strlen(rest);
  if (len == 0 || len >= sizeof dir) die_usage("speed --data '%s': bad directory", spec);
  memcpy(dir, rest, len); dir[len] = 0;
  if (comma) snprintf(opts, sizeof opts, "%s", comma + 1);
  int side = 224;
  char classes[1024] = "";
  aug_t aug; memset(&aug, 0, sizeof aug);
  char *save = NULL;
  for (char *it = strtok_r(opts, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
    if (!strncmp(it, "size=", 5)) side = (int)parse_long("size", it + 5, 8, 1024);
    else if (!strncmp(it, "classes=", 8)) snprintf(classes, sizeof classes, "%s", it + 8);
    else if (!strncmp(it, "aug=", 4)) aug_parse(&aug, it + 4, spec);
    else die_usage("speed --data '%s': unknown option '%s' (size, classes, aug)", spec, it);
  }
  imgfolder_t *f = imgfolder_open(dir, "train", classes, side);
  net_t net; net_build(&net, netname, 3, side, side);
  if (net.classes != imgfolder_classes(f))
    die_usage("speed --data: net '%s' has %d outputs but %s/train has %d classes", netname, net.classes, dir, imgfolder_classes(f));
  net_check_memory(&net, B);
  fprintf(stderr, "pdl: speed --data: %d decoder thread%s + %d step thread%s (thread budget %d), batch %d of %dx%d, %d images in %d classes\n",
          decoders, decoders == 1 ? "" : "s", threads, threads == 1 ? "" : "s", decoders + threads, B, side, side,
          imgfolder_count(f), imgfolder_classes(f));
  const size_t img = (size_t)3 * side * side;
  float *x = xmalloc(sizeof(float) * (size_t)B * img);
  int *y = xmalloc(sizeof(int) * (size_t)B);
  const int depth = 4;

  /* 1. decode throughput */
  pipe_t *p = pipe_open(imgfolder_src(f), B, depth, decoders, 1, 0, 1, &aug);
  pipe_next(p, x, y, NULL);   /* warm-up: threads started */
  long d0, d1, n = 0;
  pipe_stats(p, &d0, NULL);   /* the images decoded in the window (not the ring filled before it) */
  double t0 = mono_s(), el = 0;
  while ((el = mono_s() - t0) < window_s || n == 0) { pipe_next(p, x, y, NULL); n += B; }
  pipe_stats(p, &d1, NULL);
  const double decode_rate = (double)(d1 - d0) / el;
  pipe_close(p);

  /* 2. the step's wait for data */
  float *w = xmalloc(sizeof(float) * net.nparams), *g = xcalloc(net.nparams, sizeof(float));
  net_init_params(&net, w, 1);
  workspace_t ws; ws_init(&ws, &net, B, threads, kernels_for(NULL, -1, NULL, NULL, 0), 1);
  p = pipe_open(imgfolder_src(f), B, depth, decoders, 2, 0, 1, &aug);
  pipe_next(p, x, y, NULL);
  net_forward(&ws, w, x, y, B, 1, NULL); net_backward(&ws, w, g, y, B, 1.0f / B);   /* warm-up step */
  double wait = 0, wt;
  long steps = 0;
  t0 = mono_s();
  while ((el = mono_s() - t0) < window_s || steps == 0) {
    pipe_next(p, x, y, &wt); wait += wt;
    net_forward(&ws, w, x, y, B, 1, NULL);
    net_backward(&ws, w, g, y, B, 1.0f / B);
    steps++;
  }
  long decoded; double busy;
  pipe_stats(p, &decoded, &busy);
  pipe_close(p);
  const double step_ms = 1e3 * (el - wait) / steps, wait_frac = wait / el;
  fprintf(stderr, "decode: %.0f images/s on %d decoder thread%s (%.0f per busy thread); with the %s step (%.1f ms at batch %d "
                  "on %d thread%s): wait for data %.1f%% of %.2f s\n",
          decode_rate, decoders, decoders == 1 ? "" : "s", busy > 0 ? decoded / busy : 0.0, net.name, step_ms, B, threads,
          threads == 1 ? "" : "s", 100 * wait_frac, el);
  json_t j; json_begin(&j);
  json_str(&j, "event", "speed_data");
  json_str(&j, "data", spec);
  json_str(&j, "net", net.name); json_str(&j, "net_spec", net.spec);
  json_int(&j, "batch", B); json_int(&j, "size", side);
  json_int(&j, "decoders", decoders); json_int(&j, "threads", threads); json_int(&j, "thread_budget", decoders + threads);
  json_num(&j, "decode_img_per_s", decode_rate);
  json_num(&j, "decode_img_per_s_per_thread", busy > 0 ? decoded / busy : 0.0);
  json_num(&j, "step_ms", step_ms);
  json_int(&j, "steps", steps);
  json_num(&j, "wait_frac", wait_frac);
  json_meta(&j);
  printf("%s\n", json_end(&j));
  ws_free(&ws); xfree(w); xfree(g); xfree(x); xfree(y);
  imgfolder_close(f);
  return 0;
}
