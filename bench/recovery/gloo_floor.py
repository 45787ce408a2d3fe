#!/usr/bin/python3
"""bench/recovery's floor for torch (issue 36): what any recovery of a gloo DDP job costs at least,
in place or by a group restart, with torch already imported (what --preload gives both).

    /usr/bin/python3 bench/recovery/gloo_floor.py [--ranks 4,8] [--rounds 11]

Recovery in place ends with every rank in a new gloo group that includes a new process: the
replacement must be forked, and all ranks must build the group again (gloo cannot take a new rank
into a live group; examples/python/recover_ddp.py's survivors destroy theirs and call
init_process_group again, as the issue asks). A group restart needs the same two things. This
measures them alone, with nothing else: from fork() of N processes in an interpreter that has
imported torch, to the last of them having returned from init_process_group("gloo") over a
TCPStore (a fresh prefix per round, the store already up) and from one 1-element allreduce.
Reported per N: the median and the minimum over --rounds, in ms. No ptrun, no DDP wrapper, no
state transfer, no step. Then what a case without --preload adds to it: `import torch` in a fresh
interpreter (from the spawn of `python3 -c "import torch; print()"` to its line, not counting the
interpreter's exit; the same rounds), which a new worker cannot skip. Standard library and torch
only; every child exits by itself (os._exit) and is reaped; the store lives in this process."""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child(torch, dist, port, prefix, rank, world, out_fd):
    """Joins a gloo group of `world` over the store at `port` under `prefix`, allreduces once,
    writes its CLOCK_MONOTONIC ns to `out_fd`; never returns."""
    code = 0
    try:
        store = dist.TCPStore("127.0.0.1", port, world, False, timeout=__import__(
            "datetime").timedelta(seconds=30))
        dist.init_process_group("gloo", store=dist.PrefixStore(prefix, store), rank=rank,
                                world_size=world)
        t = torch.ones(1)
        dist.all_reduce(t)
        os.write(out_fd, f"{time.monotonic_ns()}\n".encode())
        dist.destroy_process_group()
    except BaseException as e:  # noqa: BLE001 (reported, then the child exits non-zero)
        sys.stderr.write(f"gloo_floor: rank {rank}: {e}\n")
        code = 1
    os._exit(code)


def one_round(torch, dist, port, prefix, world):
    """ms from the first fork to the last rank's allreduce done."""
    r, w = os.pipe()
    start = time.monotonic_ns()
    pids = []
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(torch, dist, port, prefix, rank, world, w)
        pids.append(pid)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    if failed or len(data.split()) != world:
        raise SystemExit(f"gloo_floor: a round of {world} ranks failed")
    return (max(int(x) for x in data.split()) - start) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="4,8")
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import datetime

    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    port = free_port()
    store = dist.TCPStore("127.0.0.1", port, 1, True, timeout=datetime.timedelta(seconds=30),
                          wait_for_workers=False)
    print(f"torch {torch.__version__}; fork -> last rank's init_process_group(gloo) + one "
          f"allreduce done, torch imported before the fork; {args.rounds} rounds")
    print("| ranks | median ms | min ms | max ms |")
    print("|---:|---:|---:|---:|")
    for world in (int(n) for n in args.ranks.split(",")):
        one_round(torch, dist, port, f"warm-{world}", world)  # first connections, page faults
        times = [one_round(torch, dist, port, f"r{world}-{i}", world) for i in range(args.rounds)]
        print(f"| {world} | {statistics.median(times):.1f} | {min(times):.1f} | "
              f"{max(times):.1f} |")
    del store
    imports = []
    for _ in range(args.rounds):
        start = time.monotonic()
        with subprocess.Popen([sys.executable, "-c", "import torch; print(flush=True)"],
                              stdout=subprocess.PIPE) as p:
            p.stdout.readline()
            imports.append((time.monotonic() - start) * 1e3)
            p.stdout.read()
        if p.returncode != 0:
            raise SystemExit("gloo_floor: import torch failed")
    print(f"import torch: median {statistics.median(imports):.1f} ms, min {min(imports):.1f} ms")


if __name__ == "__main__":
    main()
