# ci/probes/runtime.sh — the two runtimes of the distributed algorithms, sourced by ci/regress.sh.
# sim (SimGrid, real numerics, simulated time): SSGD on 4 simulated workers is deterministic for a
# seed, so its accuracy and *simulated* time per update are compared tightly (PP-ASGD on the sim
# runtime: ci/probes/ppasgd.sh). real (MPI ranks): SSGD's measured time per update on 2 ranks
# (ppasgd-cifar net, b=16 per rank), multiplied by the OpenBLAS sgemm GFLOP/s that `pdl speed`
# (same net, batch 16, one thread) measured just before it (= the update's cost in GFLOP of
# sgemm, so a faster or slower machine cancels out), median of REPEATS. Its test loss is also
# deterministic (two ranks: the allreduce sums a + b, the same in either order), so every repeat
# must give the same value.
SIM_COMMON=(--runtime sim --net tiny --batch 16 --lr 0.001 --test-subset 1000 --seed 1 --threads 1)

probe_ssgd_sim() {
  local j
  j=$(pdl_json train --algo ssgd "${SIM_COMMON[@]}" --platform cluster:nodes=4,gpus=1 --steps 100 --train-subset 3200)
  emit runtime.ssgd-sim-4x1 "$j" test_err test_loss time_per_update_s
}

probe_ssgd_real_time() {
  local j s r
  for ((r = 0; r < REPEATS; r++)); do
    s=$(pdl_json speed --net ppasgd-cifar --batch 16 --threads 1 --repeats 3)
    j=$(mpi_json 2 train --algo ssgd --net ppasgd-cifar --batch 16 --steps 12 --threads 1 --train-subset 2000 --test-subset 100)
    metric runtime.ssgd-real-np2.update_time_x_sgemm "$(jnum "$j" "d['time_per_update_s'] * $(jnum "$s" 'd["sgemm_gflops"]')")"
    emit runtime.ssgd-real-np2 "$j" test_loss
  done
}
