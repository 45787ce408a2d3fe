"""The worker environment is exactly torchrun's contract, for 1 to 8 workers."""
import os
import re
import select
import unittest

from harness import PtrunTestCase, read_dumps, run_ptrun

CONTRACT = ["LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE", "WORLD_SIZE",
            "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
            "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
            "TORCHELASTIC_ERROR_FILE", "TORCH_NCCL_ASYNC_ERROR_HANDLING"]


class EnvContract(PtrunTestCase):
    def launch(self, n, *extra, env=None, unset=()):
        res = run_ptrun(["--nproc-per-node", str(n), *extra, *self.worker("--dump", self.dir)], env=env, unset=unset)
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(n)])
        return res, dumps

    def test_every_worker_gets_the_whole_contract(self):
        for n in (1, 2, 3, 4, 8):
            with self.subTest(n=n):
                for f in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, f))
                res, dumps = self.launch(n, "--standalone")
                ports = set()
                run_ids = set()
                for (rank, _), dump in dumps.items():
                    env = dump["env"]
                    for name in CONTRACT:
                        self.assertIn(name, env, f"rank {rank} lacks {name}")
                    self.assertEqual(env["RANK"], str(rank))
                    self.assertEqual(env["LOCAL_RANK"], str(rank))
                    self.assertEqual(env["GROUP_RANK"], "0")
                    self.assertEqual(env["ROLE_RANK"], str(rank))
                    self.assertEqual(env["ROLE_NAME"], "default")
                    self.assertEqual(env["LOCAL_WORLD_SIZE"], str(n))
                    self.assertEqual(env["WORLD_SIZE"], str(n))
                    self.assertEqual(env["GROUP_WORLD_SIZE"], "1")
                    self.assertEqual(env["ROLE_WORLD_SIZE"], str(n))
                    self.assertEqual(env["TORCHELASTIC_RESTART_COUNT"], "0")
                    self.assertEqual(env["TORCHELASTIC_MAX_RESTARTS"], "0")
                    self.assertRegex(env["TORCHELASTIC_ERROR_FILE"], rf"/attempt_0/{rank}/error\.json$")
                    self.assertEqual(dump["pgid"], dump["pid"], "each worker leads its own process group")
                    ports.add(env["MASTER_PORT"])
                    run_ids.add(env["TORCHELASTIC_RUN_ID"])
                self.assertEqual(len(ports), 1)
                self.assertEqual(len(run_ids), 1)
                self.assertNotEqual(run_ids.pop(), "none", "--standalone picks a fresh run id")

    def test_omp_num_threads_is_set_only_for_several_workers(self):
        res, dumps = self.launch(2, unset=("OMP_NUM_THREADS",))
        self.assertEqual(dumps[(0, 0)]["env"]["OMP_NUM_THREADS"], "1")
        self.assertEqual(res.stderr.count("OMP_NUM_THREADS"), 1, "one notice line")

    def test_inherited_variables_pass_through(self):
        _, dumps = self.launch(2, env={"MY_SETTING": "kept", "OMP_NUM_THREADS": "3"})
        self.assertEqual(dumps[(1, 0)]["env"]["MY_SETTING"], "kept")
        self.assertEqual(dumps[(1, 0)]["env"]["OMP_NUM_THREADS"], "3")

    def test_underscore_spellings_and_pet_variables(self):
        _, dumps = self.launch(3, "--rdzv_id", "job42", "--max_restarts", "2", "--role", "trainer")
        env = dumps[(2, 0)]["env"]
        self.assertEqual(env["TORCHELASTIC_RUN_ID"], "job42")
        self.assertEqual(env["TORCHELASTIC_MAX_RESTARTS"], "2")
        self.assertEqual(env["ROLE_NAME"], "trainer")
        res = run_ptrun([*self.worker("--dump", self.dir)], env={"PET_NPROC_PER_NODE": "4", "PET_RDZV_ID": "fromenv"})
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(dumps[(3, 0)]["env"]["TORCHELASTIC_RUN_ID"], "fromenv")

    def test_flags_win_over_pet_variables(self):
        res = run_ptrun(["--nproc_per_node=2", *self.worker("--dump", self.dir)], env={"PET_NPROC_PER_NODE": "5"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(len(read_dumps(self.dir)), 2)

    def test_master_port_is_the_store_ptrun_holds(self):
        import socket
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        _, dumps = self.launch(2, "--master-port", str(port))
        self.assertEqual({d["env"]["MASTER_PORT"] for d in dumps.values()}, {str(port)})
        self.assertEqual(dumps[(0, 0)]["env"]["TORCHELASTIC_USE_AGENT_STORE"], "True")
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            res = run_ptrun(["--master-port", str(busy.getsockname()[1]), *self.worker("--dump", self.dir)])
            self.assertEqual(res.returncode, 1)
            self.assertIn(str(busy.getsockname()[1]), res.stderr)
            self.assertIn("store", res.stderr)

    def test_worker_arguments_are_passed_untouched(self):
        res = run_ptrun(["--nproc-per-node", "1", "/bin/echo", "--nproc-per-node", "7", "a  b", "--", "-x"])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout, "--nproc-per-node 7 a  b -- -x\n")

    def test_python_scripts_run_under_python3_u(self):
        script = os.path.join(self.dir, "show.py")
        with open(script, "w") as f:
            f.write("import sys, os\nargv = open('/proc/self/cmdline').read().split('\\0')\n"
                    "print(argv[1], sys.argv[1:], os.environ['RANK'])\n")
        res = run_ptrun(["--nproc-per-node", "1", script, "--lr", "3"], env={"PYTHON_EXEC": "/usr/bin/python3"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.strip(), "-u ['--lr', '3'] 0")
        res = run_ptrun(["-m", "json.tool", "--help"], env={"PYTHON_EXEC": "/usr/bin/python3"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("usage", res.stdout)

    def test_workers_get_no_descriptor_of_ptruns_caller(self):
        """Descriptors ptrun's caller left open (here fds 7 and 251, one a pipe's write end) never
        reach an exec'd or a forked (--preload) worker: it gets 0-2 (and ptrun's events channel)."""
        script = os.path.join(self.dir, "fds.py")
        with open(script, "w") as f:
            f.write("import os, sys\nfor fd in (7, 251):\n"  # one write a line: ranks interleave
                    "    try:\n        os.fstat(fd)\n        sys.stdout.write(f'{fd} open\\n')\n"
                    "    except OSError:\n        sys.stdout.write(f'{fd} closed\\n')\n")
        read_end, write_end = os.pipe()
        try:
            os.dup2(write_end, 7)
            os.dup2(write_end, 251)
            for extra in ([], ["--preload", "json"]):
                with self.subTest(extra=extra):
                    res = run_ptrun(["--nproc-per-node", "2", *extra, script], pass_fds=(7, 251),
                                    env={"PYTHON_EXEC": "/usr/bin/python3"})
                    self.assertEqual(res.returncode, 0, res.stderr)
                    self.assertEqual(sorted(res.stdout.split("\n")),
                                     ["", "251 closed", "251 closed", "7 closed", "7 closed"])
            for fd in (7, 251, write_end):
                os.close(fd)
            # No worker, and nothing a worker left, holds the write end: the reader sees its end.
            ready, _, _ = select.select([read_end], [], [], 10)
            self.assertTrue(ready, "something still holds the caller's pipe")
            self.assertEqual(os.read(read_end, 1), b"")
        finally:
            for fd in (read_end, write_end, 7, 251):
                try:
                    os.close(fd)
                except OSError:
                    pass


if __name__ == "__main__":
    unittest.main()
