"""`pip install ptrun-*.whl`: the wheel python/make_wheel.py builds from BUILD_DIR
- names an honest manylinux tag and bundles nothing that needs more than glibc;
- installs into a clean venv on this host (Debian 12): ptrun and ptrun-store on the venv's PATH,
  `import ptrun.store` with its bundled C library, host names resolved, workers launched;
- installs into a venv inside the Debian 13 root (glibc 2.41, PyTorch 2.6; scripts/torch2-root.sh),
  where the same binaries resolve host names and launch a torch 2.6 DDP job with their store.
The second needs the root and skips like every torch2 test without it."""
import json
import os
import pathlib
import re
import shutil
import socket
import sys
import tempfile
import unittest
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_DIR = pathlib.Path(os.environ.get("BUILD_DIR", REPO / "build"))
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "tests" / "integration"))
import make_wheel  # noqa: E402
import test_package  # noqa: E402  (its run(); a module, so its tests are not collected here)
from torch_flavour import RootTorch  # noqa: E402

PYTHON = "/usr/bin/python3"
EMBED_PY = REPO / "examples" / "store_embed" / "embed.py"
DDP_SCRIPT = REPO / "tests" / "integration" / "torch_ddp_train.py"
run = test_package.run  # runs a command to completion; fails the test with its output otherwise


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ptrun-wheel-test-")
        cls.dir = pathlib.Path(cls.tmp.name)
        out = run([PYTHON, REPO / "python" / "make_wheel.py", "--build", BUILD_DIR, "--out", cls.dir / "dist"])
        cls.wheel = pathlib.Path(out.stdout.strip())
        cls.env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("PET_", "TORCHELASTIC_")) and k not in ("PTRUN_STORE_C_LIB", "PYTHONPATH")}
        cls.env["TMPDIR"] = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_tag_is_honest_and_only_glibc_is_needed(self):
        version = make_wheel.project_version(str(BUILD_DIR))
        m = re.fullmatch(rf"ptrun-{re.escape(version)}-py3-none-manylinux_2_(\d+)_x86_64\.whl", self.wheel.name)
        self.assertIsNotNone(m, self.wheel.name)
        unpacked = self.dir / "unpacked"
        with zipfile.ZipFile(self.wheel) as z:
            z.extractall(unpacked)
            names = z.namelist()
        elves = [f"ptrun-{version}.data/scripts/ptrun", f"ptrun-{version}.data/scripts/ptrun-store",
                 "ptrun/_lib/libptrun_store_c.so"]
        for name in elves + ["ptrun/__init__.py", "ptrun/store.py", "ptrun/heartbeat.py",
                             f"ptrun-{version}.data/data/share/bash-completion/completions/ptrun",
                             f"ptrun-{version}.data/data/share/zsh/site-functions/_ptrun",
                             f"ptrun-{version}.dist-info/RECORD"]:
            self.assertIn(name, names)
        newest = max(make_wheel.glibc_needs(str(unpacked / e))[1] for e in elves)  # refuses non-glibc
        self.assertEqual(newest, (2, int(m.group(1))), "the tag names the newest GLIBC version needed")
        # RHEL 9 and its rebuilds have glibc 2.34: the static libgcc's _dl_find_object (2.35) is
        # answered inside ptrun (rendezvous/src/dl_find_object.cpp).
        self.assertLessEqual(newest, (2, 34), "ptrun must keep running on glibc 2.34")
        # Every launch loads what ptrun needs: libc alone (no libm, no libgcc_s; the loader, named
        # for __tls_get_addr, is the interpreter that runs anyway).
        dynamic = make_wheel.readelf("-d", str(unpacked / elves[0]))
        needed = re.findall(r"\(NEEDED\).*\[(.+?)\]", dynamic)
        self.assertEqual([n for n in needed if not n.startswith("ld-linux")], ["libc.so.6"])

    def test_clean_venv_on_this_host(self):
        venv = self.dir / "host-venv"
        run([PYTHON, "-m", "venv", venv])  # no system site packages: nothing but the wheel
        run([venv / "bin/pip", "install", "--no-index", "--no-deps", "-q", self.wheel])
        env = {**self.env, "PATH": f"{venv}/bin:{self.env['PATH']}"}
        self.assertEqual(shutil.which("ptrun", path=env["PATH"]), str(venv / "bin/ptrun"))
        self.assertIn("ptrun", run(["ptrun", "--version"], env=env).stdout)
        self.assertIn("all checks passed", run([venv / "bin/python", EMBED_PY], env=env).stdout)
        where = run([venv / "bin/python", "-c", "import ptrun, ptrun.store as s; "
                     "print(ptrun.__version__, s.library_path(), ptrun.executable('ptrun-store'))"], env=env)
        self.assertIn(f"{venv}/lib/", where.stdout)
        self.assertIn(f"{venv}/bin/ptrun-store", where.stdout)
        # The heartbeat writer: standard library only, a no-op outside ptrun, a beat on a record.
        beats = run([venv / "bin/python", "-c", "import os, sys; from ptrun import heartbeat as h; "
                     "h.beat(); p = sys.argv[1]; h.create(p); b = h.Heartbeat(p); b.beat(); "
                     "print(h.enabled, h.read(p)['count'])", str(self.dir / "hb")], env=env)
        self.assertEqual(beats.stdout, "False 1\n")
        # `man ptrun` finds the page the wheel installed (man looks in BIN/../share/man).
        self.assertTrue((venv / "share/man/man1/ptrun.1").is_file())
        where = run(["man", "-w", "ptrun"], env={k: v for k, v in env.items() if k != "MANPATH"})
        self.assertEqual(where.stdout.strip(), str(venv / "share/man/man1/ptrun.1"))
        # Bash completion beside the venv's bin, where bash-completion looks for it.
        self.assertEqual((venv / "share/bash-completion/completions/ptrun").read_text(),
                         run(["ptrun", "--print-completion", "bash"], env=env).stdout)
        # Host names resolve (getaddrinfo through this system's NSS) and workers launch.
        res = run(["ptrun", "--nnodes", "1", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                   "--rdzv-endpoint", f"{socket.gethostname()}:{free_port()}", "--no-python",
                   "/bin/sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"'], env=env)
        self.assertEqual(sorted(res.stdout.splitlines()), ["rank 0 of 2", "rank 1 of 2"])

    def test_python_workers_run_with_the_venvs_interpreter_through_the_runner(self):
        # The first python3 on PATH is another one (here the system's, the venv is not on PATH):
        # a ptrun installed from the wheel still runs Python workers with its own venv's python3,
        # through the runner the wheel installed beside it; PYTHON_EXEC still wins.
        venv = self.dir / "interp-venv"
        run([PYTHON, "-m", "venv", venv])
        run([venv / "bin/pip", "install", "--no-index", "--no-deps", "-q", self.wheel])
        runner = venv / "lib/ptrun/python/ptrun/_runner.py"
        self.assertTrue(runner.exists(), "the runner is installed beside ptrun")
        self.assertTrue((runner.parent / "_zygote.py").exists(), "and --preload's zygote")
        script = self.dir / "which.py"
        script.write_text("import sys\nprint(sys.executable, sys.argv[1:])\n")
        env = {**self.env, "PATH": "/usr/bin:/bin"}
        explain = run([venv / "bin/ptrun", "--explain", script], env=env).stdout
        self.assertRegex(explain, rf"interpreter +{re.escape(str(venv))}/bin/python3 +\(the environment "
                                  r"ptrun's wheel is installed in\)")
        self.assertIn(f"python3 -u {runner} -- {script}", explain)
        res = run([venv / "bin/ptrun", "--nproc-per-node", "1", script, "x"], env=env)
        self.assertEqual(res.stdout, f"{venv}/bin/python3 ['x']\n")
        res = run([venv / "bin/ptrun", "--nproc-per-node", "1", script, "y"],
                  env={**env, "PYTHON_EXEC": PYTHON})
        self.assertEqual(res.stdout, f"{PYTHON} ['y']\n")

    def test_venv_in_debian13_root_runs_a_torch2_ddp_job(self):
        torch2 = RootTorch()
        if torch2.skip_reason():
            self.skipTest(torch2.skip_reason())
        venv, out = self.dir / "root-venv", self.dir / "ddp.json"
        port = free_port()
        # Inside the root (its own glibc and python3.13): a venv that sees the system's torch 2.6.
        script = f"""set -e
python3 -m venv --system-site-packages {venv}
{venv}/bin/pip install --no-index --no-deps -q {self.wheel}
export PATH={venv}/bin:$PATH
echo "ptrun at $(command -v ptrun), glibc $(ldd --version | head -n1 | awk '{{print $NF}}')"
python3 {EMBED_PY}
ptrun-store --version
ptrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "$(hostname):{port}" \\
      {DDP_SCRIPT} {out}
"""
        res = run(torch2.command(["/bin/sh", "-c", script], binds=[self.tmp.name]),
                  env={**self.env, **torch2.env(), "GLOO_SOCKET_IFNAME": "lo"})
        self.assertIn(f"ptrun at {venv}/bin/ptrun", res.stdout)
        self.assertNotIn("glibc 2.36", res.stdout, "the root has its own glibc")
        self.assertIn("all checks passed", res.stdout)
        result = json.loads(out.read_text())
        self.assertEqual(result["world"], 2)
        self.assertEqual(result["agent_store"], "True", "the workers used ptrun's store")
        self.assertLess(result["losses"][-1], result["losses"][0])


if __name__ == "__main__":
    unittest.main()
