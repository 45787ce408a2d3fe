#!/usr/bin/python3
"""bench/store: ptrun-store vs PyTorch 1.13's own TCPStore server vs an epoll floor, side by side,
driven by one C++ load client (load.cpp) with the same requests.

Usage: /usr/bin/python3 bench/store/run.py [--build build] [--seconds 1] [--repeat 3] [--quick]
                                          [--baseline OLD_PTRUN_STORE]
Prints a markdown report for bench/RESULTS.md: ops/s, p50, p99 per connection count (median of
--repeat runs, servers interleaved), and connect + one add/wait barrier for 1,000/4,000/10,000.
--baseline adds another ptrun-store binary (e.g. one built from main) to the same interleaved runs
and a table of this build against it: an A/B of a server change against the same floor."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
from torch_flavour import RootTorch  # noqa: E402  (Debian 13's torch 2.6, entered per command)


def start(argv, **kw):
    """Starts a server that prints 'port=N' first; returns (process, port)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kw)
    line = proc.stdout.readline()
    if not line.startswith("port="):
        proc.kill()
        raise SystemExit(f"{argv[0]} did not report a port: {line!r}")
    return proc, int(line.split("=")[1])


def load(binary, *args):
    res = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        return None, res.stderr.strip()
    return json.loads(res.stdout), None


