"""torchrun habits on the command line: the last of a repeated flag wins (wrapper scripts append
overrides), `--` before PROGRAM, --help's usage line, --explain's aligned columns."""
import os
import re
import subprocess
import unittest

from harness import PTRUN, PtrunTestCase, read_dumps, run_ptrun


class TorchrunHabits(PtrunTestCase):
    def test_a_flag_given_twice_takes_the_last_value(self):
        res = run_ptrun(["--nproc-per-node", "1", "--max-restarts", "5", "--nproc_per_node=3", "--max_restarts", "0",
                         "--standalone", "--standalone", *self.worker("--dump", self.dir)])
        self.assertEqual(res.returncode, 0, res.stderr)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(0, 0), (1, 0), (2, 0)])
        self.assertEqual(dumps[(0, 0)]["env"]["TORCHELASTIC_MAX_RESTARTS"], "0")

    def test_a_flag_over_its_pet_variable_still_wins_when_repeated(self):
        res = run_ptrun(["--nproc-per-node", "4", "--nproc-per-node", "2", *self.worker("--dump", self.dir)],
                        env={"PET_NPROC_PER_NODE": "3"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(len(read_dumps(self.dir)), 2)

    def test_double_dash_before_the_program(self):
        res = run_ptrun(["--nproc-per-node", "2", "--", *self.worker("--dump", self.dir, "--", "x")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(len(read_dumps(self.dir)), 2)
        res = run_ptrun(["--", *self.worker("--dump", self.dir)])
        self.assertEqual(res.returncode, 0, res.stderr)

    def test_local_rank_macro_in_the_arguments(self):
        # torchrun replaces ${local_rank} in the worker's arguments (#37.2): each worker dumps
        # into its own directory.
        for lr in (0, 1):
            os.mkdir(os.path.join(self.dir, f"d_{lr}"))
        args = ["--nproc-per-node", "2", *self.worker("--dump", os.path.join(self.dir, "d_${local_rank}"))]
        res = run_ptrun(args)
        self.assertEqual(res.returncode, 0, res.stderr)
        for lr in (0, 1):
            self.assertEqual(sorted(read_dumps(os.path.join(self.dir, f"d_{lr}"))), [(lr, 0)])
        res = run_ptrun(["--explain", *args])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout, r"worker argv .*d_\$\{local_rank\}'? +\(\$\{local_rank\} is each "
                                     r"worker's local rank \(as torchrun\)\)")
        self.assertRegex(res.stdout, r"  local rank 1 .*d_1 +\(what it execs\)")

    def test_loglevel_sets_what_ptrun_says_on_the_console(self):
        # torchrun's LOGLEVEL (#37.5): WARNING keeps ptrun's info lines off the console (the run
        # log keeps them), DEBUG shows its debug lines too.
        args = ["--nproc-per-node", "2", *self.worker()]  # ptrun says it sets OMP_NUM_THREADS
        quiet = run_ptrun(args, env={"LOGLEVEL": "WARNING"})
        self.assertEqual(quiet.returncode, 0, quiet.stderr)
        self.assertEqual(quiet.stderr, "")
        normal = run_ptrun(args)
        self.assertIn("] info: ", normal.stderr)
        self.assertNotIn("] debug: ", normal.stderr)
        chatty = run_ptrun(args, env={"LOGLEVEL": "debug"})
        self.assertIn("] debug: ", chatty.stderr)

    def test_help_usage_line_names_the_program(self):
        res = run_ptrun(["--help"])
        self.assertEqual(res.returncode, 0)
        self.assertIn("Usage: ptrun [OPTIONS] PROGRAM [ARGS...]", res.stdout.splitlines()[:3])

    def test_explain_columns_stay_aligned(self):
        for args in (["--nnodes", "2", "x"], ["--standalone", "--nproc-per-node", "2", "x"],
                     ["--nnodes", "1:4", "--rdzv-endpoint", "127.0.0.1:29400", "--rdzv-id", "a-rather-long-job-id",
                      "x"],
                     ["--rdzv-backend", "etcd", "--rdzv-endpoint", "https://e1:2379,[fd00::1]", "x"]):
            res = run_ptrun(["--explain", *args])
            self.assertEqual(res.returncode, 0, res.stderr)
            lines = res.stdout.splitlines()
            sources = [line.rindex("(") for line in lines]
            self.assertEqual(len(set(sources)), 1, "the source column starts at one column:\n" + res.stdout)
            for line in lines:
                self.assertEqual(line[sources[0] - 2:sources[0]], "  ", f"value runs into its source: {line!r}")

    def test_explain_etcd_lists_every_member_and_elects_the_coordinator(self):
        res = run_ptrun(["--explain", "--rdzv-backend", "etcd", "--nnodes", "1:4", "--rdzv-endpoint",
                         "e1,e2:2380,[fd00::1]", "--rdzv-conf", "protocol=http", "x"])
        self.assertEqual(res.returncode, 0, res.stderr)
        rows = {line.split("  ")[0]: line for line in res.stdout.splitlines()}
        self.assertRegex(rows["rdzv backend"], r"etcd-v2 +\(flag --rdzv-backend\)$")
        self.assertRegex(rows["etcd"],
                         r"e1:2379, e2:2380, \[fd00::1\]:2379 \(http\) +\(flag --rdzv-endpoint, flag --rdzv-conf\)$")
        self.assertIn("none: the coordinator is elected among the agents (no node hosts the store)", rows["store"])
        self.assertIn("assigned at rendezvous", rows["node rank"])
        self.assertEqual(os.listdir(self.dir), [], "--explain starts nothing")

    def test_explain_says_how_spares_arise(self):
        for args in (["--nnodes", "2:3", "--rdzv-endpoint", "127.0.0.1:29400"],
                     ["--rdzv-backend", "etcd-v2", "--nnodes", "3", "--rdzv-endpoint", "e1,e2,e3"]):
            res = run_ptrun(["--explain", *args, "x"])
            self.assertEqual(res.returncode, 0, res.stderr)
            rows = {line.split("  ")[0]: line for line in res.stdout.splitlines()}
            self.assertIn("a node joining beyond 3 waits as a spare, then takes a lost node's place",
                          rows["spares"])
            self.assertIn("(--nnodes MAX)", rows["spares"])
        res = run_ptrun(["--explain", "--nnodes", "2", "--node-rank", "0", "--master-addr", "h", "x"])
        self.assertNotIn("spares", res.stdout)  # static: no spares

class Start(unittest.TestCase):
    def test_no_standard_streams_are_built_at_start(self):
        # GCC 12's <iostream> puts a std::ios_base::Init in each translation unit including it: the
        # eight standard streams and the classic locale, built at every start of ptrun, 0.1-0.5 ms
        # of a launch (bench/RESULTS.md). ptrun writes no iostreams; only CLI11's parser builds them,
        # when it runs (launcher/cli/src/cli11.hpp).
        callers, function = set(), ""
        with subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", PTRUN], stdout=subprocess.PIPE,
                              text=True) as dump:
            for line in dump.stdout:
                if line.endswith(">:\n"):
                    function = line
                elif "_ZNSt8ios_base4InitC1Ev" in line and "call" in line:
                    callers.add(re.sub(r"^[0-9a-f]+ <(.*)>:\n$", r"\1", function))
        self.assertEqual(dump.returncode, 0)
        allowed = ("parse_command_line_with_cli11", "cli11_streams", "sync_with_stdio")
        unexpected = {c for c in callers if not any(a in c for a in allowed)}
        self.assertEqual(unexpected, set(), "functions that build the standard streams")
        self.assertTrue(any("cli11" in c for c in callers), callers)


if __name__ == "__main__":
    unittest.main()
