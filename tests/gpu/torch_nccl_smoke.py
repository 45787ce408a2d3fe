"""NCCL through ptrun's agent store: init_process_group('nccl') (the unique id travels through the
store), one all_reduce and a barrier on the GPU of this LOCAL_RANK. Prints the result on rank 0."""
import os

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
dist.init_process_group("nccl")
t = torch.full((1024,), float(rank + 1), device="cuda")
dist.all_reduce(t)
dist.barrier()
world = dist.get_world_size()
assert t[0].item() == world * (world + 1) / 2, t[0].item()
if rank == 0:
    print(f"nccl ok: torch {torch.__version__}, world {world}, sum {t[0].item()}, "
          f"agent store {os.environ['TORCHELASTIC_USE_AGENT_STORE']}", flush=True)
dist.destroy_process_group()
