#!/usr/bin/python3
"""bench/store ranks: the workers' store at 1K..100K simulated PyTorch ranks (issue 40).

Each simulated rank (bench_store_ranks, ranks.c) connects, SETs its key, takes part in torch's
store barrier (ADD, then WAIT on the last) and GETs the master's address. Targets:
  store  ptrun-store, the generator split over ceil(size / --per-proc) processes started here;
  torch  PyTorch 1.13's own TCPStore server (torch_server.py), the same way, legacy dialect;
  ptrun  --agents ptrun agents as one c10d job on this machine, each running the generator as its
         worker, which connects where ptrun tells workers to (MASTER_ADDR:MASTER_PORT, the head);
  ptrun-relay  the same with --store-relay: each agent relays its worker's ranks to the head.
Per size and target: ms from the earliest generator start until every rank passed the barrier
(and until every rank connected), peak RSS (VmHWM) of the store (the head agent for ptrun) and
of the other agents. This machine caps every process at 20,000 descriptors, so a store that
holds one per rank fails above ~19,900 ranks: such failures are recorded, not raised.

Usage: /usr/bin/python3 bench/store/ranks_run.py [--build build] [--sizes 1000,10000,30000,100000]
           [--targets store,torch,ptrun,ptrun-relay] [--timeout 90] [--out /tmp/ranks_curve.json]"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
TAG = f"RANKS_RUN_TAG={os.getpid()}"  # in every process this run starts, to find them at the end
started = []  # every Popen, killed and waited on at the end


def on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def free_port():
    """A port free now, below the ephemeral range that the generators' connections use."""
    while True:
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                pass


def spawn(argv, log, **kw):
    """Starts argv in its own session, stdout and stderr to files log.out and log.err."""
    env = {**os.environ, **kw.pop("env", {}), "RANKS_RUN_TAG": TAG.split("=")[1]}
    with open(log + ".out", "w") as out, open(log + ".err", "w") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True,
                                **kw)
    proc.log = log
    started.append(proc)
    return proc


def read(path, tail=600):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-tail:] if tail else f.read()
    except OSError:
        return ""


def said(path, limit=1500, grep=None):
    """The file's lines, runs of one repeated line collapsed ('(xN)'), only those containing
    one of `grep` if given; the first `limit` characters."""
    out, last, count = [], None, 0
    for line in read(path, 0).splitlines() + [None]:
        if line == last:
            count += 1
            continue
        if last is not None and (not grep or any(g in last for g in grep)):
            out.append(last + (f" (x{count})" if count > 1 else ""))
        last, count = line, 1
    return "\n".join(out)[:limit]


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def watch(procs, watched, deadline):
    """Waits until every process of procs ended or the deadline; returns {pid: peak VmHWM kB} of
    `watched`, read every 0.1 s while they live (VmHWM only grows: the last read is the peak)."""
    peak = {}
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        for p in watched:
            kb = vm_hwm_kb(p.pid)
            if kb is not None:
                peak[p.pid] = max(kb, peak.get(p.pid, 0))
        time.sleep(0.1)
    return peak


def stop(proc, grace=5.0):
    """SIGTERM to the process's group, SIGKILL after `grace`; waits."""
    for sig, wait_s in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what the leader left in its group
    except (ProcessLookupError, PermissionError):
        pass


