# ci/probes/coll.sh — the collectives (`pdl coll`, bench/collectives), sourced by ci/regress.sh.
# Correctness: #wrong of every op on 3 MPI ranks (so the v ops and block splits are uneven),
# sizes 4 B..256 KiB, 2 validation passes; NCCL on one device where a CUDA device exists.
# Throughput: Allreduce busbw at 4 MiB on 2 ranks, this tree's over the reference revision's,
# measured in interleaved pairs (ab). Ranks yield when idle (mpi_yield_when_idle=1): on a 2-core
# machine shared with other work a busy-polling rank starves its peer.
COLL_OPS=(allreduce reduce allgather reduce_scatter bcast reduce_scatterv allgatherv
  reduce_scatterv_via_allreduce allgatherv_via_allreduce memcpy)

coll_wrong() { # coll_wrong FILE: #wrong summed over the sizes of a --json file
  python3 -c 'import json,sys; print(sum(json.loads(l)["wrong"] for l in open(sys.argv[1])))' "$1"
}

probe_coll_wrong() {   # probe: mpi
  local op rc f
  for op in "${COLL_OPS[@]}"; do
    f=$WORK/coll-$op.jsonl; rc=0
    OMPI_MCA_mpi_yield_when_idle=1 mpi_json 3 coll --op "$op" -m 4:256K -f 8 -i 5 -x 1 -c 2 --json "$f" >/dev/null || rc=$?
    [ $rc -le 1 ] && [ -s "$f" ] || return 1   # 1 = wrong results: still record the count
    metric "coll.mpi-np3.$op.wrong" "$(coll_wrong "$f")"
  done
}

probe_coll_nccl_wrong() {
  local out rc=0 f=$WORK/coll-nccl.jsonl
  out=$("$PDL" coll --backend nccl --op allreduce -m 4:256K -f 8 -i 5 -x 1 -c 2 --json "$f" 2>&1) || rc=$?
  echo "$out"
  if [[ $out == *"skipped: no CUDA device"* ]]; then skip coll.nccl-np1.allreduce.wrong "no CUDA device"; return 0; fi
  [ $rc -le 1 ] && [ -s "$f" ] || return 1
  metric coll.nccl-np1.allreduce.wrong "$(coll_wrong "$f")"
}

allreduce_busbw() { # busbw (GB/s) of a 4 MiB Allreduce on 2 ranks
  rm -f "$WORK/ar.jsonl"
  OMPI_MCA_mpi_yield_when_idle=1 mpi_json 2 coll --op allreduce -m 4M -i 20 -x 2 --json "$WORK/ar.jsonl" >/dev/null
  jnum "$(tail -n 1 "$WORK/ar.jsonl")" 'd["busbw_gbs"]'
}
probe_coll_allreduce_bw() {   # probe: timed
  ab coll.mpi-np2.allreduce-4M.busbw_vs_ref rate allreduce_busbw
}
