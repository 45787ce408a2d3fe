"""bench/launch/installed.py: a binary timed as an install writes it, not as the linker left it.

The kernel caches a file's pages in folios whose size follows how the file was written: GNU ld
writes ptrun in small pieces (4 KiB folios); pip, cp and install write 64 KiB or more at a time
(64 KiB folios or larger). Exec maps ptrun's text (fault-around) and exit unmaps it per folio, so
the same bytes launch ~0.5 ms faster once copied (bench/RESULTS.md, "The launch on 2026-11-30
(12:34-15:34)"), until the cache is dropped and read back. The benches time each binary in a copy
written the way pip writes a wheel's files (64 KiB writes), every binary alike; --as-built
times the files where they are."""
import os
import pathlib
import shutil
import tempfile


def installed_copy(path, directory):
    """A copy of the executable `path` in `directory` (made if missing), written in 64 KiB pieces
    as pip installs a wheel's files; returns its path."""
    dest = pathlib.Path(directory)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / pathlib.Path(path).name
    with open(path, "rb") as src, open(target, "wb") as out:
        shutil.copyfileobj(src, out, 64 * 1024)
    os.chmod(target, 0o755)
    return str(target)


class InstalledCopies:
    """Copies of several binaries in a temporary directory, removed on exit (a context manager);
    copy(path) is `path` itself when `as_built`."""

    def __init__(self, as_built=False):
        self.as_built = as_built
        self.root = None

    def __enter__(self):
        self.root = tempfile.mkdtemp(prefix="ptrun-bench-")
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.root, ignore_errors=True)

    def copy(self, path, name):
        """`path` copied into <root>/<name>/ (installed_copy), or `path` when as_built."""
        if self.as_built:
            return path
        return installed_copy(path, os.path.join(self.root, name))
