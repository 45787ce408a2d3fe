"""Signals reach every worker group; nothing outlives ptrun, not even after kill -9."""
import signal
import time
import unittest

import os

from harness import Notifier, PtrunTestCase, free_port, pid_alive, start_ptrun, wait_gone, wait_output


class Signals(PtrunTestCase):
    def start(self, n, *worker_args, extra=()):
        self.notifier = Notifier()
        self.addCleanup(self.notifier.close)
        proc = start_ptrun(["--nproc-per-node", str(n), *extra,
                            *self.worker("--notify", self.notifier.path, *worker_args)], self.notifier)
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

    def test_the_store_host_of_a_per_rank_job_still_stops_on_a_signal(self):
        # SLURM's one-task-per-rank mode: task 0 hosts the store and, its worker done, waits for
        # the other ranks. SIGTERM (scancel) and SIGINT must end that wait at once: they were
        # caught and dropped by the finished agent's handlers for up to 300 s.
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                env = {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0",
                       "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_NTASKS": "2",
                       "SLURM_STEP_NUM_TASKS": "2", "SLURM_NNODES": "1",
                       "SLURM_STEP_NUM_NODES": "1", "SLURM_NODELIST": "localhost",
                       "SLURM_STEP_NODELIST": "localhost", "SLURM_TASKS_PER_NODE": "2",
                       "SLURM_STEP_TASKS_PER_NODE": "2", "PTRUN_SLURM_PORT": str(free_port()),
                       "PTRUN_STATE_DIR": self.dir}
                proc = start_ptrun(["--slurm-mode", "per-rank", "true"], env=env)
                self.leftover.append(proc.pid)
                wait_output(proc.stderr, "keeping the store up")
                proc.send_signal(sig)
                try:
                    proc.communicate(timeout=10)
                except Exception:
                    proc.kill()
                    proc.communicate()
                    raise AssertionError(f"ptrun ignored {sig.name} while keeping the store up")
                self.assertEqual(proc.returncode, -sig)

    def test_sigquit_reaches_every_worker_and_stops_the_job(self):
        # torchrun's default signals to handle are SIGTERM, SIGINT, SIGHUP and SIGQUIT (#37.4).
        script = os.path.join(self.dir, "quit.py")
        with open(script, "w") as f:
            f.write("import os, signal, sys\n"
                    "def tell(what):\n"
                    "    fd = os.open(os.environ['NOTIFY'], os.O_WRONLY | os.O_NONBLOCK)\n"
                    "    os.write(fd, f'{what} {os.environ[\"RANK\"]} 0 {os.getpid()}\\n'.encode())\n"
                    "    os.close(fd)\n"
                    "def quit(signo, frame):\n"
                    "    tell('quit')\n"
                    "    sys.exit(0)\n"
                    "signal.signal(signal.SIGQUIT, quit)\n"
                    "tell('start')\n"
                    "while True:\n"
                    "    signal.pause()\n")
        notifier = Notifier()
        self.addCleanup(notifier.close)
        proc = start_ptrun(["--nproc-per-node", "2", script],
                           env={"NOTIFY": notifier.path, "PYTHON_EXEC": "/usr/bin/python3"})
        self.leftover.append(proc.pid)
        started = notifier.wait_lines(2)
        self.leftover.extend(int(words[3]) for words in started)
        proc.send_signal(signal.SIGQUIT)
        quit = notifier.wait_lines(2)
        self.assertEqual(sorted((w[0], w[1]) for w in quit), [("quit", "0"), ("quit", "1")])
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGQUIT, err)
        self.assertIn("received SIGQUIT: stopping the workers", err)

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
        time.sleep(0.15)  # a person's second Ctrl-C: past the 100 ms in which copies count once
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT)
        self.assertIn("received SIGINT again: killing the workers now (SIGKILL)", err)
        self.assertEqual(wait_gone(pids, 1.0), [])

    def test_two_copies_of_one_ctrl_c_are_one_ctrl_c(self):
        # Under `timeout 120 ptrun ...` in a terminal one Ctrl-C reaches ptrun twice: from the
        # terminal and relayed by timeout. It is not the second Ctrl-C (SIGKILL at once).
        proc, pids = self.start(2, "--hang", "--ignore-term", extra=("--shutdown-timeout", "0.5"))
        proc.send_signal(signal.SIGINT)
        said = wait_output(proc.stderr, "at once")  # the first is taken: the copy comes now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        err = said + err
        self.assertEqual(proc.returncode, 128 + signal.SIGINT)
        self.assertIn("received SIGINT again within 100 ms: the same Ctrl-C, delivered twice", err)
        self.assertNotIn("killing the workers now", err)
        self.assertIn("still running 0.5 s after the stop signal", err, "the grace was given")
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
