#!/usr/bin/python3
"""Recovery in place across namespaced hosts (issue #36): `train` on 2 hosts x 2 workers under
`--restart-policy failed`; a worker killed on node2 is replaced alone on its node, the workers of
both nodes keep their processes, re-form the group with the replacement (shared memory within a
host, TCP between), hand it the state, and training resumes at the step where it stopped, ending
bit-identical to an uninterrupted 2-host run. No node restarts and no checkpoint is read.

Run as root: /usr/bin/python3 tests/hosts/test_recovery_hosts.py -v (ctest sets PTRUN_BIN and
TRAIN_BIN); skips (exit 77) without root or namespaces. Waits on process exits with bounded
deadlines and leaves no process or namespace behind.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from test_netns_hosts import ENV, argv, down_and_check, harness, main, skip_unless_possible, up  # noqa: E402

import harness as ptrun_harness  # noqa: E402

PTRUN = os.environ.get("PTRUN_BIN", str(HERE.parents[1] / "build/launcher/ptrun"))
TRAIN = os.environ.get("TRAIN_BIN", str(HERE.parents[1] / "build/examples/train/train"))
FAST = "heartbeat=0.5,keep_alive_max_attempt=3,last_call_timeout=1,join_timeout=60,close_timeout=10"
ARGS = ["--epochs", "4", "--global-batch", "48", "--dataset-size", "1536", "--seed", "3"]
CRASH_STEP = 40  # 32 steps per epoch: mid-epoch 2
DEADLINE = 120
_ports = iter(range(29700, 29750))


def start_pids(text):
    """{(rank, generation): pid} from train's "rank R (pid P) starts in generation G" lines."""
    found = re.findall(r"train: rank (\d+) \(pid (\d+)\) starts in generation (\d+)", text)
    return {(int(r), int(g)): int(p) for r, p, g in found}


class RecoveryAcrossHosts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        up(2)

    @classmethod
    def tearDownClass(cls):
        down_and_check()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-rec-")
        self.dir = self.tmp.name
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        self.tmp.cleanup()

    def run_job(self, name, ptrun_args, train_args):
        """Both hosts' ptrun; returns (their combined output, the final parameters' bytes)."""
        port = next(_ports)
        endpoint = f"{harness('name', 1).stdout.strip()}:{port}"
        out = os.path.join(self.dir, f"{name}.txt")
        env = dict(ENV, TMPDIR=ptrun_harness.SCRATCH)
        procs = []
        for host in (1, 2):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--node-rank", str(host - 1),
                    "--rdzv-endpoint", endpoint, "--rdzv-id", f"{name}-{port}", "--rdzv-conf",
                    FAST, *ptrun_args, TRAIN, *ARGS, "--final-params", out, *train_args]
            procs.append(subprocess.Popen(argv("exec", host, PTRUN, *args), env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        self.procs += procs
        text = ""
        for i, p in enumerate(procs):
            try:
                output, _ = p.communicate(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                p.kill()
                output, _ = p.communicate()
                self.fail(f"ptrun on node{i + 1} still running after {DEADLINE} s:\n{output}")
            self.assertEqual(p.returncode, 0, f"node{i + 1}:\n{output}")
            text += output
        with open(out, "rb") as f:
            return text, f.read()

    def test_a_worker_killed_on_one_host_is_replaced_there_and_no_node_restarts(self):
        _, clean = self.run_job("clean", [], [])
        log, recovered = self.run_job(
            "recovered", ["--restart-policy", "failed", "--max-restarts", "3"],
            ["--crash-at-step", str(CRASH_STEP), "--crash-rank", "3"])
        self.assertIn(f"killing itself after step {CRASH_STEP}", log)
        pids = start_pids(log)
        # Four workers in generation 0 and one replacement (rank 3, on node2) in generation 1:
        # every other worker, on both hosts, kept its process.
        self.assertEqual(sorted(pids), [(0, 0), (1, 0), (2, 0), (3, 0), (3, 1)], log)
        self.assertNotEqual(pids[(3, 1)], pids[(3, 0)])
        self.assertNotIn("restarting the worker group", log)
        self.assertNotIn("rendezvous round 1", log)  # the nodes' group was never re-formed
        self.assertIn("generation 1 joined by all 4 workers", log)
        self.assertNotIn("falling back", log)
        self.assertRegex(log, rf"generation 1 re-formed at step {CRASH_STEP} \(rank 3 replaced\)")
        self.assertNotIn("resumed from the checkpoint", log)
        self.assertEqual(recovered, clean, "the recovered run ends bit-identical to the clean one")

    def test_a_node_with_another_restart_policy_is_refused_at_join(self):
        port = next(_ports)
        endpoint = f"{harness('name', 1).stdout.strip()}:{port}"
        env = dict(ENV, TMPDIR=ptrun_harness.SCRATCH)
        procs = []
        for host, policy in ((1, "failed"), (2, "group")):
            args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-endpoint", endpoint,
                    "--rdzv-id", f"mismatch-{port}", "--rdzv-conf", FAST.replace("60", "10"),
                    "--restart-policy", policy, "true"]
            procs.append(subprocess.Popen(argv("exec", host, PTRUN, *args), env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        self.procs += procs
        output, _ = procs[1].communicate(timeout=DEADLINE)
        self.assertNotEqual(procs[1].returncode, 0, output)
        self.assertIn("--restart-policy group on", output)
        self.assertIn("differs from the store host's failed", output)
        procs[0].kill()


if __name__ == "__main__":
    main()
