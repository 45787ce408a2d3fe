"""Signals reach every worker group; nothing outlives ptrun, not even after kill -9."""
import signal
import unittest

import os

from harness import Notifier, PtrunTestCase, pid_alive, start_ptrun, wait_gone, wait_output


class Signals(PtrunTestCase):
    def start(self, n, *worker_args, extra=()):
        self.notifier = Notifier()
        self.addCleanup(self.notifier.close)
        proc = start_ptrun(["--nproc-per-node", str(n), *extra,
                            *self.worker("--notify-fd", str(self.notifier.write_fd), *worker_args)], self.notifier)
        self.leftover.append(proc.pid)
        lines = self.notifier.wait_lines(n)
        pids = [int(words[3]) for words in lines]
        self.leftover.extend(pids)
        return proc, pids

    def test_sigterm_ends_every_worker_within_the_grace(self):
        proc, pids = self.start(4, "--hang", extra=("--shutdown-timeout", "5"))
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertEqual(wait_gone(pids, 1.0), [])

    def test_kill_9_of_ptrun_leaves_no_worker_alive_a_second_later(self):
        proc, pids = self.start(4, "--hang")
        proc.kill()
        proc.wait(timeout=5)
        self.assertEqual(wait_gone(pids, 1.0), [])

    def test_worker_ignoring_sigterm_is_killed_after_the_grace(self):
        proc, pids = self.start(2, "--hang", "--ignore-term", extra=("--shutdown-timeout", "0.5"))
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM)
        self.assertIn("SIGKILL", err)
        self.assertIn("still running 0.5 s after the stop signal", err, "in the unit of --shutdown-timeout")
        self.assertNotIn(" ms", err)
        self.assertEqual(wait_gone(pids, 1.0), [])

    def test_second_sigint_escalates_to_sigkill(self):
        proc, pids = self.start(2, "--hang", "--ignore-term", extra=("--shutdown-timeout", "60"))
        proc.send_signal(signal.SIGINT)
        said = wait_output(proc.stderr, "at once")
        self.assertIn("received SIGINT: stopping the workers", said)
        self.assertIn("SIGKILL after 60 s", said, "the first Ctrl-C says how long the grace is")
        self.assertIn("Ctrl-C again to kill them at once", said)
        self.assertTrue(all(pid_alive(p) for p in pids))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT)
        self.assertEqual(wait_gone(pids, 1.0), [])

    def test_sigusr1_is_forwarded_without_stopping_the_job(self):
        proc, pids = self.start(3, "--hang", "--usr1-exit", "0")
        proc.send_signal(signal.SIGUSR1)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0, err)

    def test_failure_stops_hanging_peers(self):
        proc, pids = self.start(3, "--hang", "--ignore-term", extra=("--shutdown-timeout", "0.3"))
        os.kill(pids[1], signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGKILL)
        self.assertEqual(wait_gone(pids, 1.0), [])


if __name__ == "__main__":
    unittest.main()
