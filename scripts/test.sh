#!/usr/bin/env bash
# Bootstraps (packages + build), then runs the whole test suite with CTest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" --all
cd "$root/build"
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
