"""Python workers through ptrun's runner (issue 24), with real PyTorch (PTRUN_TORCH_FLAVOUR:
Debian 12's 1.13, or 2.6 in the Debian 13 root): an unchanged DDP script beats on every optimizer
step, so --hang-timeout finds a rank stuck in a function, the report names that rank as the odd
one out with its Python frame, and the other ranks' Python frames; GET /stacks returns every
rank's Python stack while the job goes on; --no-runner leaves the script opaque. The same holds
for workers forked from the --preload zygote (issue 25). Every wait is bounded; no process is
left behind."""
import json
import os
import re
import signal
import subprocess
import time
import unittest
import urllib.request

from harness import PTRUN, TorchTestCase, _env, wait_gone, wait_output
from torch_flavour import FLAVOUR

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "torch_stuck_ddp.py")
DEADLINE = 240
HUNG = 124


class PythonWorkers(TorchTestCase):
    def setUp(self):
        super().setUp()
        self.env = {"PYTHON_EXEC": FLAVOUR.python, "GLOO_SOCKET_IFNAME": "lo", **FLAVOUR.env()}

    EXTRA = []  # options every start adds (PreloadedPythonWorkers: --preload torch)

    def start(self, args):
        argv = FLAVOUR.command([PTRUN, *self.EXTRA, *args], binds=[self.dir])
        proc = subprocess.Popen(argv, env=_env(self.env), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def test_an_unchanged_ddp_script_with_a_stuck_rank_is_named_by_its_python_frame(self):
        logs = os.path.join(self.dir, "logs")
        proc = self.start(["--standalone", "--nproc-per-node", "3", "--hang-timeout", "3",
                           "--log-dir", logs, SCRIPT, "1"])
        wait_output(proc.stdout, "rank 1 stuck", DEADLINE)
        stuck_at = time.monotonic()
        seen = wait_output(proc.stderr, "is hung", DEADLINE)
        # Its last optimizer step was the last progress; declared within the timeout + 2 s.
        self.assertLess(time.monotonic() - stuck_at, 3 + 2, seen)
        out, err = proc.communicate(timeout=DEADLINE)
        err = seen + err
        self.assertEqual(proc.returncode, HUNG, err)
        self.assertRegex(err, r"odd one out  : rank 1 \(local rank 1, pid \d+\): .*the only rank "
                              r"whose stack differs from the others'")
        where = re.search(r"where +: (.*)", err).group(1)
        self.assertRegex(where, r"^rank 1 in `stuck_in_loader` \(torch_stuck_ddp\.py:\d+\); "
                                r"ranks 0,2 in `\w+` <- `train` \(torch_stuck_ddp\.py:\d+\)$")
        # Nothing dumped on the terminal by the workers: only the report's copy of rank 1's.
        self.assertEqual((out + err).count("Current thread"), 1, err)
        # torch 2.6 has threads of its own: they come before or after the current one.
        self.assertRegex(err, r"  rank 1's Python stack:\n(    .*\n)*?    Current thread .*\n"
                              r"      File .* in stuck_in_loader\n")
        with open(os.path.join(logs, "latest", "attempt_0", "stacks_rank_0.txt")) as f:
            self.assertIn("in train", f.read())
        pids = [int(p) for p in re.findall(r"pid (\d+)", err)]
        self.assertEqual(wait_gone(pids, 10), [])

    def test_with_two_ranks_the_one_outside_ddps_backward_is_named(self):
        # Issue 35.2: rank 0 waits in DDP's gradient all-reduce inside backward (c10d::Reducer,
        # no collective's name in its frames), rank 1 sits in its loop: rank 1 is the culprit,
        # whichever stopped beating first.
        proc = self.start(["--standalone", "--nproc-per-node", "2", "--hang-timeout", "3",
                           SCRIPT, "1"])
        wait_output(proc.stdout, "rank 1 stuck", DEADLINE)
        out, err = proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, HUNG, err)
        self.assertRegex(err, r"odd one out  : rank 1 \(local rank 1, pid \d+\): .*the only rank "
                              r"outside a collective while the others wait in one")
        self.assertRegex(err, r"  rank 1's Python stack:\n(    .*\n)*?    Current thread .*\n"
                              r"      File .* in stuck_in_loader\n")
        self.assertNotIn("first to stop", err)

    def test_get_stacks_returns_every_ranks_python_stack_while_the_job_goes_on(self):
        proc = self.start(["--standalone", "--nproc-per-node", "3", "--health-port", "0",
                           SCRIPT, "1"])
        seen = wait_output(proc.stderr, "/stacks", DEADLINE)
        url = re.search(r"health endpoint: (http://\S+)/health", seen).group(1)
        wait_output(proc.stdout, "rank 1 stuck", DEADLINE)
        for _ in range(2):  # asked twice: the workers went on after the first
            with urllib.request.urlopen(url + "/stacks", timeout=10) as r:
                self.assertEqual(r.status, 200)
                body = r.read().decode()
            for rank in range(3):
                self.assertRegex(body, rf"== rank {rank} \(local rank {rank}, pid \d+\)\n")
            self.assertRegex(body, r'File ".*torch_stuck_ddp\.py", line \d+ in stuck_in_loader')
            self.assertEqual(body.count(" in train\n"), 3, body)
            self.assertNotIn("_runner.py", body)
            with urllib.request.urlopen(url + "/status", timeout=10) as r:
                workers = json.loads(r.read())["workers"]
            self.assertEqual([w["state"] for w in workers], ["running"] * 3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=DEADLINE)
        self.assertEqual(wait_gone([w["pid"] for w in workers], 10), [])

    def test_without_the_runner_the_script_never_beats(self):
        # --no-runner: the bare interpreter counts no optimizer step; ptrun says once what starts
        # a worker's clock. The script finishes (no rank stuck), never judged.
        proc = self.start(["--standalone", "--nproc-per-node", "2", "--hang-timeout", "1",
                           "--no-runner", SCRIPT, "-1", "40"])
        out, err = proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("have made no progress yet", err)
        self.assertIn("optimizer steps are not counted", err)


class PreloadedPythonWorkers(PythonWorkers):
    """The same with every worker forked from the --preload zygote (issue 25): steps counted
    although torch.optim was imported before the script ran, stacks through the same signal."""
    EXTRA = ["--preload", "torch"]
    test_without_the_runner_the_script_never_beats = None  # --preload needs the runner


if __name__ == "__main__":
    unittest.main()
