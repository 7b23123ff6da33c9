"""Instrumentation overhead: a DDP step with ddp-viz's capture hook versus without it.

Runs two gloo ranks in this machine's engine style (forked ranks, one thread each) and times
``zero_grad + forward + backward + step`` with DDP's default all-reduce and with the capture hook
that wraps it. Prints one JSON line: median seconds per step for both.

    python -m ddp_viz.bench.overhead [STEPS]
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time


def _rank(rank: int, world: int, store_path: str, steps: int, out: mp.Queue) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ddp_viz.engine.capture import Capture, _hook

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", store=dist.FileStore(store_path, world), rank=rank, world_size=world
    )
    x = torch.tensor([[1.0], [2.0]]) + 2 * rank
    y = 2 * x + 1
    results = {}
    for label in ("plain", "captured", "plain2", "captured2"):
        model = nn.Linear(1, 1)
        ddp = DDP(model)
        if label.startswith("captured"):  # as a rank does it: the comm hook and ready ticks
            capture = Capture(names={id(p): n for n, p in model.named_parameters()})
            ddp.register_comm_hook(capture, _hook)
            for name, p in model.named_parameters():
                p.register_post_accumulate_grad_hook(
                    lambda _p, n=name, c=capture: c.on_grad_ready(n)
                )
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        times = []
        for i in range(steps + 20):
            dist.barrier()
            t0 = time.perf_counter()
            if label.startswith("captured"):
                capture.reset()  # as a rank does every step
            opt.zero_grad()
            nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
            if i >= 20:  # after DDP rebuilt its buckets
                times.append(time.perf_counter() - t0)
        results[label] = times
    if rank == 0:
        out.put(
            {
                "plain_step_s": statistics.median(results["plain"] + results["plain2"]),
                "captured_step_s": statistics.median(results["captured"] + results["captured2"]),
            }
        )
    dist.destroy_process_group()


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [ctx.Process(target=_rank, args=(r, 2, store, steps, out)) for r in range(2)]
        for p in procs:
            p.start()
        result = out.get(timeout=300)
        for p in procs:
            p.join(60)
    result["ratio"] = result["captured_step_s"] / result["plain_step_s"]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
