"""Accelerators beyond NVIDIA with real ptrun and real workers (issue 37): --nproc-per-node gpu
(AMD), xpu, hpu and npu over recorded device trees (tests/unit/placement/topologies/devices, each
with a README citing the vendor documents it was written from), read through PTRUN_DEVICE_ROOT;
each worker's devices arrive in its vendor's variable, and --explain says what was found where."""
import os
import re
import unittest

from harness import PtrunTestCase, read_dumps, run_ptrun

DEVICES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "placement",
                       "topologies", "devices")

# Variables a node's own devices could leak into the workers' environment.
VENDOR_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                    "ZE_AFFINITY_MASK", "HABANA_VISIBLE_MODULES", "ASCEND_RT_VISIBLE_DEVICES",
                    "CUDA_DEVICE_ORDER")


def on(tree, **env):
    """The environment that makes ptrun read the recorded `tree` as this node's devices."""
    return {"PTRUN_DEVICE_ROOT": os.path.join(DEVICES, tree), **env}


class Accelerators(PtrunTestCase):
    def launch(self, args, tree, **env):
        return run_ptrun([*args, *self.worker("--dump", self.dir)], env=on(tree, **env),
                         unset=VENDOR_VARIABLES)

    def test_xpu_starts_a_worker_per_intel_tile_and_gives_each_its_own(self):
        res = self.launch(["--nproc-per-node", "xpu", "--virtual-local-rank"], "intel-max1550")
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        for (rank, _), dump in dumps.items():
            self.assertEqual(dump["env"]["ZE_AFFINITY_MASK"], str(rank))
            self.assertEqual(dump["env"]["LOCAL_RANK"], "0")
            self.assertNotIn("CUDA_VISIBLE_DEVICES", dump["env"])

    def test_hpu_list_names_gaudis_by_module_id(self):
        res = self.launch(["--nproc-per-node", "hpu:1,0", "--virtual-local-rank"], "gaudi2",
                          HABANA_VISIBLE_MODULES="2,3")
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(dumps[(0, 0)]["env"]["HABANA_VISIBLE_MODULES"], "3")
        self.assertEqual(dumps[(1, 0)]["env"]["HABANA_VISIBLE_MODULES"], "2")

    def test_amd_gpu_list_goes_to_hip_visible_devices(self):
        res = self.launch(["--nproc-per-node", "gpu:3,1"], "amd-mi300x")
        self.assertEqual(res.returncode, 0, res.stderr)
        for dump in read_dumps(self.dir).values():
            self.assertEqual(dump["env"]["HIP_VISIBLE_DEVICES"], "3,1")
            self.assertNotIn("CUDA_DEVICE_ORDER", dump["env"])

    def test_auto_counts_ascend_npus_as_their_variable_shows_them(self):
        res = self.launch(["--nproc-per-node", "auto"], "ascend-910b",
                          ASCEND_RT_VISIBLE_DEVICES="0,1,2")
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(len(dumps), 3)
        self.assertEqual(dumps[(2, 0)]["env"]["ASCEND_RT_VISIBLE_DEVICES"], "0,1,2")

    def test_explain_says_what_was_found_and_from_where(self):
        res = run_ptrun(["--explain", "--nproc-per-node", "gpu", "/bin/true"],
                        env=on("amd-mi300x"), unset=VENDOR_VARIABLES)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout, r"accelerators\s+4 AMD GPUs \(from /sys/class/kfd/kfd/topology\)")
        self.assertRegex(res.stdout, r"workers per node\s+4")
        res = run_ptrun(["--explain", "/bin/true"], env=on("nvidia-and-amd"),
                        unset=VENDOR_VARIABLES)
        self.assertIn("gpu and auto count the NVIDIA GPUs, leaving the AMD GPUs aside", res.stdout)

    def test_a_kind_the_node_lacks_is_a_usage_error(self):
        res = self.launch(["--nproc-per-node", "npu"], "intel-max1550")
        self.assertEqual(res.returncode, 2)
        self.assertIn("--nproc-per-node 'npu': no Ascend NPU found on this node (ptrun looks in "
                      "/dev/davinci*)", res.stderr)
        self.assertFalse(read_dumps(self.dir))


if __name__ == "__main__":
    unittest.main()
