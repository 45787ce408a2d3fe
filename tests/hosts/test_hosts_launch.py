#!/usr/bin/python3
"""One command, many hosts (issue 38): `ptrun --hosts node1,node2,node3` started once, in the root
namespace, reaches each namespaced host through a remote shell that is not ssh (a script entering
the host's namespace, netns-hosts.sh exec I sh -c "$2", as `ssh HOST COMMAND` runs COMMAND) and
starts one ptrun agent there. Checks the workers' RANK, WORLD_SIZE, GROUP_RANK and MASTER_ADDR, the
host prefix on every line, a failing rank's code with one failure report, Ctrl-C and kill -9 of
the launching ptrun leaving no process on any host, and an unreachable host's clear error.
Every wait is on an event (worker start lines on a FIFO, process exits through pidfds) with a
deadline. Run as root; skips (exit 77) without root or namespaces.
"""
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from test_netns_hosts import ENV, PREFIX, SCRIPT, down_and_check, main, skip_unless_possible, up  # noqa: E402

import harness as ptrun_harness  # noqa: E402
from harness import Notifier, pid_alive, read_dumps, wait_gone  # noqa: E402

PTRUN = os.environ.get("PTRUN_BIN", str(HERE.parents[1] / "build/launcher/ptrun"))
FAKE = os.environ.get("FAKE_WORKER", str(HERE.parents[1] / "build/tests/fixtures/fake_worker"))
FAST = "heartbeat=0.5,keep_alive_max_attempt=3,last_call_timeout=1,join_timeout=20,close_timeout=5"
DEADLINE = 60
STOP_BOUND = 30  # seconds from the launcher's end to nothing left on any host
# The unreachable case: the other hosts' ptruns, still reaching the rendezvous (join_timeout 20 s
# here), stop as soon as the launching ptrun closes their pipes.
UNREACHABLE_BOUND = 12
KILL_BOUND = 20  # a second Ctrl-C: from it to the launcher's end (the workers' grace: 600 s)
HOSTS = (1, 2, 3)
_ports = iter(range(29720, 29800))

# The remote shell: `ns-shell HOST COMMAND`, as ssh takes them; COMMAND runs under sh on the host.
REMOTE_SHELL = """#!/bin/sh
case "$1" in node[0-9]*) i=${1#node} ;; *) echo "ns-shell: $1: unknown host" >&2; exit 255 ;; esac
exec "%s" exec "$i" sh -c "$2"
"""


