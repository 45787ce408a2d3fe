#!/usr/bin/python3
"""bench/rendezvous: the multi-node rendezvous through c10d and through etcd, side by side
(bench_rdzv_backends, one process per N and repeat: c10d, then each etcd cluster).

Usage: /usr/bin/python3 bench/rendezvous/backends.py [--build build] [--nodes 2,8,64] [--repeat 3]
       [--heartbeat-ms 500] [--last-call-ms 100] [--members 1,3] [--silent] [--etcd /usr/bin/etcd]
Starts one etcd cluster per --members entry (Debian's etcd-server, every member on 127.0.0.1 with
free ports and a temporary --data-dir, etcd's default heartbeat and election timeouts) and stops
them afterwards, removing their directories. Prints a markdown table for bench/RESULTS.md: medians
of --repeat runs, the etcd/c10d ratios, the store floors, and what etcd served per round (from its
/metrics)."""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Etcd:
    """A cluster of `members` etcd processes on 127.0.0.1 under one temporary directory."""

    def __init__(self, binary, members):
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix=f"ptrun-bench-etcd{members}-")
        self.members = [{"name": f"m{i}", "client": free_port(), "peer": free_port()}
                        for i in range(members)]
        self.procs = []

    def endpoints(self):
        return ",".join(f"127.0.0.1:{m['client']}" for m in self.members)

    def start(self, deadline_s=30):
        initial = ",".join(f"{m['name']}=http://127.0.0.1:{m['peer']}" for m in self.members)
        for m in self.members:
            client = f"http://127.0.0.1:{m['client']}"
            peer = f"http://127.0.0.1:{m['peer']}"
            log = open(os.path.join(self.dir, m["name"] + ".log"), "w")
            self.procs.append(subprocess.Popen(
                [self.binary, "--name", m["name"], "--data-dir", os.path.join(self.dir, m["name"]),
                 "--listen-client-urls", client, "--advertise-client-urls", client,
                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", initial, "--initial-cluster-state", "new",
                 "--initial-cluster-token", os.path.basename(self.dir)],
                stdout=log, stderr=subprocess.STDOUT))
            log.close()
        end = time.monotonic() + deadline_s
        for m, p in zip(self.members, self.procs):
            while not self.healthy(m):
                if p.poll() is not None or time.monotonic() > end:
                    raise SystemExit(f"etcd {m['name']} did not come up:\n" + self.log(m))
                time.sleep(0.1)  # etcd has no readiness event; bounded by the deadline

    def healthy(self, m):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{m['client']}/health", timeout=1) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def log(self, m):
        with open(os.path.join(self.dir, m["name"] + ".log")) as f:
            return f.read()[-3000:]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_once(binary, nodes, clusters, a):
    argv = [binary, "--nodes", str(nodes), "--heartbeat-ms", str(a.heartbeat_ms),
            "--last-call-ms", str(a.last_call_ms)]
    for c in clusters:
        argv += ["--etcd", c.endpoints()]
    if a.silent:
        argv.append("--silent")
    res = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{res.stderr.strip()[-4000:]}")
    return json.loads(res.stdout)


def med(runs, *path):
    vals = []
    for r in runs:
        for p in path:
            r = r[p]
        vals.append(r)
    return statistics.median(vals)


FIELDS = [("floor", "barrier_ms"), ("close", "total_ms"), ("rejoin", "rejoin_ms")]


def num(v):
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def spread(runs, *path):
    vals = []
    for r in runs:
        for p in path:
            r = r[p]
        vals.append(r)
    return min(vals), max(vals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--nodes", default="2,8,64")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--heartbeat-ms", type=int, default=500)
    ap.add_argument("--last-call-ms", type=int, default=100)
    ap.add_argument("--members", default="1,3", help="one etcd cluster per entry, of that many members")
    ap.add_argument("--silent", action="store_true", help="the agent goes silent instead of leaving")
    ap.add_argument("--etcd", default="/usr/bin/etcd")
    a = ap.parse_args()
    binary = os.path.join(os.path.abspath(a.build), "bench", "rendezvous", "bench_rdzv_backends")
    sizes = [int(n) for n in a.nodes.split(",")]
    clusters = [Etcd(a.etcd, int(m)) for m in a.members.split(",") if m]
    runs = {n: [] for n in sizes}
    try:
        for c in clusters:
            c.start()
        for _ in range(a.repeat):
            for n in sizes:
                runs[n].append(run_once(binary, n, clusters, a))
                print(f"  N={n}: {json.dumps(runs[n][-1])}", file=sys.stderr)
    finally:
        for c in clusters:
            c.stop()
    labels = [f"etcd-{len(c.members)}" for c in clusters]
    how = "goes silent (found after 3 missed heartbeats)" if a.silent else "leaves (report_leaving, then stop)"
    print(f"N agents in one process (real RdzvSession each; c10d: TcpStoreServer + Coordinator; etcd: "
          f"EtcdLeadership each, the leader's Coordinator on a fenced EtcdStore); median of {a.repeat} runs; "
          f"[min-max]; (Nx): etcd / c10d; heartbeat {a.heartbeat_ms} ms; rejoin: one agent {how}. etcd-K: a K-member etcd "
          f"{subprocess.run([a.etcd, '--version'], capture_output=True, text=True).stdout.split(chr(10))[0].split()[-1]} "
          f"on 127.0.0.1.\n")
    head = ["N", "backend", "floor: add+wait barrier (ms)", "close: joins started -> all placed (ms)",
            "close / floor", "rejoin: round end seen -> all N-1 placed (ms)", "leave -> end seen (ms)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * 2 + "---:|" * (len(head) - 2))
    for n in sizes:
        r = runs[n]
        base = {k: med(r, "c10d", *k) for k in FIELDS}
        for label in ["c10d"] + labels:
            cells = []
            for k in FIELDS:
                v = med(r, label, *k)
                lo, hi = spread(r, label, *k)
                cells.append(f"{v:.1f}" + ("" if label == "c10d" else f" ({v / base[k]:.0f}x)")
                             + (f" [{num(lo)}-{num(hi)}]" if len(r) > 1 else ""))
            close_over_floor = med(r, label, "close", "total_ms") / med(r, label, "floor", "barrier_ms")
            print(f"| {n} | {label} | {cells[0]} | {cells[1]} | {close_over_floor:.1f} | {cells[2]} "
                  f"| {med(r, label, 'rejoin', 'detect_ms'):.0f} |")
    print("\nWhat etcd served (its first member's /metrics) during one floor, close and rejoin (medians; "
          "in close and rejoin every agent's heartbeats and lease renewals included):\n")
    print("| N | backend | floor: txn | fsyncs | close: range | txn | watches | fsyncs "
          "| rejoin: range | txn | watches | fsyncs |")
    print("|---:|---:" + "|---:" * 10 + "|")
    for n in sizes:
        for label in labels:
            cells = [f"{med(runs[n], label, 'floor', 'etcd', k):.0f}" for k in ("txn", "fsyncs")]
            cells += [f"{med(runs[n], label, phase, 'etcd', k):.0f}"
                      for phase in ("close", "rejoin") for k in ("range", "txn", "watches", "fsyncs")]
            print(f"| {n} | {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
