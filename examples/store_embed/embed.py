"""Embedding the ptrun store from Python with ctypes (no compiled extension): start a server on a
free port, connect a client, use set/get/add/compare_set/wait, stop. Usage:
    python3 embed.py [path/to/libptrun_store_c.so]      (or PTRUN_STORE_C_LIB=...)
Exits 0 when every check passes."""
import ctypes
import os
import sys
import threading

OK, ERROR, TIMEOUT, CONNECTION_LOST, INVALID_ARGUMENT, BUFFER_TOO_SMALL = range(6)
MODERN, LEGACY = 0, 1


class StoreError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status = status


def load(path):
    """Loads libptrun_store_c.so and declares the signatures this example uses."""
    lib = ctypes.CDLL(path)
    c_void_pp = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "ptrun_store_version": (ctypes.c_char_p, []),
        "ptrun_store_last_error": (ctypes.c_char_p, []),
        "ptrun_store_free": (None, [ctypes.c_void_p]),
        "ptrun_store_server_start": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint16, c_void_pp]),
        "ptrun_store_server_port": (ctypes.c_uint16, [ctypes.c_void_p]),
        "ptrun_store_server_stop": (ctypes.c_int, [ctypes.c_void_p]),
        "ptrun_store_client_connect": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint16, ctypes.c_int,
                                                      ctypes.c_int64, c_void_pp]),
        "ptrun_store_client_close": (None, [ctypes.c_void_p]),
        "ptrun_store_set": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
        "ptrun_store_get": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, c_void_pp,
                                           ctypes.POINTER(ctypes.c_size_t)]),
        "ptrun_store_add": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64,
                                           ctypes.POINTER(ctypes.c_int64)]),
        "ptrun_store_compare_set": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                                                   c_void_pp, ctypes.POINTER(ctypes.c_size_t)]),
        "ptrun_store_wait": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                            ctypes.c_int64]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class Client:
    """A thin Pythonic wrapper: raises StoreError with the library's message on failure."""

    def __init__(self, lib, host, port, timeout_ms=5000, dialect=MODERN):
        self.lib = lib
        self.handle = ctypes.c_void_p()
        self._check(lib.ptrun_store_client_connect(host.encode(), port, dialect, timeout_ms,
                                                   ctypes.byref(self.handle)))

    def _check(self, status):
        if status != OK:
            raise StoreError(status, self.lib.ptrun_store_last_error().decode())

    def _take(self, ptr, length):
        data = ctypes.string_at(ptr, length.value)
        self.lib.ptrun_store_free(ptr)
        return data

    def set(self, key, value):
        self._check(self.lib.ptrun_store_set(self.handle, key.encode(), value, len(value)))

    def get(self, key, timeout_ms=5000):
        ptr, length = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(self.lib.ptrun_store_get(self.handle, key.encode(), timeout_ms, ctypes.byref(ptr),
                                             ctypes.byref(length)))
        return self._take(ptr, length)

    def add(self, key, delta):
        result = ctypes.c_int64()
        self._check(self.lib.ptrun_store_add(self.handle, key.encode(), delta, ctypes.byref(result)))
        return result.value

    def compare_set(self, key, expected, desired):
        ptr, length = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(self.lib.ptrun_store_compare_set(self.handle, key.encode(), expected, len(expected),
                                                     desired, len(desired), ctypes.byref(ptr),
                                                     ctypes.byref(length)))
        return self._take(ptr, length)

    def wait(self, keys, timeout_ms=5000):
        array = (ctypes.c_char_p * len(keys))(*[k.encode() for k in keys])
        self._check(self.lib.ptrun_store_wait(self.handle, array, len(keys), timeout_ms))

    def close(self):
        self.lib.ptrun_store_client_close(self.handle)
        self.handle = None


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PTRUN_STORE_C_LIB", "libptrun_store_c.so")
    lib = load(path)
    server = ctypes.c_void_p()
    if lib.ptrun_store_server_start(b"127.0.0.1", 0, ctypes.byref(server)) != OK:
        raise StoreError(ERROR, lib.ptrun_store_last_error().decode())
    port = lib.ptrun_store_server_port(server)
    print(f"ptrun store {lib.ptrun_store_version().decode()} on port {port}")
    a, b = Client(lib, "127.0.0.1", port), Client(lib, "127.0.0.1", port)
    try:
        a.set("/greeting", b"hello")
        assert b.get("/greeting") == b"hello"
        assert a.add("/count", 5) == 5 and b.add("/count", -2) == 3
        assert a.compare_set("/state", b"", b"open") == b"open"
        assert b.compare_set("/state", b"shut", b"x") == b"open"
        assert b.compare_set("/missing", b"exp", b"x") == b"exp"
        # A wait on one client is woken by a set on another (the client releases the GIL: ctypes).
        setter = threading.Thread(target=b.set, args=("/late", b"1"))
        setter.start()
        a.wait(["/greeting", "/late"])
        setter.join()
        try:
            a.wait(["/never"], timeout_ms=100)
            raise AssertionError("wait on a missing key must time out")
        except StoreError as e:
            assert e.status == TIMEOUT and "/never" in str(e), e
    finally:
        a.close()
        b.close()
        assert lib.ptrun_store_server_stop(server) == OK
    print("embed.py: all checks passed")


if __name__ == "__main__":
    main()