def tagged_pids():
    """Pids of processes carrying this run's tag (workers a killed agent may have left)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if TAG.encode() in f.read().split(b"\0"):
                    out.append(int(d))
        except OSError:
            pass
    return out


def cleanup():
    for p in started:
        stop(p, grace=2.0)
    for pid in tagged_pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    started.clear()


def split(size, parts):
    """[(first, count)] of `parts` nearly equal slices of range(size)."""
    base, extra = divmod(size, parts)
    out, first = [], 0
    for i in range(parts):
        n = base + (1 if i < extra else 0)
        out.append((first, n))
        first += n
    return out


def json_line(text):
    for line in text.splitlines():
        i = line.find('{"ranks"')
        if i >= 0:
            try:
                return json.loads(line[i:])
            except ValueError:
                pass
    return None


def figures(results, t_launch_ns=None):
    """Max over processes of start + X, minus the earliest start, for X = barrier, connected."""
    if not results:
        return {}
    t0 = min(r["start_unix_ns"] for r in results)
    out = {k: round(max(r["start_unix_ns"] + r[k] * 1e6 for r in results) / 1e6 - t0 / 1e6)
           for k in ("connected_ms", "barrier_ms", "done_ms")}
    out["generator_rss_kb"] = max(r["rss_kb"] for r in results)
    out["connect_retries"] = sum(r["connect_retries"] for r in results)
    if t_launch_ns:
        out["barrier_from_launch_ms"] = round(
            max(r["start_unix_ns"] + r["barrier_ms"] * 1e6 for r in results) / 1e6
            - t_launch_ns / 1e6)
    return out


def generators(a, size, port, dialect, logdir, timeout):
    parts = split(size, -(-size // a.per_proc))
    return [spawn([a.ranks_bin, "--host", "127.0.0.1", "--port", str(port), "--ranks", str(n),
                   "--world", str(size), "--first", str(first), "--dialect", dialect,
                   "--timeout-s", str(timeout)], f"{logdir}/gen{i}")
            for i, (first, n) in enumerate(parts)]


def run_server(a, target, size, logdir):
    """Targets store and torch: a server here, the generators as plain processes."""
    if target == "store":
        server = spawn([a.store_bin, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"],
                       f"{logdir}/server")
        dialect = "modern"
    else:
        server = spawn([PYTHON, f"{HERE}/torch_server.py"], f"{logdir}/server",
                       stdin=subprocess.PIPE)
        dialect = "legacy"
    res = {"target": target, "size": size}
    deadline = time.monotonic() + 20
    port = None
    while port is None and time.monotonic() < deadline and server.poll() is None:
        out = read(server.log + ".out", 0)
        if out.startswith("port=") and out.endswith("\n"):
            port = int(out.split("=")[1])
        time.sleep(0.05)
    if port is None:
        res["error"] = f"server did not report a port: {read(server.log + '.err')!r}"
        return res
    gens = generators(a, size, port, dialect, logdir, a.timeout - 5)
    peak = watch(gens, [server], time.monotonic() + a.timeout)
    res["processes"] = len(gens)
    res["head_rss_kb"] = peak.get(server.pid)
    collect(res, gens, None)
    if server.poll() is not None:
        res["server_exit"] = server.returncode
    stop(server)
    res["server_said"] = said(server.log + ".err")
    return res


def collect(res, gens, t_launch_ns):
    """Fills res from the generators' JSON lines, or their errors."""
    results, errors = [], []
    for g in gens:
        if g.poll() is None:
            stop(g)
            errors.append(f"{os.path.basename(g.log)}: still running at the deadline (killed)")
            continue
        r = json_line(read(g.log + ".out", 0))
        if r:
            results.append(r)
        else:
            errors.append(f"{os.path.basename(g.log)}: exit {g.returncode}: "
                          f"{read(g.log + '.err', 400).strip()}")
    res["ok_processes"] = len(results)
    res.update(figures(results, t_launch_ns) if len(results) == len(gens) else {})
    if errors:
        res["error"] = errors[:4] + ([f"... {len(errors) - 4} more"] if len(errors) > 4 else [])


