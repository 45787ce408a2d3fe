"""examples/python/recover_ddp.py with the clock lines bench/recovery/run.py reads, else unchanged:

    python3 bench/recovery/torch_timed.py [recover_ddp.py's flags]

Loads recover_ddp.py as a module and, around its own functions, prints to stderr (CLOCK_MONOTONIC
ns, the clock train's --step-times uses):
    recover_ddp: rank R started at T ns              before the script (and torch) is imported
    recover_ddp: rank R step S done at T ns          after each train_step that returned
    recover_ddp: rank R killing itself at T ns       just before its --crash-at-step SIGKILL
then runs its main(). Nothing of the training changes: train_step is called as before, and the
script's os.kill goes through after the line is written."""
import importlib.util
import os
import signal
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "python", "recover_ddp.py")
RANK = os.environ.get("RANK", "0")


def say(what):
    """One line to stderr in one write, with the monotonic time."""
    sys.stderr.write(f"recover_ddp: rank {RANK} {what} at {time.monotonic_ns()} ns\n")
    sys.stderr.flush()


class _OsWithTimedKill:
    """The os module as recover_ddp.py sees it: kill() of its own pid by SIGKILL says when first."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def kill(pid, sig):
        if pid == os.getpid() and sig == signal.SIGKILL:
            say("killing itself")
        os.kill(pid, sig)


def load():
    """recover_ddp.py as a module, its train_step and os wrapped."""
    spec = importlib.util.spec_from_file_location("recover_ddp", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    step = mod.train_step

    def timed_step(*args):  # train_step(model, opt, rank, step): the step comes last
        step(*args)
        say(f"step {args[-1]} done")

    mod.train_step = timed_step
    mod.os = _OsWithTimedKill()
    return mod


if __name__ == "__main__":
    say("started")
    sys.argv[0] = EXAMPLE
    load().main()
