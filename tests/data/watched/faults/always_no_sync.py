"""Fault: ``model.no_sync()``, meant for all but the last micro-step of a gradient
accumulation, wraps every step's forward and backward: DDP all-reduces no gradient, and each
rank trains on its own, with no error and no hang. The run exits with 0."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(6):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        with model.no_sync():  # the synced micro-step forgotten
            loss = F.mse_loss(model(x), y)
            loss.backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
