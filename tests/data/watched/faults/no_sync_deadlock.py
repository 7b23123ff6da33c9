"""Fault: a deadlock inside no_sync. Gradient accumulation over 2 micro-batches: only the last
rank logs its loss with an all-reduce inside ``model.no_sync()``; the others go on to the
synchronising micro-batch and wait in DDP's all-reduce, the last rank in its own. gloo
matches the two (a collective mismatch): it aborts the last rank (SIGABRT, "Received data size
doesn't match expected size"), or the ranks hang."""

import datetime
import sys
import time

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
        time.sleep(0.2)  # steps that take a while, as real ones do
        opt.zero_grad()
        with model.no_sync():
            loss = F.mse_loss(model(torch.randn(4, 6)), torch.randn(4, 1))
            loss.backward()
            if step == 2 and rank == last:
                dist.all_reduce(loss.detach().reshape(1))  # log the accumulated loss
        F.mse_loss(model(torch.randn(4, 6)), torch.randn(4, 1)).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
