#!/usr/bin/python3
"""ptrun under a real SLURM (tests/slurm/cluster.sh: slurmctld + 2 slurmd, each in its own network
namespace): `srun ptrun PROGRAM` with no other flag.

  per-rank   sbatch -N2 --ntasks-per-node=2, srun ptrun store_worker.py: 4 tasks, one worker each,
             ranks from SLURM, every worker reaches the one store (real torch TCPStore clients),
             which outlives the rank beside it (exit barrier)
  per-node   sbatch -N1, srun ptrun --nproc-per-node 2 (or the GPUs SLURM gave: --gpus-per-node=2)
  signals    scancel leaves no ptrun and no worker on any node; scancel --signal=USR1 (what
             --signal=USR1@60 sends before the time limit) reaches every worker
  multi-node sbatch -N2 --ntasks-per-node=1, srun ptrun --nproc-per-node 2: 4 ranks over 2 agents;
             skipped while this build has no multi-node rendezvous (issue 4)

Needs root (cluster.sh), PTRUN_BIN and FAKE_WORKER (set by ctest), /usr/bin/python3 with torch for
the store worker. Skips (exit 77 when everything skipped) where SLURM cannot run. The cluster is
torn down whatever happens, and the test checks nothing of it is left.
"""
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

HERE = Path(__file__).resolve().parent
PTRUN = os.environ.get("PTRUN_BIN", "")
FAKE_WORKER = os.environ.get("FAKE_WORKER", "")
STORE_WORKER = HERE / "store_worker.py"
JOB_TIMEOUT = 120   # seconds for one sbatch --wait
NODES = 2


def has_torch():
    return subprocess.run(["/usr/bin/python3", "-c", "import torch.distributed"], capture_output=True).returncode == 0


def derived_port(jobid):
    return 29500 + int(jobid) % 2000



