# ci/probes/kfac.sh — K-FAC (docs/PAPERS.md §3), sourced by ci/regress.sh:
#   a deterministic K-FAC run on vgg-small (one thread: bit-identical for a seed), its accuracy;
#   kfac-dist on 4 SimGrid nodes (real numerics, simulated time): the time is a pure function of
#   the message sizes and the flop counts, so a change to the communication pattern moves it;
#   the inversions (probe_kfac_inverse, a timed probe: it runs alone, after the others): the fast
#   float path's error against the LAPACKE double reference, and its speed ratio to that reference
#   measured in the same run (pdl inverse).
KFAC_SEQ=(--algo kfac --data fashion-mnist --net vgg-small --train-subset 2000 --test-subset 500 --batch 32 --lr 0.003
  --steps 30 --seed 1 --threads 1)
KFAC_SIM=(--algo kfac-dist --runtime sim --platform cluster:nodes=4,gpus=1 --device-rate 100 --data fashion-mnist
  --net tiny --train-subset 1024 --test-subset 500 --batch 16 --lr 0.01 --steps 12 --seed 1 --threads 1)
probe_kfac() {
  local j
  j=$(pdl_json train "${KFAC_SEQ[@]}") || return 1
  emit kfac.seq-vgg-small "$j" test_err test_loss
  j=$(pdl_json train "${KFAC_SIM[@]}") || return 1
  emit kfac.dist-sim-4n "$j" test_err time_s
}
probe_kfac_inverse() {   # probe: timed
  local j
  j=$(pdl_json inverse --sizes 1024 --cond 1e4 --reps 5 --threads 2) || return 1
  emit kfac.inverse-1024 "$j" speedup fast_max_err
}
