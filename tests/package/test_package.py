"""The installable package: `cmake --install` into a temporary prefix, then an out-of-tree program
(consumer/) built against it with find_package(ptrun) and with pkg-config, run under the installed
ptrun. BUILD_DIR names the build tree to install (default: build)."""
import os
import pathlib
import shutil
import subprocess
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
BUILD_DIR = pathlib.Path(os.environ.get("BUILD_DIR", HERE.parent.parent / "build"))
TIMEOUT = 300


def run(cmd, **kw):
    """Runs cmd to completion; fails the test with its output when it does not exit 0."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=TIMEOUT, **kw)
    if proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ptrun-package-")
        cls.prefix = pathlib.Path(cls.tmp.name) / "prefix"
        run(["cmake", "--install", BUILD_DIR, "--prefix", cls.prefix])
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_"))}
        cls.env["TMPDIR"] = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def libdir(self):
        found = list(self.prefix.glob("lib*/**/libptrun_ddp.a"))
        self.assertEqual(len(found), 1, found)
        return found[0].parent

    def test_installs_tools_libraries_headers_man_pages(self):
        for path in ["bin/ptrun", "include/ptrun/ddp/process_group.hpp", "include/ptrun/ddp/data_parallel.hpp",
                     "include/ptrun/rendezvous/store.hpp", "include/ptrun/env/env_map.hpp",
                     "share/man/man1/ptrun.1", "lib/ptrun/python/ptrun/_runner.py",
                     "lib/ptrun/python/ptrun/heartbeat.py", "lib/ptrun/python/ptrun/_zygote.py"]:
            self.assertTrue((self.prefix / path).exists(), path)
        # Shell completion where bash-completion and zsh look, the installed ptrun's own script.
        for path, shell in [("share/bash-completion/completions/ptrun", "bash"),
                            ("share/zsh/site-functions/_ptrun", "zsh")]:
            self.assertEqual((self.prefix / path).read_text(),
                             run([self.prefix / "bin/ptrun", "--print-completion", shell]).stdout, path)
        if (BUILD_DIR / "rendezvous" / "server_main" / "ptrun-store").exists():
            self.assertTrue((self.prefix / "bin/ptrun-store").exists())
        lib = self.libdir()
        for name in ["libptrun_rendezvous.a", "libptrun_env.a", "cmake/ptrun/ptrunConfig.cmake",
                     "cmake/ptrun/ptrunTargets.cmake", "pkgconfig/ptrun-ddp.pc", "pkgconfig/ptrun-rendezvous.pc"]:
            self.assertTrue((lib / name).exists(), name)

    def test_find_package_consumer_runs_under_installed_ptrun(self):
        build = pathlib.Path(self.tmp.name) / "consumer-cmake"
        run(["cmake", "-S", HERE / "consumer", "-B", build, f"-DCMAKE_PREFIX_PATH={self.prefix}"], env=self.env)
        run(["cmake", "--build", build], env=self.env)
        proc = run([self.prefix / "bin/ptrun", "--standalone", "--nproc-per-node", "2", build / "consumer"],
                   env=self.env)
        for rank in (0, 1):
            self.assertIn(f"consumer rank {rank}/2: sum 3 grad 0.50 store hello", proc.stdout)

    def test_pkg_config_consumer_builds_and_runs_alone(self):
        if shutil.which("pkg-config") is None:
            self.skipTest("pkg-config is not installed")
        env = dict(self.env, PKG_CONFIG_PATH=str(self.libdir() / "pkgconfig"))
        flags = run(["pkg-config", "--cflags", "--libs", "ptrun-ddp"], env=env).stdout.split()
        exe = pathlib.Path(self.tmp.name) / "consumer-pc"
        run(["g++", "-std=c++20", HERE / "consumer" / "consumer.cpp", "-o", exe, *flags], env=env)
        proc = run([exe], env=env)
        self.assertIn("consumer rank 0/1: sum 1 grad 0.00 store hello", proc.stdout)


if __name__ == "__main__":
    unittest.main()
