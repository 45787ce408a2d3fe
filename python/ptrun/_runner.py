"""ptrun's Python runner: the bootstrap through which ptrun starts Python workers. Standard
library only, one file (heartbeat.py and _zygote.py beside it are loaded on demand).

    PYTHON -u _runner.py -- SCRIPT ARGS...     runs as   PYTHON -u SCRIPT ARGS...
    PYTHON -u _runner.py -m MODULE ARGS...     runs as   PYTHON -u -m MODULE ARGS...
    PYTHON -u _runner.py --zygote MODULES -- SCRIPT ARGS...   (or -m MODULE ARGS...)

The --zygote form (ptrun --preload MODULES, its fd 3 ptrun's control socket) imports the
comma-separated MODULES once and forks workers from itself on ptrun's request (_zygote.py beside
it, loaded on demand, says how); each forked worker then goes on here exactly as an exec'd
`_runner.py -- SCRIPT ARGS...` (or -m) would, with the worker's own arguments, and ends as
multiprocessing's forked children do: exception reported, threads joined, atexit run, stdio
flushed, python's exit status, then os._exit without the interpreter's finalization.

The user's program sees what the plain command gives it: a fresh `__main__` module filled as
CPython fills it (`__file__` absolute and unnormalised, `__loader__` a SourceFileLoader, `__spec__`,
`__package__` and `__cached__` None, `__builtins__` the module; `__file__` and `__cached__` removed
again when the script ends other than by SystemExit), `sys.argv`, `sys.orig_argv`, `sys.path`
(the script's real directory, or the working directory for -m, in place of the runner's own),
`sys.path_importer_cache`, the exit status and the traceback of an uncaught exception (the
interpreter prints it, through sys.excepthook, with no frame of the runner in it), the SIGINT
re-kill after an uncaught KeyboardInterrupt, signal dispositions, atexit, pickling of classes
defined in `__main__`, and multiprocessing spawn/forkserver children that re-import `__main__`. A
directory or zip file with a __main__.py, a .pyc file, and a script that cannot be opened (same
message, exit 2) behave as under python. -m goes through runpy._run_module_as_main, as python -m
does. What remains visible: one frame of the runner below the user's module frame
(traceback.print_stack, inspect.stack, a warnings stacklevel past the module level).

Environment variables (ptrun sets them; the runner removes those it consumes, so the program's
environment is what it would be without the runner):
- PTRUN_STACK_FILE, PTRUN_STACK_SIGNAL (consumed): when both are set, that signal makes
  faulthandler append every thread's Python stack to that file, and the worker goes on.
- PTRUN_HEARTBEAT_FILE (left for ptrun.heartbeat): when torch.optim.optimizer is imported (or
  already is: preloaded), every optimizer step becomes one beat on that record (a global step
  post-hook on torch 2, a wrapped step on older torch). Torch is never imported by the runner.
- PTRUN_EVENTS_SOCKET (left for ptrun.heartbeat): the start-up timeline's events go there, one
  datagram each (`ptrun-event 1 PHASE MONOTONIC_NS`): python_up when the runner starts (in a
  forked worker: once forked), process_group_start and process_group_ready around the first
  torch.distributed.init_process_group (wrapped when torch.distributed.distributed_c10d is
  imported, or already is), and first_progress at the first optimizer step (heartbeat.py sends
  it at the first beat when PTRUN_HEARTBEAT_FILE is set too). A lost datagram costs nothing.
- USE_LIBUV (left as it is; ptrun sets it to 0 for --rdzv-conf use_libuv=0): "0" makes every
  TCPStore torch.distributed.rendezvous makes (init_process_group's env:// and tcp:// stores) use
  the classic backend unless the caller asks otherwise, the agent-store client included, which
  torch itself makes with its default (libuv) whatever USE_LIBUV says: a torch built without
  libuv (Debian's 2.6) then runs.
- PTRUN_ERROR_SUMMARY_FILE (consumed): an uncaught exception other than SystemExit is summed up
  there in one line, `ExceptionType: message`, for ptrun's failure report and restart line.
A value that cannot be used costs one `ptrun runner: <what> ignored: <why>` line on stderr; the
program runs anyway."""
import os
import sys

