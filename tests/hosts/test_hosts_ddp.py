#!/usr/bin/python3
"""One command, many hosts (issue 38): a gloo DDP job (tests/integration/torch_ddp_train.py,
Debian's torch 1.13) started by `ptrun --hosts node1,node2,node3 --nproc-per-node 2` through the
namespace-entering remote shell of test_hosts_launch.py gives, step by step, the very losses
(bit for bit) of the same job under `ptrun --standalone --nproc-per-node 6`: same ranks, same data
shards, same gloo all-reduce order. Run as root; skips (exit 77) without root or namespaces, and
the test skips without python3-torch.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

import test_hosts_launch as base  # noqa: E402  (sets sys.path for the imports below)
from test_netns_hosts import (  # noqa: E402
    ENV, main, skip_unless_possible)

import harness as ptrun_harness  # noqa: E402

TORCH_PYTHON = "/usr/bin/python3"
DDP_SCRIPT = str(base.HERE.parent / "integration" / "torch_ddp_train.py")
STEPS = "5"
DEADLINE = 180  # 6 torch workers starting on a small machine


def have_torch():
    return subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


class HostsDdp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        if not have_torch():
            raise unittest.SkipTest("Debian's python3-torch is not installed")
        cls.shell_dir, cls.shell = base.hosts_up()

    @classmethod
    def tearDownClass(cls):
        base.hosts_down(cls.shell_dir)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-hosts-ddp-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def run_ptrun(self, args, env):
        full = dict(ENV, TMPDIR=ptrun_harness.SCRATCH, PYTHON_EXEC=TORCH_PYTHON, **env)
        try:
            res = subprocess.run([base.PTRUN, *args], env=full, cwd=self.dir, capture_output=True,
                                 text=True, timeout=DEADLINE)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"ptrun still ran after {DEADLINE}s: {e.stdout}\n{e.stderr}")
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        return res

    @classmethod
    def standalone_losses(cls, case):
        """The same job as 6 workers on one host (run once for the class)."""
        if not hasattr(cls, "_alone"):
            alone = os.path.join(case.dir, "alone.json")
            case.run_ptrun(["--standalone", "--nproc-per-node", "6", DDP_SCRIPT, alone, STEPS],
                           {"GLOO_SOCKET_IFNAME": "lo"})
            cls._alone = json.loads(Path(alone).read_text())
        return cls._alone

    def across_three_hosts(self, *extra):
        """The job on node1..node3 x 2 workers; asserts its losses are the standalone job's."""
        across = os.path.join(self.dir, "across.json")
        # gloo between hosts over their eth0; PYTHON_EXEC and the interface go to every host.
        res = self.run_ptrun(["--hosts", "node1,node2,node3", "--nproc-per-node", "2",
                              "--remote-shell", self.shell,
                              "--rdzv-endpoint", f"node1:{next(base._ports)}",
                              "--rdzv-conf", base.FAST, "--export", "PYTHON_EXEC,GLOO_SOCKET_IFNAME",
                              *extra, DDP_SCRIPT, across, STEPS], {"GLOO_SOCKET_IFNAME": "eth0"})
        reference = self.standalone_losses(self)
        ours = json.loads(Path(across).read_text())
        self.assertEqual(ours["world"], 6)
        self.assertEqual(reference["world"], 6)
        self.assertEqual(len(ours["losses"]), int(STEPS))
        self.assertEqual(ours["losses"], reference["losses"])  # bit for bit (floats from JSON)
        pids = [p for i in base.HOSTS for p in base.host_pids(i)]
        self.assertEqual(base.wait_gone(pids, base.STOP_BOUND), [], "processes left on the hosts")
        return ours, res.stderr

    def test_gloo_losses_equal_the_standalone_job(self):
        ours, _ = self.across_three_hosts()
        self.assertEqual(ours["master_addr"], "node1")

    def test_through_store_relays_the_losses_are_the_same(self):
        # --store-relay: each host's workers reach the store through their own agent.
        ours, err = self.across_three_hosts("--store-relay")
        self.assertEqual(ours["master_addr"], "127.0.0.1")
        relayed = re.findall(r"--store-relay: this node's workers reach the store at node1:\d+ "
                             r"through 127\.0\.0\.1:\d+", err)
        self.assertEqual(len(relayed), 3, err)


if __name__ == "__main__":
    main()
