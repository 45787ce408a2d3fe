#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds with warnings as errors, runs every test
# (unit, integration, real PyTorch), then the unit tests again under ASan+UBSan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"

"$root/scripts/build.sh" "$root/build"
ctest --test-dir "$root/build" --output-on-failure -j2 --timeout 600

"$root/scripts/build.sh" "$root/build-asan" -DPTRUN_SANITIZE=ON -DPTRUN_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j2 -L unit --timeout 600
