#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds with warnings as errors, runs every test
# (unit, integration, real PyTorch), then the unit tests again under ASan+UBSan, then the store
# request-parser fuzzer (clang) for a bounded time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"

"$root/scripts/build.sh" "$root/build"
ctest --test-dir "$root/build" --output-on-failure -j2 --timeout 600

"$root/scripts/build.sh" "$root/build-asan" -DPTRUN_SANITIZE=ON -DPTRUN_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j2 -L unit --timeout 600

# The request-parser fuzzer under clang/libFuzzer, bounded (-max_total_time=30 in its ctest).
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -DPTRUN_WERROR=ON -DPTRUN_FUZZ=ON \
  -DPTRUN_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build-fuzz" --target request_parser_fuzz -j"$(nproc)"
ctest --test-dir "$root/build-fuzz" --output-on-failure -L fuzz --timeout 120
