"""Recovery in place with ptrun::ddp (issue #36): under `ptrun --restart-policy failed` a worker of
`train` killed mid-run is replaced alone; the survivors keep their processes, re-form the group
with the replacement, hand it the parameters, Adam moments and position, and training resumes at
the step where it stopped, ending bit-identical to an uninterrupted run (same world size, same
ring order: the cpu backend sums in rank order, so it is deterministic). No checkpoint is read.
The nccl backend's recovery runs over tests/ddp/fake_nccl (the CPU stand-in for libnccl.so.2):
NCCL cannot see a peer's death, so its survivors learn of the next generation from the store and
abort their communicator instead of waiting out the collective's timeout."""
import os
import re
import time
import unittest

from harness import PtrunTestCase, run_ptrun

TRAIN = os.environ.get("TRAIN_BIN", "build/examples/train/train")
ARGS = ["--epochs", "4", "--global-batch", "48", "--dataset-size", "1536", "--seed", "3"]
CRASH_STEP = 40  # 32 steps per epoch: mid-epoch 2
TIMEOUT = 120
FAKE_NCCL_DIR = os.environ.get("FAKE_NCCL_DIR", "build/tests/ddp/fake_nccl")


def start_pids(stderr):
    """{(rank, generation): pid} from train's "train: rank R (pid P) starts in generation G" lines."""
    return {(int(r), int(g)): int(p)
            for r, p, g in re.findall(r"train: rank (\d+) \(pid (\d+)\) starts in generation (\d+)", stderr)}


class RecoveryTrainTest(PtrunTestCase):
    def launched(self, ptrun_args, train_args, name, env=None):
        """`ptrun --standalone --nproc-per-node 4 [ptrun_args] train ...`; returns (proc, params bytes)."""
        out = os.path.join(self.dir, f"{name}.txt")
        proc = run_ptrun(["--standalone", "--nproc-per-node", "4", *ptrun_args, TRAIN, *ARGS,
                          "--final-params", out, *train_args], env=env, timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(out, "rb") as f:
            return proc, f.read()

    def test_killed_worker_is_replaced_in_place_and_training_resumes_at_its_step(self):
        _, clean = self.launched([], [], name="clean")
        proc, recovered = self.launched(
            ["--restart-policy", "failed", "--max-restarts", "3"],
            ["--crash-at-step", str(CRASH_STEP), "--crash-rank", "2"], name="recovered")
        log = proc.stdout + proc.stderr
        self.assertIn(f"killing itself after step {CRASH_STEP}", proc.stderr)
        pids = start_pids(proc.stderr)
        # Four workers in generation 0, one replacement (rank 2) in generation 1, nothing else:
        # the survivors kept their processes.
        self.assertEqual(sorted(pids), [(0, 0), (1, 0), (2, 0), (2, 1), (3, 0)], log)
        self.assertNotEqual(pids[(2, 1)], pids[(2, 0)])
        self.assertNotIn("restarting the worker group", proc.stderr)
        self.assertRegex(proc.stdout, rf"train: generation 1 re-formed at step {CRASH_STEP} "
                                      r"\(rank 2 replaced\); state from rank 0\n")
        self.assertEqual(proc.stdout.count("re-formed"), 1, proc.stdout)
        self.assertNotIn("resumed from the checkpoint", proc.stdout)
        self.assertIn("final mse", proc.stdout)
        self.assertEqual(recovered, clean, "the recovered run ends bit-identical to the clean one")

    def test_a_survivor_lost_during_the_state_transfer_leads_to_another_generation(self):
        _, clean = self.launched([], [], name="clean")
        proc, recovered = self.launched(
            ["--restart-policy", "failed", "--max-restarts", "3"],
            ["--crash-at-step", str(CRASH_STEP), "--crash-rank", "2", "--crash-in-resync-rank", "1"],
            name="twice")
        log = proc.stdout + proc.stderr
        self.assertIn("rank 1 killing itself in generation 1's resync", proc.stderr)
        pids = start_pids(proc.stderr)
        self.assertEqual(sorted(pids), [(0, 0), (1, 0), (1, 2), (2, 0), (2, 1), (3, 0)], log)
        self.assertNotIn("restarting the worker group", proc.stderr)
        self.assertNotIn("falling back", proc.stderr)
        self.assertRegex(proc.stdout, rf"train: generation 2 re-formed at step {CRASH_STEP} ")
        self.assertNotIn("generation 1 re-formed", proc.stdout)
        self.assertEqual(recovered, clean, "two generations later the run still ends bit-identical")

    def test_nccl_survivors_abort_their_communicator_when_the_next_generation_begins(self):
        if not os.path.exists(os.path.join(FAKE_NCCL_DIR, "libnccl.so.2")):
            self.skipTest(f"no fake libnccl.so.2 in {FAKE_NCCL_DIR}")
        env = {"LD_LIBRARY_PATH": FAKE_NCCL_DIR, "FAKE_NCCL_DEVICES": "4"}
        nccl = ["--backend", "nccl", "--timeout", "100"]
        _, clean = self.launched([], nccl, name="clean-nccl", env=env)
        start = time.monotonic()
        proc, recovered = self.launched(
            ["--restart-policy", "failed", "--max-restarts", "3"],
            [*nccl, "--crash-at-step", str(CRASH_STEP), "--crash-rank", "2"], name="nccl",
            env=env)
        took = time.monotonic() - start
        log = proc.stdout + proc.stderr
        pids = start_pids(proc.stderr)
        self.assertEqual(sorted(pids), [(0, 0), (1, 0), (2, 0), (2, 1), (3, 0)], log)
        # The survivors' collective on the dead peer ended when generation 1 began, not after
        # the 100 s collective timeout (nor the fake's own 60 s give-up).
        self.assertRegex(proc.stderr, r"train: rank [013] lost its group in generation 0: "
                                      r"allreduce: generation 1 began \(a peer was replaced\); "
                                      r"the communicator was aborted", log)
        self.assertLess(took, 50, log)
        self.assertRegex(proc.stdout, rf"train: generation 1 re-formed at step {CRASH_STEP} "
                                      r"\(rank 2 replaced\)")
        self.assertNotIn("restarting the worker group", proc.stderr)
        self.assertEqual(recovered, clean, "the recovered nccl run ends bit-identical too")


if __name__ == "__main__":
    unittest.main()
