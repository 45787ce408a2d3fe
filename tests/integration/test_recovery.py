"""--restart-policy failed (issue 36), the launcher's side: a failed worker is replaced alone in a
new generation whose keys go to the workers' store; the survivors keep running and join it; a
program that does not take part falls back to a group restart after --recovery-timeout. The
workers speak the protocol through python/ptrun/store.py (generation_worker.py), without torch."""
import json
import os
import re
import sys
import unittest

from harness import PtrunTestCase, run_ptrun

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "generation_worker.py")
ENV = {"PYTHONPATH": os.path.join(REPO, "python"),
       "PTRUN_STORE_C_LIB": os.path.abspath(os.environ.get(
           "PTRUN_STORE_C_LIB", os.path.join(REPO, "build/rendezvous/c_api/libptrun_store_c.so")))}


def starts(stdout):
    """{(rank, generation): (pid, restart count, policy)} from the workers' first lines."""
    found = {}
    for m in re.finditer(r"pid (\d+) rank (\d+) generation (\d+) restart (\d+) policy (\S+)", stdout):
        found[(int(m[2]), int(m[3]), int(m[4]))] = (int(m[1]), m[5])
    return found


class RecoveryInPlace(PtrunTestCase):
    def launch(self, *args, worker_args=(), timeout=60):
        return run_ptrun(["--standalone", "--nproc-per-node", "4", "--tee", "3", "--log-dir", self.dir,
                          *args, sys.executable, "-u", WORKER, *worker_args], env=ENV, timeout=timeout)

    def test_a_killed_worker_is_replaced_alone_and_every_worker_joins_its_generation(self):
        res = self.launch("--restart-policy", "failed", "--max-restarts", "2",
                          worker_args=("--crash-rank", "2"))
        self.assertEqual(res.returncode, 0, res.stderr)
        found = starts(res.stdout)
        # The first four started once; rank 2 again in generation 1, its count one higher.
        self.assertEqual(sorted(found), [(0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 1, 1), (3, 0, 0)], res.stdout)
        self.assertNotEqual(found[(2, 0, 0)][0], found[(2, 1, 1)][0])
        self.assertTrue(all(policy == "failed" for _, policy in found.values()))
        for rank in (0, 1, 3):
            self.assertIn(f"rank {rank} joined generation 1 (replaced: 2)", res.stdout)
        self.assertIn("rank 2 joined generation 1", res.stdout)
        self.assertRegex(res.stderr, r"worker rank 2 \(local rank 2, pid \d+\) failed: signal 9 \(SIGKILL\)"
                                     r"[^\n]*; replacing it alone, the other workers keep running "
                                     r"\(generation 1, restart 1 of 2\)")
        self.assertRegex(res.stderr, r"generation 1 joined by all 4 workers [0-9.]+ s after the failure "
                                     r"\(rank 2 replaced\)")
        self.assertNotIn("restarting the worker group", res.stderr)
        run = os.path.join(self.dir, "latest")
        # The replaced worker's files stay; its replacement writes beside them.
        for d in ("attempt_0/2", "attempt_0/2_generation_1"):
            self.assertTrue(os.path.isdir(os.path.join(run, d)), d)
        with open(os.path.join(run, "attempt_0/2_generation_1/stdout.log")) as f:
            self.assertIn("rank 2 joined generation 1", f.read())
        with open(os.path.join(run, "trace.json")) as f:
            names = json.dumps(json.load(f))
        self.assertIn("generation_joined", names)

    def test_a_replacement_that_dies_before_joining_starts_the_next_generation(self):
        res = self.launch("--restart-policy", "failed", "--max-restarts", "3",
                          worker_args=("--crash-rank", "1", "--replacement-dies"))
        self.assertEqual(res.returncode, 0, res.stderr)
        found = starts(res.stdout)
        self.assertEqual(sorted(found), [(0, 0, 0), (1, 0, 0), (1, 1, 1), (1, 2, 2), (2, 0, 0), (3, 0, 0)],
                         res.stdout)
        self.assertIn("(generation 2, restart 2 of 3)", res.stderr)
        # The survivors were waiting on generation 1: superseded, they joined generation 2.
        for rank in (0, 2, 3):
            self.assertIn(f"rank {rank} joined generation 2 (replaced: 1)", res.stdout)
        self.assertRegex(res.stderr, r"generation 2 joined by all 4 workers [0-9.]+ s after the failure "
                                     r"\(rank 1 replaced\)")
        self.assertNotIn("generation 1 joined", res.stderr)
        self.assertNotIn("falling back", res.stderr)

    def test_a_program_that_does_not_take_part_falls_back_to_a_group_restart(self):
        res = self.launch("--restart-policy", "failed", "--max-restarts", "1", "--recovery-timeout", "1",
                          worker_args=("--crash-rank", "1", "--ignore"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("the workers did not all join generation 1 within 1 s (--recovery-timeout); "
                      "falling back to a group restart", res.stderr)
        self.assertEqual(res.stderr.count("falling back"), 1, res.stderr)
        # The replacement's restart became the group restart: every rank ran again at count 1.
        found = starts(res.stdout)
        for rank in range(4):
            self.assertIn((rank, 0, 1), found, res.stdout)

    def test_replacements_count_against_max_restarts(self):
        res = self.launch("--restart-policy", "failed", "--max-restarts", "0", worker_args=("--crash-rank", "3"))
        self.assertEqual(res.returncode, 137, res.stderr)
        self.assertNotIn("replacing it alone", res.stderr)

    def test_the_group_policy_gives_workers_no_generation(self):
        res = self.launch(worker_args=())
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(all(policy == "-" for _, policy in starts(res.stdout).values()), res.stdout)

    def test_usage_errors(self):
        res = run_ptrun(["--restart-policy", "some", "--nproc-per-node", "1", "true"])
        self.assertEqual(res.returncode, 2)
        self.assertIn("--restart-policy 'some': expected group or failed", res.stderr)
        # Several nodes are allowed (tests/hosts/test_recovery_hosts.py runs them).


if __name__ == "__main__":
    unittest.main()
