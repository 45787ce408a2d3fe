#!/usr/bin/env python3
"""Allreduce bus bandwidth, side by side in one run: ptrun::ddp (under ptrun), Open MPI's
MPI_Allreduce (mpirun) and torch.distributed gloo (torchrun), plus a memcpy figure.

    bench/allreduce/run.py --build build [--ranks 2,4] [--max-mib 256] [--reps 3] [--save F.json]
    bench/allreduce/run.py --render F.json      # the table from a saved (possibly partial) run

Each repetition runs every implementation once per rank count, interleaved, so background load
hits all of them alike; the table keeps each one's best time per size over the repetitions.
busbw = algbw * 2(n-1)/n (nccl-tests). Prints a markdown table per placement seen.

The host moves this VM's vCPUs between placements within minutes (sharing a cache complex or
not), and every implementation's figures change with it. bench_placement_probe (a cache-line
round trip between the first two CPUs) runs before and after each implementation's run; a run
counts under the placement both probes agree on (--shared-below-ns splits the round trips) and is
dropped, with a note, if the placement changed under it. Figures of different placements are
never compared or mixed: each gets its own tables."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
from torch_flavour import RootTorch  # noqa: E402  (Debian 13's torch 2.6, entered per command)
TORCH2 = RootTorch()


def run(cmd, env=None):
    full = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **(env or {}))
    res = subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=900)
    if res.returncode != 0:
        print(f"# {' '.join(cmd)} failed ({res.returncode}):\n{res.stderr[-2000:]}", file=sys.stderr)
    rows = {}
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0] in ("ptrun", "mpi", "gloo"):
            rows[int(parts[1])] = [float(x) for x in parts[2:]]
    return rows


def commands(args, n):
    b = os.path.abspath(args.build)
    cmds = {"ptrun": [os.path.join(b, "launcher/ptrun"), "--standalone", "--nproc-per-node", str(n), "--no-python",
                      os.path.join(b, "bench/allreduce/bench_ptrun_allreduce"), "cpu", str(args.max_mib)]}
    mpi = os.path.join(b, "bench/allreduce/bench_mpi_allreduce")
    if os.path.exists(mpi) and shutil.which("mpirun"):
        cmds["mpi"] = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), mpi, str(args.max_mib)]
    if os.path.exists("/usr/bin/torchrun"):
        # --redirects/--tee 9:0 dodge torchrun 1.13's to_map(None) crash (as tests/integration do).
        cmds["gloo"] = ["/usr/bin/torchrun", "--standalone", "--nproc_per_node", str(n), "--redirects", "9:0",
                        "--tee", "9:0", "--log_dir", args.torch_logs.name,
                        os.path.join(HERE, "torch_gloo_allreduce.py"), str(args.max_mib)]
    if not TORCH2.skip_reason():  # torch 2.6's gloo under its own torchrun, in the Debian 13 root
        cmds["gloo2"] = TORCH2.command([*TORCH2.torchrun, "--standalone", "--nproc_per_node", str(n),
                                        os.path.join(HERE, "torch_gloo_allreduce.py"), str(args.max_mib)])
    return cmds


def probe(args):
    """Round trip in ns between the first two CPUs (the fastest batch), or None."""
    exe = os.path.join(os.path.abspath(args.build), "bench/allreduce/bench_placement_probe")
    res = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    parts = res.stdout.split()
    return float(parts[3]) if len(parts) >= 6 and parts[0] == "placement" else None


def placement_of(args, rt_ns):
    if rt_ns is None:
        return "unknown"
    return "shared" if rt_ns < args.shared_below_ns else "distant"


PLACEMENT_TEXT = {"shared": "the two CPUs share a cache", "distant": "the CPUs sit on different cache complexes",
                  "unknown": "the probe could not run"}


def human(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--max-mib", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--save", help="write the best rows so far to this JSON file after every run")
    ap.add_argument("--render", help="print the table of a saved JSON file and exit")
    ap.add_argument("--shared-below-ns", type=float, default=350.0,
                    help="a probe round trip below this means the CPUs share a cache")
    args = ap.parse_args()
    # torchrun 1.13 keeps a torchelastic_* directory in /tmp per run unless given one: this run's
    # (removed at exit).
    args.torch_logs = tempfile.TemporaryDirectory(prefix="bench-torchrun-")
    ranks = [int(x) for x in args.ranks.split(",")]
    bests = {}  # placement -> (impl, n) -> size -> row with the lowest time
    probes = {}  # placement -> every round trip (ns) probed in it
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        probes = saved.pop("probes", {})
        for k, v in saved.items():  # "impl:n:placement" ("impl:n" before placements were kept)
            impl, n, placement = (k.split(":") + ["unknown"])[:3]
            bests.setdefault(placement, {})[(impl, int(n))] = {int(s): r for s, r in v.items()}
        ranks = sorted({n for best in bests.values() for _, n in best})
    for rep in range(0 if args.render else args.reps):
        for n in ranks:
            for impl, cmd in commands(args, n).items():
                before = probe(args)
                rows = run(cmd, TORCH2.env() if impl == "gloo2" else None)
                after = probe(args)
                placement = placement_of(args, before)
                if placement != placement_of(args, after):
                    print(f"# rep {rep} {impl} n={n}: placement changed during the run ({before} -> {after} ns),"
                          " dropped", file=sys.stderr, flush=True)
                    continue
                probes.setdefault(placement, []).extend(x for x in (before, after) if x is not None)
                best = bests.setdefault(placement, {})
                for size, row in rows.items():
                    cur = best.setdefault((impl, n), {})
                    if size not in cur or row[0] < cur[size][0]:
                        cur[size] = row
                print(f"# rep {rep} {impl} n={n} done ({placement}, {before}/{after} ns), load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr, flush=True)
                if args.save:
                    with open(args.save, "w") as f:
                        json.dump({**{f"{k[0]}:{k[1]}:{pl}": v for pl, b in bests.items() for k, v in b.items()},
                                   "probes": probes}, f)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs\n")
    for placement in sorted(bests):
        rts = probes.get(placement, [])
        seen = f"round trip {min(rts):.0f}-{max(rts):.0f} ns" if rts else "no probe figures"
        print(f"### placement: {placement} ({PLACEMENT_TEXT.get(placement, placement)}; {seen})\n")
        render(bests[placement], sorted({n for _, n in bests[placement]}), placement)


def render(best, ranks, placement):
    """The tables of one placement: figures measured while the probe said `placement`."""
    for n in ranks:
        p, m, g = (best.get((k, n), {}) for k in ("ptrun", "mpi", "gloo"))
        print(f"#### {n} ranks, placement {placement} (busbw GB/s; time in us)\n")
        print("| size | ptrun busbw | ptrun time | MPI busbw | gloo busbw | memcpy GB/s | ptrun/MPI | ptrun/gloo |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in sorted(p):
            pb, pt, mc = p[size][2], p[size][0], p[size][3]
            mb = m.get(size, [0, 0, 0])[2]
            gb = g.get(size, [0, 0, 0])[2]
            rm = f"{pb / mb:.2f}x" if mb else "-"
            rg = f"{pb / gb:.1f}x" if gb else "-"
            print(f"| {human(size)} | {pb:.2f} | {pt:.1f} | {mb:.2f} | {gb:.2f} | {mc:.1f} | {rm} | {rg} |")
        print()
        torch2_table(n, p, best.get(("gloo2", n), {}))
    if not best_has_gloo2(best):
        print(f"(torch 2.6 gloo not measured: {TORCH2.skip_reason() or 'no rows'})\n")


def best_has_gloo2(best):
    return any(impl == "gloo2" for impl, _ in best)


def torch2_table(n, p, g2):
    """torch 2.6's gloo (Debian 13 root, its own torchrun), interleaved with the others."""
    if not g2:
        return
    print(f"torch 2.6 gloo, {n} ranks, same run (busbw GB/s)\n")
    print("| size | ptrun busbw | gloo 2.6 busbw | ptrun/gloo 2.6 |")
    print("|---:|---:|---:|---:|")
    for size in sorted(p):
        pb, gb = p[size][2], g2.get(size, [0, 0, 0])[2]
        print(f"| {human(size)} | {pb:.2f} | {gb:.2f} | {f'{pb / gb:.1f}x' if gb else '-'} |")
    print()


if __name__ == "__main__":
    main()
