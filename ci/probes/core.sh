# ci/probes/core.sh — the training core's throughput (`pdl speed`, bench/core), sourced by
# ci/regress.sh. Each figure is this tree's img/s over the reference revision's img/s, both
# measured here in interleaved pairs (ab), so it holds on any CPU: no absolute speed, and no
# ratio to sgemm (which moves between CPU types), is compared. batch 128 is GEMM/Winograd-bound,
# batch 1 overhead- and memory-bound; 1 thread each (pdl speed's 2 timed windows after a warm-up).
speed_img_s() { # speed_img_s BATCH: img/s of the reference net on one thread
  jnum "$(pdl_json speed --net ppasgd-cifar --batch "$1" --threads 1 --repeats 2)" 'd["img_per_s"]'
}
probe_core_speed() {
  ab core.speed-b128-t1.speed_vs_ref rate speed_img_s 128
  ab core.speed-b1-t1.speed_vs_ref rate speed_img_s 1
}
