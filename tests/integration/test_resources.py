"""What the machine or the user's setup refuses (no space, no inodes, too few open files, an unusable
--log-dir) is the user's to fix: ptrun says what and what to do, exits 1 (2 for a bad --log-dir),
and never calls it an "internal error". A /dev/shm short of space or inodes only moves ptrun's
temporary error files to /tmp. Tests needing a tiny file system mount a tmpfs in a private mount
namespace (unshare -m, as root): nothing is mounted outside the test's process, and the mount goes
when it exits. They are skipped without root."""
import json
import os
import shutil
import subprocess
import unittest

from harness import PTRUN, PtrunTestCase, _env, read_dumps, run_ptrun


def can_unshare_mounts():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def run_in_private_mounts(setup, args, env=None, timeout=60):
    """Runs `setup` (shell, e.g. mounting a tmpfs) then ptrun `args`, in a private mount namespace."""
    script = setup + '\nexec "$@"'
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", script, "sh", PTRUN, *args],
                          env=_env(env), capture_output=True, text=True, timeout=timeout)


class UserErrors(PtrunTestCase):
    def assert_not_internal(self, res):
        self.assertNotIn("internal error", res.stderr)

    def test_an_unusable_log_dir_is_a_usage_error(self):
        res = run_ptrun(["--nproc-per-node", "2", "--log-dir", "/proc/nope", *self.worker("--dump", self.dir)])
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assert_not_internal(res)
        self.assertEqual(res.stderr.strip().splitlines(), [res.stderr.strip()], "one line")
        self.assertIn("--log-dir '/proc/nope'", res.stderr)
        self.assertEqual(os.listdir(self.dir), [], "nothing may be started")

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv") and shutil.which("prlimit"),
                         "needs root to run ptrun as nobody under a process limit")
    def test_a_process_limit_is_a_machine_refusal_not_a_worker_failure(self):
        # ulimit -u binds only a user without CAP_SYS_RESOURCE: ptrun runs as nobody, at most 20
        # processes, asked for 30 workers and 2 restarts.
        res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              "prlimit", "--nproc=20", PTRUN, "--nproc-per-node", "30",
                              "--max-restarts", "2", *self.worker("--hang")],
                             env=_env({"TMPDIR": "/tmp"}), capture_output=True, text=True,
                             timeout=60, cwd="/")  # nobody cannot write the test's own TMPDIR
        self.assertEqual(res.returncode, 1, res.stderr[-3000:])
        self.assert_not_internal(res)
        self.assertIn("the system refused another process or thread", res.stderr)
        self.assertIn("`ulimit -u`, now 20", res.stderr)
        self.assertNotIn("restarting", res.stderr)
        self.assertNotIn("exit code 127", res.stderr)
        self.assertEqual(res.stderr.count("cannot start a worker"), 1, res.stderr[-3000:])

    def test_a_memory_limit_is_a_machine_refusal(self):
        # 20 MiB: ptrun itself (about 10 MB of text with the etcd client's static OpenSSL) and libc
        # load, and so do workers as small as these; the thread of the workers' store, started
        # when the first of them connects (as torch's workers do at init), does not fit.
        connect = 'exec 3<>"/dev/tcp/$MASTER_ADDR/$MASTER_PORT"; exec sleep 30'
        res = subprocess.run(["prlimit", "--as=20971520", PTRUN, "--nproc-per-node", "2",
                              "bash", "-c", connect], env=_env(None), capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assert_not_internal(res)
        self.assertIn("`ulimit -v` is 20480 KiB", res.stderr)
        self.assertIn("cannot serve the workers' store", res.stderr)

    def test_too_few_open_files_for_the_attempt_is_refused_before_any_worker_starts(self):
        # --tee 3 keeps a pipe and a log file per stream of each worker: 200 workers need about
        # 800 descriptors; at 256 ptrun used to start ~60 workers before the refusal.
        dumps = os.path.join(self.dir, "dumps")
        os.mkdir(dumps)
        res = subprocess.run(["prlimit", "--nofile=256", PTRUN, "--nproc-per-node", "200", "--tee", "3",
                              "--log-dir", os.path.join(self.dir, "logs"), *self.worker("--dump", dumps)],
                             env=_env(None), capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 1, res.stderr[-2000:])
        self.assert_not_internal(res)
        self.assertRegex(res.stderr, r"cannot start 200 workers: too many open files: raise `ulimit -n` "
                                     r"\(now 256, this job needs about \d+\)")
        self.assertEqual(os.listdir(dumps), [], "no worker may have started")

    def test_too_few_open_files_says_raise_ulimit_with_the_numbers(self):
        # At every limit from "ptrun can barely start" up: never "internal error"; where it fails
        # for lack of descriptors it names the limit and what the job needs.
        saw_hint = False
        for limit in range(8, 48, 2):
            res = subprocess.run(["prlimit", f"--nofile={limit}", PTRUN, "--nproc-per-node", "8", "--tee", "3",
                                  "--log-dir", os.path.join(self.dir, "logs"), *self.worker("--print", "1")],
                                 env=_env(None), capture_output=True, text=True, timeout=60)
            self.assert_not_internal(res)
            if res.returncode != 0 and "open files" in res.stderr:
                self.assertIn("ulimit -n", res.stderr)
                self.assertIn(f"now {limit}", res.stderr)
                self.assertRegex(res.stderr, r"this job needs about \d+")
                saw_hint = True
        self.assertTrue(saw_hint, "no limit ran out of descriptors in ptrun itself")


@unittest.skipUnless(can_unshare_mounts(), "needs root and unshare -m")
class FullFileSystems(PtrunTestCase):
    def test_no_inodes_left_in_the_log_dir(self):
        logs = os.path.join(self.dir, "logs")
        os.mkdir(logs)
        res = run_in_private_mounts(f"mount -t tmpfs -o size=1m,nr_inodes=8 none {logs}",
                                    ["--nproc-per-node", "8", "--log-dir", logs, "--redirects", "3",
                                     *self.worker("--dump", self.dir)])
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertNotIn("internal error", res.stderr)
        self.assertIn("no space or no inodes left", res.stderr)
        self.assertEqual(read_dumps(self.dir), {}, "no worker may start when the attempt cannot")

    def test_no_inodes_for_the_run_directory(self):
        logs = os.path.join(self.dir, "logs")
        os.mkdir(logs)
        res = run_in_private_mounts(f"mount -t tmpfs -o size=1m,nr_inodes=1 none {logs}",
                                    ["--log-dir", logs, *self.worker("--dump", self.dir)])
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertNotIn("internal error", res.stderr)
        self.assertIn(f"--log-dir '{logs}': no space or no inodes left", res.stderr)

    def error_file_dirs(self):
        return {os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(d["env"]["TORCHELASTIC_ERROR_FILE"]))))
                for d in read_dumps(self.dir).values()}

    def test_dev_shm_without_inodes_falls_back_to_tmp(self):
        res = run_in_private_mounts("mount -t tmpfs -o size=1m,nr_inodes=1 none /dev/shm",
                                    ["--nproc-per-node", "2",
                                     *self.worker("--dump", self.dir, "--fail-rank", "1", "--exit", "3",
                                                  "--error-message", "ValueError: reported")],
                                    env={"TMPDIR": ""})
        self.assertEqual(res.returncode, 3, res.stderr)
        self.assertIn("ValueError: reported", res.stderr)
        roots = self.error_file_dirs()
        self.assertEqual(len(roots), 1, roots)
        root, = roots
        self.assertRegex(root, r"^/tmp/ptrun-\w{6}$")
        self.assertFalse(os.path.exists(root), "the temporary error files are removed at exit")

    def test_dev_shm_without_space_falls_back_to_tmp(self):
        res = run_in_private_mounts("mount -t tmpfs -o size=64k none /dev/shm\n"
                                    "dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null || true",
                                    ["--nproc-per-node", "2", *self.worker("--dump", self.dir)], env={"TMPDIR": ""})
        self.assertEqual(res.returncode, 0, res.stderr)
        root, = self.error_file_dirs()
        self.assertTrue(root.startswith("/tmp/ptrun-"), root)

    def test_dev_shm_filling_up_while_running_moves_the_next_attempt_to_tmp(self):
        # The first attempt's worker uses up /dev/shm's inodes and fails; the restart's error files
        # go to /tmp instead of ptrun giving up.
        worker = ("n=0; while mkdir /dev/shm/d$n 2>/dev/null; do n=$((n+1)); done;"
                  'test "$TORCHELASTIC_RESTART_COUNT" = 1 && case "$TORCHELASTIC_ERROR_FILE" in /tmp/*) exit 0;; esac;'
                  "exit 7")
        res = run_in_private_mounts("mount -t tmpfs -o size=1m,nr_inodes=64 none /dev/shm",
                                    ["--max-restarts", "1", "sh", "-c", worker], env={"TMPDIR": ""})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertNotIn("internal error", res.stderr)


if __name__ == "__main__":
    unittest.main()
