"""Real torch.distributed.TCPStore clients (Debian's PyTorch 1.13 here; 2.x on a GPU machine) use
every store verb against ptrun's agent store, two workers at once."""
import os
import unittest

from harness import PtrunTestCase, run_ptrun

PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_store_verbs.py")


@unittest.skipUnless(os.path.exists(PYTHON) and os.path.exists("/usr/bin/torchrun"), "python3-torch missing")
class TorchStoreVerbs(PtrunTestCase):
    def test_every_verb_against_the_agent_store(self):
        res = run_ptrun(["--standalone", "--nproc-per-node", "2", "--tee", "1", SCRIPT],
                        env={"PYTHON_EXEC": PYTHON}, timeout=180)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        for rank in (0, 1):
            for verb in ("set/get", "add", "compare_set", "wait", "wait_timeout", "delete_key/num_keys"):
                self.assertIn(f":{rank}] ok {verb}", res.stdout)
        self.assertIn("verbs ok", res.stdout)


if __name__ == "__main__":
    unittest.main()
