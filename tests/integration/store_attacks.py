"""Hostile clients for the store tests, speaking the modern TCPStore wire by hand. Loopback only;
every attack is bounded in bytes and connections, and every socket operation has a timeout.

Run as a program to attack from another process: store_attacks.py expensive PORT
(the expensive-but-small requests of issue 13, in a fixed order; exits 0 when done)."""
import socket
import struct
import sys

HOST = "127.0.0.1"
VALIDATE = b"\x00" + struct.pack("<I", 0x3C85F7CE)
SET, GET, CHECK, NUM_KEYS, APPEND, MULTI_GET, MULTI_SET = 1, 3, 5, 7, 9, 10, 11
CANCEL_WAIT, PING, LIST_KEYS = 12, 13, 17


def field(data):
    return struct.pack("<Q", len(data)) + data


def request(op, *fields):
    return bytes([op]) + b"".join(fields)


def multi(op, keys, values=None):
    parts = [bytes([op]), struct.pack("<Q", len(keys))]
    for i, key in enumerate(keys):
        parts.append(field(key))
        if values is not None:
            parts.append(field(values[i]))
    return b"".join(parts)


def connect(port, timeout=30):
    """A validated modern connection."""
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.sendall(VALIDATE)
    return s


def recv_exact(s, n):
    """Exactly n bytes; raises ConnectionError on EOF."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = s.recv_into(view[got:], min(n - got, 1 << 20))
        if k == 0:
            raise ConnectionError(f"EOF after {got} of {n} bytes")
        got += k
    return bytes(buf)


def discard(s, n):
    """Reads and drops n bytes."""
    buf = bytearray(1 << 20)
    while n > 0:
        k = s.recv_into(buf, min(n, len(buf)))
        if k == 0:
            raise ConnectionError(f"EOF with {n} bytes to go")
        n -= k


def u64(data):
    return struct.unpack("<Q", data)[0]


def ping(port, nonce=0x1234, timeout=10):
    """One PING on a fresh connection; the echoed nonce, or None if none came within `timeout`."""
    try:
        with connect(port, timeout) as s:
            s.sendall(request(PING, struct.pack("<I", nonce)))
            return struct.unpack("<I", recv_exact(s, 4))[0]
    except OSError:
        return None


def send_until_closed(s, data):
    """Sends data; True if the server closed the connection before taking all of it."""
    try:
        s.sendall(data)
        return False
    except OSError:
        return True


def closed_by_server(s, timeout=30):
    """True once the server closes `s` (EOF or reset), reading and dropping what comes first."""
    s.settimeout(timeout)
    try:
        while s.recv(1 << 20):
            pass
        return True
    except ConnectionError:
        return True
    except socket.timeout:
        return False


def expensive(port):
    """Issue 13's small-but-expensive requests, each followed through (reads what is answered)."""
    big = b"v" * (8 << 20)
    with connect(port) as s:
        s.sendall(request(SET, field(b"big"), field(big)))
        # 1. A 2.5 KB MULTI_GET of 256 x 8 MiB: a 2 GiB reply, read in full.
        s.sendall(multi(MULTI_GET, [b"big"] * 256))
        for _ in range(256):
            assert u64(recv_exact(s, 8)) == len(big)
            discard(s, len(big))
        # 2. GET of the big value, 16 times.
        for _ in range(16):
            s.sendall(request(GET, field(b"big")))
            assert u64(recv_exact(s, 8)) == len(big)
            discard(s, len(big))
    # 3. APPEND 64 KiB at a time, to 32 MiB at most (the value limit stops it at 8 MiB).
    with connect(port) as s:
        piece = b"a" * (64 << 10)
        for _ in range(512):
            if send_until_closed(s, request(APPEND, field(b"log"), field(piece))):
                break
    # 4. LIST_KEYS over 100,000 keys, read in full.
    with connect(port) as s:
        for start in range(0, 100_000, 10_000):
            keys = [b"key-%06d" % i for i in range(start, start + 10_000)]
            s.sendall(multi(MULTI_SET, keys, [b"x"] * len(keys)))
        s.sendall(request(LIST_KEYS))
        count = u64(recv_exact(s, 8))
        assert count >= 100_000, count
        for _ in range(count):
            recv_exact(s, u64(recv_exact(s, 8)))
    # 5. MULTI_GET of 40 distinct 8 MiB values (320 MiB, over the 256 MiB buffer budget), never read.
    with connect(port) as s:
        for i in range(40):
            s.sendall(request(SET, field(b"v%02d" % i), field(big)))
        s.sendall(request(NUM_KEYS))
        recv_exact(s, 8)
    with connect(port) as s:
        s.sendall(multi(MULTI_GET, [b"v%02d" % i for i in range(40)]))
        try:
            recv_exact(s, 8)  # refused (closed) or answered, without stalling anybody
        except ConnectionError:
            pass


if __name__ == "__main__":
    if sys.argv[1:2] == ["expensive"]:
        expensive(int(sys.argv[2]))
    else:
        sys.exit(f"usage: {sys.argv[0]} expensive PORT")