STACK_FILE_ENV = "PTRUN_STACK_FILE"
STACK_SIGNAL_ENV = "PTRUN_STACK_SIGNAL"
HEARTBEAT_ENV = "PTRUN_HEARTBEAT_FILE"
ERROR_SUMMARY_ENV = "PTRUN_ERROR_SUMMARY_FILE"
EVENTS_ENV = "PTRUN_EVENTS_SOCKET"
C10D_MODULE = "torch.distributed.distributed_c10d"
RENDEZVOUS_MODULE = "torch.distributed.rendezvous"
LIBUV_MARK = "_ptrun_libuv_off"  # on rendezvous.TCPStore once wrapped: never wrap it twice
USE_LIBUV_POSITION = 8  # TCPStore(host, port, world_size, is_master, timeout, wait_for_workers,
#                         multi_tenant, master_listen_fd, use_libuv)
TIMED_MARK = "_ptrun_timed"  # on a wrapped init_process_group: never wrap it twice
USAGE = "usage: python3 -u _runner.py -- SCRIPT [ARGS...] | -m MODULE [ARGS...]\n"
OPTIMIZER_MODULE = "torch.optim.optimizer"
STEP_MARK = "_ptrun_counts_steps"  # on a step wrapped for the heartbeat: never wrap it twice
# heartbeat.py and _zygote.py load under these names, never in sys.modules: an installed `ptrun`
# is not touched.
HEARTBEAT_MODULE = "_ptrun_runner_heartbeat"
ZYGOTE_MODULE = "_ptrun_runner_zygote"


def _ignored(what, why):
    sys.stderr.write(f"ptrun runner: {what} ignored: {why}\n")


def _stack_dumps_from_environment():
    """Registers faulthandler on PTRUN_STACK_SIGNAL, appending to PTRUN_STACK_FILE; returns the
    file's descriptor (open until the process ends), or None."""
    path = os.environ.pop(STACK_FILE_ENV, None)
    signal_text = os.environ.pop(STACK_SIGNAL_ENV, None)
    if not path and not signal_text:
        return None
    if not path:
        _ignored(f"{STACK_SIGNAL_ENV}={signal_text!r}", f"{STACK_FILE_ENV} is not set")
        return None
    if not signal_text:
        _ignored(f"{STACK_FILE_ENV}={path!r}", f"{STACK_SIGNAL_ENV} is not set")
        return None
    try:
        signum = int(signal_text)
    except ValueError:
        _ignored(f"{STACK_SIGNAL_ENV}={signal_text!r}", "not a signal number")
        return None
    try:
        # A bare descriptor, never a file object that a finalizing interpreter would close (and
        # warn about under -X dev). os.open's descriptors are close-on-exec: exec'd children
        # never inherit it.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as e:
        _ignored(f"{STACK_FILE_ENV}={path!r}", e.strerror or e)
        return None
    import faulthandler
    try:
        faulthandler.register(signum, file=fd, all_threads=True, chain=False)
    except (ValueError, RuntimeError, OSError) as e:  # out of range, SIGSEGV & co, SIGKILL
        os.close(fd)
        _ignored(f"{STACK_SIGNAL_ENV}={signal_text!r}", getattr(e, "strerror", None) or e)
        return None
    return fd


