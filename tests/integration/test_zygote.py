"""ptrun's preload zygote (python/ptrun/_zygote.py, started as `_runner.py --zygote MODULES ...`)
driven directly over its control socket, as ptrun's agent drives it: this test process is the
child subreaper the forked workers are re-parented to. A forked worker sees what an exec'd
`python3 -u _runner.py -- SCRIPT` sees (argv, sys.path[0], __file__, cwd, environment, only fds
0-2), runs in its own process group with a parent-death signal, waits for ptrun's go, has random
state of its own; the zygote refuses to fork with threads or sockets open, reports import
failures, and survives malformed requests. With PTRUN_TORCH_FLAVOUR=2 the zygote and the
commands compared with it run in the Debian 13 root (Python 3.13, torch 2.6): torch_flavour.py."""
import array
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import time
import unittest

from harness import PtrunTestCase
from torch_flavour import FLAVOUR, torch_missing

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(REPO, "python", "ptrun", "_runner.py")
ZYGOTE_PY = os.path.join(REPO, "python", "ptrun", "_zygote.py")

PYTHON = FLAVOUR.python
DEADLINE = 60
TORCH_DEADLINE = 240  # importing torch takes seconds here
PR_SET_CHILD_SUBREAPER = 36
MPOL_PREFERRED = 1
# Variables of the caller's environment that would change what a worker does.
UNSET = ("PTRUN_STACK_FILE", "PTRUN_STACK_SIGNAL", "PTRUN_HEARTBEAT_FILE",
         "PTRUN_ERROR_SUMMARY_FILE", "TORCHELASTIC_ERROR_FILE")

# What a worker sees of itself, as JSON. Its first line notes which modules were there before it
# imported anything (preloaded ones).
PROBE = r'''import sys; PRELOADED = sorted(m for m in ("numpy", "torch", "helper")
                                    if m in sys.modules)
import ctypes, json, os, random
libc = ctypes.CDLL(None)

def c_environ():
    env, entries, i = {}, ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ"), 0
    while entries[i] is not None:
        key, _, value = os.fsdecode(entries[i]).partition("=")
        env[key] = value
        i += 1
    return env

def open_fds():
    fds = []
    for name in os.listdir("/proc/self/fd"):  # its own fd is closed again: fstat fails
        try:
            os.fstat(int(name))
        except OSError:
            continue
        fds.append(int(name))
    return sorted(fds)

pdeathsig = ctypes.c_int()
libc.prctl(2, ctypes.byref(pdeathsig), 0, 0, 0)  # PR_GET_PDEATHSIG
numpy = sys.modules.get("numpy")
torch = sys.modules.get("torch")
print(json.dumps({
    "preloaded": PRELOADED,
    "argv": sys.argv,
    "orig_argv": sys.orig_argv,
    "path0": sys.path[0],
    "file": globals().get("__file__"),
    "cwd": os.getcwd(),
    "environ": dict(os.environ),
    "c_environ": c_environ(),
    "fds": open_fds(),
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "pgid": os.getpgid(0),
    "pdeathsig": pdeathsig.value,
    "threads": len(os.listdir("/proc/self/task")),
    "random": random.random(),
    "numpy": float(numpy.random.random()) if numpy else None,
    "torch_threads": torch.get_num_threads() if torch else None,
}))
'''

# Where the worker runs and how its memory is placed (get_mempolicy: x86_64's number).
PLACEMENT = r'''import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
mode, mask = ctypes.c_int(), (ctypes.c_ulong * 16)()
rc = libc.syscall(ctypes.c_long(239), ctypes.byref(mode), mask, ctypes.c_ulong(16 * 64), None,
                  ctypes.c_ulong(0))
print(json.dumps({"cpus": sorted(os.sched_getaffinity(0)), "rc": rc, "mode": mode.value,
                  "nodes": mask[0]}))
'''



