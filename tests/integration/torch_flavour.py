"""Which real PyTorch a torch test runs against, chosen by PTRUN_TORCH_FLAVOUR:
- "1.13" (default): Debian 12's python3-torch on this host;
- "2": Debian 13's python3-torch 2.6 inside the root made by scripts/torch2-root.sh, each command
  entered through scripts/torch2-run.sh (private mount namespace + chroot, same network, this
  checkout, the build tree and the harness's scratch directory bind-mounted at the same paths).
One test file serves both: it builds its commands through FLAVOUR.command() and FLAVOUR.env()."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TORCH2_SITE = os.path.join(REPO, "tests", "torch2_site")  # sitecustomize: TCPStore use_libuv=False
TORCH2_RUN = os.path.join(REPO, "scripts", "torch2-run.sh")
TORCH2_ROOT = os.path.join(REPO, "scripts", "torch2-root.sh")
# The 'ok VERB' lines torch_store_verbs.py prints with every torch: its Python TCPStore API.
CLIENT_VERBS = ("set/get", "add", "compare_set", "wait", "wait_timeout", "delete_key/num_keys")
# ctest's SKIP_REGULAR_EXPRESSION for the torch2 label matches this (every test skips alike).
NO_ROOT = "no Debian 13 root with torch 2"


class HostTorch:
    """Debian 12's PyTorch 1.13, run directly."""
    name = "1.13"
    python = "/usr/bin/python3"
    torchrun = ["/usr/bin/torchrun"]
    # torchrun 1.13 crashes on Python 3.11 without these (README, "torchrun 1.13 on Debian").
    torchrun_fix = ["--redirects", "9:0", "--tee", "9:0"]
    # What the tests give torchrun for a single-node job. 1.13's --standalone puts its c10d store on
    # the fixed localhost:29400, so two tests running it at once join each other's rendezvous (one
    # then fails with RendezvousConnectionError); its own c10d store on a free port is the same job.
    torchrun_standalone = ["--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:0", "--nnodes", "1"]
    # Its --standalone lets worker rank 0 host the store; ptrun hosts it itself, as 2.5+ agents do.
    torchrun_agent_store = "False"
    # store_verbs_client's flags for its server (the legacy 1.13/2.0 wire dialect), and the verbs
    # beyond the common ones that server answers.
    server_client_flags = ["--dialect", "legacy"]
    server_extras = ()
    client_verbs = CLIENT_VERBS

    def skip_reason(self):
        if not os.path.exists(self.torchrun[0]):
            return "Debian's python3-torch (1.13) is not installed"
        return None

    def command(self, argv, binds=()):
        """argv as run where this torch lives (here: unchanged)."""
        return list(argv)

    def env(self):
        return {}


class RootTorch:
    """Debian 13's PyTorch 2.6 in the throw-away root (scripts/torch2-root.sh)."""
    name = "2"
    python = "/usr/bin/python3"
    torchrun = ["/usr/bin/torchrun"]
    torchrun_fix = []
    # 2.x's --standalone binds its store to a free port (localhost:0).
    torchrun_standalone = ["--standalone"]
    torchrun_agent_store = "True"
    # Its server speaks the 2.2+ dialect (VALIDATE, PING, CANCEL_WAIT, APPEND, ...), without the
    # queue verbs (those came with 2.7).
    server_client_flags = ["--dialect", "modern", "--queues", "no"]
    server_extras = ("append", "ping")
    # 2.6's Python API adds these (get and wait under set_timeout cancel on the wire: CANCEL_WAIT).
    client_verbs = CLIENT_VERBS + ("check", "set_timeout", "has_extended_api", "append",
                                   "multi_get/multi_set")

    def __init__(self):
        self._reason = None
        self._checked = False

    def skip_reason(self):
        if not self._checked:
            self._checked = True
            if os.geteuid() != 0:
                self._reason = f"{NO_ROOT}: entering it needs root (mount namespace, chroot)"
            else:
                res = subprocess.run([TORCH2_ROOT, "--check"], capture_output=True, text=True)
                if res.returncode != 0:
                    self._reason = (f"{NO_ROOT}: scripts/torch2-root.sh has not made it (ctest's "
                                    "torch2.root does, with root and the Debian archive)")
        return self._reason

    def command(self, argv, binds=()):
        """argv run inside the root; this checkout, the build tree ($PTRUN_BUILD_DIR), the
        harness's scratch directory and `binds` (a test's temp dir) appear at the same paths."""
        paths = [REPO, *binds]
        for extra in (os.environ.get("PTRUN_BUILD_DIR"), scratch_dir()):
            if extra:
                paths.append(extra)
        out = [TORCH2_RUN]
        for p in dict.fromkeys(paths):
            out += ["--bind", p]
        return out + ["--", *argv]

    def env(self):
        path = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": TORCH2_SITE + (os.pathsep + path if path else "")}


def scratch_dir():
    """harness.SCRATCH (ptrun's TMPDIR in the tests) when the harness is in use, else None."""
    harness = sys.modules.get("harness")
    return getattr(harness, "SCRATCH", None)


_torch_missing = {}


def torch_missing(timeout):
    """Why torch cannot be imported by FLAVOUR's python, or None (asked once, within `timeout`)."""
    if "reason" not in _torch_missing:
        res = subprocess.run(FLAVOUR.command([FLAVOUR.python, "-c", "import torch"]),
                             capture_output=True, text=True, env={**os.environ, **FLAVOUR.env()},
                             timeout=timeout)
        _torch_missing["reason"] = None if res.returncode == 0 else \
            f"{FLAVOUR.python} cannot import torch: {res.stderr.strip().splitlines()[-1:]}"
    return _torch_missing["reason"]


def current():
    name = os.environ.get("PTRUN_TORCH_FLAVOUR", "1.13")
    if name == "1.13":
        return HostTorch()
    if name == "2":
        return RootTorch()
    raise SystemExit(f"PTRUN_TORCH_FLAVOUR={name!r}: expected 1.13 or 2")


FLAVOUR = current()
