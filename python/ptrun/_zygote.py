"""ptrun's preload zygote (--preload MODULES): one interpreter per node imports MODULES once, and
every worker is forked from it instead of being started as a fresh interpreter. Standard library
only; _runner.py loads this file by path (never into sys.modules) when started as

    PYTHON [OPTIONS] -u _runner.py --zygote MODULES -- SCRIPT [ARGS...]
    PYTHON [OPTIONS] -u _runner.py --zygote MODULES -m MODULE [ARGS...]

MODULES is comma-separated. fd 3 is an AF_UNIX SOCK_SEQPACKET socket to ptrun (the control
socket); each message is one datagram holding one UTF-8 JSON object.

Start-up: sys.path[0] is set as the program would have it (the script's real directory, the
working directory for -m), the modules are imported in order, then exactly one message:
    {"ready": {"modules": [...], "seconds": S}}     then fork requests are served;
    {"failed": {"module": M, "error": "Type: message", "traceback": T}}   exit status 3;
    {"unsafe": "why"}                                exit status 0.
Requests, until the end of the stream (then exit status 0):
    {"fork": {"argv": ["--", SCRIPT, ...] | ["-m", MODULE, ...], "env": {"K": "V"},
              "cwd": "/dir", "parent": PID, "allow_ptrace": BOOL,
              "binding": null | {"cpu_mask": [WORD], "node_mask": [WORD], "node_bits": N,
                                 "many": BOOL}}}
with SCM_RIGHTS [stdout, stderr, go] (go: a pipe's read end). "argv_hex" (a list of hex byte
strings), "env_hex" (hex "K=V" entries) and "cwd_hex" may stand for argv, env and cwd: bytes that
need not be UTF-8 (decoded as python decodes its own: os.fsdecode). cwd "" keeps the zygote's.
"node_bits" is set_mempolicy's maxnode, as placement::prepare_binding makes it.
Replies: {"forked": PID} | {"error": "what"} (a bad request: served on) | {"unsafe": "why"}
(exit status 0). Before the first message and every fork, forking must be safe: one thread, CUDA
not initialised, no socket open but the control socket and the standard streams; at every fork
this is checked again once os.fork has run the before-fork hooks (os.register_at_fork).

The worker is double-forked, so ptrun (a child subreaper) is its parent once its pid comes back.
It makes its own process group, takes the stdout and stderr fds (nothing else of the zygote's
stays open), and waits for b"g" on the go pipe (anything else: it exits 0 silently); then it dies
with ptrun (PR_SET_PDEATHSIG), binds itself (--numa-binding), changes to cwd, replaces the whole
environment, reseeds numpy's global generator and sets torch's thread count from OMP_NUM_THREADS
(Python's `random` reseeds itself at fork), sets what the preload imports set in the environment
(os.environ's, or C's alone) where its own lacks the variable, and returns to the runner with
sys.argv as for `_runner.py ARGV`. A failure there: one `ptrun: ...` line on its stderr, exit
status 127."""
import array
import ctypes
import errno
import json
import os
import signal
import socket
import sys
import time

CONTROL_FD = 3
MAX_MESSAGE = 1 << 20
FDS_PER_FORK = 3  # stdout, stderr, go
FAILED_STATUS = 3
WORKER_FAILED_STATUS = 127
UNSAFE_TOLD = "unsafe: "  # the intermediate child's word on the pipe: its fork was unsafe
USAGE = ("usage: python3 -u _runner.py --zygote MODULES -- SCRIPT [ARGS...] | "
         "-m MODULE [ARGS...]  (fd 3: ptrun's control socket)\n")
PR_SET_PDEATHSIG = 1
PR_SET_PTRACER = 0x59616D61
MPOL_PREFERRED = 1
MPOL_PREFERRED_MANY = 5  # Linux >= 5.15: EINVAL before
SYS_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "riscv64": 237, "ppc64le": 261, "s390x": 270}
WORD_BITS = 64
WORD_MAX = (1 << WORD_BITS) - 1


