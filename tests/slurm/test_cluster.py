#!/usr/bin/python3
"""Self-test of tests/slurm/cluster.sh: a real 2-node SLURM cluster (Debian slurm-wlm) in network namespaces.

Stdlib only; run as root:  /usr/bin/python3 tests/slurm/test_cluster.py -v
Skips (exit 77 when everything was skipped) without root, without network namespaces, or when the SLURM
packages are missing and cannot be installed. Every run uses its own namespace prefix (pts<pid>-), its own
subnet (10.78.X.0/24, X unused here) and its own state dir, so it never meets a cluster someone else
brought up with cluster.sh's defaults; it removes everything it created, also when a test fails, and checks
that nothing is left behind.
"""
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = Path(os.environ.get("PTSLURM_SCRIPT", HERE / "cluster.sh"))
CMD_TIMEOUT = 60        # seconds; cap on any single cluster.sh / client command
UP_TIMEOUT = 400        # "up" may have to apt-get install the packages first
NODES = 2
GPUS = 2                # fake GPUs per node


def _pick_env():
    """A prefix, subnet and state dir of our own: pts<pid>-, 10.78.X.0/24 with X not routed here."""
    pid = os.getpid()
    x = 100 + pid % 150
    for k in range(150):
        x = 100 + (pid + k) % 150
        routes = subprocess.run(["ip", "route", "show", "table", "all", "root", f"10.78.{x}.0/24"],
                                capture_output=True, text=True).stdout.strip()
        if not routes:
            break
    return {"PTSLURM_PREFIX": f"pts{pid}-", "PTSLURM_SUBNET": f"10.78.{x}",
            "PTSLURM_DIR": f"/tmp/ptrun-slurm-test.{pid}", "PTSLURM_GPUS": str(GPUS),
            "PTSLURM_CPUS": "4", "PTSLURM_TIMEOUT": "30"}


ENV = dict(os.environ)
if shutil.which("ip"):
    ENV.update(_pick_env())
PREFIX = ENV.get("PTSLURM_PREFIX", "pts-")
STATE_DIR = Path(ENV.get("PTSLURM_DIR", "/nonexistent"))


