"""The embedding examples (examples/store_embed) run and pass: C++ through the C API, and Python
through ctypes loading libptrun_store_c.so."""
import os
import subprocess
import unittest

from harness import PtrunTestCase
from store_harness import PYTHON

STORE_EMBED = os.environ.get("STORE_EMBED", "build/examples/store_embed/store_embed")
EMBED_PY = os.environ.get("EMBED_PY", "../../examples/store_embed/embed.py")
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


if __name__ == "__main__":
    unittest.main()
