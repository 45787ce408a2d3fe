"""A gloo DDP training that checkpoints when ptrun forwards its --checkpoint-signal (SIGUSR1),
then resumes from that checkpoint when the job runs again (a SLURM requeue, a new pod):

    ptrun --nproc-per-node 2 --checkpoint-signal SIGUSR1 --requeue \
        checkpoint_on_signal.py --checkpoint ckpt.pt --steps 300 --result result.json

The signal handler only sets a flag; at the next step boundary every rank agrees (an allreduce of
the flags) to stop at the same step, rank 0 saves the model, the optimizer and the step, and every
rank exits 0 within --checkpoint-grace. The data of rank r at step s depends only on (r, s), so a
run interrupted and resumed any number of times ends with the same loss as an uninterrupted one.
PTRUN_REQUEUE_COUNT (SLURM_RESTART_COUNT under --requeue) says how many times the job was
requeued; TORCHELASTIC_RESTART_COUNT counts ptrun's own restarts."""
import argparse
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

stop_requested = False


def request_stop(signo, frame):
    """SIGUSR1: checkpoint at the next step boundary (nothing heavy in a signal handler)."""
    global stop_requested
    stop_requested = True


def batch(rank, step):
    """The (inputs, targets) rank `rank` trains on at step `step`: a function of both alone."""
    gen = torch.Generator().manual_seed(100003 * step + rank)
    x = torch.randn(16, 8, generator=gen)
    return x, torch.sin(x.sum(dim=1, keepdim=True))


def say(line):
    """Prints `line` in one write, so lines of several workers sharing a pipe never mix."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def every_rank_agrees_to_stop():
    """True on every rank when any rank was asked to stop (one allreduce per step)."""
    flag = torch.tensor([1.0 if stop_requested else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return flag.item() > 0


def write_json(path, value):
    """Writes `value` to `path` atomically (a reader never sees half of it)."""
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


def main():
    """Trains --steps steps from the checkpoint if there is one; checkpoints on the signal."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True, help="where rank 0 saves and all load")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--step-time", type=float, default=0.01, help="seconds of 'work' a step")
    parser.add_argument("--result", help="rank 0 writes the final loss and more here (JSON)")
    parser.add_argument("--training-marker", help="rank 0 writes this file at step 5 of a run")
    args = parser.parse_args()
    signal.signal(signal.SIGUSR1, request_stop)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                    torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    requeues = int(os.environ.get("PTRUN_REQUEUE_COUNT", "0"))
    if os.path.exists(args.checkpoint):
        state = torch.load(args.checkpoint)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        say(f"rank {rank}: resumed at step {start} (PTRUN_REQUEUE_COUNT={requeues})")
    loss = torch.tensor(0.0)
    step = start
    while step < args.steps:
        if every_rank_agrees_to_stop():
            if rank == 0:
                state = {"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                         "step": step}
                torch.save(state, args.checkpoint + ".tmp")
                os.replace(args.checkpoint + ".tmp", args.checkpoint)
                say(f"rank 0: checkpoint saved at step {step}")
            dist.barrier()  # nobody exits before the checkpoint is on disk
            dist.destroy_process_group()
            return 0
        opt.zero_grad(set_to_none=True)
        x, y = batch(rank, step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        time.sleep(args.step_time)
        step += 1
        if rank == 0 and step == start + 5 and args.training_marker:
            write_json(args.training_marker, {"step": step, "requeue_count": requeues})
    final = loss.detach().clone()
    dist.all_reduce(final)
    if rank == 0:
        say(f"rank 0: final loss {final.item() / dist.get_world_size():.10f}")
        if args.result:
            write_json(args.result, {"loss": final.item() / dist.get_world_size(),
                                     "resumed_from": start, "requeue_count": requeues})
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
