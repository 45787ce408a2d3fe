#!/usr/bin/python3
"""What ptrun's Python runner (python/ptrun/_runner.py) costs a worker:

    /usr/bin/python3 bench/python_runner/run.py [--runs 40] [--steps 2000] [--rounds 15] [--torch2]

(a) start-up: `python3 -u empty.py` against `python3 -u _runner.py -- empty.py` (and the runner
    with PTRUN_STACK_* and PTRUN_HEARTBEAT_FILE set), run alternately; medians of wall and CPU
    time (user + system) per run, and their difference to plain python.
(b) the optimizer hook: one process, run through the runner with PTRUN_HEARTBEAT_FILE set, times
    `opt.step()` (SGD on a one-element parameter) in blocks, alternately with the runner's hook
    installed and removed; the median over rounds of the difference is the hook's cost per step.
    It also times the hook alone (what the runner adds around a step that does nothing).
--torch2 repeats (a) and (b) with Python 3.13 and torch 2.6 in the Debian 13 root
(scripts/torch2-run.sh; needs root)."""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(REPO, "python", "ptrun", "_runner.py")
TORCH2_RUN = os.path.join(REPO, "scripts", "torch2-run.sh")
sys.path.insert(0, os.path.join(REPO, "python"))
from ptrun import heartbeat  # noqa: E402  (this checkout's module)

PYTHON = "/usr/bin/python3"
SIGNAL = 61  # SIGRTMAX - 3 with glibc, ptrun's stack signal

# Run through the runner with a heartbeat record: prints "name ns_per_step" lines.
STEP_BENCH = r'''
import statistics, sys, time
import torch
import torch.optim.optimizer as optimizer_module
steps, rounds = int(sys.argv[1]), int(sys.argv[2])
param = torch.nn.Parameter(torch.zeros(1))
param.grad = torch.ones(1)
opt = torch.optim.SGD([param], lr=0.0)
cls = type(opt)
hooks = getattr(optimizer_module, "_global_optimizer_post_hooks", None)
if hooks is not None and getattr(optimizer_module, "register_optimizer_step_post_hook", None):
    installed = dict(hooks)                      # torch 2: the runner's global post hook
    assert len(installed) == 1, installed
    hook = next(iter(installed.values()))
    def hook_on(): hooks.update(installed)
    def hook_off(): hooks.clear()
    def hook_alone(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            hook(opt, (), {})
        return (time.perf_counter_ns() - t) / n
else:
    wrapped = cls.step                           # torch 1.x: the runner's wrapper of SGD.step
    assert getattr(wrapped, "_ptrun_counts_steps", False), "the runner did not wrap the step"
    original = wrapped.__wrapped__
    def hook_on(): cls.step = wrapped
    def hook_off(): cls.step = original
    def hook_alone(n):                           # the runner's wrapper around a no-op step
        cells = dict(zip(wrapped.__code__.co_freevars,
                         (c.cell_contents for c in wrapped.__closure__)))
        noop = lambda *args, **kwargs: None
        fake = wrapped.__globals__["_step_with_beat"](noop, cells["beat"])
        t = time.perf_counter_ns()
        for _ in range(n):
            fake(opt)
        with_wrapper = (time.perf_counter_ns() - t) / n
        t = time.perf_counter_ns()
        for _ in range(n):
            noop(opt)
        return with_wrapper - (time.perf_counter_ns() - t) / n
def block():
    step = opt.step
    t = time.perf_counter_ns()
    for _ in range(steps):
        step()
    return (time.perf_counter_ns() - t) / steps
on, off, diff = [], [], []
block()  # warm-up
for _ in range(rounds):
    hook_off(); a = block()
    hook_on(); b = block()
    off.append(a); on.append(b); diff.append(b - a)
hook_on()
print("torch", torch.__version__)
print("step_without_hook", statistics.median(off))
print("step_with_hook", statistics.median(on))
print("hook_per_step", statistics.median(diff))
print("hook_per_step_min", min(diff))
print("hook_per_step_max", max(diff))
print("hook_alone", statistics.median(hook_alone(200000) for _ in range(5)))
print("beats", steps + rounds * steps + 5 * 200000)
'''


