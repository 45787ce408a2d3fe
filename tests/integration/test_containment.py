"""No process outlives the job (issue 13): descendants that leave the worker's process group or
session (setsid, double fork) end with their attempt, both with a cgroup of the job (where ptrun may
make one: here as root) and with the subreaper alone (PTRUN_CGROUP=0); after kill -9 of ptrun, the
next ptrun on the node finds and ends what was left (processes, cgroup, temporary directory)."""
import os
import signal
import subprocess
import sys
import tempfile

from harness import (DEADLINE, Notifier, PtrunTestCase, kill_all, pid_alive, run_ptrun, start_ptrun,
                     wait_gone, wait_output)

PY = "/usr/bin/python3"

# A worker that leaves two processes behind: one in a new session, one double-forked (orphaned at
# once), writes their pids to $OUT/<rank>.pids, tells the test (the FIFO $NOTIFY) and exits or hangs.
LEAVER = r"""
import os, subprocess, sys, time
out, mode = sys.argv[1], sys.argv[2]
quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # not holding ptrun's pipes
a = subprocess.Popen(["sleep", "300"], start_new_session=True, **quiet).pid
r, w = os.pipe()
if os.fork() == 0:
    b = subprocess.Popen(["sleep", "301"], **quiet).pid
    os.write(w, str(b).encode())
    os._exit(0)
os.wait()
b = int(os.read(r, 32))
rank = os.environ["RANK"]
with open(f"{out}/{rank}.{os.environ['TORCHELASTIC_RESTART_COUNT']}.pids", "w") as f:
    f.write(f"{a} {b}\n")
notify = os.environ.get("NOTIFY")
if notify:
    fd = os.open(notify, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, f"start {rank} 0 {os.getpid()}\n".encode())
    os.close(fd)
if mode == "hang":
    time.sleep(300)
sys.exit(int(mode) if mode.isdigit() else 0)
"""

# Attempts 0 and 1 each leave a process in a new session and fail; attempt 2 exits 0 only if both
# are gone within 10 s (with a cgroup, attempt 1 and 2 run in fresh cgroups below the job's).
RESTARTER = r"""
import os, select, subprocess, sys
out = sys.argv[1]
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if attempt < 2:
    a = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).pid
    with open(f"{out}/left.{attempt}.pids", "w") as f:
        f.write(str(a))
    sys.exit(3)
for earlier in (0, 1):
    with open(f"{out}/left.{earlier}.pids") as f:
        pid = int(f.read())
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        continue
    ready, _, _ = select.select([fd], [], [], 10)
    if not ready:
        sys.exit(4)
sys.exit(0)
"""


def cgroup_usable():
    return os.geteuid() == 0 and "cgroup v2" in run_ptrun(["--explain", "/bin/true"]).stdout


