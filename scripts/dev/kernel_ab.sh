#!/usr/bin/env bash
# A/B of the fused attention kernels: the working tree's against those of a git commit (default
# HEAD), forward + backward of one layer per shape, interleaved, with a bit-for-bit comparison of
# the outputs (scripts/dev/attention_kernel_ab.cpp). No LibTorch: builds in seconds. Exit 3 when
# the outputs differ (a change that rounds differently needs the lecture rerun, docs/PERFORMANCE.md).
#   scripts/dev/kernel_ab.sh [--ref COMMIT] [--iters N] [--generic | --avx512]
# --avx512 times the AVX-512 variants (the reference's and the working tree's); the default, the
# AVX2 ones; --generic the baseline x86-64 ones. (That the AVX-512 variant gives the AVX2 bits is
# tests/test_kernel_variants.cpp's.)
# Time it with the machine otherwise idle; OPENBLAS_CORETYPE does not matter here (no BLAS).
set -euo pipefail
cd "$(dirname "$0")/../.."
ref=HEAD iters=100 isa=avx2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ref) ref="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --generic) isa=generic; shift ;;
    --avx512) isa=avx512; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "kernel_ab.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ref"
git rev-parse --verify -q "$ref^{commit}" > /dev/null || { echo "kernel_ab.sh: no commit '$ref'" >&2; exit 2; }
# The kernels live in src/kernels; commits before that layout kept them in src/model.
ref_impl=kernels/attention_impl.h
git cat-file -e "$ref:src/$ref_impl" 2> /dev/null || ref_impl=model/attention_kernels_impl.h
git archive "$ref" "src/${ref_impl%%/*}" | tar -x -C "$tmp/ref"
flags="-O3 -DNDEBUG -std=gnu++17 -Wno-psabi"
# The AVX-512 flags are the ones CMakeLists.txt gives cpu_kernels_avx512.cpp.
f512="-mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx2 -mfma -mprefer-vector-width=256"
isa_flags=""
[[ $isa == avx2 ]] && isa_flags="-mavx2 -mfma"
[[ $isa == avx512 ]] && isa_flags="$f512"
printf '#define LMX_KERNEL_NS ref\n#include "%s"\n' "$ref_impl" > "$tmp/ref.cpp"
g++ $flags $isa_flags -I"$tmp/ref/src" -c "$tmp/ref.cpp" -o "$tmp/ref.o"
g++ $flags -Isrc -c src/kernels/cpu_kernels_generic.cpp -o "$tmp/generic.o"
g++ $flags -mavx2 -mfma -Isrc -c src/kernels/cpu_kernels_avx2.cpp -o "$tmp/avx2.o"
g++ $flags $f512 -Isrc -c src/kernels/cpu_kernels_avx512.cpp -o "$tmp/avx512.o"
g++ $flags -Isrc -c scripts/dev/attention_kernel_ab.cpp -o "$tmp/ab.o"
g++ $flags -Isrc -c src/util/env.cpp -o "$tmp/env.o"  # LMX_KERNEL_ISA
g++ "$tmp/ab.o" "$tmp/env.o" "$tmp/ref.o" "$tmp/generic.o" "$tmp/avx2.o" "$tmp/avx512.o" -o "$tmp/ab"
echo "ref: $(git rev-parse --short "$ref") ($ref); new: the working tree$(git diff --quiet -- src/kernels || echo ' (modified)')"
"$tmp/ab" "$iters" "$isa"
