"""Not a fault: the same small loop, every rank alike, each step a little work. The doctor
must find nothing (no crash, no hang, no straggler)."""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
