"""The same env-dumping worker under Debian's torchrun (PyTorch 1.13) and under ptrun sees the same
variable names with matching values, ports and run ids aside."""
import os
import re
import shutil
import unittest

from harness import PtrunTestCase, _env, read_dumps, run_ptrun
import subprocess

TORCHRUN = "/usr/bin/torchrun"
# ptrun also sets the 2.2+ name of the NCCL switch, which 1.13's torchrun does not know.
PTRUN_ONLY = {"TORCH_NCCL_ASYNC_ERROR_HANDLING"}
DIFFERENT_PER_RUN = {"MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE"}
# torchrun 1.13 --standalone lets worker rank 0 host the store (False); ptrun hosts it itself (True),
# as torch 2.5+ agents do.
INTENDED = {"TORCHELASTIC_USE_AGENT_STORE": ("False", "True")}
IGNORED = {"_", "PWD", "OLDPWD", "SHLVL"}


@unittest.skipUnless(os.path.exists(TORCHRUN), "Debian's torchrun (python3-torch) is not installed")
class TorchrunCompat(PtrunTestCase):
    def added_env(self, dump):
        env = dump["env"]
        return {k: v for k, v in env.items() if k not in IGNORED and os.environ.get(k) != v}

    def run_both(self, n):
        tdir, pdir = os.path.join(self.dir, "torchrun"), os.path.join(self.dir, "ptrun")
        os.mkdir(tdir)
        os.mkdir(pdir)
        env = _env({}, unset=("OMP_NUM_THREADS",))
        # 1.13 on Python 3.11 needs --redirects 9:0 --tee 9:0 (see README); underscore spellings only.
        subprocess.run([TORCHRUN, "--standalone", "--nproc_per_node", str(n), "--redirects", "9:0", "--tee", "9:0",
                        "--monitor_interval", "0.1", "--no_python", *self.worker("--dump", tdir)],
                       env=env, check=True, capture_output=True, timeout=120)
        res = run_ptrun(["--standalone", "--nproc_per_node", str(n), "--redirects", "9:0", "--tee", "9:0",
                         "--monitor_interval", "0.1", "--no_python", *self.worker("--dump", pdir)],
                        unset=("OMP_NUM_THREADS",))
        self.assertEqual(res.returncode, 0, res.stderr)
        return read_dumps(tdir), read_dumps(pdir)

    def test_same_names_and_values(self):
        torch_dumps, ptrun_dumps = self.run_both(2)
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


if __name__ == "__main__":
    unittest.main()
