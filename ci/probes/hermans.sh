# ci/probes/hermans.sh — Hermans 2017 (docs/PAPERS.md §4), sourced by ci/regress.sh. Deterministic:
# AGN and ADAG on 4 simulated workers served round-robin (SimGrid, real numerics, one thread):
# accuracy and the staleness the server measured (round-robin: p - 1 after the first p commits);
# and the thesis' Booth check (40 asynchronous EASGD workers, a host simulation, round-robin).
HERMANS_SIM=(--runtime sim --platform links:k=5,bw=1Gbps,lat=1ms --data fashion-mnist --train-subset 3200
  --test-subset 1000 --net "relu F64 F32 S10" --batch 32 --lr 0.001 --steps 40 --seed 1 --threads 1 --ps-order round-robin)
probe_hermans_sim() {
  local j
  j=$(pdl_json train --algo agn "${HERMANS_SIM[@]}" --tau 4)
  emit hermans.agn-sim-4x-tau4 "$j" test_err test_loss staleness_mean
  j=$(pdl_json train --algo adag "${HERMANS_SIM[@]}" --tau 4)
  emit hermans.adag-sim-4x-tau4 "$j" test_err test_loss
}
probe_hermans_booth() {
  local j
  j=$(pdl_json toy --fn booth --rule easgd --workers 40 --lr 0.01 --alpha 1 --lambda 1 --commits 40000 --order round-robin --seed 1)
  emit hermans.booth-easgd-40 "$j" final_f
}
