#!/usr/bin/env bash
# tests/t_phantom.sh — the timing-only backend (--device phantom, kernels/phantom, issue 47):
#  - with no cost model it charges what a numerics sim run charges (the counted flops of every layer,
#    the node programs' rt->work, messages of their real sizes): on the same net, platform and flags
#    the phantom run's time, update count and staleness figures equal the numerics run's, for one
#    algorithm of each family (peers: ssgd and ppasgd; server + workers: agn; gossip; K-FAC:
#    kfac-dist). Allowed: 5% (the issue's bound); measured 0 here, as both runs make the same rt
#    calls with the same arguments (the relative differences are printed);
#  - the platforms are slow enough (rate=0.2 GFLOP/s, 1 Gb/s) that both compute and messages weigh
#    in the times: a backend that charged only the forward pass, or messages cut short, would differ;
#  - its lines say "numerics":false, "timing_only":true, with null test and train figures, and the
#    run says on stderr that it has no loss or accuracy;
#  - refused (exit 2, naming the flag): the real runtime, pdl speed, a suffix (phantom takes none), a
#    shape: data set on a computing device, --checkpoint, --target-err;
#  - the named platforms (tsubame-kfc, tsubame3, gossip8) have their shapes, and their device rate
#    gives way to --device-rate.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
D=(--data synthetic:n=512,seed=3 --net tiny --batch 8 --lr 0.01 --threads 1 --test-subset 64)

# run NAME ARGS...: the numerics run and the phantom run (ARGS after D: a later flag wins); both summaries kept
run() {
  local name=$1; shift
  "$PDL" train "${D[@]}" "$@" --quiet > "$T/$name.num" 2> "$T/$name.num.err" || notok "$name numerics run" "$(tail -2 "$T/$name.num.err")"
  "$PDL" train "${D[@]}" "$@" --device phantom > "$T/$name.ph" 2> "$T/$name.ph.err" || notok "$name phantom run" "$(tail -2 "$T/$name.ph.err")"
}
# same NAME KEYS...: each key of the two summaries within 5% (the issue's bound), printed
same() {
  local name=$1; shift
  local r
  r=$(python3 - "$T/$name.num" "$T/$name.ph" "$@" <<'PY'
import json, sys
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
out, bad = [], []
for k in sys.argv[3:]:
    x, y = a.get(k), b.get(k)
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        bad.append("%s: %r vs %r" % (k, x, y)); continue
    rel = abs(x - y) / abs(x) if x else abs(y)
    out.append("%s %.6g vs %.6g (rel %.1e)" % (k, x, y, rel))
    if rel > 0.05: bad.append(out[-1])
print(("BAD " + "; ".join(bad)) if bad else "; ".join(out))
PY
)
  case $r in BAD*) notok "$name: phantom == numerics" "$r" ;; *) ok "$name: phantom == numerics: $r" ;; esac
}

run ssgd --algo ssgd --steps 6 --runtime sim --platform cluster:nodes=2,gpus=2,rate=0.2,ib=1
same ssgd time_s updates time_per_update_s
run ppasgd --algo ppasgd --steps 40 --runtime sim --platform cluster:nodes=2,gpus=2,rate=0.2,ib=1
same ppasgd time_s updates time_per_update_s S_bar B_bar F_U F_G
run agn --algo agn --tau 2 --steps 6 --runtime sim --platform links:k=3,bw=1Gbps,lat=1ms,rate=0.2
same agn time_s updates time_per_step_s staleness_mean
run gossip --algo gossip --steps 6 --runtime sim --platform links:k=4,bw=1Gbps*2+10Gbps*2,lat=1ms,rate=0.2
same gossip time_s updates
# the full-size nets' layers (issue 51): a strided conv, batch norm after convs and an fc, an
# overlapping pool and global average pooling, charged as flops_train counts them
run fullnet --algo ssgd --steps 6 --runtime sim --platform cluster:nodes=2,gpus=2,rate=0.2,ib=1 \
  --data synthetic:n=512,c=3,h=16,w=16,seed=3 --net "relu C8k5s2p2b P3s2 C8b C8k1s2 G F16b S10"
same fullnet time_s updates time_per_update_s
run kfac --algo kfac-dist --steps 4 --kfac-inverse ref --runtime sim --platform cluster:nodes=2,gpus=1,rate=0.2,ib=1
same kfac time_s updates time_per_update_s

line=$(tail -1 "$T/ssgd.ph")
python3 - "$line" <<'PY' && ok "phantom summary: numerics false, timing_only true, device phantom, test/train figures null" || notok "phantom summary" "$line"
import json, sys
d = json.loads(sys.argv[1])
assert d["numerics"] is False and d["timing_only"] is True and d["device"] == "phantom", d
assert all(d[k] is None for k in ("test_err", "test_acc", "test_loss", "train_loss")), d
assert d["diverged"] is False and d["updates"] == 6
PY
grep -q "timing only: no arithmetic, so no loss and no accuracy" "$T/ssgd.ph.err" && ok "phantom run says it has no loss or accuracy" \
  || notok "phantom notice" "$(head -3 "$T/ssgd.ph.err")"

# the named platforms (src/sim/platform.c NAMED): their shapes, and their device rate is a default
# that --device-rate replaces (so calibration still sets it)
for pw in "tsubame-kfc:nodes=2 16" "tsubame3:nodes=2 8" "gossip8 8"; do
  set -- $pw
  w=$("$PDL" train --algo ssgd --steps 1 --runtime sim --platform "$1" "${D[@]}" --quiet 2>&1 | tail -1 | jget workers 2>/dev/null)
  [ "$w" = "$2" ] && ok "named platform $1: $2 workers" || notok "named platform $1" "workers '$w', want $2"
done
t1=$("$PDL" train --algo ssgd --steps 2 --runtime sim --platform tsubame3:nodes=2 "${D[@]}" --quiet 2>&1 | tail -1 | jget time_s 2>/dev/null)
t2=$("$PDL" train --algo ssgd --steps 2 --runtime sim --platform tsubame3:nodes=2 --device-rate 1 "${D[@]}" --quiet 2>&1 | tail -1 | jget time_s 2>/dev/null)
python3 -c "import sys; sys.exit(0 if float('$t2') > 10 * float('$t1') > 0 else 1)" 2>/dev/null \
  && ok "tsubame3's P100 rate is a default: --device-rate 1 slows it ($t1 s -> $t2 s)" || notok "named platform rate" "'$t1' vs '$t2'"

P=(train "${D[@]}" --algo ssgd --steps 2)
expect_exit 2 "phantom on the real runtime: exit 2" "$PDL" "${P[@]}" --device phantom
grep -q -- "--device phantom computes nothing" <<<"$out" && ok "real runtime refusal names --device" || notok "refusal text" "$out"
expect_exit 2 "pdl speed --device phantom: exit 2" "$PDL" speed --net tiny --device phantom
expect_exit 2 "phantom:bogus: exit 2" "$PDL" "${P[@]}" --runtime sim --platform cluster:nodes=2,gpus=1 --device phantom:bogus
expect_exit 2 "shape: data on the CPU: exit 2" "$PDL" train --algo ssgd --steps 1 --data shape:n=8,c=1,h=8,w=8,classes=10 --net tiny
expect_exit 2 "phantom --checkpoint: exit 2" "$PDL" "${P[@]}" --runtime sim --platform cluster:nodes=2,gpus=1 --device phantom --checkpoint "$T/ck"
expect_exit 2 "phantom --target-err: exit 2" "$PDL" "${P[@]}" --runtime sim --platform cluster:nodes=2,gpus=1 --device phantom --target-err 0.5
finish
