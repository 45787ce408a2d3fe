"""What each worker uses while it runs (issue 39): /status's memory_bytes, peak_memory_bytes,
cpu_seconds and oom_kills per rank (an ended worker keeps its final figures), /metrics' four
families read by Prometheus's own parser (`promtool check metrics`), trace.json's memory counter
tracks, and with --memory-limit-per-worker the worker's memory cgroup (an OOM kill inside it is
counted while the worker lives on). Every wait is bounded; no process is left behind."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest
import urllib.request

from harness import PTRUN, PtrunTestCase, _env, wait_output
from test_worker_usage import own_memory_cgroup

DEADLINE = 60
MIB = 1 << 20
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
# Rank R touches ALLOC_MB_<R> MiB (in a child of its own with CHILD_MB_<R>: the OOM killer's
# target under a cgroup limit), spins SPIN_<R> seconds of CPU, says "ready R", then exits after
# SLEEP_<R> seconds.
WORKER = r"""
import os, sys, time
rank = os.environ["RANK"]
def number(name):
    return float(os.environ.get(f"{name}_{rank}", "0"))
held = [bytearray(b"\x01") * (10 << 20) for _ in range(int(number("ALLOC_MB")) // 10)]
if number("CHILD_MB"):
    child = os.fork()
    if child == 0:
        grown = [bytearray(b"\x01") * (10 << 20) for _ in range(int(number("CHILD_MB")) // 10)]
        os._exit(0)
    os.waitpid(child, 0)
end = time.process_time() + number("SPIN")
while time.process_time() < end:
    pass
sys.stdout.write(f"ready {rank}\n")
sys.stdout.flush()
time.sleep(number("SLEEP"))
"""


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def samples_of(text):
    """{(name, rank): value} of every sample with a rank label in a /metrics text."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(\w+)\{host="[^"]*",rank="(\d+)",local_rank="\d+"\} (\S+)$', line)
        if m:
            out[(m.group(1), int(m.group(2)))] = float(m.group(3))
    return out


class LiveUsage(PtrunTestCase):
    def start_job(self, env, *args, nproc=2):
        """ptrun with --health-port 0 and WORKER; its URL once every rank said it is ready."""
        self.logs = os.path.join(self.dir, "logs")
        proc = subprocess.Popen([PTRUN, "--nproc-per-node", str(nproc), "--health-port", "0",
                                 "--log-dir", self.logs, *args, "--no-python", sys.executable,
                                 "-c", WORKER],
                                env=_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        self.leftover.append(proc.pid)
        self.addCleanup(self.end_job, proc)
        said = wait_output(proc.stderr, "/status", DEADLINE)
        url = re.search(r"health endpoint: (http://\S+)/health", said).group(1)
        out = ""
        while out.count("ready ") < nproc:
            out += wait_output(proc.stdout, "\n", DEADLINE)
        return proc, url

    def end_job(self, proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=DEADLINE)
        proc.stdout.close()
        proc.stderr.close()

    def status_when(self, url, ready):
        """/status's workers by rank once `ready(workers)` holds (bounded)."""
        end = time.monotonic() + DEADLINE
        while True:
            workers = {w["rank"]: w for w in json.loads(get(url + "/status"))["workers"]}
            if ready(workers):
                return workers
            self.assertLess(time.monotonic(), end, f"never as expected: {workers}")
            time.sleep(0.05)

    def test_status_metrics_and_trace_say_what_each_worker_used(self):
        proc, url = self.start_job({"ALLOC_MB_1": "50", "SPIN_1": "0.3", "SLEEP_1": "120",
                                    "ALLOC_MB_0": "30", "SPIN_0": "0.2", "SLEEP_0": "0"})
        workers = self.status_when(url, lambda w: w[0]["state"] == "succeeded")
        running, ended = workers[1], workers[0]
        self.assertEqual(running["state"], "starting")  # nothing beats: no progress yet
        self.assertGreaterEqual(running["memory_bytes"], 50 * MIB, running)
        self.assertGreaterEqual(running["peak_memory_bytes"], running["memory_bytes"], running)
        self.assertGreaterEqual(running["cpu_seconds"], 0.25, running)
        self.assertEqual(running["oom_kills"], 0)
        # Rank 0 has exited: its final figures, read at its exit, and no memory now.
        self.assertIsNone(ended["memory_bytes"], ended)
        self.assertGreaterEqual(ended["peak_memory_bytes"], 30 * MIB, ended)
        self.assertGreaterEqual(ended["cpu_seconds"], 0.15, ended)

        metrics = get(url + "/metrics")
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=metrics, text=True,
                               capture_output=True, timeout=DEADLINE)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr + metrics)
        for family, kind in (("ptrun_worker_memory_bytes", "gauge"),
                             ("ptrun_worker_peak_memory_bytes", "gauge"),
                             ("ptrun_worker_cpu_seconds_total", "counter"),
                             ("ptrun_worker_oom_kills_total", "counter")):
            self.assertIn(f"# TYPE {family} {kind}\n", metrics)
            self.assertIn(f"# HELP {family} ", metrics)
        samples = samples_of(metrics)
        self.assertGreaterEqual(samples[("ptrun_worker_memory_bytes", 1)], 50 * MIB)
        self.assertNotIn(("ptrun_worker_memory_bytes", 0), samples)  # it has exited
        self.assertGreaterEqual(samples[("ptrun_worker_peak_memory_bytes", 1)], 50 * MIB)
        self.assertGreaterEqual(samples[("ptrun_worker_peak_memory_bytes", 0)], 30 * MIB)
        self.assertGreater(samples[("ptrun_worker_cpu_seconds_total", 1)], 0.25)
        self.assertGreater(samples[("ptrun_worker_cpu_seconds_total", 0)], 0.15)
        self.assertEqual(samples[("ptrun_worker_oom_kills_total", 1)], 0)

        self.end_job(proc)
        trace = json.loads((pathlib.Path(self.logs) / "latest" / "trace.json").read_text())
        tracks = {}
        for e in trace["traceEvents"]:
            if e["ph"] == "C":
                tracks.setdefault(e["name"], []).append(e["args"]["bytes"])
        # Rank 1's samples: its start, each /status and /metrics read (over 50 MiB), its exit (0).
        self.assertGreaterEqual(max(tracks["rank 1 memory"]), 50 * MIB, tracks)
        self.assertEqual(tracks["rank 1 memory"][-1], 0, tracks)
        self.assertGreaterEqual(max(tracks["rank 0 peak memory"]), 30 * MIB, tracks)

    @unittest.skipUnless(own_memory_cgroup() and os.geteuid() == 0,
                         "needs the cgroup v1 memory controller and root")
    def test_a_workers_memory_cgroup_counts_an_oom_kill_while_it_runs(self):
        proc, url = self.start_job({"ALLOC_MB_0": "60", "CHILD_MB_0": "300", "SLEEP_0": "120"},
                                   "--memory-limit-per-worker", "200M", nproc=1)
        [worker] = self.status_when(url, lambda w: True).values()
        self.assertEqual(worker["oom_kills"], 1, worker)  # its child, in its cgroup
        self.assertEqual(worker["state"], "starting")  # the worker itself lives on
        self.assertGreaterEqual(worker["memory_bytes"], 60 * MIB, worker)
        self.assertGreaterEqual(worker["peak_memory_bytes"], 190 * MIB, worker)  # near the limit
        samples = samples_of(get(url + "/metrics"))
        self.assertEqual(samples[("ptrun_worker_oom_kills_total", 0)], 1)


if __name__ == "__main__":
    unittest.main()
