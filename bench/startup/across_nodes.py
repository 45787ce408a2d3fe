#!/usr/bin/python3
"""Start-up across nodes (issue 40): time to the first step of a torch DDP job (gloo, Debian's
torch 1.13), 2 namespaced hosts x 8 ranks against one host's 8 ranks, with `--preload torch`.

    sudo /usr/bin/python3 bench/startup/across_nodes.py [--runs 5] [--out FILE] [--cases LIST]

Run as root. Brings up hosts node1, node2 (tests/hosts/netns-hosts.sh, a prefix and subnet of
its own) and always takes them down at the end (failure, Ctrl-C and SIGTERM included).
Cases, interleaved (the order rotates each round; one unmeasured warm-up round of A first):
  A    ptrun --standalone --nproc-per-node 8 --preload torch WORKER, run INSIDE node1's namespace
       (netns-hosts.sh exec 1 ...), so that it pays entering a namespace as B's hosts do;
  B    ptrun --hosts node1,node2 --nproc-per-node 8 --preload torch --remote-shell NS-SHELL ...
       WORKER, the launching ptrun in the root namespace, as tests/hosts/test_hosts_ddp.py does;
  A2   control: A on node1 and A on node2 at once, two independent jobs (no rendezvous across):
       what the emulated hosts sharing this machine's cores costs by itself;
  A16  control (not in the defaults): one host, 2x8 ranks standalone in node1's namespace: B's
       16 ranks and their gloo mesh on this machine's cores, without a second host;
  A', B'  A and B without --preload (A16', A2' likewise).
--pin gives each emulated host its own CPUs (taskset: node1 the first half of this machine's,
node2 the rest; the remote shell pins node2's ptrun), so that B's second host adds CPUs as a real
host would instead of sharing node1's; A (on node1) then has node1's half only.
WORKER (worker.py) writes time.time() right after its first optimizer.step() per rank; time to
first step = max over ranks of it minus time.time() taken just before the command is started.
Per run it also reads ptrun's ready line (phases) and each host's ptrun.log (when that host's
ptrun logged its first line, when its zygote was ready). Prints markdown; JSON to --out."""
import argparse
import datetime
import glob
import json
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
NETNS = os.path.join(REPO, "tests", "hosts", "netns-hosts.sh")
WORKER = os.path.join(HERE, "worker.py")
PYTHON = "/usr/bin/python3"
TARGET = 1.3
SHELL = """#!/bin/sh
case "$1" in node[0-9]*) i=${1#node} ;; *) echo "ns-shell: $1: unknown host" >&2; exit 255 ;; esac
exec %s"%s" exec "$i" sh -c "$2"
"""
PHASE = re.compile(r"(rendezvous|preload|spawn|python\+imports|process group|first step|"
                   r"first progress) \+?([\d.]+) (ms|s)\b")


class Failed(Exception):
    pass


def sh(*cmd, env=None, timeout=120):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def pick_subnet():
    for k in range(150):
        x = 100 + (os.getpid() + k) % 150
        if not sh("ip", "route", "show", "table", "all", "root", f"10.77.{x}.0/24").stdout.strip():
            return x
    raise SystemExit("no free 10.77.X.0/24")