class _ModuleHooks:
    """On sys.meta_path, first when the runner starts: lets the other finders find each hooked
    module (importlib's own search, with itself left out) and runs its hook on the module once the
    module has run, whatever finders and loaders other import hooks (an APM agent's) put in
    between. A hooked module that another finder ahead of it loaded is hooked at the next import
    of a module not loaded yet, whichever finder answers it (the "import" audit event, which
    importlib raises before it asks any finder). Any other import costs a few dict lookups; it
    leaves sys.meta_path with its last hook when importlib found that module through it."""

    def __init__(self, hooks):
        self.hooks = dict(hooks)
        self.finding = set()
        # An audit hook stays for the process's life: once every module is hooked it returns at
        # its first test. Another audit hook may refuse it: the finder alone is left then.
        try:
            sys.addaudithook(self._audit)
        except Exception:
            pass

    def _audit(self, event, args):
        if self.hooks and event == "import":
            self._hook_loaded_past()

    def find_spec(self, name, path=None, target=None):
        if self.hooks:
            self._hook_loaded_past()
        hook = self.hooks.get(name)
        if hook is None or name in self.finding:
            return None
        self.finding.add(name)
        try:
            # As importlib would go on: a finder that asks importlib again (wrapt's hooks do)
            # meets this one answering None.
            import _frozen_importlib
            spec = _frozen_importlib._find_spec(name, path, target)
        finally:
            self.finding.discard(name)
        if spec is None or spec.loader is None or name in sys.modules:
            # Not found (the import fails as without the runner), a namespace, or loaded while
            # it was being found (then hooked as one loaded past this finder).
            return spec
        del self.hooks[name]
        if not self.hooks and self in sys.meta_path:
            # Safe now: importlib stops iterating sys.meta_path at a found spec.
            sys.meta_path.remove(self)
        spec.loader = _HookedLoader(spec, hook)
        return spec

    def _hook_loaded_past(self):
        # A finder ahead of this one that finds modules on its own loaded it: hook it now, once
        # it has run (importlib clears _initializing then).
        for name in list(self.hooks):
            module = sys.modules.get(name)
            if module is None or name in self.finding or getattr(
                    getattr(module, "__spec__", None), "_initializing", False):
                continue
            hook = self.hooks.pop(name, None)  # None: a hook run meanwhile hooked it
            if hook is not None:
                hook(module)


class _HookedLoader:
    """A hooked module's loader in its spec until the module is loaded: the real loader loads it
    (as the module's __loader__ and __spec__.loader again), then the hook runs on the module.
    Everything else is the real loader's."""

    def __init__(self, spec, hook):
        self._spec, self._hook, self._loader = spec, hook, spec.loader
        # importlib picks the protocol by what the loader has: it sees the real loader's.
        if hasattr(self._loader, "exec_module"):
            self.exec_module = self._exec_module
        if hasattr(self._loader, "load_module"):
            self.load_module = self._load_module

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def _exec_module(self, module):
        self._give_back(module)
        self._loader.exec_module(module)
        self._hook(module)

    def _load_module(self, name):
        self._give_back(None)
        module = self._loader.load_module(name)
        self._give_back(module)
        self._hook(module)
        return module

    def _give_back(self, module):
        if self._spec.loader is self:
            self._spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader


def _send_event(phase):
    """One start-up timeline event on ptrun's events channel, the inherited descriptor
    PTRUN_EVENTS_SOCKET names ("fd:4"), now; never blocks, never raises."""
    address = os.environ.get(EVENTS_ENV, "")
    if not address.startswith("fd:") or not address[3:].isdigit():
        return
    import _socket
    import time
    try:
        s = _socket.socket(fileno=os.dup(int(address[3:])))
        try:
            # Still ptrun's channel (a program may have put another socket at that number).
            if s.family == _socket.AF_UNIX and s.type == _socket.SOCK_DGRAM:
                s.send(f"ptrun-event 1 {phase} {time.monotonic_ns()}".encode(), _socket.MSG_DONTWAIT)
        finally:
            s.close()
    except OSError:
        pass


def _hooks_from_environment():
    """With PTRUN_HEARTBEAT_FILE or PTRUN_EVENTS_SOCKET set, optimizer steps beat the record and
    the first one is the timeline's first progress; with PTRUN_EVENTS_SOCKET, init_process_group
    is timed. Each from now when its module is already imported (preloaded in the zygote), else
    once it is."""
    hooks = {}
    if os.environ.get(HEARTBEAT_ENV) or os.environ.get(EVENTS_ENV):
        heartbeat_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heartbeat.py")
        hooks[OPTIMIZER_MODULE] = lambda module: _try_counting_steps(module, heartbeat_py)
    if os.environ.get(EVENTS_ENV):
        hooks[C10D_MODULE] = _try_timing_process_group
    if os.environ.get("USE_LIBUV") == "0":
        hooks[RENDEZVOUS_MODULE] = _stores_without_libuv
    for name in list(hooks):
        module = sys.modules.get(name)
        if module is not None:
            hooks.pop(name)(module)
    if hooks:
        sys.meta_path.insert(0, _ModuleHooks(hooks))