def main():
    """Imports the preloaded modules and serves forks; returns only in a forked worker."""
    interpreter = _interpreter_argv()
    modules, argv = _command_line()
    check = _ForkCheck(modules)  # before any import registers a before-fork hook of its own
    control = _control_socket()
    _set_path0(_path0(argv))
    before = _environments()
    _preload(control, modules)
    changes = _changed(before, _environments())
    request = _serve(control, check)  # only the worker gets here
    _carry(changes)
    _set_argv(interpreter, request["argv"])


def _interpreter_argv():
    """sys.orig_argv's python and its options (before the runner's path), or None."""
    orig = getattr(sys, "orig_argv", None)
    return None if orig is None else orig[:len(orig) - len(sys.argv)]


def _command_line():
    """(modules, the worker command: ["--", SCRIPT, ...] or ["-m", MODULE, ...]) from sys.argv."""
    argv = sys.argv
    if len(argv) < 5 or argv[1] != "--zygote" or argv[3] not in ("--", "-m"):
        sys.stderr.write(USAGE)
        raise SystemExit(2)
    return [m for m in argv[2].split(",") if m], argv[3:]


def _control_socket():
    """fd 3 as a socket object; exits 2 when it is not a socket."""
    try:
        return socket.socket(fileno=CONTROL_FD)
    except OSError as e:
        sys.stderr.write(f"ptrun runner: --zygote: fd {CONTROL_FD} is not ptrun's control socket: "
                         f"{e.strerror or e}\n")
        raise SystemExit(2) from None


def _path0(argv):
    """sys.path[0] as python gives it to the program; None: python adds no such entry."""
    try:
        if argv[0] == "-m":
            return os.getcwd()
        script = argv[1]
        if script == "-":
            return ""
        if _is_importable_path(script):  # a directory or zip file: itself
            return os.path.abspath(script)
        return os.path.dirname(os.path.realpath(script))
    except OSError:
        return None


def _is_importable_path(path):
    """True when a sys.path_hooks entry takes `path` (a directory or a zip file)."""
    for hook in sys.path_hooks:
        try:
            hook(path)
        except ImportError:
            continue
        return True
    return False


def _set_path0(path0):
    """Puts path0 where python put the runner's directory (kept for None: the runner's slot)."""
    flags = sys.flags
    if getattr(flags, "safe_path", False) or flags.isolated or path0 is None:
        return
    own = sys.path[0]
    sys.path[0] = path0
    if own not in sys.path:
        sys.path_importer_cache.pop(own, None)


def _preload(control, modules):
    """Imports the modules in order and says ready; exits after saying failed or unsafe."""
    import importlib
    start = time.monotonic()
    for name in modules:
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # SystemExit included: the import did not succeed
            _send(control, {"failed": _import_failure(name, e)})
            _exit(FAILED_STATUS)
    seconds = time.monotonic() - start
    reason = _unsafe(modules)
    if reason:
        _send(control, {"unsafe": reason})
        _exit(0)
    _send(control, {"ready": {"modules": modules, "seconds": seconds}})


def _environments():
    """(os.environ, C's environ) now, as {str: str} and {bytes: bytes}."""
    c_environ, entries, i = {}, ctypes.POINTER(ctypes.c_char_p).in_dll(_libc(), "environ"), 0
    while entries[i] is not None:
        key, _, value = entries[i].partition(b"=")
        c_environ[key] = value
        i += 1
    return dict(os.environ), c_environ


def _changed(before, after):
    """What the imports set in os.environ, and what they set in C alone (behind os.environ's
    back), as (os.environ's, C's) variables; what they removed does not matter (see _carry)."""
    (python_before, c_before), (python_after, c_after) = before, after
    python = {k: v for k, v in python_after.items() if python_before.get(k) != v}
    in_python = {os.fsencode(k) for k in python}
    c = {k: v for k, v in c_after.items() if c_before.get(k) != v and k not in in_python}
    return python, c


def _carry(changes):
    """Sets in the worker what the preload imports set, where its own environment does not have
    the variable: an exec'd worker's imports would have set them (the worker's values win)."""
    python, c = changes
    for key, value in python.items():
        os.environ.setdefault(key, value)
    libc = _libc()
    for key, value in c.items():
        libc.setenv(key, value, 0)  # 0: a variable the worker has keeps its value


