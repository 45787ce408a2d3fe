"""The c10d rendezvous through a file (--rdzv-conf store_type=file, issue 37): agents that share a
file meet without a rendezvous port, as torchrun's FileStore rendezvous. Here the agents share one
host; tests/hosts/test_file_rdzv.py runs them on namespaced hosts, with a coordinator's loss."""
import os
import subprocess
import unittest

from harness import PTRUN, PtrunTestCase, _env, read_dumps, run_ptrun

FAST = "heartbeat=0.5,last_call_timeout=1,join_timeout=30,store_type=file"


class FileRendezvous(PtrunTestCase):
    def args(self, path, *extra, nnodes="2", conf=FAST):
        return ["--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", path, "--rdzv-id", self.id(), "--rdzv-conf", conf, *extra,
                *self.worker("--dump", self.dir)]

    def test_two_agents_meet_in_the_file_and_the_job_leaves_no_keys(self):
        path = os.path.join(self.dir, "rdzv")
        first = subprocess.Popen([PTRUN, *self.args(path)], env=_env(None), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        self.leftover.append(first.pid)
        second = run_ptrun(self.args(path), timeout=60)
        _, err = first.communicate(timeout=60)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(first.returncode, 0, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        self.assertEqual({d["env"]["WORLD_SIZE"] for d in dumps.values()}, {"4"})
        self.assertEqual(len({d["env"]["MASTER_PORT"] for d in dumps.values()}), 1)
        for said in (err, second.stderr):
            self.assertIn(f"rendezvous through the file {path} (no rendezvous port)", said)
        self.assertEqual(sum("this node now coordinates" in s for s in (err, second.stderr)), 1)
        # A second job under the same run id and file starts afresh (the first removed its keys).
        again = subprocess.Popen([PTRUN, *self.args(path)], env=_env(None), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        self.leftover.append(again.pid)
        res = run_ptrun(self.args(path), timeout=60)
        _, err = again.communicate(timeout=60)
        self.assertEqual((res.returncode, again.returncode), (0, 0), res.stderr + err)

    def test_explain_names_the_file(self):
        path = os.path.join(self.dir, "rdzv")
        res = run_ptrun(["--explain", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                         path, "--rdzv-conf", "store_type=file", "true"])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn(f"the file {path} (no rendezvous port", res.stdout)
        self.assertIn("store_type=file", res.stdout)

    def test_a_file_in_a_missing_directory_is_named(self):
        path = os.path.join(self.dir, "no-such-dir", "rdzv")
        res = run_ptrun(self.args(path, nnodes="1:2"), timeout=30)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(path, res.stderr)
        self.assertIn("cannot open", res.stderr)
        self.assertNotIn("internal error", res.stderr)

    def test_bad_store_type_settings_are_usage_errors(self):
        path = os.path.join(self.dir, "rdzv")
        cases = [
            (["--rdzv-conf", "store_type=nfs"], "store_type=nfs: expected tcp or file"),
            (["--rdzv-backend", "static", "--rdzv-conf", "store_type=file"],
             "store_type=file: only applies to --rdzv-backend c10d (the backend is static)"),
            (["--rdzv-backend", "c10d", "--rdzv-conf", "store_type=file"],
             "needs --rdzv-endpoint PATH"),
            (["--rdzv-backend", "c10d", "--rdzv-endpoint", path, "--rdzv-conf",
              "store_type=file,is_host=1"], "drop is_host"),
        ]
        for extra, expected in cases:
            with self.subTest(extra=extra):
                res = run_ptrun(["--nnodes", "2", *extra, "true"])
                self.assertEqual(res.returncode, 2, res.stderr)
                self.assertIn(expected, res.stderr)


if __name__ == "__main__":
    unittest.main()
