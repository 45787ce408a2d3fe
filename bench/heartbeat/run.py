#!/usr/bin/python3
"""Heartbeat cost, C++ and Python, beside their floors (bench/RESULTS.md, "heartbeat"):

    /usr/bin/python3 bench/heartbeat/run.py --build build [--rounds 7]

Each round runs bench_heartbeat and heartbeat_bench.py once, on a fresh record in /dev/shm;
the table gives the median and the range over rounds, in ns per call, and the load before and
after."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
from ptrun import heartbeat  # noqa: E402  (this checkout's module)

ORDER = ["beat", "beat_detached", "floor_coarse_clock", "floor_atomic_add", "precise_clock",
         "section_enter_leave",
         "beat_two_threads", "py_beat", "py_beat_object", "py_floor_call", "py_floor_clock",
         "py_section_enter_leave"]


def parse(text):
    out = {}
    for line in text.splitlines():
        name, value = line.split()
        out[name] = float(value)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    cxx = os.path.join(a.build, "bench", "bench_heartbeat")
    py_bench = os.path.join(HERE, "heartbeat_bench.py")
    env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "python")}
    load_before = open("/proc/loadavg").read().split()[:3]
    results = {}
    for _ in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="ptrun-hb-bench-", dir="/dev/shm") as d:
            path = os.path.join(d, "record")
            heartbeat.create(path)
            for cmd in ([cxx, path], [sys.executable, py_bench, path]):
                res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                for k, v in parse(res.stdout).items():
                    results.setdefault(k, []).append(v)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(f"load before {' '.join(load_before)}, after {' '.join(load_after)}; "
          f"{a.rounds} rounds; {os.cpu_count()} CPUs; {sys.version.split()[0]}\n")
    print("| case | median ns/call | min | max |")
    print("|---|---:|---:|---:|")
    for k in ORDER:
        v = results.get(k)
        if v:
            print(f"| {k} | {statistics.median(v):.1f} | {min(v):.1f} | {max(v):.1f} |")


if __name__ == "__main__":
    main()
