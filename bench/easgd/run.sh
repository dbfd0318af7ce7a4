#!/usr/bin/env bash
# bench/easgd/run.sh — reproduces the EASGD paper (Zhang, Choromanska, LeCun 2015; docs/PAPERS.md §2).
# One function per result id (e1, ...), each run through done_or_run (skipped when complete unless
# FORCE=1) and each adding its rows to the paper-vs-ours table with an eN_rows function, so a new
# result is one more function pair and two lines in main. QUICK=1: smaller grids / shorter runs.
# Outputs: results/easgd/*.jsonl (+ .dat derived for gnuplot), plots/out/easgd-*.png|pdf,
# results/easgd/table.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
# SCALE=paper: the paper's own experiments at its size (bench/scale.py, profile bench/easgd/paper.toml)
case ${SCALE:-} in '') ;; paper) exec python3 bench/scale.py easgd ;; *) echo "[easgd] SCALE=$SCALE: not a scale (paper, or unset for the stand-ins)" >&2; exit 2 ;; esac
source bench/lib.sh
bench_init easgd

# Table cells avoid "|" (it would split a markdown table cell).
# JSONL -> gnuplot .dat (gnuplot cannot read JSON). Grid files: one block per eta (blank line between
# blocks), columns "x y radius"; trajectories: "round norm center".
jsonl_to_dat() { # jsonl_to_dat IN.jsonl OUT.dat XKEY YKEY | traj
  python3 - "$@" <<'EOF'
import json, sys
src, dst, xk = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [json.loads(l) for l in open(src)]
with open(dst + ".tmp", "w") as f:
    if xk == "traj":
        f.write("# round max|s| center  (%s)\n" % src)
        for r in rows:
            if r["kind"] == "trajectory":
                f.write("%d %.10g %.10g\n" % (r["round"], r["norm"], r["center"]))
    else:
        yk = sys.argv[4]
        f.write("# %s %s radius  (%s; one block per eta)\n" % (xk, yk, src))
        last = None
        for r in rows:
            if r["kind"] != "point":
                continue
            if last is not None and r["eta"] != last:
                f.write("\n")
            last = r["eta"]
            f.write("%.10g %.10g %.12g\n" % (r[xk], r[yk], r["radius"]))
import os
os.replace(dst + ".tmp", dst)
EOF
}

# ---- E1: round-robin stability of EASGD and ADMM on F(x) = x^2/2 (Sec. 4, Fig. 1) -------------
# Heat-map grids (ADMM: cell centres of eta in (0, 1e-2) x rho in (0, 10) as in Fig. 1; EASGD:
# eta in [-0.25, 2.25] x alpha in [-0.25, 1.25]), the check table, and the x = 1000 trajectories.
e1() {
  local na=100 ne=251 nal=151 grid=301
  [ -n "$QUICK" ] && { na=40; ne=101; nal=61; grid=101; }
  local etas rhos p m
  etas=$(awk -v n=$na 'BEGIN { printf "%.10g:%.10g:%d", 0.01 / (2 * n), 0.01 - 0.01 / (2 * n), n }')
  rhos=$(awk -v n=$na 'BEGIN { printf "%.10g:%.10g:%d", 10 / (2 * n), 10 - 10 / (2 * n), n }')
  for p in 3 8; do
    "$PDL" stability --method admm --p $p --eta "$etas" --rho "$rhos" --json "$RES/stability-admm-p$p.jsonl" || return
    jsonl_to_dat "$RES/stability-admm-p$p.jsonl" "$RES/stability-admm-p$p.dat" rho eta || return
    "$PDL" stability --method easgd --p $p --eta -0.25:2.25:$ne --alpha -0.25:1.25:$nal \
      --json "$RES/stability-easgd-p$p.jsonl" || return
    jsonl_to_dat "$RES/stability-easgd-p$p.jsonl" "$RES/stability-easgd-p$p.dat" eta alpha || return
    for m in admm easgd; do
      "$PDL" stability --iterate --method $m --p $p --eta 0.001 --rho 2.5 \
        --json "$RES/stability-iterate-$m-p$p.jsonl" || return
      jsonl_to_dat "$RES/stability-iterate-$m-p$p.jsonl" "$RES/stability-iterate-$m-p$p.dat" traj || return
    done
  done
  local rc=0
  "$PDL" stability --check --grid $grid --json "$RES/stability-check.jsonl" | tee "$RES/stability-check.txt"
  rc=${PIPESTATUS[0]}
  for gp in plots/easgd-stability-*.gp; do render_plot "$gp" || rc=1; done
  return $rc
}

