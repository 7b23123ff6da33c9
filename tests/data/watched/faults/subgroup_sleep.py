"""Fault in a subgroup: ranks 0 and 1 average their loss in a group of their own
(``dist.new_group([0, 1])``) after every step; rank 1 sleeps before its second one. Rank 0
waits in the pair's all_reduce for rank 1, and rank 2 (outside the pair) waits in DDP's
all-reduce of step 3 for both. The pair's calls are no business of rank 2's: it is missing
from none of them, and they do not have to match its calls."""

import datetime
import sys
import time

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
    pair = dist.new_group([0, 1])
    for step in range(6):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step == 1 and rank == 1:
            time.sleep(30)
        if rank in (0, 1):
            dist.all_reduce(loss.detach(), group=pair)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
