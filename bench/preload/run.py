#!/usr/bin/python3
"""What ptrun's --preload (warm start: workers forked from a zygote that imported torch once) buys:

    /usr/bin/python3 bench/preload/run.py [--rounds 5] [--ranks 8] [--torch2] [--timeout 300]

The job (job.py): every rank imports torch, runs init_process_group("gloo") and one all_reduce of a
1-element tensor, destroy_process_group() and exits (GLOO_SOCKET_IFNAME=lo, MASTER_ADDR=127.0.0.1,
OMP_NUM_THREADS=1).
Side by side in one run, interleaved rounds (the order rotates each round), medians:

(a) launch to every rank's exit (wall time of the whole command) for
    floor     floor.py: one Python imports torch, forks the ranks, waits (no launcher at all);
              its ranks exit as `python3 job.py` would (atexit, then interpreter finalization),
    floor, no finalization   the same with FLOOR_EXIT=atexit-only: each rank runs the atexit
              handlers, then os._exit (shows what finalizing the forked ranks costs),
    preload   ptrun --standalone --nproc-per-node N --preload torch job.py,
    ptrun     ptrun --standalone --nproc-per-node N job.py,
    torchrun  torchrun --standalone --nproc_per_node N --monitor_interval 0.1 job.py
              (1.13 on Python 3.11 also needs --redirects 9:0 --tee 9:0).
(b) restart: the last rank exits 1 right after its all_reduce in attempt 0 (the others wait to be
    stopped), --max-restarts 1; time from that rank's time.time() just before exiting to the last
    rank of attempt 1 past its all_reduce (each writes time.time() there), for preload, ptrun,
    torchrun.
(c) memory: the sum of the N workers' PSS (/proc/PID/smaps_rollup) while all of them wait after
    their all_reduce, for floor, preload, ptrun, torchrun; the zygote's PSS (pid from ptrun's
    "zygote pid N" line; for the floor: its parent) and the launcher's own PSS beside it. The driver
    then releases the workers (a file they poll) and the job ends by itself.

--torch2 runs all of it with Python 3.13 / torch 2.6 inside the Debian 13 root
(scripts/torch2-run.sh, needs root), with tests/torch2_site on PYTHONPATH as the integration tests'
flavour 2 does (Debian's torch 2.6 has no libuv), and torchrun's restarts in (b) with
TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (pytorch/pytorch#135712). Every command then also pays for
entering the root; row "enter root" times `torch2-run.sh -- /bin/true` alone.

Standard library only. Every wait is bounded; on a timeout or error the command is stopped
(SIGTERM, then SIGKILL to its process group) and any process still carrying this run's marker
variable (PRELOAD_BENCH_TAG) is killed by pid; the temp directory is removed at the end."""
import argparse
import datetime
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PTRUN = os.path.join(REPO, "build", "launcher", "ptrun")
TORCH2_RUN = os.path.join(REPO, "scripts", "torch2-run.sh")
TORCH2_SITE = os.path.join(REPO, "tests", "torch2_site")
JOB = os.path.join(HERE, "job.py")
FLOOR = os.path.join(HERE, "floor.py")
PYTHON = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
TORCH2_ROOT = "/var/cache/ptrun/torch2-trixie/root"

# torchrun 2.5+ shares its rendezvous TCPStore with the workers and, on a restart, attempt 1's
# init_process_group reads attempt 0's gloo addresses from it ("Gloo connectFullMesh failed",
# pytorch/pytorch#135712): every restart in (b) failed with Debian's 2.6 until this was set.
TORCH2_TORCHRUN_RESTART_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}

TARGET_FLOOR = 1.25    # preload at most 1.25x the floor, launch to exit
TARGET_LAUNCH = 3.0    # ptrun without preload at least 3x preload, launch to exit
TARGET_RESTART = 5.0   # restart without preload at least 5x restart with it
TARGET_MEMORY = 2.0    # workers' PSS without preload at least 2x with it


class Failed(Exception):
    pass


