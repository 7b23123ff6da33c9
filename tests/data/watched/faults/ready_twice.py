"""Fault: one block run twice under reentrant checkpointing. Its parameters get their gradient
twice in one backward: DDP raises "Expected to mark a variable ready only once"."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Linear(6, 6)
        self.head = torch.nn.Linear(6, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = checkpoint(self.block, x, use_reentrant=True)
        h = checkpoint(self.block, torch.tanh(h), use_reentrant=True)
        return self.head(h)


def main() -> int:
    dist.init_process_group("gloo")
    model = DDP(Net(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(4):
        x = torch.randn(4, 6, requires_grad=True)
        opt.zero_grad()
        F.mse_loss(model(x), torch.randn(4, 1)).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
