#!/usr/bin/python3
"""Recovery in place across namespaced hosts (issue #36): `train` on 2 hosts x 2 workers under
`--restart-policy failed`; a worker killed on node2 is replaced alone on its node, the workers of
both nodes keep their processes, re-form the group with the replacement (shared memory within a
host, TCP between), hand it the state, and training resumes at the step where it stopped, ending
bit-identical to an uninterrupted 2-host run. No node restarts and no checkpoint is read. A node
lost (its agent killed -9) while a spare waits: the spare takes its place as a new generation of
the same ranks and node1's workers keep their processes. A node frozen (agent and workers
stopped) until a spare took its place stops its workers when it thaws, and the job still ends
bit-identical.

Run as root: /usr/bin/python3 tests/hosts/test_recovery_hosts.py -v (ctest sets PTRUN_BIN and
TRAIN_BIN); skips (exit 77) without root or namespaces. Waits on process exits with bounded
deadlines and leaves no process or namespace behind.
"""
import os
import re
import signal
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
SPARE_TRAIN = ["--epochs", "12", *ARGS[2:]]  # long enough to lose a node mid-run
DEADLINE = 120
_ports = iter(range(29700, 29750))


def process_tree(pid):
    """`pid` and its descendants, parents first."""
    found, i = [pid], 0
    while i < len(found):
        try:
            children = Path(f"/proc/{found[i]}/task/{found[i]}/children").read_text().split()
        except OSError:
            children = []
        found += [int(c) for c in children]
        i += 1
    return found


def start_pids(text):
    """{(rank, generation): pid} from train's "rank R (pid P) starts in generation G" lines."""
    found = re.findall(r"train: rank (\d+) \(pid (\d+)\) starts in generation (\d+)", text)
    return {(int(r), int(g)): int(p) for r, p, g in found}


def thaw(pids):
    """SIGCONT to `pids`, parents first. A process already gone was ended by a parent thawed
    before it (a thawed agent that learns it was replaced stops and reaps its workers at once),
    which a loaded machine can let happen between two of these calls."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


class RecoveryAcrossHosts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        up(3)

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
            if p.stdout.closed:  # communicate() already read it to the end
                p.wait()
            else:
                p.communicate()
        self.tmp.cleanup()

    def agent(self, host, name, port, ptrun_args, train_args, train=ARGS, node_rank=True):
        """ptrun on node`host` for job `name`; output and stderr on one pipe."""
        endpoint = f"{harness('name', 1).stdout.strip()}:{port}"
        out = os.path.join(self.dir, f"{name}.txt")
        rank = ["--node-rank", str(host - 1)] if node_rank else []
        args = ["--nnodes", "2", "--nproc-per-node", "2", *rank, "--rdzv-endpoint", endpoint,
                "--rdzv-id", f"{name}-{port}", "--rdzv-conf", FAST, *ptrun_args, TRAIN, *train,
                "--final-params", out, *train_args]
        env = dict(ENV, TMPDIR=ptrun_harness.SCRATCH)
        p = subprocess.Popen(argv("exec", host, PTRUN, *args), env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def finish(self, procs, seen=None):
        """Waits for each of `procs` to exit 0; returns their output (after `seen`'s)."""
        text = "".join((seen or {}).values())
        for p in procs:
            try:
                output, _ = p.communicate(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                p.kill()
                output, _ = p.communicate()
                self.fail(f"ptrun still running after {DEADLINE} s:\n{text}{output}")
            self.assertEqual(p.returncode, 0, f"{text}{output}")
            text += output
        return text

    def params(self, name):
        with open(os.path.join(self.dir, f"{name}.txt"), "rb") as f:
            return f.read()

    def run_job(self, name, ptrun_args, train_args, train=ARGS):
        """Both hosts' ptrun; returns (their combined output, the final parameters' bytes)."""
        port = next(_ports)
        procs = [self.agent(h, name, port, ptrun_args, train_args, train) for h in (1, 2)]
        return self.finish(procs), self.params(name)

    def start_with_spare(self, name):
        """Job `name` under --restart-policy failed: node1 and node2 its members, node3 a spare;
        returns (node1, node2, node3, {host: output read so far}) once rank 0 finished epoch 2."""
        port = next(_ports)
        policy = ["--restart-policy", "failed", "--max-restarts", "3"]
        node1, node2 = (self.agent(h, name, port, policy, [], SPARE_TRAIN, node_rank=False)
                        for h in (1, 2))
        seen = {1: ptrun_harness.wait_output(node1.stdout, "rendezvous round 0 closed")}
        spare = self.agent(3, name, port, policy, [], SPARE_TRAIN, node_rank=False)
        seen[3] = ptrun_harness.wait_output(spare.stdout, "this node waits as a spare")
        seen[1] += ptrun_harness.wait_output(node1.stdout, "epoch 2/12")
        return node1, node2, spare, seen

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

    def test_a_lost_node_is_replaced_by_a_spare_and_the_other_node_keeps_running(self):
        clean = self.run_job("clean-long", [], [], SPARE_TRAIN)[1]
        node1, node2, spare, seen = self.start_with_spare("spare")
        os.kill(node2.pid, signal.SIGKILL)  # its workers die with it (PDEATHSIG)
        node2.communicate()
        log = self.finish([node1, spare], seen)
        pids = start_pids(log)
        # node1's two workers kept their processes; node3 started ranks 2 and 3 in generation 1.
        self.assertEqual(sorted(r for r, g in pids if g == 0), [0, 1], log)
        self.assertEqual(sorted((r, g) for r, g in pids if g > 0), [(2, 1), (3, 1)], log)
        self.assertIn("the spare node3 takes its place in round 0", log)
        self.assertIn("taking the place of a lost node in round 0: ranks 2, 3 start in "
                      "generation 1", log)
        self.assertNotIn("rendezvous round 1", log)
        self.assertIn("generation 1 joined by all 4 workers", log)
        self.assertRegex(log, r"generation 1 re-formed at step \d+ \(ranks? 2,3 replaced\)")
        self.assertEqual(self.params("spare"), clean, "bit-identical to the uninterrupted run")

    def test_a_frozen_node_whose_place_went_to_a_spare_stops_its_workers_when_it_thaws(self):
        # A node declared lost while only frozen (a paused VM: its agent and workers stopped)
        # must not go on with the ranks the spare now runs: its next heartbeat says it was
        # replaced, and it stops its workers.
        clean = self.run_job("clean-paused", [], [], SPARE_TRAIN)[1]
        node1, node2, spare, seen = self.start_with_spare("paused")
        frozen = process_tree(node2.pid)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            seen[1] += ptrun_harness.wait_output(node1.stdout, "takes its place in round 0")
        finally:
            thaw(frozen)
        out2, _ = node2.communicate(timeout=DEADLINE)
        self.assertNotEqual(node2.returncode, 0, out2)
        self.assertIn("the rendezvous declared this node lost", out2)
        self.assertIn("gave its place to another node; stopping the workers", out2)
        log = self.finish([node1, spare], seen)
        pids = start_pids(log + out2)
        self.assertEqual(sorted(r for r, g in pids if g == 0), [0, 1, 2, 3], log + out2)
        self.assertEqual(sorted((r, g) for r, g in pids if g > 0), [(2, 1), (3, 1)], log)
        self.assertIn("generation 1 joined by all 4 workers", log)
        self.assertNotIn("rendezvous round 1", log)
        self.assertEqual(self.params("paused"), clean, "bit-identical to the uninterrupted run")

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