def dialect(server):
    """torch 2.x's server speaks only the 2.2+ dialect; the others are driven in the legacy one."""
    return ("--dialect", "modern") if server == "torch2" else ()


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def med(runs, field):
    vals = [r[field] for r in runs if r]
    return statistics.median(vals) if vals else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer points, one run each")
    ap.add_argument("--baseline", help="another ptrun-store binary to compare this build's with")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    loadbin = f"{b}/bench/store/bench_store_load"
    servers = {
        "ptrun": start([f"{b}/rendezvous/server_main/ptrun-store", "--host", "127.0.0.1", "--port", "0",
                        "--log-level", "warn"]),
        "torch": start([PYTHON, f"{HERE}/torch_server.py"]),
        "floor": start([f"{b}/bench/store/bench_store_floor"]),
    }
    torch2 = RootTorch()  # torch 2.6's own server (its classic backend: Debian's has no libuv)
    if not torch2.skip_reason():
        servers["torch2"] = start(torch2.command([PYTHON, f"{HERE}/torch_server.py"]),
                                  env={**os.environ, **torch2.env()})
    if a.baseline:
        servers["base"] = start([a.baseline, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"])
    conn_counts = [1, 32, 256] if a.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256]
    barrier_sizes = [1000, 4000, 10000]
    repeat = 1 if a.quick else a.repeat
    ops = {name: {n: [] for n in conn_counts} for name in servers}
    bar = {name: {n: [] for n in barrier_sizes} for name in servers}
    errors = []
    try:
        names = list(servers)

        def rotated(k):
            """Every server takes every place in the order in turn: the first one measured after
            the barrier (10,000 sockets closing) or after start-up is not always the same."""
            k %= len(names)
            return names[k:] + names[:k]

        for rep in range(repeat):
            for i, n in enumerate(conn_counts):
                for name in rotated(rep + i):
                    proc, port = servers[name]
                    before = cpu_seconds(proc.pid)
                    r, err = load(loadbin, "ops", "--port", port, "--conns", n, "--seconds", a.seconds,
                                  "--tag", f"{rep}-{n}", *dialect(name))
                    if r:  # server CPU per request: robust to how much CPU the machine had to spare
                        r["cpu_us_per_op"] = (cpu_seconds(proc.pid) - before) * 1e6 / max(r["all_ops"], 1)
                    ops[name][n].append(r)
                    if err:
                        errors.append(f"{name} ops {n}: {err}")
            for i, n in enumerate(barrier_sizes):
                for name in rotated(rep + i):
                    port = servers[name][1]
                    r, err = load(loadbin, "barrier", "--port", port, "--clients", n, "--tag", f"{rep}-{n}",
                                  *dialect(name))
                    bar[name][n].append(r)
                    if err:
                        errors.append(f"{name} barrier {n}: {err}")
            print(f"round {rep + 1}/{repeat} done", file=sys.stderr, flush=True)
    finally:
        for proc, _ in servers.values():
            proc.stdin.close()
            proc.terminate()
            proc.wait(timeout=30)

    print(f"Op mix in rotation: ADD, GET, CHECK, COMPARE_SET, WAIT (key present); one request in flight "
          f"per connection; {a.seconds:g} s per point after 0.2 s warm-up; median of {repeat} interleaved runs.\n")
    print("| conns | ptrun ops/s | torch ops/s | floor ops/s | ptrun/torch | ptrun/floor "
          "| p50 µs ptrun / torch / floor | p99 µs ptrun / torch / floor | server CPU µs/op ptrun / torch / floor |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in conn_counts:
        p, t, f = (ops[s][n] for s in ("ptrun", "torch", "floor"))
        print(f"| {n} | {med(p, 'ops_per_s'):,.0f} | {med(t, 'ops_per_s'):,.0f} | {med(f, 'ops_per_s'):,.0f} "
              f"| {med(p, 'ops_per_s') / med(t, 'ops_per_s'):.2f}x | {med(p, 'ops_per_s') / med(f, 'ops_per_s'):.2f} "
              f"| {med(p, 'p50_us'):.0f} / {med(t, 'p50_us'):.0f} / {med(f, 'p50_us'):.0f} "
              f"| {med(p, 'p99_us'):.0f} / {med(t, 'p99_us'):.0f} / {med(f, 'p99_us'):.0f} "
              f"| {med(p, 'cpu_us_per_op'):.1f} / {med(t, 'cpu_us_per_op'):.1f} / {med(f, 'cpu_us_per_op'):.1f} |")
    print("\nConnect + one ADD/WAIT barrier, one connection per client, at most 512 connects in flight; "
          "ms until every client passed (all connected in brackets).\n")
    print("| clients | ptrun ms | torch ms | floor ms | torch/ptrun | ptrun/floor |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in barrier_sizes:
        p, t, f = (bar[s][n] for s in ("ptrun", "torch", "floor"))
        print(f"| {n:,} | {med(p, 'barrier_ms'):.0f} ({med(p, 'connected_ms'):.0f}) "
              f"| {med(t, 'barrier_ms'):.0f} ({med(t, 'connected_ms'):.0f}) "
              f"| {med(f, 'barrier_ms'):.0f} ({med(f, 'connected_ms'):.0f}) "
              f"| {med(t, 'barrier_ms') / med(p, 'barrier_ms'):.1f}x | {med(p, 'barrier_ms') / med(f, 'barrier_ms'):.2f} |")
    if "torch2" in servers:
        torch2_tables(ops, bar, conn_counts, barrier_sizes)
    else:
        print(f"\n(torch 2.6 not measured: {torch2.skip_reason()})")
    if a.baseline:
        print(f"\nThis build against the baseline ({a.baseline}), same runs:\n")
        print("| conns | ptrun ops/s | base ops/s | ptrun/base | ptrun/floor | base/floor "
              "| p99 µs ptrun / base | server CPU µs/op ptrun / base |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in conn_counts:
            p, q, f = (ops[s][n] for s in ("ptrun", "base", "floor"))
            print(f"| {n} | {med(p, 'ops_per_s'):,.0f} | {med(q, 'ops_per_s'):,.0f} "
                  f"| {med(p, 'ops_per_s') / med(q, 'ops_per_s'):.2f} | {med(p, 'ops_per_s') / med(f, 'ops_per_s'):.2f} "
                  f"| {med(q, 'ops_per_s') / med(f, 'ops_per_s'):.2f} | {med(p, 'p99_us'):.0f} / {med(q, 'p99_us'):.0f} "
                  f"| {med(p, 'cpu_us_per_op'):.1f} / {med(q, 'cpu_us_per_op'):.1f} |")
        print("\n| clients | ptrun ms | base ms | ptrun/base | floor ms |")
        print("|---:|---:|---:|---:|---:|")
        for n in barrier_sizes:
            p, q, f = (bar[s][n] for s in ("ptrun", "base", "floor"))
            print(f"| {n:,} | {med(p, 'barrier_ms'):.0f} | {med(q, 'barrier_ms'):.0f} "
                  f"| {med(p, 'barrier_ms') / med(q, 'barrier_ms'):.2f} | {med(f, 'barrier_ms'):.0f} |")
    for e in errors:
        print(f"\nerror: {e}")


def torch2_tables(ops, bar, conn_counts, barrier_sizes):
    """PyTorch 2.6's own server (Debian 13 root), measured interleaved with the others above."""
    print("\nPyTorch 2.6's own server (Debian 13, scripts/torch2-root.sh; classic backend, Debian's has "
          "no libuv), same run, same requests in its 2.2+ dialect.\n")
    print("| conns | torch 2.6 ops/s | ptrun/torch 2.6 | p50 µs ptrun / torch 2.6 | p99 µs ptrun / torch 2.6 "
          "| server CPU µs/op ptrun / torch 2.6 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in conn_counts:
        p, t = ops["ptrun"][n], ops["torch2"][n]
        print(f"| {n} | {med(t, 'ops_per_s'):,.0f} | {med(p, 'ops_per_s') / med(t, 'ops_per_s'):.2f}x "
              f"| {med(p, 'p50_us'):.0f} / {med(t, 'p50_us'):.0f} | {med(p, 'p99_us'):.0f} / {med(t, 'p99_us'):.0f} "
              f"| {med(p, 'cpu_us_per_op'):.1f} / {med(t, 'cpu_us_per_op'):.1f} |")
    print("\n| clients | ptrun ms | torch 2.6 ms | torch 2.6/ptrun |")
    print("|---:|---:|---:|---:|")
    for n in barrier_sizes:
        p, t = bar["ptrun"][n], bar["torch2"][n]
        print(f"| {n:,} | {med(p, 'barrier_ms'):.0f} ({med(p, 'connected_ms'):.0f}) "
              f"| {med(t, 'barrier_ms'):.0f} ({med(t, 'connected_ms'):.0f}) "
              f"| {med(t, 'barrier_ms') / med(p, 'barrier_ms'):.1f}x |")


if __name__ == "__main__":
    main()
