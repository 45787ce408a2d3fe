#!/usr/bin/python3
"""Self-test of tests/hosts/netns-hosts.sh, the multi-host harness (hosts = network namespaces).

Stdlib only; run as root:  /usr/bin/python3 tests/hosts/test_netns_hosts.py -v
Skips (exit 77 when everything was skipped) without root or without network namespaces.
Every run uses its own namespace prefix and subnets, so it never meets another user's hosts, and
removes everything it created, also when a test fails.
"""
import os
import re
import selectors
import shutil
import subprocess
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = Path(os.environ.get("PTNS_SCRIPT", HERE / "netns-hosts.sh"))
PORT = 9000
CONNECT_TIMEOUT = 1.0   # seconds; a cut/blocked connect must time out within this
CMD_TIMEOUT = 60        # seconds; cap on any single harness command


def _pick_env():
    """A prefix and subnets of our own: 10.77.X.0/24 and fd77:0:0:X::/64, X not in use here."""
    pid = os.getpid()
    prefix = f"ptt{pid}-"
    for k in range(150):
        x = 100 + (pid + k) % 150
        routes = subprocess.run(["ip", "route", "show", "table", "all", "root", f"10.77.{x}.0/24"],
                                capture_output=True, text=True).stdout.strip()
        if not routes:
            break
    return {"PTNS_PREFIX": prefix, "PTNS_SUBNET": f"10.77.{x}", "PTNS_SUBNET6": f"fd77:0:0:{x:x}::",
            "PTNS_TIMEOUT": "10", "PTNS_KILL_GRACE": "1"}


ENV = dict(os.environ)
ENV.update(_pick_env() if shutil.which("ip") else {})
PREFIX = ENV.get("PTNS_PREFIX", "ptt-")

# On a host: listen on its IPv4 and IPv6 address, answer each connection with the peer's address.
SERVER = r"""
import selectors, socket, sys, time
port = int(sys.argv[1]); addrs = sys.argv[2:]
sel = selectors.DefaultSelector()
for a in addrs:
    s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a, port)); s.listen(16); sel.register(s, selectors.EVENT_READ)
print("ready", flush=True)
end = time.monotonic() + 280          # never outlive the test
while time.monotonic() < end:
    for key, _ in sel.select(timeout=1):
        c, peer = key.fileobj.accept()
        with c:
            c.sendall(peer[0].encode() + b"\n")
"""

# From a host: connect, print "ok <address the server saw>", "timeout" or "error <what>".
CLIENT = r"""
import socket, sys
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
try:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        print("ok", s.makefile().readline().strip())
except (socket.timeout, TimeoutError):
    print("timeout")
except OSError as e:
    print("error", e.__class__.__name__, e.errno)
"""


def argv(*args):
    return [str(SCRIPT), *map(str, args)]


