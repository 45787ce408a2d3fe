#!/usr/bin/python3
"""Preemption end to end on a real SLURM (tests/slurm/cluster.sh, two nodes): an sbatch --requeue
job whose batch script execs `ptrun --checkpoint-signal SIGUSR1 --requeue` with torch workers
(examples/python/checkpoint_on_signal.py). Once the workers train, `scancel --batch -s USR1` (what
`--signal=B:USR1@90` sends before the time limit, sent now) reaches ptrun, which forwards SIGUSR1;
the workers checkpoint and exit, ptrun requeues the job (scontrol requeue) and exits 0. The
requeued run gets PTRUN_REQUEUE_COUNT=1, resumes from the checkpoint and ends with exactly the
loss of an uninterrupted run.

Two nodes (`srun ptrun` with one task per node, standard-library workers: shard_worker.py):
`scancel -s USR1` reaches both ptruns; node rank 1's worker takes seconds longer to write its
shard of the checkpoint. Node rank 0 must requeue only after it: a requeue ends every step of
the job at once, and would kill node rank 1's worker mid-write. The same with one task per rank
(`srun --ntasks-per-node=2 ptrun --slurm-mode per-rank`, 4 ranks): the first task of node rank 0
requeues once every other rank's worker wrote its shard.

SLURM holds a requeued job: its EligibleTime is the requeue + cred_expire + 1 s (AuthInfo's
cred_expire, 120 s by default: measured 121 s on slurm-wlm 22.05 here), because the requeue
revokes the job's credentials issued up to that second. The test moves the start to now with
`scontrol update StartTime=now` two seconds after the requeue, so it stays bounded (~30 s).

Needs root (cluster.sh), PTRUN_BIN (set by ctest), /usr/bin/python3 (with torch for the torch
case). Skips (exit 77) where SLURM cannot run; the cluster is torn down whatever happens."""
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
SHARD_WORKER = Path(__file__).resolve().parent / "shard_worker.py"
SLOW_SHARD = 4  # seconds node rank 1's worker takes to write its shard
NODES = 2
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
        tc.reap_stale()
        cls.work = Path(tempfile.mkdtemp(prefix="ptrun-slurm-requeue."))
        cls.work.chmod(0o755)
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        # A private home (srun passes the environment on): the rendezvous key of a multi-node job
        # (~/.ptrun/rdzv-key) is created there, not in the real home.
        home = cls.work / "home"
        home.mkdir()
        cls.addClassCleanup(tc.ENV.__setitem__, "HOME", tc.ENV.get("HOME", "/root"))
        tc.ENV["HOME"] = str(home)
        cls.torch = has_torch()
        cls.daemon_pids = []
        cls.addClassCleanup(cls._down)
        p = tc.cluster("up", NODES, check=False, timeout=tc.UP_TIMEOUT)
        if p.returncode == 77:
            lines = p.stderr.strip().splitlines() or ["cluster.sh up: exit 77"]
            raise unittest.SkipTest(lines[-1])
        if p.returncode != 0:
            raise AssertionError(f"cluster.sh up {NODES} -> {p.returncode}\n{p.stdout}\n"
                                 f"{p.stderr}")
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

    def submit(self, out, body, *sbatch_args):
        """Submits `body` as an sbatch --requeue job writing to out/job-ID.out (both runs: the
        file is appended to); returns (job id, a function that reads that output)."""
        script = out / "job.sh"
        script.write_text("#!/bin/bash\nexport PYTHON_EXEC=/usr/bin/python3\n" + body + "\n")
        script.chmod(0o755)
        p = self.slurm("sbatch", "--parsable", "--requeue", "--open-mode=append", *sbatch_args,
                       "-o", f"{out}/job-%j.out", str(script))
        jobid = p.stdout.strip().split(";")[0]
        self.assertRegex(jobid, r"^\d+$")
        self.addCleanup(self.slurm, "scancel", jobid, check=False)
        log_path = out / f"job-{jobid}.out"

        def log():
            return log_path.read_text(errors="replace") if log_path.exists() else ""

        return jobid, log

    def wait_requeued(self, jobid, log):
        """Waits until the job is pending again after one requeue; returns its fields."""
        def requeued():
            f = self.job_fields(jobid)
            return f if f.get("JobState") == "PENDING" and f.get("Restarts") == "1" else None

        return self.wait_for("the job is requeued (pending, Restarts=1)", requeued, log)

    def release_until(self, jobid, done, log):
        """Lifts the requeued job's hold (see the module's notes) until done() is true."""
        requeued_at = time.monotonic()

        def released_and_done():
            # The requeue revokes the job's credentials issued up to that second: a start in the
            # same second is killed ("Job credential revoked"), which is why SLURM holds the job.
            # Two seconds later a new credential is valid: then move the start to now.
            f = self.job_fields(jobid)
            old_enough = time.monotonic() - requeued_at >= RELEASE_AFTER
            if old_enough and f.get("JobState") == "PENDING" and f.get("Reason") == "BeginTime":
                self.slurm("scontrol", "update", f"JobId={jobid}", "StartTime=now")
            return done()

        self.wait_for("the requeued run ends", released_and_done, log, interval=1.0)

    def wait_completed(self, jobid, log):
        """Waits until the job has completed; returns its fields."""
        def completed():
            f = self.job_fields(jobid)
            return f if f.get("JobState") == "COMPLETED" else None

        return self.wait_for("the job completes", completed, log)

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
        if not self.torch:
            self.skipTest("needs /usr/bin/python3 with torch")
        expected = self.uninterrupted_loss()
        out = self.work / "job"
        out.mkdir()
        out.chmod(0o777)
        jobid, log = self.submit(out, f"exec {PTRUN} --nproc-per-node 2 --checkpoint-signal "
                                      f"SIGUSR1 --checkpoint-grace 60 --requeue "
                                      f"{' '.join(train_args(out))}")
        marker = out / "marker.json"
        self.wait_for("the workers train", marker.exists, log)
        self.assertEqual(json.loads(marker.read_text())["requeue_count"], 0)
        marker.unlink()
        t0 = time.monotonic()
        self.slurm("scancel", "--batch", "--signal=USR1", jobid)
        fields = self.wait_requeued(jobid, log)
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"\n[USR1 -> requeued: {time.monotonic() - t0:.1f} s; held until "
              f"{fields.get('EligibleTime')} (now {now}): moved to now]", file=sys.stderr)
        self.assertTrue((out / "ckpt.pt").exists(), log())
        first = log()
        self.assertIn("sending SIGUSR1 to the workers (--checkpoint-signal)", first)
        self.assertIn("exited within the grace (60 s, --checkpoint-grace): rank 0 (exit code 0), "
                      "rank 1 (exit code 0)", first)
        self.assertIn(f"requeueing SLURM job {jobid} (scontrol requeue)", first)
        self.assertNotIn("waiting for the other nodes", first)  # one node: nothing to wait for
        result = out / "result.json"
        self.release_until(jobid, result.exists, log)
        got = json.loads(result.read_text())
        self.assertEqual(got["requeue_count"], 1, log())
        self.assertGreater(got["resumed_from"], 0, log())
        self.assertLess(got["resumed_from"], STEPS, log())
        self.assertEqual(got["loss"], expected, log())
        self.assertIn("resumed at step", log())
        done = self.wait_completed(jobid, log)
        self.assertEqual(done.get("Restarts"), "1")  # requeued exactly once
        self.assertEqual(done.get("ExitCode"), "0:0")

    def requeue_after_every_shard(self, name, ptrun_args, sbatch_args, ranks, waited):
        """Submits `srun ptrun PTRUN_ARGS shard_worker.py` as a --requeue job of `ranks` ranks,
        signals it once every worker runs, and checks that the requeue came only after every
        rank wrote its shard (the slow ones SLOW_SHARD seconds after the requeueing task's),
        that one task requeued (its log says `waited`), and that the requeued run resumes."""
        out = self.work / name
        out.mkdir()
        out.chmod(0o777)
        jobid, log = self.submit(out, f"srun {PTRUN} {ptrun_args} --checkpoint-signal SIGUSR1 "
                                      f"--checkpoint-grace 30 --requeue "
                                      f"{SHARD_WORKER} {out} {SLOW_SHARD}", *sbatch_args)
        started = [out / f"start.{rank}" for rank in range(ranks)]
        self.wait_for("every worker runs", lambda: all(f.exists() for f in started), log)
        self.assertEqual(sorted(f.read_text() for f in started),
                         [str(rank) for rank in range(ranks)], log())
        t0 = time.monotonic()
        # What --signal=USR1@90 sends before the time limit, sent now: every step's tasks get it.
        self.slurm("scancel", "--signal=USR1", jobid)
        self.wait_requeued(jobid, log)
        print(f"\n[USR1 -> requeued: {time.monotonic() - t0:.1f} s]", file=sys.stderr)
        first = log()
        # The slow ranks wrote their shards and exited on their own: the requeue came after
        # them, not in the middle of a write.
        for rank in range(ranks):
            self.assertTrue((out / f"shard.{rank}").exists(), f"no shard of rank {rank}\n{first}")
            self.assertIn(f"exited within the grace (30 s, --checkpoint-grace): rank {rank} "
                          "(exit code 0)", first)
        self.assertNotIn("stopped by ptrun", first)
        self.assertIn(waited, first)
        self.assertEqual(first.count("(scontrol requeue)"), 1, first)  # one task alone
        self.release_until(jobid, lambda: all((out / f"resumed.{rank}").exists()
                                              for rank in range(ranks)), log)
        self.assertEqual((out / f"resumed.{ranks - 1}").read_text(), "1")  # PTRUN_REQUEUE_COUNT
        done = self.wait_completed(jobid, log)
        self.assertEqual(done.get("Restarts"), "1")
        self.assertEqual(done.get("ExitCode"), "0:0")

    @tc.dump_logs_on_failure
    def test_two_nodes_requeue_only_once_every_node_wrote_its_shard(self):
        # One ptrun per node: node rank 0 waits until the other node's ptrun left the rendezvous.
        self.requeue_after_every_shard("two_nodes", "--nproc-per-node 1",
                                       (f"-N{NODES}", "--ntasks-per-node=1"), NODES,
                                       "until every other node's workers had ended")

    @tc.dump_logs_on_failure
    def test_one_task_per_rank_requeues_only_once_every_rank_wrote_its_shard(self):
        # srun starts a ptrun per rank (2 nodes x 2): the task hosting the workers' store waits
        # until every other task said, through that store, that its worker ended.
        self.requeue_after_every_shard("per_rank", "--slurm-mode per-rank",
                                       (f"-N{NODES}", "--ntasks-per-node=2"), 2 * NODES,
                                       "until every other rank's worker had ended")

if __name__ == "__main__":
    tc.main()
