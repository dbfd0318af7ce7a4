# ci/probes/ppasgd.sh — PP-ASGD paper (docs/PAPERS.md §1), sourced by ci/regress.sh.
# Accuracy under emulated staleness (the P2 set-up: one process, the gradient applied at update t
# taken at the w_hat published after update t-S) and the P1 prediction-error probe, PP-ASGD beside
# plain ASGD. Deterministic: one process, --threads 1, fixed seed, so the figures are bit-stable.
# P3 set-up on the sim runtime: 32 simulated devices (4 nodes x 8), staleness measured online.
# Set-up: tiny net, Fashion-MNIST (first 1600 training images = 100 updates of b=16 per epoch,
# first 1000 test images), mu = 0.99 (the paper's), lr 1e-3, S = 7 (the paper's measured S0);
# the P1 probe averages 50 updates after the first epoch, so 160 updates cover it.
PP_EMULATE=(--net tiny --batch 16 --lr 0.001 --momentum 0.99 --staleness emulate:7 --probe 50
  --steps 160 --train-subset 1600 --test-subset 1000 --seed 1 --threads 1)

probe_ppasgd_emulate() {
  local j
  j=$(pdl_json train --algo ppasgd "${PP_EMULATE[@]}")
  emit ppasgd.emulate-S7 "$j" test_err test_loss pred_argmin pred_ratio
  j=$(pdl_json train --algo asgd-dist "${PP_EMULATE[@]}")
  emit asgd.emulate-S7 "$j" test_err test_loss
}

# P3 shape (Fig. 3 left): PP-ASGD and ASGD on 4 x 8 simulated devices of 0.5 GFLOP/s (the tiny
# net's gradients are cheap, so a slow device puts S_bar near the paper's 8.5: 7.25), b = 1,
# 150 updates. SimGrid, real numerics: deterministic, so S_bar, B_bar and the simulated time per
# update are compared as tightly as the accuracy.
PP_SIM_P3=(--runtime sim --platform cluster:nodes=4,gpus=8 --device-rate 0.5 --net tiny --batch 1
  --lr 0.0003 --steps 150 --train-subset 20000 --test-subset 1000 --seed 1 --threads 1)

probe_ppasgd_sim_p3() {
  local j
  j=$(pdl_json train --algo ppasgd "${PP_SIM_P3[@]}")
  emit ppasgd.sim-P3-4x8 "$j" test_err test_loss S_bar B_bar time_per_update_s
  j=$(pdl_json train --algo asgd-dist "${PP_SIM_P3[@]}")
  emit asgd.sim-P3-4x8 "$j" test_err test_loss
}