def harness(*args, check=True, timeout=CMD_TIMEOUT):
    p = subprocess.run([str(SCRIPT), *map(str, args)], env=ENV, capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"netns-hosts.sh {' '.join(map(str, args))} -> {p.returncode}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def out(*args):
    return harness(*args).stdout.strip()


def reap_stale():
    """Remove host sets of earlier runs that were killed before their cleanup (e.g. a ctest timeout)."""
    for state in Path("/run").glob("ptt*-netns-hosts.state"):
        m = re.fullmatch(r"ptt(\d+)-netns-hosts\.state", state.name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue                        # its test is still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        subprocess.run(argv("down"), env=dict(ENV, PTNS_PREFIX=f"ptt{m.group(1)}-"),
                       capture_output=True, timeout=CMD_TIMEOUT)


def skip_unless_possible():
    if not shutil.which("ip"):
        raise unittest.SkipTest("needs iproute2 (the ip command)")
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root: network namespaces need root (CAP_NET_ADMIN, CAP_SYS_ADMIN)")
    reap_stale()


def up(*args):
    p = harness("up", *args, check=False)
    if p.returncode == 77:
        raise unittest.SkipTest(p.stderr.strip().splitlines()[-1])
    if p.returncode != 0:
        harness("down", check=False)
        raise AssertionError(f"up {args} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def leftovers():
    """Everything of ours that may still exist: namespaces, routes, /etc/netns dirs, state file."""
    left = []
    ns_dir = Path("/run/netns")
    if ns_dir.is_dir():
        left += [f"netns {p.name}" for p in ns_dir.iterdir() if p.name.startswith(PREFIX)]
    netns_etc = Path("/etc/netns")
    if netns_etc.is_dir():
        left += [f"/etc/netns/{p.name}" for p in netns_etc.iterdir() if p.name.startswith(PREFIX)]
    for cmd in (["ip", "-4", "route", "show", "table", "all", "root", ENV["PTNS_SUBNET"] + ".0/24"],
                ["ip", "-6", "route", "show", "table", "all", "root", ENV["PTNS_SUBNET6"] + "/64"]):
        r = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        if r:
            left.append(f"route: {r}")
    state = Path(f"/run/{PREFIX}netns-hosts.state")
    if state.exists():
        left.append(str(state))
    return left


def down_and_check():
    harness("down")
    left = leftovers()
    if left:
        raise AssertionError(f"down left behind: {left}")


class ThreeHosts(unittest.TestCase):
    """Hosts node1..node3, each running a server on PORT (IPv4 + IPv6)."""

    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        t0 = time.monotonic()
        up(3)
        cls.addClassCleanup(down_and_check)
        cls.up_seconds = time.monotonic() - t0
        cls.servers = {}
        for i in (1, 2, 3):
            addrs = [out("ip", i), out("ip6", i)]
            p = subprocess.Popen(argv("exec", i, "python3", "-c", SERVER, PORT, *addrs),
                                 env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            cls.servers[i] = p
            cls.addClassCleanup(cls._stop, p)
        for i, p in cls.servers.items():
            cls._wait_ready(i, p)

    @staticmethod
    def _stop(p):
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=10)

    @staticmethod
    def _wait_ready(i, p, deadline_s=15):
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if sel.select(timeout=max(0.0, end - time.monotonic())):
                line = p.stdout.readline()
                if line.strip() == "ready":
                    return
                if not line:
                    break
        err = p.stderr.read() if p.stderr and p.poll() is not None else ""
        raise AssertionError(f"process on host {i} not ready within {deadline_s}s: rc={p.poll()} {err}")

    # ---- helpers

    def connect(self, *probes, timeout=CONNECT_TIMEOUT):
        """probes: (from_host, target, port). Runs them in parallel; returns their results, in order."""
        procs = [subprocess.Popen(argv("exec", src, "python3", "-c", CLIENT, target, port, timeout), env=ENV,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for src, target, port in probes]
        results = []
        for p, probe in zip(procs, probes):
            o, e = p.communicate(timeout=timeout + 20)
            self.assertEqual(p.returncode, 0, f"client {probe}: {e}")
            results.append(o.strip())
        return results

    def assertConnects(self, src, target, expect_peer, port=PORT):
        self.assertEqual(self.connect((src, target, port)), [f"ok {expect_peer}"],
                         f"host {src} -> {target}:{port}")

    # ---- tests

    def test_bringup_fast(self):
        self.assertLess(self.up_seconds, 10, "up 3 took too long")

    def test_names_and_addresses(self):
        for i in (1, 2, 3):
            self.assertEqual(out("name", i), f"node{i}")
            self.assertEqual(out("ip", i), f"{ENV['PTNS_SUBNET']}.{10 + i}")
            self.assertEqual(out("ip6", i), f"{ENV['PTNS_SUBNET6']}{10 + i}")
            self.assertEqual(out("ns", i), f"{PREFIX}h{i}")
        status = out("status")
        for i in (1, 2, 3):
            self.assertRegex(status, rf"(?m)^{i}\s+netns={PREFIX}h{i}\s+name=node{i}\s.*cable=UP\b")

    def test_hostnames(self):
        for i in (1, 2, 3):
            r = out("exec", i, "python3", "-c",
                    "import os, socket; print(socket.gethostname(), os.uname().nodename, os.environ['HOSTNAME'])")
            self.assertEqual(r, f"node{i} node{i} node{i}")
        # the machine's own hostname is untouched
        self.assertNotIn(os.uname().nodename, ("node1", "node2", "node3"))

    def test_name_resolution(self):
        code = "import socket, sys; print(' '.join(socket.gethostbyname(n) for n in sys.argv[1:]))"
        ips = {i: out("ip", i) for i in (1, 2, 3)}
        self.assertEqual(out("exec", 1, "python3", "-c", code, "node2", "node3"), f"{ips[2]} {ips[3]}")
        self.assertEqual(out("exec", 2, "python3", "-c", code, "node1"), ips[1])
        v6 = "import socket; print(socket.getaddrinfo('node1-v6', 1, socket.AF_INET6)[0][4][0])"
        self.assertEqual(out("exec", 2, "python3", "-c", v6), out("ip6", 1))

    def test_tcp_by_name(self):
        self.assertConnects(2, "node1", out("ip", 2))
        self.assertConnects(3, "node1", out("ip", 3))
        self.assertConnects(1, "node3", out("ip", 1))

    def test_server_bound_to_host_address_only(self):
        # the server on node1 listens on node1's addresses, not on its loopback
        self.assertRegex(self.connect((1, "127.0.0.1", PORT))[0], r"^error ConnectionRefusedError")

    def test_ipv6(self):
        self.assertConnects(2, out("ip6", 1), out("ip6", 2))
        self.assertConnects(3, "node1-v6", out("ip6", 3))

    def test_root_namespace_guard(self):
        # outside the namespaces the emulated subnets are unreachable, never routed to a real network
        for target in (out("ip", 1), out("ip6", 1)):
            r = subprocess.run(["ip", "route", "get", target], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0, f"root namespace routes {target}: {r.stdout}")

    def test_cut_and_heal(self):
        self.addCleanup(harness, "heal", 1, check=False)
        ip2 = out("ip", 2)
        # first a working connection, so node2 knows node1's MAC: a cut host then makes a connect time out
        # (SYN dropped). Without it the outcome depends on timing: ARP/ND may give up first, and the
        # connect fails with EHOSTUNREACH instead, which is what a real cut looks like for an unknown peer.
        self.assertConnects(2, "node1", ip2)
        self.assertConnects(2, out("ip6", 1), out("ip6", 2))
        out("cut", 1)
        self.assertRegex(out("status"), r"(?m)^1\s.*cable=DOWN")
        t0 = time.monotonic()
        r = self.connect((2, "node1", PORT), (2, out("ip6", 1), PORT), (2, "node3", PORT))
        elapsed = time.monotonic() - t0
        self.assertEqual(r[:2], ["timeout", "timeout"], "connect to a cut host must time out")
        self.assertEqual(r[2], f"ok {ip2}", "cutting node1 must not affect node2 <-> node3")
        self.assertLess(elapsed, CONNECT_TIMEOUT + 10)
        out("heal", 1)
        self.assertConnects(2, "node1", ip2)
        self.assertConnects(3, out("ip6", 1), out("ip6", 3))

    def test_block_pair(self):
        self.addCleanup(harness, "unblock", 1, check=False)
        p = harness("block", 1, 2, check=False, timeout=600)   # may apt-get install nftables
        if p.returncode == 77:
            self.skipTest(p.stderr.strip().splitlines()[-1])
        self.assertEqual(p.returncode, 0, p.stderr)
        ip1, ip2, ip3 = out("ip", 1), out("ip", 2), out("ip", 3)
        r = self.connect((2, "node1", PORT), (1, "node2", PORT), (2, out("ip6", 1), PORT),
                         (3, "node1", PORT), (1, "node3", PORT), (2, "node3", PORT))
        self.assertEqual(r[:3], ["timeout"] * 3, "node1 <-> node2 must be blocked, both ways, IPv4 and IPv6")
        self.assertEqual(r[3:], [f"ok {ip3}", f"ok {ip1}", f"ok {ip2}"], "only the pair 1-2 is blocked")
        self.assertRegex(out("status"), r"(?m)^1\s.*block=blocked")
        out("unblock", 1)
        self.assertConnects(2, "node1", ip2)
        self.assertConnects(1, "node2", ip1)
        self.assertConnects(2, "node1-v6", out("ip6", 2))

    def test_not_root_exits_77(self):
        if not shutil.which("setpriv"):
            self.skipTest("needs setpriv (util-linux)")
        for sub in (["up", "1"], ["down"], ["exec", "1", "true"]):
            p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                str(SCRIPT), *sub], env=ENV, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 77, f"{sub}: {p.stderr}")
            self.assertIn("needs root: network namespaces", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_bad_arguments(self):
        self.assertEqual(harness("exec", 9, "true", check=False).returncode, 1)
        self.assertEqual(harness("up", "0", check=False).returncode, 2)
        self.assertEqual(harness("frobnicate", check=False).returncode, 2)
        p = subprocess.run([str(SCRIPT), "up", "1"], env=dict(ENV, PTNS_SUBNET="8.8.8"),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)             # only private subnets (checked before anything changes)
        self.assertIn("private", p.stderr)


class UpDown(unittest.TestCase):
    """down removes everything, kills what still runs in the hosts, and is idempotent."""

    @classmethod
    def setUpClass(cls):
        skip_unless_possible()

    def setUp(self):
        self.addCleanup(down_and_check)

    def wait_in_netns(self, host, pid, deadline_s=10):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            r = subprocess.run(["ip", "netns", "pids", f"{PREFIX}h{host}"], capture_output=True, text=True)
            if str(pid) in r.stdout.split():
                return
            time.sleep(0.05)
        self.fail(f"pid {pid} never showed up in host {host}")

    def test_head_and_down(self):
        t0 = time.monotonic()
        up(2, "--head")
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(out("name", 0), "head")
        self.assertEqual(out("exec", 0, "hostname"), "head")
        self.assertEqual(out("exec", 2, "getent", "hosts", "head").split()[0], out("ip", 0))
        # a well-behaved process and one that ignores SIGTERM, left running in the hosts
        polite = subprocess.Popen(argv("exec", 1, "sleep", 300), env=ENV)
        stubborn = subprocess.Popen(argv("exec", 2, "python3", "-c",
                                          "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                          "print('ready', flush=True); time.sleep(300)"),
                                    env=ENV, stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: [p.kill() for p in (polite, stubborn) if p.poll() is None])
        ThreeHosts._wait_ready(2, stubborn)   # SIGTERM ignored from here on
        self.wait_in_netns(1, polite.pid)
        self.wait_in_netns(2, stubborn.pid)
        self.assertRegex(out("status"), r"(?m)^2\s.*procs=1")
        t0 = time.monotonic()
        harness("down")
        took = time.monotonic() - t0
        self.assertEqual(polite.wait(timeout=10), -15)
        self.assertEqual(stubborn.wait(timeout=10), -9)
        self.assertLess(took, 10, "down must be bounded")
        self.assertEqual(leftovers(), [])
        harness("down")                      # idempotent
        harness("down")
        self.assertEqual(leftovers(), [])
        self.assertEqual(harness("exec", 1, "true", check=False).returncode, 1)

    def test_up_twice_replaces(self):
        up(2)
        up(1)                                # removes the previous set first
        self.assertFalse(Path(f"/run/netns/{PREFIX}h2").exists())
        self.assertEqual(out("exec", 1, "hostname"), "node1")


def main():
    """Runs the tests of the script being run (also when another test script imports this main)
    and exits 77, ctest's SKIP_RETURN_CODE, when every test was skipped."""
    prog = unittest.main(module="__main__", exit=False)
    r = prog.result
    if r.wasSuccessful() and r.skipped and len(r.skipped) >= r.testsRun:
        sys.exit(77)                         # everything skipped: ctest SKIP_RETURN_CODE
    sys.exit(0 if r.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
