"""ptrun under real MPI launchers (issue 28): Open MPI's mpirun and, where Debian's mpich is
installed, MPICH's Hydra (mpiexec.hydra); no ptrun flag says it runs under MPI. One task per rank
(`mpirun -np 4 ptrun W`) and one agent per task (`mpirun -np 2 ptrun --nproc-per-node 2 W`) on this
host: the workers' RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK and MASTER_ADDR; a failing rank ends the
job with its exit code and leaves no process behind."""
import os
import re
import shutil
import subprocess
import time
import unittest

from harness import DEADLINE, FAKE_WORKER, PTRUN, PtrunTestCase, _env, free_port, pid_alive, read_dumps

MPIRUN = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
HYDRA = shutil.which("mpiexec.hydra")
# What this test's own environment might carry of another launcher (a CI inside SLURM, ...).
UNSET = ("SLURM_JOB_ID", "SLURM_PROCID", "FLUX_JOB_ID", "PBS_JOBID", "JSM_NAMESPACE_SIZE",
         "KUBERNETES_SERVICE_HOST", "MASTER_ADDR", "MASTER_PORT", "PET_LAUNCHER_ENV",
         "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "CUDA_VISIBLE_DEVICES")


def mpirun(np, port, args, timeout=DEADLINE, extra_env=None):
    """mpirun -np NP ptrun ARGS on this host; MASTER_PORT passed with -x (a free port)."""
    cmd = [MPIRUN, "--oversubscribe", "--mca", "btl", "self,tcp", "-np", str(np),
           "-x", f"MASTER_PORT={port}"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = _env({"OMPI_MCA_rmaps_base_oversubscribe": "1", **(extra_env or {})}, UNSET)
    return subprocess.run([*cmd, PTRUN, *args], env=env, capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)


def hydra(np, port, args, timeout=DEADLINE):
    """mpiexec.hydra -n NP ptrun ARGS on this host (processes forked, no ssh)."""
    cmd = [HYDRA, "-launcher", "fork", "-n", str(np), "-genv", "MASTER_PORT", str(port)]
    return subprocess.run([*cmd, PTRUN, *args], env=_env({}, UNSET), capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)


# Rank 1 tells ranks 0 and 2 its pid (a FIFO each) and raises; they wait for its exit (a pidfd)
# and fail as a collective does when a peer is gone, once rank 1's ptrun has claimed the root cause
# in the store (so that the test does not race the claims: a later failure may come any time).
PEER_FAILS = """import os, select, sys
sys.path.insert(0, sys.argv[2])
from raw_store import RawStore
rank, out = int(os.environ["RANK"]), sys.argv[1]
if rank == 1:
    for other in (0, 2):
        with open(os.path.join(out, f"to{other}"), "w") as f:
            f.write(str(os.getpid()))
    raise ValueError("bad batch on rank 1")
with open(os.path.join(out, f"to{rank}")) as f:
    peer = int(f.read())
ready, _, _ = select.select([os.pidfd_open(peer)], [], [], 60)
store = RawStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), timeout=60)
store.wait([f"ptrun/exit/{os.environ['TORCHELASTIC_RUN_ID']}/root_cause"])
raise ConnectionError("Connection closed by peer" if ready else "rank 1 did not end")
"""


class MpiCases:
    """The cases every MPI launcher passes; `launch(np, port, args)` runs ptrun under it, VARIABLES
    are the rank, local rank and size variables it sets, OTHERS what the other ranks do when one
    fails."""
    def assert_gone(self, pids):
        end = time.monotonic() + 10
        while any(pid_alive(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.05)
        self.assertFalse([p for p in pids if pid_alive(p)], "workers outlived mpirun")

    def test_one_task_per_rank(self):
        port = free_port()
        res = self.launch(4, port, [FAKE_WORKER, "--dump", self.dir])
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            with self.subTest(rank=rank):
                self.assertEqual(env["RANK"], str(rank))
                self.assertEqual(env["LOCAL_RANK"], str(rank))
                self.assertEqual(env["WORLD_SIZE"], "4")
                self.assertEqual(env["LOCAL_WORLD_SIZE"], "4")
                self.assertEqual(env["GROUP_RANK"], "0")
                self.assertEqual(env["GROUP_WORLD_SIZE"], "1")
                self.assertEqual(env["MASTER_ADDR"], "127.0.0.1")
                self.assertEqual(env["MASTER_PORT"], str(port))
        self.assert_gone([d["pid"] for d in dumps.values()])

    def test_one_agent_per_task_with_nproc_per_node(self):
        port = free_port()
        res = self.launch(2, port, ["--nproc-per-node", "2", FAKE_WORKER, "--dump", self.dir])
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        groups = {}
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            with self.subTest(rank=rank):
                self.assertEqual(env["WORLD_SIZE"], "4")
                self.assertEqual(env["LOCAL_WORLD_SIZE"], "2")
                self.assertEqual(env["GROUP_WORLD_SIZE"], "2")
                self.assertEqual(env["MASTER_ADDR"], "127.0.0.1")
                self.assertEqual(env["MASTER_PORT"], str(port))
                self.assertEqual(int(env["RANK"]), 2 * int(env["GROUP_RANK"]) + int(env["LOCAL_RANK"]))
            groups.setdefault(env["GROUP_RANK"], []).append(env["LOCAL_RANK"])
        self.assertEqual({g: sorted(l) for g, l in groups.items()}, {"0": ["0", "1"], "1": ["0", "1"]})

    def test_a_failing_rank_ends_the_job_with_its_exit_code(self):
        port = free_port()
        res = self.launch(4, port, [FAKE_WORKER, "--dump", self.dir, "--fail-rank", "2", "--exit", "7",
                                    *self.OTHERS])
        self.assertEqual(res.returncode, 7, res.stdout + res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        report = res.stdout + res.stderr  # rank 2's ptrun's failure report, through mpirun
        # The worker's own RANK and LOCAL_RANK (Open MPI's), not ptrun's index of its one worker.
        self.assertEqual(dumps[(2, 0)]["env"]["LOCAL_RANK"], "2")
        self.assertRegex(report, r"rank +: 2 \(local rank 2\)")
        self.assertNotIn("local rank 0", report)
        self.assertRegex(report, r"exit +: exit code 7")
        self.assert_gone([d["pid"] for d in dumps.values()])

    def test_one_root_cause_for_the_job(self):
        # Issue 35.18: rank 1 raises; ranks 0 and 2 fail because it did ("Connection closed by
        # peer"). Each ptrun printed its own "Root cause": the first failure is agreed through
        # the store, and the others point to it.
        script = os.path.join(self.dir, "peer_fails.py")
        with open(script, "w") as f:
            f.write(PEER_FAILS)
        for rank in (0, 2):
            os.mkfifo(os.path.join(self.dir, f"to{rank}"))
        res = self.launch(3, free_port(), [script, self.dir, os.path.dirname(os.path.abspath(__file__))])
        report = res.stdout + res.stderr
        self.assertNotEqual(res.returncode, 0, report)
        self.assertEqual(report.count("Root cause (first failure)"), 1, report)
        self.assertRegex(report, r"Root cause \(first failure\):\n  host +: \S+\n  rank +: 1 ")
        self.assertIn("ValueError: bad batch on rank 1", report)
        # A later failure that ptrun could still report points to rank 1's.
        for later in re.findall(r"root cause +: (.*)", report):
            self.assertRegex(later, r"^worker rank 1 \(local rank 1, pid \d+\) on \S+ failed: exit code "
                                    r"1 \(ValueError: bad batch on rank 1\) \(the first failure")

    def test_explain_names_the_launchers_variables(self):
        port = free_port()
        res = self.launch(2, port, ["--explain", FAKE_WORKER])
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("one task per rank (MPI)", res.stdout)
        for variable in self.VARIABLES:
            self.assertIn(f"({variable})", res.stdout)
        self.assertIn(f"127.0.0.1:{port}", res.stdout)


@unittest.skipUnless(MPIRUN, "Open MPI's mpirun is not installed")
class UnderOpenMpi(MpiCases, PtrunTestCase):
    VARIABLES = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE")
    OTHERS = ()  # the other ranks wait: mpirun ends them when rank 2 fails

    def launch(self, np, port, args):
        return mpirun(np, port, args)

    def test_a_hung_rank_is_named_with_its_own_local_rank(self):
        # Rank 1's ptrun runs one worker, LOCAL_RANK 1: the hang report and the stacks name that,
        # not ptrun's index of its one worker (they said "local rank 0").
        here = os.path.dirname(os.path.abspath(__file__))
        res = mpirun(2, free_port(), ["--hang-timeout", "1", os.path.join(here, "hang_worker.py"), "stuck"],
                     extra_env={"PYTHONPATH": os.path.join(here, "..", "..", "python"),
                                "PYTHON_EXEC": "/usr/bin/python3"})
        report = res.stdout + res.stderr
        self.assertNotEqual(res.returncode, 0, report)
        self.assertRegex(report, r"worker rank 1 \(local rank 1, pid \d+\) is hung: no progress for 1 s")
        self.assertRegex(report, r"first to stop: rank 1 \(local rank 1, pid \d+\)")
        self.assertNotIn("local rank 0", report)


@unittest.skipUnless(HYDRA, "MPICH's mpiexec.hydra is not installed (scripts/install-deps.sh: mpich)")
class UnderHydra(MpiCases, PtrunTestCase):
    VARIABLES = ("PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE")
    # Hydra ends the others only for MPI processes (PMI clients): with plain tasks it waits for
    # every one, then exits with the worst code. The other ranks end by themselves here.
    OTHERS = ("--others-succeed",)

    def launch(self, np, port, args):
        return hydra(np, port, args)

    def test_explain_says_how_a_derived_node_count_came(self):
        # One node because MPI_LOCALNRANKS equals PMI_SIZE: the value first, then how it was told
        # (it read "PMI_SIZE=2 > MPI_LOCALNRANKS = PMI_SIZE=1").
        res = self.launch(2, free_port(), ["--explain", FAKE_WORKER])
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("(PMI_SIZE=2 > 1 (MPI_LOCALNRANKS = PMI_SIZE))\n", res.stdout)
        self.assertIn("(one node: 1 (MPI_LOCALNRANKS = PMI_SIZE))\n", res.stdout)


if __name__ == "__main__":
    unittest.main()
