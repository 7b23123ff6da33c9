"""Fault: the last rank is killed by SIGKILL in step 4 (as the OOM killer does); the others
then fail in the all-reduce or are stopped by torchrun."""

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank = dist.get_rank()
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        time.sleep(0.3)  # steps that take a while, as real ones do
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        if step == 3 and rank == dist.get_world_size() - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
