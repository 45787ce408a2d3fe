#!/usr/bin/python3
"""Worker for the SLURM launch tests: meets every rank in the workers' store with a real torch
TCPStore client, then writes OUT_DIR/rank.<RANK>.json: its environment, host name and the host name
each rank wrote to the store. Usage: store_worker.py OUT_DIR [--host-first]

The worker beside the store (GROUP_RANK 0, LOCAL_RANK 0) leaves last, waiting for every rank's
"done" key, so the store does not go away under a slower rank. With --host-first it leaves first
instead, and every other rank uses the store once more after that worker's process is gone (the
namespaces share one pid space): one-task-per-rank mode's exit barrier must keep the store up.
"""
import datetime
import json
import os
import socket
import sys
import time

from torch.distributed import TCPStore

out_dir = sys.argv[1]
host_first = "--host-first" in sys.argv[2:]
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
beside_store = os.environ["GROUP_RANK"] == "0" and os.environ["LOCAL_RANK"] == "0"
store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
                 datetime.timedelta(seconds=60))
store.set(f"slurm-test/host/{rank}", socket.gethostname())
store.wait([f"slurm-test/host/{r}" for r in range(world)])
peers = {r: store.get(f"slurm-test/host/{r}").decode() for r in range(world)}
if host_first:
    if beside_store:
        store.set("slurm-test/first-pid", str(os.getpid()))
    else:
        first = int(store.get("slurm-test/first-pid"))
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{first}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{first}"), "the worker beside the store did not exit"
        store.set(f"slurm-test/after/{rank}", "1")  # the store must still be there
tmp = os.path.join(out_dir, f".rank.{rank}.json")
with open(tmp, "w") as f:
    json.dump({"env": dict(os.environ), "hostname": socket.gethostname(), "peers": peers, "pid": os.getpid()}, f)
os.rename(tmp, os.path.join(out_dir, f"rank.{rank}.json"))
if not host_first:
    store.set(f"slurm-test/done/{rank}", "1")
    if beside_store:
        store.wait([f"slurm-test/done/{r}" for r in range(world)])
