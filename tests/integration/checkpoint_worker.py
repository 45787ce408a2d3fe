"""A worker for --checkpoint-signal tests: says 'start RANK 0 PID' on $NOTIFY, then waits.
Ranks listed in $CHECKPOINT_RANKS trap SIGUSR1, say 'saved RANK 0 PID' and exit 0; the others
ignore SIGUSR1 (a worker that never checkpoints) and wait to be stopped. Ranks listed in
$SLOW_RANKS take $SLOW_SECONDS to save (a shard written to a slow file system)."""
import os
import signal
import sys
import time


def tell(what):
    """Writes one line 'WHAT RANK 0 PID' to the notifier FIFO."""
    fd = os.open(os.environ["NOTIFY"], os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, f"{what} {os.environ['RANK']} 0 {os.getpid()}\n".encode())
    os.close(fd)


def save_and_exit(signo, frame):
    """The checkpoint: a real worker saves its state here."""
    if os.environ["RANK"] in os.environ.get("SLOW_RANKS", "").split(","):
        time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))  # the simulated write
    tell("saved")
    sys.exit(0)


rank = os.environ["RANK"]
if rank in os.environ.get("CHECKPOINT_RANKS", "").split(","):
    signal.signal(signal.SIGUSR1, save_and_exit)
else:
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
tell("start")
while True:
    signal.pause()
