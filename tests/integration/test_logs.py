"""--log-dir, --redirects, --tee and --local-ranks-filter, laid out as torchrun does."""
import os
import re
import socket
import unittest

from harness import PtrunTestCase, run_ptrun


class Logs(PtrunTestCase):
    def test_redirects_write_per_worker_files(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "r1", "--redirects", "3",
                         *self.worker("--print", "2")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertNotIn("out line", res.stdout)
        for rank in (0, 1):
            base = os.path.join(logs, "r1", "attempt_0", str(rank))
            with open(os.path.join(base, "stdout.log")) as f:
                self.assertEqual(f.read(), f"out line 0 from rank {rank}\nout line 1 from rank {rank}\n")
            with open(os.path.join(base, "stderr.log")) as f:
                self.assertIn(f"err line 1 from rank {rank}", f.read())

    def test_tee_prefixes_whole_console_lines(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "4", "--log-dir", logs, "--rdzv-id", "r2", "--tee", "1",
                         *self.worker("--print", "50")])
        self.assertEqual(res.returncode, 0, res.stderr)
        host = socket.gethostname()
        lines = res.stdout.splitlines()
        self.assertEqual(len(lines), 200)
        for line in lines:
            self.assertRegex(line, rf"^\[{re.escape(host)}:(\d)\] out line \d+ from rank \1$")
        with open(os.path.join(logs, "r2", "attempt_0", "3", "stdout.log")) as f:
            self.assertEqual(len(f.read().splitlines()), 50)
        self.assertIn("err line", res.stderr, "stderr was not tee'd, so it stays on the terminal")

    def test_per_rank_redirect_mapping(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "r3", "--redirects", "1:1",
                         *self.worker("--print", "1")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("out line 0 from rank 0", res.stdout)
        self.assertNotIn("from rank 1", res.stdout)
        self.assertTrue(os.path.exists(os.path.join(logs, "r3", "attempt_0", "1", "stdout.log")))

    def test_local_ranks_filter_shows_only_chosen_ranks(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "3", "--log-dir", logs, "--rdzv-id", "r4", "--tee", "3",
                         "--local-ranks-filter", "0,2", *self.worker("--print", "2")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("from rank 0", res.stdout)
        self.assertIn("from rank 2", res.stdout)
        self.assertNotIn("from rank 1", res.stdout + res.stderr)
        with open(os.path.join(logs, "r4", "attempt_0", "1", "stdout.log")) as f:
            self.assertIn("out line 1 from rank 1", f.read())


if __name__ == "__main__":
    unittest.main()
