"""--preload (issue 25), with real PyTorch (PTRUN_TORCH_FLAVOUR: Debian 12's 1.13, or 2.6 in the
Debian 13 root): one zygote per node imports the modules once and every worker of every attempt
is forked from it. A forked worker sees what an exec'd one sees (argv, path, __file__, cwd, its
environment in os.environ and C's environ, its own process group, ptrun as its parent with a
SIGKILL death signal, the same descriptors, rlimits, umask, signal mask and dispositions, the
attempt's cgroup), its own random draws; a DDP job trains to the same losses; a restart forks
from the same zygote; kill -9 of ptrun leaves neither a worker nor the zygote; a preload that
starts a thread is not used, with its reason; one that fails to import stops the job (exit 2)
before any worker starts. Every wait is bounded; no process is left behind."""
import glob
import json
import os
import re
import signal
import subprocess
import unittest

from harness import PTRUN, TorchTestCase, _env, free_port, wait_gone, wait_output
from torch_flavour import FLAVOUR

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "preload_probe.py")
TRAIN = os.path.join(HERE, "torch_ddp_train.py")
DEADLINE = 240
# Differ from run to run whatever the start: paths of the run's directory, ports, the job's tag.
PER_RUN = ("MASTER_PORT", "PTRUN_JOB_TAG", "TORCHELASTIC_ERROR_FILE", "PTRUN_ERROR_SUMMARY_FILE",
           "TORCHELASTIC_RUN_ID", "PTRUN_HEARTBEAT_FILE", "PTRUN_STACK_FILE", "PTRUN_EVENTS_SOCKET")
THREAD_AT_IMPORT = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), " \
                   "name='sleeper', daemon=True).start()\n"


# Rank 1 of attempt 0 kills the zygote (ptrun's oldest child whose command line says --zygote:
# the workers forked from it say so too), then fails.
KILLS_ZYGOTE = """import os, signal, sys
attempt, rank = os.environ["TORCHELASTIC_RESTART_COUNT"], os.environ["RANK"]
sys.stdout.write(f"attempt {attempt} rank {rank} preloaded {'torch' in sys.modules}\\n")
if attempt == "0" and rank == "1":
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = f.read().split(b"\\0")
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"--zygote" in words and int(fields[1]) == os.getppid():
            found.append((int(fields[19]), int(pid)))
    os.kill(min(found)[1], signal.SIGKILL)
    sys.exit(1)
"""