def run_ptrun(a, size, logdir, relay=False):
    """Target ptrun (ptrun-relay: with --store-relay): --agents agents on 127.0.0.1, one
    generator each as its worker."""
    port = free_port()
    parts = split(size, a.agents)
    res = {"target": "ptrun-relay" if relay else "ptrun", "size": size, "processes": a.agents}
    t_launch = time.time_ns()
    agents = []
    for node, (first, n) in enumerate(parts):
        conf = "close_timeout=10" + ("" if node == 0 else ",is_host=0")
        agents.append(spawn(
            [a.ptrun_bin, "--nnodes", str(a.agents), "--nproc-per-node", "1",
             "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
             "--rdzv-id", f"ranks{size}", "--node-rank", str(node), "--rdzv-conf", conf,
             "--shutdown-timeout", "3", "--no-python", *(["--store-relay"] if relay else []), "--",
             a.ranks_bin, "--ranks", str(n), "--world", str(size), "--first", str(first),
             "--timeout-s", str(a.timeout - 10)], f"{logdir}/agent{node}"))
    peak = watch(agents, agents, time.monotonic() + a.timeout)
    late = [p for p in agents if p.poll() is None]
    for p in late:
        stop(p)
    res["head_rss_kb"] = peak.get(agents[0].pid)
    others = [peak[p.pid] for p in agents[1:] if p.pid in peak]
    res["agent_rss_kb"] = max(others) if others else None
    res["agent_exits"] = [p.returncode for p in agents]
    if late:
        res["late_agents"] = len(late)
    results, errors = [], []
    for node, p in enumerate(agents):
        r = json_line(read(p.log + ".out", 0))
        if r:
            results.append(r)
        elif len(errors) < 4:
            worker = said(p.log + ".err", 400, ["ranks:"]) or read(p.log + ".err", 300)
            errors.append(f"agent {node}: exit {p.returncode}: {worker.strip()}")
    res["ok_processes"] = len(results)
    res.update(figures(results, t_launch) if len(results) == len(agents) else {})
    if errors:
        res["error"] = errors
    res["server_said"] = said(agents[0].log + ".err", 2500, ["warning", "error", "fail", "lost"])
    return res


def cell(r, key):
    v = r.get(key)
    return "-" if v is None else f"{v:,}"


def table(rows):
    print("| ranks | target | procs | all passed barrier ms | all connected ms | from launch ms "
          "| store/head RSS MB | agent RSS MB | outcome |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        mb = {k: f"{r[k] / 1024:.0f}" if r.get(k) else "-" for k in ("head_rss_kb", "agent_rss_kb")}
        err = r.get("error")
        outcome = "ok" if not err else (err[0] if isinstance(err, list) else err)
        outcome = outcome.replace("|", "/").replace("\n", " ")[:160]
        print(f"| {r['size']:,} | {r['target']} | {r.get('processes', '-')} "
              f"| {cell(r, 'barrier_ms')} | {cell(r, 'connected_ms')} "
              f"| {cell(r, 'barrier_from_launch_ms')} | {mb['head_rss_kb']} | {mb['agent_rss_kb']} "
              f"| {outcome} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--sizes", default="1000,10000,30000,100000")
    ap.add_argument("--targets", default="store,torch,ptrun,ptrun-relay")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per size and target")
    ap.add_argument("--per-proc", type=int, default=7700, help="ranks per generator process")
    ap.add_argument("--agents", type=int, default=13)
    ap.add_argument("--out", default="/tmp/ranks_curve.json")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    a.ranks_bin = f"{b}/bench/store/bench_store_ranks"
    a.store_bin = f"{b}/rendezvous/server_main/ptrun-store"
    a.ptrun_bin = f"{b}/launcher/ptrun"
    for path in (a.ranks_bin, a.store_bin, a.ptrun_bin):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"ranks_run: {path} is missing: build it first")
    signal.signal(signal.SIGTERM, on_sigterm)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ranks_run.") as tmp:
        try:
            for size in (int(s) for s in a.sizes.split(",")):
                for target in a.targets.split(","):
                    logdir = f"{tmp}/{target}{size}"
                    os.mkdir(logdir)
                    t = time.monotonic()
                    if target in ("ptrun", "ptrun-relay"):
                        r = run_ptrun(a, size, logdir, relay=target == "ptrun-relay")
                    elif target in ("store", "torch"):
                        r = run_server(a, target, size, logdir)
                    else:
                        raise SystemExit(f"ranks_run: unknown target {target}")
                    r["wall_s"] = round(time.monotonic() - t, 1)
                    rows.append(r)
                    cleanup()
                    print(f"{target} {size}: {json.dumps(r)}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            print("ranks_run: interrupted; stopping what it started", file=sys.stderr)
        finally:
            cleanup()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load = os.getloadavg()
    with open(a.out, "w") as f:
        json.dump({"date": stamp, "loadavg": load, "rows": rows}, f, indent=1)
    print(f"{stamp}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; figures in ms from the "
          "earliest generator start (from launch: from starting the agents)\n")
    table(rows)


if __name__ == "__main__":
    main()
