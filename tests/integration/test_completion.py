"""Shell completion: `ptrun --print-completion SHELL` loaded into a real bash (and into zsh and tcsh
where they are installed; their scripts' structure is checked everywhere), against --help's options:
both spellings of every option, the values of options whose values are words, directories for
--log-dir, and the program's own completion after the program."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import DEADLINE, PTRUN, run_ptrun

# Runs the completion function `complete -p ptrun` names with COMP_WORDS set to the arguments
# after $0 (the script), the last one the word being completed; prints COMPREPLY, one a line.
COMPLETE = r'''
source "$0" || exit 3
spec=$(complete -p ptrun) || exit 4
fn=${spec#*-F }; fn=${fn%% *}
COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$fn" ptrun "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


def help_spellings():
    """Every option spelling ptrun's --help lists ("-r", "--nproc-per-node", "--nproc_per_node")."""
    res = run_ptrun(["--help"])
    assert res.returncode == 0, res.stderr
    out = set()
    for line in res.stdout.splitlines():
        m = re.match(r"\s+(-[-\w,]*)", line)
        if m:
            out.update(name for name in m.group(1).split(",") if name)
    return out


class BashCompletion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ptrun-completion-")
        cls.dir = cls.tmp.name
        res = run_ptrun(["--print-completion", "bash"])
        assert res.returncode == 0, res.stderr
        cls.script = os.path.join(cls.dir, "ptrun.bash")
        with open(cls.script, "w") as f:
            f.write(res.stdout)
        cls.cwd = os.path.join(cls.dir, "cwd")
        os.makedirs(os.path.join(cls.cwd, "logs"))
        for name in ("train.py", "logfile", "args.txt"):
            open(os.path.join(cls.cwd, name), "w").close()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def complete(self, *words):
        """COMPREPLY for `ptrun WORDS...` in a non-interactive bash (the last word is completed)."""
        res = subprocess.run(["bash", "--norc", "--noprofile", "-c", COMPLETE, self.script, "ptrun", *words],
                             cwd=self.cwd, capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(res.returncode, 0, res.stderr)
        return [line for line in res.stdout.splitlines() if line]

    def test_source_print_completion_registers_ptrun(self):
        res = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                              'source <("$0" --print-completion bash) && complete -p ptrun', PTRUN],
                             capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.strip(), "complete -F _ptrun ptrun")

    def test_an_option_prefix_offers_both_spellings(self):
        self.assertEqual(sorted(self.complete("--nproc")), ["--nproc-per-node", "--nproc_per_node"])
        self.assertEqual(sorted(self.complete("--standalone", "--rdzv-b")), ["--rdzv-backend"])

    def test_every_option_of_help_is_offered(self):
        offered = set(self.complete("-"))
        self.assertEqual(offered, help_spellings())
        self.assertIn("--print-completion", offered)

    def test_values_that_are_words_complete_after_either_spelling_and_after_equals(self):
        backends = ["static", "c10d", "etcd-v2", "etcd"]
        self.assertEqual(self.complete("--rdzv-backend", ""), backends)
        self.assertEqual(self.complete("--rdzv_backend", "e"), ["etcd-v2", "etcd"])
        self.assertEqual(self.complete("--rdzv-backend", "=", ""), backends)  # bash splits at '='
        self.assertEqual(self.complete("--rdzv-backend=c"), ["--rdzv-backend=c10d"])  # unsplit
        self.assertEqual(self.complete("--nnodes", "2", "--nproc-per-node", ""),
                         ["auto", "cpu", "gpu", "xpu", "hpu", "npu"])
        self.assertEqual(self.complete("--slurm-mode", "per"), ["per-node", "per-rank"])
        self.assertEqual(self.complete("-r", ""), ["0", "1", "2", "3"])
        self.assertEqual(self.complete("--print-completion", ""), ["bash", "zsh", "tcsh"])
        self.assertEqual(self.complete("--nnodes", ""), [], "a free value offers nothing")

    def test_log_dir_completes_directories(self):
        self.assertEqual(self.complete("--log-dir", "log"), ["logs"])
        self.assertEqual(self.complete("--log_dir", "=", "lo"), ["logs"])

    def test_the_program_completes_as_a_file_or_command_and_then_as_its_own(self):
        self.assertIn("train.py", self.complete("--nproc-per-node", "2", "tra"))
        self.assertIn("bash", self.complete("--no-python", "bas"))
        self.assertIn("train.py", self.complete("--", "tra"))
        # After the program no ptrun option: its arguments are its own (file names here).
        self.assertEqual(self.complete("train.py", "--nproc"), [])
        self.assertEqual(self.complete("--standalone", "train.py", "ar"), ["args.txt"])
        self.assertEqual(self.complete("--nnodes", "=", "2", "train.py", "--rdzv"), [])


class OtherShells(unittest.TestCase):
    def script(self, shell):
        res = run_ptrun(["--print-completion", shell])
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stderr, "")
        return res.stdout

    def test_zsh_script_has_a_spec_for_every_spelling(self):
        script = self.script("zsh")
        self.assertTrue(script.startswith("#compdef ptrun\n"))
        for spelling in help_spellings():
            self.assertRegex(script, rf"\n +'{re.escape(spelling)}[=+]?\[", spelling)
        self.assertIn(":rdzv backend:(static c10d etcd-v2 etcd)'", script)
        self.assertIn(":log dir:_files -/'", script)
        self.assertIn("_arguments -S -A '-*' $specs", script)
        if shutil.which("zsh"):  # then also loaded into zsh's completion system
            with tempfile.TemporaryDirectory(prefix="ptrun-zsh-") as d:
                path = os.path.join(d, "_ptrun")
                with open(path, "w") as f:
                    f.write(script)
                res = subprocess.run(["zsh", "-f", "-c", 'autoload -U compinit && compinit -u -D && '
                                      'source "$0" && print -r -- $_comps[ptrun]', path],
                                     capture_output=True, text=True, timeout=DEADLINE)
                self.assertEqual((res.returncode, res.stdout.strip()), (0, "_ptrun"), res.stderr)

    def test_tcsh_script_completes_values_and_every_spelling(self):
        script = self.script("tcsh")
        for spelling in help_spellings():
            self.assertRegex(script, rf"[ (]{re.escape(spelling)}[ )\n]", spelling)
        self.assertIn("'n/--rdzv_backend/(static c10d etcd-v2 etcd)/'", script)
        self.assertIn("'c/--log-dir=/d/'", script)
        if shutil.which("tcsh"):  # then also loaded into tcsh
            with tempfile.TemporaryDirectory(prefix="ptrun-tcsh-") as d:
                path = os.path.join(d, "ptrun.tcsh")
                with open(path, "w") as f:
                    f.write(script)
                res = subprocess.run(["tcsh", "-f", "-c", f"source {path} && complete ptrun"],
                                     capture_output=True, text=True, timeout=DEADLINE)
                self.assertEqual(res.returncode, 0, res.stderr)
                self.assertIn("n/--rdzv-backend/(static c10d etcd-v2 etcd)/", res.stdout)

    def test_an_unknown_shell_is_a_usage_error(self):
        res = run_ptrun(["--print-completion", "fish"])
        self.assertEqual(res.returncode, 2)
        self.assertEqual(res.stdout, "")
        self.assertIn("--print-completion 'fish': expected bash, zsh or tcsh", res.stderr)


if __name__ == "__main__":
    unittest.main()