def alive(pid):
    """True while `pid` runs: an exited process its parent has not reaped yet (a zombie) is gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"

class SlurmLaunch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("PTRUN_BIN", PTRUN), ("FAKE_WORKER", FAKE_WORKER)):
            if not path or not os.access(path, os.X_OK):
                raise unittest.SkipTest(f"{name} is not set to an executable (run through ctest)")
        if not shutil.which("ip"):
            raise unittest.SkipTest("needs iproute2 (the ip command)")
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: network namespaces and SLURM daemons run as root")
        tc.reap_stale()
        cls.work = Path(tempfile.mkdtemp(prefix="ptrun-slurm-launch."))
        cls.work.chmod(0o755)
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        # A private home (srun passes the environment on): the SLURM default rendezvous key
        # (~/.ptrun/rdzv-key) is created there, not in the real home.
        cls.home = cls.work / "home"
        cls.home.mkdir()
        cls.addClassCleanup(tc.ENV.__setitem__, "HOME", tc.ENV.get("HOME", "/root"))
        tc.ENV["HOME"] = str(cls.home)
        cls.daemon_pids = []
        cls.addClassCleanup(cls._down)
        p = tc.cluster("up", NODES, check=False, timeout=tc.UP_TIMEOUT)
        if p.returncode == 77:
            raise unittest.SkipTest((p.stderr.strip().splitlines() or ["cluster.sh up: exit 77"])[-1])
        if p.returncode != 0:
            raise AssertionError(f"cluster.sh up {NODES} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
        cls.daemon_pids = [int(f.read_text().strip()) for f in (tc.STATE_DIR / "pids").iterdir()]
        cls.torch = has_torch()

    @classmethod
    def _down(cls):
        tc.cluster("down")
        left = tc.leftovers(cls.daemon_pids)
        if left:
            raise AssertionError(f"cluster.sh down left behind: {left}")

    # ---- helpers -------------------------------------------------------------------------------------

    def setUp(self):
        self.out = Path(tempfile.mkdtemp(prefix="out.", dir=self.work))
        self.out.chmod(0o777)

    def slurm(self, *args, check=True, timeout=tc.CMD_TIMEOUT):
        return tc.cluster("run", *args, cwd=self.work, check=check, timeout=timeout)

    def need_torch(self):
        if not self.torch:
            self.skipTest("needs /usr/bin/python3 with torch (the store worker is a torch TCPStore client)")

    def need_multi_node(self):
        probe = subprocess.run([PTRUN, "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                "127.0.0.1:1", "--slurm-mode", "off", "--explain", "x"],
                               capture_output=True, text=True, timeout=10)
        if "not supported" in probe.stderr:
            self.skipTest("needs multi-node rendezvous (issue 4)")

    def script(self, body):
        path = self.out / "job.sh"
        # the store worker needs Debian's python3 (with torch), whatever python3 comes first on PATH
        path.write_text("#!/bin/bash\nexport PYTHON_EXEC=/usr/bin/python3\n" + body + "\n")
        path.chmod(0o755)
        return path

    def sbatch_wait(self, body, *sbatch_args):
        """Runs a batch job to its end; returns (job id, its output)."""
        p = self.slurm("sbatch", "--wait", "--parsable", "-o", str(self.out / "job-%j.out"), *sbatch_args,
                       str(self.script(body)), check=False, timeout=JOB_TIMEOUT)
        jobid = p.stdout.strip().split(";")[0]
        log = self.out / f"job-{jobid}.out"
        text = log.read_text(errors="replace") if log.exists() else ""
        self.assertEqual(p.returncode, 0, f"sbatch {' '.join(sbatch_args)} -> {p.returncode}\n{p.stderr}\n"
                                          f"---- job output\n{text}")
        return jobid, text

    def dumps(self, expect):
        files = sorted(self.out.glob("rank.*.json"))
        self.assertEqual(len(files), expect, [f.name for f in files])
        return {int(json.loads(f.read_text())["env"]["RANK"]): json.loads(f.read_text()) for f in files}

    def check_common(self, d, jobid, world):
        e = d["env"]
        self.assertEqual(e["WORLD_SIZE"], str(world))
        self.assertEqual(e["ROLE_WORLD_SIZE"], str(world))
        self.assertEqual(e["ROLE_RANK"], e["RANK"])
        self.assertEqual(e["TORCHELASTIC_RUN_ID"], f"slurm-{jobid}.0")
        self.assertEqual(e["TORCHELASTIC_RESTART_COUNT"], "0")
        self.assertEqual(e["TORCHELASTIC_USE_AGENT_STORE"], "True")
        self.assertEqual(d["hostname"], e["SLURMD_NODENAME"])

    def running(self, jobid, comm, count):
        """Waits (bounded) until `count` processes named comm run in job `jobid`; returns {pid: netns}."""
        found = tc.wait_until(lambda: len(tc.job_processes(jobid, comm)) >= count and tc.job_processes(jobid, comm),
                              timeout=60)
        self.assertTrue(found, f"job {jobid}: {comm} x{count} never ran: {tc.job_processes(jobid, comm)}\n"
                        + self.slurm("squeue").stdout)
        return found

    def submit(self, body, *sbatch_args):
        p = self.slurm("sbatch", "--parsable", "-o", str(self.out / "job-%j.out"), *sbatch_args,
                       str(self.script(body)))
        jobid = p.stdout.strip().split(";")[0]
        self.assertRegex(jobid, r"^\d+$")
        self.addCleanup(self.slurm, "scancel", jobid, check=False)
        return jobid

    # ---- tests ---------------------------------------------------------------------------------------

    @tc.dump_logs_on_failure
    def test_per_rank_mode_needs_no_flag(self):
        self.need_torch()
        t0 = time.monotonic()
        jobid, log = self.sbatch_wait(f"srun {PTRUN} {STORE_WORKER} {self.out}", "-N2", "--ntasks-per-node=2")
        print(f"\n[per-rank job, 4 tasks: {time.monotonic() - t0:.1f} s]", file=sys.stderr)
        ranks = self.dumps(4)
        self.assertEqual(sorted(ranks), [0, 1, 2, 3], log)
        hosts = {r: f"node{r // 2 + 1}" for r in range(4)}   # block distribution: 0,1 on node1
        for r, d in ranks.items():
            with self.subTest(rank=r):
                e = d["env"]
                self.check_common(d, jobid, 4)
                self.assertEqual(d["hostname"], hosts[r])
                self.assertEqual(e["SLURM_PROCID"], str(r))
                self.assertEqual(e["LOCAL_RANK"], e["SLURM_LOCALID"])
                self.assertEqual(e["LOCAL_RANK"], str(r % 2))
                self.assertEqual(e["LOCAL_WORLD_SIZE"], "2")
                self.assertEqual(e["GROUP_RANK"], str(r // 2))
                self.assertEqual(e["GROUP_WORLD_SIZE"], "2")
                self.assertEqual(e["MASTER_ADDR"], "node1")
                self.assertEqual(e["MASTER_PORT"], str(derived_port(jobid)))
                self.assertEqual(d["peers"], {str(k): v for k, v in hosts.items()})

    @tc.dump_logs_on_failure
    def test_per_rank_store_outlives_the_first_rank(self):
        # the worker beside the store ends first; the other ranks use the store after it is gone
        self.need_torch()
        jobid, log = self.sbatch_wait(f"srun {PTRUN} {STORE_WORKER} {self.out} --host-first",
                                      "-N2", "--ntasks-per-node=2")
        self.assertEqual(sorted(self.dumps(4)), [0, 1, 2, 3], log)
        self.assertIn("keeping the store up until the other 3 ranks", log)

    @tc.dump_logs_on_failure
    def test_per_node_mode_on_one_node(self):
        self.need_torch()
        jobid, log = self.sbatch_wait(f"srun {PTRUN} --nproc-per-node 2 {STORE_WORKER} {self.out}",
                                      "-N1", "--ntasks-per-node=1")
        ranks = self.dumps(2)
        self.assertEqual(sorted(ranks), [0, 1], log)
        node = ranks[0]["env"]["SLURMD_NODENAME"]
        for r, d in ranks.items():
            with self.subTest(rank=r):
                e = d["env"]
                self.check_common(d, jobid, 2)
                self.assertEqual(e["SLURMD_NODENAME"], node)
                self.assertEqual(e["LOCAL_RANK"], str(r))
                self.assertEqual(e["LOCAL_WORLD_SIZE"], "2")
                self.assertEqual(e["GROUP_RANK"], "0")
                self.assertEqual(e["GROUP_WORLD_SIZE"], "1")
                self.assertEqual(e["MASTER_PORT"], str(derived_port(jobid)))
                self.assertEqual(d["peers"], {"0": node, "1": node})

    @tc.dump_logs_on_failure
    def test_workers_per_node_are_the_gpus_slurm_gave(self):
        self.need_torch()
        jobid, log = self.sbatch_wait(f"srun {PTRUN} {STORE_WORKER} {self.out}", "-N1", "--ntasks-per-node=1",
                                      f"--gpus-per-node={tc.GPUS}")
        ranks = self.dumps(tc.GPUS)
        for r, d in ranks.items():
            self.check_common(d, jobid, tc.GPUS)
            self.assertEqual(d["env"]["LOCAL_WORLD_SIZE"], str(tc.GPUS))
            self.assertEqual(d["env"]["CUDA_VISIBLE_DEVICES"], ",".join(map(str, range(tc.GPUS))))

    @tc.dump_logs_on_failure
    def test_explain_inside_srun(self):
        out = self.slurm("srun", "-N2", "--ntasks-per-node=2", PTRUN, "--explain", "train.py").stdout
        self.assertEqual(len(re.findall(r"^mode +one task per rank", out, re.M)), 4, out)
        self.assertEqual(len(re.findall(r"^rank +\d+ +\(SLURM_PROCID\)$", out, re.M)), 4, out)
        self.assertEqual(sorted(re.findall(r"^rank +(\d+)", out, re.M)), ["0", "1", "2", "3"], out)
        out = self.slurm("srun", "-N1", "-n1", PTRUN, "--explain", "train.py").stdout
        self.assertRegex(out, r"nodes +1:1 +\(SLURM_STEP_NUM_NODES\)")
        self.assertRegex(out, r"rdzv endpoint +node\d:\d+ +\(first host of SLURM_STEP_NODELIST")
        self.assertRegex(out, r"run id +slurm-\d+\.\d+ +\(SLURM_JOB_ID\.SLURM_STEP_ID\)")

    @tc.dump_logs_on_failure
    def test_bad_slurm_value_is_a_usage_error(self):
        p = self.slurm("srun", "-N1", "-n1", "--export=ALL,PTRUN_SLURM_PORT=99999", PTRUN, FAKE_WORKER, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("PTRUN_SLURM_PORT='99999'", p.stderr)

    def scancel_leaves_no_worker(self, ptrun_args, workers, agents, *sbatch_args):
        jobid = self.submit(f"srun {PTRUN} {ptrun_args} {FAKE_WORKER} --hang", *sbatch_args)
        running = self.running(jobid, "fake_worker", workers)
        self.assertEqual(set(running.values()), {f"{tc.PREFIX}h1", f"{tc.PREFIX}h2"})
        ptruns = self.running(jobid, "ptrun", agents)
        t0 = time.monotonic()
        self.slurm("scancel", jobid)
        gone = tc.wait_until(lambda: not tc.job_processes(jobid, "fake_worker") and
                             not tc.job_processes(jobid, "ptrun"), timeout=30)
        print(f"\n[scancel -> ptrun and workers gone: {time.monotonic() - t0:.2f} s]", file=sys.stderr)
        self.assertTrue(gone, f"after scancel: workers {tc.job_processes(jobid, 'fake_worker')}, "
                              f"ptrun {tc.job_processes(jobid, 'ptrun')}")
        for pid in list(running) + list(ptruns):
            self.assertFalse(alive(pid), f"pid {pid} survived scancel")

    @tc.dump_logs_on_failure
    def test_scancel_leaves_no_worker_on_any_node_per_rank(self):
        self.scancel_leaves_no_worker("", 4, 4, "-N2", "--ntasks-per-node=2")

    def test_scancel_leaves_no_worker_on_any_node_per_node(self):
        self.need_multi_node()
        tc.dump_logs_on_failure(SlurmLaunch.scancel_leaves_no_worker)(
            self, "--nproc-per-node 2", 4, 2, "-N2", "--ntasks-per-node=1")

    def usr1_reaches_every_worker(self, workers, ptrun_args, *sbatch_args):
        # what sbatch --signal=USR1@60 sends before the time limit, sent now: every worker exits 42 on USR1
        jobid = self.submit(f"srun {PTRUN} {ptrun_args} {FAKE_WORKER} --hang --usr1-exit 42; "
                            f"echo $? > {self.out}/srun.rc", *sbatch_args, "--signal=USR1@60")
        self.running(jobid, "fake_worker", workers)
        self.slurm("scancel", "--signal=USR1", jobid)
        rc = self.out / "srun.rc"
        self.assertTrue(tc.wait_until(rc.exists, timeout=30), "srun did not end after USR1")
        log = (self.out / f"job-{jobid}.out").read_text(errors="replace")
        self.assertEqual(tc.wait_until(lambda: rc.read_text().strip(), timeout=5), "42", log)
        self.assertNotIn("stopping the workers", log)   # USR1 is forwarded, not a stop

    @tc.dump_logs_on_failure
    def test_usr1_reaches_every_worker_per_rank(self):
        self.usr1_reaches_every_worker(4, "", "-N2", "--ntasks-per-node=2")

    @tc.dump_logs_on_failure
    def test_usr1_reaches_every_worker_per_node(self):
        self.usr1_reaches_every_worker(2, "--nproc-per-node 2", "-N1", "--ntasks-per-node=1")

    def test_two_nodes_one_task_each_gives_four_ranks(self):
        self.need_torch()
        self.need_multi_node()
        self.two_nodes_one_task_each()

    @tc.dump_logs_on_failure
    def two_nodes_one_task_each(self):
        jobid, log = self.sbatch_wait(f"srun {PTRUN} --nproc-per-node 2 {STORE_WORKER} {self.out}",
                                      "-N2", "--ntasks-per-node=1")
        ranks = self.dumps(4)
        self.assertEqual(sorted(ranks), [0, 1, 2, 3], log)
        # Both agents authenticated the rendezvous with the default key the home directory shares.
        key = self.home / ".ptrun" / "rdzv-key"
        self.assertEqual(log.count(f"rendezvous values are authenticated with the key in {key} "
                                   f"(the SLURM default, bound to job {jobid})"), 2, log)
        self.assertEqual(key.stat().st_mode & 0o777, 0o600)
        host_of = {str(r): d["hostname"] for r, d in ranks.items()}
        self.assertEqual(sorted(set(host_of.values())), ["node1", "node2"])
        addr = {d["env"]["MASTER_ADDR"] + ":" + d["env"]["MASTER_PORT"] for d in ranks.values()}
        self.assertEqual(len(addr), 1, addr)
        for r, d in ranks.items():
            with self.subTest(rank=r):
                e = d["env"]
                self.check_common(d, jobid, 4)
                self.assertEqual(e["LOCAL_WORLD_SIZE"], "2")
                self.assertEqual(e["GROUP_WORLD_SIZE"], "2")
                self.assertEqual(int(e["RANK"]), int(e["GROUP_RANK"]) * 2 + int(e["LOCAL_RANK"]))
                self.assertEqual(host_of[str(r ^ 1)], d["hostname"])  # both ranks of a group on one node
                self.assertEqual(d["peers"], host_of)


if __name__ == "__main__":
    tc.main()
