"""A minimal client of the store's modern wire protocol (VALIDATE, SET, GET, LIST_KEYS), as any
process that reaches a store's port could write one: the tests' stand-in for a hostile client.
Little-endian u64-length-prefixed fields; no library of ptrun or torch is used."""
import socket
import struct

VALIDATE, SET, GET, WAIT, LIST_KEYS = 0, 1, 3, 6, 17
MAGIC = 0x3C85F7CE


class RawStore:
    def __init__(self, host, port, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.sendall(struct.pack("<BI", VALIDATE, MAGIC))

    def close(self):
        self.sock.close()

    def _bytes(self, data):
        return struct.pack("<Q", len(data)) + data

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("store closed the connection")
            out += chunk
        return out

    def _read_bytes(self):
        (n,) = struct.unpack("<Q", self._read(8))
        return self._read(n)

    def set(self, key, value):
        self.sock.sendall(bytes([SET]) + self._bytes(key.encode()) + self._bytes(value.encode()))

    def get(self, key):
        self.sock.sendall(bytes([GET]) + self._bytes(key.encode()))
        return self._read_bytes().decode(errors="replace")

    def wait(self, keys):
        """Blocks until every key exists (the socket's timeout bounds it); the server's reply byte."""
        self.sock.sendall(bytes([WAIT]) + struct.pack("<Q", len(keys))
                          + b"".join(self._bytes(k.encode()) for k in keys))
        return self._read(1)

    def list_keys(self):
        self.sock.sendall(bytes([LIST_KEYS]))
        (n,) = struct.unpack("<q", self._read(8))
        return [self._read_bytes().decode(errors="replace") for _ in range(n)]
