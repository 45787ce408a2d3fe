"""Every example in README.md, man/ptrun.1 and man/ptrun-store.1 runs exactly as printed.

The examples are read from those files here, so a changed example is run as changed and cannot
drift; a new one fails this test until EXAMPLES below says how it runs. Each runs in a scratch
directory holding what it names (`./train`, `train.py`, `mypackage`, `build/examples/train/train`),
with `ptrun`, `ptrun-store` and a `python3` that has torch first on PATH.

Examples for several nodes run as one copy per node on this machine, in a private network and mount
namespace of their own (unshare -n -m, root) where their host names (node1, head) are 127.0.0.1 and
their fixed ports are free; static examples also run their node-rank-0 counterpart. Without root
those are skipped. Examples needing a SLURM cluster with GPUs, and the project's own entry points,
are not run here: EXAMPLES names what covers them, and this test checks that it still does."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
import unittest

from harness import PTRUN, PtrunTestCase

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PTRUN_STORE = os.environ.get("PTRUN_STORE_BIN", "build/rendezvous/server_main/ptrun-store")
TRAIN = os.environ.get("TRAIN_BIN", "build/examples/train/train")
STORE_C_LIB = os.environ.get("PTRUN_STORE_C_LIB", "build/rendezvous/c_api/libptrun_store_c.so")
TORCH_PYTHON = "/usr/bin/python3"
NAMES = ("node1", "head")  # host names the examples use: 127.0.0.1 in their namespace

TRAIN_PY = """\
import argparse
import torch
import torch.distributed as dist
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.parse_known_args()
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: sum {int(t.item())}", flush=True)
dist.destroy_process_group()
"""

MODULE_PY = """\
import os
print("mypackage.train rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], flush=True)
"""


def unroff(text):
    """A man page's .nf block as a person reads it."""
    lines = [l for l in text.splitlines() if not l.startswith((".RS", ".RE", ".PP"))]
    text = "\n".join(lines) + "\n"
    for roff, plain in ((r"\-", "-"), (r"\(aq", "'"), (r"\(dq", '"'), (r"\fB", ""), (r"\fR", ""), (r"\fI", ""),
                        (r"\fP", ""), (r"\e", "\\"), (r"\&", "")):
        text = text.replace(roff, plain)
    return text


def examples():
    """(file, first line, block text) of every example: README's fenced blocks, the man pages' .nf blocks."""
    found = []
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", readme, re.S | re.M):
        found.append(("README.md", match.group(2)))
    for page in ("man/ptrun.1", "man/ptrun-store.1"):
        with open(os.path.join(ROOT, page)) as f:
            text = f.read()
        for match in re.finditer(r"^\.nf\n(.*?)^\.fi", text, re.S | re.M):
            found.append((page, unroff(match.group(1))))
    return [(path, block.strip().splitlines()[0], block) for path, block in found]


def commands(block):
    """The block's lines that are commands (not comments, not blank)."""
    return [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def can_unshare():
    return os.geteuid() == 0 and subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True).returncode == 0


# How each example runs, by (file, first line). Kinds:
#   lines      every line is one command, run in the scratch directory, must exit 0
#   nodes      every line is one node's command of a multi-node job: run as every node (namespace)
#   servers    every line serves until SIGINT: it must print port=N, and exit 0 on SIGINT (namespace)
#   workers    a script of torch workers against a ptrun-store serving on head:29500 (namespace)
#   script     a bash script, run as is (after ptrun-store's recipe: nothing may be left running)
#   c          a C fragment, built into main() against libptrun_store_c, must exit 0
#   covered    not run here: the reason, and (file, text) pairs that must still cover it
EXAMPLES = {
    ("README.md", "scripts/run.sh      # 1. install dependencies (Debian, needs root), build, run the demo job"): (
        "covered", "the project's entry points: scripts/test.sh is what CI runs (.ci/run); scripts/run.sh installs "
                   "Debian packages (root, network), builds, and runs the demo, the train example below without "
                   "its flags",
        [("scripts/run.sh", "ptrun\" --standalone --nproc-per-node 4"), ("README.md", "ptrun --standalone "
                                                                        "--nproc-per-node 4 build/examples/train/train")]),
    ("README.md", "scripts/install-deps.sh                  # once: the Debian packages it builds with (root)"): (
        "covered", "installs packages (root, network), builds the wheel into the source tree's build/ and installs it "
                   "with pip: the wheel target depends on ptrun, ptrun-store and the store's C library alone; "
                   "tests/package/test_wheel.py builds it (python/make_wheel.py, what the wheel target runs), "
                   "pip-installs it into clean venvs and finds its man page with man -w",
        [("python/CMakeLists.txt", "add_custom_target(wheel"),
         ("python/CMakeLists.txt", "add_dependencies(wheel ptrun ptrun-store ptrun_store_c)"),
         ("tests/package/test_wheel.py", '"make_wheel.py"'), ("tests/package/test_wheel.py", '"bin/pip", "install"'),
         ("tests/package/test_wheel.py", '"man", "-w", "ptrun"')]),
    ("README.md", "ptrun --standalone --nproc-per-node 4 ./train --epochs 3     # a native worker"): ("lines",),
    ("README.md", "ptrun --nnodes 2:3 --nproc-per-node 2 --rdzv-endpoint node1:29400 --rdzv-id job42 ./train   "
                  "# elastic, c10d"): ("nodes",),
    ("README.md", "ptrun --nnodes 3:3 --nproc-per-node 8 --rdzv-backend etcd-v2 \\"): (
        "covered", "needs an etcd cluster and several hosts: tests/hosts/test_etcd.py runs --rdzv-backend etcd-v2 "
                   "against a real 3-member etcd cluster on namespaced hosts (--nnodes 3:3, a spare, torch DDP)",
        [("tests/hosts/test_etcd.py", '"--rdzv-backend", "etcd-v2"'), ("tests/hosts/etcd_cluster.py", "--initial-cluster")]),
    ("README.md", "ptrun --nnodes 2:4 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint /shared/jobs/job42.rdzv \\"): (
        "covered", "needs nodes that share a file system: tests/hosts/test_file_rdzv.py runs --rdzv-conf "
                   "store_type=file on namespaced hosts sharing a directory (and a killed coordinator), "
                   "test_file_rendezvous.py two agents on this host",
        [("tests/hosts/test_file_rdzv.py", '"--rdzv-endpoint", self.rdzv_file'),
         ("tests/integration/test_file_rendezvous.py", '"--rdzv-endpoint", path')]),
    ("README.md", "#!/bin/bash"): (
        "covered", "needs a SLURM cluster with GPUs (--gpus-per-node): tests/slurm runs `srun ptrun` in both modes on "
                   "a 2-node test cluster without GPUs",
        [("tests/slurm/test_slurm_launch.py", "\"srun\"")]),
    ("README.md", "ptrun-store --host 0.0.0.0 --port 29500            # serve until SIGINT/SIGTERM (exit 0)"): (
        "servers",),
    ("README.md", "export MASTER_ADDR=head MASTER_PORT=29500 WORLD_SIZE=2"): ("workers",),
    ("README.md", "ptrun_store_server* server;"): ("c",),
    ("README.md", "ptrun --nnodes 64 --nproc-per-node 8 --rdzv-endpoint head:29500 --store-relay train.py"): (
        "covered", "needs several hosts: test_hosts_ddp.py runs a gloo DDP job on 3 namespaced hosts with "
                   "--store-relay (same losses), test_scale_guards.py 24,000 simulated ranks on 4 agents",
        [("tests/hosts/test_hosts_ddp.py", 'self.across_three_hosts("--store-relay")'),
         ("tests/integration/test_scale_guards.py", '"--store-relay"')]),
    ("README.md", "ptrun --hosts node1,node2:4,node3 --nproc-per-node 8 train.py --epochs 3   # node2 runs 4 workers"): (
        "covered", "needs several hosts reachable by a remote shell: tests/hosts/test_hosts_launch.py runs --hosts "
                   "with slots on namespaced hosts through a remote shell that enters each namespace, and "
                   "hosts_test.cpp checks --hostfile, --exclude, --export and --remote-shell's words",
        [("tests/hosts/test_hosts_launch.py", 'hosts="node1:1,node2:3"'),
         ("tests/hosts/test_hosts_launch.py", '"--remote-shell", self.shell'),
         ("tests/unit/launcher/hosts_test.cpp", "parse_hostfile("),
         ("tests/unit/launcher/hosts_test.cpp", 'filter_hosts(all, "", "b,a:1,c:2")'),
         ("tests/unit/launcher/hosts_test.cpp", 'split_command_words("ssh -F')]),
    ("README.md", "ptrun --standalone --nproc-per-node 4 --restart-policy failed --max-restarts 3 train"): (
        "covered", "train with rank 2 killed under --restart-policy failed, and the lines ptrun says: "
                   "test_recovery_train.py runs it (survivors' pids, the replacement, identical final parameters), "
                   "test_recovery.py checks the two lines word for word",
        [("tests/integration/test_recovery_train.py", '"--restart-policy", "failed"'),
         ("tests/integration/test_recovery.py", "replacing it alone, the other workers keep running"),
         ("tests/integration/test_recovery.py", "joined by all 4 workers")]),
    ("README.md", "from ptrun.recovery import Recovery"): (
        "covered", "a fragment of examples/python/recover_ddp.py: test_recovery_torch.py runs that script under "
                   "ptrun --restart-policy failed with rank 2 killed, and without the policy",
        [("examples/python/recover_ddp.py", "step = rec.recover(err, net, opt, step)"),
         ("examples/python/recover_ddp.py", "step = rec.resync(net, opt, 0)"),
         ("tests/integration/test_recovery_torch.py", '"--restart-policy", "failed"')]),
    ("README.md", "ptrun --standalone --nproc-per-node 4 build/examples/train/train --epochs 30 --final-params p.txt"): (
        "lines",),
    ("README.md", "find_package(ptrun REQUIRED)   # CMAKE_PREFIX_PATH=PREFIX; also sets ptrun_EXECUTABLE"): (
        "covered", "needs `cmake --install` into a prefix: tests/package installs one and builds a consumer with "
                   "find_package(ptrun) linking ptrun::ddp",
        [("tests/package/consumer/CMakeLists.txt", "find_package(ptrun"),
         ("tests/package/consumer/CMakeLists.txt", "ptrun::ddp")]),
    ("README.md", "g++ -std=c++20 my_trainer.cpp $(pkg-config --cflags --libs ptrun-ddp)   "
                  "# PKG_CONFIG_PATH=PREFIX/lib/pkgconfig"): (
        "covered", "needs an installed prefix: tests/package builds its consumer with pkg-config --cflags --libs ptrun-ddp",
        [("tests/package/test_package.py", '"pkg-config", "--cflags", "--libs", "ptrun-ddp"')]),
    ("man/ptrun.1", "ptrun --nnodes 2:3 --nproc-per-node 2 --rdzv-endpoint node1:29400 --rdzv-id job42 ./train"): (
        "nodes",),
    ("man/ptrun.1", "#SBATCH -N1 --gpus-per-node=1                 # one GPU"): (
        "covered", "needs a SLURM cluster with GPUs: tests/slurm runs `srun ptrun` on a 2-node test cluster",
        [("tests/slurm/test_slurm_launch.py", "\"srun\"")]),
    ("man/ptrun.1", "ptrun --standalone --nproc-per-node 4 ./train --epochs 3"): ("lines",),
    ("man/ptrun.1", "#SBATCH -N4 --ntasks-per-node=1 --requeue --signal=USR1@90"): (
        "covered", "needs a SLURM cluster that times jobs out: test_slurm_requeue.py runs "
                   "sbatch --requeue with ptrun --checkpoint-signal SIGUSR1 --requeue, "
                   "signalled by scancel",
        [("tests/slurm/test_slurm_requeue.py", '"sbatch", "--parsable", "--requeue"'),
         ("tests/slurm/test_slurm_requeue.py", "--checkpoint-signal SIGUSR1")]),
    ("README.md", "mpirun -np 16 --map-by ppr:8:node -x MASTER_ADDR=node1 ptrun train.py   # Open MPI, one task "
                  "per rank"): (
        "covered", "needs several nodes under MPI, Flux or LSF: test_mpirun.py runs the real Open MPI mpirun on this "
                   "host in both modes; test_launcher_envs.py runs Flux's and jsrun's documented environments",
        [("tests/integration/test_mpirun.py", "def test_one_task_per_rank"),
         ("tests/integration/test_mpirun.py", "def test_one_agent_per_task_with_nproc_per_node"),
         ("tests/integration/test_launcher_envs.py", "class Flux"),
         ("tests/integration/test_launcher_envs.py", "class LsfJsrun")]),
    ("README.md", "#PBS -l select=4:ncpus=32:ngpus=8"): (
        "covered", "needs a PBS cluster: test_launcher_envs.py runs pbsdsh's documented environment and a node file",
        [("tests/integration/test_launcher_envs.py", "class Pbs")]),
    ("man/ptrun.1", "mpirun -np 16 --map-by ppr:8:node -x MASTER_ADDR=node1 ptrun train.py   # one task per rank"): (
        "covered", "needs several nodes under MPI: test_mpirun.py runs the real Open MPI mpirun on this host",
        [("tests/integration/test_mpirun.py", "def test_one_task_per_rank")]),
    ("man/ptrun.1", "#PBS -l select=4:ncpus=32:ngpus=8"): (
        "covered", "needs a PBS cluster: test_launcher_envs.py runs pbsdsh's documented environment and a node file",
        [("tests/integration/test_launcher_envs.py", "class Pbs")]),
    ("man/ptrun.1", "source <(ptrun --print-completion bash)     # bash, e.g. in ~/.bashrc"): (
        "covered", "one line per shell, each for its own shell: test_completion.py sources the bash script into "
                   "bash, and where zsh and tcsh are installed loads the zsh script after compinit and the tcsh one",
        [("tests/integration/test_completion.py", 'source <("$0" --print-completion bash)'),
         ("tests/integration/test_completion.py", "compinit -u -D"),
         ("tests/integration/test_completion.py", '"tcsh", "-f", "-c"')]),
    ("man/ptrun-store.1", "coproc STORE { exec ptrun-store --port 0; }"): ("script",),
    ("man/ptrun-store.1", "ptrun-store --host 127.0.0.1 --port 29500 --max-value-bytes 1048576 "
                          "--max-connections 4096"): ("servers",),
}


class DocsExamples(PtrunTestCase):
    def setUp(self):
        super().setUp()
        d = self.dir
        os.makedirs(os.path.join(d, "bin"))
        for name, target in (("ptrun", PTRUN), ("ptrun-store", PTRUN_STORE), ("python3", TORCH_PYTHON)):
            os.symlink(os.path.abspath(target), os.path.join(d, "bin", name))
        os.symlink(os.path.abspath(TRAIN), os.path.join(d, "train"))
        os.makedirs(os.path.join(d, "build", "examples", "train"))
        os.symlink(os.path.abspath(TRAIN), os.path.join(d, "build", "examples", "train", "train"))
        os.makedirs(os.path.join(d, "mypackage"))
        for path, text in (("train.py", TRAIN_PY), ("mypackage/__init__.py", ""), ("mypackage/train.py", MODULE_PY)):
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        with open(os.path.join(d, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost " + " ".join(NAMES) + "\n::1 localhost ip6-localhost\n")
        self.env = {"PATH": os.path.join(d, "bin") + ":/usr/bin:/bin", "HOME": d, "TMPDIR": d,
                    "GLOO_SOCKET_IFNAME": "lo", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}

    def bash(self, script, timeout=180, namespace=False):
        """Runs `script` with bash in the scratch directory (in a private net+mount namespace)."""
        argv = ["bash", "-c", script]
        if namespace:
            setup = f"ip link set lo up; mount --bind {shlex.quote(os.path.join(self.dir, 'hosts'))} /etc/hosts; "
            argv = ["unshare", "-n", "-m", "--propagation", "private", "bash", "-c", setup + script]
        proc = subprocess.Popen(argv, cwd=self.dir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        self.leftover.append(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        res = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        res.session = proc.pid  # start_new_session: the session id is the shell's pid
        return res

    def need_namespaces(self):
        if not can_unshare():
            self.skipTest("examples for several nodes or fixed ports need root (unshare -n -m)")

    def test_every_example_is_known_and_runs(self):
        seen = set()
        for path, first, block in examples():
            key = (path, first)
            self.assertIn(key, EXAMPLES, f"a new example in {path}: say in EXAMPLES how it runs:\n{block}")
            seen.add(key)
            kind = EXAMPLES[key][0]
            with self.subTest(example=first, file=path):
                getattr(self, "run_" + kind)(block, *EXAMPLES[key][1:])
        self.assertEqual(set(EXAMPLES) - seen, set(), "EXAMPLES names examples the docs no longer have")

    def run_lines(self, block):
        for line in commands(block):
            res = self.bash(line)
            self.assertEqual(res.returncode, 0, f"{line}\n{res.stdout}\n{res.stderr}")

    def run_nodes(self, block):
        self.need_namespaces()
        for line in commands(block):
            words = shlex.split(line, comments=True)
            nnodes = words[words.index("--nnodes") + 1]
            count = int(nnodes.split(":")[-1])
            copies = [line] * count
            if "--node-rank" in words:  # static: this node's command and the other nodes' ones
                given = words[words.index("--node-rank") + 1]
                copies = [line.replace(f"--node-rank {given}", f"--node-rank {r}") for r in range(count)]
            # A newline ends the line's own comment before the redirection.
            script = "".join(f"( {c}\n) > node{i}.out 2>&1 & pids[{i}]=$!\n" for i, c in enumerate(copies))
            script += "rc=0; for p in ${pids[@]}; do wait $p || rc=1; done; tail -n 3 node*.out; exit $rc\n"
            res = self.bash(script, namespace=True)
            self.assertEqual(res.returncode, 0, f"{line} as {count} nodes:\n{res.stdout}\n{res.stderr}")

    def serve(self, line):
        """Starts `line` (a ptrun-store) in the namespace, waits for port=N, stops it with SIGINT."""
        # set -m: the line runs in a process group of its own that SIGINT reaches (a plain
        # background job would ignore it).
        # The files go first: the job truncates them only once it runs, and the loop could meet
        # the previous example's port line before that.
        script = ("rm -f serve.out serve.err\n"
                  f"set -m; {{ {line}\n}} > serve.out 2>serve.err & pid=$!\n"
                  "for i in $(seq 300); do grep -qs '^port=' serve.out && break; sleep 0.1; done\n"
                  "grep '^port=' serve.out || { cat serve.err >&2; kill -- -$pid; exit 9; }\n"
                  "kill -INT -- -$pid; wait $pid\n")
        if "--relay-to" in line:  # a relay needs the store it relays to: the README's head:29500
            script = ("rm -f store.out store.err\n"
                      "ptrun-store --host 0.0.0.0 --port 29500 > store.out 2>store.err & store=$!\n"
                      "for i in $(seq 300); do grep -qs '^port=' store.out && break; sleep 0.1; done\n"
                      + script.replace("wait $pid\n", "wait $pid; rc=$?\n")
                      + "kill -INT $store; wait $store; exit $rc\n")
        return self.bash(script, namespace=True, timeout=60)

    def run_servers(self, block):
        self.need_namespaces()
        for line in commands(block):
            res = self.serve(line)
            self.assertEqual(res.returncode, 0, f"{line}\n{res.stdout}\n{res.stderr}")
            port = re.search(r"--port (\d+)", line).group(1)
            if port != "0":
                self.assertIn(f"port={port}", res.stdout)

    def run_workers(self, block):
        self.need_namespaces()
        # The store the block talks to: the README's own first store example, at head:29500.
        script = ("rm -f store.out store.err\n"
                  "ptrun-store --host 0.0.0.0 --port 29500 > store.out 2>store.err & store=$!\n"
                  "for i in $(seq 300); do grep -qs '^port=' store.out && break; sleep 0.1; done\n"
                  + block + "\nkill -INT $store; wait $store\n")
        res = self.bash(script, namespace=True)
        self.assertEqual(res.returncode, 0, f"{res.stdout}\n{res.stderr}")
        for rank in (0, 1):
            self.assertIn(f"rank {rank} of 2: sum 3", res.stdout)

    def run_script(self, block):
        res = self.bash(block)
        self.assertEqual(res.returncode, 0, f"{res.stdout}\n{res.stderr}")
        for rank in (0, 1):
            self.assertIn(f"rank {rank} of 2: sum 3", res.stdout)
        self.assertIn("SIGTERM received; stopping", res.stderr, "the server itself got the kill")
        left = subprocess.run(["pgrep", "-s", str(res.session)], capture_output=True, text=True)
        self.assertEqual(left.stdout.strip(), "", "the recipe left a process of its session running")

    def run_c(self, block):
        if not shutil.which("cc"):
            self.skipTest("needs a C compiler")
        program = os.path.join(self.dir, "example.c")
        with open(program, "w") as f:
            f.write("#include <stdint.h>\n#include <stdio.h>\n#include <ptrun/rendezvous/c_api.h>\n"
                    "int main(void) {\n" + textwrap.indent(block, "    ") + "    return 0;\n}\n")
        lib = os.path.abspath(STORE_C_LIB)
        build = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", program, "-o", program[:-2],
                                "-I", os.path.join(ROOT, "rendezvous", "include"), lib,
                                "-Wl,-rpath," + os.path.dirname(lib)], capture_output=True, text=True, timeout=120)
        self.assertEqual(build.returncode, 0, build.stderr)
        res = subprocess.run([program[:-2]], capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stderr, "", "the fragment's wait must not time out")

    def run_covered(self, block, reason, evidence):
        for path, text in evidence:
            with open(os.path.join(ROOT, path)) as f:
                self.assertIn(text, f.read(), f"{path} no longer covers this example ({reason})")


if __name__ == "__main__":
    unittest.main()
