#!/usr/bin/python3
"""The floor for a warm start: import the modules once, then fork every rank from this process.

    python3 floor.py NPROC PORT MODULES SCRIPT [ARGS...]      (MODULES: comma-separated, e.g. torch)

What `ptrun --preload MODULES --nproc-per-node NPROC SCRIPT` has to do at the least on one node:
one interpreter imports MODULES; NPROC children are forked from it, each given the environment
torch.distributed's env:// rendezvous reads (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), each runs SCRIPT as __main__ and exits as `python3 SCRIPT` does; the
parent waits for all of them and exits with the first non-zero status (os._exit: it ran no job, so
its own torch is not finalized, as ptrun's zygote's is not). No agent, no store of its own, no
restarts, no logs: rank 0's init_process_group hosts the TCP store on PORT, as plain torch does.
FLOOR_EXIT=atexit-only: each rank runs the atexit handlers and flushes, then skips the
interpreter's finalization (os._exit), to show what finalizing a forked torch process costs."""
import atexit
import importlib
import os
import runpy
import sys


def main():
    nproc, port, modules, script = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for name in filter(None, modules.split(",")):
        importlib.import_module(name)
    children = []
    for rank in range(nproc):
        pid = os.fork()
        if pid == 0:
            os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                              LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0",
                              MASTER_ADDR=os.environ.get("MASTER_ADDR", "127.0.0.1"),
                              MASTER_PORT=port)
            sys.argv = sys.argv[4:]
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
            if os.environ.get("FLOOR_EXIT") == "atexit-only":  # atexit, then no finalization
                atexit._run_exitfuncs()
                sys.stdout.flush(), sys.stderr.flush()
                os._exit(0)
            return 0  # then the interpreter exits as `python3 SCRIPT` does: atexit, finalization
        children.append(pid)
    worst = 0
    for pid in children:
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        worst = worst or (code if code > 0 else 128 - code if code < 0 else 0)
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(worst)  # the parent ran no job: skip finalizing its torch (~0.3 s), as a zygote does


if __name__ == "__main__":
    sys.exit(main())
