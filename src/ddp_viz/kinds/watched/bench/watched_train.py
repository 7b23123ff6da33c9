"""A DDP training loop for ``ddp-viz bench``'s watch overhead: torchrun starts it, plain or
under ``ddp-viz watch``; rank 0 prints one JSON line with the per-step seconds it measured
itself (after a warm-up), so both sides are timed the same way, from inside the script.

    torchrun … watched_train.py HIDDEN STEPS [python-hook | profiler]

``python-hook``: the script registers PyTorch's own Python ``allreduce_hook`` itself, the floor
for any watch that has to see each bucket from Python. ``profiler``: the loop runs inside
``torch.profiler.profile`` (CPU activities, its defaults: no shapes, no stacks, every step
recorded, as a watch watches every step), the peer a practitioner would otherwise reach for;
the trace's processing when the profiler closes, after the last timed step, is not timed."""

import contextlib
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

WARMUP = 5


def main() -> None:
    hidden, steps = [int(v) for v in sys.argv[1].split(",")], int(sys.argv[2])
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    widths = [1, *hidden, 1]
    layers: list[torch.nn.Module] = []
    for i in range(len(widths) - 1):
        if i:
            layers.append(torch.nn.Tanh())
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
    model = DDP(torch.nn.Sequential(*layers))
    if sys.argv[3:] == ["python-hook"]:
        model.register_comm_hook(None, default_hooks.allreduce_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 1), torch.randn(32, 1)
    times = []
    profiling = sys.argv[3:] == ["profiler"]
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) if profiling else contextlib.nullcontext():
        for step in range(steps + WARMUP):
            t0 = time.perf_counter()
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            if step >= WARMUP:
                times.append(time.perf_counter() - t0)
    if int(os.environ["RANK"]) == 0:
        times.sort()
        params = sum(p.numel() for p in model.parameters())
        hook = model._get_ddp_logging_data().get("comm_hook", "")
        out = {"median_s": times[len(times) // 2], "params": params, "comm_hook": hook}
        out["profiled"] = profiling
        print(json.dumps(out), flush=True)
    del model  # DDP first: a reducer freed after the group destroys it holding the GIL (a hang)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
