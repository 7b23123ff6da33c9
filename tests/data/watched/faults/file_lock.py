"""Fault: a rank blocked on a file lock. Rank 0 takes an exclusive lock on a checkpoint file
in step 3 and holds it for 4 s; the last rank waits for the same lock before its
step 4, outside any collective, while the others wait for it in DDP's all-reduce."""

import datetime
import fcntl
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank, last = dist.get_rank(), dist.get_world_size() - 1
    run = os.environ.get("TORCHELASTIC_RUN_ID", "x")
    path = os.path.join(tempfile.gettempdir(), f"ckpt-{run}.lock")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    held = None
    for step in range(6):
        if step == 2 and rank == 0:
            held = open(path, "w")  # noqa: SIM115
            fcntl.flock(held, fcntl.LOCK_EX)
        if step == 3 and rank == last:
            with open(path, "w") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        if step == 2 and rank == 0:
            time.sleep(4)  # "writing the checkpoint"
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
