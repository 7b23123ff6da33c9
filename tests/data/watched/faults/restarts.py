"""Fault, then a restart: the last rank raises in step 3 (loop index 2) of torchrun's first
attempt only; under ``--max-restarts 1`` torchrun starts every rank again, and the second
attempt runs all 6 steps (with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1; with torchrun's shared
store, the restarted ranks fail to connect instead)."""

import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank = dist.get_rank()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.manual_seed(rank)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        x, y = torch.randn(4, 4), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        if attempt == 0 and step == 2 and rank == dist.get_world_size() - 1:
            raise RuntimeError(f"flaky disk at step {step}")
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
