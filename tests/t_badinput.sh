#!/usr/bin/env bash
# tests/t_badinput.sh — hostile flags never crash pdl (issue: bad input never crashes anything):
# net specs whose sizes would overflow (k, p, widths) or not fit in RAM, over-long string flags
# (refused, never truncated), and pdl speed --input. Each must exit 2 with one line naming the
# problem; a signal (crash) or exit 0 fails.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
# bad NAME PATTERN CMD...: exit 2 and a message matching PATTERN
bad() { local n=$1 pat=$2; shift 2; local out rc; out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 2 ] && grep -qE -- "$pat" <<<"$out"; then ok "$n"; else notok "$n" "exit $rc (want 2), output: $(tail -n 2 <<<"$out")"; fi; }
S=(train --data synthetic:n=64 --steps 2 --batch 8 --quiet)
bad "conv k of 2^30 (was a heap overflow)" "k<1..255>" "$PDL" "${S[@]}" --net "C4k1073741824 S10"
bad "speed: conv k of 2^30" "k<1..255>" "$PDL" speed --net "C4k1073741824 S10" --batch 1
bad "conv with 0 weights (k 2^30, 16 channels)" "k<1..255>" "$PDL" speed --net "C16k1073741824 S10" --batch 1
bad "p of 2^32+1 (was silently p1)" "p<0..255>" "$PDL" "${S[@]}" --net "C4p4294967297 S10"
bad "k of 2^32+3 (was silently k3)" "k<1..255>" "$PDL" "${S[@]}" --net "C4k4294967299 S10"
bad "fc layer over 2^30 weights" "too large" "$PDL" speed --net "F100000 F100000 S10" --batch 1
# enough F30000 layers (9e8 weights, ~14 GB with gradients and optimizer state each) to exceed this machine's RAM
nl=$(( $(awk '/MemTotal/ {print int($2 / 1000000 / 14)}' /proc/meminfo) + 2 ))
big="$(for _ in $(seq 1 "$nl"); do printf 'F30000 '; done)S10"
bad "net over this machine's RAM ($nl x F30000): refused by the memory estimate" "needs about .* GiB" "$PDL" speed --net "$big" --batch 1
bad "a 256-character --net is refused, not cut to S10" "at most 255" "$PDL" "${S[@]}" --net "C4$(printf '%*s' 250 '')S100"
bad "an over-long --results path is refused, not truncated" "--results: .* at most" "$PDL" "${S[@]}" --net tiny --results "/tmp/$(printf 'r%.0s' $(seq 1 1100))"
for i in 0x28x28 -1x28x28 1x28x28x3 1x28 abc 1x99999x28; do
  bad "speed --input $i" "--input" "$PDL" speed --net tiny --batch 1 --input "$i"
done
out=$("$PDL" speed --net tiny --batch 1 --repeats 1 --input 1x28x28 2>&1); rc=$?
[ $rc -eq 0 ] && ok "speed --input 1x28x28 still works" || notok "speed --input 1x28x28" "exit $rc: $(tail -1 <<<"$out")"
out=$("$PDL" "${S[@]}" --net "C4k5p2 S10" 2>&1); rc=$?
[ $rc -eq 0 ] && ok "a sane k/p spec still trains" || notok "sane spec" "exit $rc: $(tail -1 <<<"$out")"

# ---- outputs never replace what is not theirs; FIFOs never hang a run -------------------------
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
E=(train --data synthetic:n=256 --net tiny --epochs 1 --batch 16 --quiet)
touch "$T/target.ck"; ln -s target.ck "$T/link.ck"
out=$("$PDL" "${E[@]}" --checkpoint "$T/link.ck" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -L "$T/link.ck" ] && [ -s "$T/target.ck" ] && ok "a symlinked checkpoint: the link stays, its target is written" \
  || notok "symlinked checkpoint" "exit $rc, $(ls -la "$T" | tr '\n' ' ')"