class Bench:
    def __init__(self, a, tmp):
        self.a, self.tmp, self.procs, self.n, self.port = a, tmp, [], 0, 29600
        self.prefix = f"ptsu{os.getpid()}-"
        x = pick_subnet()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PET_", "PTRUN_", "TORCHELASTIC_", "PTNS_"))
               and k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")}
        env.update(PTNS_PREFIX=self.prefix, PTNS_SUBNET=f"10.77.{x}",
                   PTNS_SUBNET6=f"fd77:0:0:{x:x}::", PTNS_KILL_GRACE="2", TMPDIR=tmp,
                   PYTHON_EXEC=PYTHON, GLOO_SOCKET_IFNAME="eth0")
        self.env = env
        self.shell = os.path.join(tmp, "ns-shell")
        with open(self.shell, "w") as f:
            f.write(SHELL % ('taskset -c "$(eval echo \\$CPUS_$i)" ' if a.pin else "", NETNS))
        os.chmod(self.shell, 0o755)
        self.notes = []
        self.cpus = {}
        if a.pin:  # host I gets its own share of this machine's CPUs, as a real host has its own
            cpus = sorted(os.sched_getaffinity(0))
            half = max(1, len(cpus) // 2)
            for i, part in ((1, cpus[:half]), (2, cpus[half:] or cpus[:half])):
                self.cpus[i] = ",".join(map(str, part))
                env[f"CPUS_{i}"] = self.cpus[i]

    def up(self):
        p = sh(NETNS, "up", "2", env=self.env)
        if p.returncode != 0:
            raise SystemExit(f"netns-hosts.sh up 2 -> {p.returncode}: {p.stderr.strip()}")

    def down(self):
        p = sh(NETNS, "down", env=self.env)
        left = [n for n in sh("ip", "netns", "list").stdout.split() if n.startswith(self.prefix)]
        if p.returncode != 0 or left:
            print(f"netns-hosts.sh down -> {p.returncode} {p.stderr.strip()}; left: {left}",
                  file=sys.stderr)

    def host_pids(self):
        return [p for i in (1, 2) for p in
                sh("ip", "netns", "pids", f"{self.prefix}h{i}").stdout.split()]

    def command(self, case, d, preload, host=1):
        pre = ["--preload", "torch"] if preload else []
        logs = ["--log-dir", os.path.join(d, "logs")]
        if case == "B":
            self.port += 1
            return [PTRUN, "--hosts", "node1,node2", "--nproc-per-node", str(self.a.ranks),
                    "--remote-shell", self.shell, "--rdzv-endpoint", f"node1:{self.port}",
                    "--export", "PYTHON_EXEC,GLOO_SOCKET_IFNAME", *pre, *logs, WORKER, d]
        n = self.a.ranks * (2 if case == "A16" else 1)
        pin = ["taskset", "-c", self.cpus[host]] if self.cpus else []
        return [*pin, NETNS, "exec", str(host), PTRUN, "--standalone", "--nproc-per-node", str(n),
                *pre, *logs, WORKER, d]

    def run(self, name):
        """One command (A2: two at once); returns its record. Raises Failed."""
        self.n += 1
        d = os.path.join(self.tmp, f"run{self.n:03d}")
        os.mkdir(d)
        preload, case = not name.endswith("'"), name.rstrip("'")
        jobs = [(d, 1)] if case != "A2" else [(os.path.join(d, f"h{i}"), i) for i in (1, 2)]
        cmds = []
        for jd, host in jobs:
            os.makedirs(jd, exist_ok=True)
            cmds.append(self.command(case, jd, preload, host))
        ranks = self.a.ranks * (2 if case in ("B", "A2", "A16") else 1)
        t0 = time.time()
        for (jd, _), cmd in zip(jobs, cmds):
            out = open(os.path.join(jd, "output"), "wb")
            self.procs.append(subprocess.Popen(cmd, env=self.env, cwd=self.tmp, stdout=out,
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True))
            out.close()
        try:
            rcs = [p.wait(timeout=max(1, t0 + self.a.timeout - time.time())) for p in self.procs]
        except subprocess.TimeoutExpired:
            raise Failed(f"{name}: still running after {self.a.timeout} s")
        finally:
            self.stop()
        end = time.time()
        left = self.reap()
        if left:
            self.notes.append(f"{name} run {self.n}: processes left on the hosts, killed: {left}")
        recs = [open(f).read().split() for jd, _ in jobs
                for f in glob.glob(os.path.join(jd, "step_*"))]
        steps = [float(x[0]) for x in recs]
        text = "".join(open(os.path.join(jd, "output"), errors="replace").read() for jd, _ in jobs)
        if any(rcs) or len(steps) != ranks:
            raise Failed(f"{name}: exit {rcs}, {len(steps)}/{ranks} step records\n{text[-2000:]}")
        rec = {"case": name, "first_step_s": max(steps) - t0, "first_rank_step_s": min(steps) - t0,
               "exit_s": end - t0, "load": loadavg(), "cmd": [shlex.join(c) for c in cmds],
               "ready": [], "hosts": {}, "worker_cpus": sorted({x[1] for x in recs})}
        for line in text.splitlines():
            m = re.search(r"ready ([\d.]+) s after start: (.*)", line)
            if m:
                rec["ready"].append({"line": line.split("] ", 1)[-1], "total_s": float(m[1]),
                                     "phases": {k: float(v) / (1000 if u == "ms" else 1)
                                                for k, v, u in PHASE.findall(m[2])}})
        for log in glob.glob(os.path.join(d, "**", "ptrun.log"), recursive=True):
            if "/latest/" in log:
                continue
            host = re.search(r"_(node\d+)_\d{8}T", log)
            rec["hosts"][host[1] if host else log] = host_log(log, t0)
        return rec

    def stop(self):
        """Every command still running: SIGTERM to its group, then SIGKILL."""
        for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            for p in self.procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, sig)
                    except ProcessLookupError:
                        pass
            end = time.monotonic() + grace
            for p in self.procs:
                try:
                    p.wait(timeout=max(0.1, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        self.procs = [p for p in self.procs if p.poll() is None]

    def reap(self, grace=5.0):
        """Waits (bounded) for the hosts to be empty; kills what is left; returns it."""
        end = time.monotonic() + grace
        while self.host_pids() and time.monotonic() < end:
            time.sleep(0.05)
        left = self.host_pids()
        for pid in left:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left


def host_log(path, t0):
    """From one host's ptrun.log: its first line, its zygote ready, relative to t0 (s)."""
    out = {}
    for line in open(path, errors="replace"):
        ts = datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
            tzinfo=datetime.timezone.utc).timestamp() - t0
        out.setdefault("ptrun_first_line_s", ts)
        m = re.search(r"preloaded torch in ([\d.]+) s", line)
        if m:
            out.update(zygote_ready_s=ts, zygote_import_s=float(m[1]))
        if "round 0: group rank" in line:
            out["rendezvous_done_s"] = ts
    return out


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summary(recs, cases):
    """Markdown tables; returns (text, figures)."""
    by = {c: [r for r in recs if r["case"] == c] for c in cases}
    ts = {c: [r["first_step_s"] for r in by[c]] for c in cases}
    lines = ["| case | runs | first step, median s | min | max | exit, median s |",
             "|---|---:|---:|---:|---:|---:|"]
    for c in cases:
        xs = ts[c]
        lines.append(f"| {c} | {len(xs)} | {med(xs):.2f} | {min(xs, default=0):.2f} | "
                     f"{max(xs, default=0):.2f} | {med([r['exit_s'] for r in by[c]]):.2f} |")
    figs = {"medians_s": {c: med(ts[c]) for c in cases}}
    lines += ["", "| ratio | of medians | per round min | per round max |", "|---|---:|---:|---:|"]
    for num, den in (("B", "A"), ("B'", "A'"), ("B", "A2"), ("B", "A16"), ("A2", "A"), ("A16", "A"),
                     ("A", "A'")):
        if num not in cases or den not in cases or not ts[num] or not ts[den]:
            continue
        per = [x / y for x, y in zip(ts[num], ts[den])]
        r = med(ts[num]) / med(ts[den])
        figs[f"{num}/{den}"] = {"of_medians": r, "min": min(per), "max": max(per)}
        lines.append(f"| {num}/{den} | {r:.2f} | {min(per):.2f} | {max(per):.2f} |")
    lines += ["", "Breakdown (medians, s; host columns from each host's ptrun.log, relative to the "
              "command's start; phases from ptrun's ready line):", "",
              "| case | host | ptrun up | rendezvous done | zygote import | zygote ready |",
              "|---|---|---:|---:|---:|---:|"]
    for c in cases:
        hosts = sorted({h for r in by[c] for h in r["hosts"]})
        for h in hosts:
            row = [c, h]
            for k in ("ptrun_first_line_s", "rendezvous_done_s", "zygote_import_s",
                      "zygote_ready_s"):
                xs = [r["hosts"][h][k] for r in by[c] if k in r["hosts"].get(h, {})]
                row.append(f"{med(xs):.2f}" if xs else "-")
            lines.append("| " + " | ".join(row) + " |")
    names = ["rendezvous", "preload", "spawn", "python+imports", "process group", "first step"]
    lines += ["", "| case | ready (ptrun's) | " + " | ".join(names) + " |",
              "|---|---:|" + "---:|" * len(names)]
    for c in cases:
        rl = [x for r in by[c] for x in r["ready"][:1]]
        row = [c, f"{med([x['total_s'] for x in rl]):.2f}"]
        for n in names:
            xs = [x["phases"][n] for x in rl if n in x["phases"]]
            row.append(f"{med(xs):.3f}" if xs else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), figs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--cases", default="A,B,A2,A',B'")
    ap.add_argument("--timeout", type=float, default=180, help="per command, s")
    ap.add_argument("--out", default="/tmp/startup_across.json")
    ap.add_argument("--pin", action="store_true",
                    help="give each host half of this machine's CPUs (taskset): node1 the first "
                    "half, node2 the second; A runs on node1's")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: network namespaces need it")
    cases = a.cases.split(",")
    tmp = tempfile.mkdtemp(prefix="ptrun-startup-")
    os.chmod(tmp, 0o755)
    bench = Bench(a, tmp)

    def term(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, term)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    up0 = sh("uptime").stdout.strip()
    recs, fails = [], []
    try:
        bench.up()
        for r in range(-1, a.runs):
            order = ["A"] if r < 0 else cases[r % len(cases):] + cases[:r % len(cases)]
            for c in order:
                try:
                    rec = bench.run(c)
                except Failed as e:
                    fails.append(str(e))
                    print(f"  ! {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
                    continue
                rec["round"] = r
                if r >= 0:
                    recs.append(rec)
            print(f"  round {r + 1}/{a.runs} done {datetime.datetime.now():%H:%M:%S} "
                  f"load {loadavg()}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        fails.append("interrupted")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup
        bench.stop()
        bench.reap(grace=2.0)
        bench.down()
        shutil.rmtree(tmp, True)
    text, figs = summary(recs, cases)
    ex = {c: next((r["cmd"] for r in recs if r["case"] == c), None) for c in cases}
    print(f"{started}, {up0}\n\n{text}\n\nCommands (first round):")
    for c in cases:
        print(f"  {c}: " + " & ".join(ex[c] or ["(none)"]))
    for f in fails + bench.notes:
        print(f"  ! {f}")
    with open(a.out, "w") as f:
        json.dump({"date": started, "uptime_start": up0, "uptime_end": sh("uptime").stdout.strip(),
                   "runs": a.runs, "ranks_per_host": a.ranks, "target": TARGET,
                   "a_runs_in": "node1's namespace (netns-hosts.sh exec 1)",
                   "pinned_cpus": bench.cpus,
                   "commands": ex, "figures": figs, "records": recs,
                   "failures": fails, "notes": bench.notes}, f, indent=1)
    print(f"JSON: {a.out}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
