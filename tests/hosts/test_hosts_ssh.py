#!/usr/bin/python3
"""One command, many hosts (issue 38) through real OpenSSH: every test of test_hosts_launch.py
again, with `--remote-shell "ssh -F CONFIG -o BatchMode=yes"`. Each namespaced host node1..node3
runs its own sshd (`/usr/sbin/sshd -D -e`, listening on the host's address only, a host key and
an authorized key made here); the launching ptrun runs on a fourth host, "head", whose ssh client
reaches them by name. So the remote command goes through sshd and root's login shell (the
hostile-arguments test included), the launcher's pipe through ssh's stdin forwarding (Ctrl-C and
kill -9 of the launching ptrun), and a host with no sshd ("head" itself) gives ssh's own error.
Run as root; skips (exit 77) without root, network namespaces, or OpenSSH's server and client.
"""
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import test_hosts_launch as base  # noqa: E402
from harness import wait_gone  # noqa: E402
from test_netns_hosts import ENV, SCRIPT, down_and_check, main, out, skip_unless_possible, up  # noqa: E402

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = "/run/sshd"  # sshd's privilege separation directory (Debian's tmpfiles.d makes it)
READY_DEADLINE = 15  # seconds for an sshd to say it listens
STOP_DEADLINE = 10  # seconds for an sshd to exit after SIGTERM

SSHD_CONFIG = """\
ListenAddress {address}
Port 22
HostKey {dir}/host_key
AuthorizedKeysFile {dir}/id_ed25519.pub
PidFile none
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
X11Forwarding no
PrintMotd no
"""

SSH_CONFIG = """\
Host *
  User root
  IdentityFile {dir}/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  LogLevel ERROR
  ConnectTimeout 10
"""


def skip_without_openssh():
    if not os.access(SSHD, os.X_OK):
        raise unittest.SkipTest(f"needs OpenSSH's server ({SSHD}; Debian: openssh-server)")
    for tool in ("ssh", "ssh-keygen"):
        if not shutil.which(tool):
            raise unittest.SkipTest(f"needs OpenSSH's {tool} (Debian: openssh-client)")


class Sshd:
    """`sshd -D -e -f CONFIG` on host i (its own UTS name, its address only); its log in LOG."""

    def __init__(self, i, config, log):
        self.host = f"node{i}"
        self.log = log
        self.proc = subprocess.Popen([str(SCRIPT), "exec", str(i), SSHD, "-D", "-e", "-f", config],
                                     env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)  # exec'ed all the way: pid is sshd's
        self._copier = None

    def wait_listening(self, deadline):
        """Reads sshd's log until it says it listens (raises AssertionError at `deadline`, a
        time.monotonic() value), then copies the rest of it to LOG on a thread."""
        seen = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stderr, selectors.EVENT_READ)
            while b"Server listening on" not in seen:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AssertionError(f"{self.host}'s sshd did not listen in time: {seen!r}")
                chunk = os.read(self.proc.stderr.fileno(), 4096)
                if not chunk:
                    raise AssertionError(f"{self.host}'s sshd exited "
                                         f"({self.proc.wait(STOP_DEADLINE)}): {seen!r}")
                seen += chunk
        with open(self.log, "ab") as f:
            f.write(seen)
        self._copier = threading.Thread(target=self._copy, daemon=True)
        self._copier.start()

    def _copy(self):
        with open(self.log, "ab") as f:
            for chunk in iter(lambda: os.read(self.proc.stderr.fileno(), 4096), b""):
                f.write(chunk)

    def stop(self):
        """SIGTERM, waited for (SIGKILL past STOP_DEADLINE); its log copied to the end."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._copier:
            self._copier.join(STOP_DEADLINE)
        self.proc.stderr.close()


class HostsOverSsh(base.HostsLaunch):
    VIA = (str(SCRIPT), "nsexec", "0")  # the launching ptrun runs on "head" (its ssh reaches nodeI)

    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        skip_without_openssh()
        # Class cleanups run in reverse order, also when setUpClass fails part way.
        cls.ssh_dir = tempfile.mkdtemp(prefix="ptrun-ssh-")
        cls.addClassCleanup(shutil.rmtree, cls.ssh_dir, True)
        if not os.path.isdir(PRIVSEP_DIR):
            os.mkdir(PRIVSEP_DIR, 0o755)
            cls.addClassCleanup(os.rmdir, PRIVSEP_DIR)
        for key in ("host_key", "id_ed25519"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"ptrun-test-{key}",
                            "-f", os.path.join(cls.ssh_dir, key)], check=True, timeout=30)
        ssh_config = os.path.join(cls.ssh_dir, "ssh_config")
        with open(ssh_config, "w") as f:
            f.write(SSH_CONFIG.format(dir=cls.ssh_dir))
        cls.shell = f"ssh -F {ssh_config} -o BatchMode=yes"
        up(3, "--head")
        cls.addClassCleanup(down_and_check)
        cls.sshds = []
        for i in base.HOSTS:
            config = os.path.join(cls.ssh_dir, f"sshd_config.{i}")
            with open(config, "w") as f:
                f.write(SSHD_CONFIG.format(address=out("ip", i), dir=cls.ssh_dir))
            sshd = Sshd(i, config, os.path.join(cls.ssh_dir, f"sshd.{i}.log"))
            cls.addClassCleanup(sshd.stop)
            cls.sshds.append(sshd)
        deadline = time.monotonic() + READY_DEADLINE
        for sshd in cls.sshds:
            sshd.wait_listening(deadline)

    @classmethod
    def tearDownClass(cls):
        pass  # the class cleanups above

    def launch(self, hosts="node1,node2,node3", extra=(), worker=(), program=None):
        # sshd gives each host's ptrun a fresh environment: --export TMPDIR puts its run directory
        # (worker logs it keeps) in the test's scratch directory too, not in the hosts' /tmp.
        return super().launch(hosts, ["--export", "TMPDIR", *extra], worker, program)

    def assert_hosts_empty(self, timeout=base.STOP_BOUND):
        """Nothing of the job is left on any host, head included: only the sshd listeners run."""
        listeners = {sshd.proc.pid for sshd in self.sshds}
        pids = [p for i in (0, *base.HOSTS) for p in base.host_pids(i) if p not in listeners]
        self.assertEqual(wait_gone(pids, timeout), [], "processes left on the hosts")

    def test_an_unreachable_host_is_a_clear_error_and_leaves_nothing(self):
        t0 = time.monotonic()
        self.launch(hosts="node1,head,node3")  # head runs no sshd
        code, out_text, err = self.finish()
        self.assertEqual(code, 255, out_text + err)
        self.assertLess(time.monotonic() - t0, base.UNREACHABLE_BOUND, err)
        self.assertIn("ptrun: error: host head: the remote shell exited with code 255 before "
                      "ptrun started there: ssh: connect to host head port 22: Connection refused "
                      "(--remote-shell", err)
        self.assert_hosts_empty()


if __name__ == "__main__":
    main()
