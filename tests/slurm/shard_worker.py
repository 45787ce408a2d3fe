"""A worker for the 2-node --requeue test (test_slurm_requeue.py), standard library only.

ptrun ... shard_worker.py OUT SLOW: writes OUT/start.RANK (its SLURM_PROCID) and waits (at most
300 s). On SIGUSR1 it writes its shard of a sharded checkpoint, OUT/shard.RANK (the time it was
written): after LEADER_WRITE seconds on the task that requeues the job (SLURM_PROCID 0: time
enough for SLURM to signal every node), after SLOW seconds on the others (a slower file system),
then exits 0. Requeued (PTRUN_REQUEUE_COUNT > 0), it writes OUT/resumed.RANK (the count) and
exits 0."""
import os
import signal
import sys
import time

OUT = sys.argv[1]
SLOW = float(sys.argv[2])
LEADER_WRITE = 1.0
RANK = os.environ["RANK"]


def write(name, text=""):
    """Writes OUT/name whole (a reader never sees it half written)."""
    path = os.path.join(OUT, name)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def save_shard(signo, frame):
    """The checkpoint: slow on every task but the one that requeues."""
    leader = os.environ.get("SLURM_PROCID", "0") == "0"
    time.sleep(LEADER_WRITE if leader else SLOW)  # the simulated write, not a wait for an event
    write(f"shard.{RANK}", f"{time.time()}\n")
    sys.exit(0)


count = os.environ.get("PTRUN_REQUEUE_COUNT", "0")
if count != "0":
    write(f"resumed.{RANK}", count)
    sys.exit(0)
signal.signal(signal.SIGUSR1, save_shard)
signal.alarm(300)  # a broken test never leaks it
write(f"start.{RANK}", os.environ.get("SLURM_PROCID", ""))
while True:
    signal.pause()
