"""What each worker used (issue 39): peak memory and CPU time read at exit, the OOM killer's
verdict with the limit that applied (a job's v1 memory cgroup, --memory-limit-per-worker), and
the table at the end of every run. The cgroup tests need the v1 memory controller and root."""
import os
import pathlib
import re
import subprocess
import sys
import unittest

from harness import PTRUN, PtrunTestCase, _env, run_ptrun

# Rank R allocates (and touches) ALLOC_MB_<R> MiB in 10 MiB steps, then sleeps SLEEP_<R> seconds.
ALLOCATE = r"""
import os, time
rank = os.environ["RANK"]
mb = int(os.environ.get("ALLOC_MB_" + rank, "0"))
held = [bytearray(b"\x01") * (10 << 20) for _ in range(mb // 10)]
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

    def test_memory_limit_per_worker_ends_the_worker_that_grew(self):
        before = set(own_memory_cgroup().iterdir())
        proc = subprocess.Popen(
            [PTRUN, "--nproc-per-node", "3", "--memory-limit-per-worker", "100M", "--no-python",
             sys.executable, "-c", ALLOCATE],
            env=_env({"ALLOC_MB_2": "300", "ALLOC_MB_0": "50", "SLEEP_0": "60", "SLEEP_1": "60"}),
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
