#!/usr/bin/env bash
# t_easgd.sh — the EASGD paper's parallel methods (src/algo/easgd.c, ps.c) on both runtimes:
#   one asynchronous EASGD exchange with tau = 1 matches the hand-computed center
#     x~ = x0 + alpha (x1 - x0), x1 = x0 - eta g0 (x0, x1 taken from core SGD runs);
#   DOWNPOUR with p = 1, tau = 1 == core SGD and MDOWNPOUR p = 1, tau = 1 == core NAG, bit for bit;
#   seq-sgd (the p = 1 comparator on the seam) == core SGD bit for bit;
#   sim and real runtimes give the same center after K steps for a deterministic schedule
#     (async EASGD / DOWNPOUR with --ps-order round-robin: bit for bit; EASGD-sync: collectives
#     sum in runtime-specific order, so within float rounding);
#   DOWNPOUR with a huge learning rate is stopped and reported as diverged at a step;
#   easgd --worker-opt (issue 32, Hermans' AEASGD): the default is Alg. 1's SGD (== --worker-opt sgd
#     bit for bit); with adam the first window's commit is the hand-computed x0 + alpha (x_3 - x0),
#     x_3 from core adam, on both runtimes; p = 3 round-robin: sim == real bit for bit, != sgd; Adam's
#     state survives a SIGINT + resume (bit-identical end) and a resume with another --worker-opt is refused;
#   bad flags exit 2.
# pdl-test: cpu=20 mpi
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
S=(--data "synthetic:n=1024,seed=3" --net tiny --threads 1 --quiet --batch 16)
SIM=(--runtime sim --platform "links:k=2,bw=1Gbps,lat=0.05ms")
same() { # same NAME A B: bit-identical parameter dumps
  if [ -s "$2" ] && cmp -s "$2" "$3"; then ok "$1"; else notok "$1" "differ (max |diff| $(maxdiff "$2" "$3" 2>/dev/null))"; fi
}

