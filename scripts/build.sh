#!/usr/bin/env bash
# Configures and builds one tree: scripts/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
cmake -S "$root" -B "$dir" -DPTRUN_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
