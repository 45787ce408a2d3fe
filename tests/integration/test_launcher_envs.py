"""Zero configuration under launchers other than SLURM (issue 28): each environment's variables, as
its own documentation describes them (tests/unit/schedulers/env_fixtures.hpp cites the sources),
through `ptrun --explain` and a real launch of rank_info on this host; hostile values are usage
errors (exit 2) naming the variable. Real Open MPI: test_mpirun.py."""
import os
import re
import subprocess
import unittest

from harness import DEADLINE, FAKE_WORKER, PTRUN, PtrunTestCase, _env, free_port, run_ptrun

RANK_INFO = os.environ.get("RANK_INFO", "build/examples/rank_info")
LINE = re.compile(r"rank (\S+) of (\S+) \(local rank (\S+) of (\S+), node (\S+)\) on \S+, pid \d+; "
                  r"store (\S+):(\S+); restart \S+")

# Variables of any launcher this test's own environment might carry: each test sets its own.
LAUNCHER_VARS = ("SLURM_JOB_ID", "SLURM_PROCID", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                 "FLUX_JOB_ID", "FLUX_TASK_RANK", "PBS_JOBID", "JSM_NAMESPACE_SIZE",
                 "KUBERNETES_SERVICE_HOST", "MASTER_ADDR", "MASTER_PORT", "PET_NNODES",
                 "PET_NODE_RANK", "PET_LAUNCHER_ENV", "CUDA_VISIBLE_DEVICES")


def explain(env, *args):
    return run_ptrun(["--explain", *args, RANK_INFO], env=env, unset=LAUNCHER_VARS)


