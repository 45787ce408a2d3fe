#!/usr/bin/python3
"""bench/rendezvous: a real start of N ptrun agents on this machine, end to end, through c10d and
through etcd (issue 40: within 1.5x of c10d's at 48 agents).

Usage: /usr/bin/python3 bench/rendezvous/agents.py [--build build] [--nodes 48] [--repeat 5]
       [--etcd /usr/bin/etcd] [--kinds standalone,c10d,etcd] [--timeout-s 300]
Each run starts N `ptrun --nnodes N --nproc-per-node 1 ... true` processes at once, as N hosts'
launch scripts would (every one with ptrun's defaults: job cgroup, run directory, heartbeats),
and times the first start to the last exit. The kinds run interleaved, in a new random order
each round:
- standalone: N independent `ptrun --standalone true` jobs (N agents' own cost, no rendezvous);
- c10d: `--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT` (the agent that binds PORT hosts
  the store, as torchrun's agents on one host do);
- etcd: `--rdzv-backend etcd-v2` on a one-member etcd (Debian's etcd-server) on 127.0.0.1, started
  before the runs and removed after them (backends.py's Etcd).
Prints the medians, [min-max], and etcd / c10d, as a markdown table for bench/RESULTS.md."""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from backends import Etcd, free_port  # noqa: E402

PYTHON = "/usr/bin/python3"


def agent_argv(ptrun, kind, n, run_id, endpoint):
    if kind == "standalone":
        return [ptrun, "--standalone", "--nproc-per-node", "1", "true"]
    return [ptrun, "--nnodes", str(n), "--nproc-per-node", "1", "--rdzv-backend",
            "c10d" if kind == "c10d" else "etcd-v2", "--rdzv-endpoint", endpoint, "--rdzv-id", run_id,
            "--max-restarts", "0", "true"]


def run_once(ptrun, kind, n, etcd, scratch, timeout_s=300):
    """Seconds from the first agent's start to the last one's exit; raises on a failed agent."""
    run_id = f"bench-{kind}-{time.monotonic_ns()}"
    endpoint = etcd.endpoints() if kind == "etcd" else f"127.0.0.1:{free_port()}"
    argv = agent_argv(ptrun, kind, n, run_id, endpoint)
    logs = [open(os.path.join(scratch, f"agent{i}.log"), "w+") for i in range(n)]
    procs = []
    start = time.monotonic()
    try:
        for log in logs:
            procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL))
        deadline = start + timeout_s
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
        took = time.monotonic() - start
        failed = [i for i, p in enumerate(procs) if p.returncode != 0]
        if failed:
            logs[failed[0]].seek(0)
            raise SystemExit(f"{kind}: agent {failed[0]} exited {procs[failed[0]].returncode}:\n"
                             + logs[failed[0]].read()[-3000:])
        return took
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--nodes", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--etcd", default="/usr/bin/etcd")
    ap.add_argument("--kinds", default="standalone,c10d,etcd", help="c10d must be among them")
    ap.add_argument("--timeout-s", type=float, default=300, help="per run")
    a = ap.parse_args()
    ptrun = os.path.join(os.path.abspath(a.build), "launcher", "ptrun")
    kinds = a.kinds.split(",")
    if "c10d" not in kinds or not set(kinds) <= {"standalone", "c10d", "etcd"}:
        ap.error(f"--kinds {a.kinds}: expected c10d and any of standalone, etcd")
    times = {k: [] for k in kinds}
    etcd = Etcd(a.etcd, 1)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ptrun-bench-agents-") as scratch:
        try:
            etcd.start()
            for r in range(a.repeat):
                order = kinds[:]
                random.shuffle(order)
                for kind in order:
                    times[kind].append(run_once(ptrun, kind, a.nodes, etcd, scratch, a.timeout_s))
                    print(f"  round {r}: {kind} {times[kind][-1] * 1000:.0f} ms", file=sys.stderr)
        finally:
            etcd.stop()
    c10d = statistics.median(times["c10d"])
    print(f"{a.nodes} ptrun agents started at once, nproc 1, worker `true`, first start -> last exit; "
          f"medians of {a.repeat} interleaved rounds [min-max]; load {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs\n")
    print("| kind | end to end (ms) | / c10d |")
    print("|---|---:|---:|")
    for kind in kinds:
        v = statistics.median(times[kind])
        print(f"| {kind} | {v * 1000:.0f} [{min(times[kind]) * 1000:.0f}-{max(times[kind]) * 1000:.0f}] "
              f"| {v / c10d:.2f}x |")


if __name__ == "__main__":
    main()
