"""Fault: after 5 steps the last rank all-reduces a metric the others never reduce, then
every rank calls dist.monitored_barrier (1 s). The last rank waits in its all_reduce; rank 0's
barrier names it; its all_reduce then loses its peers."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(5):
        x, y = torch.randn(4, 4), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    if rank == world - 1:
        dist.all_reduce(torch.ones(3))  # a metric only this rank reduces
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=1))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