class Bench:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.tag = tmp  # unique: the marker every process of this run carries
        self.runs = 0
        self.failures = []
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("PET_", "PTRUN_", "TORCHELASTIC_", "PRELOAD_BENCH_"))
                and k not in ("MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "PYTHONPATH")}
        base.update(GLOO_SOCKET_IFNAME="lo", MASTER_ADDR="127.0.0.1", PYTHON_EXEC=PYTHON,
                    OMP_NUM_THREADS="1", PRELOAD_BENCH_TAG=self.tag)
        if args.torch2:
            base["PYTHONPATH"] = TORCH2_SITE  # tests/integration/torch_flavour.py, flavour 2
        self.env = base

    # --- commands -----------------------------------------------------------------------------
    def wrap(self, argv):
        if not self.a.torch2:
            return argv
        return [TORCH2_RUN, "--bind", REPO, "--bind", self.tmp, "--", *argv]

    def command(self, case, restarts=0):
        n = str(self.a.ranks)
        if case in ("floor", "floor, no finalization"):
            return self.wrap([PYTHON, FLOOR, n, str(free_port()), "torch", JOB])
        if case == "preload":
            return self.wrap([PTRUN, "--standalone", "--nproc-per-node", n,
                              "--max-restarts", str(restarts), "--preload", "torch", JOB])
        if case == "ptrun":
            return self.wrap([PTRUN, "--standalone", "--nproc-per-node", n,
                              "--max-restarts", str(restarts), JOB])
        if case == "torchrun":
            # torchrun 1.13 keeps a torchelastic_* directory in /tmp per run unless given one.
            fix = [] if self.a.torch2 else ["--redirects", "9:0", "--tee", "9:0", "--log_dir", self.tmp]
            return self.wrap([TORCHRUN, "--standalone", "--nproc_per_node", n,
                              "--max_restarts", str(restarts), "--monitor_interval", "0.1",
                              *fix, JOB])
        if case == "enter root":
            return self.wrap(["/bin/true"])
        raise ValueError(case)

    # --- running one command ------------------------------------------------------------------
    def start(self, case, mode, restarts=0):
        self.runs += 1
        d = os.path.join(self.tmp, f"run{self.runs:04d}")
        os.mkdir(d)
        env = dict(self.env, PRELOAD_BENCH_DIR=d, PRELOAD_BENCH_MODE=mode)
        if case == "floor, no finalization":
            env["FLOOR_EXIT"] = "atexit-only"
        if case == "torchrun" and mode == "restart" and self.a.torch2:
            env.update(TORCH2_TORCHRUN_RESTART_ENV)
        cmd = self.command(case, restarts)
        out = open(os.path.join(d, "output"), "wb")
        with open(os.path.join(d, "start"), "w") as f:
            f.write(repr(time.time()))
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=self.tmp, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        return proc, d, t0

    def finish(self, proc, d, t0, case, timeout):
        """Waits for the command (bounded); returns its wall time in s. Raises Failed."""
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(proc)
            raise Failed(f"{case}: still running after {timeout} s; stopped\n{tail(d)}")
        wall = time.perf_counter() - t0
        with open(os.path.join(d, "end"), "w") as f:
            f.write(repr(time.time()))
        left = self.leftovers(grace=5.0)
        if left:
            self.failures.append(f"{case}: processes left running after the command ended, "
                                 f"killed: {left}")
        if rc != 0:
            raise Failed(f"{case}: exit status {rc}\n{tail(d)}")
        return wall

    def stop(self, proc):
        """SIGTERM to the command (the launcher stops its workers), then SIGKILL to its group."""
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        self.leftovers(grace=2.0)

    def leftovers(self, grace):
        """Processes still carrying this run's marker: waits up to `grace` s for them to end,
        then kills them by pid. Returns what had to be killed."""
        deadline = time.monotonic() + grace
        while True:
            pids = tagged_pids(self.tag)
            if not pids or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        killed = []
        for pid in pids:
            try:
                killed.append(f"{pid} ({comm(pid)})")
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return killed

    def run(self, case, mode, restarts=0):
        proc, d, t0 = self.start(case, mode, restarts)
        try:
            return self.finish(proc, d, t0, case, self.a.timeout), d
        except BaseException:
            if proc.poll() is None:
                self.stop(proc)
            raise

    # --- (a) launch to exit -------------------------------------------------------------------
    def launch(self, cases):
        times = {c: [] for c in cases}
        phases = {c: [] for c in cases}  # (start to the last all_reduce, from it to the end)
        for r in range(-1, self.a.rounds):  # round -1: warm-up, not counted
            for c in rotate(cases, r):
                try:
                    wall, d = self.run(c, "launch")
                except Failed as e:
                    self.note(e)
                    continue
                if r < 0:
                    continue
                times[c].append(wall)
                if c != "enter root":
                    try:
                        start, end = float(read(os.path.join(d, "start"))), float(
                            read(os.path.join(d, "end")))
                        last = max(float(read(os.path.join(d, f"allreduce_{k}")))
                                   for k in range(self.a.ranks))
                        phases[c].append((last - start, end - last))
                    except (OSError, ValueError) as e:
                        self.note(f"{c}: no all_reduce record: {e}")
            progress("(a) warm-up done" if r < 0 else f"(a) round {r + 1}/{self.a.rounds}")
        return times, phases

    # --- (b) restart --------------------------------------------------------------------------
    def restart(self, cases):
        lat = {c: [] for c in cases}
        for r in range(self.a.rounds):
            for c in rotate(cases, r):
                try:
                    _, d = self.run(c, "restart", restarts=1)
                    fail = float(read(os.path.join(d, "fail")))
                    done = [float(read(os.path.join(d, f"done_1_{k}")))
                            for k in range(self.a.ranks)]
                except Failed as e:
                    self.note(e)
                    continue
                except (OSError, ValueError) as e:
                    self.note(f"{c}: restart left no complete record: {e}\n{tail(d)}")
                    continue
                lat[c].append((min(done) - fail, max(done) - fail))
            progress(f"(b) round {r + 1}/{self.a.rounds}")
        return lat

    # --- (c) memory ---------------------------------------------------------------------------
    def memory(self, cases):
        mem = {c: [] for c in cases}
        for r in range(self.a.rounds):
            for c in rotate(cases, r):
                try:
                    mem[c].append(self.memory_once(c))
                except Failed as e:
                    self.note(e)
            progress(f"(c) round {r + 1}/{self.a.rounds}")
        return mem

    def memory_once(self, case):
        proc, d, t0 = self.start(case, "memory")
        try:
            files = [os.path.join(d, f"pid_{k}") for k in range(self.a.ranks)]
            deadline = time.monotonic() + self.a.timeout
            while not all(os.path.exists(f) for f in files):
                if proc.poll() is not None:
                    raise Failed(f"{case}: ended (status {proc.returncode}) before every worker "
                                 f"waited\n{tail(d)}")
                if time.monotonic() > deadline:
                    raise Failed(f"{case}: not every worker waited after {self.a.timeout} s\n"
                                 f"{tail(d)}")
                time.sleep(0.05)
            time.sleep(0.3)  # let the last ones settle into their wait
            pids = [int(read(f)) for f in files]
            workers = [pss_kib(p) for p in pids]
            zygote = None
            if case == "preload":
                zpid = zygote_pid(os.path.join(d, "output"))
                zygote = pss_kib(zpid) if zpid else None
            launcher = pss_kib(proc.pid)
            if case == "floor":  # its parent is what the zygote is to ptrun --preload
                zygote, launcher = launcher, None
            if any(w is None for w in workers):
                raise Failed(f"{case}: a worker's smaps_rollup could not be read")
            open(os.path.join(d, "release"), "w").close()
            self.finish(proc, d, t0, case, self.a.timeout)
            return sum(workers), zygote, launcher
        except BaseException:
            if proc.poll() is None:
                self.stop(proc)
            raise

    def note(self, e):
        msg = str(e)
        self.failures.append(msg)
        print(f"  ! {msg.splitlines()[0]}", file=sys.stderr, flush=True)


# --- helpers ------------------------------------------------------------------------------------
def rotate(cases, r):
    k = r % len(cases)
    return cases[k:] + cases[:k]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read(path):
    with open(path) as f:
        return f.read().strip()


def tail(d, n=1500):
    """The command's output, its first and last n characters."""
    try:
        with open(os.path.join(d, "output"), "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return text if len(text) <= 2 * n else f"{text[:n]}\n[...]\n{text[-n:]}"


def comm(pid):
    try:
        return read(f"/proc/{pid}/comm")
    except OSError:
        return "?"


def tagged_pids(tag):
    needle = f"PRELOAD_BENCH_TAG={tag}".encode()
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(name))
        except OSError:
            pass
    return out


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def zygote_pid(output):
    text = read(output)
    marker = "zygote pid "
    i = text.find(marker)
    if i < 0:
        return None
    digits = text[i + len(marker):].split(")")[0]
    return int(digits) if digits.isdigit() else None


def progress(msg):
    print(f"  {msg} ({datetime.datetime.now():%H:%M:%S}, load {loadavg()})", file=sys.stderr,
          flush=True)


def loadavg():
    return " ".join(read("/proc/loadavg").split()[:3])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def ratio(a, b):
    return a / b if b and b == b and a == a else float("nan")


def verdict(ok):
    return "met" if ok else "NOT met"


# --- report -------------------------------------------------------------------------------------
def report_launch(times, phases, bench):
    n = bench.a.ranks
    print(f"(a) launch to every rank's exit, {n} ranks, wall time of the whole command, s "
          f"({len(next(iter(times.values())))} rounds)\n")
    floor, plain = med(times.get("floor", [])), med(times.get("ptrun", []))
    print("| case | median | min | max | / floor | / ptrun (no preload) |")
    print("|---|---:|---:|---:|---:|---:|")
    for c, xs in times.items():
        if not xs:
            print(f"| {c} | failed | | | | |")
            continue
        m = med(xs)
        print(f"| {c} | {m:.3f} | {min(xs):.3f} | {max(xs):.3f} | "
              f"{ratio(m, floor):.2f}x | {ratio(m, plain):.2f}x |")
    pre = med(times.get("preload", []))
    pairs_floor = paired(times, "preload", "floor")
    pairs_plain = paired(times, "ptrun", "preload")
    print()
    print(f"preload / floor = {ratio(pre, floor):.2f}x (paired by round: median "
          f"{med(pairs_floor):.2f}x): target <= {TARGET_FLOOR}x "
          f"{verdict(ratio(pre, floor) <= TARGET_FLOOR)}")
    print(f"ptrun without preload / preload = {ratio(plain, pre):.2f}x (paired: "
          f"{med(pairs_plain):.2f}x): target >= {TARGET_LAUNCH}x "
          f"{verdict(ratio(plain, pre) >= TARGET_LAUNCH)}")
    print()
    print("Where the wall time goes (medians, s): launch to the last rank past its all_reduce, "
          "then from there to the command's end (every rank's interpreter exit, the launcher "
          "reaping them)\n")
    print("| case | to the last all_reduce | then to the end |")
    print("|---|---:|---:|")
    for c, xs in phases.items():
        if xs:
            print(f"| {c} | {med([x[0] for x in xs]):.3f} | {med([x[1] for x in xs]):.3f} |")
    print()


def paired(times, a, b):
    xa, xb = times.get(a, []), times.get(b, [])
    return [x / y for x, y in zip(xa, xb)] if len(xa) == len(xb) else []


def report_restart(lat, bench):
    print("(b) restart: the failing rank's exit to every rank of attempt 1 past its all_reduce "
          "(first / last), s\n")
    print("| case | median last | min | max | median first | last / preload |")
    print("|---|---:|---:|---:|---:|---:|")
    pre = med([hi for _, hi in lat.get("preload", [])])
    for c, xs in lat.items():
        if not xs:
            print(f"| {c} | failed | | | | |")
            continue
        last = [hi for _, hi in xs]
        first = [lo for lo, _ in xs]
        print(f"| {c} | {med(last):.3f} | {min(last):.3f} | {max(last):.3f} | "
              f"{med(first):.3f} | {ratio(med(last), pre):.2f}x |")
    plain = med([hi for _, hi in lat.get("ptrun", [])])
    print()
    print(f"restart without preload / with = {ratio(plain, pre):.2f}x: target >= "
          f"{TARGET_RESTART}x {verdict(ratio(plain, pre) >= TARGET_RESTART)}")
    print()


def report_memory(mem, bench):
    n = bench.a.ranks
    print(f"(c) memory while the {n} workers wait after their all_reduce: PSS, MiB "
          "(zygote: the floor's parent for the floor)\n")
    print("| case | workers' sum (median) | min | max | per worker | zygote | launcher | "
          "all (workers + zygote + launcher) | workers / preload's |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    pre = med([w for w, _, _ in mem.get("preload", [])])
    for c, xs in mem.items():
        if not xs:
            print(f"| {c} | failed | | | | | | | |")
            continue
        w = [x[0] for x in xs]
        z = [x[1] for x in xs if x[1] is not None]
        la = [x[2] for x in xs if x[2] is not None]
        mib = lambda kib: f"{kib / 1024:.0f}" if kib == kib else ""  # noqa: E731
        total = med([x[0] + (x[1] or 0) + (x[2] or 0) for x in xs])
        print(f"| {c} | {mib(med(w))} | {mib(min(w))} | {mib(max(w))} | {mib(med(w) / n)} | "
              f"{mib(med(z)) if z else '-'} | {mib(med(la)) if la else '-'} | {mib(total)} | "
              f"{ratio(med(w), pre):.2f}x |")
    plain = med([w for w, _, _ in mem.get("ptrun", [])])
    print()
    print(f"workers' PSS without preload / with = {ratio(plain, pre):.2f}x: target >= "
          f"{TARGET_MEMORY}x {verdict(ratio(plain, pre) >= TARGET_MEMORY)}")
    print()


def versions(bench):
    cmd = bench.wrap([PYTHON, "-c", "import sys, torch; print(sys.version.split()[0], "
                      "torch.__version__)"])
    res = subprocess.run(cmd, env=bench.env, capture_output=True, text=True, timeout=120)
    return res.stdout.strip() or f"? ({res.stderr.strip()[-200:]})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (medians of these)")
    ap.add_argument("--ranks", type=int, default=8, help="workers per job")
    ap.add_argument("--torch2", action="store_true",
                    help="Python 3.13 / torch 2.6 in the Debian 13 root (scripts/torch2-run.sh)")
    ap.add_argument("--timeout", type=float, default=300, help="bound on one command, s")
    ap.add_argument("--only", default="abc", help="which measurements: a subset of 'abc'")
    a = ap.parse_args()
    if not os.access(PTRUN, os.X_OK):
        sys.exit(f"{PTRUN} is missing: build ptrun first")
    tmp = tempfile.mkdtemp(prefix="ptrun-preload-bench-")
    bench = Bench(a, tmp)
    try:
        cases = ["floor", "preload", "ptrun"]
        torchrun_path = (TORCH2_ROOT if a.torch2 else "") + TORCHRUN
        torchrun_note = ""
        if os.path.exists(torchrun_path):
            cases.append("torchrun")
        else:
            torchrun_note = f"torchrun: not run, {torchrun_path} does not exist"
        print(f"# bench/preload, {datetime.datetime.now():%Y-%m-%d %H:%M:%S}")
        print(f"command: {shlex.join([sys.executable, *sys.argv])}")
        print(f"machine: {os.cpu_count()} CPUs, this process may run on CPUs "
              f"{sorted(os.sched_getaffinity(0))}, load {loadavg()}; "
              f"{'Debian 13 root, ' if a.torch2 else ''}Python/torch: {versions(bench)}")
        print(f"ranks {a.ranks}, rounds {a.rounds}; env GLOO_SOCKET_IFNAME=lo "
              f"MASTER_ADDR=127.0.0.1 OMP_NUM_THREADS=1 PYTHON_EXEC={PYTHON}"
              f"{' PYTHONPATH=tests/torch2_site' if a.torch2 else ''}")
        print("commands (a), as run:")
        for c in cases + (["enter root"] if a.torch2 else []):
            print(f"  {c}: {shlex.join(bench.command(c))}")
        print("  floor, no finalization: the floor with FLOOR_EXIT=atexit-only (each rank runs "
              "atexit, then os._exit)")
        if torchrun_note:
            print(torchrun_note)
        if a.torch2 and "torchrun" in cases:
            print("  torchrun in (b) only: TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (pytorch/pytorch"
                  "#135712: without it torch 2.6's restarted workers fail in init_process_group)")
        print(flush=True)
        if "a" in a.only:
            extra = ["floor, no finalization"] + (["enter root"] if a.torch2 else [])
            times, phases = bench.launch(cases + extra)
            report_launch(times, phases, bench)
            sys.stdout.flush()
        if "b" in a.only:
            lat = bench.restart([c for c in cases if c != "floor"])
            report_restart(lat, bench)
            sys.stdout.flush()
        if "c" in a.only:
            mem = bench.memory(cases)
            report_memory(mem, bench)
        print(f"load at the end {loadavg()}, {datetime.datetime.now():%Y-%m-%d %H:%M:%S}")
        if bench.failures:
            print("\nfailures:")
            for f in bench.failures:
                print("  " + f.replace("\n", "\n    "))
    finally:
        left = bench.leftovers(grace=2.0)
        if left:
            print(f"killed at the end: {left}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
