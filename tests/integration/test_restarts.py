"""A failed worker stops the group; the group restarts with TORCHELASTIC_RESTART_COUNT+1."""
import unittest

from harness import PtrunTestCase, read_dumps, run_ptrun


class Restarts(PtrunTestCase):
    def test_group_restarts_until_it_succeeds(self):
        res = run_ptrun(["--nproc-per-node", "3", "--max-restarts", "3",
                         *self.worker("--dump", self.dir, "--fail-rank", "1", "--fail-attempts", "2", "--exit", "3")])
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, a) for r in range(3) for a in range(3)])
        for (rank, attempt), dump in dumps.items():
            self.assertEqual(dump["env"]["TORCHELASTIC_RESTART_COUNT"], str(attempt))
            self.assertRegex(dump["env"]["TORCHELASTIC_ERROR_FILE"], rf"/attempt_{attempt}/{rank}/error\.json$")
        self.assertEqual(res.stderr.count("restarting the worker group"), 2)
        self.assertIn("restart 2 of 3", res.stderr)

    def test_exhausted_restarts_exit_with_the_failure(self):
        res = run_ptrun(["--nproc-per-node", "2", "--max-restarts", "1",
                         *self.worker("--dump", self.dir, "--fail-rank", "0", "--exit", "9")])
        self.assertEqual(res.returncode, 9, res.stderr)
        self.assertEqual(sorted(read_dumps(self.dir)), [(0, 0), (0, 1), (1, 0), (1, 1)])
        self.assertIn("restarts used: 1 of 1", res.stderr)

    def test_every_restart_is_announced_with_its_cause_after_a_peer_exited_0(self):
        # Rank 0 exits 0 first; rank 1 fails only once rank 0 has exited, so the failure is the
        # group's last exit (ptrun used to skip the announcement then: 0 of 3 lines).
        res = run_ptrun(["--nproc-per-node", "2", "--max-restarts", "3",
                         *self.worker("--dump", self.dir, "--fail-rank", "1", "--fail-attempts", "3", "--exit", "3",
                                      "--others-succeed", "--after-peers-exit")])
        self.assertEqual(res.returncode, 0, res.stderr)
        lines = [l for l in res.stderr.splitlines() if "restarting the worker group" in l]
        self.assertEqual(len(lines), 3, res.stderr)
        for k, line in enumerate(lines, start=1):
            self.assertIn("worker rank 1 (local rank 1", line)
            self.assertIn("exit code 3", line)
            self.assertIn(f"restart {k} of 3", line)

    def test_the_restart_line_quotes_the_workers_error_file(self):
        res = run_ptrun(["--nproc-per-node", "2", "--max-restarts", "1",
                         *self.worker("--fail-rank", "1", "--fail-attempts", "1", "--exit", "1",
                                      "--others-succeed",
                                      "--error-message", "RuntimeError: boom on rank 1")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stderr, r"worker rank 1 \(local rank 1, pid \d+\) failed: exit code 1 "
                                     r"\(RuntimeError: boom on rank 1\); restarting the worker group")

    def test_no_restart_by_default(self):
        res = run_ptrun(["--nproc-per-node", "2", *self.worker("--dump", self.dir, "--fail-rank", "0", "--exit", "4")])
        self.assertEqual(res.returncode, 4)
        self.assertEqual(sorted(read_dumps(self.dir)), [(0, 0), (1, 0)])


if __name__ == "__main__":
    unittest.main()