def rows(text):
    """--explain's table as {what: (value, source)}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+(?: \S+)*?)  +(.*?)  +\((.*)\)$", line)
        if m:
            out[m.group(1)] = (m.group(2).strip(), m.group(3))
    return out


class LaunchedTogether(PtrunTestCase):
    """Starts one ptrun per environment in `envs` together (the tasks of one job on this host)
    and returns their outputs once all have ended, within the deadline."""

    def launch_all(self, envs, *args, program=(RANK_INFO,)):
        procs = []
        for env in envs:
            procs.append(subprocess.Popen([PTRUN, *args, *program], env=_env(env, LAUNCHER_VARS),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        self.leftover += [p.pid for p in procs]
        results = []
        for p in procs:
            out, err = p.communicate(timeout=DEADLINE)
            results.append((p.returncode, out, err))
        return results

    def lines(self, results):
        found = []
        for code, out, err in results:
            self.assertEqual(code, 0, err)
            found += [LINE.search(line).groups() for line in out.splitlines() if LINE.search(line)]
        return sorted(found)


class Flux(LaunchedTogether):
    @staticmethod
    def task(rank, port, size=2, nnodes=1):
        # flux-environment(7): flux run -N1 -n2 ptrun rank_info
        return {"FLUX_JOB_ID": "\u0192" + "2hY3s5oW", "FLUX_JOB_SIZE": str(size),
                "FLUX_JOB_NNODES": str(nnodes), "FLUX_TASK_RANK": str(rank),
                "FLUX_TASK_LOCAL_ID": str(rank), "FLUX_URI": "local:///tmp/flux/local-0",
                "MASTER_PORT": str(port)}

    def test_explain_names_flux_and_each_variable(self):
        res = explain(self.task(1, 29999))
        self.assertEqual(res.returncode, 0, res.stderr)
        table = rows(res.stdout)
        self.assertEqual(table["mode"], ("one task per rank (Flux)", "FLUX_JOB_SIZE=2 > FLUX_JOB_NNODES=1"))
        self.assertEqual(table["launch env"], ("Flux", "FLUX_JOB_ID"))
        self.assertEqual(table["rank"], ("1", "FLUX_TASK_RANK"))
        self.assertEqual(table["local rank"], ("1", "FLUX_TASK_LOCAL_ID"))
        self.assertEqual(table["world size"], ("2", "FLUX_JOB_SIZE"))
        self.assertEqual(table["nodes"], ("1", "FLUX_JOB_NNODES"))
        self.assertIn("127.0.0.1:29999", table["store"][0])

    def test_two_tasks_run_rank_info_as_ranks_0_and_1(self):
        port = free_port()
        results = self.launch_all([self.task(0, port), self.task(1, port)])
        self.assertEqual(self.lines(results), [
            ("0", "2", "0", "2", "0", "127.0.0.1", str(port)),
            ("1", "2", "1", "2", "0", "127.0.0.1", str(port))])

    def test_a_failing_task_reports_its_workers_rank_and_local_rank(self):
        # flux run -N1 -n2: task 1's worker fails; its ptrun's report names the worker's RANK and
        # LOCAL_RANK (FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID), not ptrun's index of its one worker.
        port = free_port()
        worker = (FAKE_WORKER, "--fail-rank", "1", "--exit", "7", "--others-succeed")
        results = self.launch_all([self.task(0, port), self.task(1, port)], program=worker)
        code, out, err = results[1]
        self.assertEqual(code, 7, out + err)
        self.assertRegex(out + err, r"rank +: 1 \(local rank 1\)")
        self.assertNotIn("local rank 0", out + err)

    def test_hostile_values_are_usage_errors_naming_the_variable(self):
        for var, value, expect in (("FLUX_TASK_RANK", "2", "FLUX_TASK_RANK=2"),
                                   ("FLUX_JOB_SIZE", "1e9", "FLUX_JOB_SIZE='1e9'"),
                                   ("FLUX_JOB_NNODES", "0", "FLUX_JOB_NNODES='0'"),
                                   ("MASTER_ADDR", "a b", "MASTER_ADDR='a b'"),
                                   ("MASTER_PORT", "65536", "MASTER_PORT='65536'")):
            with self.subTest(var=var):
                env = self.task(0, 29999)
                env[var] = value
                res = explain(env)
                self.assertEqual(res.returncode, 2, res.stdout)
                self.assertIn(expect, res.stderr)
                self.assertIn("--launcher-env off", res.stderr)

    def test_several_nodes_without_a_master_are_refused(self):
        res = explain(self.task(0, 29999, size=4, nnodes=2))
        self.assertEqual(res.returncode, 2)
        self.assertIn("MASTER_ADDR", res.stderr)


class Pbs(LaunchedTogether):
    def nodefile(self, text):
        path = os.path.join(self.dir, f"aux.{len(os.listdir(self.dir))}.nodes")
        with open(path, "w") as f:
            f.write(text)
        return path

    def env(self, nodefile, nodenum="0"):
        # qsub(1) and pbsdsh(1): pbsdsh -u ptrun --nproc-per-node 2 rank_info
        env = {"PBS_JOBID": "1234.pbs-server", "PBS_NODEFILE": nodefile,
               "PBS_ENVIRONMENT": "PBS_BATCH", "PBS_TASKNUM": "1"}
        if nodenum is not None:
            env["PBS_NODENUM"] = nodenum
        return env

    def test_explain_names_pbs_and_its_node_file(self):
        res = explain(self.env(self.nodefile("cn01\ncn01\ncn02\ncn02\n"), "1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        table = rows(res.stdout)
        # pbsdsh -u's task: its node index shows it is its node's one ptrun.
        self.assertEqual(table["mode"], ("one agent per node (PBS)", "PBS_NODENUM: one ptrun per node"))
        self.assertEqual(table["nodes"], ("2:2", "hosts in PBS_NODEFILE"))
        self.assertEqual(table["node rank"], ("1", "PBS_NODENUM"))
        self.assertTrue(table["store"][0].startswith("cn01:"), table)
        self.assertIn("first host of PBS_NODEFILE", table["store"][1])
        self.assertEqual(table["run id"], ("pbs-1234.pbs-server", "PBS_JOBID"))

    def test_explain_in_the_job_script_of_one_node(self):
        res = explain(self.env(self.nodefile("cn01\ncn01\n"), None))
        self.assertEqual(res.returncode, 0, res.stderr)
        table = rows(res.stdout)
        self.assertEqual(table["mode"], ("one agent per node (PBS)",
                                         "the job script (no PBS_NODENUM): one ptrun per node"))
        self.assertEqual(table["node rank"], ("0", "the job script: this node only"))

    def test_one_node_job_runs_rank_info(self):
        results = self.launch_all([self.env(self.nodefile("localhost\nlocalhost\n"))],
                                  "--nproc-per-node", "2")
        got = self.lines(results)
        self.assertEqual([g[:5] for g in got], [("0", "2", "0", "2", "0"), ("1", "2", "1", "2", "0")])

    def test_hostile_node_files_and_values(self):
        cases = [(self.env(self.nodefile("")), "names no host"),
                 (self.env(self.nodefile("cn01\ncn\x1b]0;pwned\x07\n")), "line 2"),
                 (self.env(os.path.join(self.dir, "missing")), "cannot open the host file"),
                 (self.env(self.dir), "not a regular file"),
                 (self.env(self.nodefile("cn01\n"), "1"), "PBS_NODENUM=1"),
                 (self.env(self.nodefile("cn01\ncn02\n"), None), "pbsdsh -u ptrun")]
        for env, expect in cases:
            with self.subTest(expect=expect):
                res = explain(env)
                self.assertEqual(res.returncode, 2, res.stdout)
                self.assertIn(expect, res.stderr)
                self.assertNotIn("\x1b", res.stderr)

    def test_a_huge_node_file_is_refused_by_size(self):
        path = os.path.join(self.dir, "huge")
        with open(path, "wb") as f:
            f.truncate(65 << 20)
        res = explain(self.env(path))
        self.assertEqual(res.returncode, 2)
        self.assertIn("larger than 64 MiB", res.stderr)


class LsfJsrun(LaunchedTogether):
    @staticmethod
    def task(rank, port, hosts="localhost 2"):
        # jsrun -n 2 -r 2 ptrun rank_info (JSM_NAMESPACE_*), LSB_MCPU_HOSTS from LSF
        return {"JSM_NAMESPACE_SIZE": "2", "JSM_NAMESPACE_RANK": str(rank),
                "JSM_NAMESPACE_LOCAL_SIZE": "2", "JSM_NAMESPACE_LOCAL_RANK": str(rank),
                "LSB_JOBID": "4242", "LSB_MCPU_HOSTS": hosts, "MASTER_PORT": str(port)}

    def test_explain_names_lsf_and_its_hosts(self):
        env = self.task(1, 29999, hosts="batch1 1 c01 2")
        res = explain(env)
        self.assertEqual(res.returncode, 0, res.stderr)
        table = rows(res.stdout)
        self.assertEqual(table["mode"][0], "one task per rank (LSF)")
        self.assertEqual(table["rank"], ("1", "JSM_NAMESPACE_RANK"))
        self.assertEqual(table["local world size"], ("2", "JSM_NAMESPACE_LOCAL_SIZE"))
        self.assertIn("c01:29999", table["store"][0])
        self.assertIn("second host of LSB_MCPU_HOSTS", table["store"][1])

    def test_two_tasks_run_rank_info(self):
        port = free_port()
        got = self.lines(self.launch_all([self.task(0, port), self.task(1, port)]))
        self.assertEqual(got, [("0", "2", "0", "2", "0", "localhost", str(port)),
                               ("1", "2", "1", "2", "0", "localhost", str(port))])

    def test_hostile_values(self):
        for var, value, expect in (("LSB_MCPU_HOSTS", "c01 4 c02", "LSB_MCPU_HOSTS='c01 4 c02'"),
                                   ("LSB_MCPU_HOSTS", "c01 0", "slot count '0'"),
                                   ("JSM_NAMESPACE_LOCAL_RANK", "5", "JSM_NAMESPACE_LOCAL_RANK=5"),
                                   ("JSM_NAMESPACE_SIZE", "-3", "JSM_NAMESPACE_SIZE='-3'")):
            with self.subTest(var=var, value=value):
                env = self.task(0, 29999)
                env[var] = value
                res = explain(env)
                self.assertEqual(res.returncode, 2, res.stdout)
                self.assertIn(expect, res.stderr)


class Kubernetes(LaunchedTogether):
    @staticmethod
    def pod(index, port):
        # An indexed Job of 2 completions (JOB_COMPLETION_INDEX), PET_NNODES and MASTER_ADDR
        # from the pod template, as kubernetes.io's "Job with Pod-to-Pod Communication" sets up.
        return {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "JOB_COMPLETION_INDEX": str(index),
                "PET_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}

    def test_explain_kubeflow_pytorchjob(self):
        env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "MASTER_ADDR": "pytorch-dist-master-0",
               "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "2", "PET_NNODES": "3",
               "PET_NODE_RANK": "2", "PET_NPROC_PER_NODE": "2"}
        res = explain(env)
        self.assertEqual(res.returncode, 0, res.stderr)
        table = rows(res.stdout)
        self.assertEqual(table["mode"][0], "one agent per node (Kubernetes)")
        self.assertEqual(table["nodes"], ("3:3", "env PET_NNODES"))
        self.assertEqual(table["workers per node"], ("2", "env PET_NPROC_PER_NODE"))
        self.assertEqual(table["store"][0], "pytorch-dist-master-0:23456 (hosted elsewhere)")
        self.assertEqual(table["store"][1], "MASTER_ADDR, MASTER_PORT")

    def test_explain_jobset_names_pod_zero(self):
        env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "JOB_COMPLETION_INDEX": "1",
               "PET_NNODES": "2", "JOBSET_NAME": "js", "REPLICATED_JOB_NAME": "workers"}
        res = explain(env)
        self.assertEqual(res.returncode, 0, res.stderr)
        table = rows(res.stdout)
        self.assertEqual(table["node rank"], ("1", "JOB_COMPLETION_INDEX"))
        self.assertTrue(table["store"][0].startswith("js-workers-0-0.js:"), table)

    def test_two_pods_run_rank_info(self):
        port = free_port()
        got = self.lines(self.launch_all([self.pod(0, port), self.pod(1, port)]))
        self.assertEqual(got, [("0", "2", "0", "1", "0", "127.0.0.1", str(port)),
                               ("1", "2", "0", "1", "1", "127.0.0.1", str(port))])

    def test_hostile_values(self):
        for var, value, expect in (("JOB_COMPLETION_INDEX", "2", "JOB_COMPLETION_INDEX=2"),
                                   ("PET_NNODES", "two", "PET_NNODES='two'"),
                                   ("MASTER_ADDR", "x" * 300, "not a host name")):
            with self.subTest(var=var):
                env = self.pod(0, 29999)
                env[var] = value
                res = explain(env)
                self.assertEqual(res.returncode, 2, res.stdout)
                self.assertIn(expect, res.stderr)


class Choice(PtrunTestCase):
    def test_launcher_env_off_and_forced(self):
        env = Flux.task(0, 29999)
        res = explain(env, "--launcher-env", "off")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(rows(res.stdout)["launch env"], ("none", "flag --launcher-env"))
        env["PET_LAUNCHER_ENV"] = "pbs"
        res = explain(env)
        self.assertEqual(res.returncode, 2)
        self.assertIn("PBS_NODEFILE unset", res.stderr)
        res = explain({}, "--launcher-env", "slurmm")
        self.assertEqual(res.returncode, 2)
        self.assertIn("--launcher-env 'slurmm'", res.stderr)

    def test_nothing_found_says_so(self):
        res = explain({})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(rows(res.stdout)["launch env"][0], "none")


if __name__ == "__main__":
    unittest.main()
