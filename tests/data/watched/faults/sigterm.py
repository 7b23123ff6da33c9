"""Fault: the middle rank is sent SIGTERM after its step 4 (loop index 3), as a job
scheduler's preemption or a ``kill`` would; torchrun then stops the others with SIGTERM of
its own. The rank torchrun saw end first is the cause, not a rank it stopped."""

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
        time.sleep(0.2)  # steps that take a while, as real ones do
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        if step == 3 and rank == 1:
            os.kill(os.getpid(), signal.SIGTERM)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
