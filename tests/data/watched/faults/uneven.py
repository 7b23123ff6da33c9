"""Fault: uneven inputs. Rank 0 has 6 batches, the others 7; rank 0 finishes its loop and
exits, and the last rank enters step 7 alone: its all-reduce fails (or hangs)."""

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
    batches = 6 if rank == 0 else 7
    for _ in range(batches):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return 0


if __name__ == "__main__":
    sys.exit(main())
