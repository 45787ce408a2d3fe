"""ptrun heartbeats from Python: standard library only, one file (copy it into a project that
does not install the ptrun wheel). docs/heartbeat.md describes the protocol.

    from ptrun import heartbeat
    for batch in loader:
        step(batch)
        heartbeat.beat()                       # "this worker made progress", well under 1 us
    with heartbeat.section("checkpoint", timeout=600):
        save()                                 # silence here is not a hang until 600 s pass

Under ptrun the launcher names each worker's record in PTRUN_HEARTBEAT_FILE; this module maps it
when imported. Without the variable the module-level functions do nothing (`heartbeat.enabled`
is False), so the same script runs anywhere. A record that is set but unusable raises
HeartbeatError at import, naming the path. Beats from several threads are fine; sections belong
to one thread at a time. A forked child shares its parent's record (its beats count as the
parent's)."""
import contextlib
import mmap
import os
import socket
import struct
import time

ENV = "PTRUN_HEARTBEAT_FILE"
EVENTS_ENV = "PTRUN_EVENTS_SOCKET"  # the launcher's start-up timeline: the first beat is sent there
MAGIC = b"ptrun-hb"
VERSION = 1
RECORD_SIZE = 256
NAME_MAX = 95  # bytes of UTF-8; longer section names are cut at a character boundary
TIMEOUT_MAX = 1e9  # seconds; larger timeouts mean no deadline
# The record as 64-bit words: progress_count at byte 64, last_progress_ns at 72, the section's
# sequence lock at 128, its start at 136 and deadline at 144; the name at byte 160.
_COUNT, _LAST, _SEQ, _STARTED, _DEADLINE = 8, 9, 16, 17, 18
_NAME = 160
_PID = 20


class HeartbeatError(OSError):
    """The heartbeat file cannot be used; the message names it."""


class Heartbeat:
    """One mapped heartbeat record (heartbeat.h's layout, version 1)."""

    def __init__(self, path):
        self.path = path
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            raise HeartbeatError(f"{ENV}={path!r}: {e.strerror}") from None
        try:
            if os.fstat(fd).st_size < RECORD_SIZE:
                raise HeartbeatError(f"{ENV}={path!r}: not a version-1 ptrun heartbeat record")
            self._map = mmap.mmap(fd, RECORD_SIZE)
        finally:
            os.close(fd)
        version, size = struct.unpack_from("=II", self._map, 8)
        if self._map[:8] != MAGIC or version != VERSION or size < RECORD_SIZE:
            self._map.close()
            raise HeartbeatError(f"{ENV}={path!r}: not a version-1 ptrun heartbeat record")
        self._words = memoryview(self._map).cast("Q")
        struct.pack_into("=i", self._map, _PID, os.getpid())
        self._first = self._words[_COUNT] == 0

    def beat(self):
        """One beat: progress now (CLOCK_MONOTONIC, as time.monotonic_ns)."""
        words = self._words
        words[_LAST] = time.monotonic_ns()
        words[_COUNT] += 1
        if self._first:
            self._first = False
            _first_progress()

    def enter(self, name, timeout=None):
        """Opens section `name` that must end within `timeout` seconds (None, <= 0 or inf: no
        deadline); replaces an open one; counts as a beat."""
        now = time.monotonic_ns()
        deadline = 0
        if timeout is not None and 0 < timeout <= TIMEOUT_MAX:
            deadline = now + int(timeout * 1e9)
        self._set_section(now, deadline, name)
        self.beat()

    def leave(self):
        """Closes the open section; counts as a beat."""
        self._set_section(0, 0, "")
        self.beat()

    @contextlib.contextmanager
    def section(self, name, timeout=None):
        """enter(name, timeout) for the `with` block, leave() after it (also on exceptions)."""
        self.enter(name, timeout)
        try:
            yield
        finally:
            self.leave()

    def close(self):
        self._words.release()
        self._map.close()

    def _set_section(self, started, deadline, name):
        raw = name.encode("utf-8")
        if len(raw) > NAME_MAX:
            raw = raw[:NAME_MAX].decode("utf-8", "ignore").encode("utf-8")
        words = self._words
        seq = words[_SEQ]
        words[_SEQ] = seq + 1  # odd: the launcher ignores the section while it changes
        self._map[_NAME:_NAME + NAME_MAX + 1] = raw.ljust(NAME_MAX + 1, b"\0")
        words[_STARTED] = started
        words[_DEADLINE] = deadline
        words[_SEQ] = seq + 2


def _first_progress():
    """The record's first beat is the start-up timeline's first progress: one datagram on ptrun's
    events channel, the descriptor PTRUN_EVENTS_SOCKET names ("fd:4"), if set; never blocks,
    never raises."""
    address = os.environ.get(EVENTS_ENV, "")
    if not address.startswith("fd:") or not address[3:].isdigit():
        return
    try:
        with socket.socket(fileno=os.dup(int(address[3:]))) as s:
            # Still ptrun's channel (a program may have put another socket at that number).
            if s.family == socket.AF_UNIX and s.type == socket.SOCK_DGRAM:
                s.send(f"ptrun-event 1 first_progress {time.monotonic_ns()}".encode(), socket.MSG_DONTWAIT)
    except OSError:
        pass


def create(path, local_rank=0):
    """The launcher's side, for launchers and tools written in Python: makes an empty record at
    `path` (which must not exist; mode 0600). Workers then get `path` in PTRUN_HEARTBEAT_FILE."""
    record = bytearray(RECORD_SIZE)
    record[:8] = MAGIC
    struct.pack_into("=IIiiQ", record, 8, VERSION, RECORD_SIZE, local_rank, 0, time.monotonic_ns())
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, record)
    finally:
        os.close(fd)


def read(path):
    """The launcher's side: the record at `path` now, as a dict (count, last_progress_ns,
    writer_pid, section: None or (name, started_ns, deadline_ns)). A section being changed at
    this instant reads as None."""
    with open(path, "rb") as f:
        raw = f.read(RECORD_SIZE)
    if len(raw) < RECORD_SIZE or raw[:8] != MAGIC:
        raise HeartbeatError(f"{path!r}: not a version-1 ptrun heartbeat record")
    count, last = struct.unpack_from("=QQ", raw, 64)
    seq, started, deadline = struct.unpack_from("=QQQ", raw, 128)
    section = None
    if seq % 2 == 0 and started:
        name = raw[_NAME:_NAME + NAME_MAX + 1].split(b"\0", 1)[0].decode("utf-8", "replace")
        section = (name, started, deadline)
    return {"count": count, "last_progress_ns": last,
            "writer_pid": struct.unpack_from("=i", raw, _PID)[0], "section": section}


def _from_environment():
    path = os.environ.get(ENV)
    return Heartbeat(path) if path else None


_DEFAULT = _from_environment()
enabled = _DEFAULT is not None

if _DEFAULT is None:
    def beat():
        """No record (not under ptrun): nothing to do."""

    def enter(name, timeout=None):
        """No record (not under ptrun): nothing to do."""

    def leave():
        """No record (not under ptrun): nothing to do."""
else:
    beat = _DEFAULT.beat
    enter = _DEFAULT.enter
    leave = _DEFAULT.leave


@contextlib.contextmanager
def section(name, timeout=None):
    """The worker's record's section(name, timeout); does nothing when not under ptrun."""
    enter(name, timeout)
    try:
        yield
    finally:
        leave()
