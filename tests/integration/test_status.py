"""What a running job says of itself (issue 26): GET /status's run fields (uptime, world size, log
dir, last failure, `starting` before a worker's first progress), GET /metrics in Prometheus's text
format (checked by Prometheus's own parser, and scraped by a real Prometheus server), and `ptrun
status HOST:PORT`, the table a person reads, which exits 0 while the job is healthy, 1 when it is
not, and 3, within seconds, when nothing or something else answers. Every wait is bounded; no
process is left behind."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

from harness import PTRUN, PtrunTestCase, _env, free_port, wait_output

DEADLINE = 60
PYTHON = "/usr/bin/python3"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
# Rank 1 fails in attempt 0; in attempt 1 every rank says it is ready and waits to be ended.
WORKER = """import os, sys, time
rank, attempt = os.environ["RANK"], os.environ["TORCHELASTIC_RESTART_COUNT"]
if rank == "1" and attempt == "0":
    raise ValueError("bad batch")
sys.stdout.write(f"ready {rank} {attempt}\\n")
time.sleep(120)
"""


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Status(PtrunTestCase):
    def setUp(self):
        super().setUp()
        self.script = os.path.join(self.dir, "worker.py")
        with open(self.script, "w") as f:
            f.write(WORKER)

    def start_job(self):
        """A 2-worker job past its one restart, both workers of attempt 1 running; its URL."""
        logs = os.path.join(self.dir, "logs")
        proc = subprocess.Popen([PTRUN, "--nproc-per-node", "2", "--max-restarts", "1",
                                 "--health-port", "0", "--log-dir", logs, self.script],
                                env=_env({"PYTHON_EXEC": PYTHON}), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        self.addCleanup(self.end_job, proc)
        said = wait_output(proc.stderr, "/status", DEADLINE)
        url = re.search(r"health endpoint: (http://\S+)/health", said).group(1)
        # The line names every path the endpoint serves (issue 35.21).
        self.assertRegex(said, r"health endpoint: http://\S+/health, /status, /metrics and /stacks")
        out = ""
        while out.count(" 1\n") < 2:
            out += wait_output(proc.stdout, " 1\n", DEADLINE)
        return proc, url

    def end_job(self, proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=DEADLINE)
        proc.stdout.close()
        proc.stderr.close()

    def ptrun_status_of(self, body):
        """`ptrun status` against an HTTP server that answers every GET with 200 and `body`."""
        class Answer(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = HTTPServer(("127.0.0.1", 0), Answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            return self.ptrun_status(f"127.0.0.1:{server.server_port}")[0]
        finally:
            server.shutdown()
            server.server_close()

    def ptrun_status(self, *args):
        start = time.monotonic()
        res = subprocess.run([PTRUN, "status", *args], capture_output=True, text=True,
                             timeout=DEADLINE)
        return res, time.monotonic() - start

    def test_status_and_the_table_name_the_run_and_its_last_failure(self):
        proc, url = self.start_job()
        code, body = get(url + "/status")
        self.assertEqual(code, 200, body)
        doc = json.loads(body)
        self.assertEqual((doc["world_size"], doc["nodes"], doc["restart_count"]), (2, 1, 1))
        self.assertGreater(doc["uptime_seconds"], 0)
        self.assertTrue(doc["log_dir"].startswith(os.path.join(self.dir, "logs")), doc)
        self.assertRegex(doc["last_failure"], r"^worker rank 1 \(local rank 1, pid \d+\) failed: "
                                              r"exit code 1 \(ValueError: bad batch\) at \d{4}-")
        # No progress yet (nothing beats): starting, as the man page says, and healthy.
        self.assertEqual([w["state"] for w in doc["workers"]], ["starting", "starting"])
        host_port = url[len("http://"):]
        res, _ = self.ptrun_status(host_port)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout, r"job +: \S+ on \S+ \(phase running, round 0, restarts 1, up ")
        self.assertIn("health       : ok\n", res.stdout)
        self.assertIn("workers      : 2 here, 2 in the job on 1 node(s)\n", res.stdout)
        self.assertIn("last failure : worker rank 1 (local rank 1", res.stdout)
        self.assertRegex(res.stdout, r"\n0 +0 +\d+ +starting +0 +- +\n1 +1 +\d+ +starting ")
        # A stopped worker makes the job unhealthy: the table says so and the exit code is 1.
        pid = doc["workers"][1]["pid"]
        os.kill(pid, signal.SIGSTOP)
        try:
            end = time.monotonic() + DEADLINE
            while json.loads(get(url + "/status")[1])["workers"][1]["state"] != "stopped":
                self.assertLess(time.monotonic(), end, "rank 1 never shown stopped")
                time.sleep(0.05)
            res, _ = self.ptrun_status(host_port)
            self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
            self.assertRegex(res.stdout, r"health +: UNHEALTHY: rank 1 \(local rank 1, pid \d+\) "
                                         r"stopped")
        finally:
            os.kill(pid, signal.SIGCONT)

    def test_metrics_parse_as_prometheus_parses_them(self):
        from prometheus_client.parser import text_string_to_metric_families
        proc, url = self.start_job()
        code, body = get(url + "/metrics")
        self.assertEqual(code, 200)
        samples = {}
        for family in text_string_to_metric_families(body):
            self.assertTrue(family.name.startswith("ptrun_"), family.name)
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        self.assertEqual(samples[("ptrun_world_size", ())], 2)
        self.assertEqual(samples[("ptrun_workers", (("state", "starting"),))], 2)
        self.assertEqual(samples[("ptrun_workers", (("state", "failed"),))], 0)
        self.assertEqual(samples[("ptrun_restarts_total", ())], 1)
        self.assertEqual(samples[("ptrun_healthy", ())], 1)
        [host] = [dict(labels)["host"] for name, labels in samples if name == "ptrun_info"]
        self.assertEqual(samples[("ptrun_worker_progress_total",
                                  (("host", host), ("local_rank", "1"), ("rank", "1")))], 0)
        self.assertEqual(samples[("ptrun_job_workers", (("state", "starting"),))], 2)
        self.assertEqual(samples[("ptrun_job_healthy", ())], 1)
        # This node hosts the workers' store (nobody uses it here): its numbers are there too.
        self.assertEqual(samples[("ptrun_store_connections", ())], 0)
        self.assertEqual(samples[("ptrun_store_keys", ())], 0)

    def test_a_prometheus_server_scrapes_the_job(self):
        if not os.path.exists(PROMETHEUS):
            self.fail(f"{PROMETHEUS} missing: scripts/install-deps.sh installs Debian's prometheus")
        proc, url = self.start_job()
        port = free_port()
        data = tempfile.mkdtemp(dir=self.dir)
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: ptrun\n"
                    f"    static_configs:\n      - targets: ['{url[len('http://'):]}']\n")
        server = subprocess.Popen([PROMETHEUS, f"--config.file={config}",
                                   f"--storage.tsdb.path={data}",
                                   f"--web.listen-address=127.0.0.1:{port}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.leftover.append(server.pid)
        try:
            query = urllib.parse.urlencode({"query": "ptrun_world_size"})
            end = time.monotonic() + DEADLINE
            result = []
            while not result:
                self.assertLess(time.monotonic(), end, "Prometheus never scraped the job")
                self.assertIsNone(server.poll(), server.stderr.read() if server.poll() else "")
                try:
                    code, body = get(f"http://127.0.0.1:{port}/api/v1/query?{query}")
                    result = json.loads(body)["data"]["result"] if code == 200 else []
                except (OSError, ValueError, KeyError):
                    result = []
                if not result:
                    time.sleep(0.2)
            self.assertEqual(result[0]["value"][1], "2")
            self.assertEqual(result[0]["metric"]["job"], "ptrun")
        finally:
            server.terminate()
            server.communicate(timeout=DEADLINE)

    def test_ptrun_status_reads_a_job_of_100000_ranks(self):
        """A /status of 100,000 ranks on 12,500 nodes (about 21 MB) is read and shown whole."""
        nodes, per_node = 12_500, 8
        workers = [{"rank": r, "local_rank": r % per_node, "pid": 100_000 + r, "state": "running",
                    "progress_count": 1234, "seconds_since_progress": 0.4, "exit_code": None,
                    "signal": None, "detail": "", "section": None,
                    "host": f"gpu-node-{r // per_node:05d}.cluster.example"}
                   for r in range(nodes * per_node)]
        node_states = [{"node_rank": n, "host": f"gpu-node-{n:05d}.cluster.example",
                        "phase": "running", "workers": per_node, "age_seconds": 1.0,
                        "healthy": True, "reason": ""} for n in range(nodes)]
        body = json.dumps({"run_id": "big", "host": "gpu-node-00000.cluster.example",
                           "phase": "running", "round": 1, "restart_count": 0,
                           "uptime_seconds": 600.0, "healthy": True, "reason": "",
                           "world_size": nodes * per_node, "nodes": nodes, "log_dir": None,
                           "last_failure": None, "node_states": node_states,
                           "workers": workers}).encode()
        self.assertGreater(len(body), 16 << 20)
        res = self.ptrun_status_of(body)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("100000 in the job on 12500 node(s)", res.stdout)
        self.assertRegex(res.stdout, r"\ngpu-node-12499\.cluster\.example +99999 +7 +199999 ")

    def test_ptrun_status_says_when_nothing_or_something_else_answers(self):
        res, took = self.ptrun_status(f"127.0.0.1:{free_port()}")
        self.assertEqual(res.returncode, 3)
        self.assertRegex(res.stderr, r"ptrun status: no ptrun answers at 127\.0\.0\.1:\d+: "
                                     r"Connection refused")
        self.assertNotIn("Traceback", res.stderr)
        res = self.ptrun_status_of(b"hello")
        self.assertEqual(res.returncode, 3)
        self.assertIn("answered HTTP 200, but not with a ptrun /status document", res.stderr)
        # A listener that never answers: given up within the deadline (5 s), not hung on.
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen()
            res, took = self.ptrun_status(f"127.0.0.1:{silent.getsockname()[1]}")
        self.assertEqual(res.returncode, 3)
        self.assertIn("no whole answer within 5 s", res.stderr)
        self.assertLess(took, 8)
        for args in ((), ("localhost",), ("a:1", "b:2")):
            res, _ = self.ptrun_status(*args)
            self.assertEqual(res.returncode, 2, args)
            self.assertIn("ptrun status", res.stderr)


class FromTheStart(PtrunTestCase):
    """--health-port answers from ptrun's start (#37.5): while a node that does not host the
    rendezvous store waits for it (a cluster manager probes then: pytorch#176576), with the
    phase in /status, and on the same port once the job runs. torchrun's
    TORCHELASTIC_HEALTH_CHECK_PORT asks for it too."""

    def start(self, args, env):
        proc = subprocess.Popen([PTRUN, *args], env=_env({"PYTHON_EXEC": PYTHON, **env}),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def test_a_node_waiting_for_the_store_answers_and_keeps_its_port(self):
        script = os.path.join(self.dir, "worker.py")
        with open(script, "w") as f:
            f.write("import os, time\nprint('ready', os.environ['RANK'], flush=True)\n"
                    "time.sleep(60)\n")
        store = free_port()
        common = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                  "--rdzv-endpoint", f"127.0.0.1:{store}"]
        joiner = self.start([*common, "--rdzv-conf", "is_host=0", script],
                            {"TORCHELASTIC_HEALTH_CHECK_PORT": "0"})
        said = wait_output(joiner.stderr, "/status", DEADLINE)
        url = re.search(r"health endpoint: (http://\S+)/health", said).group(1)
        status, body = get(url + "/health")
        self.assertEqual((status, body), (200, "ok\n"))
        status, body = get(url + "/status")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["phase"], "rendezvous")
        host = self.start([*common, script], {})
        wait_output(joiner.stdout, "ready", DEADLINE)
        status, body = get(url + "/status")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["phase"], "running", body)
        for proc in (joiner, host):
            proc.send_signal(signal.SIGTERM)
        for proc in (joiner, host):
            proc.wait(timeout=DEADLINE)
        self.assertEqual(said.count("health endpoint"), 1, said)

# A --preload module whose before-fork hook takes 4 s in the zygote (os.register_at_fork: it runs
# for every worker the zygote forks); it marks when it starts.
SLOW_FORK = """import os, time
_zygote = os.getpid()
def _slow():
    if os.getpid() == _zygote:
        open(os.environ["FORK_MARK"], "w").close()
        time.sleep(float(os.environ.get("FORK_SECONDS", "4")))
os.register_at_fork(before=_slow)
"""


class WhileTheZygoteForks(PtrunTestCase):
    """A fork request to a slow --preload zygote does not hold ptrun's loop (issue 35.10): /health
    answers and SIGTERM ends the job while the zygote has not answered yet."""

    def setUp(self):
        super().setUp()
        with open(os.path.join(self.dir, "slowfork.py"), "w") as f:
            f.write(SLOW_FORK)

    def run_forked(self, args, text, seconds):
        """ptrun ARGS --preload slowfork worker.py (`text`) to its end, each fork taking
        `seconds` in the zygote's before-fork hook."""
        script = os.path.join(self.dir, "worker.py")
        with open(script, "w") as f:
            f.write(text)
        return subprocess.run([PTRUN, *args, "--preload", "slowfork", script],
                              env=_env({"PYTHON_EXEC": PYTHON, "PYTHONPATH": self.dir,
                                        "FORK_MARK": os.path.join(self.dir, "mark"),
                                        "FORK_SECONDS": seconds}),
                              capture_output=True, text=True, timeout=DEADLINE)

    def test_requests_in_a_row_are_each_given_their_own_time(self):
        # 3 workers, 3.5 s each: the last answer comes 10.5 s after its request was sent, 3.5 s
        # after the answer before it (the zygote's fork timeout is 10 s per answer).
        proc = self.run_forked(["--nproc-per-node", "3"],
                               "import os, sys\nprint('rank', os.environ['RANK'], 'forked',"
                               " 'slowfork' in sys.modules)\n", "3.5")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(proc.stdout.splitlines()),
                         [f"rank {r} forked True" for r in range(3)], proc.stderr)
        self.assertNotIn("did not answer", proc.stderr)

    def test_a_restart_drops_the_fork_not_answered_yet(self):
        # Rank 0 fails as soon as it runs, while rank 1's fork is still under way: rank 1 of
        # attempt 0 never runs (what the zygote forks for it is killed before it does), and
        # attempt 1 forks both ranks again from the same zygote.
        proc = self.run_forked(["--nproc-per-node", "2", "--max-restarts", "1"],
                               "import os, sys\nrank, attempt = os.environ['RANK'], "
                               "os.environ['TORCHELASTIC_RESTART_COUNT']\n"
                               "print('attempt', attempt, 'rank', rank, 'forked',"
                               " 'slowfork' in sys.modules)\n"
                               "sys.exit(1 if (rank, attempt) == ('0', '0') else 0)\n", "1.5")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(proc.stdout.splitlines()),
                         ["attempt 0 rank 0 forked True", "attempt 1 rank 0 forked True",
                          "attempt 1 rank 1 forked True"], proc.stderr)
        self.assertRegex(proc.stderr, r"restarting the worker group \(restart 1 of 1\)")

    def test_a_zygote_that_does_not_answer_is_left_and_the_worker_starts_anyway(self):
        started = time.monotonic()
        proc = self.run_forked(["--nproc-per-node", "1"],
                               "import sys\nprint('forked', 'slowfork' in sys.modules)\n", "30")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "forked False\n", proc.stderr)
        self.assertRegex(proc.stderr, r"--preload slowfork: the zygote \(pid \d+\) did not answer "
                                      r"within 10 s while forking a worker; workers start as "
                                      r"interpreters from now on")
        self.assertLess(time.monotonic() - started, 20)

    def test_health_and_a_signal_are_answered_at_once(self):
        script = os.path.join(self.dir, "worker.py")
        with open(script, "w") as f:
            f.write("import time\ntime.sleep(60)\n")
        mark = os.path.join(self.dir, "forking")
        proc = subprocess.Popen([PTRUN, "--nproc-per-node", "1", "--preload", "slowfork",
                                 "--health-port", "0", script],
                                env=_env({"PYTHON_EXEC": PYTHON, "PYTHONPATH": self.dir,
                                          "FORK_MARK": mark}),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        said = wait_output(proc.stderr, "/status", DEADLINE)
        url = re.search(r"health endpoint: (http://\S+)/health", said).group(1)
        end = time.monotonic() + DEADLINE
        while not os.path.exists(mark):  # the zygote is in its before-fork hook
            self.assertLess(time.monotonic(), end, "the zygote never forked")
            time.sleep(0.02)
        asked = time.monotonic()
        status, body = get(url + "/status")
        self.assertEqual(status, 200, body)
        self.assertLess(time.monotonic() - asked, 1.5, "/status waited for the zygote")
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=2.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("SIGTERM waited for the zygote's answer")
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, proc.stderr.read())


if __name__ == "__main__":
    unittest.main()
