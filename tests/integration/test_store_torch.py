"""Byte compatibility with real PyTorch (Debian's 1.13), from both sides:
(a) torch.distributed.TCPStore clients drive every verb against ptrun-store;
(b) ptrun's own client (store_verbs_client, legacy dialect) drives every verb against torch's own
TCPStore server, and torch's client then reads what ptrun's client wrote."""
import os
import subprocess
import unittest

from harness import PtrunTestCase
from store_harness import (PYTHON, STORE_VERBS_CLIENT, HERE, start_ptrun_store, start_torch_server,
                           stop)
from harness import wait_output

VERBS = ("set/get", "add", "compare_set", "wait", "wait_timeout", "delete_key/num_keys")


@unittest.skipUnless(os.path.exists(PYTHON) and os.path.exists("/usr/bin/torchrun"), "python3-torch missing")
class TorchClientAgainstPtrunStore(PtrunTestCase):
    def test_every_torch_verb_against_ptrun_store(self):
        proc, port = start_ptrun_store()
        self.leftover.append(proc.pid)
        script = os.path.join(HERE, "torch_store_verbs.py")
        # Two torch processes at once (RANK prefixes their keys), as two workers would.
        runs = [subprocess.Popen([PYTHON, script, "--host", "127.0.0.1", "--port", str(port)],
                                 env={**os.environ, "RANK": str(r), "WORLD_SIZE": "2"},
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for r in (0, 1)]
        self.leftover += [r.pid for r in runs]
        for run in runs:
            out, err = run.communicate(timeout=120)
            self.assertEqual(run.returncode, 0, out + err)
            for verb in VERBS:
                self.assertIn(f"ok {verb}\n", out)
            self.assertIn("verbs ok", out)
        self.assertEqual(stop(proc), 0)
        self.assertNotIn("closing connection", proc.stderr_text)  # no protocol error on any connection


@unittest.skipUnless(os.path.exists(PYTHON) and os.path.exists("/usr/bin/torchrun"), "python3-torch missing")
class PtrunClientAgainstTorchServer(PtrunTestCase):
    def test_every_verb_against_torchs_own_server(self):
        server, port = start_torch_server()
        self.leftover.append(server.pid)
        res = subprocess.run([STORE_VERBS_CLIENT, "--host", "127.0.0.1", "--port", str(port),
                              "--dialect", "legacy"], capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        for verb in VERBS + ("check", "multi_get/multi_set"):
            self.assertIn(f"ok {verb}\n", res.stdout)
        # torch's own client sees the key ptrun's client wrote as "/from_ptrun" under the name "from_ptrun".
        server.stdin.write("get from_ptrun\n")
        server.stdin.flush()
        self.assertIn("value=b'hello torch'", wait_output(server.stdout, "\n", timeout=30))
        self.assertEqual(stop(server, sig=None), 0, server.stderr_text)


class PtrunClientAgainstPtrunStore(PtrunTestCase):
    def test_every_verb_both_dialects(self):
        proc, port = start_ptrun_store()
        self.leftover.append(proc.pid)
        for dialect, extra in (("legacy", ()), ("modern", ("append", "queue", "ping"))):
            res = subprocess.run([STORE_VERBS_CLIENT, "--host", "127.0.0.1", "--port", str(port),
                                  "--dialect", dialect, "--prefix", f"/{dialect}/"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            for verb in VERBS + ("check", "multi_get/multi_set") + extra:
                self.assertIn(f"ok {verb}\n", res.stdout)
        self.assertEqual(stop(proc), 0)


if __name__ == "__main__":
    unittest.main()
