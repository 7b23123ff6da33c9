"""The single-process reference: full-batch gradient and the hand-made shard average.

This is what a lesson without DDP can only simulate. It never touches a process group; it
runs in float64 so it is a sharper oracle than the float32 ranks it is compared with. It works
for any model spec: it copies the parameters the ranks hold going into the step.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from ddp_viz.engine.models import named_grad_tensors
from ddp_viz.engine.tensors import encode
from ddp_viz.model.protocol import Reference
from ddp_viz.model.scenario import Scenario


def _loss_and_grads(
    model: nn.Module, xs: list[float], ys: list[float]
) -> tuple[float, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    x = torch.tensor(xs, dtype=torch.float64).unsqueeze(1)
    y = torch.tensor(ys, dtype=torch.float64).unsqueeze(1)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss.detach().item(), named_grad_tensors(model)


def reference(
    run: int, step: int, scenario: Scenario, module: nn.Module
) -> tuple[Reference, dict[str, torch.Tensor]]:
    """Reference gradients at ``module``'s current parameters (those going into ``step``): the
    event, and the full-batch gradient tensors (float64) for the rank to compare against."""
    model = copy.deepcopy(module).double()
    loss, full = _loss_and_grads(model, list(scenario.x), list(scenario.y))
    shards = scenario.shards()
    per_shard = [
        _loss_and_grads(model, [scenario.x[i] for i in rows], [scenario.y[i] for i in rows])[1]
        for rows in shards
    ]
    manual = {name: sum(g[name] for g in per_shard) / len(per_shard) for name in full}
    event = Reference(
        run=run,
        step=step,
        full_batch_grads={n: encode(t) for n, t in full.items()},
        manual_average={n: encode(t) for n, t in manual.items()},
        full_batch_loss=loss,
        shard_sizes=[len(rows) for rows in shards],
    )
    return event, full
