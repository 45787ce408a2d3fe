#!/usr/bin/python3
"""The floor under trace.json's cost (issue 26): what creating, writing and renaming one small
file in a fresh run directory costs on this machine's disk, with nothing of ptrun in it.

    /usr/bin/python3 bench/launch/file_floor.py [--dir DIR] [--files 2000] [--bytes 5809]

DIR (default: a new directory under $TMPDIR, removed at the end) should be on the file system the
run directories go to. Prints the median and 90th percentile of (a) open(O_CREAT|O_TRUNC) + write +
close + rename, as ptrun writes trace.json, and (b) the same without the rename."""
import argparse
import os
import shutil
import statistics
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--bytes", type=int, default=5809)  # an 8-rank run's trace.json
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="ptrun-file-floor-", dir=a.dir)
    data = b"x" * a.bytes
    renamed, direct = [], []
    try:
        for i in range(a.files):
            run = os.path.join(base, f"run{i}")
            os.mkdir(run)  # a run directory of its own, as each ptrun run makes
            path = os.path.join(run, "trace.json")
            t0 = time.perf_counter_ns()
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            os.write(fd, data)
            os.close(fd)
            os.rename(path + ".tmp", path)
            t1 = time.perf_counter_ns()
            fd = os.open(os.path.join(run, "direct.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            os.write(fd, data)
            os.close(fd)
            t2 = time.perf_counter_ns()
            renamed.append((t1 - t0) / 1e6)
            direct.append((t2 - t1) / 1e6)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for name, xs in (("create+write+close+rename", renamed), ("create+write+close", direct)):
        xs.sort()
        print(f"{name:26} median {statistics.median(xs):.3f} ms, p90 {xs[len(xs) * 9 // 10]:.3f} ms "
              f"({len(xs)} files of {a.bytes} bytes)")


if __name__ == "__main__":
    main()
