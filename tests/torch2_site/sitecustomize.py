"""Makes Debian 13's PyTorch 2.6 usable as a peer: put this directory on PYTHONPATH.

Debian builds torch 2.6 without libuv, yet TCPStore defaults to use_libuv=True (and torchrun and
init_process_group pass True explicitly), so every store fails with "use_libuv was requested but
PyTorch was build without libuv support" -- Debian's own torchrun 2.6 does not start out of the
box. When torch.distributed is first imported, TCPStore.__init__ is wrapped so that every store is
made with use_libuv=False whatever the caller asked (the classic backend, which speaks the same wire
protocol; this torch has no other). Costs nothing in programs that never import torch.distributed;
ptrun itself needs no change. Only for torches built without libuv (the test harness uses it with
Debian 13's)."""
import importlib.abc
import importlib.util
import sys

_TARGET = "torch.distributed"
_USE_LIBUV_POSITION = 8  # TCPStore(host, port, world_size, is_master, timeout, wait_for_workers,
#                          multi_tenant, master_listen_fd, use_libuv)


def _patch(dist):
    store_cls = getattr(dist, "TCPStore", None)
    if store_cls is None or getattr(store_cls, "_ptrun_libuv_off", False):
        return
    if "use_libuv" not in (store_cls.__init__.__doc__ or ""):  # a torch before 2.3: nothing to do
        return
    original = store_cls.__init__

    def __init__(self, *args, **kwargs):
        if len(args) > _USE_LIBUV_POSITION:
            args = args[:_USE_LIBUV_POSITION] + (False,) + args[_USE_LIBUV_POSITION + 1:]
        else:
            kwargs["use_libuv"] = False
        original(self, *args, **kwargs)

    store_cls.__init__ = __init__
    store_cls._ptrun_libuv_off = True


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of torch.distributed so _patch runs right after the module executes."""

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


sys.meta_path.insert(0, _Finder())
