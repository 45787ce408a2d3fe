#!/usr/bin/python3
"""ptrun under a real Open MPI mpirun across two namespaced hosts (issue 28). mpirun runs on node1
and reaches node2 through an rsh agent that enters node2's namespace (no ssh); ptrun reads Open MPI's
variables alone (plus MASTER_ADDR: Open MPI gives its processes no host list). One agent per node
(`mpirun -np 2 --map-by ppr:1:node ptrun --nproc-per-node 2 W`) and one task per rank (`mpirun -np 4
--map-by ppr:2:node ptrun W`): the workers' RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK, MASTER_ADDR.
Run as root; skips (exit 77) without root, namespaces or mpirun."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from test_netns_hosts import ENV, SCRIPT, argv, down_and_check, main, skip_unless_possible, up  # noqa: E402

import harness as ptrun_harness  # noqa: E402
from harness import read_dumps, wait_gone  # noqa: E402

PTRUN = os.environ.get("PTRUN_BIN", str(HERE.parents[1] / "build/launcher/ptrun"))
FAKE = os.environ.get("FAKE_WORKER", str(HERE.parents[1] / "build/tests/fixtures/fake_worker"))
MPIRUN = shutil.which("mpirun")
DEADLINE = 60

# Open MPI calls the agent as "AGENT [OPTIONS] HOST COMMAND...", COMMAND being a shell command line.
AGENT = """#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
host=$1; shift
case "$host" in node[0-9]*) i=${host#node} ;; *) echo "rsh agent: unknown host $host" >&2; exit 1 ;; esac
exec "%s" exec "$i" sh -c "$*"
"""


class MpirunAcrossHosts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not MPIRUN:
            raise unittest.SkipTest("Open MPI's mpirun is not installed")
        skip_unless_possible()
        cls.agent_dir = tempfile.mkdtemp(prefix="ptrun-rsh-")
        cls.agent = os.path.join(cls.agent_dir, "rsh-agent")
        with open(cls.agent, "w") as f:
            f.write(AGENT % SCRIPT)
        os.chmod(cls.agent, stat.S_IRWXU)
        up(2)

    @classmethod
    def tearDownClass(cls):
        down_and_check()
        shutil.rmtree(cls.agent_dir, True)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-mpi-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def mpirun(self, np, per_node, args):
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp",
               "--mca", "plm_rsh_agent", self.agent, "--mca", "plm_rsh_no_tree_spawn", "1",
               "--host", f"node1:{per_node},node2:{per_node}", "--map-by", f"ppr:{per_node}:node",
               "-np", str(np), "-x", "MASTER_ADDR=node1", "-x", "MASTER_PORT=29710",
               "-x", f"TMPDIR={ptrun_harness.SCRATCH}", PTRUN, *args]
        env = {k: v for k, v in ENV.items() if not k.startswith(("SLURM_", "PET_", "OMPI_", "PMI"))}
        # mpirun on node1 (its namespace and hostname); orted on node2 through the agent
        proc = subprocess.run(argv("exec", 1, *cmd), env=env, capture_output=True, text=True,
                              timeout=DEADLINE, start_new_session=True)
        return proc

    def check_dumps(self, expect_local_size):
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            with self.subTest(rank=rank):
                self.assertEqual(env["WORLD_SIZE"], "4")
                self.assertEqual(env["LOCAL_WORLD_SIZE"], str(expect_local_size))
                self.assertEqual(env["GROUP_WORLD_SIZE"], "2")
                self.assertEqual(env["GROUP_RANK"], str(rank // 2))
                self.assertEqual(env["LOCAL_RANK"], str(rank % 2))
                self.assertEqual(env["MASTER_ADDR"], "node1")
                self.assertEqual(env["MASTER_PORT"], "29710")
        self.assertEqual(wait_gone([d["pid"] for d in dumps.values()], 10), [])
        return dumps

    def test_one_agent_per_node(self):
        res = self.mpirun(2, 1, ["--nproc-per-node", "2", FAKE, "--dump", self.dir])
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.check_dumps(2)

    def test_one_task_per_rank(self):
        res = self.mpirun(4, 2, [FAKE, "--dump", self.dir])
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.check_dumps(2)

    def test_a_failing_rank_on_the_second_host_ends_the_job(self):
        res = self.mpirun(4, 2, [FAKE, "--dump", self.dir, "--fail-rank", "3", "--exit", "9"])
        self.assertEqual(res.returncode, 9, res.stdout + res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(wait_gone([d["pid"] for d in dumps.values()], 10), [])


if __name__ == "__main__":
    main()
