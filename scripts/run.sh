#!/usr/bin/env bash
# The README's first command: installs dependencies, builds, and runs the main job: ptrun
# launching 4 local workers of `train`, the data-parallel MLP example (extra arguments go to ptrun,
# before the program).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" >/dev/null
exec "$root/build/launcher/ptrun" --standalone --nproc-per-node 4 "$@" "$root/build/examples/train/train"