def host_pids(i):
    """Every process in host i's namespace."""
    out = subprocess.run(["ip", "netns", "pids", f"{PREFIX}h{i}"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def hosts_up():
    """Brings up the 3 namespaced hosts and writes the namespace-entering remote shell; returns
    (its directory, its path). Skips the class where namespaces cannot be made."""
    skip_unless_possible()
    shell_dir = tempfile.mkdtemp(prefix="ptrun-ns-shell-")
    shell = os.path.join(shell_dir, "ns-shell")
    with open(shell, "w") as f:
        f.write(REMOTE_SHELL % SCRIPT)
    os.chmod(shell, stat.S_IRWXU)
    up(3)
    return shell_dir, shell


def hosts_down(shell_dir):
    """Takes the hosts down (checking nothing is left on them) and removes the remote shell."""
    down_and_check()
    shutil.rmtree(shell_dir, True)


class HostsLaunch(unittest.TestCase):
    VIA = ()  # what the launching ptrun runs under (test_hosts_ssh.py: the head host)

    @classmethod
    def setUpClass(cls):
        cls.shell_dir, cls.shell = hosts_up()

    @classmethod
    def tearDownClass(cls):
        hosts_down(cls.shell_dir)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-hosts-")
        self.dir = self.tmp.name
        self.notifier = Notifier()
        self.port = next(_ports)
        self.proc = None

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        self.notifier.close()
        self.tmp.cleanup()

    def launch(self, hosts="node1,node2,node3", extra=(), worker=(), program=None):
        program = program or [FAKE, "--notify", self.notifier.path, "--dump", self.dir, *worker]
        args = [*self.VIA, PTRUN, "--hosts", hosts, "--nproc-per-node", "2", "--remote-shell", self.shell,
                "--rdzv-endpoint", f"node1:{self.port}", "--rdzv-conf", FAST, *extra, *program]
        env = dict(ENV, TMPDIR=ptrun_harness.SCRATCH)
        self.proc = subprocess.Popen(args, env=env, cwd=self.dir, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        return self.proc

    def finish(self, timeout=DEADLINE):
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"the launching ptrun still ran after {timeout}s:\n{out}\n{err}")
        return self.proc.returncode, out, err

    def assert_hosts_empty(self, timeout=STOP_BOUND):
        """Nothing of the job is left on any host (every process in the namespaces is gone)."""
        pids = [p for i in HOSTS for p in host_pids(i)]
        self.assertEqual(wait_gone(pids, timeout), [], "processes left on the hosts")

    def assert_prefixed(self, text, hosts=HOSTS):
        launcher = os.uname().nodename
        names = "|".join(f"node{i}" for i in hosts)
        pattern = re.compile(rf"^\[(ptrun )?({names})[:\]]|^\[ptrun {re.escape(launcher)}:\d+\] ")
        for line in text.splitlines():
            self.assertRegex(line, pattern, f"a line without its host: {line!r}")

    def test_three_hosts_two_workers_each(self):
        self.launch(worker=["--print", "2"])
        code, out, err = self.finish()
        self.assertEqual(code, 0, out + err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(6)])
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            with self.subTest(rank=rank):
                self.assertEqual(env["RANK"], str(rank))
                self.assertEqual(env["WORLD_SIZE"], "6")
                self.assertEqual(env["GROUP_RANK"], str(rank // 2))  # host order
                self.assertEqual(env["LOCAL_RANK"], str(rank % 2))
                self.assertEqual(env["MASTER_ADDR"], "node1")
        for rank in range(6):  # each worker's lines, prefixed by its host and rank
            self.assertIn(f"[node{rank // 2 + 1}:{rank}] out line 1 from rank {rank}\n", out)
            self.assertIn(f"[node{rank // 2 + 1}:{rank}] err line 1 from rank {rank}\n", err)
        self.assert_prefixed(out)
        self.assert_prefixed(err)
        self.assertNotIn("--from-launcher: started", out)
        self.assert_hosts_empty()

    def test_slots_set_each_hosts_workers(self):
        self.launch(hosts="node1:1,node2:3")
        code, out, err = self.finish()
        self.assertEqual(code, 0, out + err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        self.assertEqual(dumps[(0, 0)]["env"]["LOCAL_WORLD_SIZE"], "1")
        self.assertEqual(dumps[(3, 0)]["env"]["GROUP_RANK"], "1")
        self.assertEqual(dumps[(3, 0)]["env"]["LOCAL_WORLD_SIZE"], "3")

    def test_a_failing_rank_gives_its_code_and_one_report(self):
        self.launch(worker=["--fail-rank", "3", "--exit", "7"])
        code, out, err = self.finish()
        self.assertEqual(code, 7, out + err)
        self.assertEqual(err.count("ptrun: worker group failed"), 1, err)
        report = [line for line in err.splitlines() if "worker group failed" in line]
        self.assertTrue(report[0].startswith("[node2] "), report)
        self.assertRegex(err, r"\[node2\]\s+rank\s+: 3 \(local rank 1\)")
        self.assertNotIn("ptrun: job failed:", err)  # the other nodes' summaries: not repeated
        self.assert_prefixed(out)
        self.assert_prefixed(err)
        self.assert_hosts_empty()

    def test_ctrl_c_leaves_nothing_on_any_host(self):
        self.launch(worker=["--hang"])
        self.notifier.wait_lines(6)
        self.proc.send_signal(signal.SIGINT)
        code, out, err = self.finish()
        self.assertEqual(code, 128 + signal.SIGINT, out + err)
        self.assertIn("stopping every host's ptrun", err)
        self.assert_hosts_empty()

    def wait_stderr_count(self, pattern, count, timeout=DEADLINE):
        """Reads the launcher's stderr until `pattern` matched `count` lines; returns the text."""
        fd, seen, end = self.proc.stderr.fileno(), "", time.monotonic() + timeout
        while len(re.findall(pattern, seen)) < count:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError(f"{count} lines {pattern!r} did not come; got {seen!r}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"stderr closed before {count} lines {pattern!r}: {seen!r}")
            seen += chunk.decode(errors="replace")
        return seen

    def test_a_second_ctrl_c_kills_the_workers_at_once_on_every_host(self):
        # Workers ignoring SIGINT and SIGTERM: the first Ctrl-C leaves them in their grace (600 s)
        # on every host, the second kills them at once, as on one node.
        self.launch(extra=["--shutdown-timeout", "600"], worker=["--hang", "--ignore-term"])
        workers = [int(w[3]) for w in self.notifier.wait_lines(6)]
        self.proc.send_signal(signal.SIGINT)
        # each host's ptrun stopping them (an older ptrun: on its pipe's end, as on SIGTERM)
        stopping = r"received SIGINT: stopping the workers|stopping as on SIGTERM"
        first = self.wait_stderr_count(stopping, len(HOSTS))
        self.assertEqual([w for w in workers if not pid_alive(w)], [], "one ended in its grace")
        time.sleep(0.15)  # a person's second Ctrl-C: past the 100 ms in which copies count once
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        code, out, err = self.finish(KILL_BOUND)
        err = first + err
        self.assertEqual(code, 128 + signal.SIGINT, out + err)
        self.assertIn("press Ctrl-C again to kill the workers at once", err)
        self.assertEqual(err.count("received SIGINT again: killing the workers now (SIGKILL)"),
                         len(HOSTS), err)
        self.assertEqual(wait_gone(workers, STOP_BOUND), [], "workers left running")
        self.assertLess(time.monotonic() - t0, KILL_BOUND)
        self.assert_hosts_empty()

    def test_kill_9_of_the_launcher_leaves_nothing_within_the_bound(self):
        self.launch(worker=["--hang"])
        starts = self.notifier.wait_lines(6)
        workers = [int(w[3]) for w in starts]
        self.proc.kill()
        self.proc.communicate()
        t0 = time.monotonic()
        self.assertEqual(wait_gone(workers, STOP_BOUND), [], "workers left running")
        self.assert_hosts_empty()
        self.assertLess(time.monotonic() - t0, STOP_BOUND)

    def test_an_unreachable_host_is_a_clear_error_and_leaves_nothing(self):
        t0 = time.monotonic()
        self.launch(hosts="node1,nowhere,node3")
        code, out, err = self.finish()
        self.assertEqual(code, 255, out + err)
        self.assertLess(time.monotonic() - t0, UNREACHABLE_BOUND)
        self.assertIn("ptrun: error: host nowhere: the remote shell exited with code 255 before "
                      "ptrun started there: ns-shell: nowhere: unknown host", err)
        self.assertIn("[nowhere] ns-shell: nowhere: unknown host", err)
        self.assert_hosts_empty()

    def test_no_ptrun_on_the_host_is_a_clear_error(self):
        self.launch(hosts="node1,node2", extra=["--remote-ptrun", "/nonexistent/ptrun"])
        code, out, err = self.finish()
        self.assertEqual(code, 127, out + err)
        self.assertRegex(err, r"ptrun: error: host node[12]: the remote shell exited with code 127 "
                              r"before ptrun started there: .*/nonexistent/ptrun")
        self.assert_hosts_empty()

    def test_hostile_arguments_reach_the_workers_unchanged(self):
        marker = os.path.join(self.dir, "pwned")
        hostile = [f"$(touch {marker})", f"`touch {marker}`; touch {marker}", "'q' \"dq\" \\ *",
                   "a\nb", "", "-x"]
        code_text = ("import json, os, sys; json.dump(sys.argv[2:], "
                     "open(os.path.join(sys.argv[1], 'argv.' + os.environ['RANK']), 'w'))")
        self.launch(hosts="node1,node2", extra=["--no-python"],
                    program=["/usr/bin/python3", "-c", code_text, self.dir, *hostile])
        code, out, err = self.finish()
        self.assertEqual(code, 0, out + err)
        self.assertFalse(os.path.exists(marker), "a shell ran part of an argument")
        for rank in range(4):
            with open(os.path.join(self.dir, f"argv.{rank}")) as f:
                self.assertEqual(json.load(f), hostile, f"rank {rank}")


if __name__ == "__main__":
    main()
