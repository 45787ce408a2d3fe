#!/usr/bin/python3
"""bench/recovery (issue 36): time from a worker's kill to the next completed step, recovery in
place (`--restart-policy failed`) against a group restart (`--restart-policy group`), side by side:

    /usr/bin/python3 bench/recovery/run.py [--rounds 11] [--ranks 4,8] [--torch-rounds 5]
                                           [--no-torch] [--timeout 120]

train (examples/train, the C++ `ptrun::ddp` example), at each of --ranks:
    failed  ptrun --standalone --nproc-per-node N --restart-policy failed --max-restarts 1
                train --epochs 2 --crash-at-step 40 --crash-rank 2 --step-times
            (the replacement takes the survivors' state; no checkpoint is written or read)
    group   ptrun ... --restart-policy group --max-restarts 1 train ... --checkpoint-dir DIR
                --checkpoint-every 1
            (every worker stopped and started again; rank 0 reloads the latest checkpoint)
Rank 2 SIGKILLs itself right after step 40 and says when (CLOCK_MONOTONIC ns); --step-times makes
every rank say when it started and when each step ended, on the same clock. Measured per run:
    next step      the kill to rank 0's step 41 done (in the new generation / restarted attempt);
    first step     the kill to rank 0's first step done after the first new worker started,
                   whichever step that is (rank 0 may end the killed rank's last step just after
                   the kill line): for group the step after the checkpoint it reloaded. When
                   rank 0 was stopped before its checkpoint of step 40 was on disk, the restart
                   reloads step 39 and redoes step 40; "first step" is then the group restart's
                   time had the checkpoint been of step 40 exactly: no step lost, the most
                   favourable case for group;
    started        the kill to the first / last new worker's "started" line (ptrun noticing the
                   exit, stopping the others for group, spawning; before any store or group work);
    one step       rank 0's median step time before the kill (a floor: recovery cannot take less
                   than the step it ends with); group's includes writing its checkpoint each step;
    ptrun's join   failed only: ptrun's "generation 1 joined by all N workers X s after the
                   failure" (printed in 10 ms units).
The torch case (examples/python/recover_ddp.py through bench/recovery/torch_timed.py, which adds
the same clock lines; gloo, 4 ranks, --steps 15 --crash-at-step 10 --crash-rank 2: rank 2
SIGKILLs itself before its step 10, 0-based, so the next step is step 10) compares failed, failed
--preload torch, group --preload torch and group. recover_ddp.py has no checkpoint: a group restart
begins again at step 0, so its "next step" redoes steps 0-9 and its "first step" (step 0 of the
restarted attempt) is the restart had it reloaded a checkpoint at no cost.

Floors, after each program's cases: what any recovery costs at least, in place or by a group
restart. Both end with every rank in a group that includes a new process, so both pay a fork and
the group's formation: bench_ddp_floor (build/bench; bench/recovery/ddp_floor.cpp) times fork() of
N processes to a ptrun::ddp cpu group built and one allreduce done; gloo_floor.py the same with
torch imported before the fork and init_process_group("gloo"). Group's time over the floor is the
largest ratio recovery in place could reach against it.

Rounds are interleaved (the order of the cases rotates each round); medians. Standard library only.
Each command is bounded (--timeout); on a timeout it is stopped (SIGTERM, then SIGKILL to its
process group), and any process still carrying this run's marker variable (RECOVERY_BENCH_TAG)
after a command is killed by pid and reported. Prints a markdown report for bench/RESULTS.md."""
import argparse
import datetime
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PTRUN = os.path.join(REPO, "build", "launcher", "ptrun")
TRAIN = os.path.join(REPO, "build", "examples", "train", "train")
EXAMPLE = os.path.join(REPO, "examples", "python", "recover_ddp.py")
TORCH_TIMED = os.path.join(HERE, "torch_timed.py")
DDP_FLOOR = os.path.join(REPO, "build", "bench", "bench_ddp_floor")
GLOO_FLOOR = os.path.join(HERE, "gloo_floor.py")
IMPORT_ROW = re.compile(r"^import torch: median ([0-9.]+) ms, min ([0-9.]+) ms$", re.M)
FLOOR_ROW = re.compile(r"^\| (\d+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|$", re.M)
STORE_C_LIB = os.path.join(REPO, "build", "rendezvous", "c_api", "libptrun_store_c.so")
PYTHON = "/usr/bin/python3"

