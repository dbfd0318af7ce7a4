#!/usr/bin/env bash
# tests/fuzz/run.sh — builds the libFuzzer targets (tests/fuzz/fuzz_*.c) against pdl's parsers
# with clang, ASan and UBSan into $BUILD_FUZZ (build-fuzz), then runs each from its seed corpus
# (tests/fuzz/corpus/<target>/; new inputs go to $BUILD_FUZZ/corpus/<target>/, never into git).
#   --seconds N   each target for N seconds, random seeds (make fuzz FUZZ_S=N)
#   --runs N      each target for N inputs with -seed=1: deterministic (make test's check)
# Exit non-zero on any finding; crash inputs are kept in $BUILD_FUZZ/findings/.
set -u
cd "$(dirname "$0")/../.." || exit 2
mode=runs; count=2000
case "${1:-}" in --seconds) mode=seconds; count=${2:?}; ;; --runs) count=${2:?}; ;; "") ;; *) echo "usage: $0 [--seconds N | --runs N]" >&2; exit 2 ;; esac
command -v clang >/dev/null || { echo "fuzz: clang not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
B=${BUILD_FUZZ:-build-fuzz}
# --runs (make test) builds at -O0, --seconds at -O1: the ~50 compiles were almost all of make
# test's t_fuzz (its 6 x 2000 inputs take under a second), and with the sanitizers and the
# coverage instrumentation -O1 compiles 5-10x slower (cpu_winograd.c 7.7 -> 0.8 CPU-s, model.c
# 1.9 -> 0.4); ASan and UBSan check every access and operation at -O0 (none optimised away), so the
# deterministic check finds what it found, while a timed campaign wants -O1's faster inputs. The
# objects of each level have their own folder. -gline-tables-only: a report's file:line, without
# the rest of the debug information (3-20% of a compile).
opt=-O1; [ "$mode" = runs ] && opt=-O0
mkdir -p "$B/obj$opt" "$B/bin$opt" "$B/findings"
CF=(-std=c11 -gline-tables-only $opt -D_GNU_SOURCE -DPDL_GIT_REV_DEFAULT=\"fuzz\" -fopenmp=libgomp -Isrc -Ibase -I. -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all)
SRC=(base/util/*.c src/core/*.c src/optim/*.c src/kfac/*.c src/algo/*.c src/analysis/*.c src/rt/*.c src/coll/mpi_util.c src/coll/coll_common.c src/coll/coll_mpi.c src/coll/coll_nccl.c kernels/cpu/*.c kernels/phantom/*.c reference/*.c src/sim/platform.c)
objs=()
for s in "${SRC[@]}"; do
  o=$B/obj$opt/$(echo "$s" | tr / _).o; objs+=("$o")
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find src kernels reference -name '*.h' -newer "$o" 2>/dev/null | head -1)" ]; then
    clang "${CF[@]}" -c "$s" -o "$o" 2>"$B/build.log" || { echo "fuzz: cannot compile $s:"; tail -5 "$B/build.log"; exit 2; }
  fi
done
rc=0
for t in tests/fuzz/fuzz_*.c; do
  name=$(basename "$t" .c); exe=$B/bin$opt/$name
  if [ ! -x "$exe" ] || [ "$t" -nt "$exe" ] || [ tests/fuzz/fuzz.h -nt "$exe" ] || [ "$0" -nt "$exe" ] || [ -n "$(find "$B/obj$opt" -newer "$exe" | head -1)" ]; then
    clang "${CF[@]}" -fsanitize=fuzzer "$t" "${objs[@]}" -o "$exe" -Wl,--wrap=exit,--wrap=gzopen,--wrap=gzclose,--wrap=fopen,--wrap=fclose,--wrap=xmalloc,--wrap=xcalloc,--wrap=xfree -llapacke -lopenblas -ljpeg -lz -lm -lpthread -ldl 2>"$B/build.log" \
      || { echo "fuzz: cannot build $name:"; tail -5 "$B/build.log"; exit 2; }
  fi
  corpus=$B/corpus/${name#fuzz_}; mkdir -p "$corpus"
  args=(-detect_leaks=0 -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$B/findings/$name-" -print_final_stats=1)
  if [ "$mode" = runs ]; then args+=(-runs="$count" -seed=1); else args+=(-max_total_time="$count" -rss_limit_mb=12000); fi
  log=$B/$name.log
  seeds=tests/fuzz/corpus/${name#fuzz_}; dirs=("$corpus"); [ -d "$seeds" ] && dirs+=("$seeds")
  if ASAN_OPTIONS=detect_leaks=0 "$exe" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
    echo "ok - fuzz $name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs, no finding"
  else
    echo "not ok - fuzz $name: finding or failure (see $log and $B/findings/): $(grep -m1 -E 'ERROR|runtime error|deadly signal|timeout|No such file' "$log")"; rc=1
  fi
done
exit $rc
