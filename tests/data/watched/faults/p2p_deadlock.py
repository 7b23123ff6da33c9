"""Fault: after step 3 (loop index 2), ranks 0 and 1 each wait to receive a tensor from the
other, and neither sends: a point-to-point deadlock. The last rank, which takes no part in
it, waits in step 4's all-reduce for them."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank = dist.get_rank()
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        if step == 2 and rank in (0, 1):
            halo = torch.zeros(3)
            dist.recv(halo, src=1 - rank)  # each waits for the other's send
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