def _import_failure(name, error):
    """The `failed` message's body for module `name`: error line and traceback (bounded)."""
    import traceback
    error.__traceback__ = _user_entries(error.__traceback__)
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    summary = traceback.format_exception_only(type(error), error)[-1].strip()
    return {"module": name, "error": summary, "traceback": "".join(lines)[-4000:]}


def _user_entries(tb):
    """The traceback without the entries of this file and of importlib (as `import` has it)."""
    import importlib
    machinery = (_user_entries.__code__.co_filename, importlib.__file__)
    kept = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename not in machinery and not filename.startswith("<frozen importlib"):
            kept.append(tb)
        tb = tb.tb_next
    for entry, after in zip(kept, kept[1:] + [None]):
        entry.tb_next = after
    return kept[0] if kept else None


def _unsafe(modules, own_fds=()):
    """Why forking now would be unsafe, in one line, or None."""
    return _threads(modules) or _cuda(modules) or _open_socket(own_fds)


def _threads(modules):
    """Names the threads beyond the main one, or None when there are none."""
    tids = sorted(os.listdir("/proc/self/task"), key=int)
    if len(tids) == 1:
        return None
    names = ["MainThread"] + [json.dumps(_thread_name(int(t))) for t in tids
                              if int(t) != os.getpid()]
    return (f"after importing {','.join(modules)} the interpreter runs {len(tids)} threads "
            f"({', '.join(names)})")


def _thread_name(tid):
    """A thread's Python name where threading knows it, else its /proc comm."""
    threading = sys.modules.get("threading")
    for thread in threading.enumerate() if threading else ():
        if getattr(thread, "native_id", None) == tid:
            return thread.name
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return str(tid)


def _cuda(modules):
    """Says so when torch has initialised CUDA, else None."""
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    try:
        initialised = bool(cuda.is_initialized()) if cuda is not None else False
    except Exception:
        initialised = False
    return f"CUDA is initialised (by importing {','.join(modules)})" if initialised else None


def _open_socket(own_fds):
    """Names a socket open in this process other than the control socket, ptrun's events channel,
    the standard streams and `own_fds` (a request's), or None."""
    skip = {0, 1, 2, CONTROL_FD, *_events_fd(), *own_fds}
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        if int(name) in skip:
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the directory listing's own fd, gone
        if target.startswith("socket:["):
            return f"a socket is open (fd {name})"
    return None


def _send(control, message):
    """Sends one message; exits 0 when ptrun is gone."""
    try:
        control.send(json.dumps(message).encode())
    except OSError:
        _exit(0)


def _exit(status):
    """Ends the zygote now (no atexit, no wait for threads), its output flushed."""
    _flush()
    os._exit(status)


def _flush():
    """Flushes sys.stdout and sys.stderr, so that no fork writes their buffers again."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _serve(control, check):
    """Answers fork requests until the end of the stream; returns a request only in its worker."""
    while True:
        data, fds, problem = _receive(control)
        if data == b"" and problem is None:
            _close(fds)
            _exit(0)
        request = None
        if problem is None:
            request, problem = _parse(data, fds)
        if problem is not None:
            _close(fds)
            _send(control, {"error": problem})
            continue
        reason = _unsafe(check.modules, fds)
        if reason:
            _close(fds)
            _send(control, {"unsafe": reason})
            _exit(0)
        if _fork(control, request, fds, check):
            return request


def _receive(control):
    """(one datagram, the fds that came with it, what is wrong with it or None)."""
    fds = array.array("i")
    try:
        data, ancillary, flags, _ = control.recvmsg(
            MAX_MESSAGE, socket.CMSG_SPACE(FDS_PER_FORK * fds.itemsize))
    except OSError as e:
        sys.stderr.write(f"ptrun runner: --zygote: control socket: {e.strerror or e}\n")
        _exit(1)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    problem = None
    if flags & socket.MSG_TRUNC:
        problem = f"request over {MAX_MESSAGE} bytes"
    elif flags & socket.MSG_CTRUNC:
        problem = f"more than {FDS_PER_FORK} fds with the request"
    return data, list(fds), problem


def _close(fds):
    """Closes the fds, ignoring those already closed."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _parse(data, fds):
    """(the fork request in `data`, None) or (None, what is wrong with it)."""
    if len(fds) != FDS_PER_FORK:
        return None, f"expected {FDS_PER_FORK} fds with the request, got {len(fds)}"
    try:
        message = json.loads(data.decode("utf-8"))
    except ValueError as e:  # undecodable bytes or bad JSON
        return None, f"request is not JSON: {e}"
    fork = message.get("fork") if isinstance(message, dict) else None
    if not isinstance(fork, dict):
        return None, 'expected {"fork": {...}}'
    try:
        fork = _decode_hex_fields(fork)
    except (TypeError, ValueError) as e:
        return None, f"fork: {e}"
    problem = _check_fields(fork)
    return (None, problem) if problem else (fork, None)


