"""Fault: the last rank fails before its DDP model is built (a missing data file); the others
then fail in DDP's construction, whose first collective it never joins."""

import datetime
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def load_data(rank: int, world: int) -> torch.Tensor:
    if rank == world - 1:
        raise FileNotFoundError(f"shard-{rank}.pt: no such file")
    return torch.randn(16, 6)


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank, world = dist.get_rank(), dist.get_world_size()
    data = load_data(rank, world)
    model = DDP(torch.nn.Linear(6, 1))
    model(data).sum().backward()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
