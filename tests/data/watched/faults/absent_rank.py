"""Fault: the last rank waits for data that never comes before it builds its DDP model; the
others time out (after 4 s) in DDP's construction, waiting for it, and torchrun then stops it.
It raises nothing, and it never reaches DDP, so the watch never hears from it."""

import datetime
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def wait_for_data(rank: int) -> None:
    if rank == dist.get_world_size() - 1:
        while True:
            time.sleep(0.2)  # the data never arrives


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank = dist.get_rank()
    wait_for_data(rank)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(8):
        x, y = torch.randn(4, 4), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
