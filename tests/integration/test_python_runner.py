"""ptrun's Python runner (python/ptrun/_runner.py), run directly beside plain `python3 -u`: a
program sees the same __main__, sys.argv, sys.path, exit status, traceback, signals, atexit,
pickling and multiprocessing children through the runner as without it; the runner's own
variables (stack dumps on a signal, the error summary) act and are gone from the program's
environment; optimizer steps beat the heartbeat record. With PTRUN_TORCH_FLAVOUR=2 every command
runs in the Debian 13 root (Python 3.13, torch 2.6) instead: torch_flavour.py."""
import json
import os
import signal
import subprocess
import sys
import unittest

from harness import PtrunTestCase, wait_output
from torch_flavour import FLAVOUR, torch_missing

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(REPO, "python", "ptrun", "_runner.py")
sys.path.insert(0, os.path.join(REPO, "python"))
from ptrun import heartbeat  # noqa: E402  (this checkout's: makes and reads heartbeat records)

PYTHON = FLAVOUR.python
DEADLINE = 60
TORCH_DEADLINE = 240  # torch imports take seconds here; a spawn DataLoader imports it three times
STACK_SIGNAL = signal.SIGRTMAX - 3  # ptrun's choice (agent_watchdog.cpp)
# Variables of the caller's environment that would change what a worker does.
UNSET = ("PTRUN_STACK_FILE", "PTRUN_STACK_SIGNAL", "PTRUN_HEARTBEAT_FILE",
         "PTRUN_ERROR_SUMMARY_FILE", "TORCHELASTIC_ERROR_FILE")

# Prints what a program sees of itself, as JSON (no object addresses).
PROBE = r'''
import json, os, sys
def describe_loader(loader):
    if loader is None:
        return None
    kind = type(loader) if not isinstance(loader, type) else loader
    return [kind.__module__ + "." + kind.__qualname__, getattr(loader, "name", None),
            getattr(loader, "path", None)]
spec = globals()["__spec__"]
print(json.dumps({
    "__name__": __name__,
    "__file__": globals().get("__file__", "<unset>"),
    "__spec__": None if spec is None else [spec.name, spec.origin, spec.parent],
    "__package__": __package__,
    "__cached__": globals().get("__cached__", "<unset>"),
    "__loader__": describe_loader(__loader__),
    "__builtins__": repr(__builtins__),
    "__doc__": __doc__,
    "globals": list(globals()),
    "main": sys.modules["__main__"].__dict__ is globals(),
    "argv": sys.argv,
    "orig_argv": sys.orig_argv,
    "path": sys.path,
    "modules": sorted(sys.modules),
    "path_importer_cache": sorted(sys.path_importer_cache),
    "meta_path": [f.__name__ if isinstance(f, type) else type(f).__name__ for f in sys.meta_path],
    "runner_modules": sorted(m for m in sys.modules if "runner" in m or "ptrun" in m),
    "runner_environment": sorted(k for k in os.environ if k in (
        "PTRUN_STACK_FILE", "PTRUN_STACK_SIGNAL", "PTRUN_ERROR_SUMMARY_FILE")),
}, indent=1))
'''

# Every signal's Python handler, and the kernel's view of the process (blocked, ignored, caught),
# without the signal in argv[1] (the runner's stack-dump signal, where it is set).
SIGNALS = r'''
import json, signal, sys
skip = int(sys.argv[1]) if len(sys.argv) > 1 else 0
handlers = {int(s): repr(signal.getsignal(s)) for s in signal.valid_signals() if s != skip}
masks = {}
with open("/proc/self/status") as f:
    for line in f:
        key, _, value = line.partition(":")
        if key in ("SigBlk", "SigIgn", "SigCgt"):
            masks[key] = int(value, 16) & ~((1 << (skip - 1)) if skip else 0)
print(json.dumps({"handlers": handlers, "masks": masks}, indent=1))
'''

# A worker blocked in stuck_here() until the test writes to the pipe named by argv[1]; a second
# thread waits meanwhile. That thread blocks the stack signal, so the main thread takes it: the
# dump is written before stuck_here() returns.
STUCK = r'''
import json, os, signal, subprocess, sys, threading
released = threading.Event()
def helper():
    signal.pthread_sigmask(signal.SIG_BLOCK, [int(sys.argv[2])])
    ready.set()
    released.wait()
ready = threading.Event()
threading.Thread(target=helper, name="helper").start()
ready.wait()
child_fds = subprocess.run(["/bin/ls", "-l", "/proc/self/fd/"], capture_output=True, text=True,
                           close_fds=False).stdout
print(json.dumps({"environment": sorted(k for k in os.environ if k.startswith("PTRUN_STACK")),
                  "child_fds": child_fds}), flush=True)
def stuck_here(fd):
    print("stuck", flush=True)
    return os.read(fd, 1)
stuck_here(int(sys.argv[1]))
released.set()
print("released", flush=True)
'''



