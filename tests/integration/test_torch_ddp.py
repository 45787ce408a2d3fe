"""Real PyTorch (Debian's 1.13) DDP with gloo, launched by ptrun with its agent store: the losses
match the same script under torchrun with the same seed, for 2 and 4 processes."""
import json
import os
import unittest

from harness import PtrunTestCase, _env, run_ptrun
import subprocess

PYTHON = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_ddp_train.py")


@unittest.skipUnless(os.path.exists(TORCHRUN), "Debian's python3-torch is not installed")
class TorchDdp(PtrunTestCase):
    def losses_under(self, launcher, n):
        out = os.path.join(self.dir, f"{launcher}-{n}.json")
        env = {"PYTHON_EXEC": PYTHON, "GLOO_SOCKET_IFNAME": "lo"}
        if launcher == "torchrun":
            subprocess.run([TORCHRUN, "--standalone", "--nproc_per_node", str(n), "--redirects", "9:0", "--tee",
                            "9:0", "--monitor_interval", "0.1", SCRIPT, out], env=_env(env), check=True,
                           capture_output=True, timeout=240)
        else:
            res = run_ptrun(["--standalone", "--nproc-per-node", str(n), SCRIPT, out], env=env, timeout=240)
            self.assertEqual(res.returncode, 0, res.stderr)
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
                         script, out], env={"PYTHON_EXEC": PYTHON, "GLOO_SOCKET_IFNAME": "lo"}, timeout=240)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(os.path.exists(flag))
        with open(out) as f:
            self.assertEqual(len(json.load(f)["losses"]), 5)


if __name__ == "__main__":
    unittest.main()
