"""ptrun-store against hostile clients (issue 13): a failed allocation closes one connection, memory
stays under the documented bound whatever clients send, and expensive requests do not stall the
others. Loopback only; every attack is bounded in connections and bytes, every wait has a deadline."""
import os
import signal
import socket
import struct
import subprocess
import threading
import time
import unittest

import store_attacks as attack
from harness import PtrunTestCase, wait_output
from store_harness import PTRUN_STORE, PYTHON

MIB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))


def vm_hwm(pid):
    """Peak resident set of `pid` in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


def in_threads(*jobs, timeout=120):
    """Runs every job in its own thread; re-raises the first exception; fails at the deadline."""
    errors = []

    def run(job):
        try:
            job()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(job,), daemon=True) for job in jobs]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
        if t.is_alive():
            raise AssertionError(f"an attack did not finish within {timeout}s")
    if errors:
        raise errors[0]


class StoreHostile(PtrunTestCase):
    def start_store(self, *args, prefix=()):
        """ptrun-store on 127.0.0.1, port 0, stderr to a file (nobody has to drain it)."""
        self.log_path = os.path.join(self.dir, "store.log")
        with open(self.log_path, "w") as log:
            proc = subprocess.Popen([*prefix, PTRUN_STORE, "--host", "127.0.0.1", "--port", "0", *args],
                                    stdout=subprocess.PIPE, stderr=log, text=True)
        self.leftover.append(proc.pid)
        line = wait_output(proc.stdout, "\n")
        self.assertTrue(line.startswith("port="), line)
        return proc, int(line.strip().split("=", 1)[1])

    def stop_store(self, proc):
        """SIGTERM; the exit code, and the log in self.log."""
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        proc.stdout.close()
        with open(self.log_path) as f:
            self.log = f.read()
        return code

    def test_a_failed_allocation_closes_only_that_connection(self):
        # The reproduction: under a 600 MB address-space limit, connections that each send
        # ~59 MiB of a legal MULTI_SET without finishing it. The 7th used to stop the whole server.
        # With the default budget the largest holder is closed before memory runs out; with a
        # budget too large to help, the failed allocation closes only the connection that needed it.
        value = b"x" * (8 * MIB)
        partial = attack.VALIDATE + bytes([attack.MULTI_SET]) + struct.pack("<Q", 16)
        for k in range(7):
            partial += attack.field(b"k%d" % k) + attack.field(value)
        partial += attack.field(b"k7") + struct.pack("<Q", 4 * MIB) + value[:3 * MIB]
        for flags, why in (([], "max_buffered_bytes"), (["--max-buffered-bytes", str(8 << 30)], "out of memory")):
            with self.subTest(flags=flags):
                proc, port = self.start_store(*flags, prefix=["prlimit", "--as=600000000"])
                held = []
                try:
                    for i in range(12):
                        s = socket.create_connection((attack.HOST, port), timeout=30)
                        held.append(s)
                        attack.send_until_closed(s, partial)
                        self.assertEqual(attack.ping(port, i), i, f"no PING answer after connection {i + 1}")
                finally:
                    for s in held:
                        s.close()
                self.assertEqual(attack.ping(port, 99), 99)
                self.assertEqual(self.stop_store(proc), 0, self.log[-2000:])
                self.assertIn(why, self.log)
                self.assertNotIn("unexpected exception", self.log)

    def test_memory_stays_under_the_documented_bound(self):
        # Bound (man ptrun-store): max-stored + max-buffered + max-request + ~1 KiB per connection,
        # plus the program itself. Small limits keep the test quick; the attacks exceed each.
        stored, buffered, request = 32 * MIB, 32 * MIB, 8 * MIB
        proc, port = self.start_store("--max-stored-bytes", str(stored), "--max-buffered-bytes", str(buffered),
                                      "--max-request-bytes", str(request), "--max-value-bytes", str(4 * MIB))
        baseline = vm_hwm(proc.pid)
        value = b"v" * (3 * MIB)
        with attack.connect(port) as s:
            for i in range(8):
                s.sendall(attack.request(attack.SET, attack.field(b"shared%d" % i), attack.field(value)))
            s.sendall(attack.request(attack.NUM_KEYS))
            self.assertEqual(attack.u64(attack.recv_exact(s, 8)), 8)
        held = []  # connections kept open (and unread) until the end
        lock = threading.Lock()

        def keep(s):
            with lock:
                held.append(s)

        def partial_requests():  # 16 x 3.5 MiB of a 4 MiB SET, never finished
            for i in range(16):
                s = attack.connect(port)
                keep(s)
                attack.send_until_closed(s, bytes([attack.SET]) + attack.field(b"p%d" % i) +
                                         struct.pack("<Q", 4 * MIB) + value[:MIB // 2] + value)

        def tiny_replies():  # 8 M CANCEL_WAITs, replies never read
            s = attack.connect(port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            keep(s)
            attack.send_until_closed(s, bytes([attack.CANCEL_WAIT]) * (8 * MIB))

        def big_replies():  # 64 GETs of a 3 MiB value, never read
            s = attack.connect(port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            keep(s)
            attack.send_until_closed(s, attack.request(attack.GET, attack.field(b"shared0")) * 64)

        def amplified_replies():  # MULTI_GET of 8 distinct 3 MiB values, never read
            s = attack.connect(port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            keep(s)
            attack.send_until_closed(s, attack.multi(attack.MULTI_GET, [b"shared%d" % i for i in range(8)]))

        def fill_the_store():  # 64 x 1 MiB under new keys, reconnecting when closed
            i = 0
            while i < 64:
                with attack.connect(port) as s:
                    while i < 64 and not attack.send_until_closed(
                            s, attack.request(attack.SET, attack.field(b"fill%d" % i), attack.field(value[:MIB]))):
                        i += 1
                    i += 1

        try:
            in_threads(partial_requests, tiny_replies, big_replies, big_replies, amplified_replies,
                       amplified_replies, fill_the_store)
            self.assertEqual(attack.ping(port, 7), 7)
            peak = vm_hwm(proc.pid)
        finally:
            for s in held:
                s.close()
        limit = baseline + stored + buffered + request + 64 * 1024 + 16 * MIB
        self.assertLess(peak, limit, f"peak RSS {peak / MIB:.0f} MiB, bound {limit / MIB:.0f} MiB "
                                     f"(baseline {baseline / MIB:.0f} MiB)")
        self.assertEqual(self.stop_store(proc), 0)
        self.assertIn("max_buffered_bytes", self.log)
        self.assertIn("max_stored_bytes", self.log)
        print(f"peak RSS {peak / MIB:.1f} MiB (baseline {baseline / MIB:.1f}, bound {limit / MIB:.0f})")

    def test_a_store_at_its_descriptor_limit_says_so_once_not_every_100_ms(self):
        # More clients than the store may hold descriptors (ulimit -n 40): it said
        # "accept failed: Too many open files; retrying in 100 ms" ten times a second (317 lines
        # in 35 s at 100,000 ranks), never naming the limit.
        proc, port = self.start_store(prefix=["prlimit", "--nofile=40"])
        clients = []
        try:
            for _ in range(60):  # the surplus waits in the listen backlog
                clients.append(socket.create_connection((attack.HOST, port), timeout=30))
            deadline = time.monotonic() + 30
            said = ""
            while "cannot accept" not in said and time.monotonic() < deadline:
                with open(self.log_path) as f:
                    said = f.read()
                time.sleep(0.05)  # polls the log with a deadline: no event says it was written
            self.assertIn("cannot accept", said)
            time.sleep(1.0)  # the subject is a rate: ten retries pass in this second
        finally:
            for c in clients:
                c.close()
        self.assertEqual(self.stop_store(proc), 0)
        lines = [line for line in self.log.splitlines() if "cannot accept" in line]
        self.assertEqual(len(lines), 1, self.log)
        self.assertIn("RLIMIT_NOFILE", lines[0])
        self.assertIn("this process may hold 40 descriptors", lines[0])

    def test_a_reply_too_large_for_a_relay_closes_only_its_client(self):
        # A relay (--relay-to) holds each reply whole, up to its --max-request-bytes: a GET of a
        # larger value closes the client that asked, and the clients sharing its connection to
        # the store (8 clients: every one of the relay's 4) go on, the reply's bytes skipped.
        head, head_port = self.start_store()
        relay_log = os.path.join(self.dir, "relay.log")
        with open(relay_log, "w") as log:
            relay = subprocess.Popen([PTRUN_STORE, "--host", "127.0.0.1", "--port", "0",
                                      "--relay-to", f"127.0.0.1:{head_port}",
                                      "--max-request-bytes", str(MIB)],
                                     stdout=subprocess.PIPE, stderr=log, text=True)
        self.leftover.append(relay.pid)
        line = wait_output(relay.stdout, "\n")
        self.assertTrue(line.startswith("port="), line)
        port = int(line.strip().split("=", 1)[1])
        with attack.connect(head_port) as s:
            s.sendall(attack.request(attack.SET, attack.field(b"big"), attack.field(b"v" * (3 * MIB))))
            s.sendall(attack.request(attack.SET, attack.field(b"small"), attack.field(b"ok")))
            s.sendall(attack.request(attack.NUM_KEYS))
            self.assertEqual(attack.u64(attack.recv_exact(s, 8)), 2)
        clients = [attack.connect(port) for _ in range(8)]
        try:
            asker = clients[0]
            asker.sendall(attack.request(attack.GET, attack.field(b"big")))
            self.assertTrue(attack.closed_by_server(asker))
            for c in clients[1:]:
                for _ in range(3):
                    c.sendall(attack.request(attack.GET, attack.field(b"small")))
                    self.assertEqual(attack.recv_exact(c, 8 + 2), attack.field(b"ok"))
        finally:
            for c in clients:
                c.close()
        relay.send_signal(signal.SIGTERM)
        self.assertEqual(relay.wait(timeout=30), 0)
        relay.stdout.close()
        with open(relay_log) as f:
            said = f.read()
        self.assertIn("its reply through the store relay would be a reply of more than", said)
        self.assertNotIn("lost its connection to the store", said)
        self.assertEqual(self.stop_store(head), 0)

    def test_expensive_requests_do_not_stall_other_clients(self):
        # Another process runs issue 13's small-but-expensive requests (a 2 GiB MULTI_GET, APPEND
        # past the value limit, big GETs, LIST_KEYS over 100,000 keys, a MULTI_GET over the
        # budget) while this one sends a PING every 5 ms without waiting for the answers. The
        # bound is set against a baseline of this run: the same PINGs while a process only burns
        # CPU as the attacker does, so a loaded machine moves both (issue 35.23).
        proc, port = self.start_store()
        burner = subprocess.Popen([PYTHON, "-c", "import time\nend = time.monotonic() + 3\n"
                                   "while time.monotonic() < end: pass"])
        self.leftover.append(burner.pid)
        baseline = self.ping_latencies(port, burner)
        attacker = subprocess.Popen([PYTHON, os.path.join(HERE, "store_attacks.py"), "expensive", str(port)],
                                    stderr=subprocess.PIPE, text=True)
        self.leftover.append(attacker.pid)
        start = time.monotonic()
        latencies = self.ping_latencies(port, attacker)
        _, err = attacker.communicate(timeout=30)
        self.assertEqual(attacker.returncode, 0, err)
        p99 = latencies[int(len(latencies) * 0.99)]
        base_p99 = baseline[int(len(baseline) * 0.99)]
        print(f"{len(latencies)} PINGs during {time.monotonic() - start:.1f} s of attack: "
              f"p50 {latencies[len(latencies) // 2] * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, "
              f"max {latencies[-1] * 1e3:.1f} ms; baseline (CPU burner) p99 {base_p99 * 1e3:.2f} ms")
        # A stall is a request served whole on the loop: hundreds of ms for these requests.
        self.assertLess(p99, max(0.050, 5 * base_p99))
        self.assertEqual(self.stop_store(proc), 0)

    def ping_latencies(self, port, other):
        """PINGs every 5 ms, not waiting for the answers, while `other` runs (240 s at most): the
        sorted latencies of them all."""
        sent = {}
        latencies = []
        last = 0xFFFFFFFF  # the PING after the others: the receiver stops at its answer
        with attack.connect(port) as s:
            def receive():
                while True:
                    nonce = struct.unpack("<I", attack.recv_exact(s, 4))[0]
                    if nonce == last:
                        return
                    latencies.append(time.monotonic() - sent[nonce])

            receiver = threading.Thread(target=receive, daemon=True)
            receiver.start()
            start = time.monotonic()
            i = 0
            while other.poll() is None and time.monotonic() - start < 240:
                time.sleep(max(0.0, start + i * 0.005 - time.monotonic()))
                sent[i] = time.monotonic()
                s.sendall(attack.request(attack.PING, struct.pack("<I", i)))
                i += 1
            s.sendall(attack.request(attack.PING, struct.pack("<I", last)))
            receiver.join(30)
            self.assertFalse(receiver.is_alive(), "PING answers stopped coming")
        self.assertEqual(len(latencies), len(sent))
        self.assertGreater(len(latencies), 0)
        return sorted(latencies)

if __name__ == "__main__":
    unittest.main()
