#!/usr/bin/env bash
# GPU-machine checks (run by hand through the device tool; CI has no GPU): a real torch 2.x client
# against ptrun's agent store, and NCCL. Usage: tests/gpu/run_torch2_checks.sh PTRUN_BINARY OUT_DIR
# (CI covers torch 2.6 without a GPU: ctest -L torch2, Debian 13's torch in scripts/torch2-root.sh.)
set -uo pipefail
ptrun=$(realpath "$1"); out=$2; here=$(cd "$(dirname "$0")" && pwd); it=$here/../integration
export PYTHON_EXEC=${PYTHON_EXEC:-python3} GLOO_SOCKET_IFNAME=lo
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
echo "== every store verb, torch 2.x client, 2 workers"
"$ptrun" --standalone --nproc-per-node 2 --tee 1 "$it/torch_store_verbs.py"; echo "rc=$?"
echo "== DDP gloo, 2 workers, ptrun vs torchrun"
"$ptrun" --standalone --nproc-per-node 2 "$it/torch_ddp_train.py" "$out/ptrun.json"; echo "rc=$?"
torchrun --standalone --nproc_per_node 2 "$it/torch_ddp_train.py" "$out/torchrun.json" >/dev/null 2>&1; echo "rc=$?"
python3 - "$out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1] + "/ptrun.json")); b = json.load(open(sys.argv[1] + "/torchrun.json"))
print("ptrun", a); print("torchrun", b)
print("losses match:", all(abs(x - y) < 1e-6 for x, y in zip(a["losses"], b["losses"])))
PY
echo "== NCCL, world size 1, unique id through the agent store"
"$ptrun" --standalone --nproc-per-node 1 "$here/torch_nccl_smoke.py"; echo "rc=$?"
