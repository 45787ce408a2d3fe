"""Recovery in place for PyTorch scripts (issue 36): examples/python/recover_ddp.py with
ptrun.recovery, gloo DDP, 4 ranks, rank 2 SIGKILLed at step 10. The survivors keep their pids, the
replacement is rank 2 with a new pid, training resumes at step 10 (no checkpoint exists) and the
final parameters equal an uninterrupted run's bit for bit. Once under ptrun --restart-policy
failed, once with this test playing the launcher's part of the protocol on a ptrun store (which
also drives a superseded generation). PTRUN_TORCH_FLAVOUR picks torch 1.13 or 2.6 (torch_flavour.py)."""
import os
import re
import subprocess
import sys
import unittest

from harness import DEADLINE, TorchTestCase, _env, kill_all, run_ptrun
from torch_flavour import FLAVOUR

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(REPO, "examples", "python", "recover_ddp.py")
STORE_C_LIB = os.path.abspath(os.environ.get(
    "PTRUN_STORE_C_LIB", os.path.join(REPO, "build/rendezvous/c_api/libptrun_store_c.so")))
WORLD, STEPS, CRASH_STEP, CRASH_RANK = 4, 30, 10, 2
sys.path.insert(0, os.path.join(REPO, "python"))  # ptrun.store, for the launcher's part


def starts(text):
    """[(rank, generation, pid)] from the workers' 'pid P rank R generation G' lines."""
    return [(int(m[2]), int(m[3]), int(m[1]))
            for m in re.finditer(r"^pid (\d+) rank (\d+) generation (\d+)$", text, re.M)]


