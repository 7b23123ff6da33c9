"""Instrumentation overhead: a DDP step with ddp-viz's capture hook versus without it, and
what any comm hook written in Python costs before ddp-viz does anything.

Runs two gloo ranks in this machine's engine style (forked ranks, one thread each) and times
``zero_grad + forward + backward + step`` three ways, rounds interleaved: ``plain`` (DDP's
built-in C++ all-reduce, no hook), ``python_hook`` (PyTorch's own Python
``default_hooks.allreduce_hook`` registered, nothing else: the floor for any capture that times
the hook) and ``captured`` (ddp-viz's capture hook and ready ticks). Two models: Linear(1, 1)
and the buckets lesson's MLP with its bucket size. Prints one JSON line of median seconds.

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
from pathlib import Path

from ddp_viz import platform

VARIANTS = ("plain", "python_hook", "captured")
ROUNDS = 2
WARMUP = 20  # steps: DDP rebuilds its buckets after the first


def _model(kind: str):  # type: ignore[no-untyped-def]
    from torch import nn

    if kind == "linear":
        return nn.Linear(1, 1), 0.001  # one bucket whatever the cap
    layers = [nn.Linear(1, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh()]
    layers += [nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1)]
    return nn.Sequential(*layers), 0.001  # the buckets lesson: 4 buckets


def _time_steps(kind: str, variant: str, rank: int, steps: int) -> list[float]:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ddp_viz.engine.capture import Capture, _hook

    torch.manual_seed(0)
    model, cap = _model(kind)
    ddp = DDP(model, bucket_cap_mb=cap)
    capture = None
    if variant == "python_hook":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    elif variant == "captured":  # as a rank does it: the comm hook and ready ticks
        capture = Capture(names={id(p): n for n, p in model.named_parameters()})
        ddp.register_comm_hook(capture, _hook)
        for name, p in model.named_parameters():
            p.register_post_accumulate_grad_hook(lambda _p, n=name, c=capture: c.on_grad_ready(n))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.linspace(-3, 3, 16).unsqueeze(1) + rank
    y = torch.sin(x)
    times = []
    for i in range(steps + WARMUP):
        dist.barrier()
        t0 = time.perf_counter()
        if capture is not None:
            capture.reset()  # as a rank does every step
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if i >= WARMUP:
            times.append(time.perf_counter() - t0)
    return times


def _rank(rank: int, world: int, store_path: str, steps: int, out: mp.Queue) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", store=dist.FileStore(store_path, world), rank=rank, world_size=world
    )
    results: dict[str, list[float]] = {}
    for kind, n in (("linear", steps), ("mlp", max(20, steps // 4))):
        for _ in range(ROUNDS):  # interleaved, so all three see the same machine load
            for variant in VARIANTS:
                results.setdefault(f"{kind}_{variant}", []).extend(
                    _time_steps(kind, variant, rank, n)
                )
    if rank == 0:
        out.put({f"{k}_step_s": statistics.median(v) for k, v in results.items()})
    dist.destroy_process_group()


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    platform.rank_env_defaults(os.environ)
    ctx = platform.probe_context()
    out: mp.Queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store = platform.store_file(Path(tmp))
        procs = [ctx.Process(target=_rank, args=(r, 2, store, steps, out)) for r in range(2)]
        for p in procs:
            p.start()
        try:
            result = out.get(timeout=600)
        finally:
            for p in procs:
                p.join(60)
                if p.is_alive():
                    p.kill()
    for kind in ("linear", "mlp"):
        plain = result[f"{kind}_plain_step_s"]
        result[f"{kind}_ratio"] = result[f"{kind}_captured_step_s"] / plain
        result[f"{kind}_python_hook_ratio"] = result[f"{kind}_python_hook_step_s"] / plain
    print(json.dumps(result))


if __name__ == "__main__":
    main()
