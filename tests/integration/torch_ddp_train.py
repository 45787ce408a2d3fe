"""A tiny deterministic DDP (gloo) training run; rank 0 writes its per-step losses as JSON.
Usage: torch_ddp_train.py OUT_JSON [STEPS]. Runs under torchrun or ptrun (env:// rendezvous)."""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    out, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(42)
    x_all = torch.randn(64 * world, 8, generator=gen)
    y_all = torch.sin(x_all.sum(dim=1, keepdim=True))
    x, y = x_all[rank::world], y_all[rank::world]
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        losses.append(reduced.item() / world)
    store = dist.distributed_c10d._get_default_store()
    store.set(f"ptrun-test-done-{rank}", "1")
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"losses": losses, "world": world,
                       "agent_store": os.environ.get("TORCHELASTIC_USE_AGENT_STORE"),
                       "master_addr": os.environ.get("MASTER_ADDR")}, f)
    dist.barrier()
    # Leave without tearing the process group down: torch 1.13 can deadlock there (the Reducer's
    # destructor joins a gloo thread while holding the GIL, and that thread frees a tensor whose
    # Python object needs the GIL): it hung this script twice in a day of test runs under load.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
