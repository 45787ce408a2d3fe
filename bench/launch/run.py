#!/usr/bin/python3
"""bench/launch: launch wall time and restart latency of ptrun, torchrun and a floor, side by side.

Usage: /usr/bin/python3 bench/launch/run.py [--build build] [--runs 40] [--torch-runs 5] [--quick]
                                            [--other-ptrun PATH] [--as-built]
Prints a markdown report (ratios to the floor and to torchrun) for bench/RESULTS.md.
Needs hyperfine and Debian's torchrun (scripts/install-deps.sh installs both). With the Debian 13
root (scripts/torch2-root.sh) it adds torchrun 2.6 in the same run; --other-ptrun adds a second
ptrun binary (e.g. another linking) to the launch table, interleaved with the first. A table of
--numa-binding node against the same launch unbound says what binding costs per worker. ptrun, the
floor and --other-ptrun are timed as installed copies (installed.py), unless --as-built."""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from installed import InstalledCopies  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "integration"))
from torch_flavour import RootTorch  # noqa: E402  (Debian 13's torch 2.6, entered per command)

TORCHRUN = "/usr/bin/torchrun"
TORCH_FIX = ["--redirects", "9:0", "--tee", "9:0"]  # torchrun 1.13 on Python 3.11, see README
# (and --log_dir, added by main)


def hyperfine(commands, runs, warmup):
    """Median wall seconds of each command (list of argv lists), measured by hyperfine -N."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        args = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup), "--runs", str(runs),
                "--export-json", out.name]
        args += [" ".join(c) for c in commands]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        data = json.load(open(out.name))
    return [statistics.median(r["times"]) for r in data["results"]]


def restart_latency(cmd, runs, env):
    """Median ms from the failing worker's exit to the first / last restarted worker running."""
    first, last = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(cmd, env={**env, "BENCH_DIR": d}, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
            fail = int(pathlib.Path(d, "fail").read_text())
            starts = [int(p.read_text()) for p in pathlib.Path(d).glob("start.*")]
            first.append((min(starts) - fail) / 1e6)
            last.append((max(starts) - fail) / 1e6)
    return statistics.median(first), statistics.median(last)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--torch-runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="skip torchrun's default (5 s) monitor interval")
    ap.add_argument("--other-ptrun", help="a second ptrun binary to time beside --build's")
    ap.add_argument("--as-built", action="store_true", help="time the build tree's files, not installed copies")
    a = ap.parse_args()
    # torchrun 1.13 keeps a torchelastic_* directory in /tmp per run unless given one: this run's.
    with tempfile.TemporaryDirectory(prefix="bench-torchrun-") as logs, InstalledCopies(a.as_built) as copies:
        TORCH_FIX.extend(["--log_dir", logs])
        run(a, copies)


