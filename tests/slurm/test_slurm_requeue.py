#!/usr/bin/python3
"""Preemption end to end on a real SLURM (tests/slurm/cluster.sh, one node): an sbatch --requeue
job whose batch script execs `ptrun --checkpoint-signal SIGUSR1 --requeue` with torch workers
(examples/python/checkpoint_on_signal.py). Once the workers train, `scancel --batch -s USR1` (what
`--signal=B:USR1@90` sends before the time limit, sent now) reaches ptrun, which forwards SIGUSR1;
the workers checkpoint and exit, ptrun requeues the job (scontrol requeue) and exits 0. The
requeued run gets PTRUN_REQUEUE_COUNT=1, resumes from the checkpoint and ends with exactly the
loss of an uninterrupted run.

SLURM holds a requeued job: its EligibleTime is the requeue + cred_expire + 1 s (AuthInfo's
cred_expire, 120 s by default: measured 121 s on slurm-wlm 22.05 here), because the requeue
revokes the job's credentials issued up to that second. The test moves the start to now with
`scontrol update StartTime=now` two seconds after the requeue, so it stays bounded (~30 s).

Needs root (cluster.sh), PTRUN_BIN (set by ctest), /usr/bin/python3 with torch. Skips (exit 77)
where SLURM or torch cannot run; the cluster is torn down whatever happens."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_cluster as tc  # noqa: E402  (cluster.sh driver, private prefix/subnet/state dir)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "python" / "checkpoint_on_signal.py"
PTRUN = os.environ.get("PTRUN_BIN", "")
PYTHON = "/usr/bin/python3"
STEPS = 300
DEADLINE = 120  # seconds for any one wait below
RELEASE_AFTER = 2.0  # seconds after the requeue before its hold may be lifted (see the test)


def has_torch():
    """True when Debian's python3 imports torch.distributed."""
    probe = [PYTHON, "-c", "import torch.distributed"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def train_args(directory):
    """The example's arguments, its files in `directory`."""
    return [str(EXAMPLE), "--checkpoint", f"{directory}/ckpt.pt", "--steps", str(STEPS),
            "--result", f"{directory}/result.json",
            "--training-marker", f"{directory}/marker.json"]


class SlurmRequeue(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not PTRUN or not os.access(PTRUN, os.X_OK):
            raise unittest.SkipTest("PTRUN_BIN is not set to an executable (run through ctest)")
        if not shutil.which("ip"):
            raise unittest.SkipTest("needs iproute2 (the ip command)")
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: network namespaces and SLURM daemons run as root")
        if not has_torch():
            raise unittest.SkipTest("needs /usr/bin/python3 with torch")
        tc.reap_stale()
        cls.work = Path(tempfile.mkdtemp(prefix="ptrun-slurm-requeue."))
        cls.work.chmod(0o755)
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        cls.daemon_pids = []
        cls.addClassCleanup(cls._down)
        p = tc.cluster("up", 1, check=False, timeout=tc.UP_TIMEOUT)
        if p.returncode == 77:
            lines = p.stderr.strip().splitlines() or ["cluster.sh up: exit 77"]
            raise unittest.SkipTest(lines[-1])
        if p.returncode != 0:
            raise AssertionError(f"cluster.sh up 1 -> {p.returncode}\n{p.stdout}\n{p.stderr}")
        cls.daemon_pids = [int(f.read_text().strip()) for f in (tc.STATE_DIR / "pids").iterdir()]

    @classmethod
    def _down(cls):
        tc.cluster("down")
        left = tc.leftovers(cls.daemon_pids)
        if left:
            raise AssertionError(f"cluster.sh down left behind: {left}")

    def slurm(self, *args, check=True):
        return tc.cluster("run", *args, cwd=self.work, check=check)

    def job_fields(self, jobid):
        """JobState, Reason, Restarts, EligibleTime, ... of `jobid` (scontrol show job)."""
        text = self.slurm("scontrol", "show", "job", jobid).stdout
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def wait_for(self, what, cond, log, interval=0.1):
        """Waits (bounded) until cond() is true; fails naming `what` and the job's output."""
        found = tc.wait_until(cond, timeout=DEADLINE, interval=interval)
        self.assertTrue(found, f"never happened: {what}\n---- job output\n{log()}")
        return found

    def uninterrupted_loss(self):
        """The final loss of the same training run straight through, outside SLURM."""
        directory = self.work / "straight"
        directory.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env.update({"PYTHON_EXEC": PYTHON, "TMPDIR": str(self.work)})
        p = subprocess.run([PTRUN, "--nproc-per-node", "2", *train_args(directory)], env=env,
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads((directory / "result.json").read_text())["loss"]

    @tc.dump_logs_on_failure
    def test_checkpoint_requeue_and_resume_ends_with_the_uninterrupted_loss(self):
        expected = self.uninterrupted_loss()
        out = self.work / "job"
        out.mkdir()
        out.chmod(0o777)
        script = out / "job.sh"
        script.write_text("#!/bin/bash\nexport PYTHON_EXEC=/usr/bin/python3\n"
                          f"exec {PTRUN} --nproc-per-node 2 --checkpoint-signal SIGUSR1 "
                          f"--checkpoint-grace 60 --requeue {' '.join(train_args(out))}\n")
        script.chmod(0o755)
        p = self.slurm("sbatch", "--parsable", "--requeue", "-o", f"{out}/job-%j.out", str(script))
        jobid = p.stdout.strip().split(";")[0]
        self.assertRegex(jobid, r"^\d+$")
        self.addCleanup(self.slurm, "scancel", jobid, check=False)
        log_path = out / f"job-{jobid}.out"

        def log():
            return log_path.read_text(errors="replace") if log_path.exists() else ""

        marker = out / "marker.json"
        self.wait_for("the workers train", marker.exists, log)
        self.assertEqual(json.loads(marker.read_text())["requeue_count"], 0)
        marker.unlink()
        t0 = time.monotonic()
        self.slurm("scancel", "--batch", "--signal=USR1", jobid)

        def requeued():
            f = self.job_fields(jobid)
            return f if f.get("JobState") == "PENDING" and f.get("Restarts") == "1" else None

        fields = self.wait_for("the job is requeued (pending, Restarts=1)", requeued, log)
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"\n[USR1 -> requeued: {time.monotonic() - t0:.1f} s; held until "
              f"{fields.get('EligibleTime')} (now {now}): moved to now]", file=sys.stderr)
        self.assertTrue((out / "ckpt.pt").exists(), log())
        first = log()
        self.assertIn("sending SIGUSR1 to the workers (--checkpoint-signal)", first)
        self.assertIn("exited within the grace (60 s, --checkpoint-grace): rank 0 (exit code 0), "
                      "rank 1 (exit code 0)", first)
        self.assertIn(f"requeued SLURM job {jobid} (scontrol requeue)", first)
        result = out / "result.json"

        requeued_at = time.monotonic()

        def released_and_done():
            # The requeue revokes the job's credentials issued up to that second: a start in the
            # same second is killed ("Job credential revoked"), which is why SLURM holds the job.
            # Two seconds later a new credential is valid: then move the start to now.
            f = self.job_fields(jobid)
            old_enough = time.monotonic() - requeued_at >= RELEASE_AFTER
            if old_enough and f.get("JobState") == "PENDING" and f.get("Reason") == "BeginTime":
                self.slurm("scontrol", "update", f"JobId={jobid}", "StartTime=now")
            return result.exists()

        self.wait_for("the requeued run ends", released_and_done, log, interval=1.0)
        got = json.loads(result.read_text())
        self.assertEqual(got["requeue_count"], 1, log())
        self.assertGreater(got["resumed_from"], 0, log())
        self.assertLess(got["resumed_from"], STEPS, log())
        self.assertEqual(got["loss"], expected, log())
        self.assertIn("resumed at step", log())

        def completed():
            f = self.job_fields(jobid)
            return f if f.get("JobState") == "COMPLETED" else None

        done = self.wait_for("the job completes", completed, log)
        self.assertEqual(done.get("Restarts"), "1")  # requeued exactly once
        self.assertEqual(done.get("ExitCode"), "0:0")


if __name__ == "__main__":
    tc.main()
