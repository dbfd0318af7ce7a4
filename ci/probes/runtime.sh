# ci/probes/runtime.sh — the two runtimes of the distributed algorithms, sourced by ci/regress.sh.
# sim (SimGrid, real numerics, simulated time): SSGD on 4 simulated workers is deterministic for a
# seed, so its accuracy and *simulated* time per update are compared tightly (PP-ASGD on the sim
# runtime: ci/probes/ppasgd.sh). real (MPI ranks): SSGD's measured time per update on 2 ranks
# (ppasgd-cifar net, b=16 per rank, 40 updates; ranks yield when idle, without which the time
# flipped between two modes 1.5x apart on a quiet 2-core machine), against the reference
# revision's in interleaved pairs (ab): the figure is the reference's time over this tree's.
# The test loss after 12 updates is deterministic (two ranks: the allreduce sums a + b, the same
# in either order), so both runs of probe_ssgd_real_loss must give the same value.
SIM_COMMON=(--runtime sim --net tiny --batch 16 --lr 0.001 --test-subset 1000 --seed 1 --threads 1)

probe_ssgd_sim() {
  local j
  j=$(pdl_json train --algo ssgd "${SIM_COMMON[@]}" --platform cluster:nodes=4,gpus=1 --steps 100 --train-subset 3200)
  emit runtime.ssgd-sim-4x1 "$j" test_err test_loss time_per_update_s
}

ssgd_real_update_s() { # time per update of SSGD on 2 ranks, 40 updates, ranks yield when idle
  local j
  j=$(OMPI_MCA_mpi_yield_when_idle=1 mpi_json 2 train --algo ssgd --net ppasgd-cifar --batch 16 --steps 40 --threads 1 \
      --train-subset 2000 --test-subset 100)
  jnum "$j" 'd["time_per_update_s"]'
}
probe_ssgd_real_time() {   # probe: timed
  ab runtime.ssgd-real-np2.update_speed_vs_ref time ssgd_real_update_s
}
probe_ssgd_real_loss() {   # probe: mpi. Twice: the two runs must agree exactly (NONDETERMINISTIC otherwise)
  local j r
  for r in 1 2; do
    j=$(mpi_json 2 train --algo ssgd --net ppasgd-cifar --batch 16 --steps 12 --threads 1 --train-subset 2000 --test-subset 100)
    emit runtime.ssgd-real-np2 "$j" test_loss
  done
}
