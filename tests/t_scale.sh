#!/usr/bin/env bash
# t_scale.sh — SCALE=paper (bench/scale.py, issue 51 item 4): every paper's profile
# (bench/<paper>/paper.toml) parses and every value has a source, and each paper's plan prints with
# an estimate (the step time faked by PDL_SCALE_STEP_S: no pdl speed); a value without a source is
# refused naming it; a plan over 24 h exits 2 naming FORCE=1 (and FORCE=1 lets it through); a missing
# data folder exits 2 naming the variable and the folder; and a tiny real QUICK slice (a demo profile:
# synthetic 28x28 data, the tiny net, 2 steps of sgd and of ssgd on 2 MPI ranks through
# bench/launch.sh) runs, writes its results under <paper>/paper/quick/ and keeps them on a second run.
# About 3 CPU-s (the two pdl runs and mpirun); the full QUICK=1 SCALE=paper of each paper is
# `make bench-<paper> SCALE=paper QUICK=1` (a minute or more each, not here).
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PDL_RESULTS=$T/results
unset QUICK FORCE ONLY DRY_RUN LAUNCH HOSTFILE CIFAR10_DIR CIFAR100_DIR IMAGENET_DIR MNIST_DIR IMAGENET32_CLASSES

for p in ppasgd easgd kfac hermans gossip; do
  out=$(PDL_SCALE_STEP_S=0.0001 PLAN_ONLY=1 python3 bench/scale.py $p 2>&1); rc=$?
  if [ $rc = 0 ] && grep -q "estimate of the whole plan on this machine" <<<"$out" && grep -q "bin/pdl train --algo" <<<"$out"; then
    ok "$p: profile parses, every value sourced, the plan prints with its estimate ($(grep -c 'bin/pdl train' <<<"$out") runs)"
  else notok "$p: plan" "exit $rc: $(tail -3 <<<"$out")"; fi
done

# over 24 h: refused with exit 2 naming FORCE=1; FORCE=1 passes (PLAN_ONLY: nothing runs)
out=$(PDL_SCALE_STEP_S=1000 python3 bench/scale.py ppasgd 2>&1); rc=$?
[ $rc = 2 ] && grep -q "over 24 h: not started. FORCE=1" <<<"$out" && ok "a plan over 24 h exits 2 naming FORCE=1" \
  || notok "over 24 h" "exit $rc: $(tail -2 <<<"$out")"
expect "FORCE=1 lets a plan over 24 h through" env PDL_SCALE_STEP_S=1000 FORCE=1 PLAN_ONLY=1 python3 bench/scale.py ppasgd

# the real data set is needed: unset, and a folder that is not there
out=$(PDL_SCALE_STEP_S=0.0001 ONLY=p2 python3 bench/scale.py ppasgd 2>&1); rc=$?
[ $rc = 2 ] && grep -q "CIFAR10_DIR is not set" <<<"$out" && ok "no CIFAR10_DIR: exit 2 naming it" || notok "CIFAR10_DIR unset" "exit $rc: $(tail -1 <<<"$out")"
out=$(PDL_SCALE_STEP_S=0.0001 ONLY=e3i IMAGENET_DIR=$T/no-such CIFAR10_DIR=$T python3 bench/scale.py easgd 2>&1); rc=$?
[ $rc = 2 ] && grep -q "IMAGENET_DIR=$T/no-such: no such directory" <<<"$out" && ok "IMAGENET_DIR on a missing folder: exit 2 naming both" \
  || notok "IMAGENET_DIR missing folder" "exit $rc: $(tail -1 <<<"$out")"

# a demo paper in a copy: a value without a source is refused; a tiny QUICK slice runs for real
R=$T/repo; mkdir -p "$R/bench/demo"; cp bench/scale.py bench/launch.sh "$R/bench/"
cat > "$R/bench/demo/paper.toml" <<'TOML'
paper = "demo"
title = "demo"
[data.syn]
var = { value = "SYN_DIR", source = "ours: a test data set" }
spec = { value = "synthetic:n=64", source = "ours: a test data set" }
c = { value = 1, source = "ours: a test data set" }
h = { value = 28, source = "ours: a test data set" }
w = { value = 28, source = "ours: a test data set" }
classes = { value = 10, source = "ours: a test data set" }
train = { value = 64, source = "ours: a test data set" }
[[exp]]
id = "d1"
claims = "D1"
what = "sgd alone, ssgd on 2 ranks"
launch = { value = "mpirun", source = "Fig. 1 of the demo" }
data = { value = "syn", source = "Fig. 1 of the demo" }
net = { value = "tiny", source = "Fig. 1 of the demo" }
algo = { value = ["sgd", "ssgd"], source = "Fig. 1 of the demo" }
workers = { value = [1, 8], source = "Fig. 1 of the demo" }
batch = { value = 4, source = "Fig. 1 of the demo" }
epochs = { value = 1, source = "Fig. 1 of the demo" }
[exp.flags]
lr = { value = 0.01, source = "Fig. 1 of the demo" }
TOML
sed 's/^lr = .*/lr = { value = 0.01, source = "" }/' "$R/bench/demo/paper.toml" > "$T/bad.toml"
cp "$R/bench/demo/paper.toml" "$T/good.toml"; cp "$T/bad.toml" "$R/bench/demo/paper.toml"
out=$(cd "$R" && PDL=$OLDPWD/bin/pdl PLAN_ONLY=1 PDL_SCALE_STEP_S=1 python3 bench/scale.py demo 2>&1); rc=$?
[ $rc = 1 ] && grep -q "exp d1 flags.lr: no source" <<<"$out" && ok "a value without a source is refused, named" || notok "unsourced value" "exit $rc: $(tail -2 <<<"$out")"
cp "$T/good.toml" "$R/bench/demo/paper.toml"
out=$(cd "$R" && PDL=$OLDPWD/bin/pdl QUICK=1 OMP_NUM_THREADS=1 python3 bench/scale.py demo 2>&1); rc=$?
q=$PDL_RESULTS/demo/paper/quick
if [ $rc = 0 ] && grep -q "mpirun -np 2 .*--algo ssgd" <<<"$out" && grep -q "at most 2 workers" <<<"$out" \
   && grep -q '"event":"summary"' "$q/d1-sgd.jsonl" && grep -q '"ranks":2' "$q/d1-ssgd.jsonl"; then
  ok "QUICK slice: sgd and ssgd on 2 ranks (workers capped from 8) ran 2 steps into <paper>/paper/quick/"
else notok "QUICK slice" "exit $rc: $(tail -4 <<<"$out") $(tail -3 "$q"/*.out 2>/dev/null)"; fi
out=$(cd "$R" && PDL=$OLDPWD/bin/pdl QUICK=1 python3 bench/scale.py demo 2>&1)
[ "$(grep -c 'complete, kept' <<<"$out")" = 2 ] && ok "a second QUICK run keeps both complete runs" || notok "rerun keeps" "$(tail -3 <<<"$out")"
finish
