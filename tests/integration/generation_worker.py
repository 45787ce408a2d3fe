"""A worker that speaks --restart-policy failed's protocol (README, "Recovery in place") through
python/ptrun/store.py, without torch: the launcher's side of recovery, tested alone.
  --crash-rank R   rank R SIGKILLs itself once (generation 0 of the first attempt), after every
                   rank has started
  --ignore         the survivors never join a new generation (a program that does not take part)
  --replacement-dies  the replacement of generation 1 SIGKILLs itself before it joins
Prints "pid P rank R generation G" at start and "rank R joined generation G" once joined."""
import argparse
import os
import signal
import sys

from ptrun.store import Client

WIRE = "/ptrun"  # torch's TCPStore puts "/" before the names a script uses; this client does not


def join(store, generation, world):
    while True:
        if store.add(f"{WIRE}/gen/{generation}/joined", 1) == world:
            store.compare_set(f"{WIRE}/gen/{generation}/ready", b"", b"joined")
        key = f"{WIRE}/gen/{generation}/ready"
        store.wait([key], timeout=60)
        if store.get(key, timeout=5) != b"superseded":
            return generation
        generation = int(store.get(f"{WIRE}/generation", timeout=5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crash-rank", type=int, default=-1)
    ap.add_argument("--ignore", action="store_true")
    ap.add_argument("--replacement-dies", action="store_true")
    a = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    generation = int(os.environ.get("PTRUN_GENERATION", "0"))
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    print(f"pid {os.getpid()} rank {rank} generation {generation} restart {restart} "
          f"policy {os.environ.get('PTRUN_RESTART_POLICY', '-')}", flush=True)
    store = Client(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), timeout=30)
    if generation > 0:  # a replacement joins the generation that started it
        if generation == 1 and a.replacement_dies:
            os.kill(os.getpid(), signal.SIGKILL)
        generation = join(store, generation, world)
        print(f"rank {rank} joined generation {generation}", flush=True)
        return 0
    if store.add("/test/up", 1) == world:
        store.set("/test/all_up", b"1")
    if restart > 0 or a.crash_rank < 0:
        return 0
    store.wait(["/test/all_up"], timeout=30)
    if rank == a.crash_rank:
        os.kill(os.getpid(), signal.SIGKILL)
    if a.ignore:
        store.wait(["/test/never"], timeout=60)  # ptrun stops it first (the fallback)
        return 3
    store.wait([f"{WIRE}/gen/1/begun"], timeout=30)  # blocking: no polling
    replaced = store.get(f"{WIRE}/gen/1/begun", timeout=5).decode()
    generation = join(store, int(store.get(f"{WIRE}/generation", timeout=5)), world)
    print(f"rank {rank} joined generation {generation} (replaced: {replaced})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
