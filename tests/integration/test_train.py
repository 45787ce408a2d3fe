"""The DDP example `train` under the real ptrun: data parallel training converges and ends with the
single-process parameters (fixed global batch), and a worker killed mid-run is restarted by ptrun,
resumes from the checkpoint and ends at the same parameters."""
import os
import subprocess
import unittest

from harness import PtrunTestCase, run_ptrun, _env

TRAIN = os.environ.get("TRAIN_BIN", "build/examples/train/train")
ARGS = ["--epochs", "30", "--global-batch", "48", "--dataset-size", "1536", "--seed", "3"]
TOLERANCE = 1e-4  # float rounding of a different summation order, over 960 Adam steps
TIMEOUT = 120


def read_params(path):
    """The --final-params file as {name: [floats]}."""
    params = {}
    with open(path) as f:
        for line in f:
            name, *values = line.split()
            params[name] = [float(v) for v in values]
    return params


def max_difference(a, b):
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    worst = 0.0
    for name in a:
        assert len(a[name]) == len(b[name]), name
        worst = max([worst] + [abs(x - y) for x, y in zip(a[name], b[name])])
    return worst


def final_mse(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("final mse ")]
    assert len(lines) == 1, stdout
    return float(lines[0].split()[2])


class TrainTest(PtrunTestCase):
    def single_process(self):
        """`train` alone (no ptrun: world size 1); returns its final parameters."""
        out = os.path.join(self.dir, "single.txt")
        proc = subprocess.run([TRAIN, *ARGS, "--final-params", out], env=_env({}), capture_output=True,
                              text=True, timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("world size 1", proc.stdout)
        self.assertLess(final_mse(proc.stdout), 0.01, proc.stdout)
        return read_params(out)

    def launched(self, nproc, ptrun_args, train_args, name):
        """`ptrun --standalone --nproc-per-node N [ptrun_args] train ...`; returns (proc, params)."""
        out = os.path.join(self.dir, f"{name}.txt")
        proc = run_ptrun(["--standalone", "--nproc-per-node", str(nproc), *ptrun_args, TRAIN, *ARGS,
                          "--final-params", out, *train_args], timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc, read_params(out)

    def test_data_parallel_matches_single_process(self):
        single = self.single_process()
        for nproc in (2, 3, 4):
            with self.subTest(nproc=nproc):
                proc, params = self.launched(nproc, [], [], name=str(nproc))
                self.assertIn(f"world size {nproc}", proc.stdout)
                self.assertEqual(proc.stdout.count("epoch "), 30, proc.stdout)
                self.assertLess(final_mse(proc.stdout), 0.01, proc.stdout)
                self.assertLess(max_difference(single, params), TOLERANCE)

    def test_killed_worker_resumes_from_checkpoint(self):
        ckpt = os.path.join(self.dir, "ckpt")
        _, clean = self.launched(4, [], ["--checkpoint-dir", os.path.join(self.dir, "clean")], name="clean")
        # 32 steps per epoch: the kill after step 40 loses steps 33-40, the checkpoint at 32 survives.
        proc, resumed = self.launched(4, ["--max-restarts", "1"],
                                      ["--checkpoint-dir", ckpt, "--crash-at-step", "40", "--crash-rank", "2"],
                                      name="resumed")
        self.assertIn("killing itself after step 40", proc.stderr)
        self.assertIn("resumed from the checkpoint at step 32", proc.stdout)
        self.assertLess(final_mse(proc.stdout), 0.01, proc.stdout)
        self.assertLess(max_difference(clean, resumed), TOLERANCE)
        self.assertTrue(os.listdir(ckpt), "an explicit --checkpoint-dir is kept")


if __name__ == "__main__":
    unittest.main()
