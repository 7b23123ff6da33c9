"""Fault: each rank reads its batches from a prefetching thread. On the last rank that thread
raises at its 4th batch (a bad record) and ends; Python prints the error and the rank goes on,
its main thread waiting in queue.get() for a batch that never comes, while the others wait for
it in step 4's all-reduce."""

import datetime
import queue
import sys
import threading

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prefetch(batches: queue.Queue, rank: int, world: int) -> None:
    for i in range(6):
        if rank == world - 1 and i == 3:
            raise ValueError(f"record {i} is corrupt")
        batches.put((torch.randn(4, 6), torch.randn(4, 1)))


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Linear(6, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    batches: queue.Queue = queue.Queue(maxsize=2)
    reader = threading.Thread(target=prefetch, args=(batches, rank, world), name="prefetch")
    reader.daemon = True
    reader.start()
    for _ in range(6):
        x, y = batches.get()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
