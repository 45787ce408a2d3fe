"""ptrun::ddp collectives under the real ptrun: every collective x dtype x op at world sizes 1-4,
and a dead or silent peer turns into a clear error naming it, within the timeout, never a hang."""
import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import PtrunTestCase, run_ptrun  # noqa: E402

CHECK = os.environ.get("DDP_CHECK", "build/tests/ddp/collectives_check")


def leftover_segments():
    return sorted(glob.glob("/dev/shm/ptrun-ddp-*"))


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

    def run_failure(self, mode, n, victim, timeout_ms):
        res = run_ptrun(["--standalone", "--nproc-per-node", str(n), "--shutdown-timeout", "30",
                         "--no-python", CHECK, mode, str(victim), self.dir],
                        env={"PTRUN_DDP_TEST_TIMEOUT_MS": str(timeout_ms)}, timeout=120)
        self.assertNotEqual(res.returncode, 0)
        reports = {}
        for r in range(n):
            if r == victim:
                continue
            path = os.path.join(self.dir, f"rank{r}")
            self.assertTrue(os.path.exists(path), f"rank {r} reported nothing:\n{res.stderr}")
            with open(path) as f:
                ms, what = f.read().splitlines()[:2]
            reports[r] = (int(ms), what)
        return reports

    def test_killed_peer_gives_peer_lost_naming_it(self):
        for n, victim in ((2, 1), (3, 0), (4, 2)):
            with self.subTest(world=n, victim=victim):
                reports = self.run_failure("die", n, victim, timeout_ms=20000)
                for r, (ms, what) in reports.items():
                    self.assertIn("PeerLost", what)
                    self.assertIn(f"rank {victim}", what)
                    self.assertLess(ms, 5000, f"rank {r} noticed the dead peer only after {ms} ms")
                for p in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, p))

    def test_silent_peer_times_out_naming_it(self):
        reports = self.run_failure("hang", 3, 2, timeout_ms=1500)
        for r, (ms, what) in reports.items():
            self.assertTrue("CollectiveTimeout" in what or "PeerLost" in what, what)
            self.assertIn("rank 2", what)
            self.assertGreaterEqual(ms, 1400)
            self.assertLess(ms, 10000)


if __name__ == "__main__":
    unittest.main()
