"""PyTorch's own TCPStore server for bench/store (Debian 12's 1.13, or 2.6 in the Debian 13 root):
raises the fd limit, listens on 127.0.0.1 port 0, prints 'port=N', serves until stdin closes."""
import datetime
import resource
import sys

import torch.distributed as dist

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
server = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=600), wait_for_workers=False)
print(f"port={server.port}", flush=True)
sys.stdin.read()
