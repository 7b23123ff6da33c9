"""Fault: in step 4 (loop index 3) the last rank evaluates instead of training: a forward under
no_grad, no backward. It makes one all-reduce fewer than the others, ends its 8 steps cleanly,
and ranks 0 and 1 wait for it in their last all-reduce, then lose it."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        if step == 3 and rank == world - 1:
            with torch.no_grad():
                F.mse_loss(model(x), y)
            continue
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
