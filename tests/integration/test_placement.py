"""Placement with real ptrun and real workers (issue 16): --numa-binding (the workers' real
affinity, from /proc/self/status), --report-bindings, --nproc-per-node gpu:LIST and
--virtual-local-rank over a fake CUDA_VISIBLE_DEVICES (no GPU needed: the variable is only
passed on), and the output filters' files."""
import glob
import os
import re
import socket
import time
import unittest

from harness import PtrunTestCase, read_dumps, run_ptrun

# Each worker writes its own /proc/self/status lines (the kernel's word on its affinity).
STATUS_WORKER = ["--no-python", "sh", "-c",
                 'grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status > "$0/status.$RANK"']


def id_list(text):
    """The ids of a kernel list ("0-2,5")."""
    ids = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        ids.update(range(int(first), int(last or first) + 1))
    return ids


def own_cpus():
    return os.sched_getaffinity(0)


class Placement(PtrunTestCase):
    def statuses(self, n):
        out = {}
        for rank in range(n):
            with open(os.path.join(self.dir, f"status.{rank}")) as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines())
            out[rank] = {k: id_list(v) for k, v in fields.items()}
        return out

    def test_exclusive_binding_gives_two_workers_disjoint_cpus(self):
        if len(own_cpus()) < 2:
            self.skipTest(f"needs 2 CPUs, this process may use {sorted(own_cpus())}")
        res = run_ptrun(["--nproc-per-node", "2", "--numa-binding", "exclusive", "--report-bindings",
                         *STATUS_WORKER, self.dir])
        self.assertEqual(res.returncode, 0, res.stderr)
        st = self.statuses(2)
        cpus0, cpus1 = st[0]["Cpus_allowed_list"], st[1]["Cpus_allowed_list"]
        self.assertTrue(cpus0 and cpus1)
        self.assertFalse(cpus0 & cpus1, f"rank 0 {cpus0} and rank 1 {cpus1} share CPUs")
        self.assertLessEqual(cpus0 | cpus1, own_cpus(), "bound outside ptrun's own CPU set")
        # The report says what the kernel says.
        host = socket.gethostname()
        for rank, cpus in ((0, cpus0), (1, cpus1)):
            m = re.search(rf"\[{re.escape(host)}\] rank {rank} \(local {rank}\): cpus (\S+) bound, "
                          r"memory preferred on node (\d+), gpus none", res.stderr)
            self.assertIsNotNone(m, res.stderr)
            self.assertEqual(id_list(m.group(1)), cpus)

    def test_binding_stays_inside_a_taskset(self):
        cpus = sorted(own_cpus())
        res = run_ptrun(["--nproc-per-node", "2", "--numa-binding", "node", *STATUS_WORKER, self.dir],
                        via=lambda cmd: ["taskset", "-c", str(cpus[-1]), *cmd])
        self.assertEqual(res.returncode, 0, res.stderr)
        for rank, st in self.statuses(2).items():
            self.assertEqual(st["Cpus_allowed_list"], {cpus[-1]}, f"rank {rank}")

    def test_report_bindings_without_binding_says_inherited(self):
        res = run_ptrun(["--nproc-per-node", "2", "--report-bindings", *STATUS_WORKER, self.dir],
                        env={"CUDA_VISIBLE_DEVICES": "2,3"})
        self.assertEqual(res.returncode, 0, res.stderr)
        lines = [l for l in res.stderr.splitlines() if "): cpus " in l]
        self.assertEqual(len(lines), 2, res.stderr)
        mine = ",".join(str(c) for c in sorted(own_cpus()))
        for rank, line in enumerate(lines):
            self.assertIn(f"rank {rank} (local {rank}): cpus ", line)
            self.assertIn(" inherited, memory default, gpus 2,3", line)
            self.assertEqual(id_list(line.split("cpus ")[1].split()[0]), own_cpus(), mine)
            self.assertEqual(self.statuses(2)[rank]["Cpus_allowed_list"], own_cpus())

    def test_exclusive_binding_of_more_workers_than_cores_is_refused(self):
        n = len(own_cpus()) + 1
        res = run_ptrun(["--nproc-per-node", str(n), "--numa-binding", "exclusive",
                         *STATUS_WORKER, self.dir])
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("--numa-binding exclusive", res.stderr)
        self.assertIn(f"for {n} workers", res.stderr)
        self.assertFalse(glob.glob(os.path.join(self.dir, "status.*")), "a worker started")

    def test_gpu_list_gives_every_worker_the_selected_devices(self):
        res = run_ptrun(["--nproc-per-node", "gpu:3,1", *self.worker("--dump", self.dir)],
                        env={"CUDA_VISIBLE_DEVICES": "4,5,6,7"}, unset=("CUDA_DEVICE_ORDER",))
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(0, 0), (1, 0)])
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "7,5")
            self.assertEqual(env["LOCAL_RANK"], str(rank))
            self.assertEqual(env["LOCAL_WORLD_SIZE"], "2")
            self.assertEqual(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID")

    def test_gpu_list_of_uuids_from_pet_variable(self):
        uuids = "GPU-aaaa,GPU-bbbb,GPU-cccc"
        res = run_ptrun(self.worker("--dump", self.dir),
                        env={"CUDA_VISIBLE_DEVICES": uuids, "PET_NPROC_PER_NODE": "gpu:2"})
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(dumps[(0, 0)]["env"]["CUDA_VISIBLE_DEVICES"], "GPU-cccc")

    def test_gpu_list_naming_a_device_the_node_lacks_is_refused(self):
        res = run_ptrun(["--nproc-per-node", "gpu:0,2", *self.worker("--dump", self.dir)],
                        env={"CUDA_VISIBLE_DEVICES": "0,1"})
        self.assertEqual(res.returncode, 2)
        self.assertIn("--nproc-per-node 'gpu:0,2': device 2 is not among the 2 devices this node "
                      "shows (0,1)", res.stderr)
        self.assertFalse(read_dumps(self.dir))

    def test_virtual_local_rank(self):
        res = run_ptrun(["--nproc-per-node", "gpu:1,0", "--virtual-local-rank",
                         *self.worker("--dump", self.dir)], env={"CUDA_VISIBLE_DEVICES": "4,5"})
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual({r: d["env"]["LOCAL_RANK"] for (r, _), d in dumps.items()}, {0: "0", 1: "0"})
        self.assertEqual({r: d["env"]["CUDA_VISIBLE_DEVICES"] for (r, _), d in dumps.items()},
                         {0: "5", 1: "4"})
        for f in glob.glob(os.path.join(self.dir, "env.*")):
            os.unlink(f)
        # CPU-only workers (no device anywhere): LOCAL_RANK=0, no CUDA_VISIBLE_DEVICES made up.
        res = run_ptrun(["--nproc-per-node", "2", "--virtual-local-rank",
                         *self.worker("--dump", self.dir)], unset=("CUDA_VISIBLE_DEVICES",))
        self.assertEqual(res.returncode, 0, res.stderr)
        for (rank, _), dump in read_dumps(self.dir).items():
            self.assertEqual(dump["env"]["LOCAL_RANK"], "0")
            self.assertEqual(dump["env"]["RANK"], str(rank))
            if not os.path.exists("/proc/driver/nvidia/gpus"):
                self.assertNotIn("CUDA_VISIBLE_DEVICES", dump["env"])

    def test_explain_shows_the_plan(self):
        res = run_ptrun(["--explain", "--nproc-per-node", "gpu:1,0", "--virtual-local-rank",
                         "--numa-binding", "node", "train.py"], env={"CUDA_VISIBLE_DEVICES": "4,5"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout, r"local rank 0\s+gpus 5, cpus \S+, memory node \d")
        self.assertRegex(res.stdout, r"local rank 1\s+gpus 4, cpus ")
        self.assertRegex(res.stdout, r"CUDA_DEVICE_ORDER\s+PCI_BUS_ID")


    def test_explain_stays_true_and_linear_with_4096_gpus(self):
        visible = ",".join(str(i) for i in range(4096))
        for args, rows in ((["gpu"], r"local ranks 0-4095\s+gpus 0,1,2,.*,4095, cpus inherited\s+"
                                      r"\(inherited CUDA_VISIBLE_DEVICES; inherited\)"),
                           (["gpu:0-4095", "--virtual-local-rank"],
                            r"\nlocal rank 4095\s+gpus 4095, cpus inherited\s+\(")):
            began = time.monotonic()
            res = run_ptrun(["--explain", "--nproc-per-node", *args, "train.py"],
                            env={"CUDA_VISIBLE_DEVICES": visible})
            nproc = args[0]
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertLess(len(res.stdout), 1_000_000, f"{nproc}: {len(res.stdout)} bytes")  # was 80 MB
            self.assertLess(time.monotonic() - began, 20, nproc)
            self.assertRegex(res.stdout, rows)
        res = run_ptrun(["--explain", "--nproc-per-node", "2", "train.py"],
                        unset=("CUDA_VISIBLE_DEVICES",))
        self.assertRegex(res.stdout, r"local ranks 0-1 .*\(CUDA_VISIBLE_DEVICES unset: every GPU of "
                                     r"this node; inherited\)")
        self.assertNotIn("inherited CUDA_VISIBLE_DEVICES", res.stdout)


class OutputFilters(PtrunTestCase):
    PRINTER = ["--no-python", "sh", "-c",
               'echo "step 1 loss 0.5 rank $RANK"; echo "noise $RANK"; echo "NCCL WARN, x $RANK" >&2;'
               ' echo "other $RANK" >&2']

    def attempt_dir(self, logs):
        found = glob.glob(os.path.join(logs, "f1_*", "attempt_0"))
        self.assertEqual(len(found), 1, found)
        return found[0]

    def test_matching_lines_go_to_the_filtered_files(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "f1",
                         "--duplicate-stdout-filters", "loss", "--duplicate-stderr-filters",
                         "WARN,, x", *self.PRINTER])
        self.assertEqual(res.returncode, 0, res.stderr)
        host = socket.gethostname()
        attempt = self.attempt_dir(logs)
        with open(os.path.join(attempt, "filtered_stdout.log")) as f:
            self.assertEqual(sorted(f.read().splitlines()),
                             [f"[{host}:{r}] step 1 loss 0.5 rank {r}" for r in (0, 1)])
        with open(os.path.join(attempt, "filtered_stderr.log")) as f:
            self.assertEqual(sorted(f.read().splitlines()),
                             [f"[{host}:{r}] NCCL WARN, x {r}" for r in (0, 1)])
        # The console still gets every line as the workers wrote them (nothing tee'd: no prefix).
        self.assertEqual(sorted(res.stdout.splitlines()),
                         sorted(f"{w} {r}" for r in (0, 1) for w in ("step 1 loss 0.5 rank", "noise")))
        self.assertIn("other 1", res.stderr)

    def test_filters_beside_redirects(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "f1",
                         "--redirects", "1", "--duplicate-stdout-filters", "noise", *self.PRINTER])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout, "")
        attempt = self.attempt_dir(logs)
        with open(os.path.join(attempt, "0", "stdout.log")) as f:
            self.assertEqual(f.read(), "step 1 loss 0.5 rank 0\nnoise 0\n")
        with open(os.path.join(attempt, "filtered_stdout.log")) as f:
            self.assertEqual(len(f.read().splitlines()), 2)
        self.assertFalse(os.path.exists(os.path.join(attempt, "filtered_stderr.log")))

    def test_an_empty_filter_is_refused(self):
        res = run_ptrun(["--duplicate-stdout-filters", "loss,", *self.PRINTER])
        self.assertEqual(res.returncode, 2)
        self.assertIn("--duplicate-stdout-filters 'loss,': filter 2 is empty", res.stderr)


if __name__ == "__main__":
    unittest.main()
