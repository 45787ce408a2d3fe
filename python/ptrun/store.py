"""The ptrun store's C API (rendezvous/include/ptrun/rendezvous/c_api.h) through ctypes: start a
store server in this process, or connect a client to any c10d TCPStore-compatible server
(ptrun's, or PyTorch's own). No compiled extension: the wheel bundles libptrun_store_c.so.

    from ptrun.store import Server, Client
    with Server("127.0.0.1", 0) as server, Client("127.0.0.1", server.port) as c:
        c.set("/greeting", b"hello"); c.add("/count", 1); c.wait(["/greeting"], timeout=1.0)

Timeouts are seconds (`timeout=`: an int, a float or a datetime.timedelta, as torch's TCPStore
takes them); `timeout_ms=` is still accepted. Every failure raises StoreError: its message is the
library's (which names the keys and the time waited), its `status` the library's status; a wait
that times out has status TIMEOUT."""
import ctypes
import datetime
import math
import os

OK, ERROR, TIMEOUT, CONNECTION_LOST, INVALID_ARGUMENT, BUFFER_TOO_SMALL = range(6)
MODERN, LEGACY = 0, 1  # wire dialects: PyTorch 2.2+ / 1.13-2.1
_BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", "libptrun_store_c.so")
_LIB = None


class StoreError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


_DEFAULT_MS = 5000


def _milliseconds(timeout, timeout_ms):
    """The wait in milliseconds, from `timeout` (seconds: int, float or datetime.timedelta) or
    `timeout_ms`; 5 s when neither is given."""
    if timeout is not None and timeout_ms is not None:
        raise TypeError("give timeout (seconds) or timeout_ms, not both")
    if timeout_ms is not None:
        return int(timeout_ms)
    if timeout is None:
        return _DEFAULT_MS
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"timeout {timeout!r}: expected seconds >= 0")
    return int(min(seconds, 2**62 / 1000) * 1000)


def library_path():
    """The C library used: $PTRUN_STORE_C_LIB, else the one bundled with this package, else the
    dynamic loader's libptrun_store_c.so."""
    explicit = os.environ.get("PTRUN_STORE_C_LIB")
    if explicit:
        return explicit
    return _BUNDLED if os.path.exists(_BUNDLED) else "libptrun_store_c.so"


