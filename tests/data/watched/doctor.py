"""A small DDP script for torchrun (CPU, gloo) that goes wrong on purpose, one way per case:
the watch doctor's tests run it unchanged under ``ddp-viz watch``. It knows nothing of ddp-viz.

    torchrun --standalone --nproc-per-node 2 doctor.py CASE [--steps N] [--timeout S]

Cases: ok, barrier (rank 0 in a barrier while rank 1 all-reduces), extra-batch (rank 0 has
one batch more), sleep (rank 1 sleeps in its step), sigkill (rank 1 kills itself), nan (rank 1's
loss turns NaN), slow (rank 1 is slow every step), param (rank 1 changes a weight), bn
(BatchNorm with broadcast_buffers=False), branch (a rank-dependent code path: the learning
rate schedule is stepped in rank 0's logging branch alone, so from then on the ranks apply the
same averaged gradient with different learning rates).
"""

import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def model_for(case: str) -> torch.nn.Module:
    if case == "bn":
        return torch.nn.Sequential(
            torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1)
        )
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--at", type=int, default=3, help="the step where it goes wrong")
    parser.add_argument("--timeout", type=float, default=8.0, help="the process group's")
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(model_for(args.case), **({"broadcast_buffers": False} if args.case == "bn" else {}))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    steps = args.steps + (1 if args.case == "extra-batch" and rank == 0 else 0)
    for step in range(steps):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        if args.case == "barrier" and step == args.at:
            if rank == 0:
                dist.barrier()
            else:
                dist.all_reduce(torch.ones(3))
        if args.case == "sleep" and step == args.at and rank == 1:
            time.sleep(60)
        if args.case == "sigkill":
            time.sleep(0.6)  # steps that take a while, as real ones do
            if step == args.at and rank == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        if args.case == "slow" and rank == 1:
            time.sleep(0.03)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        if args.case == "nan" and step == args.at and rank == 1:
            loss = loss * float("nan")
        loss.backward()
        optimizer.step()
        if args.case == "param" and step == args.at and rank == 1:
            with torch.no_grad():
                model.module[0].bias[0] += 1.0
        if args.case == "branch" and step == args.at and rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
            schedule.step()
    dist.barrier()  # every rank done before the process group goes, as scripts do
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
