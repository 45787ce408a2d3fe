"""Hangs (issue 15): ptrun's watchdog with real workers. --hang-timeout finds a worker that stopped
making progress (a SIGSTOPped rank of the C++ `train` example, a Python rank stuck in a function),
captures every rank's stacks before anything is killed, names the rank that stopped first, and
ends with exit code 124 or restarts; workers that keep beating, or sit in an announced section,
are never flagged; --health-port answers /health and /status. (torch's file timer under ptrun:
test_file_timer.py, with either torch.)
Every wait is bounded; no process is left behind."""
import glob
import json
import os
import re
import signal
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from harness import PtrunTestCase, PTRUN, _env, wait_gone, wait_output
from test_waiting import start_hosting

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "hang_worker.py")
TRAIN = os.environ.get("TRAIN_BIN", "build/examples/train/train")
PYTHON = "/usr/bin/python3"  # Debian's, with torch 1.13 (the file-timer tests need it)
DEADLINE = 60.0
HUNG = 124


def get(url, timeout=5.0):
    """(status, body) of one HTTP GET."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Hangs(PtrunTestCase):
    def env(self, **extra):
        return {"PYTHONPATH": os.path.join(ROOT, "python"), "PYTHON_EXEC": PYTHON, **extra}

    def start(self, args, env=None):
        proc = subprocess.Popen([PTRUN, *args], env=_env(self.env(**(env or {}))),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        return proc

    def finish(self, proc, seen=""):
        out, err = proc.communicate(timeout=DEADLINE)
        return out, seen + err

    def health_url(self, proc):
        """The endpoint ptrun announced (--health-port 0) and what it read until then."""
        seen = wait_output(proc.stderr, "/status", DEADLINE)
        m = re.search(r"health endpoint: (http://\S+)/health", seen)
        self.assertIsNotNone(m, seen)
        return m.group(1), seen

    def status_until(self, url, predicate, what):
        """GET /status until `predicate(json)` holds; fails after DEADLINE."""
        end = time.monotonic() + DEADLINE
        last = None
        while time.monotonic() < end:
            code, body = get(url + "/status")
            last = (code, body)
            if code == 200 and predicate(json.loads(body)):
                return json.loads(body)
            time.sleep(0.05)
        self.fail(f"/status never showed {what}: {last}")

    def worker_pids(self, text):
        return [int(p) for p in re.findall(r"pid (\d+)", text)]

    def assert_none_left(self, pids):
        self.assertEqual(wait_gone(pids, 10), [], "worker processes left behind")

    def test_a_python_rank_stuck_in_a_function_is_named_with_its_traceback(self):
        logs = os.path.join(self.dir, "logs")
        began = time.monotonic()
        proc = self.start(["--nproc-per-node", "3", "--hang-timeout", "2", "--redirects", "3",
                           "--log-dir", logs, WORKER, "stuck"])
        out, err = self.finish(proc)
        took = time.monotonic() - began
        self.assertEqual(proc.returncode, HUNG, err)
        self.assertRegex(err, r"worker rank 1 \(local rank 1, pid \d+\) is hung: no progress for 2 s")
        # Named by its stack (the only one that differs), not only by its last beat.
        self.assertRegex(err, r"odd one out  : rank 1 \(local rank 1, pid \d+\): no progress for 2 s "
                              r"\(5 beats\); the only rank whose stack differs from the others'\n")
        # The odd one out first, with the function it is stuck in (its file and line).
        self.assertRegex(err, r"where +: rank 1 in `stuck_in_data_loader` \(hang_worker\.py:\d+\); "
                              r"ranks 0,2 in ")
        self.assertIn("the job ends with exit code 124 (hung)", err)
        files = sorted(glob.glob(os.path.join(logs, "latest", "attempt_0", "stacks_rank_*.txt")))
        self.assertEqual([os.path.basename(f) for f in files],
                         ["stacks_rank_0.txt", "stacks_rank_1.txt", "stacks_rank_2.txt"])
        with open(files[1]) as f:
            text = f.read()
        self.assertRegex(text, r'File ".*hang_worker\.py", line \d+ in stuck_in_data_loader')
        self.assertLess(took, 2 + 25, "found and ended long after --hang-timeout")
        self.assert_none_left(self.worker_pids(err))

    def test_python_stacks_come_whole_through_the_runner_without_tee(self):
        # No --tee/--redirects: the runner's faulthandler writes each rank's stacks into its own
        # file on ptrun's signal, nothing reaches the terminal (four dumps used to interleave
        # there, issue 23 item 8) and `where` still speaks Python; the runner's frame is not shown.
        logs = os.path.join(self.dir, "logs")
        proc = self.start(["--nproc-per-node", "4", "--hang-timeout", "2", "--log-dir", logs,
                           WORKER, "stuck"])
        out, err = self.finish(proc)
        self.assertEqual(proc.returncode, HUNG, err)
        # Only the report's own copy of rank 1's dump reaches the terminal: no worker printed one.
        self.assertEqual((out + err).count("Current thread"), 1, err)
        self.assertNotIn("Fatal Python error", out + err)
        self.assertRegex(err, r"where +: rank 1 in `stuck_in_data_loader` \(hang_worker\.py:\d+\); "
                              r"ranks 0,2-3 in ")
        self.assertNotIn("went to the terminal", err)
        # The rank named first: its dump printed whole in the report, the others' in their files.
        self.assertRegex(err, r"  rank 1's Python stack:\n(    .*\n)*?    Current thread 0x[0-9a-f]+ \(most recent "
                              r"call first\):\n      File \".*hang_worker\.py\", line \d+ in "
                              r"stuck_in_data_loader\n")
        for rank in range(4):
            with open(os.path.join(logs, "latest", "attempt_0", f"stacks_rank_{rank}.txt")) as f:
                text = f.read()
            python = text.split("== Python (faulthandler)\n", 1)[1].split("\n== native", 1)[0]
            self.assertEqual(python.count("Current thread"), 1, text)  # one whole dump
            self.assertIn("hang_worker.py", python)
            self.assertNotIn("_runner.py", python)
            if rank == 1:
                self.assertRegex(python, r'line \d+ in stuck_in_data_loader\n')
        self.assert_none_left(self.worker_pids(err))

    def test_without_the_runner_python_ranks_end_by_sigabrt_as_before(self):
        # --no-runner: plain python3 -u, PYTHONFAULTHANDLER and SIGABRT; without --tee 2 the
        # tracebacks go to the terminal, and the report says so.
        proc = self.start(["--nproc-per-node", "2", "--hang-timeout", "2", "--no-runner",
                           WORKER, "stuck"])
        out, err = self.finish(proc)
        self.assertEqual(proc.returncode, HUNG, err)
        self.assertIn("Fatal Python error: Aborted", err)
        self.assertIn("went to the terminal above", err)
        self.assert_none_left(self.worker_pids(err))

    def test_a_stopped_rank_of_train_is_found_within_the_timeout_and_named_first(self):
        if not os.path.exists(TRAIN):
            self.skipTest(f"no train example at {TRAIN}")
        proc = self.start(["--standalone", "--nproc-per-node", "2", "--hang-timeout", "2",
                           "--health-port", "0", "--no-python", TRAIN, "--epochs", "100000",
                           "--dataset-size", "64", "--global-batch", "8"])
        url, seen = self.health_url(proc)
        status = self.status_until(url, lambda s: len(s["workers"]) == 2 and all(
            w["progress_count"] > 0 for w in s["workers"]), "both ranks beating (ddp collectives)")
        victim = status["workers"][1]["pid"]
        os.kill(victim, signal.SIGSTOP)
        stopped = time.monotonic()
        seen += wait_output(proc.stderr, "is hung", DEADLINE)
        self.assertLess(time.monotonic() - stopped, 2 + 2, "a stopped rank found late")
        out, err = self.finish(proc, seen)
        self.assertEqual(proc.returncode, HUNG, err)
        # Named first either way: as the first to stop, or, where its stop caught it outside the
        # collective the other rank waits in, as the odd one out (both say the SIGSTOP).
        self.assertRegex(err, rf"(first to stop|odd one out  ): rank 1 \(local rank 1, pid {victim}\): "
                              r"stopped by SIGSTOP")
        self.assertRegex(err, r"where +: rank")
        self.assertNotRegex(err, r"rank 0 \(local rank 0, pid \d+\) is hung")
        self.assert_none_left([w["pid"] for w in status["workers"]])

    def test_workers_that_keep_beating_or_sit_in_a_section_are_never_flagged(self):
        for mode, arg in (("beat", "4"), ("section", "4")):
            with self.subTest(mode=mode):
                proc = self.start(["--nproc-per-node", "2", "--hang-timeout", "1", WORKER, mode,
                                   arg])
                out, err = self.finish(proc)
                self.assertEqual(proc.returncode, 0, err)
                self.assertNotIn("hung", err)

    def test_a_hang_restarts_the_group_when_restarts_remain(self):
        proc = self.start(["--nproc-per-node", "2", "--hang-timeout", "1.5", "--max-restarts", "1",
                           "--tee", "2", WORKER, "stuck-once"])
        out, err = self.finish(proc)
        self.assertEqual(proc.returncode, 0, err)
        self.assertRegex(err, r"worker rank 1 \(local rank 1, pid \d+\) hung: no progress for 1 s "
                              r"\(5 beats\); restarting the worker group \(restart 1 of 1\)")
        self.assertIn("outcome      : restarting the worker group (restart 1 of 1)", err)
        self.assertIn("rank 1 in `stuck_in_data_loader`", err)

    def tamper_and_watch(self, mode):
        """Runs `hang_worker.py MODE` (rank 0 damages its own heartbeat record) under
        --hang-timeout 2 with a health endpoint; returns (ptrun's exit code, stderr, the /status
        that showed the damage)."""
        marker = os.path.join(self.dir, "go")
        proc = self.start(["--nproc-per-node", "2", "--hang-timeout", "2", "--health-port", "0",
                           WORKER, mode], env={"HANG_MARKER": marker})
        url, seen = self.health_url(proc)
        # Rank 0 stays silent for longer than the timeout: its record is damaged, so its progress
        # is unknown, which is not a hang (and ptrun neither faults nor says it is).
        status = self.status_until(url, lambda s: "heartbeat record" in s["workers"][0].get(
            "detail", "") and (s["workers"][0].get("seconds_since_progress") or 0) > 3,
            "rank 0's damaged heartbeat record, 3 s after its last good beat")
        self.assertNotEqual(status["workers"][0]["state"], "hung", status)
        self.assertIsNone(proc.poll(), "ptrun ended while a worker's record was damaged")
        with open(marker, "w"):
            pass
        out, err = self.finish(proc, seen)
        return proc.returncode, err, status

    def test_a_worker_that_truncates_its_heartbeat_file_does_not_crash_ptrun(self):
        code, err, status = self.tamper_and_watch("truncate")
        self.assertEqual(code, 0, err)  # not 135 (SIGBUS)
        w0 = status["workers"][0]
        self.assertIn("heartbeat record shrank to 0 bytes", w0["detail"])
        # Its last good sample: the watchdog samples on its own tick, so it may have last read the
        # record between two of the five beats, but never a count the record did not hold.
        self.assertIn(w0["progress_count"], range(1, 6), w0)
        self.assertRegex(err, r"worker rank 0 \(local rank 0, pid \d+\): its heartbeat record "
                              r"shrank to 0 bytes")

    def test_record_times_out_of_range_are_clamped_and_reported_as_corrupt(self):
        code, err, status = self.tamper_and_watch("wild-times")
        self.assertEqual(code, 0, err)  # not 124: no instant hang
        w0 = status["workers"][0]
        self.assertIn("heartbeat record is corrupt", w0["detail"])
        self.assertGreaterEqual(w0["seconds_since_progress"], 0)
        self.assertNotIn("-9223", err)
        self.assertEqual(len(re.findall(r"heartbeat record is corrupt", err)), 1, err)

    def test_ptrun_and_its_workers_stopped_together_are_not_hung(self):
        # SIGSTOP of the whole tree for 2.5x the timeout, then SIGCONT: the time ptrun was
        # stopped never counts, so the workers beat again and finish.
        proc = self.start(["--nproc-per-node", "2", "--hang-timeout", "2", "--health-port", "0",
                           WORKER, "beat", "9"])
        url, seen = self.health_url(proc)
        status = self.status_until(url, lambda s: len(s["workers"]) == 2 and all(
            w["progress_count"] > 0 for w in s["workers"]), "both ranks beating")
        tree = [proc.pid] + [w["pid"] for w in status["workers"]]
        for pid in tree:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(5)  # the stop itself, not a wait for an event
        for pid in reversed(tree):
            os.kill(pid, signal.SIGCONT)
        out, err = self.finish(proc, seen)
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn("is hung", err)

    def test_a_flood_of_bad_timer_requests_is_one_warning_then_a_count(self):
        proc = self.start(["--nproc-per-node", "1", WORKER, "flood-timer", "20000"],
                          env={"TORCHELASTIC_ENABLE_FILE_TIMER": "1"})
        out, err = self.finish(proc)
        self.assertEqual(proc.returncode, 0, err[-2000:])
        warnings = [l for l in err.splitlines() if "torch file timer: " in l and "warning" in l]
        self.assertGreaterEqual(len(warnings), 1, err[-2000:])
        self.assertLessEqual(len(warnings), 3, "\n".join(warnings[:5]))

    def test_a_worker_that_removes_ptruns_files_on_dev_shm_does_not_break_the_restart(self):
        proc = self.start(["--nproc-per-node", "2", "--max-restarts", "1", "--hang-timeout", "60",
                           WORKER, "clean-shm"], env={"TORCHELASTIC_ENABLE_FILE_TIMER": "1"})
        out, err = self.finish(proc)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("restart 1 of 1", err)
        self.assertIn("was removed during the run", err)
        self.assertNotIn("cannot create", err)

    def test_the_health_endpoint_answers_during_the_run(self):
        proc = self.start(["--nproc-per-node", "2", "--health-port", "0", WORKER, "forever"])
        try:
            url, seen = self.health_url(proc)
            self.assertRegex(url, r"^http://127\.0\.0\.1:\d+$")  # loopback by default
            status = self.status_until(url, lambda s: len(s["workers"]) == 2 and all(
                w["progress_count"] > 0 for w in s["workers"]), "both ranks beating")
            self.assertEqual(get(url + "/health"), (200, "ok\n"))
            self.assertEqual(status["restart_count"], 0)
            self.assertEqual([w["state"] for w in status["workers"]], ["running", "running"])
            victim = status["workers"][0]["pid"]
            os.kill(victim, signal.SIGSTOP)
            seen += wait_output(proc.stderr, "is stopped by SIGSTOP", DEADLINE)
            code, body = get(url + "/health")
            self.assertEqual(code, 503, body)
            self.assertIn("rank 0", body)
            os.kill(victim, signal.SIGCONT)  # WCONTINUED: healthy again
            self.status_until(url, lambda s: s["workers"][0]["state"] == "running", "rank 0 running")
            self.assertEqual(get(url + "/health")[0], 200)
        finally:
            proc.send_signal(signal.SIGTERM)
        out, err = self.finish(proc)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assert_none_left([w["pid"] for w in status["workers"]])


class MultiNodeHang(PtrunTestCase):
    def test_every_node_names_the_host_and_rank_that_hung(self):
        # Two agents on loopback, one worker each: node 1's worker (rank 1) stops beating.
        env = {"PYTHONPATH": os.path.join(ROOT, "python"), "PYTHON_EXEC": PYTHON}
        args = ["--nnodes", "2", "--master-port", "{port}", "--hang-timeout", "2", WORKER, "stuck"]
        first, port, said = start_hosting(args, env=env)
        self.leftover.append(first.pid)
        second = subprocess.run([PTRUN, "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}",
                                 "--hang-timeout", "2", WORKER, "stuck"], env=_env(env),
                                capture_output=True, text=True, timeout=DEADLINE)
        out, err = first.communicate(timeout=DEADLINE)
        err = said + err
        self.assertEqual(second.returncode, HUNG, second.stderr)
        self.assertRegex(second.stderr, r"first to stop: rank 1 \(local rank 0, pid \d+\): no progress")
        self.assertEqual(first.returncode, HUNG, err)
        self.assertRegex(err, r"worker rank 1 \(local rank 0\) on \S+ hung: no progress for 2 s")
        self.assertNotIn("first to stop", err)  # node 0's own worker was not hung


if __name__ == "__main__":
    unittest.main()