class Containment(PtrunTestCase):
    def setUp(self):
        super().setUp()
        self.state_parent = tempfile.TemporaryDirectory(prefix="ptrun-state-")
        self.state_dir = os.path.join(self.state_parent.name, "records")  # ptrun makes and removes it
        self.script = os.path.join(self.dir, "leaver.py")
        with open(self.script, "w") as f:
            f.write(LEAVER)
        self.left = []

    def tearDown(self):
        self.leftovers()
        kill_all([p for p in set(self.left) if self.is_sleep(p)])  # what a failed test left
        self.state_parent.cleanup()
        super().tearDown()

    @staticmethod
    def is_sleep(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read().startswith(b"sleep\0")
        except OSError:
            return False

    def env(self, cgroup):
        return {"PTRUN_STATE_DIR": self.state_dir, "PTRUN_CGROUP": "1" if cgroup else "0"}

    def leftovers(self):
        pids = []
        for name in os.listdir(self.dir):
            if name.endswith(".pids"):
                with open(os.path.join(self.dir, name)) as f:
                    pids += [int(p) for p in f.read().split()]
        self.left += pids
        return pids

    def modes(self):
        return (True, False) if cgroup_usable() else (False,)

    def test_setsid_and_double_forked_processes_end_with_the_job(self):
        for cgroup in self.modes():
            with self.subTest(cgroup=cgroup):
                res = run_ptrun(["--nproc-per-node", "2", PY, self.script, self.dir, "0"], env=self.env(cgroup))
                self.assertEqual(res.returncode, 0, res.stderr)
                pids = self.leftovers()
                self.assertEqual(len(pids), 4)
                self.assertEqual([p for p in pids if pid_alive(p)], [], "processes outlived ptrun")
                self.assertFalse(os.path.exists(self.state_dir), "job record left behind")

    def test_what_an_attempt_left_is_gone_before_the_next_attempt_ends(self):
        script = os.path.join(self.dir, "restarter.py")
        with open(script, "w") as f:
            f.write(RESTARTER)
        for cgroup in self.modes():
            with self.subTest(cgroup=cgroup):
                res = run_ptrun(["--max-restarts", "2", PY, script, self.dir], env=self.env(cgroup))
                self.assertEqual(res.returncode, 0, res.stderr)

    def test_an_attempt_that_left_nothing_is_not_killed_and_the_next_reuses_its_cgroup(self):
        # Attempt 0 leaves nothing and fails: its cgroup (the job's) is empty, so nothing is killed
        # and attempt 1 starts in it again (no fresh cgroup: each cgroup file opened costs ~0.1 ms).
        # Attempt 1 leaves a process and fails: it is killed and attempt 2 runs in a fresh cgroup.
        if not cgroup_usable():
            self.skipTest("no cgroup of ptrun's own here (needs root and cgroup v2)")
        script = os.path.join(self.dir, "where.py")
        with open(script, "w") as f:
            f.write(r"""
import os, subprocess, sys
out, attempt = sys.argv[1], int(os.environ["TORCHELASTIC_RESTART_COUNT"])
with open(f"{out}/cgroup.{attempt}", "w") as f:
    f.write(open("/proc/self/cgroup").read().split("0::")[1].strip())
if attempt == 1:
    a = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).pid
    with open(f"{out}/left.pids", "w") as f:
        f.write(str(a))
sys.exit(3 if attempt < 2 else 0)
""")
        res = run_ptrun(["--max-restarts", "2", PY, script, self.dir], env=self.env(True))
        self.assertEqual(res.returncode, 0, res.stderr)
        where = []
        for attempt in range(3):
            with open(os.path.join(self.dir, f"cgroup.{attempt}")) as f:
                where.append(f.read())
        self.assertRegex(where[0], r"/ptrun-[^/]+$")
        self.assertEqual(where[1], where[0])
        self.assertEqual(where[2], where[0] + "/attempt-1")
        self.assertEqual([p for p in self.leftovers() if pid_alive(p)], [], "processes outlived ptrun")

    def test_the_next_ptrun_cleans_up_after_a_kill_9(self):
        for cgroup in self.modes():
            with self.subTest(cgroup=cgroup):
                for name in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, name))
                with open(self.script, "w") as f:
                    f.write(LEAVER)
                notifier = Notifier()
                try:
                    env = dict(self.env(cgroup), NOTIFY=notifier.path)
                    proc = start_ptrun(["--nproc-per-node", "2", PY, self.script, self.dir, "hang"], notifier, env=env)
                    self.leftover.append(proc.pid)
                    notifier.wait_lines(2)
                finally:
                    notifier.close()
                records = os.listdir(self.state_dir)
                self.assertEqual(len(records), 1, records)
                with open(os.path.join(self.state_dir, records[0])) as f:
                    record = f.read()
                temp = [line[4:] for line in record.splitlines() if line.startswith("tmp=")]
                cg = [line[7:] for line in record.splitlines() if line.startswith("cgroup=")]
                self.assertEqual(len(temp), 1, record)
                self.assertEqual(len(cg), 1 if cgroup else 0, record)
                proc.kill()
                proc.wait()  # not communicate(): the leftovers hold its output pipes open
                proc.stdout.close()
                proc.stderr.close()
                pids = self.leftovers()
                self.assertEqual(len(pids), 4)
                alive = [p for p in pids if pid_alive(p)]
                self.assertEqual(len(alive), 4, "the workers' descendants outlive a SIGKILLed ptrun (the case "
                                               "the next ptrun must clean up)")
                self.assertTrue(os.path.isdir(temp[0]))

                res = run_ptrun(["/bin/true"], env=self.env(cgroup))
                self.assertEqual(res.returncode, 0, res.stderr)
                self.assertIn(f"cleaned up after ptrun pid {proc.pid}", res.stderr)
                self.assertEqual(wait_gone(pids, 10), [], res.stderr)
                self.assertFalse(os.path.exists(temp[0]), res.stderr)
                if cg:
                    self.assertFalse(os.path.exists(cg[0]), res.stderr)
                self.assertFalse(os.path.exists(self.state_dir))

    def test_a_cleanup_that_ended_nothing_goes_to_the_run_log_alone(self):
        """After a kill -9 whose workers died with it (only the record and a directory left), the
        next, unrelated job does not print the cleanup on its console: its run log keeps it."""
        proc = start_ptrun(["--nproc-per-node", "1", PY, "-c",
                            "import time; print('up', flush=True); time.sleep(300)"],
                           env=self.env(False))
        self.leftover.append(proc.pid)
        wait_output(proc.stdout, "up")
        worker = [int(p) for p in os.listdir("/proc") if p.isdigit() and
                  self.child_of(int(p), proc.pid)]
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual(wait_gone(worker, 10), [], "the worker outlived a SIGKILLed ptrun")
        self.assertEqual(len(os.listdir(self.state_dir)), 1)

        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--log-dir", logs, "--rdzv-id", "next", "/bin/true"], env=self.env(False))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertNotIn("cleaned up", res.stderr)
        self.assertFalse(os.path.exists(self.state_dir))
        [run] = [d for d in os.listdir(logs) if d.startswith("next_")]
        with open(os.path.join(logs, run, "ptrun.log")) as f:
            self.assertRegex(f.read(), f"debug: cleaned up after ptrun pid {proc.pid} .*: "
                                       r"/\S+ removed\n")

    @staticmethod
    def child_of(pid, parent):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return int(f.read().rsplit(")", 1)[1].split()[1]) == parent
        except (OSError, ValueError, IndexError):
            return False

    def test_explain_names_the_mechanism(self):
        out = run_ptrun(["--explain", "/bin/true"], env={"PTRUN_CGROUP": "0"}).stdout
        self.assertRegex(out, r"containment\s+subreaper only \(PTRUN_CGROUP=0\)")
        if cgroup_usable():
            self.assertRegex(run_ptrun(["--explain", "/bin/true"]).stdout, r"containment\s+cgroup v2 under /")


if __name__ == "__main__":
    import unittest
    unittest.main()
