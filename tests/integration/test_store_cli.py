"""ptrun-store, the standalone server binary: flags, the port line, serving, signals, exit codes."""
import os
import signal
import socket
import struct
import subprocess
import unittest

from harness import PtrunTestCase
from store_harness import PTRUN_STORE, start_ptrun_store, stop


def run_store(*args):
    return subprocess.run([PTRUN_STORE, *args], capture_output=True, text=True, timeout=30)


def ping(port, nonce=0x1234ABCD):
    """A 2.5+ handshake by hand: VALIDATE (00 CE F7 85 3C) then PING; returns the echoed nonce."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x00" + struct.pack("<I", 0x3C85F7CE) + b"\x0d" + struct.pack("<I", nonce))
        reply = b""
        while len(reply) < 4:
            chunk = s.recv(4 - len(reply))
            if not chunk:
                break
            reply += chunk
        return struct.unpack("<I", reply)[0] if len(reply) == 4 else None


class StoreCli(PtrunTestCase):
    def test_help_and_version_exit_0(self):
        res = run_store("--help")
        self.assertEqual(res.returncode, 0, res.stderr)
        for flag in ("--host", "--port", "--max-key-bytes", "--max-value-bytes", "--max-queued-bytes",
                     "--max-connections", "--log-level", "--version"):
            self.assertIn(flag, res.stdout)
        res = run_store("--version")
        self.assertEqual((res.returncode, res.stdout.split()[0]), (0, "ptrun-store"))

    def test_bad_flags_exit_2_with_one_line(self):
        for args, needle in ((["--bogus"], "--bogus"), (["--port", "70000"], "70000"),
                             (["--max-connections", "0"], "--max-connections"),
                             (["--log-level", "loud"], "loud"), (["--max-value-bytes", "-1"], "-1")):
            res = run_store(*args)
            self.assertEqual(res.returncode, 2, (args, res.stderr))
            self.assertEqual(len(res.stderr.strip().splitlines()), 1, res.stderr)
            self.assertIn(needle, res.stderr)
            self.assertTrue(res.stderr.startswith("ptrun-store: error: "), res.stderr)
            self.assertEqual(res.stdout, "")

    def test_serves_on_the_reported_port_and_stops_on_sigterm(self):
        proc, port = start_ptrun_store()
        self.leftover.append(proc.pid)
        self.assertGreater(port, 0)
        self.assertEqual(ping(port), 0x1234ABCD)
        self.assertEqual(stop(proc, signal.SIGTERM), 0)

    def test_sigint_stops_with_exit_0(self):
        proc, port = start_ptrun_store("--log-level", "debug")
        self.leftover.append(proc.pid)
        self.assertEqual(ping(port), 0x1234ABCD)
        self.assertEqual(stop(proc, signal.SIGINT), 0)

    def test_limits_reach_the_server(self):
        proc, port = start_ptrun_store("--max-key-bytes", "4")
        self.leftover.append(proc.pid)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            # Modern SET (code 1) with a 5-byte key: over the cap, so the server closes us.
            s.sendall(b"\x00" + struct.pack("<I", 0x3C85F7CE) + b"\x01" + struct.pack("<Q", 5) + b"abcde")
            self.assertEqual(s.recv(16), b"")
        self.assertEqual(ping(port), 0x1234ABCD)  # and goes on serving
        self.assertEqual(stop(proc), 0)
        self.assertIn("key", proc.stderr_text)

    def test_port_in_use_exits_1(self):
        proc, port = start_ptrun_store()
        self.leftover.append(proc.pid)
        res = run_store("--host", "127.0.0.1", "--port", str(port))
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertIn(str(port), res.stderr)
        self.assertEqual(stop(proc), 0)


if __name__ == "__main__":
    unittest.main()
