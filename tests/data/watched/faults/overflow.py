"""Fault (not a desync): the loss overflows on every rank from step 4 (loop index 3); every
rank then holds the same NaN/inf averages, bit for bit: identical, and not finite."""

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
    for step in range(7):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        scale = 1e39 if step >= 3 else 1.0  # a loss scale gone wild: inf in float32
        opt.zero_grad()
        (F.mse_loss(model(x), y) * scale).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
