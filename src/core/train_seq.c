/* train_seq.c — sequential training: one replica, one optimizer (sgd, msgd, nag, adam, asgd,
 * mvasgd). Bit-identical for a seed and thread count. Saves a checkpoint each epoch, at the last update and on
 * SIGINT/SIGTERM when --checkpoint is given; results lines are fsync'ed as written.
 * --device cuda (every optimizer): the same loop (train_state_step) through kernels_cuda, with the
 * parameters, gradients and the optimizer's state in device memory and its updates run by the
 * table (sgd and msgd fused into the backward, as on the CPU); they come back to the host (w and
 * the optimizer o) only to checkpoint and at the end. The data sets live on the device too, and the
 * evaluation runs there (resident batches, below). */
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "core/run.h"
#include "rt/watchdog.h"

/* The backend of --device (the registry, contract/kernels.h kernels_for). */
static const kernels_t *backend(const train_cfg_t *c) {
  char desc[256];
  const int dev = kernels_device_index(&c->device, 0, "--device");   /* one process: device 0 unless named */
  const kernels_t *k = kernels_for(&c->device, dev, "--device", desc, sizeof desc);
  if (dev >= 0 && !c->quiet) fprintf(stderr, "pdl: training on %s:%d (%s)\n", c->device.backend, dev, desc);
  return k;
}

/* Resident batches (issue 35 B, F): the training and test sets kept in the backend's memory
 * (resident_set_t), each chunk of up to CHUNK steps gathered there from one upload of their
 * indices, the chunk's losses read back together (train_state_steps), and every evaluation run
 * there (net_evaluate_ws). A chunk never crosses an evaluation, an epoch end (a checkpoint) or the
 * last step, so those see the same state as the step-by-step loop; divergence is still reported at
 * its exact step, but the parameters then evaluated are those at the chunk's end (up to CHUNK - 1
 * updates later: a diverged run's), and the watchdog (--timeout) sees progress once per chunk (a
 * device's queued steps are only known done at the chunk's read back). The default on a device; PDL_TRAIN_RESIDENT=1 runs the same loop
 * on the CPU (t_train_resident.sh: the same results as the step-by-step loop), 0 turns it off (a
 * device then gets each batch uploaded and the loss read back every step, and still evaluates). */
enum { CHUNK = 64 };
static int resident_mode(const train_state_t *d) {
  const char *e = getenv("PDL_TRAIN_RESIDENT");
  if (!e || !*e) return d->device;
  if (strcmp(e, "0") && strcmp(e, "1")) die("PDL_TRAIN_RESIDENT=%s: say 0 (batches from the host) or 1 (resident)", e);
  return e[0] == '1';
}
/* The first update count after `done` at which the loop looks at the state: an epoch end, an
 * --eval-every evaluation or the last update. */
static long next_look(const run_t *r, long done) {
  const long spe = r->steps_per_epoch, ev = r->cfg.eval_every;
  long b = (done / spe + 1) * spe;
  if (ev > 0 && (done / ev + 1) * ev < b) b = (done / ev + 1) * ev;
  return b < r->total_steps ? b : r->total_steps;
}
/* Evaluate the optimizer's evaluation point where the parameters are: on a device, on the resident
 * test set (te->k set) or with its batches uploaded (PDL_TRAIN_RESIDENT=0: the same numbers, issue
 * 35 F), in ews; on the host, with run.c's evaluation workspace. */
