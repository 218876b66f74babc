#!/usr/bin/env bash
# Installs what lmx needs (Debian packages only), checks that OpenBLAS is the active BLAS,
# and builds build/lmx. Idempotent: a second run installs nothing and takes seconds.
#   scripts/bootstrap.sh            deps + build the lmx binary
#   scripts/bootstrap.sh --deps     deps only
#   scripts/bootstrap.sh --all      deps + build everything (tests too)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"

packages=(cmake g++ make ninja-build libtorch-dev libcli11-dev libyaml-cpp-dev libfmt-dev catch2
          nlohmann-json3-dev libopenblas0-pthread gnuplot-nox libgloo-dev libsentencepiece-dev libspdlog-dev
          libdnnl-dev libpng-dev)

say() { echo "[bootstrap] $*" >&2; }
# Each part's wall time, for the first-run table in docs/PERFORMANCE.md.
t_start=$SECONDS
took() { echo "$((SECONDS - t_start)) s"; }

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing: ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  # Refresh the package lists only when they are missing or an install fails on them.
  if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 ||
     ! $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
    $sudo apt-get update >&2
    $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2
  fi
  say "packages installed in $(took)"
else
  say "all ${#packages[@]} packages present"
fi
t_start=$SECONDS

blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
if [[ "$blas" == *openblas* ]]; then
  say "BLAS: OpenBLAS ($blas)"
else
  say "WARNING: libblas.so.3 is $blas, not OpenBLAS: training will be ~25x slower"
  say "fix: update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"
fi

[[ "$mode" == "--deps" ]] && exit 0

build="$root/build"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # Ninja rebuilds only what changed when a source file is added (Make rebuilds everything).
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  say "configured in $(took)"
fi
t_start=$SECONDS
jobs=$(nproc 2>/dev/null || echo 2)
if [[ "$mode" == "--all" ]]; then
  cmake --build "$build" -j"$jobs" >&2
  say "built $build (lmx and its tests) in $(took)"
else
  cmake --build "$build" -j"$jobs" --target lmx >&2
  say "built $build/lmx in $(took)"
fi
