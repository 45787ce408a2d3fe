#!/usr/bin/python3
"""bench/metrics: what one scrape of ptrun's /metrics (and /status) costs ptrun itself, in CPU time,
for a node of N workers (default 512), beside the floor of the same HTTP exchange: GET /health,
whose answer needs no per-worker text.

Usage: /usr/bin/python3 bench/metrics/run.py [--build build] [--workers 512] [--scrapes 200]

ptrun runs N workers that sleep (`sleep 600`, no progress: every rank `starting`) with
--health-port 0; once /status lists all N, the client scrapes each endpoint --scrapes times in
turn (interleaved), and ptrun's CPU time (utime + stime of /proc/PID/stat, clock ticks) is read
before and after each batch. Prints a markdown table for bench/RESULTS.md: ms of ptrun CPU per
scrape, the reply size, and the ratio to /health."""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workers", type=int, default=512)
    ap.add_argument("--scrapes", type=int, default=200)
    a = ap.parse_args()
    ptrun = os.path.join(a.build, "launcher", "ptrun")
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([ptrun, "--nproc-per-node", str(a.workers), "--health-port", "0",
                                 "--log-dir", os.path.join(d, "logs"), "/bin/sleep", "600"],
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": d})
        try:
            port = None
            deadline = time.monotonic() + 60
            while port is None and time.monotonic() < deadline:
                line = proc.stderr.readline()
                m = re.search(r"health endpoint: http://[^:]+:(\d+)/health", line)
                if m:
                    port = int(m.group(1))
            if port is None:
                sys.exit("ptrun did not say its health port")
            while time.monotonic() < deadline:
                status = json.loads(get(port, "/status")[1])
                if len(status["workers"]) == a.workers and all(w["pid"] for w in status["workers"]):
                    break
            paths = ["/health", "/status", "/metrics"]
            spent = {p: 0.0 for p in paths}
            size = {}
            rounds = 10
            for _ in range(rounds):
                for p in paths:
                    before = cpu_seconds(proc.pid)
                    for _ in range(a.scrapes // rounds):
                        code, body = get(port, p)
                        assert code == 200, (p, code)
                        size[p] = len(body)
                    spent[p] += cpu_seconds(proc.pid) - before
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=120)
    n = rounds * (a.scrapes // rounds)
    print(f"{a.workers} workers, {n} scrapes per endpoint (interleaved in {rounds} rounds), "
          f"ptrun CPU at {1000 / TICK:.0f} ms resolution per batch\n")
    print("| endpoint | ptrun CPU ms / scrape | reply bytes | / GET /health |")
    print("|---|---:|---:|---:|")
    floor = spent["/health"] / n * 1000
    for p in paths:
        ms = spent[p] / n * 1000
        ratio = f"{ms / floor:.1f}x" if floor > 0 else "-"
        print(f"| `{p}` | {ms:.3f} | {size[p]} | {ratio} |")


if __name__ == "__main__":
    main()
