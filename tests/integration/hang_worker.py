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
             inside expires(after=60) for 1 s and exits 0"""
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
