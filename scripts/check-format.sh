#!/usr/bin/env bash
# Checks that every C and C++ source is formatted as .clang-format says (Debian 12's clang-format
# 14): exits non-zero naming each file and line that differs. scripts/check-format.sh --fix
# formats them in place instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
else  # a copy without .git: the source directories, not build trees
  mapfile -t files < <(find bench ddp env examples launcher placement progress rendezvous schedulers slurm sys \
    tests watchdog -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \))
fi
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run -Werror "${files[@]}"
fi
