"""ptrun's exit code is the first failing worker's code (128+signal for a signal death)."""
import signal
import unittest

from harness import PtrunTestCase, run_ptrun


class ExitCodes(PtrunTestCase):
    def test_success_is_zero(self):
        self.assertEqual(run_ptrun(["--nproc-per-node", "4", *self.worker()]).returncode, 0)

    def test_first_failing_workers_code(self):
        res = run_ptrun(["--nproc-per-node", "3", *self.worker("--fail-rank", "2", "--exit", "42")])
        self.assertEqual(res.returncode, 42, res.stderr)
        self.assertIn("rank        : 2 (local rank 2)", res.stderr)
        self.assertIn("exit code 42", res.stderr)

    def test_signal_death_is_128_plus_signal(self):
        res = run_ptrun(["--nproc-per-node", "2", *self.worker("--fail-rank", "0", "--signal", str(int(signal.SIGSEGV)))])
        self.assertEqual(res.returncode, 128 + signal.SIGSEGV, res.stderr)
        self.assertIn("SIGSEGV", res.stderr)

    def test_sigkill_report_names_the_oom_killer(self):
        res = run_ptrun(["--nproc-per-node", "1", *self.worker("--signal", "9")])
        self.assertEqual(res.returncode, 137)
        self.assertIn("SIGKILL", res.stderr)
        self.assertIn("OOM killer", res.stderr)

    def test_report_carries_error_file_and_stderr_tail(self):
        res = run_ptrun(["--nproc-per-node", "2", "--redirects", "2",
                         *self.worker("--fail-rank", "1", "--exit", "5", "--print", "3",
                                      "--error-message", "ValueError: boom from worker")])
        self.assertEqual(res.returncode, 5, res.stderr)
        for expected in ("Root cause", "host", "pid", "time", "ValueError: boom from worker", "Traceback",
                         "err line 2 from rank 1", "stopped by ptrun"):
            self.assertIn(expected, res.stderr)


if __name__ == "__main__":
    unittest.main()