TRAIN_CRASH = 40   # train's steps are 1-based: killed after step 40, the next is 41
TRAIN_ARGS = ["--epochs", "2", "--crash-at-step", str(TRAIN_CRASH), "--crash-rank", "2",
              "--step-times"]
TORCH_CRASH = 10   # recover_ddp.py's are 0-based: killed before step 10, which is the next
TORCH_ARGS = ["--steps", "15", "--crash-at-step", str(TORCH_CRASH), "--crash-rank", "2"]
TARGET = 5.0       # issue 36: recovery in place at least 5x faster than the group restart

STARTED = re.compile(r"rank (\d+) (?:\(pid \d+\) )?started at (\d+) ns$", re.M)
STEP = re.compile(r"rank (\d+) step (\d+) done at (\d+) ns$", re.M)
KILL = re.compile(r"rank \d+ killing itself.* at (\d+) ns$", re.M)
JOINED = re.compile(r"generation 1 joined by all \d+ workers ([0-9.]+) s after the failure")
RESUMED = re.compile(r"resumed from the checkpoint at step (\d+)|re-formed at step (\d+)"
                     r"|re-formed generation 1 at step (\d+)")


class Failed(Exception):
    pass


class Case:
    """One command line to time: `program` (train or torch), its policy, ranks and the step the
    kill is followed by."""

    def __init__(self, program, policy, ranks, preload=False):
        self.program, self.policy, self.ranks, self.preload = program, policy, ranks, preload
        self.next_step = TRAIN_CRASH + 1 if program == "train" else TORCH_CRASH

    @property
    def name(self):
        return self.policy + (" --preload torch" if self.preload else "")

    @property
    def label(self):
        return f"{self.program}, {self.ranks} ranks, {self.name}"

    def argv(self, tmp):
        cmd = [PTRUN, "--standalone", "--nproc-per-node", str(self.ranks), "--restart-policy",
               self.policy, "--max-restarts", "1"]
        if self.preload:
            cmd += ["--preload", "torch"]
        if self.program == "torch":
            return cmd + [TORCH_TIMED, *TORCH_ARGS]
        cmd += [TRAIN, *TRAIN_ARGS]
        if self.policy == "group":
            cmd += ["--checkpoint-dir", os.path.join(tmp, "ckpt"), "--checkpoint-every", "1"]
        return cmd


