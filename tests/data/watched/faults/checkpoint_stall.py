"""Not a fault: rank 0 writes a checkpoint for 5 s after step 3 while the others wait for it
in step 4's all-reduce, then every rank goes on to the end. With --hang-after 2 the watch
names a hang while it lasts; the report calls it a stall that resolved, and the run well."""

import datetime
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint() -> None:
    time.sleep(5)  # a slow disk


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        x, y = torch.randn(4, 4), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        if rank == 0 and step == 2:
            save_checkpoint()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
