"""A small gloo DDP training that recovers in place (ptrun.recovery) when a worker dies:

    ptrun --standalone --nproc-per-node 4 --restart-policy failed --max-restarts 3 \
        recover_ddp.py --steps 30 --crash-at-step 10 --crash-rank 2 --final-params params.txt

Rank R kills itself (SIGKILL) at the start of step K, once (generation 0 of the first attempt);
ptrun starts a replacement for it alone, the survivors keep their processes and the run goes on
at step K with the most advanced rank's state (no checkpoint). The data of rank r at step s
depends only on (r, s), so the final parameters equal an uninterrupted run's. Without
--restart-policy failed the same script is a plain DDP run."""
import argparse
import datetime
import os
import signal
import sys

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from ptrun.recovery import Recovery


def batch(rank, step):
    """The (inputs, targets) rank `rank` trains on at step `step`: a function of both alone."""
    gen = torch.Generator().manual_seed(100003 * step + rank)
    x = torch.randn(16, 8, generator=gen)
    return x, torch.sin(x.sum(dim=1, keepdim=True))


def train_step(model, opt, rank, step):
    """One step; the parameters change only after backward's allreduce succeeded."""
    opt.zero_grad(set_to_none=True)
    x, y = batch(rank, step)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def say(line):
    """Prints `line` in one write, so lines of several workers sharing a pipe never mix."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def wrap(net):
    """net in DDP. find_unused_parameters=True: DDP then keeps its first gradient bucket layout
    instead of rebuilding it after one step, so a wrapper made at recovery sums each gradient in
    the order the uninterrupted run does (bit-for-bit equal results; without it they differ in the
    last bits). Recovery itself does not need it."""
    return DDP(net, find_unused_parameters=True)


def should_crash(args, rec, step):
    return (step == args.crash_at_step and rec.rank == args.crash_rank and rec.generation == 0
            and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--crash-at-step", type=int, default=-1)
    p.add_argument("--crash-rank", type=int, default=-1)
    p.add_argument("--final-params", help="rank 0 writes the parameters here (float.hex)")
    args = p.parse_args()

    rec = Recovery()
    say(f"pid {os.getpid()} rank {rec.rank} generation {rec.generation}")
    rec.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    step = rec.resync(net, opt, 0)  # a replacement takes the survivors' state; else 0
    if step:
        say(f"rank {rec.rank} caught up: generation {rec.generation} at step {step} "
            f"(source rank {rec.last_source})")
    model = wrap(net)
    while step < args.steps:
        if should_crash(args, rec, step):
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            train_step(model, opt, rec.rank, step)
        except RuntimeError as err:
            model = None  # lets recover() free the old group (torch 1.13): blocked peers fail now
            step = rec.recover(err, net, opt, step)
            say(f"rank {rec.rank} re-formed generation {rec.generation} at step {step} "
                f"(source rank {rec.last_source})")
            model = wrap(net)
            continue
        step += 1

    if rec.rank == 0 and args.final_params:
        with open(args.final_params, "w") as f:
            for name, tensor in net.state_dict().items():
                f.write(f"{name} {' '.join(float(v).hex() for v in tensor.flatten().tolist())}\n")
    torch.distributed.barrier()
    say(f"rank {rec.rank} done at step {step}")
    # Leave without tearing the group down: torch 1.13 can deadlock there (the Reducer's destructor
    # joins a gloo thread while holding the GIL; tests/integration/torch_ddp_train.py).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