def _decode_hex_fields(fork):
    """The request with argv_hex, env_hex and cwd_hex (bytes in hex) turned into argv, env, cwd
    (str as python decodes its own arguments: os.fsdecode)."""
    fork = dict(fork)
    if "argv_hex" in fork:
        fork["argv"] = [_unhex(a) for a in _list(fork.pop("argv_hex"), "argv_hex")]
    if "env_hex" in fork:
        entries = [_unhex(e) for e in _list(fork.pop("env_hex"), "env_hex")]
        if any("=" not in e for e in entries):
            raise ValueError("env_hex: an entry without '='")
        fork["env"] = dict(e.split("=", 1) for e in entries)
    if "cwd_hex" in fork:
        fork["cwd"] = _unhex(fork.pop("cwd_hex"))
    return fork


def _list(value, what):
    """value when it is a list, else TypeError naming `what`."""
    if not isinstance(value, list):
        raise TypeError(f"{what}: expected a list")
    return value


def _unhex(text):
    """Hex digits as the str python makes of those bytes."""
    if not isinstance(text, str):
        raise TypeError(f"expected hex digits, got {text!r:.40}")
    return os.fsdecode(bytes.fromhex(text))


def _check_fields(fork):
    """What is wrong with a fork request's fields, or None."""
    checks = (("argv", _is_argv), ("env", _is_env), ("cwd", _is_text), ("parent", _is_pid),
              ("allow_ptrace", _is_bool), ("binding", _is_binding))
    for key, check in checks:
        if key not in fork:
            return f"fork: {key!r} is missing"
        if not check(fork[key]):
            return f"fork: bad {key!r}: {fork[key]!r:.200}"
    return None


def _is_text(value):
    """A str without NUL (an argument, a variable, a path)."""
    return isinstance(value, str) and "\0" not in value


def _is_argv(value):
    """["--", SCRIPT, ARGS...] or ["-m", MODULE, ARGS...]."""
    return (isinstance(value, list) and len(value) >= 2 and value[0] in ("--", "-m")
            and all(_is_text(a) for a in value))


def _is_env(value):
    """A {name: value} dict that putenv takes."""
    return isinstance(value, dict) and all(
        _is_text(k) and k and "=" not in k and _is_text(v) for k, v in value.items())


