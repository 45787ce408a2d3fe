#!/usr/bin/python3
"""The c10d rendezvous through a shared file (--rdzv-conf store_type=file, issue 37) on namespaced
hosts that share a directory (network namespaces share the file system, as nodes share an NFS
mount): nodes meet without a rendezvous port, and when the agent that coordinates is killed,
another takes the role over from the state in the file.

Run as root: /usr/bin/python3 tests/hosts/test_file_rdzv.py -v (PTRUN_BIN and FAKE_WORKER from
ctest); skips (exit 77) without root or namespaces. Waits on events with bounded deadlines.
"""
import os
import select
import signal
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from test_multinode import DEADLINE, FAKE, Agent  # noqa: E402
from test_netns_hosts import down_and_check, harness, main, skip_unless_possible, up  # noqa: E402

from harness import Notifier, read_dumps, wait_gone  # noqa: E402

FAST = ("heartbeat=0.5,keep_alive_max_attempt=3,last_call_timeout=1,join_timeout=60,"
        "close_timeout=10,store_type=file")


def first_saying(agents, text, timeout=DEADLINE):
    """The agent whose stderr says `text` first (read as it comes, kept in each agent's err)."""
    end = time.monotonic() + timeout
    by_fd = {a.proc.stderr.fileno(): a for a in agents}
    while time.monotonic() < end:
        if found := [a for a in agents if text in a.err]:
            return found[0]
        ready, _, _ = select.select(list(by_fd), [], [], max(0.0, end - time.monotonic()))
        for fd in ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                del by_fd[fd]
                continue
            by_fd[fd].err += chunk.decode(errors="replace")
    return None


class FileRendezvous(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        up(3)

    @classmethod
    def tearDownClass(cls):
        down_and_check()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-file-rdzv-")
        self.dir = self.tmp.name
        self.shared = os.path.join(self.dir, "shared")
        os.mkdir(self.shared)
        self.rdzv_file = os.path.join(self.shared, "rdzv")
        self.notifier = Notifier()
        self.agents = []

    def tearDown(self):
        for a in self.agents:
            if a.proc.poll() is None:
                a.proc.kill()
            a.proc.communicate()
        self.notifier.close()
        self.tmp.cleanup()

    def start(self, hosts, nnodes, worker, extra=()):
        for h in hosts:
            args = ["--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                    "--rdzv-endpoint", self.rdzv_file, "--rdzv-id", self.id(),
                    "--rdzv-conf", FAST, *extra, *worker]
            self.agents.append(Agent(h, args, self.notifier))
        return self.agents[-len(hosts):]

    def fake(self, *args):
        return [FAKE, "--notify", self.notifier.path, "--dump", self.dir, *args]

    def test_two_hosts_meet_in_a_shared_file_without_a_rendezvous_port(self):
        agents = self.start([1, 2], "2", self.fake())
        results = [a.finish(DEADLINE) for a in agents]
        for code, err in results:
            self.assertEqual(code, 0, err)
            self.assertIn("rendezvous through the file " + self.rdzv_file, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(r for r, _ in dumps), [0, 1, 2, 3])
        addresses = {h: harness("ip", h).stdout.strip() for h in (1, 2)}
        master = {d["env"]["MASTER_ADDR"] for d in dumps.values()}
        self.assertEqual(len(master), 1)  # one workers' store, group rank 0's, on its address
        self.assertIn(master.pop(), addresses.values())
        for (rank, _), dump in dumps.items():
            self.assertEqual(dump["env"]["WORLD_SIZE"], "4")
            self.assertEqual(dump["env"]["GROUP_RANK"], str(rank // 2))
        leaders = [err for _, err in results if "this node now coordinates" in err]
        self.assertGreaterEqual(len(leaders), 1)
        # The job removed its keys: a later job under the same run id starts afresh.
        again = self.start([1, 2], "2", self.fake())
        for code, err in [a.finish(DEADLINE) for a in again]:
            self.assertEqual(code, 0, err)

    def test_the_coordinator_killed_another_agent_takes_over(self):
        # Three nodes (2:3) whose workers hang in round 0; the agent that coordinates is killed
        # with -9: its lock on <file>.lead goes with it, another agent takes the role from the
        # state in the file, and the two left re-form at MIN=2, where the workers succeed.
        agents = self.start([1, 2, 3], "2:3", self.fake("--hang", "--fail-attempts", "1"),
                            ["--max-restarts", "1"])
        starts = self.notifier.wait_lines(6)
        leader = first_saying(agents, "this node now coordinates")
        self.assertIsNotNone(leader, "no agent said it coordinates")
        os.kill(leader.proc.pid, signal.SIGKILL)
        others = [a for a in agents if a is not leader]
        for code, err in [a.finish(DEADLINE) for a in others]:
            self.assertEqual(code, 0, err)
        self.assertTrue(any("this node now coordinates" in a.err for a in others),
                        [a.err for a in others])
        lost_workers = [int(w[3]) for w in starts if int(w[1]) // 2 == agents.index(leader)]
        self.assertEqual(wait_gone(lost_workers, 10), [])  # PDEATHSIG: no orphans
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(r for r, a in dumps if a == 1), [0, 1, 2, 3])


if __name__ == "__main__":
    main()
