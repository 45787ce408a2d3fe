"""Real torch.distributed.TCPStore clients use every store verb against ptrun's agent store, two
workers at once. The torch is PTRUN_TORCH_FLAVOUR's (torch_flavour.py): Debian 12's 1.13, or
Debian 13's 2.6 in its root (ptrun then runs inside the root too)."""
import os
import unittest

from harness import TorchTestCase, run_ptrun
from torch_flavour import FLAVOUR

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_store_verbs.py")


class TorchStoreVerbs(TorchTestCase):
    def test_every_verb_against_the_agent_store(self):
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--tee", "1", SCRIPT],
                        env={"PYTHON_EXEC": FLAVOUR.python, **FLAVOUR.env()}, timeout=180,
                        via=FLAVOUR.command)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        for rank in (0, 1):
            for verb in FLAVOUR.client_verbs:
                self.assertIn(f":{rank}] ok {verb}", res.stdout)
        self.assertIn("verbs ok", res.stdout)


if __name__ == "__main__":
    unittest.main()
