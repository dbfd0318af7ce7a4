#!/usr/bin/env bash
# tests/t_vectorize.sh — the activation loops vectorise for AVX2 as well as for the machine at
# hand (issue 19). GCC vectorises `x > 0 ? x : s * x` (leaky ReLU, its gradient, the fused
# conv epilogues) on AVX2, which has no masked multiply, only under -fno-trapping-math; without
# it the loops were scalar with a branch per element and an AVX2 machine lost 1.7x on the whole
# step. This compiles the kernels with the build's own flags (from $BUILD/config.stamp) for
# -march=haswell and for -march=native, and asks GCC's vectoriser report for those loops.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
BUILD=${BUILD:-build}
stamp=$BUILD/config.stamp
[ -f "$stamp" ] || { notok "build flags" "$stamp missing: run make build first"; exit 0; }
flags=$(sed -n 's/.*| cc=[^ ]* \(.*\) | nvcc=.*/\1/p' "$stamp")
[ -n "$flags" ] || { notok "build flags" "no cc= field in $stamp"; exit 0; }
case " $flags " in *" -fsanitize="*) echo "skip - sanitizer build: not the release flags"; exit 0 ;; esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# file:function pairs whose select loops must vectorise
check() {   # check ARCH FILE PATTERN...: each line matching a pattern is reported vectorised
  local arch=$1 file=$2; shift 2
  local f=${flags//-march=native/}
  # shellcheck disable=SC2086
  gcc $f -march=$arch -fopt-info-vec-optimized -c "$file" -o "$tmp/x.o" 2>"$tmp/rep" \
    || { notok "$file compiles for -march=$arch" "$(head -5 "$tmp/rep")"; return; }
  local pat line bad=()
  for pat in "$@"; do
    line=$(grep -n -F -- "$pat" "$file" | head -1 | cut -d: -f1)
    [ -n "$line" ] || { bad+=("pattern not found: $pat"); continue; }
    grep -q "^$file:$line:[0-9]*: optimized: loop vectorized" "$tmp/rep" || bad+=("line $line: $pat")
  done
  [ ${#bad[@]} -eq 0 ] && ok "$file: activation loops vectorised for -march=$arch" \
    || notok "$file: activation loops vectorised for -march=$arch" "$(printf '%s\n' "${bad[@]}")"
}
for arch in haswell native; do
  check $arch kernels/cpu/cpu_elem.c "out[i] = in[i] > 0.0f ? in[i] : slope * in[i];" \
    "din[i] = out[i] > 0.0f ? dout[i] : slope * dout[i];"
  check $arch kernels/cpu/cpu_conv.c "x[i] = x[i] > 0.0f ? x[i] : slope * x[i];" \
    "g[j] = out_i[j] > 0.0f ? dout_i[j] : slope * dout_i[j];"
done
