"""Helpers for the store tests: start ptrun-store or torch's own TCPStore server as a child, read
the port it reports (bounded deadline), and stop it. Used with harness.PtrunTestCase."""
import os
import signal
import subprocess
import time

from harness import DEADLINE, wait_output

PTRUN_STORE = os.environ.get("PTRUN_STORE_BIN", "build/rendezvous/server_main/ptrun-store")
PYTHON = "/usr/bin/python3"  # the host's (Debian 12)
STORE_VERBS_CLIENT = os.environ.get("STORE_VERBS_CLIENT", "build/tests/fixtures/store_verbs_client")
HERE = os.path.dirname(os.path.abspath(__file__))


def start_ptrun_store(*args):
    """Starts ptrun-store on 127.0.0.1, port 0; returns (process, port)."""
    proc = subprocess.Popen([PTRUN_STORE, "--host", "127.0.0.1", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = wait_output(proc.stdout, "\n")
    except AssertionError:
        proc.kill()
        proc.wait()
        raise
    assert line.startswith("port="), line
    return proc, int(line.strip().split("=", 1)[1])


def start_torch_server(flavour):
    """Starts torch's own TCPStore server (python3, is_master=True) of a torch_flavour; returns
    (process, port). The helper reads commands on stdin: 'get KEY' prints the value torch's
    client sees."""
    argv = flavour.command([flavour.python, os.path.join(HERE, "torch_store_server.py")])
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **flavour.env()})
    try:
        line = wait_output(proc.stdout, "\n", timeout=60)  # importing torch takes ~1.5 s
    except AssertionError:
        proc.kill()
        proc.wait()
        raise
    assert line.startswith("port="), line
    return proc, int(line.strip().split("=", 1)[1])


def stop(proc, sig=signal.SIGTERM, timeout=DEADLINE):
    """Sends `sig` (None: just close stdin), collects the output (proc.stdout_text/stderr_text)
    and returns the exit code; kills `proc` at the deadline."""
    if sig is not None and proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.stdout_text, proc.stderr_text = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"pid {proc.pid} did not exit within {timeout}s of signal {sig}")
    return proc.returncode


def elapsed(start):
    return time.monotonic() - start
