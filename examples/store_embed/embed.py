"""Embedding the ptrun store from Python with the `ptrun` module (ctypes over the C API, no
compiled extension): start a server on a free port, connect two clients, use every verb, stop.
    python3 embed.py [path/to/libptrun_store_c.so]      (or PTRUN_STORE_C_LIB=...)
With the wheel installed (`pip install ptrun-*.whl`) it uses the bundled library; from a checkout
it imports python/ptrun. Exits 0 when every check passes."""
import os
import sys
import threading

try:
    from ptrun import store
except ImportError:  # run from a source checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from ptrun import store


def main():
    lib = store.load(sys.argv[1] if len(sys.argv) > 1 else None)
    with store.Server("127.0.0.1", 0, lib=lib) as server:
        print(f"ptrun store {store.version(lib)} on port {server.port}")
        with store.Client("127.0.0.1", server.port, lib=lib) as a, \
                store.Client("127.0.0.1", server.port, lib=lib) as b:
            a.set("/greeting", b"hello")
            assert b.get("/greeting") == b"hello"
            assert a.add("/count", 5) == 5 and b.add("/count", -2) == 3
            assert a.compare_set("/state", b"", b"open") == b"open"
            assert b.compare_set("/state", b"shut", b"x") == b"open"
            assert b.compare_set("/missing", b"exp", b"x") == b"exp"
            # A wait on one client is woken by a set on another (ctypes releases the GIL).
            setter = threading.Thread(target=b.set, args=("/late", b"1"))
            setter.start()
            a.wait(["/greeting", "/late"])
            setter.join()
            assert a.check(["/greeting", "/late"]) and not a.check(["/greeting", "/never"])
            try:
                a.wait(["/never"], timeout_ms=100)
                raise AssertionError("wait on a missing key must time out")
            except store.StoreError as e:
                assert e.status == store.TIMEOUT and "/never" in str(e), e
            n = a.num_keys()
            assert a.delete_key("/late") and not a.delete_key("/late")
            assert b.num_keys() == n - 1
    print("embed.py: all checks passed")


if __name__ == "__main__":
    main()
