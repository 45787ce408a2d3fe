"""What a worker sees of itself, as JSON in OUT_DIR/rank_R_attempt_A.json (test_preload.py):
whether torch was already imported when the script began, its parentage, process group, death
signal, descriptors (before its process group), cgroup, argv, path, environment (os.environ and C's environ), rlimits, umask, signal mask and
dispositions, random draws.
Usage: preload_probe.py OUT_DIR [--fail-rank R] (R exits 1 in attempt 0 after an all_reduce)
[--sleep] (after writing, waits for a signal)."""
import sys

TORCH_AT_START = "torch" in sys.modules  # first: nothing of this script has imported it yet

import ctypes  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402


def c_environ():
    """The C library's environment (what getenv reads), as text."""
    libc = ctypes.CDLL(None)
    env = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
    out, i = {}, 0
    while env[i] is not None:
        key, _, value = env[i].decode("utf-8", "surrogateescape").partition("=")
        out[key] = value
        i += 1
    return out


def pdeathsig():
    libc = ctypes.CDLL(None, use_errno=True)
    sig = ctypes.c_int(0)
    libc.prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
    return sig.value


def numpy_draw():
    try:
        import numpy
    except ImportError:
        return None
    return float(numpy.random.rand())


def main():
    out_dir = sys.argv[1]
    import torch
    import torch.distributed as dist
    # Before the process group: gloo's and the store client's own descriptors open and close on
    # their threads' schedule (a CI run once listed one fewer in an exec'd worker).
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    rank, attempt = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    with open("/proc/self/cgroup") as f:
        cgroup = f.read().strip()
    seen = {
        "torch_at_start": TORCH_AT_START, "pid": os.getpid(), "ppid": os.getppid(),
        "pgid": os.getpgid(0), "pdeathsig": pdeathsig(), "fds": fds, "cgroup": cgroup,
        "argv": sys.argv, "path0": sys.path[0], "file": __file__, "cwd": os.getcwd(),
        "environ": dict(os.environ), "c_environ": c_environ(), "random": random.random(),
        "numpy": numpy_draw(), "sum": t.item(), "threads": torch.get_num_threads(),
        "main_module": sys.modules["__main__"].__name__,
        "rlimits": [resource.getrlimit(r) for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_STACK,
                                                    resource.RLIMIT_CORE, resource.RLIMIT_NPROC)],
        "umask": os.umask(0o022), "signal_mask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "dispositions": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM,
                                                            signal.SIGPIPE, signal.SIGCHLD)],
    }
    with open(os.path.join(out_dir, f"rank_{rank}_attempt_{attempt}.json"), "w") as f:
        json.dump(seen, f)
    if "--fail-rank" in sys.argv and attempt == 0:
        dist.barrier()  # every rank has written its file before one fails (and ptrun stops all)
        if rank == int(sys.argv[sys.argv.index("--fail-rank") + 1]):
            sys.exit(1)
    if "--sleep" in sys.argv:
        print(f"rank {rank} sleeps", flush=True)
        signal.pause()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
