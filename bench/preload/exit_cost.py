#!/usr/bin/python3
"""What one torch process's exit costs, exec'd or forked from a process that imported torch:

    /usr/bin/python3 bench/preload/exit_cost.py [--runs 10]     (run it with the torch to measure)

One process at a time runs the job of job.py alone (world size 1: import torch,
init_process_group("gloo"), one all_reduce, destroy_process_group()), then notes its CPU time,
minor page faults and time.time() as its last statement, and exits. The parent reaps it with
os.wait4 and subtracts: what is left is the exit (atexit, interpreter finalization, the kernel
tearing the process down) in wall time, CPU time and minor faults (copy-on-write among them).
Three ways, interleaved, medians:
  exec'd     python3 -c JOB (what ptrun without --preload starts; the import is in the child),
  forked     forked from this process, which imported torch first (what --preload and floor.py
             do), exiting as python does,
  forked, os._exit   the same, but atexit handlers then os._exit: no finalization."""
import argparse
import os
import socket
import statistics
import sys
import time

JOB = r'''
import os, resource, sys, time
import torch, torch.distributed as dist
def job():
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    dist.destroy_process_group()
def mark(fd):
    r = resource.getrusage(resource.RUSAGE_SELF)
    os.write(fd, f"{r.ru_utime + r.ru_stime} {r.ru_minflt} {time.time()}".encode())
    os.close(fd)
if __name__ == "__main__":
    job()
    mark(int(sys.argv[1]))
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for_one():
    return dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(free_port()), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")


def reap(pid, r_fd):
    chunks = []
    while True:
        b = os.read(r_fd, 4096)
        if not b:
            break
        chunks.append(b)
    os.close(r_fd)
    _, status, usage = os.wait4(pid, 0)
    end = time.time()
    if os.waitstatus_to_exitcode(status) != 0 or not chunks:
        raise SystemExit(f"child failed: status {status}")
    cpu, minflt, t = b"".join(chunks).decode().split()
    return (end - float(t), usage.ru_utime + usage.ru_stime - float(cpu),
            usage.ru_minflt - int(minflt))


def exec_d(code):
    r, w = os.pipe()
    os.set_inheritable(w, True)
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", code, str(w)], env_for_one())
    os.close(w)
    return reap(pid, r)


def forked(ns, quick):
    r, w = os.pipe()
    env = env_for_one()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.environ.update(env)
        ns["job"]()
        ns["mark"](w)
        if quick:
            import atexit
            atexit._run_exitfuncs()
            sys.stdout.flush(), sys.stderr.flush()
            os._exit(0)
        sys.exit(0)
    os.close(w)
    return reap(pid, r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    ns = {"__name__": "exit_cost_job"}
    exec(JOB, ns)  # imports torch here, once: the forked children inherit it
    import torch
    cases = {"exec'd": lambda: exec_d(JOB), "forked": lambda: forked(ns, False),
             "forked, os._exit": lambda: forked(ns, True)}
    res = {k: [] for k in cases}
    for i in range(a.runs + 1):
        for name, fn in cases.items():
            x = fn()
            if i:  # the first round warms up
                res[name].append(x)
    print(f"exit of one process after the job (world size 1), Python {sys.version.split()[0]}, "
          f"torch {torch.__version__}, {a.runs} interleaved runs, medians\n")
    print("| process | wall after its last statement, ms | CPU, ms | minor faults |")
    print("|---|---:|---:|---:|")
    for name, xs in res.items():
        print(f"| {name} | {statistics.median(x[0] for x in xs) * 1e3:.0f} | "
              f"{statistics.median(x[1] for x in xs) * 1e3:.0f} | "
              f"{statistics.median(x[2] for x in xs):.0f} |")
    print(f"\nload {' '.join(open('/proc/loadavg').read().split()[:3])}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