mkfifo "$T/fifo"; mkdir "$T/dir"
for p in "$T/fifo" "$T/dir"; do
  out=$(timeout 20 "$PDL" "${E[@]}" --checkpoint "$p" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -q "refusing to replace" <<<"$out" && ok "checkpoint onto $(basename "$p") refused up front (exit 1)" || notok "checkpoint onto $p" "exit $rc: $out"
done
out=$(timeout 20 "$PDL" "${E[@]}" --checkpoint /dev/null 2>&1); rc=$?
[ $rc -eq 1 ] && [ -c /dev/null ] && ok "--checkpoint /dev/null refused; /dev/null is still a device" || notok "/dev/null checkpoint" "exit $rc: $out"
out=$(timeout 20 "$PDL" "${E[@]}" --results "$T/fifo" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "FIFO" <<<"$out" && ok "--results onto a FIFO refused, no hang (exit 1)" || notok "--results FIFO" "exit $rc: $out"
if [ -f "${BUILD:-build}/libpdlsim.so" ]; then
  out=$(timeout 20 "$PDL" train --algo ssgd --runtime sim --platform "file:$T/fifo" --data synthetic:n=256 --net tiny --steps 2 --quiet 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "not a regular file" <<<"$out" && ok "--platform file:FIFO refused, no hang (exit 2)" || notok "--platform file:FIFO" "exit $rc: $out"
fi
R=(train --data synthetic:n=256 --net tiny --batch 16 --quiet --checkpoint "$T/r.ck")
a=$("$PDL" "${R[@]}" --epochs 2 2>/dev/null | tail -n 1); b=$("$PDL" "${R[@]}" --epochs 2 --resume 2>/dev/null | tail -n 1)
[ "$(jget test_acc <<<"$b")" = "$(jget test_acc <<<"$a")" ] && [ "$(jget updates <<<"$b")" = 32 ] \
  && ok "resuming a finished run reports it (test_acc and updates of the run, not null / 0)" \
  || notok "resume a finished run" "first: $(jget test_acc <<<"$a") $(jget updates <<<"$a"); resumed: $b"
out=$("$PDL" "${R[@]}" --epochs 1 --resume 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "past this run's 16 updates" <<<"$out" && ok "a checkpoint past --steps/--epochs: exit 1 naming both counts" \
  || notok "checkpoint past the run" "exit $rc: $out"
# checkpoints carry what a resume must match, a checksum, and an exact length
C=(train --data synthetic:n=256 --net tiny --batch 16 --quiet --checkpoint "$T/c.ck" --epochs 2)
"$PDL" "${C[@]}" --epochs 1 >/dev/null 2>&1; cp "$T/c.ck" "$T/c.orig"
ck() { local n=$1 pat=$2; shift 2; local out rc; out=$("$PDL" "${C[@]}" --resume "$@" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -qE -- "$pat" <<<"$out" && ok "$n" || notok "$n" "exit $rc: $(tail -1 <<<"$out")"; cp "$T/c.orig" "$T/c.ck"; }
ck "resume with another --seed names the field" "--seed is 1 in the checkpoint but 2" --seed 2
ck "resume with another --batch names the field" "--batch is 16 in the checkpoint but 32" --batch 32
ck "resume with another --data names the field" "--data is" --data synthetic:n=512
ck "resume with --with-replacement names the option" "--with-replacement is '0' in the checkpoint but '1'" --with-replacement
# an algorithm's own options are in the header too (issue 36: --kfac-damping 5 used to resume silently)
K=(train --data synthetic:n=256 --net tiny --batch 16 --quiet --algo kfac --checkpoint "$T/k.ck")
"$PDL" "${K[@]}" --steps 4 >/dev/null 2>&1; cp "$T/k.ck" "$T/k.orig"
kk() { local n=$1 pat=$2; shift 2; local out rc; out=$("$PDL" "${K[@]}" --steps 8 --resume "$@" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -qE -- "$pat" <<<"$out" && ok "$n" || notok "$n" "exit $rc: $(tail -1 <<<"$out")"; cp "$T/k.orig" "$T/k.ck"; }
kk "kfac resume with another --kfac-damping names it" "--kfac-damping is '0.0299999993' in the checkpoint but '5'" --kfac-damping 5
kk "kfac resume with another --kfac-inv-every names it" "--kfac-inv-every is '1' in the checkpoint but '3'" --kfac-inv-every 3
out=$("$PDL" "${K[@]}" --steps 8 --resume 2>&1); rc=$?
[ $rc -eq 0 ] && ok "kfac resume with the same options continues" || notok "kfac resume, same options" "exit $rc: $(tail -1 <<<"$out")"
# a flag the chosen algorithm does not read: exit 2 naming the flag, the algorithm and who reads it
nr() { local n=$1 pat=$2; shift 2; local out rc; out=$("$PDL" train --data synthetic:n=256 --net tiny --steps 1 --quiet "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qE -- "$pat" <<<"$out" && ok "$n" || notok "$n" "exit $rc: $(tail -1 <<<"$out")"; }
nr "ssgd refuses --kfac-damping" "--algo ssgd does not read --kfac-damping \(read by: kfac kfac-dist\)" --algo ssgd --kfac-damping 3
nr "kfac refuses --tau" "--algo kfac does not read --tau" --algo kfac --tau 3
nr "msgd refuses --alpha" "--algo msgd does not read --alpha" --algo msgd --alpha 0.5
nr "gossip refuses --grad-threads (one gradient role per node)" "--algo gossip does not read --grad-threads" --algo gossip --grad-threads 2
nr "kfac refuses --with-replacement (its shards are fixed)" "--algo kfac does not read --with-replacement" --algo kfac --with-replacement
nr "--workers is read by nothing" "unknown flag '--workers'" --algo easgd --workers 3
nr "the flag may come before --algo" "--algo easgd does not read --gamma" --gamma 1 --algo easgd
printf 'x' | dd of="$T/c.ck" bs=1 seek=5000 conv=notrunc 2>/dev/null; ck "a flipped byte fails the checksum" "checksum mismatch"
head -c 3000 "$T/c.orig" > "$T/c.ck"; ck "a truncated checkpoint is refused" "checksum mismatch|too short"
echo junk >> "$T/c.ck"; ck "trailing bytes are refused" "checksum mismatch|trailing"
# broken file: platforms are refused before SimGrid's parser can abort pdl (exit 2, SimGrid's reason)
if [ -f "${BUILD:-build}/libpdlsim.so" ]; then
  G=src/sim/platforms/gossip-8.xml
  head -c 600 "$G" > "$T/trunc.xml"
  sed 's/speed="[^"]*"/speed="0f"/' "$G" > "$T/zero.xml"
  sed 's/bandwidth="[^"]*"/bandwidth="-1Gbps"/' "$G" > "$T/negbw.xml"
  sed 's/link_ctn id="[^"]*"/link_ctn id="nosuchlink"/' "$G" > "$T/unk.xml"
  { head -n -2 "$G"; echo '<bad'; } > "$T/badxml.xml"
  for f in trunc zero negbw unk badxml; do
    out=$(timeout 60 "$PDL" train --algo ssgd --runtime sim --platform "file:$T/$f.xml" --data synthetic:n=256 --net tiny --steps 2 --quiet 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "file:$T/$f.xml" <<<"$out" && ok "broken platform ($f): exit 2 naming the file, no abort" \
      || notok "broken platform $f" "exit $rc: $(grep -v '^{' <<<"$out" | head -2)"
  done
  out=$("$PDL" train --algo ssgd --runtime sim --platform "file:$G" --data synthetic:n=256 --net tiny --steps 2 --quiet 2>&1); rc=$?
  [ $rc -eq 0 ] && ok "a good file: platform still runs" || notok "good file: platform" "exit $rc: $(tail -2 <<<"$out")"
fi
left=$(find "$T" -name '.*.??????' | head -3)
[ -z "$left" ] && ok "no temp files left behind" || notok "temp files left" "$left"
finish
