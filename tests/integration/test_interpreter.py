"""Which Python runs the workers is said, with its full path: in --explain and in the failure report;
a worker failing on a missing module gets a one-line hint naming PYTHON_EXEC."""
import os
import unittest

from harness import PtrunTestCase, run_ptrun


class Interpreter(PtrunTestCase):
    def setUp(self):
        super().setUp()
        # A PATH whose first python3 is ours: the case of a PATH finding an interpreter without torch.
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)
        self.python = os.path.join(self.bin, "python3")
        os.symlink("/usr/bin/python3", self.python)
        self.script = os.path.join(self.dir, "train.py")
        with open(self.script, "w") as f:
            f.write("import ptrun_no_such_module_xyz\n")
        self.env = {"PATH": self.bin + ":" + os.environ["PATH"]}

    def test_explain_names_the_interpreter_and_where_it_came_from(self):
        res = run_ptrun(["--explain", self.script], env=self.env)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout, rf"interpreter +{self.python} +\(the first python3 on PATH\)")
        res = run_ptrun(["--explain", self.script], env={**self.env, "PYTHON_EXEC": "python3"})
        self.assertRegex(res.stdout, rf"interpreter +{self.python} +\(PYTHON_EXEC\)")
        res = run_ptrun(["--explain", "./a.out"], env=self.env)
        self.assertNotIn("interpreter", res.stdout, "no interpreter for a native program")

    def test_the_report_names_the_interpreter(self):
        res = run_ptrun(["--nproc-per-node", "2", self.script], env=self.env)
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertIn(f"interpreter : {self.python} (the first python3 on PATH)", res.stderr)

    def test_a_missing_module_gets_a_hint(self):
        res = run_ptrun(["--nproc-per-node", "2", "--redirects", "2", self.script], env=self.env)
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertIn(f"hint        : {self.python} cannot import 'ptrun_no_such_module_xyz': set PYTHON_EXEC",
                      res.stderr)


    def test_a_missing_module_gets_the_hint_without_captured_stderr(self):
        # No --redirects/--tee: the traceback went to the terminal, and the runner summed up the
        # ImportError for the report (issue 24). Without the runner, no hint can be given.
        res = run_ptrun(["--nproc-per-node", "2", self.script], env=self.env)
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertIn("exception   : ModuleNotFoundError: No module named 'ptrun_no_such_module_xyz'",
                      res.stderr)
        self.assertIn(f"hint        : {self.python} cannot import 'ptrun_no_such_module_xyz': set PYTHON_EXEC",
                      res.stderr)
        res = run_ptrun(["--nproc-per-node", "2", "--no-runner", self.script], env=self.env)
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertNotIn("hint        :", res.stderr)

if __name__ == "__main__":
    unittest.main()
