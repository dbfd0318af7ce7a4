# ci/probes/core.sh — the training core's throughput (`pdl speed`, bench/core), sourced by
# ci/regress.sh. Each figure is this tree's img/s over the reference revision's img/s, both
# measured here in interleaved pairs (ab), so it holds on any CPU: no absolute speed, and no
# ratio to sgemm (which moves between CPU types), is compared. batch 128 is GEMM/Winograd-bound,
# batch 1 overhead- and memory-bound; 1 thread each. Each side's figure is the BEST of pdl
# speed's 3 timed windows (after a warm-up): with another process on the machine, a window that
# shares a core or the memory bus with it is slow at random on either side (a memory-heavy
# neighbour put single batch-1 pairs at 0.66 and the median of 4 at 0.82 with the median window);
# the best window is each side's uncontended speed, and a real slowdown lowers it too.
speed_img_s() { # speed_img_s BATCH: img/s of the reference net on one thread, best window
  jnum "$(pdl_json speed --net ppasgd-cifar --batch "$1" --threads 1 --repeats 3)" 'd["img_per_s_max"]'
}
probe_core_speed() {   # probe: timed
  ab core.speed-b128-t1.speed_vs_ref rate speed_img_s 128
  ab core.speed-b1-t1.speed_vs_ref rate speed_img_s 1
}