def without_tracker_warnings(stderr):
    """`stderr` (bytes) without multiprocessing.resource_tracker's shutdown warnings (each a
    warning line and the source line it quotes)."""
    lines = stderr.splitlines(keepends=True)
    kept, skip = [], False
    for line in lines:
        if b"multiprocessing/resource_tracker.py" in line and b"UserWarning" in line:
            skip = True  # the quoted `warnings.warn(...)` line follows
            continue
        if skip and line.startswith(b"  warnings.warn("):
            skip = False
            continue
        skip = False
        kept.append(line)
    return b"".join(kept)


class PythonRunner(PtrunTestCase):
    def setUp(self):
        super().setUp()
        if FLAVOUR.name != "1.13" and FLAVOUR.skip_reason():
            self.skipTest(FLAVOUR.skip_reason())
        self.dir = os.path.realpath(self.dir)

    def need_torch(self):
        if torch_missing(TORCH_DEADLINE):
            self.skipTest(torch_missing(TORCH_DEADLINE))

    def write(self, name, text, mode="w"):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(text)
        return path

    def environment(self, extra=None):
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        env.update(FLAVOUR.env())
        env.update(extra or {})
        return env

    def command(self, args, runner, module=False):
        if runner:
            argv = [PYTHON, "-u", RUNNER, "-m" if module else "--", *args]
        else:
            argv = [PYTHON, "-u", *(["-m"] if module else []), *args]
        return FLAVOUR.command(argv, binds=[self.dir])

    def run_python(self, args, runner, module=False, env=None, cwd=None, stdin=None,
                   timeout=DEADLINE):
        """`python3 -u ARGS` (runner False) or `python3 -u RUNNER -- ARGS` (-m for a module), to
        completion in self.dir; bytes out."""
        return subprocess.run(self.command(args, runner, module), env=self.environment(env),
                              cwd=cwd or self.dir, input=stdin, capture_output=True,
                              timeout=timeout)

    def run_both(self, args, **kw):
        return self.run_python(args, False, **kw), self.run_python(args, True, **kw)

    def assertSame(self, plain, runner):
        """Same exit status, byte-identical stdout and stderr."""
        what = f"plain: {plain.stderr!r}\nrunner: {runner.stderr!r}"
        self.assertEqual(runner.returncode, plain.returncode, what)
        for stream in ("stdout", "stderr"):
            self.assertEqual(getattr(runner, stream).decode(errors="replace"),
                             getattr(plain, stream).decode(errors="replace"), stream)
        self.assertNotIn(RUNNER.encode(), runner.stdout + runner.stderr)

    def probe_both(self, args, **kw):
        """Runs PROBE both ways (args name the probe or the module); returns the runner's view."""
        plain, runner = self.run_both(args, **kw)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertSame(plain, runner)
        return json.loads(runner.stdout)

    # What __main__ and sys hold.

    def test_a_script_sees_what_plain_python_gives_it(self):
        script = self.write("probe.py", PROBE)
        state = self.probe_both([script, "a", "--flag", "-m", "--"])
        self.assertEqual(state["__name__"], "__main__")
        self.assertEqual(state["__file__"], script)
        self.assertIsNone(state["__spec__"])
        self.assertIsNone(state["__package__"])
        self.assertIsNone(state["__cached__"])
        self.assertEqual(state["__loader__"],
                         ["_frozen_importlib_external.SourceFileLoader", "__main__", script])
        self.assertEqual(state["__builtins__"], "<module 'builtins' (built-in)>")
        self.assertTrue(state["main"])
        self.assertEqual(state["argv"], [script, "a", "--flag", "-m", "--"])
        self.assertEqual(state["orig_argv"], [PYTHON, "-u", script, "a", "--flag", "-m", "--"])
        self.assertEqual(state["path"][0], self.dir)
        self.assertNotIn(os.path.dirname(RUNNER), state["path"])
        self.assertEqual(state["runner_modules"], [])
        self.assertEqual(state["runner_environment"], [])

    def test_relative_and_symlinked_scripts(self):
        self.write("real/probe.py", PROBE)
        os.makedirs(os.path.join(self.dir, "links"))
        os.symlink("../real/probe.py", os.path.join(self.dir, "links", "probe.py"))
        os.symlink("real", os.path.join(self.dir, "dirlink"))
        real = os.path.join(self.dir, "real")
        for script in ("real/probe.py", "./real/probe.py", "links/../real/probe.py",
                       "links/probe.py", "dirlink/probe.py",
                       os.path.join(self.dir, "links/probe.py")):
            with self.subTest(script=script):
                state = self.probe_both([script])
                self.assertEqual(state["argv"], [script])
                self.assertEqual(state["__file__"], os.path.join(self.dir, script))  # unnormalised
                self.assertEqual(state["path"][0], real)  # the script's real directory
        with self.subTest(cwd="real"):
            state = self.probe_both(["probe.py"], cwd=real)
            self.assertEqual(state["__file__"], os.path.join(real, "probe.py"))

    def test_modules_in_a_package(self):
        self.write("pkg/__init__.py", "")
        self.write("pkg/mod.py", PROBE)
        self.write("pkg/__main__.py", PROBE)
        for module, file in (("pkg.mod", "pkg/mod.py"), ("pkg", "pkg/__main__.py")):
            with self.subTest(module=module):
                state = self.probe_both([module, "x", "-y"], module=True)
                path = os.path.join(self.dir, file)
                self.assertEqual(state["__name__"], "__main__")
                self.assertEqual(state["__file__"], path)
                spec_name = "pkg.__main__" if module == "pkg" else module
                self.assertEqual(state["__spec__"][:2], [spec_name, path])
                self.assertEqual(state["__package__"], "pkg")
                self.assertEqual(state["argv"], [path, "x", "-y"])
                self.assertEqual(state["orig_argv"], [PYTHON, "-u", "-m", module, "x", "-y"])
                self.assertEqual(state["path"][0], self.dir)  # the working directory
                self.assertNotIn(os.path.dirname(RUNNER), state["path"])
        with self.subTest(module="pkg.missing"):
            plain, runner = self.run_both(["pkg.missing"], module=True)
            self.assertEqual(plain.returncode, 1)
            self.assertSame(plain, runner)

    def test_a_directory_and_stdin_as_the_script(self):
        self.write("app/__main__.py", PROBE)
        state = self.probe_both(["app", "z"])
        self.assertEqual(state["path"][0], os.path.join(self.dir, "app"))
        state = self.probe_both(["-", "z"], stdin=PROBE.encode())
        self.assertEqual(state["__file__"], "<stdin>")

    # How a program ends.

    def test_exit_status_and_traceback(self):
        scripts = {
            "ends.py": ("print('fine')\n", 0),
            "exits.py": ("import sys\nsys.exit(7)\n", 7),
            "exits_with_text.py": ("raise SystemExit('stopped: no data')\n", 1),
            "raises.py": ("def inner():\n    raise ValueError('bad value')\n\n"
                          "def outer():\n    try:\n        inner()\n"
                          "    except ValueError as e:\n        raise KeyError('k') from e\n\n"
                          "outer()\n", 1),
            "hook.py": ("import sys\n"
                        "sys.excepthook = lambda t, v, tb: print('hook', t.__name__, v,"
                        " tb.tb_frame.f_code.co_filename == __file__, file=sys.stderr)\n"
                        "1 / 0\n", 1),
            "sigterm.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"
                           "signal.pause()\n", -signal.SIGTERM),
            "interrupted.py": ("raise KeyboardInterrupt\n", -signal.SIGINT),
            "sigint.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n"
                          "signal.pause()\n", -signal.SIGINT),
        }
        for name, (text, status) in scripts.items():
            with self.subTest(script=name):
                plain, runner = self.run_both([self.write(name, text)])
                self.assertEqual(plain.returncode, status, plain.stderr)
                self.assertSame(plain, runner)

    def test_sources_python_cannot_compile(self):
        sources = {
            "syntax.py": b"x = (\n",
            "nul.py": b"x = 1\x00\nprint(x)\n",
            "latin.py": b"print('\xe9')\n",
            "declared.py": b"# -*- coding: latin-1 -*-\nprint('\xe9')\n",
            "tabs.py": b"if True:\n\tx = 1\n        y = 2\n",
        }
        for name, source in sources.items():
            with self.subTest(script=name):
                self.assertSame(*self.run_both([self.write(name, source, "wb")]))

    def test_atexit_order(self):
        script = self.write("atexit_order.py",
                            "import atexit\n"
                            "for n in ('first', 'second', 'third'):\n"
                            "    atexit.register(print, 'registered', n)\n"
                            "atexit.register(lambda: print('__file__ at exit:',\n"
                            "                              '__file__' in globals()))\n"
                            "print('body')\n")
        plain, runner = self.run_both([script])
        self.assertSame(plain, runner)
        self.assertEqual(runner.stdout.decode().splitlines(),
                         ["body", "__file__ at exit: False", "registered third",
                          "registered second", "registered first"])

    def test_signal_dispositions(self):
        script = self.write("signals.py", SIGNALS)
        plain, runner = self.run_both([script])
        self.assertSame(plain, runner)
        # With the stack dump armed, every other signal is as it was.
        plain = self.run_python([script, str(STACK_SIGNAL)], False)
        runner = self.run_python([script, str(STACK_SIGNAL)], True, env={
            "PTRUN_STACK_FILE": os.path.join(self.dir, "stacks"),
            "PTRUN_STACK_SIGNAL": str(STACK_SIGNAL)})
        self.assertSame(plain, runner)

    # What other processes see of __main__.

    def test_pickling_a_class_defined_in_main(self):
        script = self.write("pickles.py",
                            "import pickle\n"
                            "class Point:\n"
                            "    def __init__(self, x):\n"
                            "        self.x = x\n"
                            "data = pickle.dumps(Point(3))\n"
                            "back = pickle.loads(data)\n"
                            "print(data.hex(), type(back) is Point, back.x)\n")
        plain, runner = self.run_both([script])
        self.assertSame(plain, runner)
        self.assertTrue(runner.stdout.strip().endswith(b"True 3"), runner.stdout)

    def test_multiprocessing_spawn_and_forkserver_children(self):
        script = self.write("pools.py",
                            "import multiprocessing, sys\n"
                            "def square(x):\n"
                            "    return x * x\n"
                            "def child_view(_):\n"
                            "    main = sys.modules['__main__']\n"
                            "    return [main.__name__, main.__file__, sys.argv, sys.path[0]]\n"
                            "if __name__ == '__main__':\n"
                            "    for method in ('spawn', 'forkserver'):\n"
                            "        with multiprocessing.get_context(method).Pool(2) as pool:\n"
                            "            print(method, pool.map(square, range(6)),\n"
                            "                  pool.map(child_view, [0]))\n")
        plain, runner = self.run_both([script, "arg"])
        self.assertSame(plain, runner)
        self.assertIn(b"spawn [0, 1, 4, 9, 16, 25] [['__mp_main__', '" + script.encode(),
                      runner.stdout)

    def test_torch_dataloader_with_spawned_workers(self):
        self.need_torch()
        script = self.write("loader.py",
                            "import torch\n"
                            "from torch.utils.data import DataLoader, Dataset\n"
                            "class Squares(Dataset):\n"
                            "    def __len__(self):\n"
                            "        return 8\n"
                            "    def __getitem__(self, i):\n"
                            "        return torch.tensor([i * i])\n"
                            "if __name__ == '__main__':\n"
                            "    loader = DataLoader(Squares(), batch_size=2, num_workers=2,\n"
                            "                        multiprocessing_context='spawn')\n"
                            "    print([batch.flatten().tolist() for batch in loader])\n")
        plain, runner = self.run_both([script], timeout=TORCH_DEADLINE)
        # Python 3.11's resource tracker may warn at shutdown of a semaphore the spawned loader
        # workers' exit raced with ("leaked semaphore objects", then "No such file"): timing,
        # under load, with or without the runner (CI saw it from plain python). Not compared.
        for res in (plain, runner):
            res.stderr = without_tracker_warnings(res.stderr)
        self.assertSame(plain, runner)
        self.assertEqual(runner.stdout, b"[[0, 1], [4, 9], [16, 25], [36, 49]]\n")

    def test_torch_record_writes_the_error_file(self):
        self.need_torch()
        script = self.write("recorded.py",
                            "from torch.distributed.elastic.multiprocessing.errors import record\n"
                            "@record\n"
                            "def main():\n"
                            "    raise RuntimeError('boom')\n"
                            "if __name__ == '__main__':\n"
                            "    main()\n")
        errors = []
        for runner in (False, True):
            path = os.path.join(self.dir, f"error-{runner}.json")
            res = self.run_python([script], runner, env={"TORCHELASTIC_ERROR_FILE": path},
                                  timeout=TORCH_DEADLINE)
            self.assertEqual(res.returncode, 1, res.stderr)
            self.assertNotIn(RUNNER.encode(), res.stderr)
            with open(path) as f:
                message = json.load(f)["message"]
            del message["extraInfo"]["timestamp"]
            errors.append(message)
        self.assertEqual(errors[1], errors[0])
        self.assertEqual(errors[1]["message"], "RuntimeError: boom")

    # Scripts that cannot be run.

    def test_a_missing_script(self):
        plain, runner = self.run_both([os.path.join(self.dir, "missing.py")])
        self.assertEqual(plain.returncode, 2)
        self.assertSame(plain, runner)
        self.assertIn(b"can't open file", runner.stderr)

    def test_a_script_below_a_file(self):
        self.write("file.py", "")
        plain, runner = self.run_both(["file.py/x.py"])
        self.assertEqual(plain.returncode, 2)
        self.assertSame(plain, runner)
        self.assertIn(b"[Errno 20] Not a directory", runner.stderr)

    def test_an_unreadable_script(self):
        if os.geteuid() == 0:
            self.skipTest("root reads a file of mode 000")
        script = self.write("secret.py", "print('read')\n")
        os.chmod(script, 0)
        plain, runner = self.run_both([script])
        self.assertEqual(plain.returncode, 2)
        self.assertSame(plain, runner)
        self.assertIn(b"Permission denied", runner.stderr)

    def test_usage(self):
        res = subprocess.run(FLAVOUR.command([PYTHON, "-u", RUNNER, "script.py"]),
                             capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(res.returncode, 2)
        self.assertIn("usage:", res.stderr)

    # The runner's variables.

    def test_stack_dump_on_a_signal(self):
        script = self.write("stuck.py", STUCK)
        stacks = os.path.join(self.dir, "stacks")
        with open(stacks, "w"):
            pass  # ptrun creates the file
        read_end, write_end = os.pipe()
        env = self.environment({"PTRUN_STACK_FILE": stacks,
                                "PTRUN_STACK_SIGNAL": str(STACK_SIGNAL)})
        try:
            proc = subprocess.Popen(self.command([script, str(read_end), str(STACK_SIGNAL)], True),
                                    env=env, cwd=self.dir, pass_fds=(read_end,),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        finally:
            os.close(read_end)
        self.leftover.append(proc.pid)
        try:
            seen = wait_output(proc.stdout, "stuck\n", timeout=DEADLINE)
            os.kill(proc.pid, STACK_SIGNAL)
            os.write(write_end, b"x")
            out, err = proc.communicate(timeout=DEADLINE)
        finally:
            os.close(write_end)
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        first = json.loads(seen.splitlines()[0])
        self.assertEqual(first["environment"], [])
        self.assertNotIn(stacks, first["child_fds"])
        self.assertIn(b"released", out)
        with open(stacks) as f:
            dump = f.read()
        self.assertIn("in stuck_here", dump)
        self.assertEqual(dump.count("Current thread 0x"), 1, dump)
        self.assertEqual(dump.count("Thread 0x"), 1, dump)  # the helper
        self.assertIn(f'File "{script}"', dump)

    def test_stack_dump_values_that_cannot_be_used(self):
        script = self.write("hello.py", "import os\n"
                            "print(sorted(k for k in os.environ if k.startswith('PTRUN_STACK')))\n")
        cases = [({"PTRUN_STACK_FILE": os.path.join(self.dir, "s"), "PTRUN_STACK_SIGNAL": "usr1"},
                  "ptrun runner: PTRUN_STACK_SIGNAL='usr1' ignored: not a signal number"),
                 ({"PTRUN_STACK_FILE": "/nonexistent/s", "PTRUN_STACK_SIGNAL": str(STACK_SIGNAL)},
                  "ptrun runner: PTRUN_STACK_FILE='/nonexistent/s' ignored: "
                  "No such file or directory"),
                 ({"PTRUN_STACK_FILE": os.path.join(self.dir, "s"), "PTRUN_STACK_SIGNAL": "9"},
                  "ptrun runner: PTRUN_STACK_SIGNAL='9' ignored: Invalid argument")]
        for env, line in cases:
            with self.subTest(env=env):
                res = self.run_python([script], True, env=env)
                self.assertEqual(res.returncode, 0, res.stderr)
                self.assertEqual(res.stderr.decode(), line + "\n")
                self.assertEqual(res.stdout, b"[]\n")

    def test_error_summary_of_an_uncaught_exception(self):
        script = self.write("imports.py", "import os\n"
                            "print('PTRUN_ERROR_SUMMARY_FILE' in os.environ)\n"
                            "import no_such_module_xyz\n")
        summary = os.path.join(self.dir, "summary")
        plain = self.run_python([script], False)
        runner = self.run_python([script], True, env={"PTRUN_ERROR_SUMMARY_FILE": summary})
        self.assertEqual(plain.returncode, 1)
        self.assertSame(plain, runner)
        self.assertEqual(runner.stdout, b"False\n")
        with open(summary) as f:
            self.assertEqual(f.read(),
                             "ModuleNotFoundError: No module named 'no_such_module_xyz'\n")
        # Any other exception too (its first line), but not SystemExit.
        script = self.write("fails.py", "raise ValueError('not an import\\nsecond line')\n")
        other = os.path.join(self.dir, "other-summary")
        res = self.run_python([script], True, env={"PTRUN_ERROR_SUMMARY_FILE": other})
        self.assertEqual(res.returncode, 1)
        with open(other) as f:
            self.assertEqual(f.read(), "ValueError: not an import second line\n")
        script = self.write("exits.py", "raise SystemExit(3)\n")
        exits = os.path.join(self.dir, "exit-summary")
        res = self.run_python([script], True, env={"PTRUN_ERROR_SUMMARY_FILE": exits})
        self.assertEqual(res.returncode, 3)
        self.assertFalse(os.path.exists(exits))

    # Optimizer steps as heartbeats.

    def heartbeat_run(self, text, args=(), env=None):
        """Runs `text` through the runner on a fresh record; returns (result, record)."""
        record = os.path.join(self.dir, "heartbeat")
        if os.path.exists(record):
            os.unlink(record)
        heartbeat.create(record)
        script = self.write("steps.py", text)
        res = self.run_python([script, *args], True,
                              env={**(env or {}), "PTRUN_HEARTBEAT_FILE": record},
                              timeout=TORCH_DEADLINE)
        self.assertEqual(res.returncode, 0, res.stderr)
        return res, heartbeat.read(record)

    STEPS = ("import sys, torch\n"
             "class Stepper(torch.optim.SGD):\n"
             "    def step(self, closure=None):\n"
             "        return super().step(closure)\n"
             "model = torch.nn.Linear(2, 1)\n"
             "kind = Stepper if 'subclass' in sys.argv else torch.optim.SGD\n"
             "opt = kind(model.parameters(), lr=0.1)\n"
             "schedule = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
             "for _ in range(5):\n"
             "    opt.zero_grad()\n"
             "    model(torch.ones(1, 2)).sum().backward()\n"
             "    print(opt.step())\n"
             "    schedule.step()\n")

    def test_optimizer_steps_beat_the_heartbeat(self):
        self.need_torch()
        for args in ((), ("subclass",)):
            with self.subTest(args=args):
                res, record = self.heartbeat_run(self.STEPS, args)
                self.assertEqual(record["count"], 5)
                self.assertEqual(res.stdout, b"None\n" * 5)
                plain = self.run_python([os.path.join(self.dir, "steps.py"), *args], False,
                                        timeout=TORCH_DEADLINE)
                self.assertEqual(res.stderr, plain.stderr)  # no warning of the scheduler's either

    # An APM agent's import hook, as they are written (wrapt's post-import hooks, ddtrace's module
    # watchdog): a meta-path finder that finds the watched module through importlib again (with
    # itself left out), chains its loader and reports the module once it has run. APM_STYLE
    # "legacy": that loader has only load_module; "direct": it finds the module through
    # PathFinder alone, never asking the other finders; "every": it answers every import itself
    # (an import profiler's), so that no import after it reaches a finder behind it.
    APM = ("import importlib.machinery, importlib.util, os, sys\n"
           "STYLE = os.environ.get('APM_STYLE', '').split()\n"
           "class Chained:\n"
           "    def __init__(self, loader):\n"
           "        self.loader = loader\n"
           "        if 'legacy' not in STYLE:\n"
           "            self.exec_module = self._exec_module\n"
           "    def create_module(self, spec):\n"
           "        return self.loader.create_module(spec)\n"
           "    def _exec_module(self, module):\n"
           "        if module.__loader__ is self:\n"
           "            module.__loader__ = self.loader\n"
           "        self.loader.exec_module(module)\n"
           "        saw(module.__name__)\n"
           "    def load_module(self, name):\n"
           "        module = self.loader.load_module(name)\n"
           "        saw(name)\n"
           "        return module\n"
           "def saw(name):\n"
           "    if name == 'torch.optim.optimizer':\n"
           "        sys.stderr.write(f'apm saw {name}\\n')\n"
           "class Finder:\n"
           "    busy = set()\n"
           "    def find_spec(self, name, path=None, target=None):\n"
           "        if name in self.busy or (name != 'torch.optim.optimizer' and\n"
           "                                  'every' not in STYLE):\n"
           "            return None\n"
           "        self.busy.add(name)\n"
           "        try:\n"
           "            if 'every' in STYLE:\n"
           "                m = importlib.machinery\n"
           "                spec = None\n"
           "                for f in (m.BuiltinImporter, m.FrozenImporter, m.PathFinder):\n"
           "                    spec = spec or f.find_spec(name, path, target)\n"
           "                # An import fails here; importlib.util.find_spec's probes get None.\n"
           "                if spec is None and sys._getframe(2).f_code.co_name == \\\n"
           "                        '_find_and_load_unlocked':\n"
           "                    raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
           "            elif 'direct' in STYLE:\n"
           "                spec = importlib.machinery.PathFinder.find_spec(name, path, target)\n"
           "            else:\n"
           "                spec = importlib.util.find_spec(name)\n"
           "        finally:\n"
           "            self.busy.discard(name)\n"
           "        if spec is not None and spec.loader is not None:\n"
           "            spec.loader = Chained(spec.loader)\n"
           "        return spec\n"
           "def install():\n"
           "    sys.meta_path.insert(0, Finder())\n")

    def test_optimizer_steps_beat_beside_another_import_hook(self):
        self.need_torch()
        site = os.path.join(self.dir, "site")
        self.write("site/apm.py", self.APM)
        self.write("site/sitecustomize.py", "import apm\napm.install()\n")
        # The agent started by the user's sitecustomize (before the runner), or by the program
        # itself (ahead of the runner's hook).
        started_by_program = "import apm\napm.install()\n" + self.STEPS
        cases = [("sitecustomize", style, self.STEPS)
                 for style in ("", "legacy", "direct", "legacy direct")]
        cases.append(("program", "direct", started_by_program))
        cases.append(("program", "every", started_by_program))
        for where, style, text in cases:
            with self.subTest(where=where, style=style):
                path = self.environment().get("PYTHONPATH")
                env = {"PYTHONPATH": site + (os.pathsep + path if path else ""), "APM_STYLE": style}
                res, record = self.heartbeat_run(text, env=env)
                self.assertEqual(record["count"], 5, res.stderr)
                plain = self.run_python([os.path.join(self.dir, "steps.py")], False, env=env,
                                        timeout=TORCH_DEADLINE)
                self.assertEqual(plain.returncode, 0, plain.stderr)
                self.assertIn(b"apm saw torch.optim.optimizer\n", plain.stderr)
                self.assertEqual(res.stderr, plain.stderr)  # the agent works as without ptrun
                self.assertEqual(res.stdout, plain.stdout)

    def test_importing_the_optimizers_alone_is_no_progress(self):
        self.need_torch()
        res, record = self.heartbeat_run("import torch.optim\nprint(torch.optim.SGD.__name__)\n")
        self.assertEqual(record["count"], 0)
        self.assertNotEqual(record["writer_pid"], 0)  # mapped: the hook is ready
        self.assertEqual(res.stderr, b"")

    def test_an_unusable_heartbeat_record_is_one_line(self):
        self.need_torch()
        script = self.write("steps.py", self.STEPS)
        missing = os.path.join(self.dir, "no-record")
        res = self.run_python([script], True, env={"PTRUN_HEARTBEAT_FILE": missing},
                              timeout=TORCH_DEADLINE)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stderr.decode(), f"ptrun runner: PTRUN_HEARTBEAT_FILE={missing!r} "
                                              "ignored: No such file or directory\n")


if __name__ == "__main__":
    unittest.main()
