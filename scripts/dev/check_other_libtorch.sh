#!/usr/bin/env bash
# Dev-time portability check (root, network to deb.debian.org, ~2 GB of packages; not run by CI):
# builds lmx in a Debian sid chroot against a newer LibTorch than bookworm's 1.13 and runs the
# whole CTest suite there, then compile-checks the CUDA and NCCL code against sid's CUDA
# LibTorch headers (no GPU needed: -fsyntax-only of the files that touch CUDA or c10d).
#
#   scripts/dev/check_other_libtorch.sh [--root DIR] [--no-tests] [--no-cuda]
#
# The chroot (default /srv/lmx-sid) is kept between runs; the source tree is bind-mounted
# read-only-in-spirit at /src/lmx and the builds go to /build (CPU) inside the chroot.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root=/srv/lmx-sid
tests=1
cuda=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --root) root="$2"; shift 2 ;;
    --no-tests) tests=0; shift ;;
    --no-cuda) cuda=0; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_other_libtorch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "check_other_libtorch.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
mirror=http://deb.debian.org/debian

if [[ ! -x "$root/usr/bin/apt-get" ]]; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
  debootstrap --variant=minbase --components=main,contrib,non-free sid "$root" "$mirror"
fi
echo "deb $mirror sid main contrib non-free" > "$root/etc/apt/sources.list"
for m in proc dev sys; do mountpoint -q "$root/$m" || mount --bind "/$m" "$root/$m"; done
mkdir -p "$root/src/lmx"
mountpoint -q "$root/src/lmx" || mount --bind "$src" "$root/src/lmx"
trap 'umount "$root/src/lmx" "$root/proc" "$root/dev" "$root/sys" 2>/dev/null || true' EXIT
in_root() { chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c "$1"; }

in_root "apt-get -o Acquire::Check-Valid-Until=false update -q >/dev/null && apt-get install -y -q --no-install-recommends build-essential cmake \
  libtorch-dev libcli11-dev libyaml-cpp-dev libfmt-dev nlohmann-json3-dev catch2 libgloo-dev libspdlog-dev libsentencepiece-dev \
  libopenblas0-pthread ca-certificates >/dev/null"
in_root "dpkg-query -W libtorch-dev g++ cmake catch2 libfmt-dev libyaml-cpp-dev | sed 's/^/  /'"

echo "== LibTorch $(in_root "dpkg-query -W -f '\${Version}' libtorch-dev"): build and test"
targets=lmx
[[ $tests == 1 ]] && targets="lmx lmx_tests"
in_root "cmake -S /src/lmx -B /build -Wno-dev >/dev/null && cmake --build /build -j$(nproc) --target $targets"
in_root "/build/lmx --version"
[[ $tests == 1 ]] && in_root "cd /build && ctest -j$(nproc) --timeout 600 --output-on-failure"

if [[ $cuda == 1 ]]; then
  echo "== CUDA LibTorch headers: compile-check of the CUDA and NCCL paths"
  # Extracted, not installed: libtorch-cuda's runtime pulls NVIDIA's cuDNN installer. The CUDA
  # headers come first on the include path; one they lack would fall back to the chroot's CPU
  # LibTorch headers in /usr/include.
  in_root "rm -rf /opt/cuda-torch /tmp/debs && mkdir -p /opt/cuda-torch /tmp/debs && cd /tmp/debs && \
    apt-get download -q libtorch-cuda-dev nvidia-cuda-dev libnccl-dev libcu++-dev >/dev/null && \
    for f in *.deb; do dpkg -x \"\$f\" /opt/cuda-torch; done"
  version=$(in_root "ls /tmp/debs | sed -n 's/^libtorch-cuda-dev_\([^_]*\)_.*/\1/p'")
  echo "   libtorch-cuda-dev $version"
  inc="-I/src/lmx/src -I/opt/cuda-torch/usr/include -I/opt/cuda-torch/usr/include/torch/csrc/api/include"
  defs='-DLMX_VERSION="0" -DLMX_SOURCE_DIR="/src/lmx" -DFMT_HEADER_ONLY=1'
  failed=0
  for variant in "-DLMX_WITH_NCCL=1" "-DLMX_WITH_NCCL=1 -DLMX_WITH_GLOO=0" "-DLMX_WITH_GLOO=0"; do
    for f in src/distributed/dist.cpp src/util/runtime.cpp src/kernels/precision.cpp src/train/trainer.cpp src/train/train_run.cpp \
             src/cli/cmd_train.cpp src/cli/entry.cpp; do
      if in_root "g++ -std=c++17 -fsyntax-only -Wall -Wextra -Wno-unused-parameter $defs $variant $inc /src/lmx/$f \
                  2>/tmp/cuda_check.log"; then
        echo "   ok    $variant  $f"
      else
        echo "   FAIL  $variant  $f"; in_root "grep -m5 error /tmp/cuda_check.log" || true; failed=1
      fi
    done
  done
  [[ $failed == 0 ]] || exit 1
fi
echo "check_other_libtorch.sh: all checks passed"
