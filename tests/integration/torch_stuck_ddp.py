"""An unchanged DDP (gloo) training script, as a user writes it: no ptrun import, no heartbeat.
Usage: torch_stuck_ddp.py STUCK_RANK [STEPS]. Every rank trains; after 3 steps rank STUCK_RANK
says `rank R stuck` on stdout and sits in stuck_in_loader() (120 s at most) while the others go
on into the next step's gradient all-reduce and wait there."""
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def stuck_in_loader(rank):
    print(f"rank {rank} stuck", flush=True)
    time.sleep(120)


def train(stuck_rank, steps):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1234)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    for step in range(steps):
        if step == 3 and rank == stuck_rank:
            stuck_in_loader(rank)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    train(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 6)
