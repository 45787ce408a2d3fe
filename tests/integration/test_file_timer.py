"""torch's file timer served natively: ptrun::watchdog's TimerFifo and TimerTable, driven on one
event loop by tests/fixtures/timer_server_probe as ptrun's agent will drive them, against real
FileTimerClient processes of PTRUN_TORCH_FLAVOUR's PyTorch (Debian 12's 1.13 here; Debian 13's
2.6 in its root under `ctest -L torch2`). Both write the same request lines; 2.6's server-side
additions (a run id for its debug log, dropping timers of dead pids) are the agent's business.
FileTimerUnderPtrun runs the same clients as ptrun's workers (TORCHELASTIC_ENABLE_FILE_TIMER=1):
an expired scope ends its worker with the requested signal and the report names the scope; a
request naming a process that is not a worker signals nobody."""
import os
import re
import select
import signal
import subprocess
import time
import unittest

from harness import PTRUN, TorchTestCase, _env, wait_gone
from torch_flavour import FLAVOUR, REPO

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.environ.get("TIMER_PROBE", "build/tests/fixtures/timer_server_probe")
CLIENT = os.path.join(HERE, "torch_timer_client.py")
HANG_WORKER = os.path.join(HERE, "hang_worker.py")
DEADLINE = 60.0


class Lines:
    """Lines of a pipe, read with deadlines (select), never a fixed sleep."""

    def __init__(self, stream):
        self.fd = stream.fileno()
        self.buffer = ""
        self.seen = []
        self.used = set()

    def wait_for(self, pattern, timeout=DEADLINE):
        """The first line, in any order of arrival, that matches `pattern` (a regex) and was not
        returned before."""
        end = time.monotonic() + timeout
        while True:
            while "\n" in self.buffer:
                line, self.buffer = self.buffer.split("\n", 1)
                self.seen.append(line)
            for i, line in enumerate(self.seen):
                if i not in self.used and re.fullmatch(pattern, line):
                    self.used.add(i)
                    return line
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line like {pattern!r} within {timeout}s: {self.seen}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    raise AssertionError(f"probe output closed; no {pattern!r}: {self.seen}")
                self.buffer += chunk.decode(errors="replace")


class FileTimer(TorchTestCase):
    def setUp(self):
        super().setUp()
        self.fifo = os.path.join(self.dir, "timer")
        self.probe = subprocess.Popen([PROBE, self.fifo], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.leftover.append(self.probe.pid)
        self.out = Lines(self.probe.stdout)
        self.out.wait_for("ready")

    def tearDown(self):
        self.probe.stdin.close()
        self.probe.wait(timeout=DEADLINE)
        self.probe.stdout.close()
        self.assertFalse(os.path.exists(self.fifo), "the FIFO outlived its reader")
        super().tearDown()

    def client(self, scope, after, sleep, sig=signal.SIGKILL):
        argv = [FLAVOUR.python, CLIENT, self.fifo, scope, str(after), str(sleep), str(int(sig))]
        proc = subprocess.Popen(FLAVOUR.command(argv, binds=(self.dir,)),
                                env={**os.environ, **FLAVOUR.env()}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        return proc

    def test_an_expired_scope_ends_the_worker_with_its_signal(self):
        proc = self.client("save", after=1, sleep=120)
        self.out.wait_for(rf"acquire {proc.pid} save")
        acquired = time.monotonic()
        self.out.wait_for(rf"expired {proc.pid} {int(signal.SIGKILL)} save")
        proc.wait(timeout=DEADLINE)
        ended = time.monotonic() - acquired
        out, err = proc.communicate()
        self.assertEqual(proc.returncode, -signal.SIGKILL, out + err)
        self.assertIn("inside", out)
        self.assertNotIn("left", out)
        # expires(after=1): ended about a second after the request, not at the end of the sleep.
        self.assertLess(ended, 5.0)

    def test_the_requested_signal_is_sent(self):
        proc = self.client("eval", after=1, sleep=120, sig=signal.SIGTERM)
        self.out.wait_for(rf"expired {proc.pid} {int(signal.SIGTERM)} eval")
        proc.wait(timeout=DEADLINE)
        proc.communicate()
        self.assertEqual(proc.returncode, -signal.SIGTERM)

    def test_a_scope_left_in_time_is_released_and_nothing_is_sent(self):
        procs = [self.client(f"step{i}", after=600, sleep=0) for i in range(3)]
        for i, proc in enumerate(procs):  # writers that come and go, one FIFO
            self.out.wait_for(rf"acquire {proc.pid} step{i}")
            self.out.wait_for(rf"release {proc.pid} step{i}")
            out, err = proc.communicate(timeout=DEADLINE)
            self.assertEqual(proc.returncode, 0, out + err)
            self.assertIn("left", out)
        self.assertFalse([l for l in self.out.seen if l.startswith(("expired", "error"))])

    def test_the_default_scope_names_the_caller(self):
        proc = self.client("", after=600, sleep=0)
        line = self.out.wait_for(rf"acquire {proc.pid} .*")
        self.assertRegex(line, r"#\d+$")
        proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0)


class FileTimerUnderPtrun(TorchTestCase):
    EXTRA = []  # options every run adds (PreloadedFileTimer: --preload torch)

    def run_timer(self, mode, arg):
        site = FLAVOUR.env().get("PYTHONPATH")
        env = {"PYTHONPATH": os.pathsep.join(p for p in (site, os.path.join(REPO, "python")) if p),
               "PYTHON_EXEC": FLAVOUR.python, "TORCHELASTIC_ENABLE_FILE_TIMER": "1"}
        argv = FLAVOUR.command([PTRUN, *self.EXTRA, "--nproc-per-node", "2", HANG_WORKER, mode,
                                arg],
                               binds=(self.dir,))
        began = time.monotonic()
        proc = subprocess.run(argv, env=_env(env), capture_output=True, text=True,
                              timeout=DEADLINE)
        return proc, time.monotonic() - began

    def test_an_expired_scope_ends_its_worker_and_the_report_names_it(self):
        proc, took = self.run_timer("timer", "1")
        self.assertEqual(proc.returncode, 128 + signal.SIGKILL, proc.stderr)
        late = re.search(r"worker rank 0 \(local rank 0, pid \d+\): its torch file timer 'save' "
                         r"expired ([\d.]+) s ago: sending SIGKILL", proc.stderr)
        self.assertIsNotNone(late, proc.stderr)
        self.assertLess(float(late.group(1)), 1.0, "signalled long after the scope expired")
        self.assertIn("cause       : ended by its torch file timer: scope 'save' expired",
                      proc.stderr)
        # Through the runner, where it was: its Python stack, read before the signal was sent.
        self.assertRegex(proc.stderr, r"python stack: where it was when ptrun ended it\n"
                                      r"(    .*\n)*    +File \".*hang_worker\.py\", line \d+ in main\n")
        self.assertLess(took, 20, "expires(after=1) ended the worker long after a second")
        pids = [int(p) for p in re.findall(r"pid (\d+)", proc.stderr)]
        self.assertEqual(wait_gone(pids, 10), [])

    def test_a_request_naming_another_process_signals_nobody(self):
        proc, _ = self.run_timer("foreign", "0")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stderr, r"ignoring scope 'evil' for pid \d+, which is not a worker")


class PreloadedFileTimer(FileTimerUnderPtrun):
    """The same with workers forked from the --preload zygote (issue 25)."""
    EXTRA = ["--preload", "torch"]


if __name__ == "__main__":
    unittest.main()
