"""A plain DDP training script for torchrun (CPU, gloo), the way people write one. It knows
nothing of ddp-viz: the watch tests run it unchanged, watched and not.

    torchrun --standalone --nproc-per-node 2 train.py --epochs 2 [--fp16-hook] [--out F]
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--fp16-hook", action="store_true")
    parser.add_argument("--out", help="save the final parameters (rank 0)")
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--forever", action="store_true", help="train until stopped")
    parser.add_argument("--second-model", action="store_true", help="a second DDP model too")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 6), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    model = DDP(
        torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    )
    if args.fp16_hook:
        model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    other = DDP(torch.nn.Linear(6, 1)) if args.second_model else None
    epoch = 0
    while epoch < args.epochs or args.forever:
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            optimizer.step()
            if other is not None:
                F.mse_loss(other(x), y).backward()
        epoch += 1
    if rank == 0 and args.out:
        torch.save(model.module.state_dict(), args.out)
    dist.destroy_process_group()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