e1_rows() {
  [ -f "$RES/stability-check.jsonl" ] || { table_row E1 "Sec. 4 / Fig. 1" "no results (e1 did not finish)" "-" "-" "no results"; return; }
  # verdicts from bench/verdict.py (bench/claims/easgd.toml); e23.py e1 derives the metrics
  python3 bench/easgd/e23.py e1 "$RES/stability-check.jsonl" "$RES" | while IFS=$'\t' read -r id paper ours data mode verdict; do
    table_row "$id" "$paper" "$ours" "$data" "$mode" "$verdict"
  done
}

# ---- E2/E3: training (Fig. 2, Fig. 3) on the sim runtime -----------------------------------------
# Budget (2 shared cores, ~1 min QUICK; full: EASGD_LEN=8 ~1 h at one seed, estimated, EASGD_LEN=1
# ~60 min with 3 seeds, measured): the paper's CIFAR net costs 84.5 MFLOP per training image; the
# bench uses the same architecture (5x5, 5x5, 3x3 valid convs, dropout 0.5, ReLU) at 1/8 of its
# widths with EASGD_LEN=1 (1.8 MFLOP/img), at 1/16 with EASGD_LEN=8 and QUICK (0.56 MFLOP/img). Every
# worker makes K (E3: K3) steps of batch 128 (real numerics: p x K x 128 images per run); the
# p = 1 comparators make KSEQ steps so that the E3 speed-up is measurable. Time is simulated:
# each worker on its own device at the rate `pdl calibrate` measures for the net on one core of
# this machine (R GFLOP/s); node links at 56 Gb/s and 0.5 us per link (FDR InfiniBand, the
# paper's cluster) scaled by R / 1500 (1500 GFLOP/s: a Kepler-class GPU in cuDNN, the sim's
# default device), so one transfer costs the same fraction of a gradient step as on the paper's
# GPUs. Learning rates: a small grid per method and tau at p = 4, picked by the smallest test
# error (as the paper did, "for each method we examined a wide range of learning rates"); E3 runs
# every method at its best (tau, eta) of E2 (p = 4) and one more eta per p, the better one
# picked: the DOWNPOUR family at eta * 4/p (its center sums p workers' steps), EASGD/EAMSGD at
# 2 eta (alpha = beta/p keeps the center's pull per period at beta whatever p, so more workers
# only average more noise, which pays with a larger step: EAMSGD p = 16 reached 19.6% at 2 eta
# against 21.3% at eta in a trial, 28.6% at 4 eta).
# ADOWNPOUR / MVADOWNPOUR are read from the DOWNPOUR runs (same center trajectory, evaluated at
# the averages). Runs killed from outside are retried once.
JOBS=${JOBS:-2}
# EASGD_LEN (full bench): 8 (default) runs issue 34's length, 8x the local steps of the runs
# sized in 2026-11 (K 4096, K3 3072, KSEQ 24576) on the 1/16-width net, seed 1 only (~1 h on 2
# cores; SEEDS="1 2 3" adds seeds 2-3, ~70 min more); 1 runs those earlier settings (K 512, 1/8
# width, seeds 1-3, ~60 min), the set behind docs/REPRODUCTION-easgd.md's 3-seed table. The plan and
# its trades: docs/REPRODUCTION-easgd.md "Plan for issue 34's runs at 8x length".
EASGD_LEN=${EASGD_LEN:-8}
case $EASGD_LEN in 1|8) ;; *) echo "EASGD_LEN must be 1 or 8, got '$EASGD_LEN'" >&2; exit 2 ;; esac
if [ -n "$QUICK" ] || [ "$EASGD_LEN" = 8 ]; then SEEDS=${SEEDS:-1}; else SEEDS=${SEEDS:-"1 2 3"}; fi
ea_settings() {
  if [ -n "$QUICK" ]; then
    NET="C4k5p0 P C8k5p0 P C8k3p0 F32 D0.5 S10"; NETNOTE="easgd-cifar at 1/16 width"
    K=48; K3=48; KSEQ=192; TAUS="1 16"; PS3="8"; NEVAL=6; NTEST=1000   # K, K3, KSEQ halved for make test (issue 36 item 8)
    GRID_easgd="0.1"; GRID_eamsgd="0.003"; GRID_downpour="0.05"; GRID_mdownpour="0.0003"; GRID_msgd="0.002"
    SEQ_OTHERS=""
  else
    if [ "$EASGD_LEN" = 8 ]; then
      NET="C4k5p0 P C8k5p0 P C8k3p0 F32 D0.5 S10"; NETNOTE="easgd-cifar at 1/16 width"
      K=4096; K3=3072; KSEQ=24576
    else
      NET="C8k5p0 P C16k5p0 P C16k3p0 F64 D0.5 S10"; NETNOTE="easgd-cifar at 1/8 width"
      K=512; K3=384; KSEQ=3072
    fi
    TAUS="1 4 16 64"; PS3="8 16"; NEVAL=16; NTEST=2000
    GRID_easgd="0.05 0.1"; GRID_eamsgd="0.001 0.003"; GRID_downpour="0.02 0.05"; GRID_mdownpour="0.0003 0.001"
    GRID_msgd="0.001 0.002 0.004"; SEQ_OTHERS="sgd asgd mvasgd"
  fi
  # runs live in a directory named by the settings, so runs of other settings are never mixed in
  local sig; sig=$(echo "$NET $K $K3 $KSEQ $TAUS $PS3 $NEVAL $NTEST $GRID_easgd $GRID_eamsgd $GRID_downpour $GRID_mdownpour $GRID_msgd $SEQ_OTHERS" | md5sum | cut -c1-8)
  RUNS=$RES/runs-${QUICK:+quick-}$sig
  # beta 0.9 and delta 0.99 are pdl's defaults: given only to the algorithms that read them (pdl refuses a flag
  # the chosen --algo does not read), they stay in every run's JSON as before
  COMMON=(--net "$NET" --test-subset "$NTEST" --batch 128 --wd 1e-4 --threads 1 --quiet --timeout 600)
  mkdir -p "$RUNS"
}
EA_CALIBRATED=
ea_calibrate() { # sets RATE (GFLOP/s of one core for $NET), BW (Gb/s), LAT (ms per link); measured
                 # once per settings (FORCE=1: once per bench run, so E2 and E3 share one device rate:
                 # E3 reuses E2's p = 4 runs)
  local f=$RUNS/calibration.json
  if { [ -n "$FORCE" ] && [ "$EA_CALIBRATED" != "$RUNS" ]; } || [ ! -s "$f" ]; then
    "$PDL" calibrate --net "$NET" --batch 128 --threads 1 --repeats "$([ -n "$QUICK" ] && echo 1 || echo 5)" --out "$f.tmp" >/dev/null || return 1
    mv "$f.tmp" "$f"
    EA_CALIBRATED=$RUNS
  fi
  RATE=$(python3 -c "import json; print('%.4g' % json.load(open('$f'))['gflops'])") || return 1
  BW=$(python3 -c "print('%.4g' % (56 * $RATE / 1500))")
  LAT=$(python3 -c "print('%.4g' % (0.0005 * 1500 / $RATE))")
}
ea_platform() { echo "links:k=$(($1 + 1)),bw=${BW}Gbps,lat=${LAT}ms"; }
declare -A EA_ARGS
ea_done() { run_complete "$RUNS/$1.jsonl"; }
ea_run() { # ea_run NAME ARGS...: one training run in the background (at most JOBS at once),
           # skipped when its results file already has a summary (an interrupted bench resumes)
  local name=$1; shift
  EA_ARGS[$name]=$(printf '%q ' "$@")
  if [ -z "$FORCE" ] && ea_done "$name"; then return 0; fi
  rm -f "$RUNS/$name.jsonl"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  nice "$PDL" train "${COMMON[@]}" "$@" --results "$RUNS/$name.jsonl" --tag "$name" > "$RUNS/$name.out" 2>&1 &
}
ea_wait() { # waits for the runs; a run that left no summary (e.g. killed from outside on this
            # shared machine) is retried once; fails naming the runs that still have none
  wait
  local bad=0 n retry=()
  for n in "$@"; do ea_done "$n" || retry+=("$n"); done
  if [ ${#retry[@]} -gt 0 ]; then
    echo "[easgd] retrying ${#retry[@]} run(s) that left no summary: ${retry[*]}" >&2
    for n in "${retry[@]}"; do eval "ea_run $n ${EA_ARGS[$n]}"; done
    wait
  fi
  for n in "$@"; do
    ea_done "$n" || { echo "run $n failed: $(tail -2 "$RUNS/$n.out")" >&2; bad=1; }
  done
  return $bad
}
SFX= SEEDARG=()   # seeds after the first (the seeds step): a name suffix "-sS" and --seed S
ea_par() { # ea_par NAME ALGO P TAU LR STEPS
  local name=$1$SFX algo=$2 p=$3 tau=$4 lr=$5 k=$6
  ea_run "$name" --algo "$algo" --tau "$tau" --lr "$lr" --steps "$k" --eval-every $((p * k / NEVAL)) \
    --runtime sim --platform "$(ea_platform "$p")" --device-rate "$RATE" ${SEEDARG[@]+"${SEEDARG[@]}"}
  NAMES+=("$name")
}
ea_seq() { # ea_seq OPT LR [MOMENTUM]
  local name=seq-$1-lr$2$SFX
  ea_run "$name" --algo "seq-$1" --lr "$2" ${3:+--momentum $3} --steps "$KSEQ" --eval-every $((KSEQ / 24)) \
    --runtime sim --platform "$(ea_platform 0)" --device-rate "$RATE" ${SEEDARG[@]+"${SEEDARG[@]}"}
  NAMES+=("$name")
}
ea_analyze() { # ea_analyze FIGURE...: .dat files, table rows, and plots/easgd-FIGURE.gp rendered
  python3 - "$RUNS/meta.json" <<EOF || return 1
import json, sys
m = {"k": $K, "k3": $K3, "kseq": $KSEQ,
     "data_note": "60k train / $NTEST test; net $NETNOTE: $NET",
     "sim_note": "SimGrid links: p workers + 1 server, each on a device of $RATE GFLOP/s (calibrated), node links $BW Gb/s $LAT ms",
     "title_note": "Fashion-MNIST, $NETNOTE, $K (E3: $K3) steps/worker of batch 128; SIMULATED: devices $RATE GFLOP/s, links $BW Gb/s"}
json.dump(m, open(sys.argv[1], "w"))
EOF
  python3 bench/easgd/e23.py analyze "$RUNS" "$RES" "$RUNS/meta.json" || return 1
  local gp; for gp in "$@"; do render_plot "plots/easgd-$gp.gp" || return 1; done  # the figures that have data
}

e2() {
  ea_settings; ea_calibrate || return 1
  echo "[easgd] e2: net '$NET', device $RATE GFLOP/s, links $BW Gb/s $LAT ms, K=$K, JOBS=$JOBS"
  NAMES=()
  local tau m lr grid
  for lr in $GRID_msgd; do ea_seq nag "$lr" 0.99; done
  for m in $SEQ_OTHERS; do ea_seq "$m" 0.05; done
  for tau in $TAUS; do
    for m in easgd eamsgd downpour mdownpour; do
      grid=GRID_$m
      for lr in ${!grid}; do ea_par "e2-$m-p4-tau$tau-lr$lr" "$m" 4 "$tau" "$lr" "$K"; done
    done
  done
  ea_wait "${NAMES[@]}" || return 1
  ea_analyze e2
}

e3() {
  ea_settings; ea_calibrate || return 1
  NAMES=()
  local picks p m tau lr
  picks=$(python3 bench/easgd/e23.py picks "$RUNS") || return 1
  [ -n "$picks" ] || { echo "e3: no E2 learning-rate picks (run e2 first)" >&2; return 1; }
  for p in $PS3; do
    while read -r m tau lr; do
      ea_par "e3-$m-p$p-tau$tau-lr$lr" "$m" "$p" "$tau" "$lr" "$K3"
      [ -n "$QUICK" ] && continue   # QUICK: E2's pick only (make test's time, issue 36 item 8)
      case $m in
      downpour|mdownpour)   # the center sums p workers' steps: also eta * 4/p
        lr=$(python3 -c "print('%g' % ($lr * 4 / $p))")
        ea_par "e3-$m-p$p-tau$tau-lr$lr" "$m" "$p" "$tau" "$lr" "$K3" ;;
      easgd|eamsgd)         # the center's elastic pull per period is beta whatever p: more workers
                            # only average more noise, which pays with a larger step: also 2 eta
        lr=$(python3 -c "print('%g' % ($lr * 2))")
        ea_par "e3-$m-p$p-tau$tau-lr$lr" "$m" "$p" "$tau" "$lr" "$K3" ;;
      esac
    done <<< "$picks"
  done
  ea_wait "${NAMES[@]}" || return 1
  ea_analyze e2 e3
}

