"""A Python worker for the hang tests (standard library and ptrun.heartbeat only):
    hang_worker.py MODE [ARG]
beats every 50 ms; with MODE
  stuck      rank 1 beats 5 times, then sleeps inside stuck_in_data_loader() (120 s at most)
  beat       every rank beats for ARG seconds, then exits 0
  section    every rank beats, then sits in section 'checkpoint' (deadline 60 s) for ARG s, exits 0
  stuck-once like stuck, only in the first attempt (TORCHELASTIC_RESTART_COUNT 0); later: beat 0.5
  forever    every rank beats until killed (120 s at most)
  timer      rank 0 sleeps 120 s inside torch's expires(after=ARG, scope='save')
  foreign    writes a timer request naming its parent (ptrun) with an expired deadline, then beats
             inside expires(after=60) for 1 s and exits 0
  truncate   rank 0 beats 5 times, truncates its own heartbeat file to 0 bytes and waits (not
             beating) for the file named by $HANG_MARKER (60 s at most); the others beat until
             then; every rank exits 0
  wild-times like truncate, but rank 0 writes a last beat at 2^63-1000 ns and a section with the
             deadline 2^64-1 into its record instead
  flood-timer writes ARG malformed lines to torch's file-timer FIFO, then exits 0
  clean-shm  attempt 0: removes ptrun's own directories on /dev/shm that its environment names
             (as `rm -rf /dev/shm/ptrun-*` would, without touching other jobs'), exits 1; later
             attempts exit 0 when the heartbeat record, the timer FIFO and the error file's
             directory are there again, else 3"""
import os
import sys
import time

from ptrun import heartbeat

RANK = int(os.environ["RANK"])


def beat_for(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        heartbeat.beat()
        time.sleep(0.05)


def wait_for(path, seconds):
    end = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.02)


def beat_until(path, seconds):
    end = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < end:
        heartbeat.beat()
        time.sleep(0.05)


def stuck_in_data_loader():
    time.sleep(120)


def main():
    mode = sys.argv[1]
    arg = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if mode == "stuck" or (mode == "stuck-once" and restart == 0):
        for _ in range(5):
            heartbeat.beat()
            time.sleep(0.05)
        if RANK == 1:
            stuck_in_data_loader()
        beat_for(120)
    elif mode in ("beat", "stuck-once"):
        beat_for(arg or 0.5)
    elif mode == "section":
        beat_for(0.3)
        with heartbeat.section("checkpoint", timeout=60):
            time.sleep(arg)
        beat_for(0.3)
    elif mode in ("truncate", "wild-times"):
        for _ in range(5):
            heartbeat.beat()
            time.sleep(0.05)
        if RANK == 0:
            path = os.environ["PTRUN_HEARTBEAT_FILE"]
            if mode == "truncate":
                os.truncate(path, 0)
            else:
                import struct
                fd = os.open(path, os.O_RDWR)
                os.pwrite(fd, struct.pack("=Q", 2**63 - 1000), 72)  # last_progress_ns
                # An open section (seq even, started now-ish, name "x") with deadline 2^64-1.
                os.pwrite(fd, struct.pack("=QQQ", 2, 1, 2**64 - 1), 128)
                os.pwrite(fd, b"x\0", 160)
                os.close(fd)
            wait_for(os.environ["HANG_MARKER"], 60)
        else:
            beat_until(os.environ["HANG_MARKER"], 60)
    elif mode == "flood-timer":
        fd = os.open(os.environ["TORCHELASTIC_TIMER_FILE"], os.O_WRONLY)
        line = b"{not json\n"
        batch = line * 1000
        for _ in range(int(arg) // 1000):
            os.write(fd, batch)
        os.close(fd)
    elif mode == "clean-shm":
        names = [os.environ[v] for v in ("PTRUN_HEARTBEAT_FILE", "TORCHELASTIC_TIMER_FILE",
                                         "TORCHELASTIC_ERROR_FILE")]
        if restart == 0:
            import shutil
            for name in names:
                parts = name.split("/")
                roots = [i for i, p in enumerate(parts) if p.startswith("ptrun-")]
                if parts[1:2] == ["dev"] and roots:
                    shutil.rmtree("/".join(parts[:roots[0] + 1]), ignore_errors=True)
            sys.exit(1)
        there = [os.path.exists(names[0]), os.path.exists(names[1]),
                 os.path.isdir(os.path.dirname(names[2]))]
        print("there:", there, flush=True)
        sys.exit(0 if all(there) else 3)
    elif mode == "forever":
        beat_for(120)
    elif mode == "timer":
        from torch.distributed.elastic.timer import FileTimerClient, configure, expires
        configure(FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
        if RANK == 0:
            with expires(after=arg, scope="save"):
                print("inside", flush=True)
                time.sleep(120)
        beat_for(120)
    elif mode == "foreign":
        import json
        line = json.dumps({"version": 1, "pid": os.getppid(), "scope_id": "evil",
                           "expiration_time": time.time() - 10, "signal": 9})
        fd = os.open(os.environ["TORCHELASTIC_TIMER_FILE"], os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, (line + "\n").encode())
        os.close(fd)
        from torch.distributed.elastic.timer import FileTimerClient, configure, expires
        configure(FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
        with expires(after=60, scope="fine"):
            beat_for(1.0)


if __name__ == "__main__":
    main()
