#!/usr/bin/python3
"""bench/rendezvous/etcd_requests.py: what etcd serves for one real start of N ptrun agents
(issue 40), binaries alternating.

Usage: /usr/bin/python3 bench/rendezvous/etcd_requests.py --nodes 1024 --repeat 3 PTRUN [PTRUN ...]
Starts a one-member etcd (Debian's etcd-server, backends.py's Etcd), then per round and binary
one job of N `ptrun --nnodes N --nproc-per-node 1 --rdzv-backend etcd-v2 ... true` agents
(agents.py's run_once), reading etcd's /metrics before and after: its gRPC requests by method
(grpc_server_handled_total) and the streams it opened, and the CPU time etcd used (its
/proc/PID/stat) and the agents used (their rusage). Prints a markdown row per job; etcd is
stopped and its directory removed at the end."""
import argparse
import collections
import os
import re
import resource
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agents import run_once  # noqa: E402
from backends import Etcd  # noqa: E402

HANDLED = re.compile(r'grpc_server_handled_total\{.*grpc_method="(\w+)".*\} (\S+)')


def cpu_ms(pid):
    """User + system CPU time process `pid` has used so far, in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def children_cpu_ms():
    """User + system CPU time of this process's reaped children so far, in ms."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


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
    print("| binary | s | " + " | ".join(methods) + " | per agent | etcd CPU ms | etcd CPU per "
          "request ms | agents' CPU ms |")
    print("|---|---:|" + "---:|" * (len(methods) + 4))
    etcd = Etcd(a.etcd, 1)
    with tempfile.TemporaryDirectory(prefix="ptrun-bench-etcd-requests-") as scratch:
        try:
            etcd.start()
            for _ in range(a.repeat):
                for ptrun in a.ptrun:
                    before = requests(etcd)
                    etcd_before, agents_before = cpu_ms(etcd.procs[0].pid), children_cpu_ms()
                    took = run_once(os.path.abspath(ptrun), "etcd", a.nodes, etcd, scratch,
                                    a.timeout_s)
                    etcd_cpu = cpu_ms(etcd.procs[0].pid) - etcd_before
                    agents_cpu = children_cpu_ms() - agents_before
                    after = requests(etcd)
                    diff = {k: after[k] - before.get(k, 0) for k in after}
                    total = sum(diff.values())
                    print(f"| {ptrun} | {took:.2f} | "
                          + " | ".join(f"{diff.get(m, 0):,.0f}" for m in methods)
                          + f" | {total / a.nodes:.1f} | {etcd_cpu:,.0f} | "
                          f"{etcd_cpu / max(total, 1):.2f} | {agents_cpu:,.0f} |", flush=True)
        finally:
            etcd.stop()
    print(f"\nload after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
