"""Shared helpers for ptrun's integration tests: run the real binary against real workers and wait
on events (pipes, pidfds) with bounded deadlines. Never sleeps for a fixed time."""
import atexit
import json
import os
import shutil
import pathlib
import random
import select
import signal
import socket
import subprocess
import tempfile
import time
import unittest

PTRUN = os.environ.get("PTRUN_BIN", "build/launcher/ptrun")
FAKE_WORKER = os.environ.get("FAKE_WORKER", "build/tests/fixtures/fake_worker")
DEADLINE = 30.0
# ptrun's temporary files (error files, logs without --log-dir) land here, even after a kill -9.
SCRATCH = tempfile.mkdtemp(prefix="ptrun-it-")
atexit.register(shutil.rmtree, SCRATCH, True)


def _env(env, unset=()):
    full_env = {k: v for k, v in os.environ.items() if k not in unset}
    full_env["TMPDIR"] = SCRATCH
    full_env.update(env or {})
    return full_env


def run_ptrun(args, env=None, timeout=DEADLINE, unset=(), via=list, **kw):
    """Runs ptrun to completion; returns CompletedProcess with text stdout/stderr. `via` maps the
    command line to the one to run (e.g. a torch flavour's command(): ptrun inside its root)."""
    return subprocess.run(via([PTRUN, *args]), env=_env(env, unset), capture_output=True, text=True,
                          timeout=timeout, **kw)


class Notifier:
    """A FIFO at `path` that workers write 'start' lines to (fake_worker --notify PATH, or NOTIFY=PATH
    for scripts), opened write-only and non-blocking; read the lines with a deadline. A path, not
    an inherited descriptor: ptrun's workers get none of its caller's beyond 0-2, as torchrun's."""

    def __init__(self):
        self.path = os.path.join(tempfile.mkdtemp(prefix="notify-", dir=SCRATCH), "fifo")
        os.mkfifo(self.path)
        self.read_fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._writer = os.open(self.path, os.O_WRONLY)  # no end of file between workers
        self.buffer = b""

    def close(self):
        for fd in (self.read_fd, self._writer):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)

    def wait_lines(self, count, timeout=DEADLINE):
        """Returns `count` lines as lists of words; raises AssertionError at the deadline."""
        end = time.monotonic() + timeout
        lines = []
        while len(lines) < count:
            while b"\n" in self.buffer and len(lines) < count:
                line, self.buffer = self.buffer.split(b"\n", 1)
                lines.append(line.decode().split())
            if len(lines) >= count:
                break
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"only {len(lines)} of {count} worker notifications in {timeout}s: {lines}")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 4096)
                if not chunk:
                    raise AssertionError(f"notification pipe closed after {len(lines)} of {count}")
                self.buffer += chunk
        return lines


def start_ptrun(args, notifier=None, env=None):
    """Starts ptrun in the background (`notifier`: unused, the workers are given its path)."""
    return subprocess.Popen([PTRUN, *args], env=_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_output(stream, text, timeout=DEADLINE):
    """Reads `stream` (a pipe) until `text` appears; returns what was read. Raises at the deadline."""
    fd = stream.fileno()
    end = time.monotonic() + timeout
    seen = ""
    while text not in seen:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{text!r} did not appear within {timeout}s; got {seen!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f"stream closed before {text!r}; got {seen!r}")
            seen += chunk.decode(errors="replace")
    return seen


def free_port():
    """A port free now, below the ephemeral range (which other processes' connections use)."""
    rng = random.Random()
    while True:
        port = rng.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def wait_gone(pids, timeout):
    """Waits (pidfd events) until every pid has exited; returns the pids still alive at the deadline."""
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            pass
    end = time.monotonic() + timeout
    try:
        while fds:
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(list(fds), [], [], left)
            for fd in ready:
                os.close(fd)
                del fds[fd]
        return [pid for pid in fds.values() if pid_alive(pid)]
    finally:
        for fd in fds:
            os.close(fd)


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def read_dumps(directory):
    """Loads every env.<rank>.<restart>.json the fake worker wrote, keyed by (rank, restart)."""
    out = {}
    for path in pathlib.Path(directory).glob("env.*.json"):
        _, rank, restart, _ = path.name.split(".")
        out[(int(rank), int(restart))] = json.loads(path.read_text())
    return out


class PtrunTestCase(unittest.TestCase):
    """Gives each test a temporary directory and reaps anything a failed test left behind."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-test-")
        self.dir = self.tmp.name
        self.leftover = []

    def tearDown(self):
        kill_all(self.leftover)
        self.tmp.cleanup()

    def worker(self, *args):
        return [FAKE_WORKER, *args]


class AgentsTestCase(PtrunTestCase):
    """A PtrunTestCase with a Notifier, a free port for a rendezvous and `self.procs`, the ptrun
    processes a test started: killed if still running, and reaped, after each test."""

    def setUp(self):
        super().setUp()
        self.notifier = Notifier()
        self.port = free_port()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        self.notifier.close()
        super().tearDown()


def tcp_sockets(pid):
    """(local address as raw bytes, local port, remote port, state) of every TCP socket `pid`
    holds, from /proc/net/tcp{,6} (state "0A": listening, "01": established)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                if inode not in inodes:
                    continue
                addr_hex, port_hex = local.split(":")
                out.append((bytes.fromhex(addr_hex), int(port_hex, 16),
                            int(remote.split(":")[1], 16), state))
    return out


class TorchTestCase(PtrunTestCase):
    """A PtrunTestCase against PTRUN_TORCH_FLAVOUR's PyTorch (torch_flavour.py); each test skips,
    with the reason, where that torch is missing."""

    def setUp(self):
        super().setUp()
        from torch_flavour import FLAVOUR  # late: torch_flavour looks this module up
        if FLAVOUR.skip_reason():
            self.skipTest(FLAVOUR.skip_reason())
