"""The rendezvous cannot be faked (issue 13): a client that reaches the store's port and forges a
round's end never makes an agent report success; with a shared key, forged values are rejected
and logged; the store of a loopback endpoint listens on loopback only."""
import os
import signal
import socket

from harness import DEADLINE, AgentsTestCase, start_ptrun, tcp_sockets, wait_output
from raw_store import RawStore

FAST = "join_timeout=30,last_call_timeout=0.2,heartbeat=0.5,close_timeout=5"
FORGED_END = '{"reason":"complete","final":true,"exit_code":0,"host":"","rank":-1,"message":""}'


def listening_addresses(pid):
    """(address, port) of every TCP socket `pid` listens on."""
    out = []
    for raw, port, _, state in tcp_sockets(pid):
        if state != "0A":  # 0A: LISTEN
            continue
        if len(raw) == 4:
            addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
        else:
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
            addr = socket.inet_ntop(socket.AF_INET6, words)
        out.append((addr, port))
    return out


class RdzvIntegrity(AgentsTestCase):
    def start(self, conf=FAST, env=None):
        args = ["--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-endpoint", f"127.0.0.1:{self.port}",
                "--rdzv-id", "forge", "--rdzv-conf", conf,
                *self.worker("--notify", self.notifier.path, "--hang", "--usr1-exit", "0")]
        proc = start_ptrun(args, self.notifier, env=env)
        self.procs.append(proc)
        self.notifier.wait_lines(2)
        return proc

    def forge_end(self):
        """What a hostile client does: find the run id with LIST_KEYS, forge round 0's end."""
        store = RawStore("127.0.0.1", self.port)
        try:
            keys = store.list_keys()
            runs = {k.split("/")[3] for k in keys if k.startswith("/ptrun/rdzv/")}
            self.assertEqual(runs, {"forge"}, keys)
            store.set("/ptrun/rdzv/forge/round/0/end", FORGED_END)
        finally:
            store.close()

    def finish(self, proc, timeout=DEADLINE):
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, err

    def test_a_forged_complete_end_is_never_reported_as_success(self):
        proc = self.start()
        self.forge_end()
        code, err = self.finish(proc)
        self.assertNotEqual(code, 0, err)
        self.assertIn("declared the job complete (round 0) while 2 of this node's 2 workers were still running",
                      err)

    def test_with_a_key_forged_values_are_rejected_and_logged(self):
        key = os.path.join(self.dir, "key")
        with open(key, "w") as f:
            f.write("a shared secret of at least sixteen bytes\n")
        os.chmod(key, 0o600)
        proc = self.start(conf=FAST + f",key_file={key}")
        self.forge_end()
        err = wait_output(proc.stderr, "rejected the rendezvous value of '/ptrun/rdzv/forge/round/0/end'")
        self.assertIn("not authenticated", err)
        self.assertIsNone(proc.poll(), "a rejected forgery must not end the job")
        proc.send_signal(signal.SIGUSR1)  # the workers exit 0: a real success
        code, rest = self.finish(proc)
        self.assertEqual(code, 0, err + rest)

    def test_a_key_file_readable_by_others_is_refused(self):
        key = os.path.join(self.dir, "key")
        with open(key, "w") as f:
            f.write("a shared secret of at least sixteen bytes\n")
        os.chmod(key, 0o644)
        from harness import run_ptrun
        res = run_ptrun(["--nnodes", "1:2", "--rdzv-endpoint", f"127.0.0.1:{self.port}", "--rdzv-conf",
                         f"key_file={key}", *self.worker()])
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("chmod 600", res.stderr)

    def test_a_loopback_endpoint_is_listened_on_loopback_only(self):
        proc = self.start()
        addresses = listening_addresses(proc.pid)
        self.assertIn(("127.0.0.1", self.port), addresses)
        for addr, port in addresses:
            self.assertTrue(addr.startswith("127.") or addr == "::1", f"ptrun listens on {addr}:{port}")
        proc.send_signal(signal.SIGUSR1)
        code, err = self.finish(proc)
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    import unittest
    unittest.main()
