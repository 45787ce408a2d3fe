#!/usr/bin/python3
"""bench/launch/parts.py: what each part of a no-op launch costs, against the fork/exec floor.

Usage: /usr/bin/python3 bench/launch/parts.py [--build build] [--runs 300] [--nproc 1,8] [--as-built]

Per N, interleaved in a new random order each round (so drift falls on all alike), each timed from
posix_spawn to its reaping, output to /dev/null:
  true                   one exec of the no-op worker alone
  floor N                bench_floor: fork, exec and reap N workers, nothing else
  ptrun --version        ptrun's own start and exit: exec, loader, static constructors, the
                         command line parsed; no run
  ptrun N, no cgroup     a whole launch with PTRUN_CGROUP=0 (no job cgroup)
  ptrun N                a whole launch, every feature on (ptrun's default)
Prints the medians and the parts they imply: the binary's start (version - true), the job cgroup
(default - no cgroup), the rest of the run (no cgroup - floor - the binary's start), and the
launch's ratio to the floor."""
import argparse
import os
import pathlib
import random
import shutil
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ab import run_once  # noqa: E402  (one timed run, as ab.py times it)
from installed import InstalledCopies  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--nproc", default="1,8")
    ap.add_argument("--as-built", action="store_true",
                    help="time ptrun and the floor in the build tree, not installed copies")
    a = ap.parse_args()
    b = pathlib.Path(a.build)
    with InstalledCopies(a.as_built) as copies:
        parts(a, copies.copy(str(b / "launcher/ptrun"), "bin"), copies.copy(str(b / "bench/bench_floor"), "bin"))


def parts(a, ptrun, floor):
    """main's table for the binaries `ptrun` and `floor`, with its arguments `a`."""
    true = shutil.which("true")
    devnull = os.open(os.devnull, os.O_WRONLY)
    base = {k: v for k, v in os.environ.items() if k != "PTRUN_CGROUP"}
    rng = random.Random(1)
    how = "the build tree's files" if a.as_built else "installed copies (installed.py)"
    print(f"{a.runs} interleaved runs of each case per N, median ms; {how}; `nproc` {os.cpu_count()}, "
          f"affinity {sorted(os.sched_getaffinity(0))}, load {os.getloadavg()[0]:.1f}\n")
    print("| N | true | floor | ptrun --version | ptrun, no cgroup | ptrun | binary's start | "
          "job cgroup | rest of the run | ptrun / floor | no cgroup / floor |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in a.nproc.split(",")):
        cases = {
            "true": ([true], base),
            "floor": ([floor, str(n), true], base),
            "version": ([ptrun, "--version"], base),
            "nocg": ([ptrun, "--nproc-per-node", str(n), true], {**base, "PTRUN_CGROUP": "0"}),
            "ptrun": ([ptrun, "--nproc-per-node", str(n), true], base),
        }
        for argv, env in cases.values():  # warm-up
            for _ in range(5):
                run_once(argv, devnull, env)
        times = {k: [] for k in cases}
        for _ in range(a.runs):
            order = list(cases)
            rng.shuffle(order)
            for k in order:
                argv, env = cases[k]
                times[k].append(run_once(argv, devnull, env))
        m = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        start = m["version"] - m["true"]
        print(f"| {n} | {m['true']:.2f} | {m['floor']:.2f} | {m['version']:.2f} | {m['nocg']:.2f} | "
              f"{m['ptrun']:.2f} | {start:.2f} | {m['ptrun'] - m['nocg']:.2f} | "
              f"{m['nocg'] - m['floor'] - start:.2f} | {m['ptrun'] / m['floor']:.2f}x | "
              f"{m['nocg'] / m['floor']:.2f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