def _stores_without_libuv(rendezvous):
    """USE_LIBUV=0: the TCPStore of torch.distributed.rendezvous defaults to use_libuv=False."""
    original = getattr(rendezvous, "TCPStore", None)
    if original is None or getattr(original, LIBUV_MARK, False):
        return
    if "use_libuv" not in (getattr(original.__init__, "__doc__", None) or ""):
        return  # a torch before 2.3: its TCPStore has no libuv to turn off

    def TCPStore(*args, **kwargs):
        if len(args) <= USE_LIBUV_POSITION:
            kwargs.setdefault("use_libuv", False)
        return original(*args, **kwargs)

    setattr(TCPStore, LIBUV_MARK, True)
    rendezvous.TCPStore = TCPStore


def _try_timing_process_group(c10d):
    """init_process_group sends process_group_start and process_group_ready around itself (the
    first call of each attempt counts), in distributed_c10d and in torch.distributed."""
    try:
        _time_process_group(c10d)
    except Exception as e:  # a torch unlike any known: the program goes on
        _ignored(EVENTS_ENV, f"cannot time init_process_group: {e!r}")


def _time_process_group(c10d):
    original = getattr(c10d, "init_process_group", None)
    if original is None or getattr(original, TIMED_MARK, False):
        return
    import functools

    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        _send_event("process_group_start")
        out = original(*args, **kwargs)
        _send_event("process_group_ready")
        return out

    setattr(init_process_group, TIMED_MARK, True)
    c10d.init_process_group = init_process_group
    # torch.distributed re-exports it: already done when preloaded, else it copies ours.
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and getattr(distributed, "init_process_group", None) is original:
        distributed.init_process_group = init_process_group


def _try_counting_steps(optimizer_module, heartbeat_py):
    """_count_steps, or one line on stderr when this torch's optimizers cannot be hooked."""
    try:
        _count_steps(optimizer_module, heartbeat_py)
    except Exception as e:  # a torch unlike any known: the program goes on
        _ignored(HEARTBEAT_ENV if os.environ.get(HEARTBEAT_ENV) else EVENTS_ENV,
                 f"cannot count optimizer steps: {e!r}")


def _load_beat(heartbeat_py):
    """heartbeat.py's beat() on the record in PTRUN_HEARTBEAT_FILE (mapped now), or None after one
    line on stderr when the record cannot be used."""
    what = f"{HEARTBEAT_ENV}={os.environ.get(HEARTBEAT_ENV)!r}"
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location(HEARTBEAT_MODULE, heartbeat_py)
        heartbeat = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(heartbeat)
    except Exception as e:  # HeartbeatError (it names the variable), or heartbeat.py unreadable
        why = str(e)
        if why.startswith(what + ": "):
            why = why[len(what) + 2:]
        _ignored(what, why)
        return None
    return heartbeat.beat if heartbeat.enabled else None


def _first_step_only():
    """Without a heartbeat record: a step callback that sends first_progress at the first step,
    then does nothing."""
    sent = []

    def first_step():
        if not sent:
            sent.append(True)
            _send_event("first_progress")

    return first_step


