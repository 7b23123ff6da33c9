"""Fault: the last rank's dataset raises in its DataLoader worker process while it fetches
step 3's batch; the loader re-raises it in the main process with the worker's traceback as
text. The doctor names the dataset's line, not the loop's."""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Shard(Dataset):
    def __init__(self, rank: int, world: int) -> None:
        self.rank, self.world = rank, world

    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.rank == self.world - 1 and i == 9:
            raise ValueError(f"corrupt record {i} in shard {self.rank}")
        return torch.randn(6), torch.randn(1)


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Shard(rank, world), batch_size=4, num_workers=1)
    for x, y in loader:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
