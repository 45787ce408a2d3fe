"""A worker that uses torch's file timer the way torch code does:
    torch_timer_client.py FIFO SCOPE AFTER SLEEP SIGNAL
configures a FileTimerClient(FIFO, signal=SIGNAL), then sleeps SLEEP seconds inside
expires(after=AFTER, scope=SCOPE or the caller's default). Prints "inside" and "left"."""
import sys
import time

from torch.distributed.elastic.timer import FileTimerClient, configure, expires


def main():
    path, scope, after, sleep_s, sig = sys.argv[1:6]
    configure(FileTimerClient(path, signal=int(sig)))
    with expires(after=float(after), scope=scope or None):
        print("inside", flush=True)
        time.sleep(float(sleep_s))
    print("left", flush=True)


if __name__ == "__main__":
    main()
