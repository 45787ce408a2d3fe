"""The start-up timeline (issue 26): the ready line once per attempt with true numbers, trace.json
in the run directory (every rank's phases in order, attempts that do not overlap), the events
socket's sender check, and a heartbeat writer's first beat. Real torch DDP (gloo) through the
runner; PTRUN_TORCH_FLAVOUR picks the torch (torch_flavour.py)."""
import glob
import json
import os
import re
import socket
import subprocess
import time
import unittest
import urllib.request

from harness import PTRUN, TorchTestCase, _env, run_ptrun
from torch_flavour import FLAVOUR

C_WRITER = os.environ.get("HEARTBEAT_C_WRITER", "build/tests/unit/progress/heartbeat_c_writer")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_ddp_train.py")
READY = re.compile(r"(attempt (\d+): )?(\d+) ranks? on (\d+) nodes? ready (\d+(?:\.\d+)? m?s) after (start|the restart): "
                   r"spawn (\S+ m?s), python\+imports (\S+ m?s) \(slowest: rank (\d+) on (\S+), (\S+ m?s)\), "
                   r"process group (\S+ m?s), first step \+(\S+ m?s)$", re.M)
# What each rank does, in order (chrome_trace.cpp).
SPANS = ["spawn", "python start", "python+imports", "process group", "until first step", "running"]


def seconds(text):
    value, unit = text.split()
    return float(value) / (1000 if unit == "ms" else 1)


