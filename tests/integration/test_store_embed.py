"""The embedding examples (examples/store_embed) run and pass: C++ through the C API, and Python
through ctypes loading libptrun_store_c.so."""
import os
import subprocess
import unittest

from harness import PtrunTestCase
from store_harness import PYTHON

STORE_EMBED = os.environ.get("STORE_EMBED", "build/examples/store_embed/store_embed")
EMBED_PY = os.environ.get("EMBED_PY", "../../examples/store_embed/embed.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C_LIB = os.environ.get("PTRUN_STORE_C_LIB", "build/rendezvous/c_api/libptrun_store_c.so")


class StoreEmbed(PtrunTestCase):
    def test_cpp_example(self):
        res = subprocess.run([STORE_EMBED], capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("all checks passed", res.stdout)

    def test_python_ctypes_example(self):
        res = subprocess.run([PYTHON, EMBED_PY, C_LIB], capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("all checks passed", res.stdout)

    def test_the_python_module_takes_seconds_and_says_plain_messages(self):
        # ptrun.store from the source tree over the C library just built (the wheel bundles it).
        script = r"""
import datetime, sys
sys.path.insert(0, sys.argv[1])
from ptrun.store import Client, Server, StoreError, TIMEOUT
with Server("127.0.0.1", 0) as server, Client("127.0.0.1", server.port, timeout=5) as c:
    c.set("a", b"1")
    c.wait(["a"], timeout=0.5)
    c.wait(["a"], datetime.timedelta(seconds=1))
    assert c.get("a", timeout=1) == b"1"
    c.wait(["a"], timeout_ms=500)
    try:
        c.wait(["missing"], timeout=0.2)
        raise SystemExit("no timeout")
    except StoreError as e:
        assert e.status == TIMEOUT, e.status
        assert not str(e).startswith("status"), str(e)
        assert "missing" in str(e), str(e)
    for bad in (dict(timeout=1, timeout_ms=1000), ):
        try:
            c.wait(["a"], **bad)
            raise SystemExit("both accepted")
        except TypeError:
            pass
    try:
        c.wait(["a"], timeout=-1)
        raise SystemExit("negative accepted")
    except ValueError as e:
        assert "timeout -1" in str(e), str(e)
print("all checks passed")
"""
        env = dict(os.environ, PTRUN_STORE_C_LIB=os.path.abspath(C_LIB))
        res = subprocess.run([PYTHON, "-c", script, os.path.join(ROOT, "python")],
                             capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("all checks passed", res.stdout)


if __name__ == "__main__":
    unittest.main()
