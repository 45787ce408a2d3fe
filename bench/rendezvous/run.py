#!/usr/bin/python3
"""bench/rendezvous: ptrun's multi-node rendezvous with N simulated agents against the real store
server and Coordinator (bench_rdzv_load, one process per N), next to the store's own floor.

Usage: /usr/bin/python3 bench/rendezvous/run.py [--build build] [--nodes 64,512,4096] [--repeat 3]
       [--heartbeat-ms MS] [--last-call-ms 100]
Prints a markdown table for bench/RESULTS.md (medians of --repeat runs). The heartbeat defaults to
200 ms up to 512 nodes and 2 s above: 4,096 nodes beating every 200 ms are 20,000 ADDs/s, which
saturates the store on a 2-core machine and gets live nodes declared lost."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLOSE_TARGET_MS = {4096: 2000.0}
REJOIN_TARGET_MS = 1000.0


def heartbeat_ms(nodes, a):
    return a.heartbeat_ms if a.heartbeat_ms else (200 if nodes <= 512 else 2000)


def run_once(binary, nodes, a):
    argv = [binary, "--nodes", str(nodes), "--heartbeat-ms", str(heartbeat_ms(nodes, a)),
            "--last-call-ms", str(a.last_call_ms)]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


def med(runs, *path):
    vals = []
    for r in runs:
        for p in path:
            r = r[p]
        vals.append(r)
    return statistics.median(vals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--nodes", default="64,512,4096")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--heartbeat-ms", type=int, default=0, help="0: 200 ms up to 512 nodes, else 2 s")
    ap.add_argument("--last-call-ms", type=int, default=100)
    a = ap.parse_args()
    binary = os.path.join(os.path.abspath(a.build), "bench", "rendezvous", "bench_rdzv_load")
    sizes = [int(n) for n in a.nodes.split(",")]
    runs = {n: [] for n in sizes}
    for _ in range(a.repeat):
        for n in sizes:
            runs[n].append(run_once(binary, n, a))
            print(f"  N={n}: {json.dumps(runs[n][-1])}", file=sys.stderr)
    print(f"N simulated agents, one process: real TcpStoreServer + Coordinator; median of {a.repeat} runs; "
          f"lost after 3 missed heartbeats, last_call {a.last_call_ms} ms (survivors re-form without waiting for it).\n")
    print("| N | floor: add+wait barrier (ms) | close: first join -> all assigned (ms) | of which joins sent (ms) "
          "| admission (bytes) | heartbeat (ms) | rejoin: detection -> all N-1 assigned (ms) "
          "| detection after last beat (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        r = runs[n]
        close = med(r, "close", "total_ms")
        target = CLOSE_TARGET_MS.get(n)
        close_txt = f"{close:.1f}" + (f" (target < {target:.0f})" if target else "")
        rejoin = med(r, "rejoin", "rejoin_ms")
        print(f"| {n} | {med(r, 'floor', 'barrier_ms'):.1f} | {close_txt} | {med(r, 'close', 'joins_sent_ms'):.1f} "
              f"| {med(r, 'close', 'admission_bytes'):.0f} | {heartbeat_ms(n, a)} | {rejoin:.1f} (target < {REJOIN_TARGET_MS:.0f}) "
              f"| {med(r, 'rejoin', 'detect_after_ms'):.0f} |")


if __name__ == "__main__":
    main()
