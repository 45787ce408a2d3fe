"""Hosts PyTorch's own TCPStore server (is_master=True, port 0) for byte-compatibility tests.
Prints 'port=N'; then, for each stdin line 'get KEY', prints 'value=<repr>' as torch's own client
sees KEY (so a test can check what another client wrote). Exits when stdin closes."""
import datetime
import sys

import torch.distributed as dist


def main():
    server = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=30), wait_for_workers=False)
    print(f"port={server.port}", flush=True)
    client = dist.TCPStore("127.0.0.1", server.port, None, False, datetime.timedelta(seconds=30))
    for line in sys.stdin:
        verb, _, key = line.strip().partition(" ")
        if verb == "get":
            print(f"value={client.get(key)!r}", flush=True)


if __name__ == "__main__":
    main()
