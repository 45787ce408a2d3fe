"""What each worker used (issue 39): peak memory and CPU time read at exit, the OOM killer's
verdict with the limit that applied (a job's v1 memory cgroup, --memory-limit-per-worker), and
the table at the end of every run. The cgroup tests need the v1 memory controller and root."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

from harness import PTRUN, PtrunTestCase, _env, run_ptrun

# Rank R allocates (and touches) ALLOC_MB_<R> MiB in 10 MiB steps, then sleeps SLEEP_<R> seconds.
# AFTER_<R>: a file rank R waits for (at most 60 s) before allocating; HELD_<R>: a file it makes
# once it holds its memory.
ALLOCATE = r"""
import os, sys, time
rank = os.environ["RANK"]
after = os.environ.get("AFTER_" + rank)
deadline = time.monotonic() + 60
while after and not os.path.exists(after):
    if time.monotonic() > deadline:
        sys.exit(f"rank {rank}: {after} never appeared")
    time.sleep(0.01)
mb = int(os.environ.get("ALLOC_MB_" + rank, "0"))
held = [bytearray(b"\x01") * (10 << 20) for _ in range(mb // 10)]
if os.environ.get("HELD_" + rank):
    open(os.environ["HELD_" + rank], "w").close()
time.sleep(float(os.environ.get("SLEEP_" + rank, "0")))
"""


def own_memory_cgroup():
    """The v1 memory cgroup directory this process runs in, or None (no v1 memory controller)."""
    for line in pathlib.Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            d = pathlib.Path("/sys/fs/cgroup/memory" + (path if path != "/" else ""))
            return d if d.is_dir() else None
    return None


def bytes_text(n):
    """ptrun's sizes: "512 B", "200 MiB", "21.4 GiB" (binary units, at most one decimal)."""
    units, v, u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], float(n), 0
    while v >= 1024 and u < 5:
        v, u = v / 1024, u + 1
    if u == 0:
        return f"{n} B"
    text = str(int(v + 0.5)) if v >= 100 else ("%.1f" % v)
    return (text[:-2] if text.endswith(".0") else text) + " " + units[u]


def job_memory_limit():
    """The limit a job started here runs under, as --explain names it: the tightest v1
    memory.limit_in_bytes of this process's memory cgroup and those above it, else MemTotal."""
    best = None
    for line in pathlib.Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" not in controllers.split(","):
            continue
        while True:
            f = pathlib.Path("/sys/fs/cgroup/memory" + (path if path != "/" else "")) / "memory.limit_in_bytes"
            if f.exists() and int(f.read_text()) < 1 << 62 and (best is None or int(f.read_text()) < best[0]):
                best = (int(f.read_text()), "the job's memory cgroup " + path)
            if path == "/":
                break
            path = path.rsplit("/", 1)[0] or "/"
    if best:
        return best
    kib = int(re.search(r"^MemTotal:\s+(\d+)", pathlib.Path("/proc/meminfo").read_text(), re.M).group(1))
    return kib * 1024, "the node's memory"


def explain_row(text, what):
    """The value and source of --explain's row `what`."""
    m = re.search(rf"^{re.escape(what)}\s+(.*?)\s+\(([^()]*)\)$", text, re.M)
    return (m.group(1), m.group(2)) if m else None


def table_rows(text):
    """{rank: (wall, cpu, peak, restarts, ended)} from the end table, ranges expanded."""
    rows = {}
    block = text.split("what each worker used on ", 1)[1].splitlines()[2:]
    for line in block:
        line = re.sub(r"^\[ptrun [^]]*\] info: ", "", line)
        m = re.match(r"^  (\d+)(?:-(\d+))?\s+(\S+ s)\s+(\S+(?: s)?)\s+(\S+(?: \S?i?B)?)\s+(\d+)\s+(.+)$", line)
        if not m:
            break
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        for r in range(first, last + 1):
            rows[r] = m.groups()[2:]
    return rows


def mib(cell):
    number, unit = cell.split()
    return float(number) * {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]


class WorkerUsage(PtrunTestCase):
    def allocate(self, env, *ptrun_args, nproc=2, cwd_env=None):
        args = ["--nproc-per-node", str(nproc), "--log-dir", self.dir, *ptrun_args,
                "--no-python", sys.executable, "-c", ALLOCATE]
        return run_ptrun(args, env=env, timeout=90)

    def test_a_200_mb_worker_reports_a_peak_of_at_least_200_mb(self):
        res = self.allocate({"ALLOC_MB_1": "200"})
        self.assertEqual(res.returncode, 0, res.stderr)
        rows = table_rows(res.stderr)
        self.assertEqual(sorted(rows), [0, 1], res.stderr)
        self.assertGreaterEqual(mib(rows[1][2]), 200, res.stderr)
        self.assertLess(mib(rows[0][2]), 200, res.stderr)
        self.assertEqual(rows[1][4], "exit code 0")
        run_log = (pathlib.Path(self.dir) / "latest" / "ptrun.log").read_text()
        self.assertIn("what each worker used on ", run_log)

    def test_the_end_table_of_a_4_rank_job(self):
        res = run_ptrun(["--nproc-per-node", "4", "--max-restarts", "1",
                         *self.worker("--fail-rank", "3", "--exit", "3")])
        self.assertEqual(res.returncode, 3, res.stderr)
        rows = table_rows(res.stderr)
        self.assertEqual(sorted(rows), [0, 1, 2, 3], res.stderr)
        for rank, row in rows.items():
            self.assertEqual(row[3], "1", res.stderr)  # one restart each: the group restarted
            self.assertRegex(row[1], r"^[0-9.]+ s$")
        self.assertTrue(rows[3][4].startswith("exit code 3"), res.stderr)
        self.assertIn("(cpu: user + system", res.stderr)

    def test_explain_names_the_memory_limit_the_workers_run_under(self):
        res = run_ptrun(["--explain", "--nproc-per-node", "2", "/bin/true"])
        self.assertEqual(res.returncode, 0, res.stderr)
        limit, whose = job_memory_limit()
        if own_memory_cgroup() is None:  # cgroup v2: ptrun reads memory.max, this test does not
            self.assertRegex(res.stdout, r"(?m)^memory limit\s+\S+ \S+, (the node's memory|the job's memory cgroup /)")
            return
        self.assertEqual(explain_row(res.stdout, "memory limit"),
                         (f"{bytes_text(limit)}, {whose}",
                          "this machine; --memory-limit-per-worker gives each worker its own"), res.stdout)

    def test_explain_names_each_workers_memory_cgroup_and_creates_none(self):
        before = set(own_memory_cgroup().iterdir()) if own_memory_cgroup() else set()
        res = run_ptrun(["--explain", "--memory-limit-per-worker", "200M", "/bin/true"])
        self.assertEqual(res.returncode, 0, res.stderr)
        value, source = explain_row(res.stdout, "memory limit")
        self.assertEqual(source, "flag --memory-limit-per-worker")
        self.assertTrue(value.startswith("200 MiB per worker"), value)
        if own_memory_cgroup():
            self.assertEqual(value, f"200 MiB per worker, each in a memory cgroup of its own: "
                                    f"{own_memory_cgroup()}/ptrun-PID-*/wN (cgroup v1 "
                                    f"memory.limit_in_bytes)")
            self.assertEqual(set(own_memory_cgroup().iterdir()), before, "--explain creates nothing")

    def test_bad_size_names_the_option(self):
        res = run_ptrun(["--memory-limit-per-worker", "12XB", *self.worker()])
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("--memory-limit-per-worker", res.stderr)
        self.assertIn("expected a size", res.stderr)


@unittest.skipUnless(own_memory_cgroup() and os.geteuid() == 0,
                     "needs the cgroup v1 memory controller and root")
class OomKills(PtrunTestCase):
    def test_oom_in_the_jobs_100_mb_cgroup_names_the_worker_and_the_limit(self):
        job = own_memory_cgroup() / f"ptrun-test-{os.getpid()}"
        job.mkdir()
        try:
            (job / "memory.limit_in_bytes").write_text(str(100 << 20))
            if (job / "memory.memsw.limit_in_bytes").exists():
                (job / "memory.memsw.limit_in_bytes").write_text(str(100 << 20))
            cmd = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(job), PTRUN,
                   "--nproc-per-node", "2", "--no-python", sys.executable, "-c", ALLOCATE]
            res = subprocess.run(cmd, env=_env({"ALLOC_MB_1": "400", "SLEEP_0": "60"}),
                                 capture_output=True, text=True, timeout=90)
        finally:
            job.rmdir()  # ptrun and its workers are gone: nothing is left in it
        self.assertEqual(res.returncode, 137, res.stderr)
        self.assertIn("  rank        : 1 (local rank 1)", res.stderr)
        self.assertRegex(res.stderr, r"  exit        : signal 9 \(SIGKILL\): killed by the kernel's OOM "
                                     r"killer \(peak [0-9.]+ MiB; limit 100 MiB, the job's memory "
                                     r"cgroup /\S*ptrun-test-\d+\), exit code 137")
        other = [l for l in res.stderr.splitlines() if l.startswith("  rank 0 ")]
        self.assertEqual(len(other), 1, res.stderr)
        self.assertNotIn("OOM", other[0])
        rows = table_rows(res.stderr)
        self.assertEqual(rows[1][4], "OOM-killed (SIGKILL)")
        self.assertNotIn("OOM", rows[0][4])

    def test_explain_in_a_100_mb_job_cgroup_names_it(self):
        job = own_memory_cgroup() / f"ptrun-test-{os.getpid()}"
        job.mkdir()
        try:
            (job / "memory.limit_in_bytes").write_text(str(100 << 20))
            cmd = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(job), PTRUN,
                   "--explain", "/bin/true"]
            res = subprocess.run(cmd, env=_env({}), capture_output=True, text=True, timeout=60)
        finally:
            job.rmdir()
        self.assertEqual(res.returncode, 0, res.stderr)
        value, _ = explain_row(res.stdout, "memory limit")
        self.assertRegex(value, r"^100 MiB, the job's memory cgroup /\S*ptrun-test-\d+$")

    def test_memory_limit_per_worker_ends_the_worker_that_grew(self):
        before = set(own_memory_cgroup().iterdir())
        # Rank 2 grows only once rank 0 holds its 50 MB: its OOM kill ends the group, and on a
        # loaded machine it could otherwise come before rank 0's allocation (peak 33.5 MiB seen).
        scratch = tempfile.TemporaryDirectory(prefix="ptrun-held-")
        self.addCleanup(scratch.cleanup)
        held = os.path.join(scratch.name, "rank0-held")
        proc = subprocess.Popen(
            [PTRUN, "--nproc-per-node", "3", "--memory-limit-per-worker", "100M", "--no-python",
             sys.executable, "-c", ALLOCATE],
            env=_env({"ALLOC_MB_2": "300", "ALLOC_MB_0": "50", "SLEEP_0": "60", "SLEEP_1": "60",
                      "HELD_0": held, "AFTER_2": held}),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.leftover.append(proc.pid)
        _, err = proc.communicate(timeout=90)
        self.assertEqual(proc.returncode, 137, err)
        self.assertIn("  rank        : 2 (local rank 2)", err)
        self.assertRegex(err, r"  exit        : signal 9 \(SIGKILL\): killed by the kernel's OOM killer "
                              r"\(peak [0-9.]+ MiB; limit 100 MiB, its memory cgroup "
                              r"\(--memory-limit-per-worker\)\), exit code 137")
        for rank in (0, 1):
            line = [l for l in err.splitlines() if l.startswith(f"  rank {rank} ")]
            self.assertEqual(len(line), 1, err)
            self.assertNotIn("OOM", line[0])
        rows = table_rows(err)
        self.assertGreaterEqual(mib(rows[0][2]), 50, err)  # its cgroup's peak
        left = [p.name for p in set(own_memory_cgroup().iterdir()) - before]
        self.assertEqual(left, [], "memory cgroups left behind")


if __name__ == "__main__":
    unittest.main()
