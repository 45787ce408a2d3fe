"""Byte compatibility with real PyTorch, from both sides. The torch is PTRUN_TORCH_FLAVOUR's
(torch_flavour.py): Debian 12's 1.13 (legacy wire dialect), or Debian 13's 2.6 in its root (2.2+
dialect: VALIDATE, PING, CANCEL_WAIT, ...; it shares the host's loopback):
(a) torch.distributed.TCPStore clients drive every verb of their Python API against ptrun-store,
    two processes with two clients each, timeouts included;
(b) ptrun's own client (store_verbs_client) drives every verb against torch's own TCPStore
    server, in the dialect that server speaks (2.6: modern, without the queue verbs it lacks), and
    torch's client then reads what it wrote."""
import os
import subprocess
import unittest

from harness import PtrunTestCase, TorchTestCase, wait_output
from store_harness import STORE_VERBS_CLIENT, HERE, start_ptrun_store, start_torch_server, stop
from torch_flavour import CLIENT_VERBS as VERBS, FLAVOUR

MODERN_EXTRAS = ("append", "queue", "ping")


class TorchClientAgainstPtrunStore(TorchTestCase):
    def test_every_torch_verb_against_ptrun_store(self):
        proc, port = start_ptrun_store()
        self.leftover.append(proc.pid)
        self.every_verb(port)
        self.assertEqual(stop(proc), 0)
        self.assertNotIn("closing connection", proc.stderr_text)  # no protocol error on any connection

    def test_every_torch_verb_through_a_relay(self):
        # ptrun-store --relay-to: what a node's agent runs for its workers with --store-relay.
        head, head_port = start_ptrun_store()
        self.leftover.append(head.pid)
        relay, port = start_ptrun_store("--relay-to", f"127.0.0.1:{head_port}")
        self.leftover.append(relay.pid)
        self.every_verb(port)
        self.assertEqual(stop(relay), 0)
        self.assertEqual(stop(head), 0)
        for proc in (relay, head):
            self.assertNotIn("closing connection", proc.stderr_text)

    def every_verb(self, port):
        """Two torch processes drive every verb of their Python API against the store at port."""
        script = os.path.join(HERE, "torch_store_verbs.py")
        # Two torch processes at once (RANK prefixes their keys), as two workers would.
        argv = FLAVOUR.command([FLAVOUR.python, script, "--host", "127.0.0.1", "--port", str(port)])
        runs = [subprocess.Popen(argv, env={**os.environ, **FLAVOUR.env(), "RANK": str(r), "WORLD_SIZE": "2"},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
        self.leftover += [r.pid for r in runs]
        for run in runs:
            out, err = run.communicate(timeout=120)
            self.assertEqual(run.returncode, 0, out + err)
            for verb in FLAVOUR.client_verbs:
                self.assertIn(f"ok {verb}\n", out)
            self.assertIn("verbs ok", out)


class PtrunClientAgainstTorchServer(TorchTestCase):
    def test_every_verb_against_torchs_own_server(self):
        server, port = start_torch_server(FLAVOUR)
        self.leftover.append(server.pid)
        res = subprocess.run([STORE_VERBS_CLIENT, "--host", "127.0.0.1", "--port", str(port),
                              *FLAVOUR.server_client_flags], capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        for verb in VERBS + ("check", "multi_get/multi_set") + FLAVOUR.server_extras:
            self.assertIn(f"ok {verb}\n", res.stdout)
        # torch's own client sees the key ptrun's client wrote as "/from_ptrun" under the name "from_ptrun".
        server.stdin.write("get from_ptrun\n")
        server.stdin.flush()
        self.assertIn("value=b'hello torch'", wait_output(server.stdout, "\n", timeout=30))
        self.assertEqual(stop(server, sig=None), 0, server.stderr_text)


@unittest.skipIf(FLAVOUR.name != "1.13", "no torch involved: runs once, in integration.store_torch")
class PtrunClientAgainstPtrunStore(PtrunTestCase):
    def test_every_verb_both_dialects(self):
        proc, port = start_ptrun_store()
        self.leftover.append(proc.pid)
        for dialect, extra in (("legacy", ()), ("modern", MODERN_EXTRAS)):
            res = subprocess.run([STORE_VERBS_CLIENT, "--host", "127.0.0.1", "--port", str(port),
                                  "--dialect", dialect, "--prefix", f"/{dialect}/"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            for verb in VERBS + ("check", "multi_get/multi_set") + extra:
                self.assertIn(f"ok {verb}\n", res.stdout)
        self.assertEqual(stop(proc), 0)


if __name__ == "__main__":
    unittest.main()
