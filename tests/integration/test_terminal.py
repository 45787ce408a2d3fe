"""A worker that reads the terminal (input(), pdb via breakpoint()) works under ptrun started from an
interactive shell, as under torchrun, although every worker runs in a process group of its own:
ptrun lends the terminal to the worker stopped on it (SIGTTIN/SIGTTOU) and takes it back. Ctrl-C
reaching the worker that has the terminal stops the job as ptrun's own Ctrl-C does; Ctrl-Z hands
the terminal back to ptrun (and on to the next worker waiting for it).

Each test drives `bash -i` (job control on) on a pseudo-terminal of its own (Python's pty), typing
as a person would and waiting on output with bounded deadlines."""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
import unittest

from harness import PTRUN, PtrunTestCase

ASK = """import os, sys, time
rank = int(os.environ["RANK"])
if str(rank) in os.environ.get("ASK_RANKS", "0").split(","):
    answer = input(f"rank {rank} asks: ")
    print(f"rank {rank} got {answer!r}", flush=True)
elif os.environ.get("OTHERS_HANG"):
    print(f"rank {rank} sleeps", flush=True)
    time.sleep(120)
"""

DEBUG = """import os
x = 6
if os.environ["RANK"] == "0":
    breakpoint()
print("after the breakpoint, rank", os.environ["RANK"], flush=True)
"""

# Sets the terminal's modes (as readline does before a prompt): stopped by SIGTTOU until ptrun lends
# it the terminal, then writes a burst of single bytes at once.
BURST = """import os, termios
termios.tcsetattr(0, termios.TCSANOW, termios.tcgetattr(0))
for _ in range(3000):
    os.write(1, b"#")
os.write(1, b"\\n")
"""


def session_members(sid):
    """Pids of every process in session `sid`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # state ppid pgrp session ...
            pids.append(int(entry))
    return pids


class Shell:
    """bash -i on a pseudo-terminal: send keys, wait for output matching a pattern (bounded)."""

    def __init__(self, cwd, env):
        pid, fd = pty.fork()
        if pid == 0:  # the child: a session leader with the pty as its controlling terminal
            os.chdir(cwd)
            os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
        self.text = ""
        self.pos = 0

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def expect(self, pattern, timeout=30):
        """Waits until `pattern` (a regex) appears after what earlier expects consumed; returns the match."""
        end = time.monotonic() + timeout
        while True:
            match = re.compile(pattern).search(self.text, self.pos)
            if match:
                self.pos = match.end()
                return match
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} did not appear within {timeout} s; the terminal showed:\n"
                                     f"{self.text}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the terminal closed before {pattern!r}:\n{self.text}")
                self.text += chunk.decode(errors="replace").replace("\r\n", "\n")

    def expect_all(self, *patterns, timeout=30):
        """Waits until every pattern appears, in any order (input() writes its prompt before it reads
        the terminal, so before ptrun's note; two workers' notes race)."""
        start, ends, matches = self.pos, [], []
        for pattern in patterns:
            self.pos = start
            matches.append(self.expect(pattern, timeout))
            ends.append(self.pos)
        self.pos = max(ends)
        return matches

    def run(self, command):
        """Types `command`, then a line printing its exit status; returns nothing."""
        self.send(command + "; echo rc=$?\n")

    def close(self):
        for pid in session_members(self.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.fd)


READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine, "0")


def wait_blocked_in_read(pid, timeout=10):
    """Waits (bounded) until `pid` sleeps inside read(2) (/proc/PID/syscall). CPython handles a
    SIGINT that lands between the kernel resuming it (SIGCONT) and its restarted read by setting
    a flag, and then blocks in that read regardless (a lost wake-up, seen once under load): a
    person presses Ctrl-C again; the test types it once the worker is really reading."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/syscall") as f:
                if f.read().split()[0] == READ_SYSCALL:
                    return
        except (OSError, IndexError):
            pass
        time.sleep(0.01)  # a poll of /proc with a deadline: no event tells a read began
    raise AssertionError(f"worker {pid} did not block reading the terminal within {timeout} s")


