"""ptrun, the native torchrun-compatible launcher, from Python.

`pip install ptrun-*.whl` puts the `ptrun` and `ptrun-store` executables on the environment's
PATH (they are native programs: no Python runs when you launch with them) and installs this
module: `ptrun.store` is the rendezvous store's C API (libptrun_store_c.so, bundled) through
ctypes, for launchers and tools that embed the store or talk to one."""
import os
import sysconfig

try:
    from ._version import __version__
except ImportError:  # a source checkout, not an installed wheel
    __version__ = "0+source"


def executable(name="ptrun"):
    """Path of an installed executable of this package ('ptrun' or 'ptrun-store')."""
    if name not in ("ptrun", "ptrun-store"):
        raise ValueError(f"executable {name!r}: expected 'ptrun' or 'ptrun-store'")
    return os.path.join(sysconfig.get_path("scripts"), name)
