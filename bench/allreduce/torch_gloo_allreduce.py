"""torch.distributed (gloo) allreduce bandwidth, same sizes and method as ptrun_allreduce.cpp.
Run under torchrun: torchrun --standalone --nproc_per_node N torch_gloo_allreduce.py [MAX_MIB]
Prints "gloo BYTES TIME_US ALGBW_GBPS BUSBW_GBPS" on rank 0."""
import sys
import time

import torch
import torch.distributed as dist


def main():
    max_bytes = int(sys.argv[1] if len(sys.argv) > 1 else 256) << 20
    dist.init_process_group("gloo")
    n = dist.get_world_size()
    buf = torch.zeros(max_bytes // 4, dtype=torch.float32)
    size = 1024
    while size <= max_bytes:
        t = buf[: size // 4]
        iters = max(5, min(2000, (1 << 28) // size))
        for _ in range(max(2, iters // 10)):
            dist.all_reduce(t)
        best = float("inf")  # best of 5 trials, each the slowest rank's mean
        for _ in range(5):
            n_it = max(1, iters // 5)
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(n_it):
                dist.all_reduce(t)
            us = torch.tensor([(time.perf_counter() - t0) * 1e6 / n_it], dtype=torch.float64)
            dist.all_reduce(us, op=dist.ReduceOp.MAX)
            best = min(best, us.item())
        algbw = size / best / 1e3
        if dist.get_rank() == 0:
            print(f"gloo {size} {best:.2f} {algbw:.3f} {algbw * 2 * (n - 1) / n:.3f}", flush=True)
        size *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
