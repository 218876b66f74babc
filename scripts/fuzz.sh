#!/usr/bin/env bash
# Coverage-guided fuzzing of the config and experiment-spec loaders with libFuzzer (optional;
# CI runs the deterministic mutation test tests/test_fuzz.cpp instead).
#   scripts/fuzz.sh [config|spec] [SECONDS]     (default: config 60)
# Needs clang and a built build/ (or $LMX_BUILD): the loaders are recompiled with clang's
# coverage instrumentation and ASan/UBSan, the rest is linked from the layer libraries (liblmx_*.a). Crashing
# inputs are written to build-fuzz/crash-*; the corpus grows in build-fuzz/corpus-<target>.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-config}"
seconds="${2:-60}"
build="${LMX_BUILD:-$root/build}"
out="$root/build-fuzz"
case "$target" in
  config) define=0 ;;
  spec) define=1 ;;
  *) echo "usage: scripts/fuzz.sh [config|spec] [SECONDS]" >&2; exit 2 ;;
esac
mkdir -p "$out/corpus-$target"
[[ -f "$build/liblmx_cli.a" ]] || { echo "fuzz.sh: $build/liblmx_cli.a missing: build first (scripts/bootstrap.sh)" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }
bin="$out/fuzz-$target"
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -I"$root/src" -DLMX_FUZZ_TARGET=$define
       -DFMT_HEADER_ONLY=1 -DLMX_VERSION='"fuzz"' -DLMX_SOURCE_DIR="\"$root\"")
clang++ "${flags[@]}" "$root/tests/fuzz/fuzz_loaders.cpp" "$root/src/config/config.cpp" "$root/src/config/fields.cpp" "$root/src/config/registry.cpp" \
  "$root/src/experiments/spec.cpp" -o "$bin" \
  "$build"/liblmx_{experiments,train,dist,formats,model,kernels,data,util}.a -ltorch -ltorch_cpu -lc10 -lyaml-cpp -lpthread -ldl
seeds=("$root"/configs/*.yaml "$root"/configs/models/*.yaml)
[[ "$target" == spec ]] && seeds=("$root"/experiments/*.yaml)
cp -n "${seeds[@]}" "$out/corpus-$target/" 2>/dev/null || true
cd "$root/configs"  # spec bases and extends resolve from here
"$bin" -max_total_time="$seconds" -max_len=4096 -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus-$target"
