"""--log-dir, --redirects, --tee and --local-ranks-filter: each run in its own directory
(<log-dir>/<run-id>_<host>_<UTC time>_<random>/attempt_<n>/<local_rank>/, plus <log-dir>/latest)."""
import glob
import os
import re
import socket
import unittest

from harness import PtrunTestCase, read_dumps, run_ptrun


def run_dir(logs, run_id):
    """The one run directory of `run_id` under `logs` (asserting there is exactly one)."""
    found = glob.glob(os.path.join(logs, run_id + "_*"))
    assert len(found) == 1, found
    return found[0]


STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
FAILS = """import os
raise ValueError(f"boom on rank {os.environ['RANK']} in attempt "
                 f"{os.environ['TORCHELASTIC_RESTART_COUNT']}")
"""


class Logs(PtrunTestCase):
    def test_the_run_log_keeps_what_ptrun_said_with_times_and_the_exit_code(self):
        logs = os.path.join(self.dir, "logs")
        script = os.path.join(self.dir, "fails.py")
        with open(script, "w") as f:
            f.write(FAILS)
        res = run_ptrun(["--nproc-per-node", "1", "--max-restarts", "1", "--log-dir", logs,
                         "--rdzv-id", "rl", script], env={"PYTHON_EXEC": "/usr/bin/python3"})
        self.assertEqual(res.returncode, 1, res.stderr)
        # The console's restart line carries the worker's own message (the runner's summary).
        restart = "restarting the worker group (restart 1 of 1)"
        self.assertRegex(res.stderr, r"failed: exit code 1 \(ValueError: boom on rank 0 in "
                                     r"attempt 0\); " + re.escape(restart))
        with open(os.path.join(run_dir(logs, "rl"), "ptrun.log")) as f:
            text = f.read()
        lines = text.splitlines()
        self.assertTrue(all(re.match(STAMP, line) for line in lines), text)
        said = [line[25:] for line in lines]  # without the time
        self.assertIn("worker logs and error files:", said[0])
        self.assertTrue(any("(ValueError: boom on rank 0 in attempt 0); " + restart in line
                            for line in said), text)
        self.assertIn("Root cause (first failure):", said)
        self.assertIn("  exception   : ValueError: boom on rank 0 in attempt 1", said)
        self.assertEqual(said[-1], "ptrun exits with code 1")
        # Everything ptrun said on stderr is there, in order (workers' output is not), and its
        # debug lines besides (the containment in use), which are the run log's alone.
        own = [line for line in res.stderr.splitlines() if line.strip() and "Traceback" not in line
               and not line.startswith(("  File", "    ", "ValueError"))]
        self.assertEqual([line for line in said[:-1] if line.strip() and "] debug: " not in line], own)
        self.assertTrue(any("] debug: containment: " in line for line in said), text)
        self.assertNotIn("] debug: ", res.stderr)

    def test_redirects_write_per_worker_files(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "r1", "--redirects", "3",
                         *self.worker("--print", "2")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertNotIn("out line", res.stdout)
        for rank in (0, 1):
            base = os.path.join(run_dir(logs, "r1"), "attempt_0", str(rank))
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
        with open(os.path.join(run_dir(logs, "r2"), "attempt_0", "3", "stdout.log")) as f:
            self.assertEqual(len(f.read().splitlines()), 50)
        self.assertIn("err line", res.stderr, "stderr was not tee'd, so it stays on the terminal")

    def test_per_rank_redirect_mapping(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "r3", "--redirects", "1:1",
                         *self.worker("--print", "1")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("out line 0 from rank 0", res.stdout)
        self.assertNotIn("from rank 1", res.stdout)
        self.assertTrue(os.path.exists(os.path.join(run_dir(logs, "r3"), "attempt_0", "1", "stdout.log")))

    def test_local_ranks_filter_shows_only_chosen_ranks(self):
        logs = os.path.join(self.dir, "logs")
        res = run_ptrun(["--nproc-per-node", "3", "--log-dir", logs, "--rdzv-id", "r4", "--tee", "3",
                         "--local-ranks-filter", "0,2", *self.worker("--print", "2")])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("from rank 0", res.stdout)
        self.assertIn("from rank 2", res.stdout)
        self.assertNotIn("from rank 1", res.stdout + res.stderr)
        with open(os.path.join(run_dir(logs, "r4"), "attempt_0", "1", "stdout.log")) as f:
            self.assertIn("out line 1 from rank 1", f.read())

    def test_a_reused_log_dir_and_run_id_keep_each_run_apart(self):
        # A SLURM requeue reuses both: the second run must not report the first run's error file,
        # nor overwrite or mix with its logs.
        logs = os.path.join(self.dir, "logs")
        common = ["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "slurm-7.0", "--redirects", "3"]
        first = run_ptrun([*common, *self.worker("--fail-rank", "1", "--exit", "1", "--print", "1",
                                                 "--error-message", "FileNotFoundError: from the first run")])
        self.assertEqual(first.returncode, 1, first.stderr)
        self.assertIn("FileNotFoundError: from the first run", first.stderr)
        second = run_ptrun([*common, *self.worker("--fail-rank", "1", "--exit", "3")])
        self.assertEqual(second.returncode, 3, second.stderr)
        self.assertNotIn("from the first run", second.stderr)
        self.assertIn("<none written>", second.stderr)
        runs = sorted(glob.glob(os.path.join(logs, "slurm-7.0_*")))
        self.assertEqual(len(runs), 2, runs)
        self.assertRegex(os.path.basename(runs[0]),
                         rf"^slurm-7\.0_{re.escape(socket.gethostname().split('.')[0])}_\d{{8}}T\d{{6}}Z_\w{{6}}$")
        latest = os.path.join(logs, "latest")
        self.assertTrue(os.path.islink(latest))
        second_dir = os.path.realpath(latest)
        self.assertIn(second_dir, second.stderr, "the run directory is announced")
        first_dir, = [r for r in runs if os.path.realpath(r) != second_dir]
        with open(os.path.join(first_dir, "attempt_0", "1", "stdout.log")) as f:
            self.assertEqual(f.read(), "out line 0 from rank 1\n", "the first run's logs are kept")
        self.assertTrue(os.path.exists(os.path.join(first_dir, "attempt_0", "1", "error.json")))
        self.assertFalse(os.path.exists(os.path.join(second_dir, "attempt_0", "1", "error.json")))

    def test_a_temporary_log_directory_is_removed_when_nothing_was_written_there(self):
        # Without --log-dir, --tee/--redirects write to a directory under $TMPDIR: a run whose
        # workers wrote nothing leaves nothing; one that wrote keeps it and says where at the end.
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        silent = run_ptrun(["--nproc-per-node", "2", "--tee", "3", *self.worker()],
                           env={"TMPDIR": tmp})
        self.assertEqual(silent.returncode, 0, silent.stderr)
        self.assertEqual(os.listdir(tmp), [], silent.stderr)
        self.assertNotIn("worker logs kept", silent.stderr)
        chatty = run_ptrun(["--nproc-per-node", "2", "--redirects", "3",
                            *self.worker("--print", "1")], env={"TMPDIR": tmp})
        self.assertEqual(chatty.returncode, 0, chatty.stderr)
        last = chatty.stderr.strip().splitlines()[-1]
        m = re.search(r"worker logs kept in (\S+) \(no --log-dir: remove it when done\)", last)
        self.assertIsNotNone(m, chatty.stderr)
        self.assertTrue(m.group(1).startswith(tmp + "/ptrun-"), m.group(1))
        self.assertTrue(os.path.isdir(m.group(1)))
        # ptrun's own run log does not keep a directory, but goes with one that is kept.
        with open(os.path.join(m.group(1), "ptrun.log")) as f:
            self.assertIn("worker logs kept in", f.read())

    def test_the_report_names_no_file_that_is_gone_after_exit(self):
        # Without --log-dir error files live in a private temporary directory removed at exit:
        # the report carries what the worker wrote instead of pointing at a vanished path.
        res = run_ptrun(["--nproc-per-node", "2",
                         *self.worker("--fail-rank", "0", "--exit", "4", "--error-message", "ValueError: kept")])
        self.assertEqual(res.returncode, 4, res.stderr)
        self.assertIn("ValueError: kept", res.stderr)
        self.assertIn("Traceback", res.stderr)
        for path in re.findall(r"(/[^\s:()]+)", res.stderr):
            if "error.json" in path or "ptrun-" in path:
                self.assertTrue(os.path.exists(path), f"the report names {path}, gone after exit:\n{res.stderr}")



# Prints its pid on stdout and stderr at once, before ptrun may have heard it was forked.
SAYS_PID = """import os, sys
print(f"pid {os.getpid()} rank {os.environ['RANK']}", flush=True)
print(f"err pid {os.getpid()}", file=sys.stderr, flush=True)
"""


class LinePrefixTemplate(PtrunTestCase):
    """--log-line-prefix-template / TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (issue 37.3): the prefix of
    tee'd console lines and filtered_*.log lines; per-worker log files keep the raw bytes."""

    TEMPLATE = "[${role_name}${local_rank}|$rank|${hostname}|${pid}]: "

    def test_console_tee_and_filtered_log_agree_on_the_template_prefix(self):
        logs = os.path.join(self.dir, "logs")
        dumps = os.path.join(self.dir, "dumps")
        os.mkdir(dumps)
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "p1", "--tee", "3",
                         "--role", "trainer", "--duplicate-stdout-filters", "line 1",
                         "--log-line-prefix-template", self.TEMPLATE,
                         *self.worker("--print", "2", "--dump", dumps)])
        self.assertEqual(res.returncode, 0, res.stderr)
        pids = {rank: env["pid"] for (rank, _), env in read_dumps(dumps).items()}
        host = re.escape(socket.gethostname())
        prefixed = re.compile(rf"^\[trainer(\d)\|(\d)\|{host}\|(\d+)\]: (out|err) line \d from rank (\d)$")
        out = res.stdout.splitlines()
        err = [line for line in res.stderr.splitlines() if " line " in line]
        self.assertEqual((len(out), len(err)), (4, 4), res.stdout + res.stderr)
        for line in out + err:
            m = prefixed.match(line)
            self.assertIsNotNone(m, line)
            self.assertEqual(len({m.group(1), m.group(2), m.group(5)}), 1, line)  # one worker's
            self.assertEqual(int(m.group(3)), pids[int(m.group(5))], line)
        run = run_dir(logs, "p1")
        with open(os.path.join(run, "attempt_0", "filtered_stdout.log")) as f:
            filtered = f.read().splitlines()
        self.assertEqual(sorted(filtered), sorted(line for line in out if "out line 1" in line))
        for rank in (0, 1):  # as torchrun's: the worker's own bytes
            with open(os.path.join(run, "attempt_0", str(rank), "stdout.log")) as f:
                self.assertEqual(f.read(), f"out line 0 from rank {rank}\nout line 1 from rank {rank}\n")

    def test_torchruns_variable_and_the_underscored_spelling_set_it(self):
        res = run_ptrun(["--nproc-per-node", "2", "--tee", "1", *self.worker("--print", "1")],
                        env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${rank}]:"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(sorted(res.stdout.splitlines()),
                         ["[0]:out line 0 from rank 0", "[1]:out line 0 from rank 1"])
        res = run_ptrun(["--log_line_prefix_template=$$ ", "--tee", "1", *self.worker("--print", "1")],
                        env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${rank}]:"})
        self.assertEqual(res.stdout, "$ out line 0 from rank 0\n", res.stderr)

    def test_a_forked_workers_pid_is_in_its_first_line(self):
        # --preload: the zygote forks the workers and ptrun hears their pids later; no line may
        # go out before its prefix is whole.
        script = os.path.join(self.dir, "says_pid.py")
        with open(script, "w") as f:
            f.write(SAYS_PID)
        res = run_ptrun(["--nproc-per-node", "3", "--preload", "json", "--tee", "3",
                         "--log-line-prefix-template", "<${pid}> ", script],
                        env={"PYTHON_EXEC": "/usr/bin/python3"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("workers are forked from it", res.stderr)
        lines = res.stdout.splitlines() + [line for line in res.stderr.splitlines() if "err pid" in line]
        self.assertEqual(len(lines), 6, res.stdout + res.stderr)
        for line in lines:
            self.assertRegex(line, r"^<(\d+)> (err )?pid \1( rank \d)?$")

    def test_an_unknown_macro_is_a_usage_error_naming_it(self):
        res = run_ptrun(["--log-line-prefix-template", "[${rank}:${foo}] ", "--tee", "3",
                         *self.worker("--print", "1")])
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("--log-line-prefix-template '[${rank}:${foo}] ': unknown macro ${foo}", res.stderr)
        self.assertNotIn("out line", res.stdout)
        res = run_ptrun([*self.worker()], env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "cost: 5$"})
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("(from TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE): the '$' at character 8 starts no macro",
                      res.stderr)


if __name__ == "__main__":
    unittest.main()