def _is_int(value):
    """An int, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_bool(value):
    """A bool."""
    return isinstance(value, bool)


def _is_pid(value):
    """A positive int."""
    return _is_int(value) and value > 0


def _is_words(value):
    """A list of 64-bit mask words."""
    return isinstance(value, list) and all(_is_int(w) and 0 <= w <= WORD_MAX for w in value)


def _is_binding(value):
    """None, or a binding whose node mask holds the node_bits - 1 bits the kernel reads."""
    if value is None:
        return True
    if not isinstance(value, dict):
        return False
    nodes, bits = value.get("node_mask"), value.get("node_bits")
    return (_is_words(value.get("cpu_mask")) and _is_words(nodes) and _is_int(bits)
            and _is_bool(value.get("many"))
            and (not nodes or 1 <= bits - 1 <= WORD_BITS * len(nodes)))


class _ForkCheck:
    """os.fork's last before-fork hook (registered first: they run last registered first):
    while armed, it checks that forking is safe once the other hooks have run, one of which may
    have started a thread."""

    def __init__(self, modules):
        self.modules, self.own_fds, self.reason = modules, None, None
        os.register_at_fork(before=self._check)

    def _check(self):
        if self.own_fds is not None:
            self.reason = _unsafe(self.modules, self.own_fds)

    def fork(self, own_fds):
        """os.fork(), and in both processes why forking was unsafe at that moment, or None."""
        self.own_fds, self.reason = own_fds, None
        try:
            return os.fork(), self.reason and (
                f"{self.reason} once os.fork had run the before-fork hooks (os.register_at_fork)")
        finally:
            self.own_fds = None


def _fork(control, request, fds, check):
    """Double-forks the worker: True in the worker (set up), False in the zygote (replied)."""
    _flush()
    read_end, write_end = os.pipe()
    try:
        first, unsafe = check.fork(fds)
    except OSError as e:
        _close((read_end, write_end, *fds))
        _send(control, {"error": f"fork: {e.strerror or e}"})
        return False
    if first == 0:
        if unsafe:  # the zygote says why
            os._exit(0)
        _fork_again(write_end, fds, check)  # returns only in the worker
        _close((read_end, write_end))
        _become_worker(control, request, fds)
        return True
    os.close(write_end)
    os.waitpid(first, 0)  # its child, the worker, is now ptrun's (the subreaper's)
    told = _written(read_end)
    _close((read_end, *fds))
    if told.startswith(UNSAFE_TOLD):
        unsafe = told[len(UNSAFE_TOLD):]
    if unsafe:
        _send(control, {"unsafe": unsafe})
        _exit(0)
    if told.isdigit():
        _send(control, {"forked": int(told)})
    else:
        _send(control, {"error": f"fork: {told or 'the intermediate process died'}"})
    return False


def _fork_again(write_end, fds, check):
    """In the intermediate child: forks the worker, writes its pid (or why not, or why that fork
    was unsafe: then the worker ends at once) and exits; returns only in the worker."""
    try:
        pid, unsafe = check.fork(fds)
        if pid == 0:
            if unsafe:
                os._exit(0)
            return
        told = str(pid)
        if unsafe:
            os.waitpid(pid, 0)
            told = UNSAFE_TOLD + unsafe
    except BaseException as e:
        told = getattr(e, "strerror", None) or repr(e)
    try:
        os.write(write_end, told.encode())
    finally:
        os._exit(0)


def _written(fd):
    """What the intermediate child (gone now) wrote on the pipe `fd`, as text ("": nothing)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096).decode(errors="replace")
    except BlockingIOError:
        return ""


class _Refused(Exception):
    """A worker set-up failure whose message is the whole line to print."""


def _become_worker(control, request, fds):
    """In the worker: its own group, fds, go signal, parent checks, binding, cwd, environment
    and fresh state; on any failure one line on its stderr and exit status 127."""
    stdout_fd, stderr_fd, go_fd = fds
    control.detach()  # its fd is closed below: the object must never close that number again
    err, step = stderr_fd, "setpgid"
    try:
        os.setpgid(0, 0)
        step = "fds"
        _take_fds(stdout_fd, stderr_fd, go_fd)
        err, step = 2, "go pipe"
        _wait_for_go(go_fd)
        step = "prctl"
        _follow_parent(request["parent"], request["allow_ptrace"])
        if request["binding"] is not None:
            _bind(request["binding"])
        step = "signal mask"
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        step = "chdir"
        if request["cwd"]:  # "": ptrun's own is gone; the zygote's is the same
            os.chdir(request["cwd"])
        step = "environment"
        _replace_environment(request["env"])
        step = "fresh state"
        _fresh_state(request["env"])
    except _Refused as e:
        _fail(err, str(e))
    except BaseException as e:
        _fail(err, f"ptrun: preloaded worker: {step}: {_describe(e)}")


def _describe(error):
    """An exception in a few words: strerror and file name for an OSError."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    return f"{type(error).__name__}: {error}"


def _fail(fd, line):
    """Writes `line` to fd and exits 127."""
    try:
        os.write(fd, (line + "\n").encode(errors="backslashreplace"))
    finally:
        os._exit(WORKER_FAILED_STATUS)


def _events_fd():
    """ptrun's events channel, which the zygote inherits and every worker keeps: the descriptor its
    PTRUN_EVENTS_SOCKET names ("fd:4"), as a tuple of none or one."""
    events = os.environ.get("PTRUN_EVENTS_SOCKET", "")
    return (int(events[3:]),) if events.startswith("fd:") and events[3:].isdigit() else ()


def _take_fds(stdout_fd, stderr_fd, go_fd):
    """Puts the worker's stdout and stderr in place and closes every other fd above 2 but go and
    ptrun's events channel."""
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    keep = sorted({go_fd, *_events_fd()})
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _max_fd())


