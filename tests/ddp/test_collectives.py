"""ptrun::ddp collectives under the real ptrun: every collective x dtype x op at world sizes 1-4,
and a dead or silent peer turns into a clear error naming it, within the timeout, never a hang."""
import glob
import os
import re
import socket
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from harness import PTRUN, PtrunTestCase, _env, run_ptrun  # noqa: E402
from ptrun import heartbeat  # noqa: E402  (this checkout's module: the record's launcher side)

CHECK = os.environ.get("DDP_CHECK", "build/tests/ddp/collectives_check")
NCCL_CHECK = os.environ.get("NCCL_CHECK", "build/tests/ddp/nccl_check")
FAKE_NCCL_DIR = os.environ.get("FAKE_NCCL_DIR", "build/tests/ddp/fake_nccl")


def leftover_segments():
    return sorted(glob.glob("/dev/shm/ptrun-ddp-*"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collectives(PtrunTestCase):
    def test_every_collective_dtype_and_op(self):
        before = leftover_segments()
        for n in (1, 2, 3, 4):
            with self.subTest(world=n):
                res = run_ptrun(["--standalone", "--nproc-per-node", str(n), "--no-python", CHECK, "all"],
                                timeout=240)
                self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
                lines = [l for l in res.stdout.splitlines() if "checks" in l]
                self.assertEqual(len(lines), n, res.stdout)
                for line in lines:
                    self.assertIn(" 0 failures", line)
        self.assertEqual(leftover_segments(), before, "shared memory segments left behind")

    def test_every_collective_with_each_copy_strategy(self):
        """The cpu backend's copy strategies, each fixed for every size (auto tunes among them)."""
        for strategy in ("streamed", "plain", "single-copy"):
            for n in (2, 3):
                with self.subTest(strategy=strategy, world=n):
                    res = run_ptrun(["--standalone", "--nproc-per-node", str(n), "--no-python", CHECK, "all",
                                     "cpu", strategy], timeout=240)
                    self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
                    lines = [l for l in res.stdout.splitlines() if "checks" in l]
                    self.assertEqual(len(lines), n, res.stdout)
                    for line in lines:
                        self.assertIn(" 0 failures", line)

    def test_every_collective_across_nodes(self):
        """Two or three ptrun agents on this host as nodes: shm within each, the TCP ring between."""
        for nodes, per_node in ((2, 2), (3, 1)):
            with self.subTest(nodes=nodes, per_node=per_node):
                results = self.run_agents(nodes, per_node, ["--no-python", CHECK, "all"], {}, timeout=240)
                for code, out, err in results:
                    self.assertEqual(code, 0, out + err)
                outs = [(out, err) for _, out, err in results]
                lines = [l for out, _ in outs for l in out.splitlines() if "checks" in l]
                self.assertEqual(len(lines), nodes * per_node, outs)
                for line in lines:
                    self.assertIn(" 0 failures", line)

    def run_agents(self, nodes, per_node, args, env, timeout):
        """Runs `nodes` ptrun agents on this host as nodes (static rendezvous, the TCP ring
        between them), `per_node` workers each; returns [(exit code, stdout, stderr)] by node."""
        port = free_port()
        agents = [subprocess.Popen(
            [PTRUN, "--nnodes", str(nodes), "--nproc-per-node", str(per_node), "--node-rank", str(i),
             "--master-addr", "127.0.0.1", "--master-port", str(port), *args],
            env=_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(nodes)]
        self.leftover += [a.pid for a in agents]
        outs = [a.communicate(timeout=timeout) for a in agents]
        return [(a.returncode, out, err) for a, (out, err) in zip(agents, outs)]

    def run_failure(self, mode, n, victim, timeout_ms, nodes=1, shm_copy="auto"):
        """Runs `collectives_check MODE VICTIM` on `nodes` ptrun agents of n/nodes workers each
        (agents on this host as nodes: the TCP ring between them); returns {rank: (ms, error)}."""
        check = ["--shutdown-timeout", "30", "--no-python", CHECK, mode, str(victim), self.dir]
        env = {"PTRUN_DDP_TEST_TIMEOUT_MS": str(timeout_ms), "PTRUN_DDP_TEST_SHM_COPY": shm_copy}
        if nodes == 1:
            res = run_ptrun(["--standalone", "--nproc-per-node", str(n), *check], env=env, timeout=120)
            codes, stderr = [res.returncode], res.stderr
        else:
            results = self.run_agents(nodes, n // nodes, check, env, timeout=120)
            codes, stderr = [code for code, _, _ in results], "".join(err for _, _, err in results)
        self.assertTrue(any(c != 0 for c in codes), stderr)
        reports = {}
        for r in range(n):
            if r == victim:
                continue
            path = os.path.join(self.dir, f"rank{r}")
            self.assertTrue(os.path.exists(path), f"rank {r} reported nothing:\n{stderr}")
            with open(path) as f:
                ms, what = f.read().splitlines()[:2]
            reports[r] = (int(ms), what)
        for p in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, p))
        return reports

    def check_peer_lost(self, reports, victim):
        """Every reporting rank got PeerLost naming `victim` within 5 s."""
        for r, (ms, what) in reports.items():
            self.assertIn("PeerLost", what)
            self.assertIn(f"rank {victim}", what)
            self.assertLess(ms, 5000, f"rank {r} noticed the dead peer only after {ms} ms")

    def check_timed_out(self, reports, victim):
        """Every reporting rank failed naming `victim` after the 1.5 s timeout, within 10 s."""
        for r, (ms, what) in reports.items():
            self.assertTrue("CollectiveTimeout" in what or "PeerLost" in what, what)
            self.assertIn(f"rank {victim}", what)
            self.assertGreaterEqual(ms, 1400)
            self.assertLess(ms, 10000)

    def test_killed_peer_gives_peer_lost_naming_it(self):
        for n, victim in ((2, 1), (3, 0), (4, 2)):
            with self.subTest(world=n, victim=victim):
                self.check_peer_lost(self.run_failure("die", n, victim, timeout_ms=20000), victim)

    def test_peer_on_another_node_killed_or_silent(self):
        """Across nodes the error comes through the TCP ring: a killed rank on the other node is
        PeerLost within seconds, a silent one a timeout naming it, on both nodes."""
        for mode, victim, timeout_ms in (("die", 2, 20000), ("die", 1, 20000), ("hang", 3, 1500)):
            with self.subTest(mode=mode, victim=victim):
                reports = self.run_failure(mode, 4, victim, timeout_ms, nodes=2)
                self.assertEqual(sorted(reports), [r for r in range(4) if r != victim])
                (self.check_peer_lost if mode == "die" else self.check_timed_out)(reports, victim)

    def test_silent_peer_times_out_naming_it(self):
        self.check_timed_out(self.run_failure("hang", 3, 2, timeout_ms=1500), 2)

    def test_killed_or_silent_peer_under_each_copy_strategy(self):
        """The same reports when every allreduce goes single-copy or through plain slots."""
        for strategy in ("single-copy", "plain"):
            with self.subTest(strategy=strategy, mode="die"):
                self.check_peer_lost(self.run_failure("die", 3, 1, 20000, shm_copy=strategy), 1)
            with self.subTest(strategy=strategy, mode="hang"):
                self.check_timed_out(self.run_failure("hang", 2, 0, 1500, shm_copy=strategy), 0)


class NcclBackendOverFake(PtrunTestCase):
    """The nccl backend's plumbing on the CPU stand-in for libnccl.so.2 + libcudart.so
    (tests/ddp/fake_nccl): loading at run time, the unique id through ptrun's store, stream
    events, and a silent peer turning into CollectiveTimeout (abort), never a hang. The real
    library on a GPU is ddp.nccl_world1 (label gpu)."""

    ENV = {"LD_LIBRARY_PATH": FAKE_NCCL_DIR}

    def leftover_files(self):
        return sorted(glob.glob("/dev/shm/ptrun-fake-nccl-*"))

    def test_world_size_one_without_ptrun(self):
        res = subprocess.run([NCCL_CHECK, "small"], env=_env(self.ENV), capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("rank 0/1 backend=nccl: 0 failures", res.stdout)

    def test_completed_collectives_beat_the_heartbeat_record(self):
        """A collective is complete once its stream event is: each one is a beat."""
        record = os.path.join(self.dir, "heartbeat")
        heartbeat.create(record)
        res = subprocess.run([NCCL_CHECK, "small"], env=_env({**self.ENV,
                             "PTRUN_HEARTBEAT_FILE": record}), capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        seen = heartbeat.read(record)
        self.assertGreater(seen["count"], 0)
        self.assertNotEqual(seen["writer_pid"], 0)
        self.assertGreater(seen["last_progress_ns"], 0)

    def test_every_collective_dtype_and_op(self):
        before = self.leftover_files()
        for n in (2, 3, 4):
            with self.subTest(world=n):
                res = run_ptrun(["--standalone", "--nproc-per-node", str(n), "--no-python",
                                 NCCL_CHECK, "small"], env=self.ENV, timeout=240)
                self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
                for r in range(n):
                    self.assertIn(f"rank {r}/{n} backend=nccl: 0 failures", res.stdout)
        self.assertEqual(self.leftover_files(), before, "fake NCCL segments left behind")

    def test_silent_peer_times_out(self):
        res = run_ptrun(["--standalone", "--nproc-per-node", "3", "--no-python", NCCL_CHECK,
                         "silent-rank", "2"], env=self.ENV, timeout=60)
        self.assertNotEqual(res.returncode, 0, res.stdout + res.stderr)
        for r in (0, 1):
            self.assertIn(f"rank {r}: timed out: barrier timed out", res.stdout)

    def test_abandoned_work_does_not_hang_shutdown(self):
        """Destroying the group with a collective stuck on a silent peer, never waited for,
        aborts it after the 1 s timeout instead of synchronizing forever."""
        res = run_ptrun(["--standalone", "--nproc-per-node", "3", "--no-python", NCCL_CHECK,
                         "abandon-rank", "2"], env=self.ENV, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        for r in (0, 1):
            match = re.search(rf"rank {r}: shut down in (\d+) ms", res.stdout)
            self.assertIsNotNone(match, res.stdout)
            self.assertGreaterEqual(int(match.group(1)), 900)
            self.assertLess(int(match.group(1)), 5000)


if __name__ == "__main__":
    unittest.main()
