"""The single-process reference: full-batch gradient and the hand-made shard average.

This is what a lesson without DDP can only simulate. It never touches a process group; it
runs in float64 so it is a sharper oracle than the float32 ranks it is compared with.
"""

from __future__ import annotations

import torch
from torch import nn

from ddp_viz.model.protocol import Reference
from ddp_viz.model.scenario import Scenario


def _grads(weight: float, bias: float, xs: list[float], ys: list[float]) -> tuple[float, dict]:
    model = nn.Linear(1, 1).double()
    with torch.no_grad():
        model.weight.fill_(weight)
        model.bias.fill_(bias)
    x = torch.tensor(xs, dtype=torch.float64).unsqueeze(1)
    y = torch.tensor(ys, dtype=torch.float64).unsqueeze(1)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    grads = {name: p.grad.flatten().tolist() for name, p in model.named_parameters()}
    return loss.detach().item(), grads


def reference(run: int, step: int, scenario: Scenario, weight: float, bias: float) -> Reference:
    """Reference gradients at ``(weight, bias)``, the parameters going into ``step``."""
    loss, full = _grads(weight, bias, list(scenario.x), list(scenario.y))
    shards = scenario.shards()
    per_shard = [
        _grads(weight, bias, [scenario.x[i] for i in rows], [scenario.y[i] for i in rows])[1]
        for rows in shards
    ]
    manual = {
        name: [sum(g[name][k] for g in per_shard) / len(per_shard) for k in range(len(vals))]
        for name, vals in full.items()
    }
    return Reference(
        run=run,
        step=step,
        full_batch_grads=full,
        manual_average=manual,
        full_batch_loss=loss,
        shard_sizes=[len(rows) for rows in shards],
    )