def _max_fd():
    """One above the highest fd number this process may hold (as subprocess reckons it)."""
    try:
        return max(os.sysconf("SC_OPEN_MAX"), 256)
    except (ValueError, OSError):
        return 1 << 16


def _wait_for_go(go_fd):
    """Blocks until ptrun says go (b"g"); anything else: ptrun let the worker go, exit 0."""
    try:
        said = os.read(go_fd, 1)
    except OSError:
        said = b""
    os.close(go_fd)
    if said != b"g":
        os._exit(0)


def _libc():
    """The C library, errno kept."""
    return ctypes.CDLL(None, use_errno=True)


def _follow_parent(parent, allow_ptrace):
    """Dies with ptrun (SIGKILL); exits 127 when ptrun is already gone; lets ptrun trace it."""
    libc = _libc()
    if libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    if os.getppid() != parent:
        os._exit(WORKER_FAILED_STATUS)
    if allow_ptrace:  # Yama: ptrun's stack tool may attach (best effort)
        libc.prctl(PR_SET_PTRACER, ctypes.c_ulong(parent), ctypes.c_ulong(0),
                   ctypes.c_ulong(0), ctypes.c_ulong(0))


def _bind(binding):
    """Binds as placement/src/apply_binding.cpp does: CPUs, then the preferred memory nodes."""
    try:
        os.sched_setaffinity(0, _bits(binding["cpu_mask"]))
    except OSError as e:
        raise _Refused(_binding_failure("sched_setaffinity", e.errno)) from None
    nodes, maxnode = binding["node_mask"], binding["node_bits"]
    if not nodes:
        return
    error = errno.EINVAL
    if binding["many"]:
        error = _set_mempolicy(MPOL_PREFERRED_MANY, nodes, maxnode)
    if error == errno.EINVAL:  # one node, or a kernel before 5.15: the mask's first node
        error = _set_mempolicy(MPOL_PREFERRED, nodes, maxnode)
    if error != 0:
        raise _Refused(_binding_failure("set_mempolicy", error))


def _bits(words):
    """The numbers of the bits set in a mask of 64-bit words."""
    return {i * WORD_BITS + bit for i, word in enumerate(words) for bit in range(WORD_BITS)
            if word >> bit & 1}


def _binding_failure(call, error):
    """ptrun's line for a binding that failed (spawn.cpp's words)."""
    return f"ptrun: cannot bind the worker (--numa-binding): {call}: {os.strerror(error)}"


def _set_mempolicy(mode, words, maxnode):
    """set_mempolicy(2) with the node mask `words`; 0 or the errno."""
    number = SYS_SET_MEMPOLICY.get(os.uname().machine)
    if number is None:
        return errno.ENOSYS
    mask = (ctypes.c_ulong * len(words))(*words)
    if _libc().syscall(ctypes.c_long(number), ctypes.c_int(mode), mask,
                       ctypes.c_ulong(maxnode)) == 0:
        return 0
    return ctypes.get_errno()


def _replace_environment(env):
    """Makes `env` the whole environment, for os.environ and C's getenv alike."""
    os.environ.clear()
    _libc().clearenv()  # variables set in C behind os.environ's back
    os.environ.update(env)


def _fresh_state(env):
    """What separate interpreters would not share: numpy's global generator, torch's threads."""
    # Only a loaded numpy.random has a state to share: numpy 2 loads it lazily (getattr would
    # import it into every worker), and a later import seeds itself from the OS.
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # from OS entropy
    torch = sys.modules.get("torch")
    threads = env.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isascii() and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))  # libgomp read the zygote's OMP_NUM_THREADS


def _set_argv(interpreter, argv):
    """sys.argv and sys.orig_argv as for `python [options] -u _runner.py ARGV...`."""
    runner = sys.argv[0]
    if interpreter is not None:
        sys.orig_argv = [*interpreter, runner, *argv]
    sys.argv = [runner, *argv]