def timed(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1e3, cpu * 1e3


def startup(d, runs):
    empty = os.path.join(d, "empty.py")
    open(empty, "w").close()
    record = os.path.join(d, "record-startup")
    heartbeat.create(record)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTRUN_")}
    armed = {**base, "PTRUN_STACK_FILE": os.path.join(d, "stacks"),
             "PTRUN_STACK_SIGNAL": str(SIGNAL), "PTRUN_HEARTBEAT_FILE": record}
    cases = [("python3 -u empty.py", [PYTHON, "-u", empty], base),
             ("python3 -u _runner.py -- empty.py", [PYTHON, "-u", RUNNER, "--", empty], base),
             ("the same, stack dump + heartbeat armed", [PYTHON, "-u", RUNNER, "--", empty], armed)]
    results = {name: [] for name, _, _ in cases}
    for _ in range(runs):
        for name, cmd, env in cases:
            results[name].append(timed(cmd, env))
    print(f"(a) start-up, Python {sys.version.split()[0]}: {runs} alternating runs of each, "
          "medians in ms\n")
    print("| command | wall | cpu | wall - plain | cpu - plain |")
    print("|---|---:|---:|---:|---:|")
    plain_wall = statistics.median(w for w, _ in results[cases[0][0]])
    plain_cpu = statistics.median(c for _, c in results[cases[0][0]])
    for name, _, _ in cases:
        wall = statistics.median(w for w, _ in results[name])
        cpu = statistics.median(c for _, c in results[name])
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {wall - plain_wall:+.2f} "
              f"| {cpu - plain_cpu:+.2f} |")
    print()


def hook_cost(d, steps, rounds, torch2):
    script = os.path.join(d, "step_bench.py")
    with open(script, "w") as f:
        f.write(STEP_BENCH)
    record = os.path.join(d, f"record-{'torch2' if torch2 else 'host'}")
    heartbeat.create(record)
    cmd = [PYTHON, "-u", RUNNER, "--", script, str(steps), str(rounds)]
    if torch2:
        cmd = [TORCH2_RUN, "--bind", REPO, "--bind", d, "--", *cmd]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PTRUN_")},
           "PTRUN_HEARTBEAT_FILE": record}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"(b) {'torch 2' if torch2 else 'host torch'}: failed: {res.stderr.strip()[-500:]}\n")
        return
    out = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    count = heartbeat.read(record)["count"]
    print(f"(b) optimizer hook, torch {out['torch']}: {rounds} rounds of {steps} steps each way, "
          f"ns per step (the record counted {count} beats, {out['beats']} expected)\n")
    print("| case | ns |")
    print("|---|---:|")
    for key, label in (("step_without_hook", "opt.step(), hook removed"),
                       ("step_with_hook", "opt.step(), runner's hook"),
                       ("hook_per_step", "difference (median of rounds)"),
                       ("hook_per_step_min", "difference, min round"),
                       ("hook_per_step_max", "difference, max round"),
                       ("hook_alone", "the hook alone (around a no-op)")):
        print(f"| {label} | {float(out[key]):.0f} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--torch2", action="store_true", help="also with Python 3.13 / torch 2.6")
    ap.add_argument("--startup-only", action="store_true", help=argparse.SUPPRESS)  # in the root
    a = ap.parse_args()
    load_before = open("/proc/loadavg").read().split()[:3]
    d = tempfile.mkdtemp(prefix="ptrun-runner-bench-")
    try:
        startup(d, a.runs)
        if a.startup_only:
            return
        if a.torch2:
            sys.stdout.flush()
            subprocess.run([TORCH2_RUN, "--bind", REPO, "--", PYTHON, os.path.abspath(__file__),
                            "--startup-only", "--runs", str(a.runs)], check=True)
        hook_cost(d, a.steps, a.rounds, False)
        if a.torch2:
            hook_cost(d, a.steps, a.rounds, True)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(f"load before {' '.join(load_before)}, after {' '.join(load_after)}; "
          f"{os.cpu_count()} CPUs; {PYTHON} {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
