#!/usr/bin/python3
"""`ptrun logs` across nodes (issue 38): on a 2-node job on namespaced hosts, the store host's
health endpoint names both nodes and the endpoint each published (--health-addr 0.0.0.0: the
address the rendezvous knows it by); `ptrun logs` asks each node and merges every rank's lines in
time order with "[host:rank] " prefixes; a stopped node is named as not answering while the other
node's lines still come; `--follow` shows lines written after it started and exits with the job's
code. Every wait is bounded by an event; nothing is left running. Run as root; skips (exit 77)
without root or namespaces. Needs PTRUN_BIN (ctest sets it).
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from test_netns_hosts import ENV, argv, down_and_check, main, skip_unless_possible, up  # noqa: E402
from test_multinode import PTRUN, Agent  # noqa: E402

import harness as ptrun_harness  # noqa: E402

DEADLINE = 60
PORT = 29790
HEALTH = 29791
# Slow enough heartbeats that a node stopped for a few seconds is not declared lost.
CONF = "heartbeat=1,keep_alive_max_attempt=30,last_call_timeout=1,join_timeout=60"
# Each rank says "early R"; on the first SIGUSR1 "late R"; on the second it exits 3. It notifies
# after each line (the line is then written: print flushes before the notification).
WORKER = """import os, signal, sys
rank = int(os.environ["RANK"])
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
def say(word):
    print(f"{word} {rank}", flush=True)
    with open(os.environ["NOTIFY"], "w") as f:
        f.write(f"{word} {rank}\\n")
say("early")
signal.sigwait([signal.SIGUSR1])
say("late")
signal.sigwait([signal.SIGUSR1])
sys.exit(3)
"""


class JobLogs(ptrun_harness.AgentsTestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        up(2)

    @classmethod
    def tearDownClass(cls):
        down_and_check()

    def logs(self, *args):
        """`ptrun logs` run on node1: (exit code, stdout, stderr)."""
        res = subprocess.run(argv("exec", 1, PTRUN, "logs", f"127.0.0.1:{HEALTH}", *args),
                             env=ENV, capture_output=True, text=True, timeout=DEADLINE)
        return res.returncode, res.stdout, res.stderr

    def wait_words(self, words):
        got = sorted(" ".join(w) for w in self.notifier.wait_lines(len(words)))
        self.assertEqual(got, sorted(words))

    def test_every_nodes_lines_merged_followed_and_a_stopped_node_named(self):
        script = os.path.join(self.dir, "worker.py")
        with open(script, "w") as f:
            f.write(WORKER)
        agents = []
        for h in (1, 2):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint",
                    f"node1:{PORT}", "--rdzv-id", "joblogs", "--rdzv-conf", CONF,
                    "--health-port", str(HEALTH), "--health-addr", "0.0.0.0", "--tee",
                    "3", "--log-dir", os.path.join(self.dir, f"logs{h}"), "--no-python",
                    "/usr/bin/python3", script]
            agents.append(Agent(h, args, env={"NOTIFY": self.notifier.path}))
            self.procs.append(agents[-1].proc)
        self.wait_words([f"early {r}" for r in range(4)])

        # The store host names node2 once node2 published its status (soon after its start).
        end = time.monotonic() + DEADLINE
        while True:
            code, out, err = self.logs()
            if code == 0 and out.count("] early") == 4:
                break
            self.assertLess(time.monotonic(), end, f"never every rank's lines: {out}{err}")
            time.sleep(0.2)
        lines = sorted(out.splitlines())
        self.assertEqual(lines, ["[node1:0] early 0", "[node1:1] early 1", "[node2:2] early 2",
                                 "[node2:3] early 3"])

        # node2's ptrun stopped: named, with the address it published; node1's lines still come.
        os.kill(agents[1].proc.pid, signal.SIGSTOP)
        try:
            code, out, err = self.logs()
        finally:
            os.kill(agents[1].proc.pid, signal.SIGCONT)
        self.assertEqual(code, 1, out + err)
        self.assertRegex(err, rf"ptrun logs: node 1 \(10\.[0-9.]+:{HEALTH}\) did not answer: ")
        self.assertEqual(sorted(out.splitlines()), ["[node1:0] early 0", "[node1:1] early 1"])

        follow = subprocess.Popen(argv("exec", 1, PTRUN, "logs", f"127.0.0.1:{HEALTH}",
                                       "--follow"), env=ENV, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.procs.append(follow)
        seen = ptrun_harness.wait_output(follow.stdout, "early", DEADLINE)
        while seen.count("early") < 4 or not seen.endswith("\n"):
            seen += ptrun_harness.wait_output(follow.stdout, "\n", DEADLINE)
        # Lines written after it started: node2's first, then node1's. node1's are written only
        # once the follower has shown node2's, which node2's relay had captured (timestamped)
        # by then: a worker's own notice would come before its relay reads the line.
        agents[1].proc.send_signal(signal.SIGUSR1)
        self.wait_words(["late 2", "late 3"])
        while "[node2:2] late 2\n" not in seen or "[node2:3] late 3\n" not in seen:
            seen += ptrun_harness.wait_output(follow.stdout, "\n", DEADLINE)
        agents[0].proc.send_signal(signal.SIGUSR1)
        self.wait_words(["late 0", "late 1"])
        while seen.count("late") < 4 or not seen.endswith("\n"):
            seen += ptrun_harness.wait_output(follow.stdout, "\n", DEADLINE)
        self.assertIn("[node2:2] late 2\n", seen)
        self.assertIn("[node1:0] late 0\n", seen)

        # Merged in the time each line was captured: node2's late lines before node1's.
        code, out, err = self.logs()
        self.assertEqual(code, 0, err)
        late = [l for l in out.splitlines() if " late " in l]
        self.assertEqual(sorted(late[:2]), ["[node2:2] late 2", "[node2:3] late 3"])
        self.assertEqual(sorted(late[2:]), ["[node1:0] late 0", "[node1:1] late 1"])

        # The job ends with 3: --follow exits with it.
        for a in agents:
            a.proc.send_signal(signal.SIGUSR1)
        for a in agents:
            code, err = a.finish(DEADLINE)
            self.assertEqual(code, 3, err)
        rest, ferr = follow.communicate(timeout=DEADLINE)
        self.assertEqual(follow.returncode, 3, seen + rest + ferr)


if __name__ == "__main__":
    main()
