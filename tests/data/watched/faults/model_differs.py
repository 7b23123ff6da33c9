"""Fault: the last rank builds its hidden layer one unit wider: DDP's construction fails
("... appears not to match sizes of the same param in process 0")."""

import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    hidden = 9 if rank == world - 1 else 8
    layers = [torch.nn.Linear(6, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)]
    net = torch.nn.Sequential(*layers)
    model = DDP(net)
    model(torch.randn(4, 6)).sum().backward()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