static void evaluate(run_t *r, train_state_t *d, float *w, optim_t *o, workspace_t *ews, const resident_set_t *te,
                     double t) {
  const dataset_t *ts = &r->data.test;
  if (te->k || d->device) {
    if (te->k) net_evaluate_ws(ews, optim_eval_point(d->o, d->w), te->x, te->y, te->n, &r->test_err, &r->test_loss);
    else net_evaluate(ews, optim_eval_point(d->o, d->w), ts->x, ts->y, ts->n, &r->test_err, &r->test_loss);
    run_eval_write(r, t, NULL);
  } else {
    train_state_download(d, w, o);
    run_eval(r, optim_eval_point(o, w), t, NULL);
  }
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
  int res = resident_mode(&d);
  if (res && d.k->mem_free) {   /* the data sets must leave the device room: at most half its free memory */
    const dataset_t *tr = &r->data.train, *te = &r->data.test;
    const double need = ((double)tr->n + te->n) * ((double)img * sizeof(float) + sizeof(int)), avail = (double)d.k->mem_free();
    if (need > avail / 2) {
      if (!c->quiet)
        fprintf(stderr, "pdl: the data sets (%.0f MiB) would take over half the device's free memory (%.0f MiB): "
                "batches uploaded every step instead of resident\n", need / 1048576, avail / 1048576);
      res = 0;
    }
  }
  resident_set_t S_tr, S_te; memset(&S_tr, 0, sizeof S_tr); memset(&S_te, 0, sizeof S_te);
  workspace_t ews; memset(&ews, 0, sizeof ews);
  int *idx = NULL;
  if (res) {
    resident_set_init(&S_tr, d.k, &r->data.train);
    resident_set_init(&S_te, d.k, &r->data.test);
    idx = xmalloc((size_t)CHUNK * B * sizeof(int));
  }
  if (res || d.device) ws_init(&ews, net, r->eval_ws.max_batch, r->threads, d.k, c->seed);   /* run.c's evaluation batches */

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
    if (res) json_int(&j, "resident_chunk", CHUNK);   /* resident batches, up to CHUNK steps a read back */
    results_write(&r->res, json_end(&j));
  }
  install_stop_handlers();
  double t_start = now_s() - 0.0;
  const char *hang = getenv("PDL_TEST_HANG_STEP");   /* test hook: a hang at that step (t_train_cli.sh) */
  long hang_at = hang ? atol(hang) : -1;
  float lrs[CHUNK]; double losses[CHUNK];
  while (step < r->total_steps && !pdl_stop_signal) {
    int K = 1, stop = 0;
    if (res) {   /* a chunk of resident steps, up to the next look at the state */
      const long b = next_look(r, step);
      K = b - step < CHUNK ? (int)(b - step) : CHUNK;
    }
    if (K == 1) watchdog_context("sequential %s: step %ld of %ld", c->algo, step, r->total_steps);
    else watchdog_context("sequential %s: steps %ld-%ld of %ld", c->algo, step, step + K - 1, r->total_steps);
    while (hang_at >= step && hang_at < step + K) sleep(1);
    if (res) {
      for (int j = 0; j < K; j++) { sampler_next_idx(&s, B, idx + (size_t)j * B); lrs[j] = lr_at(c->lr, step + j, c->warmup); }
      train_state_steps(&d, &ws, &S_tr, idx, K, B, lrs, losses);
    } else {
      sampler_next(&s, B, x, y);
      losses[0] = train_state_step(&d, &ws, x, y, B, lr_at(c->lr, step, c->warmup));
    }
    for (int j = 0; j < K; j++, step++) {
      const double loss = losses[j];
      loss_acc += loss; loss_n++;
      r->updates = step + 1;
      r->epochs_done = (double)(step + 1) / (double)r->steps_per_epoch;
      if (run_check_diverged(r, loss, step)) { step++; stop = 1; break; }
      int epoch_end = (step + 1) % r->steps_per_epoch == 0;
      if (epoch_end || (c->eval_every && (step + 1) % c->eval_every == 0) || step + 1 == r->total_steps) {
        r->train_loss = loss_acc / (double)loss_n; loss_acc = 0; loss_n = 0;
        evaluate(r, &d, w, &o, &ews, &S_te, now_s() - t_start);
      } else if (!c->quiet && j == K - 1) {
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
    if (stop) break;
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
    evaluate(r, &d, w, &o, &ews, &S_te, now_s() - t_start);
  }
  if (r->diverged && loss_n) r->train_loss = loss_acc / (double)loss_n;
  if (resumed_complete) {   /* a finished run resumed: its summary, from the checkpoint's parameters */
    r->updates = step; r->epochs_done = (double)step / (double)r->steps_per_epoch;
    if (loss_n) r->train_loss = loss_acc / (double)loss_n;
    evaluate(r, &d, w, &o, &ews, &S_te, now_s() - t_start);
  }
  char extra[64] = "";   /* chunks run as one CUDA graph replay (train_state_steps) */
  if (res) snprintf(extra, sizeof extra, "\"graph_chunks\":%ld", d.graph_launches);
  run_summary(r, now_s() - t_start, extra[0] ? extra : NULL);
  run_dump_params(w, n);
  if (res) { resident_set_free(&S_tr); resident_set_free(&S_te); xfree(idx); }
  if (res || d.device) ws_free(&ews);
  sampler_free(&s); ws_free(&ws); train_state_free(&d); optim_free(&o);
  xfree(w); xfree(g); xfree(x); xfree(y);
  return pdl_stop_signal ? 128 + pdl_stop_signal : 0;
}
