"""--checkpoint-signal: workers get the signal and --checkpoint-grace to exit on their own; the
rest are stopped and the report names both. --requeue outside SLURM is a usage error; on two
nodes (two ptruns on 127.0.0.1 in a simulated SLURM step, a fake scontrol on PATH) node rank 0
requeues only after node rank 1's workers have saved, also when node 0 alone was signalled: its
checkpoint ends the round as a checkpoint and node 1's workers get the checkpoint signal too."""
import os
import signal
import unittest

from harness import (Notifier, PtrunTestCase, free_port, run_ptrun, start_ptrun, wait_gone,
                     wait_output)

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

    def start_node(self, node, port, notifier, fake_bin):
        """The ptrun of SLURM task `node` of a simulated 2-node step (srun -N2
        --ntasks-per-node=1), both on 127.0.0.1: its worker saves on SIGUSR1, node 1's slowly."""
        env = {"NOTIFY": notifier.path, "PYTHON_EXEC": "/usr/bin/python3", "HOME": self.dir,
               "PATH": f"{fake_bin}:{os.environ['PATH']}", "CHECKPOINT_RANKS": "0,1",
               "SLOW_RANKS": "1", "SLOW_SECONDS": "3",
               "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(node),
               "SLURM_LOCALID": "0", "SLURM_NODEID": str(node), "SLURM_STEP_NUM_NODES": "2",
               "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_NUM_TASKS": "2",
               "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}
        proc = start_ptrun(["--nproc-per-node", "1", "--rdzv-endpoint", f"127.0.0.1:{port}",
                            "--checkpoint-signal", "SIGUSR1", "--checkpoint-grace", "20",
                            "--shutdown-timeout", "5", "--requeue", WORKER], env=env)
        self.leftover.append(proc.pid)
        return proc

    def fake_scontrol(self):
        """A directory with an `scontrol` that says when it was called, on the workers' FIFO."""
        fake_bin = os.path.join(self.dir, "bin")
        os.mkdir(fake_bin)
        scontrol = os.path.join(fake_bin, "scontrol")
        with open(scontrol, "w") as f:
            f.write('#!/bin/sh\nprintf \'%s %s 0 %s\\n\' "$1" "$2" "$$" > "$NOTIFY"\n')
        os.chmod(scontrol, 0o755)
        return fake_bin

    def start_two_nodes(self, notifier):
        """Both ptruns of the simulated step, once each worker said 'start'; node 0's early
        stderr (it hosts the store) and the workers' start lines come with them."""
        fake_bin = self.fake_scontrol()
        port = free_port()
        node0 = self.start_node(0, port, notifier, fake_bin)
        early0 = wait_output(node0.stderr, "hosting the rendezvous store")  # node 0 hosts it
        node1 = self.start_node(1, port, notifier, fake_bin)
        started = notifier.wait_lines(2)
        self.assertEqual(sorted(w[0] + w[1] for w in started), ["start0", "start1"])
        self.leftover.extend(int(w[3]) for w in started)
        return node0, node1, early0, started

    def test_requeue_on_two_nodes_waits_for_the_other_nodes_checkpoint(self):
        notifier = Notifier()
        self.addCleanup(notifier.close)
        node0, node1, early0, started = self.start_two_nodes(notifier)
        for proc in (node0, node1):  # SLURM signals every task of the step
            proc.send_signal(signal.SIGUSR1)
        events = notifier.wait_lines(3)
        # Node 0's worker saves at once, node 1's 3 s later: the requeue comes after both.
        self.assertEqual([w[:2] for w in events],
                         [["saved", "0"], ["saved", "1"], ["requeue", "4242"]])
        out0, err0 = node0.communicate(timeout=30)
        out1, err1 = node1.communicate(timeout=30)
        err0 = early0 + err0
        self.assertEqual(node0.returncode, 0, err0)  # what SLURM's requeue expects of each task
        self.assertEqual(node1.returncode, 0, err1)
        self.assertIn("waiting for the other nodes' workers to end before requeueing", err0)
        self.assertIn("--requeue: waited", err0)
        self.assertIn("until every other node's workers had ended", err0)
        self.assertIn("requeueing SLURM job 4242 (scontrol requeue)", err0)
        self.assertIn("node rank 0 requeues SLURM job 4242", err1)
        self.assertEqual(wait_gone([int(w[3]) for w in started], 5.0), [])

    def test_a_node_preempted_first_makes_the_others_checkpoint_before_their_own_signal(self):
        # Node 0 alone gets the signal (the others' come later, or never): its worker saves and
        # its ptrun leaves, which ends the round. Node 1's worker must still checkpoint (not be
        # stopped with SIGTERM), node 1's own signal, arriving meanwhile, is not sent again, and
        # the requeue comes after both saves.
        notifier = Notifier()
        self.addCleanup(notifier.close)
        node0, node1, early0, started = self.start_two_nodes(notifier)
        node0.send_signal(signal.SIGUSR1)
        early1 = wait_output(node1.stderr, "sending SIGUSR1 to the workers (--checkpoint-signal)")
        node1.send_signal(signal.SIGUSR1)  # node 1's own notice, while its worker saves
        events = notifier.wait_lines(3)
        self.assertEqual([w[:2] for w in events],
                         [["saved", "0"], ["saved", "1"], ["requeue", "4242"]])
        out0, err0 = node0.communicate(timeout=30)
        out1, err1 = node1.communicate(timeout=30)
        err0, err1 = early0 + err0, early1 + err1
        self.assertEqual(node0.returncode, 0, err0)
        self.assertEqual(node1.returncode, 0, err1)
        self.assertIn("exited on the checkpoint signal", err1)
        self.assertIn("every node checkpoints and the job ends", err1)
        self.assertIn("received SIGUSR1: the workers already have SIGUSR1", err1)
        self.assertNotIn("forwarding it to the workers", err1)
        self.assertIn("exited within the grace (20 s, --checkpoint-grace): rank 1 (exit code 0)",
                      err1)
        self.assertIn("requeueing SLURM job 4242 (scontrol requeue)", err0)
        self.assertEqual(wait_gone([int(w[3]) for w in started], 5.0), [])

    def start_task(self, task, port, notifier, fake_bin):
        """The ptrun of SLURM task `task` of a simulated one-task-per-rank step (srun -n2 on one
        node): its worker saves on SIGUSR1, rank 1's slowly."""
        env = {"NOTIFY": notifier.path, "PYTHON_EXEC": "/usr/bin/python3", "HOME": self.dir,
               "PATH": f"{fake_bin}:{os.environ['PATH']}", "CHECKPOINT_RANKS": "0,1",
               "SLOW_RANKS": "1", "SLOW_SECONDS": "3", "PTRUN_STATE_DIR": self.dir,
               "SLURM_JOB_ID": "4243", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(task),
               "SLURM_LOCALID": str(task), "SLURM_NODEID": "0", "SLURM_NTASKS": "2",
               "SLURM_STEP_NUM_TASKS": "2", "SLURM_NNODES": "1", "SLURM_STEP_NUM_NODES": "1",
               "SLURM_NODELIST": "localhost", "SLURM_STEP_NODELIST": "localhost",
               "SLURM_TASKS_PER_NODE": "2", "SLURM_STEP_TASKS_PER_NODE": "2",
               "PTRUN_SLURM_PORT": str(port)}
        proc = start_ptrun(["--slurm-mode", "per-rank", "--checkpoint-signal", "SIGUSR1",
                            "--checkpoint-grace", "20", "--shutdown-timeout", "5", "--requeue",
                            WORKER], env=env)
        self.leftover.append(proc.pid)
        return proc

    def test_requeue_with_one_task_per_rank_waits_for_every_ranks_checkpoint(self):
        notifier = Notifier()
        self.addCleanup(notifier.close)
        fake_bin = self.fake_scontrol()
        port = free_port()
        tasks = [self.start_task(task, port, notifier, fake_bin) for task in (0, 1)]
        started = notifier.wait_lines(2)
        self.assertEqual(sorted(w[0] + w[1] for w in started), ["start0", "start1"])
        self.leftover.extend(int(w[3]) for w in started)
        for proc in tasks:  # SLURM signals every task of the step
            proc.send_signal(signal.SIGUSR1)
        events = notifier.wait_lines(3)
        # Rank 0's worker saves at once, rank 1's 3 s later: the requeue comes after both.
        self.assertEqual([w[:2] for w in events],
                         [["saved", "0"], ["saved", "1"], ["requeue", "4243"]])
        (out0, err0), (out1, err1) = (proc.communicate(timeout=30) for proc in tasks)
        self.assertEqual(tasks[0].returncode, 0, err0)
        self.assertEqual(tasks[1].returncode, 0, err1)
        self.assertIn("waiting for the other 1 ranks' workers to end before requeueing", err0)
        self.assertIn("--requeue: waited", err0)
        self.assertIn("until every other rank's worker had ended", err0)
        self.assertIn("requeueing SLURM job 4243 (scontrol requeue)", err0)
        self.assertIn("node rank 0 requeues SLURM job 4243", err1)
        self.assertEqual(wait_gone([int(w[3]) for w in started], 5.0), [])


if __name__ == "__main__":
    unittest.main()
