"""Bad command lines: one line naming the value and what was expected, exit 2, nothing started."""
import os
import stat
import unittest

from harness import PtrunTestCase, run_ptrun


def assert_one_error_line(test, args, res, expected):
    """`res` (ptrun run with `args`) exited 2 with one line `ptrun: error: ...` holding every
    text of `expected`."""
    test.assertEqual(res.returncode, 2, f"{args}: {res.stderr}")
    lines = res.stderr.strip().splitlines()
    test.assertEqual(len(lines), 1, res.stderr)
    test.assertTrue(lines[0].startswith("ptrun: error: "), lines[0])
    for text in expected:
        test.assertIn(text, lines[0])


class CliErrors(PtrunTestCase):
    def assert_rejected(self, args, *expected, env=None):
        assert_one_error_line(self, args, run_ptrun(args, env=env), expected)
        self.assertEqual(os.listdir(self.dir), [], "nothing may be started")

    def dump(self):
        return self.worker("--dump", self.dir)

    def test_bad_values_name_the_input(self):
        self.assert_rejected(["--nnodes", "3:2", *self.dump()], "'3:2'", "MIN")
        self.assert_rejected(["--nnodes", "x", *self.dump()], "--nnodes 'x'", "N or MIN:MAX")
        self.assert_rejected(["--nproc-per-node", "0", *self.dump()], "'0'", "positive integer")
        self.assert_rejected(["--nproc_per_node", "gpu", *self.dump()], "no GPU", env={"CUDA_VISIBLE_DEVICES": ""})
        self.assert_rejected(["--rdzv-backend", "zookeeper", *self.dump()], "'zookeeper'", "static, c10d or etcd-v2")
        self.assert_rejected(["--rdzv-conf", "join_timeout", *self.dump()], "'join_timeout'", "KEY=VALUE")
        self.assert_rejected(["--max-restarts", "-1", *self.dump()], "--max-restarts '-1'")
        self.assert_rejected(["--redirects", "7", *self.dump()], "--redirects '7'")
        self.assert_rejected(["--tee", "0:9", *self.dump()], "--tee '0:9'")
        self.assert_rejected(["--signals-to-handle", "SIGFOO", *self.dump()], "SIGFOO")
        self.assert_rejected(["--start-method", "thread", *self.dump()], "'thread'")
        self.assert_rejected(["--shutdown-timeout", "soon", *self.dump()], "'soon'")
        self.assert_rejected(["--bogus-flag", *self.dump()], "--bogus-flag")
        self.assert_rejected(["-m", "--no-python", "mod"], "--no-python")

    def test_control_characters_cannot_forge_a_line_and_errors_name_their_source(self):
        forged = "x\n[ptrun host:1] info: all workers succeeded\x1b[2K"
        self.assert_rejected(["--rdzv-backend", forged, *self.dump()],
                             "'x\\n[ptrun host:1] info: all workers succeeded\\e[2K'")
        self.assert_rejected(["--nproc-per-nodes", "2", *self.dump()],
                             "did you mean --nproc-per-node?")
        self.assert_rejected(["--rdzv", "x", *self.dump()], "ambiguous option '--rdzv'",
                             "--rdzv-backend, --rdzv-endpoint, --rdzv-id, --rdzv-conf")
        self.assert_rejected([*self.dump()], "--nnodes '0'", "(from PET_NNODES)",
                             env={"PET_NNODES": "0"})
        self.assert_rejected([*self.dump()], "--max-restarts 'x' (from PET_MAX_RESTARTS)",
                             env={"PET_MAX_RESTARTS": "x"})

    def test_a_rank_filter_naming_missing_local_ranks_is_refused(self):
        # It used to hide every worker's output without a word.
        self.assert_rejected(["--nproc-per-node", "2", "--tee", "3", "--local-ranks-filter", "5", *self.dump()],
                             "--local-ranks-filter '5'", "local ranks 0-1")
        self.assert_rejected(["--nproc-per-node", "2", "--local-ranks-filter", "0,2", *self.dump()],
                             "--local-ranks-filter '0,2'", "2")

    def test_torchruns_other_variables_are_checked_and_named(self):
        self.assert_rejected(self.dump(), "LOGLEVEL 'chatty'", "DEBUG, INFO, WARNING, ERROR or CRITICAL",
                             env={"LOGLEVEL": "chatty"})
        self.assert_rejected(self.dump(), "--shutdown-timeout 'x' (from TORCH_ELASTIC_SHUTDOWN_TIMEOUT)",
                             env={"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "x"})

    def test_pet_variable_errors_say_where_the_value_came_from(self):
        self.assert_rejected([*self.dump()], "PET_", "'abc'", env={"PET_NPROC_PER_NODE": "abc"})

    def test_missing_or_non_executable_program(self):
        self.assert_rejected(["--nproc-per-node", "2"], "missing PROGRAM")
        self.assert_rejected(["./no-such-program"], "'./no-such-program'", "not found")
        self.assert_rejected(["no-such-program-on-path"], "not found on PATH")
        path = os.path.join(os.path.dirname(self.dir), os.path.basename(self.dir) + "-plain.txt")
        self.addCleanup(os.unlink, path)
        with open(path, "w") as f:
            f.write("not a program")
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        res = run_ptrun([path])
        self.assertEqual(res.returncode, 2)
        self.assertIn("not executable", res.stderr)
        self.assert_rejected(["missing_script.py"], "'missing_script.py'", "not found",
                             env={"PYTHON_EXEC": "/usr/bin/python3"})

    def test_inconsistent_multi_node_options_are_refused(self):
        self.assert_rejected(["--nnodes", "2", "--rdzv-backend", "c10d", *self.dump()], "--rdzv-endpoint ''")
        self.assert_rejected(["--nnodes", "2", "--rdzv-endpoint", "h:0", *self.dump()], "fixed port")
        self.assert_rejected(["--node-rank", "1", *self.dump()], "single-node")
        self.assert_rejected(["--nnodes", "2", "--rdzv-endpoint", "h", "--rdzv-conf", "heartbeat=x", *self.dump()],
                             "heartbeat=x")

    def test_bad_etcd_settings_name_the_input(self):
        etcd = ["--rdzv-backend", "etcd-v2"]
        self.assert_rejected([*etcd, *self.dump()], "--rdzv-backend etcd-v2 needs --rdzv-endpoint")
        self.assert_rejected([*etcd, "--rdzv-endpoint", "e1,,e2", *self.dump()],
                             "--rdzv-endpoint 'e1,,e2'", "member 2 is empty")
        self.assert_rejected(["--rdzv-backend", "etcd", "--rdzv-endpoint", "e1,e2:x", *self.dump()],
                             "--rdzv-endpoint 'e1,e2:x'", "member 'e2:x'", "PORT from 1 to 65535")
        self.assert_rejected([*etcd, "--rdzv-endpoint", "e1,e1:2379", *self.dump()], "'e1' and 'e1:2379'",
                             "the same member")
        self.assert_rejected([*etcd, "--rdzv-endpoint", "e1", "--rdzv-conf", "protocol=gopher", *self.dump()],
                             "--rdzv-conf protocol=gopher", "http or https")
        self.assert_rejected([*etcd, "--rdzv-endpoint", "http://e1,https://e2", *self.dump()],
                             "'http://e1' and 'https://e2'")
        cert = os.path.join(os.path.dirname(self.dir), os.path.basename(self.dir) + "-cert.pem")
        self.addCleanup(os.unlink, cert)
        with open(cert, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\n")
        self.assert_rejected([*etcd, "--rdzv-endpoint", "https://e1", "--rdzv-conf", f"cert={cert}", *self.dump()],
                             f"--rdzv-conf cert={cert}", "key=FILE")
        missing = cert + ".missing"
        self.assert_rejected([*etcd, "--rdzv-endpoint", "e1", "--rdzv-conf", f"protocol=https,cacert={missing}",
                              *self.dump()], f"--rdzv-conf cacert={missing}", "No such file")
        self.assert_rejected([*etcd, "--rdzv-endpoint", "e1", "--rdzv-conf", f"ca_cert={cert}", *self.dump()],
                             f"--rdzv-conf ca_cert={cert}", "protocol=https")
        self.assert_rejected(["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf",
                              f"protocol=https,cacert={cert}", *self.dump()],
                             f"--rdzv-conf cacert={cert}", "only applies to --rdzv-backend etcd-v2",
                             "the backend is c10d")
        self.assert_rejected(["--rdzv-conf", "ssl_cert=c.pem", *self.dump()], "ssl_cert=c.pem",
                             "the backend is static")
        self.assert_rejected([*self.dump()], "--rdzv-endpoint 'e1,'", "(from PET_RDZV_ENDPOINT)",
                             env={"PET_RDZV_BACKEND": "etcd-v2", "PET_RDZV_ENDPOINT": "e1,"})

    def test_help_and_version(self):
        res = run_ptrun(["--help"])
        self.assertEqual(res.returncode, 0)
        for flag in ("--nproc-per-node,--nproc_per_node", "--standalone", "--rdzv-conf", "--local-ranks-filter",
                     "--shutdown-timeout", "--signals-to-handle", "PET_NNODES"):
            self.assertIn(flag, res.stdout)
        res = run_ptrun(["--version"])
        self.assertEqual(res.returncode, 0)
        self.assertRegex(res.stdout, r"^ptrun \d+\.\d+\.\d+\n$")



class HostsOptionErrors(PtrunTestCase):
    """--hosts: each host's options are checked by the launching ptrun before any remote shell
    starts (exit 2, one line naming the option); what depends on a host's devices (--nproc-per-node
    gpu on a login node without GPUs) or files (etcd's TLS files) is left to the host."""

    def setUp(self):
        super().setUp()
        self.called = os.path.join(self.dir, "called")
        self.shell = os.path.join(self.dir, "shell")
        with open(self.shell, "w") as f:  # records its call; "unreachable" (ssh's 255)
            f.write(f"#!/bin/sh\necho \"$1\" >> '{self.called}'\nexit 255\n")
        os.chmod(self.shell, stat.S_IRWXU)

    def hosts(self, hosts, *args, env=None):
        return run_ptrun(["--hosts", hosts, "--remote-shell", self.shell, *args, "prog"], env=env)

    def assert_refused_here(self, hosts, args, *expected):
        assert_one_error_line(self, args, self.hosts(hosts, *args), expected)
        self.assertFalse(os.path.exists(self.called), f"{args}: a remote shell was started")

    def test_bad_values_are_usage_errors_before_any_remote_shell(self):
        self.assert_refused_here("a,b", ["--nproc-per-node", "x"], "--nproc-per-node 'x'",
                                 "expected a positive integer")
        self.assert_refused_here("a,b", ["--nproc-per-node", "gpu:1,x"],
                                 "--nproc-per-node 'gpu:1,x'")
        self.assert_refused_here("a,b", ["--max-restarts", "-1"], "--max-restarts '-1'")
        self.assert_refused_here("a,b", ["--checkpoint-grace", "soon"], "--checkpoint-grace 'soon'")
        self.assert_refused_here("a,b", ["--shutdown-timeout", "soon"], "--shutdown-timeout 'soon'")
        self.assert_refused_here("a,b", ["--restart-policy", "never"], "--restart-policy 'never'")
        self.assert_refused_here("a,b", ["--rdzv-conf", "join_timeout"], "'join_timeout'",
                                 "KEY=VALUE")
        # host b's 1 slot cannot take local rank 3: named with its host
        self.assert_refused_here("a:4,b:1", ["--local-ranks-filter", "3"], "host b: ",
                                 "--local-ranks-filter '3'")

    def test_host_dependent_values_are_left_to_the_hosts(self):
        for args in (["--nproc-per-node", "gpu"], ["--nproc-per-node", "xpu:1,3"],
                     ["--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "https://e1:2379",
                      "--rdzv-conf", "cacert=/nonexistent/ca.pem"]):
            with self.subTest(args=args):
                if os.path.exists(self.called):
                    os.unlink(self.called)
                res = self.hosts("a", *args, env={"CUDA_VISIBLE_DEVICES": ""})  # none here
                self.assertEqual(res.returncode, 255, res.stderr)
                self.assertIn("host a: the remote shell exited with code 255", res.stderr)
                with open(self.called) as f:
                    self.assertEqual(f.read(), "a\n")


if __name__ == "__main__":
    unittest.main()
