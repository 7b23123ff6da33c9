"""Fault: a buffer that differs on one rank. A running count kept as a buffer, with
broadcast_buffers=False, is bumped on the last rank alone from step 3: the ranks' states part
(a desync in that buffer, the parameters still equal)."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(6, 1)
        self.register_buffer("seen", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def main() -> int:
    dist.init_process_group("gloo")
    rank, last = dist.get_rank(), dist.get_world_size() - 1
    model = DDP(Net(), broadcast_buffers=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        if step >= 2 and rank == last:
            model.module.seen += 1
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
