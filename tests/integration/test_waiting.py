"""Waiting for nodes, said usefully: at the first wait the exact command another node runs (and it
works as printed), a line a minute off a terminal, the last call said as such, no "waiting for the
other nodes" in a one-node round, and which workers a half-finished group still waits on.
Multi-node jobs here run on loopback at an ephemeral port."""
import os
import re
import shlex
import subprocess
import time
import unittest

from harness import (PTRUN, PtrunTestCase, _env, free_port, read_dumps, run_ptrun, start_ptrun,
                     wait_output)


def start_hosting(args, attempts=5, env=None):
    """Starts a multi-node ptrun hosting the store on a free port: (process, port, stderr so far);
    another port is tried when the chosen one was taken in between."""
    for _ in range(attempts):
        port = free_port()
        proc = start_ptrun([a.replace("{port}", str(port)) for a in args], env=env)
        try:
            return proc, port, wait_output(proc.stderr, "is this machine only")
        except AssertionError as e:
            proc.kill()
            proc.communicate()
            if "Address already in use" not in str(e):
                raise
    raise AssertionError("no free port")


def run_hosting(args, **kw):
    """run_ptrun with "{port}" in `args` replaced by a free port (another one if it was taken)."""
    for _ in range(5):
        port = str(free_port())
        res = run_ptrun([a.replace("{port}", port) for a in args], **kw)
        if "Address already in use" not in res.stderr:
            return res
    raise AssertionError("no free port")


class Waiting(PtrunTestCase):
    def test_the_first_wait_prints_the_command_another_node_runs_and_it_works_as_printed(self):
        first, port, said = start_hosting(["--nnodes", "2", "--master-port", "{port}", *self.worker("--dump", self.dir)])
        self.leftover.append(first.pid)
        match = re.search(r"run this on it:\n.*?info:   (ptrun .*)\n", said)
        self.assertTrue(match, said)
        command = shlex.split(match.group(1))
        self.assertEqual(command[:7], ["ptrun", "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-endpoint",
                                       f"127.0.0.1:{port}"], said)
        self.assertIn("127.0.0.1 is this machine only", said)
        second = subprocess.run([PTRUN, *command[1:]], env=_env(None), capture_output=True, text=True, timeout=60)
        self.assertEqual(second.returncode, 0, second.stderr)
        out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(0, 0), (1, 0)])
        self.assertEqual({d["env"]["WORLD_SIZE"] for d in dumps.values()}, {"2"})

    def test_off_a_terminal_waiting_is_said_once_a_minute(self):
        start = time.monotonic()
        res = run_hosting(["--nnodes", "2", "--master-port", "{port}", "--rdzv-conf", "join_timeout=12",
                           *self.worker()], timeout=60)
        self.assertGreaterEqual(time.monotonic() - start, 12)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("timed out", res.stderr)
        self.assertEqual(res.stderr.count("waiting for nodes"), 2, res.stderr)  # the first wait and the timeout
        self.assertIn("12 s (join_timeout)", res.stderr)

    def test_the_last_call_says_minimum_reached_and_a_one_node_round_waits_on_nobody(self):
        res = run_hosting(["--nnodes", "1:2", "--rdzv-endpoint", "127.0.0.1:{port}",
                           "--rdzv-conf", "last_call_timeout=3", *self.worker("--dump", self.dir)], timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stderr, r"minimum reached: 1 of 2 nodes joined; admitting more nodes for [123] s")
        self.assertNotIn(" s of 600 s", res.stderr)
        self.assertNotIn("waiting for the other nodes", res.stderr)
        self.assertEqual(sorted(read_dumps(self.dir)), [(0, 0)])


    def test_a_group_half_done_says_which_workers_it_still_waits_on(self):
        notifier_dir = self.dir
        proc = start_ptrun(["--nproc-per-node", "3", "--shutdown-timeout", "1",
                            *self.worker("--dump", notifier_dir, "--fail-rank", "0", "--hang", "--others-succeed")],
                           env={"PTRUN_STRAGGLER_NOTICE": "1"})
        self.leftover.append(proc.pid)
        said = wait_output(proc.stderr, " for 1 s")
        pid = read_dumps(notifier_dir)[(0, 0)]["pid"]
        self.assertIn(f"2/3 workers exited 0; still waiting on rank 0 (pid {pid}) for 1 s", said)
        said = wait_output(proc.stderr, " for 3 s")  # then after twice as long
        proc.terminate()
        proc.communicate(timeout=30)

    def test_a_bad_straggler_notice_is_a_usage_error(self):
        res = run_ptrun(self.worker(), env={"PTRUN_STRAGGLER_NOTICE": "soon"})
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("PTRUN_STRAGGLER_NOTICE", res.stderr)


if __name__ == "__main__":
    unittest.main()