class Terminal(PtrunTestCase):
    def setUp(self):
        super().setUp()
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(PTRUN), os.path.join(bin_dir, "ptrun"))
        for name, text in (("ask.py", ASK), ("debug.py", DEBUG), ("burst.py", BURST)):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        env = {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": self.dir, "TERM": "dumb", "PS1": "READY$ ",
               "PYTHON_EXEC": "/usr/bin/python3", "TMPDIR": self.dir, "PYTHONDONTWRITEBYTECODE": "1"}
        self.shell = Shell(self.dir, env)
        self.addCleanup(self.shell.close)
        self.shell.expect(r"READY\$ ")

    def test_input_in_a_worker_reads_the_terminal(self):
        sh = self.shell
        sh.run("ptrun --nproc-per-node 2 ask.py")
        sh.expect_all(r"worker rank 0 \(local rank 0, pid \d+\) reads the terminal", r"rank 0 asks: ")
        sh.send("hello\n")
        sh.expect(r"rank 0 got 'hello'")
        sh.expect(r"rc=0\n")
        sh.run("echo shell-has-the-terminal-$((6*7))")
        sh.expect(r"shell-has-the-terminal-42")

    def debug_in_pdb(self, command):
        """Runs `command` (debug.py under ptrun), evaluates in rank 0's pdb, continues."""
        sh = self.shell
        sh.run(command)
        sh.expect(r"\(Pdb\) ")
        sh.send("p x * 7\n")
        sh.expect(r"\n42\n")
        sh.send("c\n")
        sh.expect(r"after the breakpoint, rank 0")
        sh.expect(r"rc=0\n")

    def test_ptruns_note_is_whole_before_the_worker_writes(self):
        # ptrun says which worker has the terminal before that worker goes on: its note used to be
        # written after the SIGCONT, and landed inside pdb's prompt ("(" note "Pdb) ").
        sh = self.shell
        sh.run("ptrun --nproc-per-node 1 burst.py")
        sh.expect(r"rc=0\n")
        self.assertRegex(sh.text, r"reads the terminal: it has it now \(Ctrl-C goes to it; Ctrl-Z "
                                  r"gives the terminal back to ptrun\)\n#{3000}\n")

    def test_pdb_in_a_worker(self):
        self.debug_in_pdb("ptrun --nproc-per-node 2 debug.py")

    def test_pdb_in_a_worker_forked_from_the_preload_zygote(self):
        self.debug_in_pdb("ptrun --nproc-per-node 2 --preload json debug.py")
        self.assertIn("workers are forked from it", self.shell.text)

    def test_a_pdb_session_longer_than_the_hang_timeout_is_not_a_hang(self):
        # Rank 1 exits 0 at once, so rank 0 must finish within --hang-timeout; while it holds the
        # terminal (a person in pdb, here for 2.5 s of its own sleep) the clock is paused.
        sh = self.shell
        sh.run("ptrun --nproc-per-node 2 --hang-timeout 1 debug.py")
        sh.expect(r"\(Pdb\) ")
        sh.send("!import time; time.sleep(2.5); print('slept')\n")
        sh.expect(r"slept\n(.*\n)?\(Pdb\) ")
        sh.send("c\n")
        sh.expect(r"after the breakpoint, rank 0")
        sh.expect(r"rc=0\n")
        self.assertNotIn("is hung", sh.text)

    def test_ctrl_c_at_the_worker_reading_stops_the_job_at_once(self):
        sh = self.shell
        sh.run("OTHERS_HANG=1 ptrun --nproc-per-node 2 --shutdown-timeout 60 ask.py")
        holder = sh.expect_all(r"rank 0 asks: ", r"pid (\d+)\) reads the terminal")[1]
        wait_blocked_in_read(int(holder.group(1)))
        start = time.monotonic()
        sh.send("\x03")
        sh.expect(r"worker rank 0 \(local rank 0, pid \d+\), which had the terminal, was interrupted \(Ctrl-C\)")
        sh.expect(r"rc=130\n")
        self.assertLess(time.monotonic() - start, 20, "the grace period must not be waited out")

    def test_ctrl_z_hands_the_terminal_on(self):
        sh = self.shell
        sh.run("ASK_RANKS=0,1 ptrun --nproc-per-node 2 ask.py")
        holder = r"worker rank (\d) \(local rank \d, pid \d+\) reads the terminal"
        first = sh.expect_all(holder, r"wants the terminal \(SIGTTIN\)")[0].group(1)
        other = "1" if first == "0" else "0"
        sh.send("\x1a")
        sh.expect(rf"Ctrl-Z: ptrun took the terminal back from worker rank {first}")
        sh.expect(rf"worker rank {other} \(local rank {other}, pid \d+\) reads the terminal")
        sh.send("to-the-second\n")
        sh.expect(rf"rank {other} got 'to-the-second'")
        sh.expect(rf"worker rank {first} \(local rank {first}, pid \d+\) reads the terminal")
        sh.send("to-the-first\n")
        sh.expect(rf"rank {first} got 'to-the-first'")
        sh.expect(r"rc=0\n")

    def test_ctrl_c_while_ptrun_has_the_terminal_says_what_it_does(self):
        sh = self.shell
        sh.run("OTHERS_HANG=1 ASK_RANKS=9 ptrun --nproc-per-node 2 --shutdown-timeout 45 ask.py")
        sh.expect_all(r"rank 0 sleeps", r"rank 1 sleeps")
        sh.send("\x03")
        sh.expect(r"received SIGINT: stopping the workers: they get SIGINT, then SIGKILL after 45 s "
                  r"\(--shutdown-timeout\); press Ctrl-C again to kill them at once")
        sh.expect(r"rc=130\n")


if __name__ == "__main__":
    unittest.main()
