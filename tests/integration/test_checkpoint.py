"""--checkpoint-signal: workers get the signal and --checkpoint-grace to exit on their own; the
rest are stopped and the report names both. --requeue outside SLURM is a usage error."""
import os
import signal
import unittest

from harness import Notifier, PtrunTestCase, run_ptrun, start_ptrun, wait_gone

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoint_worker.py")


class Checkpoint(PtrunTestCase):
    def start(self, checkpoint_ranks, extra=()):
        """ptrun with 2 workers of checkpoint_worker.py; returns it once both said 'start'."""
        notifier = Notifier()
        self.addCleanup(notifier.close)
        env = {"NOTIFY": notifier.path, "PYTHON_EXEC": "/usr/bin/python3",
               "CHECKPOINT_RANKS": checkpoint_ranks}
        proc = start_ptrun(["--nproc-per-node", "2", "--checkpoint-signal", "SIGUSR1",
                            "--shutdown-timeout", "5", *extra, WORKER], env=env)
        self.leftover.append(proc.pid)
        started = notifier.wait_lines(2)
        pids = {words[1]: int(words[3]) for words in started}
        self.leftover.extend(pids.values())
        return proc, notifier, pids

    def test_one_rank_exits_in_time_the_other_is_stopped_after_the_grace(self):
        proc, notifier, pids = self.start("0", extra=("--checkpoint-grace", "1"))
        proc.send_signal(signal.SIGUSR1)
        saved = notifier.wait_lines(1)
        self.assertEqual([w[:2] for w in saved], [["saved", "0"]])
        out, err = proc.communicate(timeout=15)
        self.assertEqual(proc.returncode, 128 + signal.SIGUSR1, err)
        self.assertIn("exited within the grace (1 s, --checkpoint-grace): rank 0 (exit code 0)",
                      err)
        self.assertIn("stopped by ptrun: rank 1 (signal 15 (SIGTERM))", err)
        self.assertEqual(wait_gone(list(pids.values()), 1.0), [])

    def test_sigterm_sends_the_checkpoint_signal_and_every_rank_exits_in_time(self):
        proc, notifier, pids = self.start("0,1", extra=("--checkpoint-grace", "20"))
        proc.send_signal(signal.SIGTERM)
        saved = notifier.wait_lines(2)
        self.assertEqual(sorted(w[1] for w in saved if w[0] == "saved"), ["0", "1"])
        out, err = proc.communicate(timeout=15)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("sending SIGUSR1 to the workers (--checkpoint-signal)", err)
        self.assertIn("exited within the grace (20 s, --checkpoint-grace): rank 0 (exit code 0), "
                      "rank 1 (exit code 0)", err)
        self.assertNotIn("stopped by ptrun", err)

    def test_requeue_outside_slurm_is_a_usage_error_naming_why(self):
        unset = [k for k in os.environ if k.startswith("SLURM_")]
        result = run_ptrun(["--requeue", "--checkpoint-signal", "USR1", "true"], unset=unset)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--requeue: expected a SLURM job", result.stderr)
        self.assertIn("SLURM_JOB_ID unset", result.stderr)
        self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