def run(a, copies):
    """Everything main() measures, with its arguments `a`, timing the `copies` of the binaries."""
    b = pathlib.Path(a.build)
    ptrun = copies.copy(str(b / "launcher/ptrun"), "bin")
    floor = copies.copy(str(b / "bench/bench_floor"), "bin")
    if a.other_ptrun:
        a.other_ptrun = copies.copy(a.other_ptrun, "other")
    how = "the build tree's files" if a.as_built else "installed copies of ptrun and the floor (installed.py)"
    print(f"Timing {how}.\n")
    worker = str(b / "bench/bench_restart_worker")
    true = shutil.which("true")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    have_torch = os.path.exists(TORCHRUN)

    print("### Launch: wall time of a whole run, N no-op workers (`true`), median\n")
    print("| N | floor ms | ptrun ms | ptrun / floor | torchrun 0.1 s ms | torchrun default ms | torchrun 0.1 / ptrun |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in (1, 4, 8):
        fl, pt = hyperfine([[floor, str(n), true], [ptrun, "--nproc-per-node", str(n), true]], a.runs, 5)
        t_fast = t_def = float("nan")
        if have_torch:
            base = [TORCHRUN, "--standalone", "--nproc_per_node", str(n), *TORCH_FIX]
            t_fast = hyperfine([base + ["--monitor_interval", "0.1", "--no_python", true]], a.torch_runs, 1)[0]
            if not a.quick:
                t_def = hyperfine([base + ["--no_python", true]], max(3, a.torch_runs // 2), 0)[0]
        print(f"| {n} | {fl*1e3:.2f} | {pt*1e3:.2f} | {pt/fl:.2f}x | {t_fast*1e3:.0f} | {t_def*1e3:.0f} | "
              f"{t_fast/pt:.0f}x |")

    print("\n### Restart: failure of local rank 0 to restarted workers running (first / last), median ms\n")
    print("| N | floor | ptrun | ptrun / floor (last) | torchrun 0.1 s | torchrun / ptrun (last) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (2, 4, 8):
        f1, f2 = restart_latency([floor, "--restart", str(n), worker], a.runs // 2, env)
        p1, p2 = restart_latency([ptrun, "--nproc-per-node", str(n), "--max-restarts", "1", worker], a.runs // 2, env)
        t1 = t2 = float("nan")
        if have_torch:
            t1, t2 = restart_latency([TORCHRUN, "--standalone", "--nproc_per_node", str(n), "--max_restarts", "1",
                                      "--monitor_interval", "0.1", *TORCH_FIX, "--no_python", worker],
                                     a.torch_runs, env)
        print(f"| {n} | {f1:.2f} / {f2:.2f} | {p1:.2f} / {p2:.2f} | {p2/f2:.2f}x | {t1:.0f} / {t2:.0f} | {t2/p2:.0f}x |")
    binding_cost(ptrun, true, a.runs)
    if a.other_ptrun:
        other_ptrun(ptrun, a.other_ptrun, floor, true, a.runs)
    torch2 = RootTorch()
    if torch2.skip_reason():
        print(f"\n(torchrun 2.6 not measured: {torch2.skip_reason()})")
    else:
        torchrun2(torch2, ptrun, worker, true, a, env)


def other_ptrun(ptrun, other, floor, true, runs):
    """Launch wall time of two ptrun binaries (e.g. two linkings), interleaved in one hyperfine."""
    print(f"\n### Launch: `{ptrun}` (A) vs `{other}` (B), median ms\n")
    print("| N | floor | A | B | B / A |")
    print("|---:|---:|---:|---:|---:|")
    for n in (1, 4, 8):
        fl, pa, pb = hyperfine([[floor, str(n), true], [ptrun, "--nproc-per-node", str(n), true],
                                [other, "--nproc-per-node", str(n), true]], runs, 5)
        print(f"| {n} | {fl*1e3:.2f} | {pa*1e3:.2f} | {pb*1e3:.2f} | {pb/pa:.3f}x |")


def binding_cost(ptrun, true, runs):
    """What --numa-binding node costs a launch (reading the topology once, planning, two system
    calls in each worker before exec), interleaved with the same launch unbound."""
    print("\n### --numa-binding node: launch wall time with and without binding, median ms\n")
    print("| N | unbound | bound | added per worker (us) |")
    print("|---:|---:|---:|---:|")
    for n in (1, 4, 8):
        base = [ptrun, "--nproc-per-node", str(n)]
        pa, pb = hyperfine([[*base, true], [*base, "--numa-binding", "node", true]], runs, 5)
        print(f"| {n} | {pa*1e3:.2f} | {pb*1e3:.2f} | {(pb-pa)*1e6/n:.0f} |")


def torchrun2(torch2, ptrun, worker, true, a, env):
    """torchrun 2.6 (Debian 13, in its root through scripts/torch2-run.sh) in the same run. Each
    command enters the root; that entry alone (`true` through torch2-run.sh) is measured too and
    subtracted. ptrun's figure is the one measured above, outside the root."""
    env2 = {**env, **torch2.env()}
    os.environ.setdefault("PTRUN_BUILD_DIR", str(pathlib.Path(a.build).resolve()))
    enter = hyperfine([torch2.command([true])], max(5, a.torch_runs), 1)[0]
    print(f"\n### torchrun 2.6 (Debian 13 root), median ms; entering the root ({enter*1e3:.0f} ms) subtracted\n")
    print("| N | ptrun ms | torchrun 2.6 ms (its default monitor interval, 0.1 s) | torchrun 2.6 / ptrun |")
    print("|---:|---:|---:|---:|")
    os.environ.update(torch2.env())  # hyperfine passes its environment on
    for n in (1, 4, 8):
        pt = hyperfine([[ptrun, "--nproc-per-node", str(n), true]], a.runs, 5)[0]
        cmd = [*torch2.torchrun, "--standalone", "--nproc_per_node", str(n), "--no_python", true]
        t2 = hyperfine([torch2.command(cmd)], a.torch_runs, 1)[0] - enter
        print(f"| {n} | {pt*1e3:.2f} | {t2*1e3:.0f} | {t2/pt:.0f}x |")
    print("\nRestart with torchrun 2.6 (`--monitor_interval 0.1`), failure to restarted workers running "
          "(first / last), median ms (inside the root: no entry cost)\n")
    print("| N | ptrun | torchrun 2.6 | torchrun 2.6 / ptrun (last) |")
    print("|---:|---:|---:|---:|")
    for n in (2, 4, 8):
        p1, p2 = restart_latency([ptrun, "--nproc-per-node", str(n), "--max-restarts", "1", worker],
                                 a.runs // 2, env)
        t1, t2 = restart_latency(torch2.command([*torch2.torchrun, "--standalone", "--nproc_per_node", str(n),
                                                 "--max_restarts", "1", "--monitor_interval", "0.1",
                                                 "--no_python", worker], binds=[tempfile.gettempdir()]),
                                 a.torch_runs, env2)
        print(f"| {n} | {p1:.2f} / {p2:.2f} | {t1:.0f} / {t2:.0f} | {t2/p2:.0f}x |")


if __name__ == "__main__":
    sys.exit(main())
