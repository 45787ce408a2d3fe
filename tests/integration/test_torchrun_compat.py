"""ptrun against the real torchrun of PTRUN_TORCH_FLAVOUR's PyTorch (torch_flavour.py: Debian 12's
1.13, or Debian 13's 2.6 in its root, both launchers then inside the root), with the same workers:
the worker environment matches key by key (ports and run ids aside), restarts give the same
attempts with the same TORCHELASTIC_* values, and exit codes differ only where ptrun means to."""
import os
import shutil
import signal
import unittest

from harness import TorchTestCase, _env, read_dumps, run_ptrun
from torch_flavour import FLAVOUR
import subprocess

# ptrun sets the NCCL switch under both names, for workers of any torch: 1.13's torchrun knows only
# the old name, 2.x's only the 2.2+ one (2.x reads the old one too, warning that it is deprecated).
# ptrun also gives every worker the job tag of its containment (man ptrun, CONTAINMENT) and its
# start-up events socket (man ptrun, START-UP TIMELINE).
PTRUN_ONLY = ({"TORCH_NCCL_ASYNC_ERROR_HANDLING"} if FLAVOUR.name == "1.13" else {"NCCL_ASYNC_ERROR_HANDLING"}) | {
    "PTRUN_JOB_TAG", "PTRUN_EVENTS_SOCKET"}
DIFFERENT_PER_RUN = {"MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE"}
# torchrun 1.13 --standalone lets worker rank 0 host the store (False); ptrun hosts it itself (True),
# as torch 2.5+ agents do.
INTENDED = {"TORCHELASTIC_USE_AGENT_STORE": (FLAVOUR.torchrun_agent_store, "True")}
IGNORED = {"_", "PWD", "OLDPWD", "SHLVL"}


class TorchrunCompat(TorchTestCase):
    def added_env(self, dump):
        env = dump["env"]
        return {k: v for k, v in env.items() if k not in IGNORED and os.environ.get(k) != v}

    def run_both(self, n, *options, worker=()):
        """Runs the fake worker under torchrun, then under ptrun, with the same options; returns
        ((torchrun's exit code, its dumps), (ptrun's exit code, its dumps))."""
        results = []
        for launcher in ("torchrun", "ptrun"):
            out = os.path.join(self.dir, launcher)
            os.mkdir(out)
            common = ["--nproc_per_node", str(n), *FLAVOUR.torchrun_fix, "--monitor_interval", "0.1", *options,
                      "--no_python", *self.worker("--dump", out, *worker)]
            via = lambda argv: FLAVOUR.command(argv, binds=[self.dir])  # noqa: E731
            if launcher == "torchrun":
                res = subprocess.run(via([*FLAVOUR.torchrun, *FLAVOUR.torchrun_standalone, *common]),
                                     env=_env(FLAVOUR.env(), unset=("OMP_NUM_THREADS",)),
                                     capture_output=True, text=True, timeout=120)
            else:
                res = run_ptrun(["--standalone", *common], env=FLAVOUR.env(), unset=("OMP_NUM_THREADS",), via=via, timeout=120)
            results.append((res.returncode, read_dumps(out), res.stderr))
        return results

    def test_same_names_and_values(self):
        (trc, torch_dumps, terr), (prc, ptrun_dumps, perr) = self.run_both(2)
        self.assertEqual((trc, prc), (0, 0), terr + perr)
        self.assertEqual(sorted(torch_dumps), sorted(ptrun_dumps))
        for key in torch_dumps:
            theirs = self.added_env(torch_dumps[key])
            ours = self.added_env(ptrun_dumps[key])
            self.assertEqual(set(theirs), set(ours) - PTRUN_ONLY, f"variable names differ for rank {key[0]}")
            for name in set(theirs) - DIFFERENT_PER_RUN:
                expected = INTENDED.get(name, (theirs[name], theirs[name]))
                self.assertEqual(theirs[name], expected[0], name)
                self.assertEqual(ours[name], expected[1], f"{name} differs for rank {key[0]}")
            for name in ("TORCHELASTIC_ERROR_FILE",):
                self.assertRegex(ours[name], rf"/attempt_0/{key[0]}/error\.json$")
                self.assertRegex(theirs[name], rf"/attempt_0/{key[0]}/error\.json$")
            self.assertRegex(ours["MASTER_PORT"], r"^\d+$")

    def test_restarts_give_the_same_attempts(self):
        """Rank 1 fails its first two attempts; both launchers restart the group twice and succeed."""
        (trc, torch_dumps, terr), (prc, ptrun_dumps, perr) = self.run_both(
            2, "--max_restarts", "2", worker=("--fail-rank", "1", "--fail-attempts", "2", "--exit", "3"))
        self.assertEqual((trc, prc), (0, 0), terr + perr)
        self.assertEqual(sorted(torch_dumps), [(r, a) for r in range(2) for a in range(3)])
        self.assertEqual(sorted(ptrun_dumps), sorted(torch_dumps))
        for key, dump in ptrun_dumps.items():
            for name in ("TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "RANK", "WORLD_SIZE"):
                self.assertEqual(dump["env"][name], torch_dumps[key]["env"][name], f"{name} at {key}")
            self.assertEqual(dump["env"]["TORCHELASTIC_RESTART_COUNT"], str(key[1]))

    def test_exit_codes_once_restarts_are_used_up(self):
        """Both give up after --max_restarts; torchrun exits 1 for any worker failure (its
        ChildFailedError), ptrun with the failing worker's own code (128+signal for a signal)."""
        for worker, ptrun_code in ((("--exit", "7"), 7),
                                   (("--signal", str(int(signal.SIGSEGV))), 128 + signal.SIGSEGV)):
            with self.subTest(worker=worker):
                for sub in ("torchrun", "ptrun"):
                    shutil.rmtree(os.path.join(self.dir, sub), ignore_errors=True)
                (trc, torch_dumps, terr), (prc, ptrun_dumps, perr) = self.run_both(
                    2, "--max_restarts", "1", worker=("--fail-rank", "0", *worker))
                self.assertEqual(trc, 1, terr)
                self.assertEqual(prc, ptrun_code, perr)
                self.assertEqual(sorted(torch_dumps), [(r, a) for r in range(2) for a in range(2)])
                self.assertEqual(sorted(ptrun_dumps), sorted(torch_dumps))


if __name__ == "__main__":
    unittest.main()