def _count_steps(optimizer_module, heartbeat_py):
    """Makes every step of every torch optimizer one beat (heartbeat.py sends the first as the
    timeline's first progress), or without a record, the first step the first progress."""
    beat = _load_beat(heartbeat_py) if os.environ.get(HEARTBEAT_ENV) else None
    if beat is None:
        if not os.environ.get(EVENTS_ENV):
            return
        beat = _first_step_only()
    register = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if register is not None:  # torch >= 2.0: one global hook
        register(lambda optimizer, args, kwargs: beat())
        return
    # torch 1.x: wrap each optimizer class's step, once, when an instance is made (or unpickled);
    # torch itself wraps the step for its profiler there.
    optimizer_class = optimizer_module.Optimizer
    for method in ("__init__", "__setstate__"):
        original = getattr(optimizer_class, method, None)
        if original is not None:
            setattr(optimizer_class, method, _then_wrap_step(original, beat))


def _then_wrap_step(method, beat):
    import functools

    @functools.wraps(method)
    def method_then_wrap_step(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        cls = type(self)
        step = getattr(cls, "step", None)
        if step is not None and not getattr(step, STEP_MARK, False):
            cls.step = _step_with_beat(step, beat)
        return out

    return method_then_wrap_step


def _step_with_beat(step, beat):
    import functools

    @functools.wraps(step)
    def step_then_beat(*args, **kwargs):
        out = step(*args, **kwargs)
        beat()
        return out

    setattr(step_then_beat, STEP_MARK, True)
    return step_then_beat


def _serve_as_zygote():
    """--zygote: _zygote.py preloads the modules and forks workers on ptrun's request; returns
    only in such a worker, its sys.argv then as for `_runner.py -- SCRIPT ...` (or -m)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_zygote.py")
    spec = importlib.util.spec_from_file_location(ZYGOTE_MODULE, path)
    zygote = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zygote)
    zygote.main()


def _system_exit_status(error):
    """The exit status python gives an uncaught SystemExit (printing a message that is not a
    number, as it does)."""
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def _end_forked_worker(error):
    """Ends a worker forked from the zygote as python ends a script (the exception reported by
    sys.excepthook, non-daemon threads joined, atexit handlers run, stdio flushed, the exit status
    python would give, the SIGINT re-kill after a KeyboardInterrupt), but without the interpreter's
    finalization (module teardown, the last collection), as multiprocessing's forked children end:
    with a preloaded torch that teardown costs each rank more CPU than its start. Never returns."""
    status = 0
    if isinstance(error, SystemExit):
        status = _system_exit_status(error)
    elif error is not None:
        try:
            sys.excepthook(type(error), error, error.__traceback__)
        except BaseException:
            import traceback
            traceback.print_exception(type(error), error, error.__traceback__)
        status = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # python joins non-daemon threads first
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if isinstance(error, KeyboardInterrupt):  # python re-kills itself: the caller sees SIGINT
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 128 + signal.SIGINT
    os._exit(status)


def _command_line():
    """(module?, script or module name, its arguments) from the runner's own sys.argv."""
    argv = sys.argv
    if len(argv) < 3 or argv[1] not in ("--", "-m"):
        sys.stderr.write(USAGE)
        raise SystemExit(2)
    return argv[1] == "-m", argv[2], argv[3:]


def _fresh_main():
    """A new __main__ module as the interpreter makes one before running anything (pylifecycle's
    add_main_module); the runner's own __main__ keeps the runner's globals."""
    import _frozen_importlib
    main = type(sys)("__main__")
    if "__annotations__" in globals():  # the interpreter gave the runner's __main__ one
        main.__annotations__ = {}
    main.__builtins__ = __builtins__  # in __main__, the builtins module (not its dict)
    main.__loader__ = _frozen_importlib.BuiltinImporter
    sys.modules["__main__"] = main
    return main


def _set_argv(argv, python_argv):
    """sys.argv, and sys.orig_argv without the runner (python_argv replaces the runner's path
    and everything after it)."""
    orig = getattr(sys, "orig_argv", None)
    if orig is not None:
        interpreter_part = len(orig) - len(sys.argv)  # python and its options
        sys.orig_argv = orig[:interpreter_part] + python_argv
    sys.argv = argv


def _replace_path0(path0):
    """Puts path0 where python put the runner's directory, at sys.path[0] (python inserts it after
    site has run); None: removes that entry. Nothing to do under -P or -I: python then inserts
    no such entry, for the runner or for the program."""
    flags = sys.flags
    if getattr(flags, "safe_path", False) or flags.isolated:
        return
    if path0 is None:
        del sys.path[0]
    else:
        sys.path[0] = path0


def _forget_own_importer():
    # python asked sys.path_hooks about the runner file (is it a directory or zip?) and cached the
    # answer under its absolute path, which is the runner's __file__.
    if sys.path_importer_cache.get(__file__, 0) is None:
        del sys.path_importer_cache[__file__]


def _prepare_module(module, args):
    """python -m MODULE: sys.path[0] is the working directory; runpy does the rest."""
    try:
        path0 = os.getcwd()
    except OSError:
        path0 = None  # python adds no entry when the working directory is gone
    _replace_path0(path0)
    _set_argv(["-m", *args], ["-m", module, *args])
    import runpy
    return runpy._run_module_as_main, (module, True)


def _absolute(path):
    """The script's path as python >= 3.9 makes it absolute (fileutils.c's _Py_abspath): the
    working directory for "" and ".", else the working directory, '/', the path as given (not
    normalised)."""
    if path.startswith("/") or sys.version_info < (3, 9):
        return path
    try:
        cwd = os.getcwd()
    except OSError:
        return path  # python keeps the relative path
    return cwd if path in ("", ".") else cwd + "/" + path


def _main_importer(filename):
    """What python asks of the script's path (pymain_get_importer): an importer when it is a
    directory or a zip file, else None; cached in sys.path_importer_cache as python caches it."""
    cache = sys.path_importer_cache
    if filename in cache:
        return cache[filename]
    cache[filename] = None
    for hook in sys.path_hooks:
        try:
            importer = hook(filename)
        except ImportError:
            continue
        cache[filename] = importer
        return importer
    return None


def _prepare_script(main, script, args):
    """python SCRIPT: the function and arguments that run it in `main`, after setting sys.path,
    sys.argv and main's __file__/__cached__/__loader__ as python does."""
    _set_argv([script, *args], [script, *args])
    if script == "-":  # the program on stdin: sys.path[0] is "", __file__ "<stdin>"
        _replace_path0("")
        main.__file__ = "<stdin>"
        main.__cached__ = None
        return exec, (compile(sys.stdin.buffer.read(), "<stdin>", "exec", dont_inherit=True),
                      main.__dict__)
    filename = _absolute(script)
    if _main_importer(filename) is not None:  # a directory or zip file: its __main__ module
        _replace_path0(None)
        sys.path.insert(0, filename)
        import runpy
        return runpy._run_module_as_main, ("__main__", False)
    _replace_path0(os.path.dirname(os.path.realpath(script)))
    main.__file__ = filename
    main.__cached__ = None
    return exec, (_script_code(main, filename), main.__dict__)


def _script_code(main, filename):
    """The script's code object, compiled as python compiles it (bytes: the coding cookie or BOM
    decide), or a .pyc's code; exits as python does when the file cannot be opened."""
    import _frozen_importlib_external as bootstrap
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        sys.stderr.write(f"{_program()}: {filename!r} is a directory, cannot continue\n")
        raise SystemExit(1) from None
    except OSError as e:
        sys.stderr.write(f"{_program()}: can't open file {filename!r}: "
                         f"[Errno {e.errno}] {e.strerror}\n")
        raise SystemExit(2) from None
    magic = bootstrap.MAGIC_NUMBER
    if filename.endswith(".pyc") or data[:2] == magic[:2]:  # pythonrun.c's maybe_pyc_file
        main.__loader__ = bootstrap.SourcelessFileLoader("__main__", filename)
        import marshal
        if data[:4] != magic:
            raise RuntimeError("Bad magic number in .pyc file")
        try:
            code = marshal.loads(data[16:])
        except (EOFError, ValueError, TypeError):
            code = None
        if type(code) is not type(_script_code.__code__):
            raise RuntimeError("Bad code object in .pyc file")
        return code
    main.__loader__ = bootstrap.SourceFileLoader("__main__", filename)
    try:
        return compile(data, filename, "exec", dont_inherit=True)
    except Exception:
        # python's file tokenizer and compile()'s differ on broken sources (NUL bytes, undecodable
        # text): let python itself say it. Nothing of the program has run yet.
        _exec_plain_python()
        raise


def _exec_plain_python():
    """Replaces this process (same pid, same environment less the consumed variables) by the
    command line without the runner; returns only when that fails."""
    orig = getattr(sys, "orig_argv", None)
    if orig and sys.executable:
        try:
            os.execv(sys.executable, orig)
        except OSError:
            pass


def _program():
    """How python names itself in its messages: its argv[0]."""
    orig = getattr(sys, "orig_argv", None)
    return orig[0] if orig else sys.executable


def _without_runner(tb):
    """The traceback from its first entry that is not the runner's."""
    own = _without_runner.__code__.co_filename
    while tb is not None and tb.tb_frame.f_code.co_filename == own:
        tb = tb.tb_next
    return tb


def _summary_line(error):
    """`ExceptionType: message` on one line, as traceback.format_exception_only names it."""
    cls = type(error)
    name = cls.__qualname__
    if cls.__module__ not in ("builtins", "__main__"):
        name = f"{cls.__module__}.{name}"
    try:
        message = str(error)
    except Exception:
        message = "<exception str() failed>"
    message = " ".join(message.splitlines())
    return f"{name}: {message}" if message else name


def _write_error_summary(path, error):
    try:
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(_summary_line(error) + "\n")
    except OSError as e:
        _ignored(f"{ERROR_SUMMARY_ENV}={path!r}", e.strerror or e)


def _forget_file(main):
    # python removes __file__ and __cached__ from __main__ once a script file has run (normally, or
    # with an exception after printing it; not on SystemExit, which exits from inside). Not after
    # runpy ran a directory's or zip's __main__ (it set __spec__).
    names = main.__dict__
    if names.get("__spec__") is None:
        names.pop("__file__", None)
        names.pop("__cached__", None)


def _forget_file_after_excepthook(main):
    """_forget_file(main) once sys.excepthook has reported the exception being raised (it may
    read __main__.__file__, as under python): wraps the hook for that one call."""
    hook = getattr(sys, "excepthook", None)
    if hook is None:
        _forget_file(main)
        return

    def excepthook_then_forget_file(*exc_info):
        sys.excepthook = hook  # the hook sees itself installed
        try:
            hook(*exc_info)
        except BaseException as e:  # python reports a failing hook: without this frame
            e.__traceback__ = _without_runner(e.__traceback__)
            raise
        finally:
            _forget_file(main)

    sys.excepthook = excepthook_then_forget_file


if __name__ == "__main__":
    _forked = sys.argv[1:2] == ["--zygote"]
    if _forked:
        _serve_as_zygote()  # returns only in a forked worker, set up as an exec'd one
    _stack_dump_fd = _stack_dumps_from_environment()
    _error_summary = os.environ.pop(ERROR_SUMMARY_ENV, None)
    _send_event("python_up")
    _hooks_from_environment()
    _is_module, _target, _args = _command_line()
    _forget_own_importer()
    _main = _fresh_main()
    # The user's code runs from this module level, the outermost frame: an exception leaves it
    # with the runner's entries cut from its traceback, by a bare `raise` (which adds none), so the
    # interpreter itself reports it, sets the exit status and re-kills on KeyboardInterrupt.
    try:
        if _is_module:
            _run, _run_args = _prepare_module(_target, _args)
        else:
            _run, _run_args = _prepare_script(_main, _target, _args)
        _run(*_run_args)
    except BaseException as _error:
        _error.__traceback__ = _without_runner(_error.__traceback__)
        if _error_summary and not isinstance(_error, SystemExit):
            _write_error_summary(_error_summary, _error)
        if not _is_module and not isinstance(_error, SystemExit):
            _forget_file_after_excepthook(_main)
        if _forked:
            _end_forked_worker(_error)
        raise
    if not _is_module:
        _forget_file(_main)
    if _forked:
        _end_forked_worker(None)
