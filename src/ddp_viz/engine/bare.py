"""The bench's floor: a plain DDP training loop with no hook and no events.

Same processes as a real run (a pooled, forked, niced rank with one thread), same model, data,
optimizer and loss; only the capture and the event stream are left out. It reports once, at
the end: when each step began, on the engine's monotonic clock.

With ``hooks`` it is the floor of the mechanism instead: PyTorch's own Python comm hook
(``default_hooks.allreduce_hook``) and a post-accumulate-grad hook on every parameter that does
nothing, which is what any capture of this kind must pay before it records anything.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.models import build_model, torch_dtype
from ddp_viz.model.scenario import Scenario


def _nothing(_param: torch.Tensor) -> None:
    pass


def run_bare(job: dict[str, Any], send: Any) -> None:
    scenario = Scenario.from_mapping(job["scenario"])
    rank, world = int(job["rank"]), scenario.world_size
    store = dist.FileStore(str(job["store"]), world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    try:
        # the loop's DDP is gone when it returns, while the group is still registered: a
        # reducer freed after destroy_process_group destroys the group itself, holding the GIL
        # that gloo's thread waits for (the engine's Trainer.release says more)
        send({"ctl": "bare", "rank": rank, **_loop(job, scenario, rank)})
    finally:
        dist.destroy_process_group()
        del store


def _loop(job: dict[str, Any], scenario: Scenario, rank: int) -> dict[str, Any]:
    """The steps: when each began, and the hooks rank 0's DDP had."""
    rows = scenario.shards()[rank]
    model = build_model(scenario)
    ddp = DDP(model, bucket_cap_mb=scenario.ddp.bucket_cap_mb)
    if job.get("hooks"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        for p in model.parameters():
            p.register_post_accumulate_grad_hook(_nothing)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=scenario.lr)
    loss_fn = nn.MSELoss()
    dtype = torch_dtype(scenario)
    x = torch.tensor([scenario.x[i] for i in rows], dtype=dtype).unsqueeze(1)
    y = torch.tensor([scenario.y[i] for i in rows], dtype=dtype).unsqueeze(1)
    starts = []
    for _ in range(scenario.steps):
        starts.append(time.monotonic())
        optimizer.zero_grad()
        loss_fn(ddp(x), y).backward()
        optimizer.step()
    return {
        "starts": starts,
        "comm_hook": ddp._get_ddp_logging_data().get("comm_hook", ""),
        "ready_hooks": sum(len(p._post_accumulate_grad_hooks or {}) for p in model.parameters()),
    }