def cluster(*args, check=True, timeout=CMD_TIMEOUT, cwd=None, env=None):
    p = subprocess.run([str(SCRIPT), *map(str, args)], env=env or ENV, cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"cluster.sh {' '.join(map(str, args))} -> {p.returncode}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def reap_stale():
    """Tear down clusters of earlier runs that were killed before their cleanup (e.g. a ctest timeout)."""
    for f in Path("/run").glob("pts*-slurm.dir"):
        m = re.fullmatch(r"pts(\d+)-slurm\.dir", f.name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue                        # its test is still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        env = {k: v for k, v in ENV.items() if k != "PTSLURM_DIR"}
        env["PTSLURM_PREFIX"] = f"pts{m.group(1)}-"
        subprocess.run([str(SCRIPT), "down"], env=env, capture_output=True, timeout=CMD_TIMEOUT)


def pids_in(ns_names):
    out = []
    for ns in ns_names:
        r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        out += r.stdout.split()
    return out


def leftovers(daemon_pids=()):
    """Everything of ours that may still exist."""
    left = []
    ns_dir = Path("/run/netns")
    if ns_dir.is_dir():
        left += [f"netns {p.name}" for p in ns_dir.iterdir() if p.name.startswith(PREFIX)]
    etc = Path("/etc/netns")
    if etc.is_dir():
        left += [f"/etc/netns/{p.name}" for p in etc.iterdir() if p.name.startswith(PREFIX)]
    r = subprocess.run(["ip", "-4", "route", "show", "table", "all", "root", ENV["PTSLURM_SUBNET"] + ".0/24"],
                       capture_output=True, text=True).stdout.strip()
    if r:
        left.append(f"route: {r}")
    if Path(f"/run/{PREFIX}slurm.dir").exists():
        left.append(f"/run/{PREFIX}slurm.dir")
    if STATE_DIR.exists():
        left.append(str(STATE_DIR))
    for pid in daemon_pids:
        if Path(f"/proc/{pid}").exists():
            left.append(f"process {pid} ({Path(f'/proc/{pid}/comm').read_text().strip()})")
    return left


def job_processes(jobid, comm):
    """{pid: netns name} of the processes named comm whose environment has SLURM_JOB_ID=jobid."""
    found = {}
    want = f"SLURM_JOB_ID={jobid}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "comm").read_text().strip() != comm or want not in (d / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue                        # gone meanwhile
        ns = subprocess.run(["ip", "netns", "identify", d.name], capture_output=True, text=True).stdout.strip()
        found[int(d.name)] = ns
    return found


def wait_until(cond, timeout, interval=0.1):
    """Poll cond() until it returns a true value (returned) or timeout seconds pass (returns the last value)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(interval)


def dump_logs_on_failure(fn):
    @functools.wraps(fn)
    def wrapper(self, *a, **kw):
        try:
            return fn(self, *a, **kw)
        except Exception:
            for f in sorted((STATE_DIR / "log").glob("*")):
                lines = [ln for ln in f.read_text(errors="replace").splitlines()
                         if "Unauthorized credential" not in ln and "Replayed credential" not in ln]
                print(f"---- {f} (last lines)\n" + "\n".join(lines[-15:]), file=sys.stderr)
            raise
    return wrapper


class TwoNodeCluster(unittest.TestCase):
    """head (slurmctld, login node) + node1, node2 (slurmd), each in its own network namespace."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which("ip"):
            raise unittest.SkipTest("needs iproute2 (the ip command)")
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: network namespaces and SLURM daemons run as root")
        reap_stale()
        cls.daemon_pids = []
        cls.work = Path(tempfile.mkdtemp(prefix="ptrun-slurm-work."))
        cls.work.chmod(0o755)
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        cls.addClassCleanup(cls._down)      # runs also when setUpClass fails half-way
        t0 = time.monotonic()
        p = cluster("up", NODES, check=False, timeout=UP_TIMEOUT)
        cls.up_seconds = time.monotonic() - t0
        if p.returncode == 77:
            raise unittest.SkipTest((p.stderr.strip().splitlines() or ["cluster.sh up: exit 77"])[-1])
        if p.returncode != 0:
            raise AssertionError(f"cluster.sh up {NODES} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
        print(f"\n[up {NODES} nodes: {cls.up_seconds:.1f} s]", file=sys.stderr)
        for f in (STATE_DIR / "pids").iterdir():
            cls.daemon_pids.append(int(f.read_text().strip()))

    @classmethod
    def _down(cls):
        t0 = time.monotonic()
        cluster("down")
        took = time.monotonic() - t0
        print(f"[down: {took:.1f} s]", file=sys.stderr)
        left = leftovers(cls.daemon_pids)
        if left:
            raise AssertionError(f"cluster.sh down left behind: {left}")
        cluster("down")                     # idempotent: nothing there, still fine
        if took > 30:
            raise AssertionError(f"cluster.sh down took {took:.1f} s")

    def run_slurm(self, *args, timeout=CMD_TIMEOUT):
        return cluster("run", *args, cwd=self.work, timeout=timeout)

    @dump_logs_on_failure
    def test_network_is_private(self):
        # the root namespace must not route the cluster's subnet anywhere (guard route: unreachable)
        ip = ENV["PTSLURM_SUBNET"] + ".11"
        r = subprocess.run(["ip", "route", "get", ip], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, f"root namespace routes {ip}: {r.stdout}")
        # ...while the login node reaches node1 by name
        out = self.run_slurm("getent", "hosts", "node1").stdout.split()
        self.assertEqual(out[:2], [ip, "node1"])
        self.assertEqual(self.run_slurm("hostname").stdout.strip(), "head")

    @dump_logs_on_failure
    def test_srun_hostname(self):
        t0 = time.monotonic()
        out = self.run_slurm("srun", "-N2", "--ntasks-per-node=1", "hostname").stdout
        print(f"[srun -N2 hostname: {time.monotonic() - t0:.2f} s]", file=sys.stderr)
        self.assertEqual(sorted(out.split()), ["node1", "node2"])

    @dump_logs_on_failure
    def test_sbatch_wait_env_per_task(self):
        (self.work / "envjob.sh").write_text(
            "#!/bin/bash\n"
            "#SBATCH -o envjob-%j.out\n"
            "srun bash -c 'env > \"task-$SLURM_PROCID.env\"; echo \"GETHOSTNAME=$(hostname)\" >> \"task-$SLURM_PROCID.env\"'\n")
        t0 = time.monotonic()
        p = self.run_slurm("sbatch", "--wait", "-N2", "--ntasks-per-node=2", "envjob.sh")
        print(f"[sbatch --wait: {time.monotonic() - t0:.2f} s]", file=sys.stderr)
        self.assertRegex(p.stdout, r"Submitted batch job \d+")
        files = sorted(self.work.glob("task-*.env"))
        self.assertEqual([f.name for f in files], [f"task-{i}.env" for i in range(4)], p.stdout + p.stderr)
        tasks = {}
        for f in files:
            env = dict(ln.split("=", 1) for ln in f.read_text().splitlines() if "=" in ln)
            tasks[int(env["SLURM_PROCID"])] = env
        self.assertEqual(sorted(tasks), [0, 1, 2, 3])
        for rank, env in tasks.items():
            node = f"node{rank // 2 + 1}"          # block distribution: 0,1 on node1; 2,3 on node2
            with self.subTest(rank=rank):
                self.assertEqual(env["SLURM_STEP_NODELIST"], "node[1-2]")
                self.assertEqual(env["SLURM_JOB_NODELIST"], "node[1-2]")
                self.assertEqual(env["SLURM_STEP_NUM_TASKS"], "4")
                self.assertEqual(env["SLURM_STEP_TASKS_PER_NODE"], "2(x2)")
                self.assertEqual(env["SLURM_NODEID"], str(rank // 2))
                self.assertEqual(env["SLURM_LOCALID"], str(rank % 2))
                self.assertEqual(env["SLURMD_NODENAME"], node)
                self.assertEqual(env["GETHOSTNAME"], node)
                self.assertEqual(env["SLURM_SUBMIT_HOST"], "head")
                self.assertEqual(env["SLURM_SUBMIT_DIR"], str(self.work))

    @dump_logs_on_failure
    def test_fake_gpus(self):
        out = self.run_slurm("srun", "-N2", "--ntasks-per-node=1", f"--gpus-per-node={GPUS}", "bash", "-c",
                             'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $SLURM_GPUS_ON_NODE"').stdout
        want = ",".join(map(str, range(GPUS)))
        self.assertEqual(sorted(out.splitlines()), [f"node1 {want} {GPUS}", f"node2 {want} {GPUS}"])

    @dump_logs_on_failure
    def test_scancel_ends_tasks_on_both_nodes(self):
        p = self.run_slurm("sbatch", "--parsable", "-N2", "--ntasks-per-node=1", "-o", "/dev/null",
                           "--wrap", "srun sleep 600")
        jobid = p.stdout.strip().split(";")[0]
        self.assertRegex(jobid, r"^\d+$")
        want_ns = {f"{PREFIX}h1", f"{PREFIX}h2"}
        running = wait_until(lambda: set(job_processes(jobid, "sleep").values()) == want_ns and
                             job_processes(jobid, "sleep"), timeout=30)
        self.assertTrue(running, f"job {jobid}: no sleep on both nodes: {job_processes(jobid, 'sleep')}\n"
                        + self.run_slurm("squeue").stdout)
        t0 = time.monotonic()
        self.run_slurm("scancel", jobid)
        left = wait_until(lambda: not job_processes(jobid, "sleep"), timeout=20)
        took = time.monotonic() - t0
        print(f"[scancel -> sleeps gone: {took:.2f} s]", file=sys.stderr)
        self.assertTrue(left, f"job {jobid}: sleep still running after scancel: {job_processes(jobid, 'sleep')}")
        for pid in running:
            self.assertFalse(Path(f"/proc/{pid}").exists(), f"sleep pid {pid} survived")
        gone = wait_until(lambda: jobid not in self.run_slurm("squeue", "-h", "-o", "%i").stdout.split(),
                          timeout=20)
        self.assertTrue(gone, f"job {jobid} still in squeue after scancel")
        state = self.run_slurm("scontrol", "show", "job", jobid).stdout
        self.assertIn("JobState=CANCELLED", state)


def main():
    """Runs the tests of the script being run (also when another test script imports this main)
    and exits 77, ctest's SKIP_RETURN_CODE, when every test was skipped."""
    prog = unittest.main(module="__main__", exit=False)
    r = prog.result
    if r.wasSuccessful() and r.skipped and len(r.skipped) >= r.testsRun:
        sys.exit(77)                         # everything skipped: ctest SKIP_RETURN_CODE
    sys.exit(0 if r.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