class Bench:
    def __init__(self, args, tmp):
        self.a, self.tmp, self.runs, self.failures = args, tmp, 0, []
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PET_", "PTRUN_", "TORCHELASTIC_", "RECOVERY_BENCH_"))
               and k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                             "PYTHONPATH")}
        env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", PYTHON_EXEC=PYTHON,
                   PYTHONPATH=os.path.join(REPO, "python"), PTRUN_STORE_C_LIB=STORE_C_LIB,
                   RECOVERY_BENCH_TAG=tmp)
        self.env = env

    def run(self, case):
        """Runs `case` once; returns its figures (dict) or raises Failed."""
        self.runs += 1
        d = os.path.join(self.tmp, f"run{self.runs:04d}")
        os.makedirs(d)
        out_path = os.path.join(d, "output")
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(case.argv(d), env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, cwd=d)
            try:
                rc = proc.wait(timeout=self.a.timeout)
            except subprocess.TimeoutExpired:
                stop(proc)
                raise Failed(f"{case.label}: still running after "
                             f"{self.a.timeout} s; stopped\n{tail(out_path)}")
        left = self.leftovers()
        if left:
            self.failures.append(f"{case.label}: left running after the command ended, killed: "
                                 f"{left}")
        text = read(out_path)
        if rc != 0:
            raise Failed(f"{case.label}: exit status {rc}\n"
                         f"{tail(out_path)}")
        return figures(case, text)

    def leftovers(self):
        """Processes still carrying this run's marker, given 1 s to end, then killed by pid."""
        pids = tagged_pids(self.tmp)
        if pids:
            time.sleep(1.0)
            pids = tagged_pids(self.tmp)
        killed = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        return killed

    def measure(self, cases, rounds, label):
        """{case: [figures]} over interleaved rounds."""
        got = {c: [] for c in cases}
        for r in range(rounds):
            for c in rotate(cases, r):
                try:
                    got[c].append(self.run(c))
                except Failed as e:
                    self.failures.append(str(e))
                    print(f"  ! {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
            progress(f"{label} round {r + 1}/{rounds}")
        return got


def figures(case, text):
    """The kill and what followed, from one run's output; times in ms after the kill."""
    kills = [int(t) for t in KILL.findall(text)]
    if len(kills) != 1:
        raise Failed(f"{case.label}: expected one kill line, found {len(kills)}\n{text[-1500:]}")
    kill = kills[0]
    expect = "replacing it alone" if case.policy == "failed" else "restarting the worker group"
    if expect not in text or (case.policy == "failed" and "restarting the worker group" in text):
        raise Failed(f"{case.label}: ptrun did not say '{expect}' (alone)\n{text[-1500:]}")
    starts = sorted(int(t) for _, t in STARTED.findall(text) if int(t) > kill)
    if not starts:
        raise Failed(f"{case.label}: no worker started after the kill\n{text[-1500:]}")
    rank0 = sorted((int(t), int(s)) for r, s, t in STEP.findall(text) if r == "0")
    before = [t for t, _ in rank0 if t < kill]
    # Rank 0 may end the killed rank's last step a little after the kill line: the new workers'
    # steps are those after the first of them started (for failed, the survivors cannot go on
    # before the replacement has joined).
    after = [(t, s) for t, s in rank0 if t > starts[0]]
    nxt = [t for t, s in after if s == case.next_step]
    if len(nxt) != 1:
        raise Failed(f"{case.label}: rank 0 finished step {case.next_step} {len(nxt)} times after "
                     f"the new workers started\n{text[-1500:]}")
    ms = lambda t: (t - kill) / 1e6  # noqa: E731
    joined = JOINED.search(text)
    resumed = RESUMED.search(text)
    return {
        "next": ms(nxt[0]),
        "first": ms(after[0][0]),
        "first_step": after[0][1],
        "started_first": ms(starts[0]),
        "started_last": ms(starts[-1]),
        "step": statistics.median(b - a for a, b in zip(before, before[1:])) / 1e6
        if len(before) > 2 else float("nan"),
        "joined": float(joined.group(1)) * 1e3 if joined else float("nan"),
        "resumed": next((int(g) for g in resumed.groups() if g), None) if resumed else 0,
    }


# --- helpers ------------------------------------------------------------------------------------
def stop(proc):
    """SIGTERM to the command (ptrun stops its workers), then SIGKILL to its process group."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


def tagged_pids(tag):
    needle = f"RECOVERY_BENCH_TAG={tag}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(name))
        except OSError:
            pass
    return out


def rotate(cases, r):
    k = r % len(cases)
    return cases[k:] + cases[:k]


def read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def tail(path, n=1500):
    text = read(path)
    return text if len(text) <= n else text[-n:]


def loadavg():
    return " ".join(read("/proc/loadavg").split()[:3])


def progress(msg):
    print(f"  {msg} ({datetime.datetime.now():%H:%M:%S}, load {loadavg()})", file=sys.stderr,
          flush=True)


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def col(runs, key):
    return [r[key] for r in runs]


def ratio(a, b):
    return a / b if b and a == a and b == b else float("nan")


def fmt(x, digits=1):
    return f"{x:.{digits}f}" if x == x else "-"


# --- report -------------------------------------------------------------------------------------
def floors(argv, timeout):
    """{ranks: (median, min) ms} from a floor program's table (ddp_floor.cpp, gloo_floor.py), and
    {"import": (median, min)} when it timed `import torch`; {} when it failed (said on stderr)."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"  ! floor {shlex.join(argv)}: {e}", file=sys.stderr, flush=True)
        return {}
    if out.returncode != 0:
        print(f"  ! floor {shlex.join(argv)}: exit {out.returncode}: {out.stderr.strip()}",
              file=sys.stderr, flush=True)
        return {}
    got = {int(n): (float(m), float(lo)) for n, m, lo, _ in FLOOR_ROW.findall(out.stdout)}
    if imported := IMPORT_ROW.search(out.stdout):
        got["import"] = (float(imported[1]), float(imported[2]))
    return got


def report(title, got, floor=None, floor_what=""):
    """One table per program: a row per case, ratios to the failed case of the same ranks and
    --preload; then every group case against every failed case, with the target; then the floor
    (what any recovery costs at least) and the best ratio it leaves each group case."""
    def failed_like(c, preload):
        return next((x for x in got if x.ranks == c.ranks and x.policy == "failed"
                     and x.preload == preload), None)

    print(f"{title}\n")
    print("| ranks | policy | runs | kill to next step, median ms | min | max | / failed | "
          "kill to first step (which) | / failed | new worker started, first / last | "
          "one step | ptrun's join | resumed at step |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c, runs in got.items():
        if not runs:
            print(f"| {c.ranks} | {c.name} | 0 | failed | | | | | | | | | |")
            continue
        base = med(col(got.get(failed_like(c, c.preload), []), "next"))
        nxt, first = col(runs, "next"), col(runs, "first")
        steps = sorted(set(col(runs, "first_step")))
        resumed = sorted(set(col(runs, "resumed")))
        print(f"| {c.ranks} | {c.name} | {len(runs)} | {fmt(med(nxt))} | {fmt(min(nxt))} | "
              f"{fmt(max(nxt))} | {ratio(med(nxt), base):.2f}x | "
              f"{fmt(med(first))} ({'/'.join(map(str, steps))}) | "
              f"{ratio(med(first), base):.2f}x | "
              f"{fmt(med(col(runs, 'started_first')))} / {fmt(med(col(runs, 'started_last')))} | "
              f"{fmt(med(col(runs, 'step')), 2)} | {fmt(med(col(runs, 'joined')), 0)} | "
              f"{'/'.join(map(str, resumed))} |")
    print()
    for c, runs in got.items():
        for f in (failed_like(c, False), failed_like(c, True)):
            if c.policy != "group" or f is None or not runs or not got[f]:
                continue
            base = med(col(got[f], "next"))
            r_next = ratio(med(col(runs, "next")), base)
            r_first = ratio(med(col(runs, "first")), base)
            ok = "met" if min(r_next, r_first) >= TARGET else "NOT met"
            print(f"- {c.ranks} ranks, {c.name} / {f.name}: {r_next:.2f}x to the next step, "
                  f"{r_first:.2f}x to the group's first step: target >= {TARGET:.0f}x {ok}")
    print()
    for c, runs in got.items():
        if c.policy != "group" or not runs or c.ranks not in (floor or {}):
            continue
        median, least = floor[c.ranks]
        what = floor_what
        if c.program == "torch" and not c.preload and "import" in floor:
            median, least = median + floor["import"][0], least + floor["import"][1]
            what += ", plus `import torch` in a fresh interpreter: no --preload"
        nxt, first = med(col(runs, "next")), med(col(runs, "first"))
        f = failed_like(c, c.preload)
        step = med(col(got.get(f, []), "step")) if f else 0.0
        print(f"- floor at {c.ranks} ranks ({what}): {median:.1f} ms (min {least:.1f}); "
              f"no recovery can beat {c.name} by more than {ratio(nxt, median):.2f}x to the next "
              f"step, {ratio(first, median):.2f}x to its first step (at the floor's minimum "
              f"{ratio(nxt, least):.2f}x / {ratio(first, least):.2f}x); with the one step "
              f"recovery ends with (failed's, {step:.1f} ms): {ratio(nxt, median + step):.2f}x / "
              f"{ratio(first, median + step):.2f}x")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11, help="interleaved rounds of train's cases")
    ap.add_argument("--ranks", default="4,8", help="train's world sizes, comma-separated")
    ap.add_argument("--torch-rounds", type=int, default=5, help="rounds of the torch cases")
    ap.add_argument("--no-torch", action="store_true", help="leave the torch case out")
    ap.add_argument("--timeout", type=float, default=120, help="bound on one command, s")
    a = ap.parse_args()
    for path in (PTRUN, TRAIN):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path} is missing: build ptrun and train first")
    tmp = tempfile.mkdtemp(prefix="ptrun-recovery-bench-")
    bench = Bench(a, tmp)
    try:
        affinity = subprocess.run(["taskset", "-p", str(os.getpid())], capture_output=True,
                                  text=True).stdout.strip()
        print(f"# bench/recovery, {datetime.datetime.now():%Y-%m-%d %H:%M:%S}")
        print(f"command: {shlex.join([sys.executable, *sys.argv])}")
        print(f"machine: nproc {os.cpu_count()}, `taskset -p`: {affinity} (may run on CPUs "
              f"{sorted(os.sched_getaffinity(0))}), load {loadavg()}")
        ranks = [int(n) for n in a.ranks.split(",")]
        train = [Case("train", p, n) for n in ranks for p in ("failed", "group")]
        print("commands, as run (DIR: a fresh directory per run):")
        for c in train:
            print(f"  {shlex.join(c.argv('DIR'))}")
        torch = []
        torch_note = None
        if a.no_torch:
            torch_note = "torch case: left out (--no-torch)"
        elif not os.path.exists(EXAMPLE):
            torch_note = f"torch case: left out, {EXAMPLE} does not exist"
        else:
            torch = [Case("torch", "failed", 4), Case("torch", "failed", 4, preload=True),
                     Case("torch", "group", 4, preload=True), Case("torch", "group", 4)]
            for c in torch:
                print(f"  {shlex.join(c.argv('DIR'))}")
            print(f"  env: GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 PYTHON_EXEC={PYTHON} "
                  "PYTHONPATH=python PTRUN_STORE_C_LIB=build/rendezvous/c_api/libptrun_store_c.so")
        if torch_note:
            print(torch_note)
        print(flush=True)
        got = bench.measure(train, a.rounds, "train")
        progress("train's floor (bench_ddp_floor)")
        floor = floors([DDP_FLOOR, "--ranks", a.ranks, "--rounds", str(a.rounds)], a.timeout)
        report(f"train (C++ `ptrun::ddp`), {a.rounds} rounds: ms after the kill", got, floor,
               "fork of N processes to a ptrun::ddp cpu group built and one allreduce, "
               "bench_ddp_floor")
        sys.stdout.flush()
        if torch:
            got = bench.measure(torch, a.torch_rounds, "torch")
            progress("torch's floor (gloo_floor.py)")
            floor = floors([PYTHON, GLOO_FLOOR, "--ranks", "4", "--rounds", str(a.rounds)],
                           a.timeout)
            report(f"torch (recover_ddp.py, gloo), {a.torch_rounds} rounds: ms after the kill",
                   got, floor, "torch imported, fork of N processes to init_process_group(gloo) "
                   "and one allreduce, gloo_floor.py")
        print(f"load at the end {loadavg()}, {datetime.datetime.now():%Y-%m-%d %H:%M:%S}")
        if bench.failures:
            print("\nfailures:")
            for f in bench.failures:
                print("  " + f.replace("\n", "\n    "))
    finally:
        left = bench.leftovers()
        if left:
            print(f"killed at the end: {left}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
