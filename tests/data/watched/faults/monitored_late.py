"""Fault: after 5 steps the last rank runs an evaluation the others skip (a sleep here), and
every rank then calls dist.monitored_barrier with a 1 s timeout before saving. Rank 0's
barrier names the late rank; the rank that arrived raises after rank 0 gives up."""

import datetime
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(5):
        x, y = torch.randn(4, 4), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    if rank == world - 1 or (len(sys.argv) > 1 and rank == world - 2):
        time.sleep(6)  # an evaluation only this rank runs
    wait_all = len(sys.argv) > 1  # "all": every late rank named, not the first
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=1), wait_all_ranks=wait_all)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