def load(path=None):
    """Loads the C library (once per path) and declares the signatures; returns it."""
    global _LIB
    if path is None and _LIB is not None:
        return _LIB
    lib = ctypes.CDLL(path or library_path())
    vpp, size_p, i64_p = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), \
        ctypes.POINTER(ctypes.c_int64)
    c_int, c_str, c_void, c_size = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t
    keys_p = ctypes.POINTER(ctypes.c_char_p)
    sigs = {
        "ptrun_store_version": (c_str, []),
        "ptrun_store_last_error": (c_str, []),
        "ptrun_store_free": (None, [c_void]),
        "ptrun_store_server_start": (c_int, [c_str, ctypes.c_uint16, vpp]),
        "ptrun_store_server_port": (ctypes.c_uint16, [c_void]),
        "ptrun_store_server_stop": (c_int, [c_void]),
        "ptrun_store_client_connect": (c_int, [c_str, ctypes.c_uint16, c_int, ctypes.c_int64, vpp]),
        "ptrun_store_client_close": (None, [c_void]),
        "ptrun_store_set": (c_int, [c_void, c_str, c_str, c_size]),
        "ptrun_store_get": (c_int, [c_void, c_str, ctypes.c_int64, vpp, size_p]),
        "ptrun_store_add": (c_int, [c_void, c_str, ctypes.c_int64, i64_p]),
        "ptrun_store_compare_set": (c_int, [c_void, c_str, c_str, c_size, c_str, c_size, vpp, size_p]),
        "ptrun_store_wait": (c_int, [c_void, keys_p, c_size, ctypes.c_int64]),
        "ptrun_store_check": (c_int, [c_void, keys_p, c_size, ctypes.POINTER(c_int)]),
        "ptrun_store_delete_key": (c_int, [c_void, c_str, ctypes.POINTER(c_int)]),
        "ptrun_store_num_keys": (c_int, [c_void, i64_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    if path is None:
        _LIB = lib
    return lib


def version(lib=None):
    """The C library's version string."""
    return (lib or load()).ptrun_store_version().decode()


def _check(lib, status):
    if status != OK:
        raise StoreError(status, lib.ptrun_store_last_error().decode())


def _keys(keys):
    return (ctypes.c_char_p * len(keys))(*[k.encode() for k in keys]), len(keys)


class Server:
    """A store server on its own thread in this process; stop() (or leaving `with`) ends it."""

    def __init__(self, host="127.0.0.1", port=0, lib=None):
        self.lib = lib or load()
        self.handle = ctypes.c_void_p()
        _check(self.lib, self.lib.ptrun_store_server_start(host.encode(), port, ctypes.byref(self.handle)))
        self.port = self.lib.ptrun_store_server_port(self.handle)

    def stop(self):
        if self.handle:
            handle, self.handle = self.handle, None
            _check(self.lib, self.lib.ptrun_store_server_stop(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Client:
    """One connection to a store; keys are strings, values bytes. Blocking calls release the GIL."""

    def __init__(self, host, port, timeout=None, dialect=MODERN, lib=None, *, timeout_ms=None):
        """Connects within `timeout` seconds (default 5), retrying with backoff."""
        self.lib = lib or load()
        self.handle = ctypes.c_void_p()
        ms = _milliseconds(timeout, timeout_ms)
        _check(self.lib, self.lib.ptrun_store_client_connect(host.encode(), port, dialect, ms,
                                                             ctypes.byref(self.handle)))

    def _take(self, ptr, length):
        data = ctypes.string_at(ptr, length.value)
        self.lib.ptrun_store_free(ptr)
        return data

    def set(self, key, value):
        _check(self.lib, self.lib.ptrun_store_set(self.handle, key.encode(), value, len(value)))

    def get(self, key, timeout=None, *, timeout_ms=None):
        """The value of `key`, waiting up to `timeout` seconds (default 5) for it to exist."""
        ptr, length = ctypes.c_void_p(), ctypes.c_size_t()
        ms = _milliseconds(timeout, timeout_ms)
        _check(self.lib, self.lib.ptrun_store_get(self.handle, key.encode(), ms, ctypes.byref(ptr),
                                                  ctypes.byref(length)))
        return self._take(ptr, length)

    def add(self, key, delta):
        """Adds delta to the integer at `key` (0 when absent); returns the new value."""
        result = ctypes.c_int64()
        _check(self.lib, self.lib.ptrun_store_add(self.handle, key.encode(), delta, ctypes.byref(result)))
        return result.value

    def compare_set(self, key, expected, desired):
        """Sets `key` to desired if it holds expected (or is absent and expected is b""); returns
        the value now stored (or expected, when the key is absent)."""
        ptr, length = ctypes.c_void_p(), ctypes.c_size_t()
        _check(self.lib, self.lib.ptrun_store_compare_set(self.handle, key.encode(), expected, len(expected),
                                                          desired, len(desired), ctypes.byref(ptr),
                                                          ctypes.byref(length)))
        return self._take(ptr, length)

    def wait(self, keys, timeout=None, *, timeout_ms=None):
        """Returns once every key exists; StoreError with status TIMEOUT after `timeout` seconds
        (default 5)."""
        array, n = _keys(keys)
        ms = _milliseconds(timeout, timeout_ms)
        _check(self.lib, self.lib.ptrun_store_wait(self.handle, array, n, ms))

    def check(self, keys):
        """True when every key exists (no waiting)."""
        array, n = _keys(keys)
        present = ctypes.c_int()
        _check(self.lib, self.lib.ptrun_store_check(self.handle, array, n, ctypes.byref(present)))
        return bool(present.value)

    def delete_key(self, key):
        """Deletes `key`; True when it existed."""
        existed = ctypes.c_int()
        _check(self.lib, self.lib.ptrun_store_delete_key(self.handle, key.encode(), ctypes.byref(existed)))
        return bool(existed.value)

    def num_keys(self):
        count = ctypes.c_int64()
        _check(self.lib, self.lib.ptrun_store_num_keys(self.handle, ctypes.byref(count)))
        return count.value

    def close(self):
        if self.handle:
            self.lib.ptrun_store_client_close(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
