"""The job every rank runs: init_process_group("gloo"), one all_reduce of a 1-element tensor,
destroy_process_group(), exit.

PRELOAD_BENCH_DIR (a directory) and PRELOAD_BENCH_MODE select what else it does:
- "launch" (the default): every rank writes time.time() after its all_reduce to DIR/allreduce_RANK
  (when DIR is set), so that the driver can split the wall time: to the last all_reduce, then exit;
- "restart": in attempt 0 (TORCHELASTIC_RESTART_COUNT "0") the last rank writes time.time() to
  DIR/fail and exits 1 right after its all_reduce, the others wait (at most 120 s) to be stopped;
  in later attempts every rank writes time.time() after its all_reduce to DIR/done_ATTEMPT_RANK;
- "memory": after the all_reduce every rank writes its pid to DIR/pid_RANK and waits (at most
  120 s) for DIR/release to exist, then exits 0."""
import os
import time

import torch
import torch.distributed as dist


def write(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)  # readers never see a half-written file


def main():
    d, mode = os.environ.get("PRELOAD_BENCH_DIR"), os.environ.get("PRELOAD_BENCH_MODE", "launch")
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    rank, world = dist.get_rank(), dist.get_world_size()
    assert t.item() == world, (t.item(), world)
    if mode == "launch":
        if d:
            write(os.path.join(d, f"allreduce_{rank}"), repr(time.time()))
    elif mode == "restart":
        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        if attempt == "0":
            if rank == world - 1:
                write(os.path.join(d, "fail"), repr(time.time()))
                os._exit(1)
            time.sleep(120)  # stopped by the launcher's restart long before
            raise SystemExit(3)
        write(os.path.join(d, f"done_{attempt}_{rank}"), repr(time.time()))
    elif mode == "memory":
        write(os.path.join(d, f"pid_{rank}"), str(os.getpid()))
        release = os.path.join(d, "release")
        deadline = time.monotonic() + 120
        while not os.path.exists(release):
            if time.monotonic() > deadline:
                raise SystemExit(4)
            time.sleep(0.02)
    # torch 2.6 (Debian 13) aborts now and then at interpreter exit when the gloo group is left
    # alive ("terminate called without an active exception", SIGABRT): end it as torch asks.
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
