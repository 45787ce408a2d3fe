"""`ptrun logs HOST:PORT` (issue 38, its single-node part): the worker lines a running ptrun's
health endpoint serves from the run directory's log files (GET /logs), merged in the time ptrun
captured them, each prefixed "[host:rank] "; --rank selects; a rank it does not run is named as
missing; a hostile /logs query is refused. Every wait is bounded by an event; nothing is left
running."""
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

from harness import PTRUN, PtrunTestCase, _env, wait_output

DEADLINE = 60
PYTHON = "/usr/bin/python3"
# Each rank waits for its turn on its own FIFO (the test opens it once the previous line was
# captured), says its line, and at the end waits to be ended.
WORKER = """import os, signal, sys
rank = int(os.environ["RANK"])
d = sys.argv[1]
turns = {0: ["one", "three"], 1: ["two"]}[rank]
for word in turns:
    with open(os.path.join(d, f"turn{rank}")) as f:
        f.read()
    print(word, flush=True)
print(f"err {rank}", file=sys.stderr, flush=True)
signal.pause()
"""


class PtrunLogs(PtrunTestCase):
    def setUp(self):
        super().setUp()
        self.script = os.path.join(self.dir, "worker.py")
        with open(self.script, "w") as f:
            f.write(WORKER)
        for r in (0, 1):
            os.mkfifo(os.path.join(self.dir, f"turn{r}"))

    def end_job(self, proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=DEADLINE)
        proc.stdout.close()
        proc.stderr.close()

    def turn(self, rank):
        """Lets `rank` say its next line (the FIFO opens once the worker reads it)."""
        with open(os.path.join(self.dir, f"turn{rank}"), "w") as f:
            f.write("go\n")

    def ptrun_logs(self, *args):
        res = subprocess.run([PTRUN, "logs", *args], capture_output=True, text=True,
                             timeout=DEADLINE)
        return res.returncode, res.stdout, res.stderr

    def test_lines_of_every_rank_merged_in_time_order(self):
        proc, at = self.start_job(self.script, "--tee", "3")
        # Each line is captured (tee'd to ptrun's stdout) before the next is written.
        self.turn(0)
        out = wait_output(proc.stdout, ":0] one\n", DEADLINE)
        host = re.search(r"\[(\S+):0\] one", out).group(1)
        self.turn(1)
        wait_output(proc.stdout, ":1] two\n", DEADLINE)
        self.turn(0)
        wait_output(proc.stdout, ":0] three\n", DEADLINE)

        code, stdout, stderr = self.ptrun_logs(at)
        self.assertEqual(code, 0, stderr)
        lines = [l for l in stdout.splitlines() if not l.endswith(("err 0", "err 1"))]
        self.assertEqual(lines, [f"[{host}:0] one", f"[{host}:1] two", f"[{host}:0] three"])

        code, stdout, stderr = self.ptrun_logs(at, "--rank", "1", "--tail", "1")
        self.assertEqual(code, 0, stderr)
        self.assertIn(f"[{host}:1] two", stdout)
        self.assertNotIn(":0]", stdout)

        code, stdout, stderr = self.ptrun_logs(at, "--rank", "0,7")
        self.assertEqual(code, 1)
        self.assertIn(f"[{host}:0] one", stdout)
        self.assertIn("ptrun logs: missing: rank 7: no such rank in the job", stderr)

        for query in ("rank=../../etc/passwd", "rank=0&tail=999999", "rank=0&x=" + "a" * 300):
            with self.assertRaises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(f"http://{at}/logs?{query}", timeout=10)
            self.assertEqual(caught.exception.code, 400, query)
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(f"http://{at}/logs?rank=9", timeout=10)
        self.assertEqual(caught.exception.code, 404)

    def start_job(self, script, *args):
        """Starts a 2-worker job running `script`; returns it and its health endpoint."""
        proc = subprocess.Popen([PTRUN, "--standalone", "--nproc-per-node", "2", *args,
                                 "--health-port", "0", "--log-dir",
                                 os.path.join(self.dir, "logs"), script, self.dir],
                                env=_env({"PYTHON_EXEC": PYTHON}), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        self.addCleanup(self.end_job, proc)
        said = wait_output(proc.stderr, "/status", DEADLINE)
        port = re.search(r"health endpoint: http://127\.0\.0\.1:(\d+)/health", said).group(1)
        return proc, f"127.0.0.1:{port}"

    def follow(self, at):
        follower = subprocess.Popen([PTRUN, "logs", at, "--follow"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        self.leftover.append(follower.pid)

        def end():
            if follower.poll() is None:
                follower.kill()
                follower.communicate(timeout=DEADLINE)
            follower.stdout.close()
            follower.stderr.close()
        self.addCleanup(end)
        return follower

    def test_follow_spans_a_restart_and_exits_with_the_job(self):
        # Attempt 0: both ranks say "start", then rank 0 says "fail" on its turn and fails (rank
        # 1 is stopped for the restart). Attempt 1: each says "second" and succeeds.
        script = os.path.join(self.dir, "restarts.py")
        with open(script, "w") as f:
            f.write("""import os, signal, sys
rank = int(os.environ["RANK"])
if os.environ["TORCHELASTIC_RESTART_COUNT"] != "0":
    print(f"second {rank}", flush=True)
    sys.exit(0)
print(f"start {rank}", flush=True)
if rank == 1:
    signal.pause()
with open(os.path.join(sys.argv[1], "turn0")) as f:
    f.read()
print("fail 0", flush=True)
sys.exit(1)
""")
        proc, at = self.start_job(script, "--max-restarts", "1", "--tee", "3")
        follower = self.follow(at)
        seen = wait_output(follower.stdout, "start 0", DEADLINE)
        while "start 1" not in seen:
            seen += wait_output(follower.stdout, "\n", DEADLINE)
        self.turn(0)
        rest, err = follower.communicate(timeout=DEADLINE)
        seen += rest
        self.assertEqual(follower.returncode, 0, seen + err)
        words = [l.split("] ", 1)[1] for l in seen.splitlines()]
        self.assertEqual([w for w in words if w.endswith("0")], ["start 0", "fail 0", "second 0"],
                         seen + err)
        self.assertEqual([w for w in words if w.endswith("1")], ["start 1", "second 1"],
                         seen + err)
        proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0)

    def test_follow_wakes_on_lines_the_worker_writes_to_its_log_file(self):
        # --redirects without --tee: the workers write their log files themselves. Each line
        # reaches the follower well before its 3 s turn.
        script = os.path.join(self.dir, "redirected.py")
        with open(script, "w") as f:
            f.write("""import os, signal, sys
rank = int(os.environ["RANK"])
print(f"ready {rank}", flush=True)
if rank == 0:
    for word in ("one", "two"):
        with open(os.path.join(sys.argv[1], "turn0")) as f:
            f.read()
        print(word, flush=True)
""")
        proc, at = self.start_job(script, "--redirects", "3")
        follower = self.follow(at)
        seen = wait_output(follower.stdout, "ready 0", DEADLINE)
        while "ready 1" not in seen:
            seen += wait_output(follower.stdout, "\n", DEADLINE)
        for word in ("one", "two"):
            start = time.monotonic()
            self.turn(0)
            seen += wait_output(follower.stdout, f"] {word}\n", DEADLINE)
            self.assertLess(time.monotonic() - start, 1.5, f"{word!r} took its 3 s turn")
        rest, err = follower.communicate(timeout=DEADLINE)
        self.assertEqual(follower.returncode, 0, seen + rest + err)
        proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0)

    def test_nothing_answers(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        start = time.monotonic()
        code, _, stderr = self.ptrun_logs(f"127.0.0.1:{port}")
        self.assertEqual(code, 3)
        self.assertIn("ptrun logs: no ptrun answers at 127.0.0.1:", stderr)
        self.assertLess(time.monotonic() - start, 10)

    def test_usage_errors(self):
        for args in ([], ["127.0.0.1"], ["127.0.0.1:1", "--tail", "0"],
                     ["127.0.0.1:1", "--rank", "x"], ["127.0.0.1:1", "--bogus"]):
            code, _, stderr = self.ptrun_logs(*args)
            self.assertEqual(code, 2, (args, stderr))
            self.assertIn("ptrun logs", stderr)


if __name__ == "__main__":
    import unittest
    unittest.main()
