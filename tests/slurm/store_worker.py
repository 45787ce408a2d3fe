#!/usr/bin/python3
"""Worker for the SLURM launch tests: meets every rank in the workers' store with a real torch
TCPStore client, then writes OUT_DIR/rank.<RANK>.json: its environment, host name and the host name
each rank wrote to the store. Usage: store_worker.py OUT_DIR

The worker that runs beside the store (GROUP_RANK 0, LOCAL_RANK 0) leaves last: it waits until
every rank has written its "done" key, so the store does not go away under a slower rank.
"""
import datetime
import json
import os
import socket
import sys

from torch.distributed import TCPStore

out_dir = sys.argv[1]
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
                 datetime.timedelta(seconds=60))
store.set(f"slurm-test/host/{rank}", socket.gethostname())
store.wait([f"slurm-test/host/{r}" for r in range(world)])
peers = {r: store.get(f"slurm-test/host/{r}").decode() for r in range(world)}
tmp = os.path.join(out_dir, f".rank.{rank}.json")
with open(tmp, "w") as f:
    json.dump({"env": dict(os.environ), "hostname": socket.gethostname(), "peers": peers, "pid": os.getpid()}, f)
os.rename(tmp, os.path.join(out_dir, f"rank.{rank}.json"))
store.set(f"slurm-test/done/{rank}", "1")
if os.environ["GROUP_RANK"] == "0" and os.environ["LOCAL_RANK"] == "0":
    store.wait([f"slurm-test/done/{r}" for r in range(world)])