class Preload(TorchTestCase):
    def setUp(self):
        super().setUp()
        self.env = {"PYTHON_EXEC": FLAVOUR.python, "GLOO_SOCKET_IFNAME": "lo", **FLAVOUR.env()}

    def run_ptrun(self, args, timeout=DEADLINE):
        argv = FLAVOUR.command([PTRUN, *args], binds=[self.dir])
        proc = subprocess.run(argv, env=_env(self.env), capture_output=True, text=True,
                              timeout=timeout, cwd=self.dir)
        return proc

    def start(self, args):
        argv = FLAVOUR.command([PTRUN, *args], binds=[self.dir])
        proc = subprocess.Popen(argv, env=_env(self.env), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.dir)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.stderr.close)
        return proc

    def probes(self, out_dir):
        seen = {}
        for path in glob.glob(os.path.join(out_dir, "rank_*_attempt_*.json")):
            rank, attempt = map(int, re.findall(r"\d+", os.path.basename(path)))
            with open(path) as f:
                seen[(rank, attempt)] = json.load(f)
        return seen

    def probe_run(self, name, extra, nproc=2, probe_args=()):
        out = os.path.join(self.dir, name)
        os.mkdir(out)
        proc = self.run_ptrun(["--standalone", "--nproc-per-node", str(nproc), *extra, PROBE,
                               out, *probe_args])
        return proc, self.probes(out)

    def test_a_forked_worker_sees_what_an_execd_one_sees(self):
        plain, execd = self.probe_run("plain", [])
        self.assertEqual(plain.returncode, 0, plain.stderr)
        proc, forked = self.probe_run("forked", ["--preload", "torch"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        ptrun_pid = int(re.search(r"\[ptrun [^:]+:(\d+)\]", proc.stderr).group(1))
        self.assertRegex(proc.stderr, r"preloaded torch in [\d.]+ \S+ \(zygote pid \d+\): "
                                      r"workers are forked from it")
        self.assertEqual(sorted(forked), [(0, 0), (1, 0)])
        for rank in (0, 1):
            a, b = execd[(rank, 0)], forked[(rank, 0)]
            self.assertFalse(a["torch_at_start"])
            self.assertTrue(b["torch_at_start"], "forked from the zygote that imported torch")
            self.assertEqual(b["ppid"], ptrun_pid, "re-parented to ptrun, which reaps it")
            self.assertEqual(b["pgid"], b["pid"], "its own process group")
            self.assertEqual(b["pdeathsig"], signal.SIGKILL)
            self.assertEqual(a["argv"][0], b["argv"][0])
            self.assertEqual(b["argv"][1:], [os.path.join(self.dir, "forked")])
            for key in ("path0", "file", "cwd", "fds", "sum", "threads", "main_module",
                        "pdeathsig", "rlimits", "umask", "signal_mask", "dispositions"):
                self.assertEqual(a[key], b[key], key)
            strip = lambda env: {k: v for k, v in env.items() if k not in PER_RUN}  # noqa: E731
            self.assertEqual(strip(a["environ"]), strip(b["environ"]))
            # C's environ too: with torch 2.6 on Python 3.13 both hold LINES and COLUMNS beyond
            # os.environ (import torch.distributed -> pdb -> rlcompleter -> readline, whose
            # rl_initialize setenv()s them), the forked one because the zygote carries them.
            self.assertEqual(strip(a["c_environ"]), strip(b["c_environ"]))
            self.assertEqual({k: b["c_environ"].get(k) for k in b["environ"]}, b["environ"],
                             "getenv sees os.environ")
            if "ptrun-" in a["cgroup"]:  # contained in a cgroup: the attempt's, never the zygote's
                self.assertIn("ptrun-", b["cgroup"])
                self.assertNotIn("/helpers", b["cgroup"])
        self.assertNotEqual(forked[(0, 0)]["random"], forked[(1, 0)]["random"])

    def test_numpy_draws_differ_across_forked_ranks(self):
        proc, seen = self.probe_run("numpy", ["--preload", "numpy,torch"], nproc=3)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        if seen[(0, 0)]["numpy"] is None:
            self.skipTest("numpy is not installed beside this torch")
        draws = [seen[(r, 0)]["numpy"] for r in range(3)]
        self.assertEqual(len(set(draws)), 3, draws)
        self.assertEqual(len({seen[(r, 0)]["random"] for r in range(3)}), 3)

    def test_ddp_trains_to_the_same_losses_with_and_without_preload(self):
        losses = {}
        for name, extra in (("plain", []), ("preload", ["--preload", "torch"])):
            out = os.path.join(self.dir, name + ".json")
            proc = self.run_ptrun(["--standalone", "--nproc-per-node", "2", *extra, TRAIN, out])
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out) as f:
                losses[name] = json.load(f)["losses"]
        self.assertEqual(losses["plain"], losses["preload"])

    def test_a_restart_forks_again_from_the_same_zygote(self):
        proc, seen = self.probe_run("restart", ["--preload", "torch", "--max-restarts", "1"],
                                    probe_args=["--fail-rank", "1"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(seen), [(0, 0), (0, 1), (1, 0), (1, 1)])
        self.assertTrue(all(s["torch_at_start"] for s in seen.values()), proc.stderr)
        self.assertEqual(proc.stderr.count("preloaded torch in"), 1, proc.stderr)
        self.assertIn("restarting the worker group (restart 1 of 1)", proc.stderr)

    def test_without_a_cgroup_a_restart_still_forks_and_keeps_the_zygote(self):
        self.env["PTRUN_CGROUP"] = "0"  # the subreaper's sweeps alone: they spare the zygote
        self.test_a_restart_forks_again_from_the_same_zygote()

    def test_a_zygote_that_dies_is_said_and_the_next_attempt_starts_interpreters(self):
        script = os.path.join(self.dir, "kills_zygote.py")
        with open(script, "w") as f:
            f.write(KILLS_ZYGOTE)
        proc = self.run_ptrun(["--standalone", "--nproc-per-node", "2", "--preload", "torch",
                               "--max-restarts", "1", script])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(proc.stdout.split("\n")),
                         ["", "attempt 0 rank 0 preloaded True", "attempt 0 rank 1 preloaded True",
                          "attempt 1 rank 0 preloaded False", "attempt 1 rank 1 preloaded False"])
        self.assertRegex(proc.stderr, r"--preload torch: the zygote \(pid \d+\) died: .*SIGKILL.*; "
                                      r"workers start as interpreters from now on")

    def test_kill_9_of_ptrun_leaves_no_worker_and_no_zygote(self):
        out = os.path.join(self.dir, "kill")
        os.mkdir(out)
        proc = self.start(["--standalone", "--nproc-per-node", "2", "--preload", "torch", PROBE,
                           out, "--sleep"])
        said = wait_output(proc.stderr, "workers are forked from it", DEADLINE)
        zygote = int(re.search(r"zygote pid (\d+)", said).group(1))
        ptrun_pid = int(re.search(r"\[ptrun [^:]+:(\d+)\]", said).group(1))
        if wait_output(proc.stdout, "sleeps", DEADLINE).count("sleeps") < 2:
            wait_output(proc.stdout, "sleeps", DEADLINE)
        workers = [s["pid"] for s in self.probes(out).values()]
        self.assertEqual(len(workers), 2)
        os.kill(ptrun_pid, signal.SIGKILL)
        proc.wait(timeout=DEADLINE)
        self.assertEqual(wait_gone([zygote, *workers], 10), [])

    def test_two_nodes_each_fork_from_their_own_zygote(self):
        out = os.path.join(self.dir, "nodes")
        os.mkdir(out)
        args = ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint",
                f"127.0.0.1:{free_port()}", "--preload", "torch", PROBE, out]
        nodes = [self.start(args) for _ in range(2)]
        errs = []
        for node in nodes:
            _, err = node.communicate(timeout=DEADLINE)
            self.assertEqual(node.returncode, 0, err)
            errs.append(err)
        agents = {int(re.search(r"\[ptrun [^:]+:(\d+)\]", e).group(1)) for e in errs}
        zygotes = {int(re.search(r"zygote pid (\d+)", e).group(1)) for e in errs}
        self.assertEqual((len(agents), len(zygotes)), (2, 2), "one zygote per node")
        seen = self.probes(out)
        self.assertEqual(sorted(seen), [(r, 0) for r in range(4)])
        self.assertTrue(all(s["torch_at_start"] for s in seen.values()))
        self.assertEqual(set(s["ppid"] for s in seen.values()), agents, "each node's own")
        self.assertEqual([s["sum"] for s in seen.values()], [4.0] * 4)

    def test_a_preload_that_starts_a_thread_is_not_used_and_says_why(self):
        with open(os.path.join(self.dir, "starts_a_thread.py"), "w") as f:
            f.write(THREAD_AT_IMPORT)
        script = os.path.join(self.dir, "probe.py")
        with open(PROBE) as src, open(script, "w") as dst:
            dst.write(src.read())  # beside the module: the zygote imports from the script's dir
        out = os.path.join(self.dir, "thread")
        os.mkdir(out)
        proc = self.run_ptrun(["--standalone", "--nproc-per-node", "2", "--preload",
                               "starts_a_thread", script, out])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stderr, r"--preload starts_a_thread: not used: .*2 threads.*; "
                                      r"workers start as interpreters")
        self.assertEqual(proc.stderr.count("not used"), 1, proc.stderr)
        self.assertEqual(len(self.probes(out)), 2)

    def test_a_module_that_cannot_be_imported_stops_the_job_before_any_worker(self):
        out = os.path.join(self.dir, "missing")
        os.mkdir(out)
        proc = self.run_ptrun(["--standalone", "--nproc-per-node", "2", "--preload",
                               "torch,no_such_module_here", PROBE, out])
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--preload: cannot import 'no_such_module_here': ModuleNotFoundError: No "
                      "module named 'no_such_module_here'", proc.stderr)
        self.assertEqual(self.probes(out), {}, "no worker started")

    def test_slurm_one_task_per_rank_mode_says_preload_is_not_used(self):
        # Two tasks on one node: SLURM started one task per rank, so each ptrun has one worker.
        slurm = {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1",
                 "SLURM_LOCALID": "1", "SLURM_NODEID": "0", "SLURM_STEP_NUM_NODES": "1",
                 "SLURM_STEP_NODELIST": "node1", "SLURM_STEP_NUM_TASKS": "2",
                 "SLURM_STEP_TASKS_PER_NODE": "2"}
        self.env.update(slurm)
        proc = self.run_ptrun(["--explain", "--preload", "torch", PROBE, "x"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"preload +torch: not used \(SLURM one-task-per-rank mode: "
                                      r"each ptrun starts its one worker once, no import to "
                                      r"share\)")

    def test_explain_says_what_the_zygote_imports_and_how_it_starts(self):
        proc = self.run_ptrun(["--explain", "--preload", "torch,numpy", PROBE, "x"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stdout, r"preload +torch,numpy: a zygote per node imports them once "
                                      r"\(\S+ -u \S+/_runner\.py --zygote torch,numpy -- "
                                      r"\S+/preload_probe\.py x\); every worker is forked from it "
                                      r"\(how one differs from an exec'd worker: man ptrun, WARM "
                                      r"START\) +\(flag --preload\)")


if __name__ == "__main__":
    unittest.main()
