"""Deterministic DDP (gloo) training that checkpoints each epoch and resumes from the checkpoint.
Usage: torch_ddp_ckpt.py OUT_JSON CKPT EPOCHS [NOTIFY]. Runs under ptrun or torchrun (env://).
After init every rank writes "start RANK RESTART" to the FIFO NOTIFY, and after each epoch's checkpoint
"epoch RANK RESTART EPOCH"; with PTRUN_TEST_HOLD_EPOCH=E the first attempt then waits after epoch E
(for the test to kill something). Rank 0 writes the last step's loss to OUT_JSON."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS_PER_EPOCH = 4


def main():
    out, ckpt, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    notify = sys.argv[4] if len(sys.argv) > 4 else None
    hold = int(os.environ.get("PTRUN_TEST_HOLD_EPOCH", "0"))
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    def say(*words):
        if notify is not None:
            fd = os.open(notify, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, (" ".join(str(w) for w in words) + "\n").encode())
            os.close(fd)

    say("start", rank, restart)
    torch.manual_seed(1234)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    first = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        first = state["epoch"]
    model = DDP(net)
    gen = torch.Generator().manual_seed(42)
    x_all = torch.randn(64 * world, 8, generator=gen)
    y_all = torch.sin(x_all.sum(dim=1, keepdim=True))
    x, y = x_all[rank::world], y_all[rank::world]
    last = None
    for epoch in range(first, epochs):
        for _ in range(STEPS_PER_EPOCH):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            reduced = loss.detach().clone()
            dist.all_reduce(reduced)
            last = reduced.item() / world
        if rank == 0:
            torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": epoch + 1}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
        dist.barrier()
        say("epoch", rank, restart, epoch + 1)
        if restart == 0 and epoch + 1 == hold:
            time.sleep(3600)  # killed with the round when the test ends it
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"loss": last, "world": world, "resumed_from": first}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