class RecoveryCase(TorchTestCase):
    def setUp(self):
        super().setUp()
        site = FLAVOUR.env().get("PYTHONPATH")
        self.env = {"GLOO_SOCKET_IFNAME": "lo", "PTRUN_STORE_C_LIB": STORE_C_LIB,
                    "PYTHONPATH": os.pathsep.join(p for p in (site, os.path.join(REPO, "python")) if p)}

    def example(self, params, crash=True):
        args = [FLAVOUR.python, "-u", EXAMPLE, "--steps", str(STEPS), "--final-params", params]
        if crash:
            args += ["--crash-at-step", str(CRASH_STEP), "--crash-rank", str(CRASH_RANK)]
        return args

    def read(self, path):
        with open(path) as f:
            return f.read()

    def uninterrupted(self):
        """The final parameters of the same training without a failure (plain ptrun run)."""
        params = os.path.join(self.dir, "uninterrupted.txt")
        res = run_ptrun(["--standalone", "--nproc-per-node", str(WORLD), *self.example(params, False)],
                        env=self.env, timeout=240, via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        self.assertEqual(sorted(r for r, g, _ in starts(res.stdout)), list(range(WORLD)))
        self.assertNotIn("re-formed", res.stdout)
        return self.read(params)

    def assert_recovered_in_place(self, out, generation):
        """Survivors started once and re-formed `generation` at CRASH_STEP from rank 0's state; rank
        2 started twice (new pid) and caught up; every rank finished."""
        found = starts(out)
        self.assertEqual(sorted((r, g) for r, g, _ in found),
                         sorted([(r, 0) for r in range(WORLD)] + [(CRASH_RANK, generation)]), out)
        pids = [pid for r, _, pid in found if r == CRASH_RANK]
        self.assertNotEqual(pids[0], pids[1], "the replacement is a new process")
        for rank in range(WORLD):
            if rank != CRASH_RANK:
                self.assertIn(f"rank {rank} re-formed generation {generation} at step {CRASH_STEP} "
                              "(source rank 0)", out)
            self.assertIn(f"rank {rank} done at step {STEPS}", out)
        self.assertIn(f"rank {CRASH_RANK} caught up: generation {generation} at step {CRASH_STEP} "
                      "(source rank 0)", out)


class UnderPtrun(RecoveryCase):
    def test_killed_rank_is_replaced_and_training_resumes_in_place(self):
        params = os.path.join(self.dir, "recovered.txt")
        res = run_ptrun(["--standalone", "--nproc-per-node", str(WORLD), "--restart-policy", "failed",
                         "--max-restarts", "3", *self.example(params)], env=self.env, timeout=240,
                        via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        self.assert_recovered_in_place(res.stdout, generation=1)
        self.assertNotIn("restarting the worker group", res.stderr)
        self.assertEqual(self.read(params), self.uninterrupted(), "bit-for-bit equal parameters")

    def test_without_restart_policy_failed_the_helper_is_plain_torch(self):
        # The group policy: the kill restarts every worker (new pids, RESTART_COUNT 1, no crash
        # then), and recover() re-raised the survivors' error instead of waiting.
        params = os.path.join(self.dir, "group.txt")
        res = run_ptrun(["--standalone", "--nproc-per-node", str(WORLD), "--max-restarts", "1",
                         *self.example(params)], env=self.env, timeout=240,
                        via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        found = starts(res.stdout)
        self.assertEqual(len(found), 2 * WORLD, res.stdout)
        self.assertTrue(all(g == 0 for _, g, _ in found))
        self.assertNotIn("re-formed", res.stdout)
        self.assertIn("restarting the worker group", res.stderr)
        self.assertEqual(self.read(params), self.uninterrupted())


class FakeLauncher:
    """The launcher's part of the protocol, by hand: the workers' store (ptrun's, in this process),
    workers started with the env ptrun gives them, and the generation keys (wire names, with '/')."""

    def __init__(self, case):
        os.environ["PTRUN_STORE_C_LIB"] = STORE_C_LIB
        from ptrun.store import Client, Server
        self.case, self.server = case, Server("127.0.0.1", 0)
        self.client = Client("127.0.0.1", self.server.port, timeout=5)
        self.procs, self.logs = [], []

    def start(self, rank, generation, params, crash=True):
        """Starts worker `rank` as ptrun would in `generation` (OMP_NUM_THREADS=1 too)."""
        env = {**self.case.env, "OMP_NUM_THREADS": "1", "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(WORLD),
               "LOCAL_WORLD_SIZE": str(WORLD), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(self.server.port), "PTRUN_RESTART_POLICY": "failed",
               "PTRUN_GENERATION": str(generation), "TORCHELASTIC_RESTART_COUNT": str(generation)}
        log = os.path.join(self.case.dir, f"rank{rank}.gen{generation}.log")
        with open(log, "w") as out:
            proc = subprocess.Popen(FLAVOUR.command(self.case.example(params, crash), binds=[self.case.dir]),
                                    env=_env(env), stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        self.logs.append(log)
        return proc

    def begin(self, generation, replaced):
        self.client.set("/ptrun/generation", str(generation).encode())
        self.client.set(f"/ptrun/gen/{generation}/begun", replaced.encode())

    def output(self):
        return "".join(self.case.read(log) for log in self.logs)

    def close(self):
        kill_all([p.pid for p in self.procs if p.poll() is None])
        for p in self.procs:
            p.wait()
        self.client.close()
        self.server.stop()


class WithoutLauncher(RecoveryCase):
    def uninterrupted(self):
        """The final parameters of the same workers without a failure."""
        params = os.path.join(self.dir, "uninterrupted.txt")
        launcher = FakeLauncher(self)
        try:
            for proc in [launcher.start(rank, 0, params, crash=False) for rank in range(WORLD)]:
                self.assertEqual(proc.wait(timeout=120), 0, launcher.output()[-3000:])
            self.assertNotIn("re-formed", launcher.output())
        finally:
            launcher.close()
        return self.read(params)

    def run_crash(self, supersede):
        params = os.path.join(self.dir, "recovered.txt")
        launcher = FakeLauncher(self)
        try:
            workers = [launcher.start(rank, 0, params) for rank in range(WORLD)]
            self.assertEqual(workers[CRASH_RANK].wait(timeout=120), -9, launcher.output())
            launcher.begin(1, str(CRASH_RANK))
            generation = 1
            if supersede:
                # Generation 1's replacement never joins: once a survivor joined 1 (its counter
                # exists), ptrun would supersede it by generation 2 and start the replacement there.
                launcher.client.wait(["/ptrun/gen/1/joined"], timeout=DEADLINE)
                launcher.client.compare_set("/ptrun/gen/1/ready", b"", b"superseded")
                launcher.begin(2, str(CRASH_RANK))
                generation = 2
            launcher.start(CRASH_RANK, generation, params)
            ready = f"/ptrun/gen/{generation}/ready"
            launcher.client.wait([ready], timeout=60)
            self.assertEqual(launcher.client.get(ready), b"joined")
            self.assertEqual(launcher.client.add(f"/ptrun/gen/{generation}/joined", 0), WORLD)
            for p in launcher.procs[WORLD:] + workers[:CRASH_RANK] + workers[CRASH_RANK + 1:]:
                self.assertEqual(p.wait(timeout=120), 0, launcher.output()[-3000:])
            self.assert_recovered_in_place(launcher.output(), generation)
        finally:
            launcher.close()
        self.assertEqual(self.read(params), self.uninterrupted(), "bit-for-bit equal parameters")

    def test_survivors_and_replacement_join_the_next_generation(self):
        self.run_crash(supersede=False)

    def test_a_superseded_generation_is_followed_to_the_latest(self):
        self.run_crash(supersede=True)


# The protocol logic these two drive is the helper's own Python, the same under every torch; what
# 2.6 changes (its TCPStore client, gloo's errors, destroy_process_group) UnderPtrun runs for real.
# Under 2.6 each of these costs a minute of CI in the root for nothing new: 1.13 alone runs them.
if FLAVOUR.name != "1.13":
    del WithoutLauncher


if __name__ == "__main__":
    unittest.main()