def set_subreaper(on):
    """Makes this process a child subreaper (or not): orphaned descendants are re-parented to it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(int(on)), ctypes.c_ulong(0),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def setUpModule():
    set_subreaper(True)  # forked workers become this process's children, as ptrun's


def tearDownModule():
    set_subreaper(False)




def wait_readable(fd, timeout, what):
    """Waits until fd is readable; AssertionError at the deadline."""
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        raise AssertionError(f"{what}: nothing within {timeout}s")


def hex_of(text):
    """Text (or bytes) as ptrun sends it: hex digits of its bytes."""
    return (text if isinstance(text, bytes) else os.fsencode(text)).hex()


def close_all(fds):
    """Closes each fd, ignoring those already closed."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class Zygote:
    """A started zygote: its process, the test's end of the control socket, its stderr file."""

    def __init__(self, proc, sock, stderr_path):
        self.proc, self.sock, self.stderr_path = proc, sock, stderr_path

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def message(self, timeout=DEADLINE):
        """The next message (a dict), or None at the end of the stream."""
        wait_readable(self.sock.fileno(), timeout, f"zygote message (stderr: {self.stderr()!r})")
        data = self.sock.recv(1 << 20)
        return json.loads(data) if data else None

    def send(self, data, fds=()):
        """One datagram (bytes, or a dict as JSON) with fds attached."""
        if isinstance(data, dict):
            data = json.dumps(data).encode()
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        self.sock.sendmsg([data], ancillary)

    def wait(self, timeout=DEADLINE):
        return self.proc.wait(timeout=timeout)


class Worker:
    """A forked worker: its pid, the read ends of its stdout and stderr, the go pipe's write end."""

    def __init__(self, pid, out, err, go):
        self.pid, self.out, self.err, self.go = pid, out, err, go


