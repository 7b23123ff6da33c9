"""Fault: a tensor of another shape on one rank. The last rank all-reduces a metric of 3
values where the others send 2 (a hang, or gloo's size error)."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank, last = dist.get_rank(), dist.get_world_size() - 1
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step == 2:
            stats = torch.zeros(3 if rank == last else 2)
            dist.all_reduce(stats)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
