#!/usr/bin/env bash
# The whole test suite: installs dependencies, checks the sources' format (scripts/check-format.sh),
# builds with warnings as errors, runs every test
# (unit, integration, real PyTorch 1.13 and, in the Debian 13 root, 2.6), then the unit tests again
# under ASan+UBSan and under ThreadSanitizer, then the two store fuzzers (clang) for a bounded time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/check-format.sh"

# The Debian 13 root with PyTorch 2.6 (cached: instant once made) is made while ptrun builds;
# ctest's torch2 tests need it, and here its absence is a failure, not a skip.
torch2_log=$(mktemp)
"$root/scripts/torch2-root.sh" >"$torch2_log" 2>&1 &
torch2_pid=$!
"$root/scripts/build.sh" "$root/build" || { wait "$torch2_pid" || true; exit 1; }
if ! wait "$torch2_pid"; then
  cat "$torch2_log" >&2; rm -f "$torch2_log"; exit 1
fi
cat "$torch2_log" >&2; rm -f "$torch2_log"
PTRUN_TORCH2_REQUIRED=1 ctest --test-dir "$root/build" --output-on-failure -j2 --timeout 600

# unit_tree DIR CMAKE_ARGS...: a Debug tree with the unit-test binaries alone (all the sanitizer
# trees run), warnings as errors. Built for speed: catch.hpp precompiled (PTRUN_PCH; the main tree
# above builds without, so a file that misses an include still fails there) and the test binaries
# (launcher_tests alone ~600 MB under ASan) linked by mold.
unit_tree() {
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -DPTRUN_WERROR=ON -DPTRUN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
    -DPTRUN_PCH=ON -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=mold "$@" >/dev/null
  cmake --build "$dir" --target unit_tests -j"$(nproc)"
}

unit_tree "$root/build-asan" -DPTRUN_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j2 -L unit --timeout 600

# A data race fails its test (TSan exits 66 after reporting); no report is suppressed.
unit_tree "$root/build-tsan" -DPTRUN_SANITIZE=thread
TSAN_OPTIONS=second_deadlock_stack=1 \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j2 -L unit --timeout 600

# The store fuzzers under clang/libFuzzer, bounded (-max_total_time=30 each in their ctests): the
# request parser, and a real server's connection layer on loopback.
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -DPTRUN_WERROR=ON -DPTRUN_FUZZ=ON \
  -DPTRUN_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build-fuzz" --target request_parser_fuzz server_fuzz -j"$(nproc)"
ctest --test-dir "$root/build-fuzz" --output-on-failure -L fuzz --timeout 120