# Seeds 2, 3, ... (SEEDS; the claims registry asks 3 for E2/E3, bench/claims/easgd.toml): every
# learning rate and (tau, eta) was picked on seed 1's grid by the rules above, before any other
# seed ran; the other seeds repeat exactly those runs with --seed S (e23.py replicas), plus the
# DOWNPOUR family's whole eta grid at tau >= 16, so that the count of diverged runs shown beside
# E2-tau-unstable (no longer judged since issue 45: the rule reads the picked curves) covers the
# same runs on every seed (the curves still use seed 1's picks), and the engine judges
# each claim on every seed's metrics (mean, min-max, "inconclusive" when they split). Cost on the
# AMD EPYC (2026-11-26, partly beside other work): seed 1 (grid) 36 min, seeds 2 and 3 25 min.
seeds() {
  ea_settings; ea_calibrate || return 1
  NAMES=()
  local s kind m p tau lr reps
  reps=$(python3 bench/easgd/e23.py replicas "$RUNS") || return 1
  [ -n "$reps" ] || { echo "seeds: no seed-1 picks (run e2 and e3 first)" >&2; return 1; }
  for s in $SEEDS; do
    [ "$s" = 1 ] && continue
    SFX=-s$s; SEEDARG=(--seed "$s")
    while read -r kind m p tau lr; do
      case $kind in
      e2) ea_par "e2-$m-p4-tau$tau-lr$lr" "$m" 4 "$tau" "$lr" "$K" ;;
      e3) ea_par "e3-$m-p$p-tau$tau-lr$lr" "$m" "$p" "$tau" "$lr" "$K3" ;;
      seq) if [ "$m" = nag ]; then ea_seq nag "$p" 0.99; else ea_seq "$m" "$p"; fi ;;   # seq OPT LR: LR is the third word
      esac
    done <<< "$reps"
  done
  SFX= SEEDARG=()
  ea_wait "${NAMES[@]}" || return 1
  ea_analyze e2 e3
}

e23_rows() {
  if [ ! -s "$RES/e23-rows.tsv" ]; then table_row E2-E3 "Fig. 2, Fig. 3" "no results (e2/e3 did not finish)" "-" "-" "no results"; return; fi
  while IFS=$'\t' read -r id paper ours data mode verdict; do
    table_row "$id" "$paper" "$ours" "$data" "$mode" "$verdict"
  done < "$RES/e23-rows.tsv"
}

rc=0
done_or_run e1 e1 || rc=1
# the done marks of the training steps name the length (EASGD_LEN=8: "-len8"), so that marks of
# the other length never skip a step (the runs themselves live in per-settings directories)
LS=; [ -z "$QUICK" ] && [ "$EASGD_LEN" = 8 ] && LS=-len8
done_or_run "e2$LS" e2 || rc=1
done_or_run "e3$LS" e3 || rc=1
[ "$SEEDS" = 1 ] || done_or_run "seeds-$(echo $SEEDS | tr ' ' '-')$LS" seeds || rc=1
e1_rows
e23_rows
table_print
exit $rc
