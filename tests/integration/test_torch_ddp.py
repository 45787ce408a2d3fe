"""Real PyTorch DDP with gloo, launched by ptrun with its agent store: the losses match the same
script under that torch's own torchrun with the same seed, for 2 and 4 processes, and a failed
attempt restarts through the same store. The torch is PTRUN_TORCH_FLAVOUR's (torch_flavour.py):
Debian 12's 1.13, or Debian 13's 2.6 in its root (both launchers then run inside the root)."""
import json
import os
import unittest

from harness import TorchTestCase, _env, run_ptrun
from torch_flavour import FLAVOUR
import subprocess

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_ddp_train.py")


class TorchDdp(TorchTestCase):
    def setUp(self):
        super().setUp()
        self.env = {"PYTHON_EXEC": FLAVOUR.python, "GLOO_SOCKET_IFNAME": "lo", **FLAVOUR.env()}

    def losses_under(self, launcher, n):
        out = os.path.join(self.dir, f"{launcher}-{n}.json")
        if launcher == "torchrun":
            cmd = [*FLAVOUR.torchrun, *FLAVOUR.torchrun_standalone, "--nproc_per_node", str(n), *FLAVOUR.torchrun_fix,
                   "--monitor_interval", "0.1", SCRIPT, out]
            res = subprocess.run(FLAVOUR.command(cmd, binds=[self.dir]), env=_env(self.env),
                                 capture_output=True, text=True, timeout=240)
        else:
            res = run_ptrun(["--standalone", "--nproc-per-node", str(n), SCRIPT, out], env=self.env,
                            timeout=240, via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, f"{launcher}: {res.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)

    def test_losses_match_torchrun(self):
        for n in (2, 4):
            with self.subTest(n=n):
                ours = self.losses_under("ptrun", n)
                theirs = self.losses_under("torchrun", n)
                self.assertEqual(ours["world"], n)
                self.assertEqual(ours["agent_store"], "True", "workers must use ptrun's store")
                self.assertEqual(len(ours["losses"]), 5)
                for a, b in zip(ours["losses"], theirs["losses"]):
                    self.assertAlmostEqual(a, b, places=6)
                self.assertLess(ours["losses"][-1], ours["losses"][0], "training makes progress")

    def test_use_libuv_0_runs_with_no_help(self):
        # #37.1: Debian's torch 2.6 is built without libuv while TCPStore defaults to it; torchrun's
        # usual workaround, --rdzv-conf use_libuv=0, reaches the workers (USE_LIBUV=0, which
        # torch's env:// store reads). No sitecustomize here (tests/torch2_site is left out).
        env = {"PYTHON_EXEC": FLAVOUR.python, "GLOO_SOCKET_IFNAME": "lo"}
        out = os.path.join(self.dir, "libuv.json")
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--rdzv-conf", "use_libuv=0",
                         SCRIPT, out], env=env, unset=("PYTHONPATH",), timeout=240,
                        via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        with open(out) as f:
            self.assertEqual(len(json.load(f)["losses"]), 5)

    def test_restart_gets_a_fresh_store(self):
        """After a failed attempt the workers rendezvous again through the same store."""
        flag = os.path.join(self.dir, "failed-once")
        script = os.path.join(self.dir, "fail_once.py")
        with open(script, "w") as f:
            f.write(f"""import os, sys, runpy
if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0':
    import torch.distributed as dist
    dist.init_process_group('gloo')
    if dist.get_rank() == 1:
        open({flag!r}, 'w').close()
        sys.exit(3)
    dist.barrier()
sys.argv = [{SCRIPT!r}, sys.argv[1]]
runpy.run_path({SCRIPT!r}, run_name='__main__')
""")
        out = os.path.join(self.dir, "restart.json")
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1", "--shutdown-timeout", "5",
                         script, out], env=self.env, timeout=240,
                        via=lambda argv: FLAVOUR.command(argv, binds=[self.dir]))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(os.path.exists(flag))
        with open(out) as f:
            self.assertEqual(len(json.load(f)["losses"]), 5)


if __name__ == "__main__":
    unittest.main()
