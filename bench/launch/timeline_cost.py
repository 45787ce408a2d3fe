#!/usr/bin/python3
"""bench/launch/timeline_cost.py: what the start-up timeline (issue 26) adds to bench/launch: this
build's ptrun (A) against a build of the commit before the timeline (B), N no-op workers (`true`),
in one hyperfine per row beside the floor, without and with --log-dir (where trace.json and
ptrun.log are written).

Usage: /usr/bin/python3 bench/launch/timeline_cost.py --before PATH [--build build] [--runs 40]
(PATH: e.g. `git worktree add /tmp/before 5fa115b && scripts/build.sh /tmp/before/build`, then
/tmp/before/build/launcher/ptrun)."""
import argparse
import pathlib
import shutil
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from run import hyperfine  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--before", required=True)
    ap.add_argument("--runs", type=int, default=40)
    a = ap.parse_args()
    b = pathlib.Path(a.build)
    ptrun, floor, true = str(b / "launcher/ptrun"), str(b / "bench/bench_floor"), shutil.which("true")
    print(f"A: `{ptrun}` (with the timeline), B: `{a.before}` (before it); median ms of {a.runs} runs\n")
    print("| N | --log-dir | floor | A | B | A / B |")
    print("|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as logs:
        for log_dir in ([], ["--log-dir", logs]):
            for n in (1, 4, 8):
                fl, pa, pb = hyperfine([[floor, str(n), true],
                                        [ptrun, *log_dir, "--nproc-per-node", str(n), true],
                                        [a.before, *log_dir, "--nproc-per-node", str(n), true]], a.runs, 5)
                print(f"| {n} | {'yes' if log_dir else 'no'} | {fl*1e3:.2f} | {pa*1e3:.2f} | {pb*1e3:.2f} | "
                      f"{pa/pb:.3f}x |")


if __name__ == "__main__":
    main()