class ZygoteTest(PtrunTestCase):
    def setUp(self):
        super().setUp()
        if FLAVOUR.name != "1.13" and FLAVOUR.skip_reason():
            self.skipTest(FLAVOUR.skip_reason())
        self.dir = os.path.realpath(self.dir)
        self.zygotes = []
        self.fds = []

    def tearDown(self):
        for z in self.zygotes:
            z.sock.close()
            if z.proc.poll() is None:
                z.proc.kill()
                z.proc.wait()
        close_all(self.fds)
        super().tearDown()  # kills the workers left over
        for pid in self.leftover:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    def need_torch(self):
        if torch_missing(TORCH_DEADLINE):
            self.skipTest(torch_missing(TORCH_DEADLINE))

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def environment(self, extra=None):
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        env.update(FLAVOUR.env())
        env.update(extra or {})
        return env

    # Driving the zygote.

    def start(self, modules, argv, env=None, cwd=None):
        """Starts `python3 -u RUNNER --zygote MODULES ARGV...` with the control socket at fd 3."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        n = theirs.fileno()
        # The zygote's end becomes fd 3, and only fd 3.
        move = 'exec "$@"' if n == 3 else f'exec "$@" 3<&{n} {n}<&-'
        command = FLAVOUR.command(["/bin/sh", "-c", move, "sh", PYTHON, "-u", RUNNER, "--zygote",
                                   modules, *argv], binds=[self.dir])
        stderr_path = os.path.join(self.dir, f"zygote-{len(self.zygotes)}.err")
        with open(stderr_path, "wb") as err:
            try:
                proc = subprocess.Popen(command, env=self.environment(env), cwd=cwd or self.dir,
                                        pass_fds=(n,), stdout=err, stderr=err)
            finally:
                theirs.close()
        z = Zygote(proc, ours, stderr_path)
        self.zygotes.append(z)
        return z

    def start_ready(self, modules, argv, timeout=DEADLINE, **kw):
        """start(), then its `ready` message, checked."""
        z = self.start(modules, argv, **kw)
        message = z.message(timeout)
        self.assertIn("ready", message, z.stderr())
        self.assertEqual(message["ready"]["modules"], modules.split(","))
        self.assertIsInstance(message["ready"]["seconds"], float)
        return z

    def request(self, argv, env=None, cwd=None, parent=None, binding=None, plain=False):
        """A fork request as ptrun sends it (hex-encoded bytes; `plain`: the str form)."""
        env = self.environment(env)
        cwd = cwd or self.dir
        body = {"parent": os.getpid() if parent is None else parent, "allow_ptrace": True,
                "binding": binding}
        if plain:
            body.update(argv=argv, env=env, cwd=cwd)
        else:
            body.update(argv_hex=[hex_of(a) for a in argv], cwd_hex=hex_of(cwd),
                        env_hex=[hex_of(os.fsencode(k) + b"=" + os.fsencode(v))
                                 for k, v in env.items()])
        return {"fork": body}

    def fork(self, z, argv, **kw):
        """Asks `z` to fork a worker for `argv`; returns a Worker, or the reply when none came."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        go_r, go_w = os.pipe()
        self.fds += [out_r, err_r, go_w]
        try:
            z.send(self.request(argv, **kw), [out_w, err_w, go_r])
        finally:
            close_all((out_w, err_w, go_r))
        reply = z.message()
        if "forked" not in reply:
            return reply
        self.leftover.append(reply["forked"])
        return Worker(reply["forked"], out_r, err_r, go_w)

    def finish(self, worker, go=b"g", timeout=DEADLINE):
        """Says `go` to the worker (None: closes the pipe only), then reads its stdout and stderr
        to the end and reaps it: (exit status, stdout bytes, stderr bytes)."""
        if go:
            os.write(worker.go, go)
        os.close(worker.go)
        self.fds.remove(worker.go)
        end = time.monotonic() + timeout
        output = {worker.out: b"", worker.err: b""}
        pending = set(output)
        while pending:
            ready, _, _ = select.select(list(pending), [], [], max(end - time.monotonic(), 0))
            if not ready:
                raise AssertionError(f"worker {worker.pid} still writing after {timeout}s")
            for fd in ready:
                chunk = os.read(fd, 65536)
                if chunk:
                    output[fd] += chunk
                else:
                    pending.discard(fd)
        status = self.reap(worker.pid, end - time.monotonic())
        return status, output[worker.out], output[worker.err]

    def reap(self, pid, timeout):
        """Waits (pidfd) for our child `pid` to end; its exit status (-N: killed by signal N)."""
        pidfd = os.pidfd_open(pid)
        try:
            wait_readable(pidfd, max(timeout, 0), f"exit of {pid}")
        finally:
            os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.leftover.remove(pid)
        return os.waitstatus_to_exitcode(status)

    def run_worker(self, z, argv, **kw):
        """Forks a worker and runs it to the end: (status, stdout text, stderr text)."""
        worker = self.fork(z, argv, **kw)
        self.assertIsInstance(worker, Worker, worker)
        status, out, err = self.finish(worker)
        return status, out.decode(errors="replace"), err.decode(errors="replace")

    def run_execd(self, args, env=None, cwd=None):
        """`python3 -u RUNNER ARGS...` exec'd as ptrun runs it without --preload."""
        return subprocess.run(FLAVOUR.command([PYTHON, "-u", RUNNER, *args], binds=[self.dir]),
                              env=self.environment(env), cwd=cwd or self.dir, capture_output=True,
                              timeout=DEADLINE)

    def assert_closed(self, fd):
        """The pipe read end `fd` reaches EOF: no other process holds its write end."""
        wait_readable(fd, DEADLINE, "EOF")
        self.assertEqual(os.read(fd, 1), b"")

    # A forked worker is an exec'd one.

    def test_a_worker_sees_what_an_execd_runner_gives(self):
        script = self.write("app/probe.py", PROBE)
        os.symlink(script, os.path.join(self.dir, "linked.py"))
        work = os.path.join(self.dir, "work")
        os.makedirs(work)
        # The zygote's command names the script through a symlink; the worker runs it from
        # elsewhere, by a relative path: sys.path[0] is the script's real directory either way.
        self.write("helper.py", "raise ImportError('not beside the real script')\n")
        # A variable set in C behind os.environ's back after the imports (at each fork) is gone
        # in the worker too; so are the zygote's open files, whatever their numbers.
        self.write("app/helper.py", "import ctypes, os\n"
                   "os.register_at_fork(\n"
                   "    before=lambda: ctypes.CDLL(None).setenv(b'C_ONLY', b'1', 1))\n"
                   "LOW = os.open(__file__, os.O_RDONLY)\n"
                   "HIGH = os.dup2(LOW, 200)\n")
        z = self.start_ready("json,helper", ["--", os.path.join(self.dir, "linked.py")],
                             env={"ZYGOTE_ONLY": "z"})
        args = ["../app/probe.py", "a", "--flag", "-m", "--", b"\xff"]
        env = {"WORKER_ONLY": "w", "SPACES": " a b=c ", "RAW": os.fsdecode(b"\xfe\xff")}
        status, out, err = self.run_worker(z, ["--", *map(os.fsdecode, args)], env=env, cwd=work)
        self.assertEqual(status, 0, err)
        self.assertEqual(err, "")
        state = json.loads(out)
        execd = self.run_execd(["--", *args], env=env, cwd=work)
        self.assertEqual(execd.returncode, 0, execd.stderr)
        expected = json.loads(execd.stdout)
        for key in ("argv", "orig_argv", "path0", "file", "cwd", "fds"):
            self.assertEqual(state[key], expected[key], key)
        self.assertEqual(state["path0"], os.path.join(self.dir, "app"))
        self.assertEqual(state["file"], os.path.join(work, "../app/probe.py"))
        self.assertEqual(state["cwd"], work)
        self.assertEqual(state["orig_argv"], [PYTHON, "-u", *map(os.fsdecode, args)])
        self.assertEqual(state["fds"], [0, 1, 2])
        self.assertEqual(state["preloaded"], ["helper"])
        self.assertEqual(expected["preloaded"], [])
        # The environment is the request's, in os.environ and in C alike: nothing of the zygote's.
        self.assertEqual(state["environ"], self.environment(env))
        self.assertEqual(state["c_environ"], self.environment(env))
        # ptrun's child (the subreaper's), in its own group, killed when ptrun dies.
        self.assertEqual(state["ppid"], os.getpid())
        self.assertEqual(state["pgid"], state["pid"])
        self.assertEqual(state["pdeathsig"], signal.SIGKILL)
        self.assertEqual(state["threads"], 1)
        self.assertEqual(z.proc.poll(), None)
        z.sock.close()
        self.assertEqual(z.wait(), 0, z.stderr())
        self.assertEqual(z.stderr(), "")

    def test_what_the_imports_set_in_the_environment_reaches_the_worker(self):
        # In os.environ, or in C alone, as an exec'd worker's own import sets it.
        self.write("setter.py", "import ctypes, os\n"
                   "os.environ['FROM_IMPORT'] = 'i'\n"
                   "os.environ.setdefault('DEFAULTED', 'import')\n"
                   "ctypes.CDLL(None).setenv(b'C_FROM_IMPORT', b'c', 1)\n")
        script = self.write("probe.py", "import setter\n" + PROBE)
        z = self.start_ready("setter", ["--", script], env={"ZYGOTE_ONLY": "z"})
        imported = {"FROM_IMPORT": "i", "DEFAULTED": "import"}
        names = (*imported, "C_FROM_IMPORT", "ZYGOTE_ONLY")
        for env in ({}, {"DEFAULTED": "w"}):
            with self.subTest(env=env):
                status, out, err = self.run_worker(z, ["--", script], env=env)
                self.assertEqual(status, 0, err)
                state = json.loads(out)
                execd = self.run_execd(["--", script], env=env)
                self.assertEqual(execd.returncode, 0, execd.stderr)
                expected = json.loads(execd.stdout)
                for seen in ("environ", "c_environ"):  # these: the Debian 13 root sets PWD
                    self.assertEqual({k: state[seen].get(k) for k in names},
                                     {k: expected[seen].get(k) for k in names}, seen)
                self.assertEqual(state["environ"], self.environment({**imported, **env}))
                self.assertEqual(state["c_environ"],
                                 {**state["environ"], "C_FROM_IMPORT": "c"})
        # A variable the worker has keeps its value, even where the import overwrites it.
        status, out, err = self.run_worker(z, ["--", script], env={"FROM_IMPORT": "w"})
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["environ"]["FROM_IMPORT"], "w")

    def test_a_module_worker_and_the_plain_request_form(self):
        self.write("pkg/__init__.py", "")
        self.write("pkg/probe.py", PROBE)
        self.write("helper.py", "")  # in the working directory: sys.path[0] for -m
        z = self.start_ready("helper", ["-m", "pkg.probe"])
        for plain in (False, True):
            with self.subTest(plain=plain):
                status, out, err = self.run_worker(z, ["-m", "pkg.probe", "x", "-y"],
                                                   plain=plain)
                self.assertEqual(status, 0, err)
                state = json.loads(out)
                expected = json.loads(self.run_execd(["-m", "pkg.probe", "x", "-y"]).stdout)
                for key in ("argv", "orig_argv", "path0", "file", "cwd", "fds"):
                    self.assertEqual(state[key], expected[key], key)
                self.assertEqual(state["path0"], self.dir)
                self.assertEqual(state["preloaded"], ["helper"])

    def test_exit_status_and_traceback(self):
        scripts = {
            "exits.py": ("import sys\nsys.exit(7)\n", 7),
            "raises.py": ("def inner():\n    raise ValueError('bad value')\n\n"
                          "def outer():\n    inner()\n\nouter()\n", 1),
            "sigterm.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"
                           "signal.pause()\n", -signal.SIGTERM),
            # A forked worker ends without the interpreter's finalization (as multiprocessing's
            # forked children do), yet as python ends a script: its message, its status, its
            # threads joined, its atexit handlers run and its output flushed, a KeyboardInterrupt's
            # SIGINT.
            "message.py": ("import sys\nsys.exit('no data here')\n", 1),
            "none.py": ("import sys\nsys.exit(None)\n", 0),
            "wraps.py": ("import sys\nsys.exit(257)\n", 1),
            "atexit_thread.py": ("import atexit, sys, threading, time\n"
                                 "atexit.register(lambda: print('atexit ran'))\n"
                                 "def later():\n    time.sleep(0.2)\n    print('thread ended')\n"
                                 "threading.Thread(target=later).start()\n"
                                 "sys.stdout = open(1, 'w', buffering=65536, closefd=False)\n"
                                 "print('buffered line')\n", 0),
            "interrupt.py": ("raise KeyboardInterrupt\n", -signal.SIGINT),
        }
        z = self.start_ready("json", ["--", self.write("first.py", "")])
        for name, (text, expected) in scripts.items():
            with self.subTest(script=name):
                script = self.write(name, text)
                status, out, err = self.run_worker(z, ["--", script])
                self.assertEqual(status, expected, err)
                execd = self.run_execd(["--", script])
                self.assertEqual(status, execd.returncode)
                self.assertEqual(err, execd.stderr.decode())  # the same traceback, byte for byte
                self.assertEqual(out, execd.stdout.decode())
                self.assertNotIn(RUNNER, err)
                self.assertNotIn("_zygote", err)
                if name == "raises.py":
                    self.assertTrue(err.startswith("Traceback"), err)
                    self.assertIn(f'File "{script}", line 2, in inner', err)

    # ptrun's go, and its death.

    def test_no_go_ends_the_worker_silently(self):
        marker = os.path.join(self.dir, "ran")
        script = self.write("marks.py", f"open({marker!r}, 'w').close()\nprint('ran')\n")
        z = self.start_ready("json", ["--", script])
        for go in (None, b"x"):
            with self.subTest(go=go):
                worker = self.fork(z, ["--", script])
                self.assertEqual(self.finish(worker, go=go), (0, b"", b""))
                self.assertFalse(os.path.exists(marker))
        # The zygote serves on.
        self.assertEqual(self.run_worker(z, ["--", script])[:2], (0, "ran\n"))

    def test_a_worker_whose_ptrun_is_gone_exits_127(self):
        marker = os.path.join(self.dir, "ran")
        script = self.write("marks.py", f"open({marker!r}, 'w').close()\n")
        z = self.start_ready("json", ["--", script])
        # Its parent is this process, not the pid ptrun claimed to be.
        status, out, err = self.run_worker(z, ["--", script], parent=1)
        self.assertEqual((status, out, err), (127, "", ""))
        self.assertFalse(os.path.exists(marker))

    def test_worker_setup_failures_are_one_line(self):
        script = self.write("hello.py", "print('hello')\n")
        z = self.start_ready("json", ["--", script])
        status, out, err = self.run_worker(z, ["--", script], cwd="/nonexistent-ptrun-dir")
        self.assertEqual((status, out), (127, ""))
        self.assertEqual(err, "ptrun: preloaded worker: chdir: /nonexistent-ptrun-dir: "
                              "No such file or directory\n")
        status, out, err = self.run_worker(z, ["--", script], binding={
            "cpu_mask": [0], "node_mask": [], "node_bits": 0, "many": False})
        self.assertEqual((status, out), (127, ""))
        self.assertEqual(err, "ptrun: cannot bind the worker (--numa-binding): "
                              "sched_setaffinity: Invalid argument\n")

    def test_binding(self):
        script = self.write("placement.py", PLACEMENT)
        cpu = max(os.sched_getaffinity(0))
        words = [0] * (cpu // 64 + 1)
        words[cpu // 64] |= 1 << (cpu % 64)
        memory = os.uname().machine == "x86_64" and os.path.isdir("/sys/devices/system/node/node0")
        binding = {"cpu_mask": words, "node_mask": [1] if memory else [],
                   "node_bits": 2 if memory else 0, "many": False}
        z = self.start_ready("json", ["--", script])
        status, out, err = self.run_worker(z, ["--", script], binding=binding)
        self.assertEqual(status, 0, err)
        placed = json.loads(out)
        self.assertEqual(placed["cpus"], [cpu])
        if memory:
            self.assertEqual((placed["rc"], placed["mode"], placed["nodes"]),
                             (0, MPOL_PREFERRED, 1))

    # State that separate interpreters would not share.

    def test_random_state_is_the_workers_own(self):
        numpy = subprocess.run(FLAVOUR.command([PYTHON, "-c", "import numpy"]),
                               capture_output=True, timeout=DEADLINE).returncode == 0
        script = self.write("probe.py", PROBE)
        z = self.start_ready("json,numpy" if numpy else "json", ["--", script],
                             timeout=TORCH_DEADLINE)
        states = []
        for _ in range(2):
            status, out, err = self.run_worker(z, ["--", script])
            self.assertEqual(status, 0, err)
            states.append(json.loads(out))
        self.assertNotEqual(states[0]["random"], states[1]["random"])
        if numpy:
            self.assertIn("numpy", states[0]["preloaded"])
            self.assertNotEqual(states[0]["numpy"], states[1]["numpy"])

    def test_torch_preloaded(self):
        self.need_torch()
        script = self.write("probe.py", PROBE)
        z = self.start_ready("torch", ["--", script], timeout=TORCH_DEADLINE)
        status, out, err = self.run_worker(z, ["--", script], env={"OMP_NUM_THREADS": "3"})
        self.assertEqual(status, 0, err)
        state = json.loads(out)
        self.assertIn("torch", state["preloaded"])
        self.assertEqual(state["torch_threads"], 3)
        self.assertEqual(state["fds"], [0, 1, 2])

    # When the zygote does not fork.

    def test_a_thread_started_by_an_import_makes_it_unsafe(self):
        self.write("spawner.py", "import threading, time\n"
                   "threading.Thread(target=time.sleep, args=(600,), name='sleeper',\n"
                   "                 daemon=False).start()\n")
        z = self.start("json,spawner", ["--", self.write("main.py", "")])
        message = z.message()
        self.assertEqual(message, {"unsafe": "after importing json,spawner the interpreter runs "
                                             '2 threads (MainThread, "sleeper")'})
        self.assertEqual(z.wait(), 0, z.stderr())  # not kept by its non-daemon thread

    def test_a_thread_started_later_is_seen_before_a_fork(self):
        self.write("arm.py", "import signal, threading, time\n"
                   "def start(*_):\n"
                   "    threading.Thread(target=time.sleep, args=(600,), name='late',\n"
                   "                     daemon=True).start()\n"
                   "signal.signal(signal.SIGUSR1, start)\n")
        script = self.write("main.py", "")
        z = self.start_ready("arm", ["--", script])
        os.kill(z.proc.pid, signal.SIGUSR1)
        end = time.monotonic() + DEADLINE
        while len(os.listdir(f"/proc/{z.proc.pid}/task")) < 2:
            self.assertLess(time.monotonic(), end, "the zygote started no thread")
            select.select([], [], [], 0.01)
        reply = self.fork(z, ["--", script])
        self.assertEqual(reply, {"unsafe": 'after importing arm the interpreter runs 2 threads '
                                           '(MainThread, "late")'})
        self.assertEqual(z.wait(), 0, z.stderr())

    def test_a_thread_started_by_a_before_fork_hook_is_seen_at_that_fork(self):
        # In the zygote, or in the intermediate child whose fork makes the worker.
        script = self.write("main.py", "")
        for where in ("zygote", "intermediate"):
            with self.subTest(where=where):
                self.write(f"{where}_hook.py", "import os, threading, time\n"
                           "ZYGOTE = os.getpid()\n"
                           "def start():\n"
                           f"    if (os.getpid() == ZYGOTE) == {where == 'zygote'}:\n"
                           "        threading.Thread(target=time.sleep, args=(600,),\n"
                           "                         name='at-fork', daemon=True).start()\n"
                           "os.register_at_fork(before=start)\n")
                z = self.start_ready(f"{where}_hook", ["--", script])
                reply = self.fork(z, ["--", script])
                self.assertEqual(reply, {"unsafe": f"after importing {where}_hook the interpreter "
                                                   'runs 2 threads (MainThread, "at-fork") once '
                                                   "os.fork had run the before-fork hooks "
                                                   "(os.register_at_fork)"})
                out = self.fds[-3]  # fork()'s read end of the worker's stdout
                self.assert_closed(out)  # nothing holds its write end: no worker was made
                self.assertEqual(z.wait(), 0, z.stderr())

    def test_an_open_socket_makes_it_unsafe(self):
        self.write("opener.py", "import socket\nS = socket.socket()\n")
        z = self.start("opener", ["--", self.write("main.py", "")])
        message = z.message()
        self.assertRegex(message.get("unsafe", ""), r"^a socket is open \(fd \d+\)$", message)
        self.assertEqual(z.wait(), 0, z.stderr())

    def test_import_failures(self):
        self.write("broken.py", "import json\n\ndef load():\n    raise ValueError('no config')\n\n"
                   "load()\n")
        self.write("quits.py", "raise SystemExit(4)\n")
        script = self.write("main.py", "")
        cases = {
            "json,no_such_module_xyz": ("no_such_module_xyz", "ModuleNotFoundError: No module "
                                        "named 'no_such_module_xyz'"),
            "broken": ("broken", "ValueError: no config"),
            "json,quits": ("quits", "SystemExit: 4"),
        }
        for modules, (module, error) in cases.items():
            with self.subTest(modules=modules):
                z = self.start(modules, ["--", script])
                failed = z.message()["failed"]
                self.assertEqual(failed["module"], module)
                self.assertEqual(failed["error"], error)
                # Its traceback as an `import` statement's: no frame of the zygote's or of
                # importlib's.
                tb = failed["traceback"]
                self.assertTrue(tb.endswith(error + "\n"), tb)
                self.assertNotIn("_zygote", tb)
                self.assertNotIn("importlib", tb)
                if module != "no_such_module_xyz":
                    where = os.path.join(self.dir, module + ".py")
                    self.assertTrue(tb.startswith("Traceback (most recent call last):\n"
                                                  f'  File "{where}", line '), tb)
                self.assertEqual(z.wait(), 3, z.stderr())

    def test_malformed_requests_are_answered_and_served_on(self):
        script = self.write("hello.py", "print('hello')\n")
        z = self.start_ready("json", ["--", script])
        good = self.request(["--", script])
        missing_env = json.loads(json.dumps(good))
        del missing_env["fork"]["env_hex"]
        big_nodes = self.request(["--", script], binding={
            "cpu_mask": [1], "node_mask": [1], "node_bits": 200, "many": False})
        cases = [
            (b"not json", 3, "request is not JSON"),
            (json.dumps({"hello": 1}).encode(), 3, 'expected {"fork": {...}}'),
            (json.dumps(good).encode(), 2, "expected 3 fds with the request, got 2"),
            (json.dumps(good).encode(), 0, "expected 3 fds with the request, got 0"),
            (json.dumps(missing_env).encode(), 3, "fork: 'env' is missing"),
            (json.dumps(big_nodes).encode(), 3, "fork: bad 'binding'"),
            (json.dumps(self.request(["script.py"])).encode(), 3, "fork: bad 'argv'"),
        ]
        for data, count, error in cases:
            with self.subTest(error=error, fds=count):
                pipes = [os.pipe() for _ in range(count)]
                self.fds += [r for r, _ in pipes]
                try:
                    z.send(data, [w for _, w in pipes])
                finally:
                    close_all([w for _, w in pipes])
                reply = z.message()
                self.assertEqual(list(reply), ["error"])
                self.assertTrue(reply["error"].startswith(error), reply)
                for r, _ in pipes:  # the zygote closed what came with the request
                    self.assert_closed(r)
        self.assertEqual(self.run_worker(z, ["--", script])[:2], (0, "hello\n"))
        self.assertIsNone(z.proc.poll())

    def test_end_of_the_control_stream_ends_it(self):
        z = self.start_ready("json", ["--", self.write("main.py", "")])
        z.sock.shutdown(socket.SHUT_WR)
        self.assertIsNone(z.message())  # it closed its end
        self.assertEqual(z.wait(), 0, z.stderr())
        self.assertEqual(z.stderr(), "")

    def test_usage(self):
        res = subprocess.run(FLAVOUR.command([PYTHON, "-u", RUNNER, "--zygote", "json"]),
                             capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(res.returncode, 2)
        self.assertIn("usage:", res.stderr)


if __name__ == "__main__":
    unittest.main()
