#!/usr/bin/python3
"""bench/rendezvous: ptrun's multi-node rendezvous with N simulated agents against the real store
server and Coordinator (bench_rdzv_load, one process per N), next to the store's own floor.

Usage: /usr/bin/python3 bench/rendezvous/run.py [--build build] [--nodes 64,512,4096] [--repeat 3]
       [--heartbeat-ms MS] [--last-call-ms 100]
       /usr/bin/python3 bench/rendezvous/run.py --scale [--nodes 4096,8192,16384] [--conns 1,3]
       [--agent-processes 2] [--repeat 1] [--json FILE]
Prints a markdown table for bench/RESULTS.md (medians of --repeat runs). The heartbeat defaults to
200 ms up to 512 nodes and 2 s above: 4,096 nodes beating every 200 ms are 20,000 ADDs/s, which
saturates the store on a 2-core machine and gets live nodes declared lost.

--scale (issue 40, 16,384 nodes): the store host (server + Coordinator) alone in bench_rdzv_load's
process, the agents in --agent-processes forked processes; agents as RdzvSession is (5 clock
samples after the first admission, progress reads of a first join waiting 1 s and of a later one
waiting 5 s, then every 5 s, beats during close too), with 1, 2 or 3 store connections each (1 is
RdzvSession's on a TCP store: the beats go between WAITs, CANCEL_WAIT, ADD, WAIT; 3 was its own
before, join, watch and heartbeat). Where N x connections does not fit the store host's
descriptor limit (RLIMIT_NOFILE, less 32 for the process's own), the largest N that fits is run
instead (a multiple of 128). Prints the runs' JSON (medians) and a markdown table: close and rejoin
times, the CPU the store host's server thread and its Coordinator (with its client) spent in them
(the close from the first join; the rejoin from the silencing, detection included), the store host's
descriptors, peak memory growth (VmHWM - VmRSS before the store started) and the store's stored
bytes per node after the close. On a 2-core machine the simulated agents compete with the store
host for the CPU: the wall times are this machine's, the CPU columns what a dedicated head pays."""
import argparse
import json
import os
import resource
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


HOST_FD_RESERVE = 32  # the store host process's own descriptors (measured: 17)
SCALE_TARGET_MS = 2000.0


def fit_nodes(nodes, conns):
    """The largest N <= nodes whose connections fit the store host's descriptors."""
    cap = resource.getrlimit(resource.RLIMIT_NOFILE)[1] - HOST_FD_RESERVE
    if nodes * conns <= cap:
        return nodes
    return (cap // conns) // 128 * 128


def run_scale(binary, n, conns, a):
    argv = [binary, "--nodes", str(n), "--heartbeat-ms", str(heartbeat_ms(n, a)),
            "--last-call-ms", str(a.last_call_ms), "--agent-processes", str(a.agent_processes),
            "--conns-per-agent", str(conns), "--clock-samples", "5", "--join-progress", "1",
            "--timeout-s", "180"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


def median_of(runs):
    """A run whose every number is the median over `runs` (same shape)."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: median_of([r[k] for r in runs]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return statistics.median(runs)
    return first


def scale(binary, a):
    sizes = [int(n) for n in a.nodes.split(",")] if a.nodes else [4096, 8192, 16384]
    plan = []
    for conns in [int(c) for c in a.conns.split(",")]:
        for n in sizes:
            fit = fit_nodes(n, conns)
            if (fit, conns) not in plan:
                plan.append((fit, conns))
    runs = {p: [] for p in plan}
    for _ in range(a.repeat):
        for n, conns in plan:
            runs[(n, conns)].append(run_scale(binary, n, conns, a))
            print(f"  N={n} conns={conns}: {json.dumps(runs[(n, conns)][-1])}", file=sys.stderr)
    results = [median_of(runs[p]) for p in plan]
    text = json.dumps(results, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)
    cap = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    print(f"\nStore host (TcpStoreServer + Coordinator) in one process, N simulated agents in "
          f"{a.agent_processes} other processes; median of {a.repeat}; descriptor limit {cap} per process; "
          f"heartbeat 2 s above 512 nodes (lost after 3 missed), last_call {a.last_call_ms} ms; agents as "
          f"RdzvSession (5 clock samples at the first admission, join progress reads).\n")
    print("| N | conns/agent | store host fds | floor (ms) | close (ms) | first assigned (ms) "
          "| server / coordinator CPU in close (ms) | rejoin (ms) | server / coordinator CPU in rejoin (ms) "
          "| detection after last beat (ms) | host peak RSS growth (MiB) | per node (KiB) "
          "| stored bytes/node | join progress reads (close) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        n, c, h = r["nodes"], r["close"], r["host"]
        growth_kb = h["vmhwm_kb"] - h["rss_base_kb"]
        close = f"{c['total_ms']:.0f}" + (" **over 2 s**" if c["total_ms"] > SCALE_TARGET_MS else "")
        rejoin_ms = r["rejoin"]["rejoin_ms"]
        rejoin = f"{rejoin_ms:.0f}" + (" **over 2 s**" if rejoin_ms > SCALE_TARGET_MS else "")
        j = r["rejoin"]
        print(f"| {n} | {r['conns_per_agent']} | {c['host_fds']:.0f} | {r['floor']['barrier_ms']:.0f} "
              f"| {close} | {c['first_assigned_ms']:.0f} | {c['server_cpu_ms']:.0f} / {c['coordinator_cpu_ms']:.0f} "
              f"| {rejoin} | {j['server_cpu_ms']:.0f} / {j['coordinator_cpu_ms']:.0f} | {j['detect_after_ms']:.0f} "
              f"| {growth_kb / 1024:.1f} | {growth_kb / n:.2f} | {c['stored_bytes'] / n:.0f} "
              f"| {c['progress_reports']:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--nodes", default=None, help="64,512,4096; with --scale 4096,8192,16384")
    ap.add_argument("--repeat", type=int, default=None, help="3; with --scale 1")
    ap.add_argument("--scale", action="store_true", help="agents in other processes, up to 16,384")
    ap.add_argument("--conns", default="1", help="--scale: store connections per agent (1,2,3)")
    ap.add_argument("--agent-processes", type=int, default=2, help="--scale: agent processes")
    ap.add_argument("--json", default="", help="--scale: also write the JSON here")
    ap.add_argument("--heartbeat-ms", type=int, default=0, help="0: 200 ms up to 512 nodes, else 2 s")
    ap.add_argument("--last-call-ms", type=int, default=100)
    a = ap.parse_args()
    binary = os.path.join(os.path.abspath(a.build), "bench", "rendezvous", "bench_rdzv_load")
    if a.scale:
        a.repeat = a.repeat or 1
        return scale(binary, a)
    a.repeat = a.repeat or 3
    sizes = [int(n) for n in (a.nodes or "64,512,4096").split(",")]
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
