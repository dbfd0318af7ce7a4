# ci/probes/core.sh — the training core's throughput (`pdl speed`, bench/core), sourced by
# ci/regress.sh. pdl speed measures OpenBLAS sgemm GFLOP/s (1024^3, same thread count) before and
# after the timed training steps in the same process; the gate compares the ratios, not the
# absolute rates, so a slower or busier machine does not fail CI. REPEATS runs, median judged.
# batch 128 is GEMM-bound (GFLOP/s ratio), batch 1 overhead-bound (images/s per sgemm GFLOP/s).
probe_core_speed() {
  local j r
  for ((r = 0; r < REPEATS; r++)); do
    j=$(pdl_json speed --net ppasgd-cifar --batch 128 --threads 1 --repeats 3)
    metric core.speed-b128-t1.gflops_over_sgemm "$(jnum "$j" 'd["ratio_to_sgemm"]')"
    j=$(pdl_json speed --net ppasgd-cifar --batch 1 --threads 1 --repeats 3)
    metric core.speed-b1-t1.img_s_per_sgemm_gflops "$(jnum "$j" 'd["img_per_s"] / d["sgemm_gflops"]')"
  done
}
