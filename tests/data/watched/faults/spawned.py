"""Fault, started without torchrun: torch.multiprocessing.spawn starts 3 ranks and the last
raises in step 5 (loop index 4). spawn catches a rank's exception itself (no exception hook
runs) and exits it with status 1; the command fails. The doctor must not say "no crash".
Run as ``python spawned.py PORT``."""

import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def rank_main(rank: int, world: int) -> None:
    dist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=4)
    )
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        if step == 4 and rank == world - 1:
            raise RuntimeError(f"bad batch at step {step} on rank {rank}")
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", sys.argv[1]
    mp.spawn(rank_main, args=(3,), nprocs=3)
