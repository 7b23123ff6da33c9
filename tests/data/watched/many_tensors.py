"""A DDP script with many small tensors, several buckets and, if asked, one slow rank: the
watched page's tables and plots at 120 tensors, and a straggler for the window to show.

    torchrun --standalone --nproc-per-node 2 many_tensors.py --layers 60 --steps 8 \
        --slow-rank 1 --sleep-ms 20 [--bucket-cap-mb 0.0002]
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=60)
    parser.add_argument("--width", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.0002)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.Tanh()]
    model = DDP(torch.nn.Sequential(*layers), bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(args.steps):
        if rank == args.slow_rank:
            time.sleep(args.sleep_ms / 1000)  # a straggler: late to every step
        x, y = torch.randn(8, args.width, generator=gen), torch.randn(8, args.width, generator=gen)
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
