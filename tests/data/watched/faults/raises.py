"""Fault: the last rank raises a RuntimeError of its own in step 5 (loop index 4); the others
then fail in DDP's all-reduce (connection closed) or are stopped by torchrun."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def check_batch(x: torch.Tensor, step: int, rank: int) -> None:
    if step == 4 and rank == dist.get_world_size() - 1:
        raise RuntimeError(f"bad batch at step {step} on rank {rank}")


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        check_batch(x, step, rank)
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