class Timeline(TorchTestCase):
    def setUp(self):
        super().setUp()
        self.env = {"PYTHON_EXEC": FLAVOUR.python, "GLOO_SOCKET_IFNAME": "lo", **FLAVOUR.env()}
        self.logs = os.path.join(self.dir, "logs")

    def run_job(self, *args, script=SCRIPT, script_args=()):
        started = time.monotonic()
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--log-dir", self.logs, *args, script,
                         os.path.join(self.dir, "out.json"), *script_args],
                        env=self.env, timeout=240, via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        return res, time.monotonic() - started

    def trace(self):
        paths = glob.glob(os.path.join(self.logs, "*_*", "trace.json"))
        self.assertEqual(len(paths), 1, paths)
        with open(paths[0]) as f:
            return json.load(f), os.path.dirname(paths[0])

    def spans_by_rank(self, trace):
        """{(rank, attempt): [(name, ts, dur), ...]} of the rank tracks."""
        out = {}
        for e in trace["traceEvents"]:
            if e["ph"] == "X":
                attempt = int(e["cat"].split()[1])
                out.setdefault((e["tid"] - 1, attempt), []).append((e["name"], e["ts"], e["dur"]))
        return out

    def test_ready_line_and_trace_of_a_ddp_job(self):
        res, wall = self.run_job()
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        lines = READY.findall(res.stderr)
        self.assertEqual(len(lines), 1, res.stderr[-3000:])
        _, _, ranks, nodes, total, since, spawn, python, slow_rank, host, slow_s, pg, first = lines[0]
        self.assertEqual((ranks, nodes, since), ("2", "1", "start"))
        self.assertIn(slow_rank, ("0", "1"))
        phases = [seconds(t) for t in (spawn, python, pg, first)]
        # True numbers: the phases add up to the total (each rounded), which ptrun's own run bounds.
        self.assertAlmostEqual(sum(phases), seconds(total), delta=0.02 + 0.01 * seconds(total))
        self.assertLess(seconds(total), wall)
        self.assertGreater(seconds(python), 0.05, "python+imports includes import torch")
        self.assertLessEqual(seconds(python), seconds(slow_s) + 0.01)

        trace, run_dir = self.trace()
        with open(os.path.join(run_dir, "ptrun.log")) as f:
            self.assertEqual(len(READY.findall(re.sub(r"^\S+ ", "", f.read(), flags=re.M))), 1,
                             "the run log holds the ready line")
        spans = self.spans_by_rank(trace)
        self.assertEqual(sorted(spans), [(0, 0), (1, 0)])
        for key, list_ in spans.items():
            self.assertEqual([name for name, _, _ in list_], SPANS, key)
            for (_, ts, dur), (_, next_ts, _) in zip(list_, list_[1:]):
                self.assertAlmostEqual(ts + dur, next_ts, delta=1, msg=f"{key}: phases follow each other")
        names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
        self.assertEqual(names, {"ptrun", "rank 0", "rank 1"})
        instants = [e["name"] for e in trace["traceEvents"] if e["ph"] == "i"]
        self.assertEqual(instants[0], "agent_start")
        self.assertEqual(instants[-1], "exit")

    def test_a_restart_gets_its_own_ready_line_and_attempt(self):
        script = os.path.join(self.dir, "fail_once.py")
        with open(script, "w") as f:
            f.write(f"""import os, sys
if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0' and os.environ['RANK'] == '1':
    import torch.distributed as dist
    dist.init_process_group('gloo', timeout=__import__('datetime').timedelta(seconds=60))
    sys.exit(3)
sys.argv = [{SCRIPT!r}, sys.argv[1]]
exec(compile(open({SCRIPT!r}).read(), {SCRIPT!r}, 'exec'))
""")
        res, _ = self.run_job("--max-restarts", "1", script=script)
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        lines = READY.findall(res.stderr)
        self.assertEqual([(attempt, since) for _, attempt, _, _, _, since, *_ in lines], [("1", "the restart")],
                         res.stderr[-3000:])
        trace, _ = self.trace()
        spans = self.spans_by_rank(trace)
        self.assertEqual(sorted(spans), [(0, 0), (0, 1), (1, 0), (1, 1)])
        for rank in (0, 1):
            first, second = spans[(rank, 0)], spans[(rank, 1)]
            self.assertLessEqual(first[-1][1] + first[-1][2], second[0][1] + 1, f"rank {rank}: attempts overlap")
            self.assertEqual([n for n, _, _ in second], SPANS)
        restarts = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["name"] == "restart"]
        self.assertEqual(len(restarts), 1)
        self.assertIn("worker rank 1", restarts[0]["args"]["detail"])

    def test_missing_ranks_are_named_at_the_deadline(self):
        script = os.path.join(self.dir, "one_steps.py")
        with open(script, "w") as f:
            f.write("""import os, sys, time, torch
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
if os.environ['RANK'] == '0':
    opt.step()
    time.sleep(30)  # killed by the test's end: ptrun stops the job once the line is said
""")
        proc = subprocess.Popen(FLAVOUR.command([PTRUN, "--standalone", "--nproc-per-node", "2", "--log-dir", self.logs,
                                                 script], binds=[self.dir]),
                                env=_env({**self.env, "PTRUN_READY_DEADLINE": "1"}),
                                stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        try:
            deadline = time.monotonic() + 60
            said = ""
            while "not ready" not in said and time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line:
                    break
                said += line
            self.assertRegex(said, r"2 ranks on 1 node not ready \d+\.\d+ s after start: no progress yet from "
                                   r"rank 1 on \S+")
        finally:
            proc.terminate()
            proc.communicate(timeout=60)

    def test_status_and_metrics_carry_the_ready_attempt(self):
        script = os.path.join(self.dir, "step_then_wait.py")
        gate = os.path.join(self.dir, "gate")
        with open(script, "w") as f:
            f.write(f"""import os, time, torch
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
opt.step()
while not os.path.exists({gate!r}):
    time.sleep(0.05)
""")
        proc = subprocess.Popen(FLAVOUR.command([PTRUN, "--standalone", "--nproc-per-node", "2", "--health-port", "0",
                                                 script], binds=[self.dir]),
                                env=_env(self.env), stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        try:
            said, deadline = "", time.monotonic() + 120
            while " ready " not in said and time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line:
                    break
                said += line
            url = re.search(r"health endpoint: (http://\S+)/health", said).group(1)
            line = re.search(r"info: (2 ranks on 1 node ready .*)", said).group(1)
            with urllib.request.urlopen(url + "/status", timeout=10) as r:
                ready = json.load(r)["ready"]
            self.assertEqual((ready["attempt"], ready["line"]), (0, line))
            self.assertEqual([name for name, _ in ready["phases"]], ["spawn", "first_progress"])
            self.assertAlmostEqual(sum(s for _, s in ready["phases"]), ready["seconds"], places=6)
            with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
                metrics = r.read().decode()
            self.assertRegex(metrics, r'(?m)^ptrun_startup_phase_seconds\{phase="first_progress"\} [0-9.e-]+$')
            self.assertRegex(metrics, r"(?m)^ptrun_startup_seconds [0-9.e-]+$")
            table = subprocess.run([PTRUN, "status", url.removeprefix("http://")], capture_output=True, text=True,
                                   timeout=30)
            self.assertEqual(table.returncode, 0, table.stderr)
            self.assertIn("ready        : " + line + "\n", table.stdout)
        finally:
            open(gate, "w").close()
            proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)

    def test_events_from_others_are_ignored(self):
        """Only a worker of the attempt (or its process group) speaks for a rank: a datagram from
        elsewhere, and junk, change nothing; the job still ends as its workers do."""
        script = os.path.join(self.dir, "spoof.py")
        with open(script, "w") as f:
            f.write("""import os, socket, subprocess, sys
fd = int(os.environ["PTRUN_EVENTS_SOCKET"].removeprefix("fd:"))
s = socket.socket(fileno=os.dup(fd))
for junk in (b"", b"x" * 4000, b"ptrun-event 1 spawn 1", b"ptrun-event 1 first_progress zz"):
    s.send(junk)
# Another session's process (not in the worker's process group), given the channel on purpose,
# claims a first progress.
subprocess.run(["setsid", sys.executable, "-c",
                "import socket,sys,time; s=socket.socket(fileno=int(sys.argv[1])); "
                "s.send(b'ptrun-event 1 first_progress %d' % time.monotonic_ns())", str(fd)],
               pass_fds=(fd,), check=True)
""")
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--log-dir", self.logs, script],
                        env=self.env, timeout=120, via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        self.assertNotIn("ready", res.stderr)
        trace, _ = self.trace()
        firsts = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] in ("until first step", "running")]
        self.assertEqual(firsts, [], "no rank made progress")

    def test_the_events_channel_has_no_name_for_others_to_flood(self):
        """Issue 35.7: the channel was an abstract socket any local process could flood (the ready
        line and trace.json's first steps lost). Now the workers inherit it and nothing names it:
        /proc/net/unix lists no ptrun events socket while the job runs, and the job is ready."""
        script = os.path.join(self.dir, "look.py")
        with open(script, "w") as f:
            f.write("""import os, sys
# One write a line: the two ranks' lines must not interleave.
sys.stdout.write("channel " + os.environ["PTRUN_EVENTS_SOCKET"] + "\\n")
with open("/proc/net/unix") as f:
    sys.stdout.write(f"named {sum('ptrun-events' in line for line in f)}\\n")
sys.stdout.flush()
import runpy
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
""")
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--log-dir", self.logs, script, SCRIPT,
                         os.path.join(self.dir, "out.json")],
                        env=self.env, timeout=240, via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        self.assertEqual(res.stdout.count("channel fd:4\n"), 2, res.stdout)
        self.assertEqual(res.stdout.count("named 0\n"), 2, res.stdout)
        self.assertRegex(res.stderr, READY)

    def test_a_c_heartbeat_writers_first_beat(self):
        """A worker that beats through heartbeat.h (records exist with --hang-timeout) reports
        its first progress: the ready line without a process group."""
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--log-dir", self.logs, "--hang-timeout", "60",
                         C_WRITER, "3"], timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        self.assertRegex(res.stderr, r"2 ranks on 1 node ready \S+ m?s after start: spawn \S+ m?s, first progress "
                                     r"\+\S+ m?s \(slowest: rank \d on \S+, \S+ m?s\)")


if __name__ == "__main__":
    unittest.main()
