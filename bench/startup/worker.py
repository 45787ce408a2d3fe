"""Time to first step (bench/startup/across_nodes.py): every rank joins a gloo process group, wraps
a tiny model in DDP, takes one SGD step and writes time.time() right after its first
optimizer.step() to DIR/step_RANK (DIR: argv[1]), followed by the CPUs it may run on (its
affinity, comma-separated); then a barrier and os._exit(0).
os._exit, not destroy_process_group: torch 1.13 can deadlock tearing down a DDP gloo group
(tests/integration/torch_ddp_train.py)."""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    out = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.ones(4, 8)).sum()
    loss.backward()
    opt.step()
    t = time.time()
    tmp = os.path.join(out, f".step_{rank}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(f"{t!r} {','.join(map(str, sorted(os.sched_getaffinity(0))))}")
    os.rename(tmp, os.path.join(out, f"step_{rank}"))  # never half-written
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
