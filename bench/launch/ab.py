#!/usr/bin/python3
"""bench/launch/ab.py: two ptrun binaries, A and B, timed interleaved on bench/launch's no-op
launch (`ptrun --nproc-per-node N true`, as run.py), for a difference of about 1%.

Usage: /usr/bin/python3 bench/launch/ab.py A B [--runs 400] [--nproc 1,4,8] [--seed 1] [--as-built]

Per N: 5 warm-up runs of each, then `--runs` rounds of one run of each, A then B in even rounds
and B then A in odd ones (so drift and the order within a pair fall on both alike). Each run is
timed here from posix_spawn to its reaping (stdout and stderr to /dev/null). Prints per N the
median and mean ms of each and B / A of both, with a 95% bootstrap interval (2000 resamples of the
runs, the pairs kept together) for each ratio. A and B are timed as installed copies
(installed.py: how a file was written changes what mapping it costs), unless --as-built."""
import argparse
import os
import random
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from installed import InstalledCopies  # noqa: E402


def run_once(argv, devnull, env=None):
    """Wall seconds of one run of argv (in `env`, else this environment); raises when it fails."""
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ if env is None else env, file_actions=fa)
    _, status = os.waitpid(pid, 0)
    t = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {os.waitstatus_to_exitcode(status)}")
    return t


def interval(a, b, stat, rng, n=2000):
    """The 2.5% and 97.5% points of stat(B) / stat(A) over bootstrap resamples of the pairs."""
    idx = range(len(a))
    ratios = []
    for _ in range(n):
        pick = rng.choices(idx, k=len(a))
        ratios.append(stat([b[i] for i in pick]) / stat([a[i] for i in pick]))
    ratios.sort()
    return ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--nproc", default="1,4,8")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--as-built", action="store_true", help="time A and B where they are, not copies")
    args = ap.parse_args()
    with InstalledCopies(args.as_built) as copies:
        compare(args, copies.copy(args.a, "a"), copies.copy(args.b, "b"))


def compare(args, a_path, b_path):
    """The interleaved runs of `a_path` and `b_path` and their table, with main's `args`."""
    true = shutil.which("true")
    rng = random.Random(args.seed)
    devnull = os.open(os.devnull, os.O_WRONLY)
    how = "where they are" if args.as_built else "installed copies (installed.py)"
    print(f"A: `{args.a}`, B: `{args.b}`, {how}; {args.runs} interleaved runs each per N, ms\n")
    print("| N | A median | B median | B / A median [95%] | A mean | B mean | B / A mean [95%] |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in args.nproc.split(",")):
        cmd = {k: [p, "--nproc-per-node", str(n), true] for k, p in (("a", a_path), ("b", b_path))}
        for _ in range(5):
            run_once(cmd["a"], devnull)
            run_once(cmd["b"], devnull)
        times = {"a": [], "b": []}
        for r in range(args.runs):
            for k in ("a", "b") if r % 2 == 0 else ("b", "a"):
                times[k].append(run_once(cmd[k], devnull))
        a, b = times["a"], times["b"]
        row = [f"{n}"]
        for stat in (statistics.median, statistics.fmean):
            lo, hi = interval(a, b, stat, rng)
            row += [f"{stat(a) * 1e3:.3f}", f"{stat(b) * 1e3:.3f}",
                    f"{stat(b) / stat(a):.4f} [{lo:.4f}, {hi:.4f}]"]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
