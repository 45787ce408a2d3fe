"""The relay and the event loop never block (issue 13): --tee holds at most one bounded partial line
(long lines go out in pieces, '\\r' ends a console line so progress bars show live), a console
nobody reads never stalls ptrun (output is dropped with a note, signals still stop the job), and a
full --log-dir file system is reported, naming the file and the error."""
import os
import shutil
import signal
import socket
import subprocess
import time

from harness import DEADLINE, PTRUN, Notifier, PtrunTestCase, _env

PY = "/usr/bin/python3"
HOST = socket.gethostname()

PRINTER = r"""
import os, sys, time
mode = sys.argv[1]
out = sys.stdout.buffer
if mode == "progress":
    out.write(b"a\rb\rc\n" + b"x" * 200000 + b"\nend\r\n")
elif mode == "flood":  # 160 MB without a newline, then 60 MB of tqdm-style updates
    chunk = b"y" * (1 << 20)
    for _ in range(160):
        out.write(chunk)
    for i in range(3_000_000):
        out.write(b"\r%9d it" % i)
    out.write(b"\n")
elif mode == "lots":  # 16 MB of lines on each stream
    line = b"z" * 99 + b"\n"
    for _ in range(160_000):
        out.write(line)
        sys.stderr.buffer.write(line)
out.flush()
sys.stderr.flush()
notify = os.environ.get("NOTIFY")
if notify:
    fd = os.open(notify, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"start 0 0 %d\n" % os.getpid())
    os.close(fd)
if len(sys.argv) > 2 and sys.argv[2] == "hang":
    time.sleep(300)
"""


def vm_hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Console(PtrunTestCase):
    def setUp(self):
        super().setUp()
        self.script = os.path.join(self.dir, "printer.py")
        with open(self.script, "w") as f:
            f.write(PRINTER)

    def test_progress_bars_show_live_and_long_lines_go_out_in_pieces(self):
        res = subprocess.run([PTRUN, "--tee", "3", "--log-dir", self.dir, PY, self.script, "progress"], env=_env({}),
                             capture_output=True, timeout=DEADLINE)  # bytes: text mode would turn '\r' into '\n'
        self.assertEqual(res.returncode, 0, res.stderr)
        p = f"[{HOST}:0] ".encode()
        self.assertTrue(res.stdout.startswith(p + b"a\r" + p + b"b\r" + p + b"c\n"), res.stdout[:200])
        pieces = res.stdout.split(b"\n")[1:6]  # 200,000 bytes: 3 pieces of 64 KiB and the rest
        self.assertEqual([len(x) - len(p) for x in pieces[:4]], [65536, 65536, 65536, 200000 - 3 * 65536])
        self.assertTrue(all(x.startswith(p) for x in pieces[:4]))
        self.assertEqual(pieces[4], p + b"end\r")  # "\r\n" passes as one line end
        with open(os.path.join(self.dir, "latest/attempt_0/0/stdout.log"), "rb") as f:
            self.assertEqual(f.read(), b"a\rb\rc\n" + b"x" * 200000 + b"\nend\r\n")  # the log is raw

    def test_tee_memory_stays_bounded_without_newlines(self):
        notifier = Notifier()
        try:
            env = _env({"NOTIFY": notifier.path})
            proc = subprocess.Popen([PTRUN, "--tee", "3", "--log-dir", self.dir, PY, self.script, "flood", "hang"],
                                    env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            self.leftover.append(proc.pid)
            notifier.wait_lines(1, timeout=120)
        finally:
            notifier.close()
        peak = vm_hwm_kb(proc.pid)
        with open(f"/proc/{proc.pid}/maps") as f:
            sanitized = "libasan" in f.read()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=DEADLINE)
        if sanitized:
            self.skipTest("ASan's allocator holds freed memory: the RSS bound is checked without it")
        self.assertLess(peak, 64 * 1024, f"ptrun's peak RSS {peak} kB relaying 220 MB without newlines\n{err}")

    def test_a_console_nobody_reads_never_stalls_ptrun(self):
        notifier = Notifier()
        r, w = os.pipe()  # ptrun's stdout: nobody reads it until the end
        try:
            env = _env({"NOTIFY": notifier.path})
            proc = subprocess.Popen([PTRUN, "--tee", "3", "--log-dir", self.dir, "--shutdown-timeout", "2", PY,
                                     self.script, "lots", "hang"], env=env,
                                    stdout=w, stderr=subprocess.PIPE)
            os.close(w)
            self.leftover.append(proc.pid)
            # ptrun keeps reading the worker's 32 MB although its own stdout is full.
            notifier.wait_lines(1)
        finally:
            notifier.close()
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out = b""
        while True:  # now read, until ptrun has exited and closed its end
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            out += chunk
        os.close(r)
        code = proc.wait(timeout=DEADLINE)
        took = time.monotonic() - start
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        self.assertEqual(code, 143, err)
        self.assertLess(took, 10, "SIGTERM took too long with a stalled console")
        self.assertIn(b"bytes of output to stdout were dropped", out)


class FullLogDir(PtrunTestCase):
    """A --log-dir on a tiny tmpfs, mounted in a private mount namespace (root only)."""

    def run_full(self, flag):
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("needs root and unshare for a private tmpfs")
        logs = os.path.join(self.dir, "logs")
        os.mkdir(logs)
        script = f'mount -t tmpfs -o size=256k ptrun-test "{logs}" && exec "$@"'
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", PTRUN, flag, "3",
               "--log-dir", logs, *self.worker("--print", "20000")]
        return subprocess.run(cmd, env=_env({}), capture_output=True, text=True, timeout=DEADLINE)

    def test_a_full_file_system_under_tee_logs_is_reported(self):
        res = self.run_full("--tee")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stderr, r"cannot write worker log '[^']*/attempt_0/0/(stdout|stderr)\.log': "
                                     r"No space left on device")
        self.assertEqual(res.stderr.count("cannot write worker log"), 1, "warned once")
        self.assertEqual(res.stdout.count("out line 19999 from rank 0"), 1, "the console still gets everything")

    def test_a_full_file_system_under_redirected_logs_is_reported(self):
        res = self.run_full("--redirects")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stderr, r"the file system of worker log '[^']*/attempt_0/0/(stdout|stderr)\.log' is "
                                     r"full .*may have been cut short")


if __name__ == "__main__":
    import unittest
    unittest.main()