# --- one asynchronous EASGD exchange, hand-computed ---------------------------------------------
# p = 1, tau = 1, K = 2: step 0 pulls x~ = x0 (d = 0) and moves x_1 = x0 - eta g0; step 1 pulls
# x~ = x0, d = alpha (x_1 - x0), so the center ends at x0 + alpha (x_1 - x0) = x0 - alpha eta g0.
PDL_DUMP_PARAMS=$T/x0.bin "$PDL" train "${S[@]}" --algo sgd --lr 0 --steps 1 >/dev/null
PDL_DUMP_PARAMS=$T/x1.bin "$PDL" train "${S[@]}" --algo sgd --lr 0.1 --steps 1 >/dev/null
hand() { python3 - "$T/x0.bin" "${2:-$T/x1.bin}" "$1" 0.3 <<'PY'
import struct, sys
def r(p):
    d = open(p, 'rb').read(); return struct.unpack('%df' % (len(d) // 4), d)
x0, x1, c, a = r(sys.argv[1]), r(sys.argv[2]), r(sys.argv[3]), float(sys.argv[4])
moved = max(abs(u - v) for u, v in zip(x0, x1))
err = max(abs(ci - (u + a * (v - u))) for ci, u, v in zip(c, x0, x1))
print("%g %g" % (err, moved))
PY
}
for rtm in real sim; do
  if [ $rtm = real ]; then PDL_DUMP_PARAMS=$T/hand-$rtm.bin MPIRUN -np 2 "$PDL" train "${S[@]}" --algo easgd --tau 1 --alpha 0.3 --lr 0.1 --steps 2 >"$T/hand-$rtm.out" 2>&1
  else PDL_DUMP_PARAMS=$T/hand-$rtm.bin "$PDL" train "${S[@]}" "${SIM[@]}" --algo easgd --tau 1 --alpha 0.3 --lr 0.1 --steps 2 >"$T/hand-$rtm.out" 2>&1; fi
  read -r err moved < <(hand "$T/hand-$rtm.bin" 2>/dev/null)
  # float rounding of d = alpha (x1 - x0) and x0 + d on O(1) parameters: a few 1e-8
  if [ -n "$err" ] && within "$err" 1e-6 && ! within "$moved" 1e-3; then ok "easgd tau=1 ($rtm): center = x0 + alpha (x1 - x0) (max err $err, step moved $moved)"
  else notok "easgd hand step ($rtm)" "err=$err moved=$moved $(tail -2 "$T/hand-$rtm.out")"; fi
done

# --- DOWNPOUR p = 1 == SGD, MDOWNPOUR p = 1 == NAG, seq-sgd == SGD --------------------------------
K=(--steps 24)
PDL_DUMP_PARAMS=$T/sgd.bin "$PDL" train "${S[@]}" "${K[@]}" --algo sgd --lr 0.05 --wd 1e-3 >/dev/null
PDL_DUMP_PARAMS=$T/dp1.bin MPIRUN -np 2 "$PDL" train "${S[@]}" "${K[@]}" --algo downpour --tau 1 --lr 0.05 --wd 1e-3 >/dev/null 2>&1
same "downpour p=1 tau=1 (real) == sgd bit for bit" "$T/sgd.bin" "$T/dp1.bin"
PDL_DUMP_PARAMS=$T/dp1s.bin "$PDL" train "${S[@]}" "${K[@]}" "${SIM[@]}" --algo downpour --tau 1 --lr 0.05 --wd 1e-3 >/dev/null 2>&1
same "downpour p=1 tau=1 (sim) == sgd bit for bit" "$T/sgd.bin" "$T/dp1s.bin"
PDL_DUMP_PARAMS=$T/seq.bin "$PDL" train "${S[@]}" "${K[@]}" --algo seq-sgd --lr 0.05 --wd 1e-3 >/dev/null
same "seq-sgd == core sgd bit for bit" "$T/sgd.bin" "$T/seq.bin"
PDL_DUMP_PARAMS=$T/nag.bin "$PDL" train "${S[@]}" "${K[@]}" --algo nag --momentum 0.9 --lr 0.02 >/dev/null
PDL_DUMP_PARAMS=$T/mdp1.bin MPIRUN -np 2 "$PDL" train "${S[@]}" "${K[@]}" --algo mdownpour --delta 0.9 --tau 1 --lr 0.02 >/dev/null 2>&1
same "mdownpour p=1 tau=1 == nag bit for bit" "$T/nag.bin" "$T/mdp1.bin"
PDL_DUMP_PARAMS=$T/dp4.bin MPIRUN -np 2 "$PDL" train "${S[@]}" "${K[@]}" --algo downpour --tau 4 --lr 0.05 --wd 1e-3 >/dev/null 2>&1
d=$(maxdiff "$T/sgd.bin" "$T/dp4.bin")
# p = 1, tau = 4: the center receives the same 24 SGD steps in sums of 4: rounding only
within "$d" 1e-5 && ok "downpour p=1 tau=4 == sgd within rounding ($d)" || notok "downpour p=1 tau=4" "max diff $d"

# --- sim vs real, deterministic schedules ---------------------------------------------------------
for a in easgd eamsgd downpour adownpour; do
  PDL_DUMP_PARAMS=$T/$a-real.bin MPIRUN -np 4 "$PDL" train "${S[@]}" "${K[@]}" --algo $a --tau 3 --lr 0.05 --ps-order round-robin >"$T/$a-real.out" 2>&1
  PDL_DUMP_PARAMS=$T/$a-sim.bin "$PDL" train "${S[@]}" "${K[@]}" --runtime sim --platform "links:k=4,bw=1Gbps,lat=0.05ms" \
    --algo $a --tau 3 --lr 0.05 --ps-order round-robin >"$T/$a-sim.out" 2>&1
  same "$a p=3 tau=3 round-robin: sim center == real center bit for bit" "$T/$a-real.bin" "$T/$a-sim.bin"
done
PDL_DUMP_PARAMS=$T/sync-real.bin MPIRUN -np 4 "$PDL" train "${S[@]}" "${K[@]}" --algo easgd-sync --tau 2 --lr 0.05 >"$T/sync-real.out" 2>&1
PDL_DUMP_PARAMS=$T/sync-sim.bin "$PDL" train "${S[@]}" "${K[@]}" --runtime sim --platform "links:k=4,bw=1Gbps,lat=0.05ms" \
  --algo easgd-sync --tau 2 --lr 0.05 >"$T/sync-sim.out" 2>&1
d=$(maxdiff "$T/sync-real.bin" "$T/sync-sim.bin")
# the reduce of 3 elastic differences sums in MPI's vs the sim's order: float rounding, ~1e-8
if [ -s "$T/sync-sim.bin" ] && within "$d" 1e-6; then ok "easgd-sync p=3: sim center == real center within rounding ($d)"
else notok "easgd-sync sim vs real" "max diff $d $(tail -2 "$T/sync-sim.out")"; fi
tail -1 "$T/easgd-sim.out" | grep -q '"runtime":"sim","simulated":true' && ok "sim summary is labelled simulated" || notok "sim label" "$(tail -1 "$T/easgd-sim.out")"
tp=$(tail -1 "$T/easgd-sim.out" | jget time_s)
python3 -c "import sys; sys.exit(0 if 0 < float('$tp') < 10 else 1)" && ok "sim time is the simulated time ($tp s)" || notok "sim time" "$tp"

# --- easgd --worker-opt (Hermans' AEASGD: Adam workers) ----------------------------------------------
# default = sgd: Alg. 1 as before (the hand step above), and an explicit --worker-opt sgd is the same run
PDL_DUMP_PARAMS=$T/easgd-sgd-sim.bin "$PDL" train "${S[@]}" "${K[@]}" --runtime sim --platform "links:k=4,bw=1Gbps,lat=0.05ms" \
  --algo easgd --worker-opt sgd --tau 3 --lr 0.05 --ps-order round-robin >/dev/null 2>&1
same "easgd --worker-opt sgd == easgd without it (the default is Alg. 1) bit for bit" "$T/easgd-sim.bin" "$T/easgd-sgd-sim.bin"
# p = 1, tau = 3, K = 4: the elastic step at t = 0 moves nothing, the worker takes 3 Adam steps from x0,
# then at t = 3 commits alpha (x_3 - x0): the center ends at x0 + alpha (x_3 - x0), x_3 = core adam's
PDL_DUMP_PARAMS=$T/x3adam.bin "$PDL" train "${S[@]}" --algo adam --lr 0.01 --steps 3 >/dev/null
for rtm in real sim; do
  A=(--algo easgd --worker-opt adam --tau 3 --alpha 0.3 --lr 0.01 --steps 4)
  if [ $rtm = real ]; then PDL_DUMP_PARAMS=$T/adam-$rtm.bin MPIRUN -np 2 "$PDL" train "${S[@]}" "${A[@]}" >"$T/adam-$rtm.out" 2>&1
  else PDL_DUMP_PARAMS=$T/adam-$rtm.bin "$PDL" train "${S[@]}" "${SIM[@]}" "${A[@]}" >"$T/adam-$rtm.out" 2>&1; fi
  read -r err moved < <(hand "$T/adam-$rtm.bin" "$T/x3adam.bin" 2>/dev/null)
  if [ -n "$err" ] && within "$err" 1e-6 && ! within "$moved" 1e-3 && tail -1 "$T/adam-$rtm.out" | grep -q '"worker_opt":"adam"'; then
    ok "easgd --worker-opt adam ($rtm): center = x0 + alpha (x_3 - x0), x_3 three core Adam steps (max err $err)"
  else notok "easgd --worker-opt adam hand step ($rtm)" "err=$err moved=$moved $(tail -2 "$T/adam-$rtm.out")"; fi
done
PDL_DUMP_PARAMS=$T/easgd-adam-real.bin MPIRUN -np 4 "$PDL" train "${S[@]}" "${K[@]}" --algo easgd --worker-opt adam --tau 3 --lr 0.01 \
  --alpha 0.05 --ps-order round-robin >/dev/null 2>&1
PDL_DUMP_PARAMS=$T/easgd-adam-sim.bin "$PDL" train "${S[@]}" "${K[@]}" --runtime sim --platform "links:k=4,bw=1Gbps,lat=0.05ms" \
  --algo easgd --worker-opt adam --tau 3 --lr 0.01 --alpha 0.05 --ps-order round-robin >/dev/null 2>&1
same "easgd --worker-opt adam p=3 tau=3 round-robin: sim center == real center bit for bit" "$T/easgd-adam-real.bin" "$T/easgd-adam-sim.bin"
PDL_DUMP_PARAMS=$T/easgd-sgd2-sim.bin "$PDL" train "${S[@]}" "${K[@]}" --runtime sim --platform "links:k=4,bw=1Gbps,lat=0.05ms" \
  --algo easgd --tau 3 --lr 0.01 --alpha 0.05 --ps-order round-robin >/dev/null 2>&1
[ -s "$T/easgd-sgd2-sim.bin" ] && ! cmp -s "$T/easgd-adam-sim.bin" "$T/easgd-sgd2-sim.bin" && ok "easgd --worker-opt adam differs from sgd" \
  || notok "easgd adam vs sgd" "the same parameters (or no dump)"

# Adam's state is the worker's checkpointed optimizer state: a sim run (round-robin) stopped by SIGINT
# and resumed completes with the uninterrupted run's steps and commits; a resume with another
# --worker-opt is refused. (Not bit for bit: asynchronous easgd's sim resume equals the uninterrupted
# run at some cuts only, with SGD workers too and before --worker-opt existed -- about 1 cut in 3
# differs; t_ckpt_dist holds the asynchronous resume to the same steps and commits as well. The line
# says which this cut was.)
R=(train "${S[@]}" --algo easgd --worker-opt adam --lr 0.01 --alpha 0.05 --runtime sim --platform "links:k=3,bw=1Gbps,lat=0.05ms"
   --ps-order round-robin --steps 1200 --eval-every 100 --tau 4)
PDL_DUMP_PARAMS=$T/ra.bin "$PDL" "${R[@]}" 2>/dev/null | tail -n 1 > "$T/ra.json"
PDL_DUMP_PARAMS=$T/rb.bin "$PDL" "${R[@]}" --results "$T/rb.jsonl" --checkpoint "$T/rck" >/dev/null 2>&1 & p=$!
for i in $(seq 200); do c=$(grep -c '"event":"eval"' "$T/rb.jsonl" 2>/dev/null); [ "${c:-0}" -ge 3 ] && break; sleep 0.05; done
kill -INT $p 2>/dev/null; wait $p
st=$(tail -1 "$T/rb.jsonl" | jget steps_per_worker)
PDL_DUMP_PARAMS=$T/rb.bin "$PDL" "${R[@]}" --results "$T/rb.jsonl" --checkpoint "$T/rck" --resume 2>/dev/null | tail -n 1 > "$T/rb.json"
ca=$(jget master_clock < "$T/ra.json"); cb=$(jget master_clock < "$T/rb.json"); sb=$(jget steps_per_worker < "$T/rb.json")
same=$(cmp -s "$T/ra.bin" "$T/rb.bin" && echo "bit for bit" || echo "max rel diff $(maxdiff "$T/ra.bin" "$T/rb.bin" 2>/dev/null)")
if [ -s "$T/rb.bin" ] && [ -n "$ca" ] && [ "$ca" = "$cb" ] && [ "$sb" = 1200 ] && python3 -c "import sys; sys.exit(0 if 0 < float('${st:-0}') < 1200 else 1)"; then
  ok "easgd --worker-opt adam (sim): SIGINT at $st steps per worker + resume: 1200 steps and $cb commits as uninterrupted ($same)"
else notok "easgd adam resume" "stopped at '$st' steps; resumed: $sb steps, $cb commits (uninterrupted $ca); $same"; fi
expect_exit 1 "resume with another --worker-opt (the checkpoint names adam)" "$PDL" "${R[@]/adam/sgd}" --checkpoint "$T/rck" --resume

# --- divergence -------------------------------------------------------------------------------------
out=$("$PDL" train "${S[@]}" --steps 200 "${SIM[@]}" --platform "links:k=3,bw=1Gbps,lat=0.05ms" --algo downpour --tau 16 --lr 50 2>/dev/null | tail -1)
if [ "$(echo "$out" | jget diverged)" = True ] && [ "$(echo "$out" | jget diverged_at)" -lt 200 ]; then
  ok "downpour lr=50 tau=16: diverged at step $(echo "$out" | jget diverged_at), run stopped ($(echo "$out" | jget steps_per_worker) steps per worker)"
else notok "divergence" "$out"; fi

# --- bad flags ----------------------------------------------------------------------------------------
expect_exit 2 "easgd without a server node" "$PDL" train "${S[@]}" --algo easgd --steps 2
expect_exit 2 "--ps-order bad" "$PDL" train "${S[@]}" "${SIM[@]}" --platform "links:k=2,bw=1Gbps" --algo easgd --ps-order fifo
expect_exit 2 "--tau 0" "$PDL" train "${S[@]}" "${SIM[@]}" --platform "links:k=2,bw=1Gbps" --algo easgd --tau 0
expect_exit 2 "eamsgd --worker-opt (its local step is Nesterov by definition)" "$PDL" train "${S[@]}" "${SIM[@]}" --platform "links:k=2,bw=1Gbps" --algo eamsgd --worker-opt adam
expect_exit 2 "easgd --worker-opt bad" "$PDL" train "${S[@]}" "${SIM[@]}" --platform "links:k=2,bw=1Gbps" --algo easgd --worker-opt rmsprop
expect_exit 2 "--alpha 2" "$PDL" train "${S[@]}" "${SIM[@]}" --platform "links:k=2,bw=1Gbps" --algo easgd --alpha 2
expect_exit 2 "sim platform of one node" "$PDL" train "${S[@]}" --runtime sim --platform "links:k=1,bw=1Gbps" --algo downpour
expect_exit 2 "seq-nag on two nodes" "$PDL" train "${S[@]}" --runtime sim --platform "links:k=2,bw=1Gbps" --algo seq-nag --steps 2
expect_exit 2 "seq-adam is not a comparator" "$PDL" train "${S[@]}" --algo seq-adam --steps 2
finish
