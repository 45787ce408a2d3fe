#!/usr/bin/python3
"""bench/rendezvous/etcd_requests.py: what etcd serves for one real start of N ptrun agents
(issue 40), binaries alternating.

Usage: /usr/bin/python3 bench/rendezvous/etcd_requests.py --nodes 1024 --repeat 3 PTRUN [PTRUN ...]
Starts a one-member etcd (Debian's etcd-server, backends.py's Etcd), then per round and binary
one job of N `ptrun --nnodes N --nproc-per-node 1 --rdzv-backend etcd-v2 ... true` agents
(agents.py's run_once), reading etcd's /metrics before and after: its gRPC requests by method
(grpc_server_handled_total) and the streams it opened. Prints a markdown row per job; etcd is
stopped and its directory removed at the end."""
import argparse
import collections
import os
import re
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agents import run_once  # noqa: E402
from backends import Etcd  # noqa: E402

HANDLED = re.compile(r'grpc_server_handled_total\{.*grpc_method="(\w+)".*\} (\S+)')


def requests(etcd):
    """{gRPC method: requests handled so far} from the member's /metrics."""
    port = etcd.members[0]["client"]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    counts = collections.Counter()
    for line in text.splitlines():
        m = HANDLED.match(line)
        if m:
            counts[m.group(1)] += float(m.group(2))
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--etcd", default="/usr/bin/etcd")
    ap.add_argument("--timeout-s", type=float, default=500)
    ap.add_argument("ptrun", nargs="+", help="ptrun binaries, alternating each round")
    a = ap.parse_args()
    methods = ["Txn", "Watch", "Put", "Range", "LeaseGrant", "LeaseKeepAlive", "LeaseRevoke"]
    print(f"{a.nodes} agents per job, one etcd member; load {os.getloadavg()[0]:.1f}\n")
    print("| binary | s | " + " | ".join(methods) + " | per agent |")
    print("|---|---:|" + "---:|" * (len(methods) + 1))
    etcd = Etcd(a.etcd, 1)
    with tempfile.TemporaryDirectory(prefix="ptrun-bench-etcd-requests-") as scratch:
        try:
            etcd.start()
            for _ in range(a.repeat):
                for ptrun in a.ptrun:
                    before = requests(etcd)
                    took = run_once(os.path.abspath(ptrun), "etcd", a.nodes, etcd, scratch,
                                    a.timeout_s)
                    after = requests(etcd)
                    diff = {k: after[k] - before.get(k, 0) for k in after}
                    total = sum(diff.values())
                    print(f"| {ptrun} | {took:.2f} | "
                          + " | ".join(f"{diff.get(m, 0):,.0f}" for m in methods)
                          + f" | {total / a.nodes:.1f} |", flush=True)
        finally:
            etcd.stop()
    print(f"\nload after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
