/* train_seq.c — sequential training: one replica, one optimizer (sgd, msgd, nag, adam, asgd,
 * mvasgd). Bit-identical for a seed and thread count. Saves a checkpoint each epoch, at the last update and on
 * SIGINT/SIGTERM when --checkpoint is given; results lines are fsync'ed as written.
 * --device cuda (every optimizer): the same loop (train_state_step) through kernels_cuda, with the
 * parameters, gradients and the optimizer's state in device memory and its updates run by the
 * table (sgd and msgd fused into the backward, as on the CPU); they come back to the host (w and
 * the optimizer o) only to evaluate (on the CPU), to checkpoint and at the end. */
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "core/run.h"
#include "rt/watchdog.h"

/* The backend of --device (the registry, contract/kernels.h kernels_for). */
static const kernels_t *backend(const train_cfg_t *c) {
  char desc[256];
  const kernels_t *k = kernels_for(c->cuda_device, "--device", desc, sizeof desc);
  if (c->cuda_device >= 0 && !c->quiet) fprintf(stderr, "pdl: training on cuda:%d (%s)\n", c->cuda_device, desc);
  return k;
}

int train_sequential(run_t *r) {
  const train_cfg_t *c = &r->cfg;
  opt_kind_t kind;
  if (optim_parse(c->algo, &kind)) die_usage("train: unknown --algo '%s' (pdl train --help)", c->algo);
  const net_t *net = &r->net;
  size_t n = net->nparams, img = dataset_image_floats(&r->data.train);
  int B = c->batch;
  float *w = xmalloc(n * sizeof(float)), *g = xcalloc(n, sizeof(float));  /* optim_step leaves g zeroed */
  float *x = xmalloc((size_t)B * img * sizeof(float));
  int *y = xmalloc((size_t)B * sizeof(int));
  net_init_params(net, w, c->seed);
  optim_t o; optim_init(&o, kind, n, c->momentum, c->wd);
  train_state_t d; train_state_init(&d, backend(c), w, g, &o);
  workspace_t ws; ws_init(&ws, net, B, r->threads, d.k, c->seed);
  sampler_t s; sampler_init(&s, &r->data.train, c->seed, 0, 1, c->with_replacement);

  ckpt_pos_t pos; memset(&pos, 0, sizeof pos);
  long step = 0; double loss_acc = 0; long loss_n = 0;
  if (c->resume && checkpoint_load(c->checkpoint, r, w, &o, &pos) == 0) {
    step = pos.step; loss_acc = pos.train_loss_acc; loss_n = pos.train_loss_n;
    if (c->with_replacement) s.rng = pos.sampler_rng; else sampler_seek(&s, pos.sampler_epoch, pos.sampler_pos);
    ws.rng = pos.ws_rng;
    if (step > r->total_steps)
      die("checkpoint %s is at update %ld, past this run's %ld updates: nothing to resume (ask for more "
          "--steps/--epochs, or drop --resume to start over)", c->checkpoint, step, r->total_steps);
    if (!c->quiet) fprintf(stderr, "pdl: resumed from %s at update %ld%s\n", c->checkpoint, step,
                           step == r->total_steps ? " (the run is complete: evaluating it)" : "");
  }
  train_state_upload(&d, w, &o);
  int resumed_complete = step > 0 && step == r->total_steps;
  if (r->rank == 0) {
    json_t j; run_json_common(r, &j, "config");
    json_int(&j, "nparams", (long long)n);
    json_int(&j, "steps_per_epoch", r->steps_per_epoch);
    json_int(&j, "total_steps", r->total_steps);
    json_int(&j, "resumed_at", step);
    results_write(&r->res, json_end(&j));
  }
  install_stop_handlers();
  double t_start = now_s() - 0.0;
  const char *hang = getenv("PDL_TEST_HANG_STEP");   /* test hook: a hang at that step (t_train_cli.sh) */
  long hang_at = hang ? atol(hang) : -1;
  for (; step < r->total_steps && !pdl_stop_signal; step++) {
    watchdog_context("sequential %s: step %ld of %ld", c->algo, step, r->total_steps);
    while (step == hang_at) sleep(1);
    sampler_next(&s, B, x, y);
    double loss = train_state_step(&d, &ws, x, y, B, lr_at(c->lr, step, c->warmup));
    loss_acc += loss; loss_n++;
    r->updates = step + 1;
    r->epochs_done = (double)(step + 1) / (double)r->steps_per_epoch;
    if (run_check_diverged(r, loss, step)) { step++; break; }
    int epoch_end = (step + 1) % r->steps_per_epoch == 0;
    if (epoch_end || (c->eval_every && (step + 1) % c->eval_every == 0) || step + 1 == r->total_steps) {
      r->train_loss = loss_acc / (double)loss_n; loss_acc = 0; loss_n = 0;
      train_state_download(&d, w, &o);
      run_eval(r, optim_eval_point(&o, w), now_s() - t_start, NULL);
    } else if (!c->quiet) {
      progress("step %ld/%ld  epoch %.2f  loss %.4f  %.0f img/s", step + 1, r->total_steps, r->epochs_done,
               loss, (double)(step + 1) * B / (now_s() - t_start));
    }
    if (c->checkpoint[0] && (epoch_end || step + 1 == r->total_steps)) {   /* and the final state, mid-epoch too */
      pos.step = step + 1; pos.sampler_epoch = s.epoch; pos.sampler_pos = s.pos; pos.sampler_rng = s.rng;
      pos.ws_rng = ws.rng; pos.train_loss_acc = loss_acc; pos.train_loss_n = loss_n;
      train_state_download(&d, w, &o);
      checkpoint_save(c->checkpoint, r, w, &o, &pos);
    }
  }
  train_state_download(&d, w, &o); /* what follows reads w (and o) on the host */
  if (pdl_stop_signal) {
    if (c->checkpoint[0]) {
      pos.step = step; pos.sampler_epoch = s.epoch; pos.sampler_pos = s.pos; pos.sampler_rng = s.rng;
      pos.ws_rng = ws.rng; pos.train_loss_acc = loss_acc; pos.train_loss_n = loss_n;
      checkpoint_save(c->checkpoint, r, w, &o, &pos);
      fprintf(stderr, "pdl: signal %d: checkpoint saved to %s at update %ld\n", pdl_stop_signal, c->checkpoint, step);
    }
    if (loss_n) r->train_loss = loss_acc / (double)loss_n;
    run_eval(r, optim_eval_point(&o, w), now_s() - t_start, NULL);
  }
  if (r->diverged && loss_n) r->train_loss = loss_acc / (double)loss_n;
  if (resumed_complete) {   /* a finished run resumed: its summary, from the checkpoint's parameters */
    r->updates = step; r->epochs_done = (double)step / (double)r->steps_per_epoch;
    if (loss_n) r->train_loss = loss_acc / (double)loss_n;
    run_eval(r, optim_eval_point(&o, w), now_s() - t_start, NULL);
  }
  run_summary(r, now_s() - t_start, NULL);
  run_dump_params(w, n);
  sampler_free(&s); ws_free(&ws); train_state_free(&d); optim_free(&o);
  xfree(w); xfree(g); xfree(x); xfree(y);
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}
