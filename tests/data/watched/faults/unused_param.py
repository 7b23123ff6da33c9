"""Fault: an auxiliary head used only in the first 3 steps. In step 4 (loop index 3) it
gets no gradient, its bucket never all-reduces, and step 5's forward raises DDP's "Expected to
have finished reduction in the prior iteration" on every rank."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Linear(6, 8)
        self.head = torch.nn.Linear(8, 1)
        self.aux = torch.nn.Linear(8, 1)

    def forward(self, x: torch.Tensor, use_aux: bool) -> torch.Tensor:
        h = torch.tanh(self.body(x))
        out = self.head(h)
        return out + self.aux(h) if use_aux else out


def main() -> int:
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x, use_aux=step < 3), y)
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
