"""The naive pattern the benchmark compares against: ``torch.multiprocessing.spawn``.

Each spawned rank imports torch itself and builds its first DDP (paying DDP's lazy imports),
exactly as a typical tutorial script does. Rank 0 prints the wall-clock time at which its first
backward pass (and so the first all-reduce) has finished.

    python -m ddp_viz.bench.naive WORLD_SIZE PORT_FILE_DIR
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ddp_viz import platform


def _rank(rank: int, world: int, store_dir: str) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    store = dist.FileStore(platform.store_file(Path(store_dir)), world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    model = DDP(nn.Linear(1, 1))
    x = torch.arange(1.0, world + 1).unsqueeze(1)[rank : rank + 1]
    loss = nn.functional.mse_loss(model(x), 2 * x + 1)
    loss.backward()
    if rank == 0:
        print(f"AVERAGED {time.time():.6f}", flush=True)
    torch.optim.SGD(model.parameters(), lr=0.01).step()
    dist.barrier()  # without it gloo's teardown sometimes aborts one rank
    del model  # DDP first: a reducer freed after the group destroys it holding the GIL (a hang)
    dist.destroy_process_group()


def main() -> None:
    world, store_dir = int(sys.argv[1]), sys.argv[2]
    platform.rank_env_defaults(os.environ)
    import torch.multiprocessing as mp

    mp.spawn(_rank, args=(world, store_dir), nprocs=world, join=True)


if __name__ == "__main__":
    main()
