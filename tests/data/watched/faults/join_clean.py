"""Not a fault: rank r has 5 + r batches, and DDP's join() context manager (the doctor's own
fix for uneven inputs) shadows the missing steps' all-reduces with zeros on the ranks out of
data. Status 0; every step every rank trained agrees: the doctor says ✓."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with model.join():
        for _ in range(5 + rank):
            x, y = torch.randn(4, 6), torch.randn(4, 1)
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
